/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The UDP socket link: one unconnected socket bound to <ip>:<port>, batches
 * with sendmmsg/recvmmsg, UDP_SEGMENT (GSO) on send, UDP_GRO on receive.
 *
 * IPv4 ID and DF (the RoCEv2 ICRC covers the IPv4 header with only TOS, TTL
 * and checksum masked, so the ID matters). Measured with tshark on Linux
 * 6.18, this socket (unconnected, IP_MTU_DISCOVER = IP_PMTUDISC_DO):
 *  (a) every single datagram (sendmsg/sendmmsg, any size up to the MTU)
 *      leaves with DF set and IPv4 ID 0. (The kernel gives DF packets of
 *      an unconnected socket ID 0; a connect()ed socket would count IDs
 *      up, which is why this socket is never connected.)
 *  (b) a UDP_SEGMENT train: every segment has DF set; segment i (0-based)
 *      gets ID i: 0, 1, 2, ... (the train's ID 0, +1 per segment, mod
 *      2^16), whenever software segmentation cuts the train: on a device
 *      without tx-udp-segmentation (seen on veth with it turned off, and
 *      with gso off). A receiver without UDP_GRO gets a whole train cut
 *      into plain datagrams (it never sees IP headers). On lo and on veth
 *      with the offload on, the train travels as one super-packet (tshark
 *      shows one 10008-byte UDP datagram for 10 x 1000) and a UDP_GRO
 *      receiver gets it whole; a hardware NIC doing USO sets its own IDs.
 * So: single datagrams => ICRC with ID 0. GSO trains => segment i needs
 * the ICRC computed with ID i, or no GSO towards peers that check the ICRC
 * against the real IP header (rxe, hardware RoCE NICs).
 *
 * Receive buffers are one mmap'd arena of slots; a slot holds one datagram,
 * or with GRO a train that is handed out as separate datagrams (possibly
 * across several ur_link_recv() calls; the arena is not refilled until the
 * last message is out, so earlier pointers stay valid as link.h promises).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "link/link_priv.h"
#include "util/log.h"
#include "util/netif.h"
#include "util/time.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define UR_LINK_DEF_BUF (4u << 20)
#define UR_LINK_TX_RETRIES 16
#define UR_LINK_MAX_IOV 64		/* iovecs per datagram, split path */

static socklen_t sa_len(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);
}

static int setopt(int fd, int level, int name, int val)
{
	return setsockopt(fd, level, name, &val, sizeof(val)) ? -errno : 0;
}

static void set_buf(int fd, int force_name, int name, unsigned int bytes)
{
	int v = (int)(bytes ? bytes : UR_LINK_DEF_BUF);

	/* FORCE works with CAP_NET_ADMIN only; the plain one is capped by
	 * net.core.[rw]mem_max. */
	if (setopt(fd, SOL_SOCKET, force_name, v))
		setopt(fd, SOL_SOCKET, name, v);
}

static uint32_t compute_max_payload(const union ur_sockaddr *a)
{
	uint32_t mtu;

	ur_netif_of_addr(a, &mtu, NULL);	/* an assumed MTU if none */
	/* IP + UDP headers, and the 16-bit IP length limits */
	if (a->sa.sa_family == AF_INET)
		return (uint32_t)UR_MIN(mtu - 28, 65535 - 28);
	return (uint32_t)UR_MIN(mtu - 48, 65535 - 8);
}

static int sock_setup(struct ur_link *l, const struct ur_link_config *cfg)
{
	int fd = l->fd, rc;

	set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, cfg->rcvbuf);
	set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, cfg->sndbuf);
	if (l->family == AF_INET) {
		rc = setopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, IP_PMTUDISC_DO);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_PKTINFO, 1);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_RECVTOS, 1);
		rc = rc ?: setopt(fd, IPPROTO_IP, IP_RECVTTL, 1);
	} else {
		rc = setopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER,
				  IPV6_PMTUDISC_DO);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVPKTINFO, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVTCLASS, 1);
		rc = rc ?: setopt(fd, IPPROTO_IPV6, IPV6_RECVHOPLIMIT, 1);
	}
	if (rc) {
		ur_err("link: socket options: %d", rc);
		return rc;
	}
	/* GSO: probe by setting a socket-wide segment size, then clear it
	 * (we pass the size per message as a cmsg). */
	if (cfg->use_gso && !setopt(fd, SOL_UDP, UDP_SEGMENT, 1024)) {
		l->gso_ok = true;
		setopt(fd, SOL_UDP, UDP_SEGMENT, 0);
	}
	if (cfg->use_gro && !setopt(fd, SOL_UDP, UDP_GRO, 1))
		l->gro_on = true;
	return 0;
}

static int rx_setup(struct ur_link *l)
{
	unsigned int i;

	l->nslots = l->gro_on ? UR_LINK_RX_SLOTS_GRO : UR_LINK_RX_SLOTS;
	l->slot_size = l->gro_on ? UR_LINK_RX_BUF_GRO : UR_LINK_RX_BUF;
	l->arena_size = (size_t)l->nslots * l->slot_size;
	/* mmap: pages stay unbacked until a datagram that large arrives */
	l->arena = mmap(NULL, l->arena_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (l->arena == MAP_FAILED) {
		l->arena = NULL;
		return -ENOMEM;
	}
	l->rx_msgs = calloc(l->nslots, sizeof(*l->rx_msgs));
	l->rx_iov = calloc(l->nslots, sizeof(*l->rx_iov));
	l->rx_cmsg = calloc(l->nslots, UR_LINK_CMSG_SPACE);
	l->rx_meta = calloc(l->nslots, sizeof(*l->rx_meta));
	if (!l->rx_msgs || !l->rx_iov || !l->rx_cmsg || !l->rx_meta)
		return -ENOMEM;
	for (i = 0; i < l->nslots; i++) {
		l->rx_iov[i].iov_base = l->arena + (size_t)i * l->slot_size;
		l->rx_iov[i].iov_len = l->slot_size;
	}
	return 0;
}

/*
 * With a fault spec at open, ur_link_fd() is an epoll fd over the socket and a
 * timerfd that fires when a held (delayed/reordered) datagram is due, so a
 * caller sleeping in poll() on it comes back to release it.
 */
static int fault_fds(struct ur_link *l)
{
	struct epoll_event ev = { .events = EPOLLIN };

	l->tm_fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	l->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (l->tm_fd < 0 || l->ep_fd < 0)
		return -errno;
	ev.data.fd = l->fd;
	if (epoll_ctl(l->ep_fd, EPOLL_CTL_ADD, l->fd, &ev))
		return -errno;
	ev.data.fd = l->tm_fd;
	if (epoll_ctl(l->ep_fd, EPOLL_CTL_ADD, l->tm_fd, &ev))
		return -errno;
	return 0;
}

int ur_link_open(const struct ur_link_config *cfg, struct ur_link **out)
{
	const char *spec = cfg->fault;
	int family = cfg->bind.sa.sa_family;
	struct ur_link *l;
	int rc;

	*out = NULL;
	if (family != AF_INET && family != AF_INET6)
		return -EAFNOSUPPORT;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->family = family;
	l->wake_fd = -1;
	l->tm_fd = -1;
	l->ep_fd = -1;
	l->fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		       IPPROTO_UDP);
	if (l->fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = sock_setup(l, cfg);
	if (rc)
		goto fail;
	if (bind(l->fd, &cfg->bind.sa, sa_len(&cfg->bind))) {
		rc = -errno;
		if (rc != -EADDRINUSE)
			ur_err("link: bind: %s", strerror(-rc));
		goto fail;
	}
	l->local = cfg->bind;
	{
		socklen_t sl = sizeof(l->local);

		/* learn the port when the caller asked for an ephemeral one */
		getsockname(l->fd, &l->local.sa, &sl);
	}
	l->max_payload = compute_max_payload(&cfg->bind);
	l->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (l->wake_fd < 0) {
		rc = -errno;
		goto fail;
	}
	rc = rx_setup(l);
	if (rc)
		goto fail;
	rc = ur_fault_create(&l->fi);
	if (rc)
		goto fail;
	if (spec && *spec) {
		rc = fault_fds(l);
		rc = rc ?: ur_link_set_fault(l, spec);
		if (rc)
			goto fail;
	}
	ur_info("link: bound fd %d, max payload %u, gso %d, gro %d", l->fd,
		l->max_payload, l->gso_ok, l->gro_on);
	*out = l;
	return 0;
fail:
	ur_link_close(l);
	return rc;
}

void ur_link_close(struct ur_link *l)
{
	if (!l)
		return;
	if (l->fd >= 0)
		close(l->fd);
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	if (l->tm_fd >= 0)
		close(l->tm_fd);
	if (l->ep_fd >= 0)
		close(l->ep_fd);
	if (l->arena)
		munmap(l->arena, l->arena_size);
	free(l->rx_msgs);
	free(l->rx_iov);
	free(l->rx_cmsg);
	free(l->rx_meta);
	if (l->fi)
		ur_fault_destroy(l->fi);
	free(l);
}

int ur_link_fd(const struct ur_link *l)
{
	return l->ep_fd >= 0 ? l->ep_fd : l->fd;
}

uint32_t ur_link_max_payload(const struct ur_link *l)
{
	return l->max_payload;
}

void ur_link_local_addr(const struct ur_link *l, union ur_sockaddr *out)
{
	*out = l->local;
}

int ur_link_set_fault(struct ur_link *l, const char *spec)
{
	int rc = ur_fault_configure(l, spec);

	if (rc < 0)
		return rc;
	atomic_store(&l->fi_on, rc > 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Send                                                                */
/* ------------------------------------------------------------------ */

static size_t iov_total(const struct iovec *iov, unsigned int n)
{
	size_t t = 0;

	while (n--)
		t += iov++->iov_len;
	return t;
}

static unsigned int txd_segments(const struct ur_txd *d, size_t len)
{
	if (!d->gso_size || len <= d->gso_size)
		return 1;
	return (unsigned int)((len + d->gso_size - 1) / d->gso_size);
}

/* Waits a little for the socket to drain after EAGAIN/ENOBUFS. */
static void tx_backoff(struct ur_link *l, int err)
{
	struct pollfd p = { .fd = l->fd, .events = POLLOUT };
	struct timespec ts = { 0, 20000 };

	if (err == EAGAIN)
		poll(&p, 1, 1);
	else if (err == ENOBUFS)
		nanosleep(&ts, NULL);
}

/* Room for the UDP_SEGMENT and the traffic class cmsgs of one message. */
#define UR_TX_CMSG_SPACE (CMSG_SPACE(sizeof(uint16_t)) + CMSG_SPACE(sizeof(int)))

/*
 * Appends an IP_TOS (IPv4) or IPV6_TCLASS cmsg to m when tos is not 0, so
 * the datagram carries the GRH traffic class its AH or QP asked for
 * without a setsockopt per peer. cbuf has UR_TX_CMSG_SPACE bytes.
 */
static void tx_add_tclass(struct msghdr *m, char *cbuf,
			  const union ur_sockaddr *dst, uint8_t tos)
{
	struct cmsghdr *c;
	int v = tos;

	if (!tos)
		return;
	m->msg_control = cbuf;
	c = (struct cmsghdr *)(void *)(cbuf + m->msg_controllen);
	m->msg_controllen += CMSG_SPACE(sizeof(int));
	c->cmsg_level = dst->sa.sa_family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
	c->cmsg_type = dst->sa.sa_family == AF_INET ? IP_TOS : IPV6_TCLASS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &v, sizeof(v));
}

/* Sends one datagram built from the iovecs; retries transient errors. */
static int send_one(struct ur_link *l, const union ur_sockaddr *dst,
		    struct iovec *iov, unsigned int iovcnt, uint8_t tos)
{
	union {
		char buf[UR_TX_CMSG_SPACE];
		struct cmsghdr align;
	} cb;
	struct msghdr m = {
		.msg_name = (void *)dst,
		.msg_namelen = sa_len(dst),
		.msg_iov = iov,
		.msg_iovlen = iovcnt,
	};
	int tries;

	tx_add_tclass(&m, cb.buf, dst, tos);

	for (tries = 0; tries <= UR_LINK_TX_RETRIES; tries++) {
		if (sendmsg(l->fd, &m, 0) >= 0)
			return 0;
		if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			return -errno;
		tx_backoff(l, errno);
	}
	return -EAGAIN;
}

/* No UDP_SEGMENT: cut the train into datagrams here. 0 or -errno. */
static int send_split(struct ur_link *l, const struct ur_txd *d)
{
	struct iovec seg[UR_LINK_MAX_IOV];
	unsigned int i = 0, n;
	size_t off = 0, want, take;
	int rc;

	while (i < d->iovcnt) {
		want = d->gso_size;
		n = 0;
		while (want && i < d->iovcnt) {
			if (n == UR_LINK_MAX_IOV)
				return -EINVAL;
			take = UR_MIN(want, d->iov[i].iov_len - off);
			seg[n].iov_base = (char *)d->iov[i].iov_base + off;
			seg[n++].iov_len = take;
			want -= take;
			off += take;
			if (off == d->iov[i].iov_len) {
				i++;
				off = 0;
			}
		}
		if (!n)
			break;
		rc = send_one(l, d->dst, seg, n, d->tos);
		if (rc)
			return rc;
	}
	return 0;
}

/* Builds the message for descriptor d; cbuf (UR_TX_CMSG_SPACE bytes) gets
 * the UDP_SEGMENT and traffic class cmsgs. */
static void tx_msg(struct ur_link *l, const struct ur_txd *d, size_t len,
		   struct msghdr *m, char *cbuf)
{
	struct cmsghdr *c;

	memset(m, 0, sizeof(*m));
	m->msg_name = (void *)d->dst;
	m->msg_namelen = sa_len(d->dst);
	m->msg_iov = (struct iovec *)d->iov;
	m->msg_iovlen = d->iovcnt;
	if (d->gso_size && len > d->gso_size && l->gso_ok) {
		m->msg_control = cbuf;
		m->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
		c = CMSG_FIRSTHDR(m);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		memcpy(CMSG_DATA(c), &d->gso_size, sizeof(uint16_t));
	}
	tx_add_tclass(m, cbuf, d->dst, d->tos);
}

/*
 * Sends a chunk of at most UR_LINK_TX_CHUNK descriptors. Returns the number
 * handed to the kernel (not necessarily a prefix: a descriptor the kernel
 * refuses for good is skipped and counted in tx_errors).
 */
static unsigned int send_chunk(struct ur_link *l, const struct ur_txd *d,
			       unsigned int n, int *err)
{
	union {
		char buf[UR_TX_CMSG_SPACE];
		struct cmsghdr align;
	} cb[UR_LINK_TX_CHUNK];
	struct mmsghdr mm[UR_LINK_TX_CHUNK];
	size_t len[UR_LINK_TX_CHUNK];
	uint64_t pkts = 0, bytes = 0;
	unsigned int i, sent = 0, tries = 0, k;
	int r;

	for (i = 0; i < n; i++) {
		len[i] = iov_total(d[i].iov, d[i].iovcnt);
		tx_msg(l, &d[i], len[i], &mm[i].msg_hdr, cb[i].buf);
	}
	i = 0;
	while (i < n) {
		/* a train without kernel GSO goes out on its own */
		if (!l->gso_ok && txd_segments(&d[i], len[i]) > 1) {
			r = send_split(l, &d[i]);
			if (r) {
				*err = r;
				ur_link_add(&l->tx_errors, 1);
			} else {
				sent++;
				pkts += txd_segments(&d[i], len[i]);
				bytes += len[i];
			}
			i++;
			continue;
		}
		for (k = i + 1; k < n; k++)
			if (!l->gso_ok && txd_segments(&d[k], len[k]) > 1)
				break;
		r = sendmmsg(l->fd, mm + i, k - i, 0);
		if (r > 0) {
			for (k = i; k < i + (unsigned int)r; k++) {
				pkts += txd_segments(&d[k], len[k]);
				bytes += len[k];
			}
			sent += (unsigned int)r;
			i += (unsigned int)r;
			tries = 0;
			continue;
		}
		if (r < 0 && (errno == EAGAIN || errno == ENOBUFS ||
			      errno == EINTR) && tries++ < UR_LINK_TX_RETRIES) {
			tx_backoff(l, errno);
			continue;
		}
		/* hard error (or out of retries) on message i: skip it */
		*err = r < 0 ? -errno : -EIO;
		ur_dbg_dp("link: send failed: %d", *err);
		ur_link_add(&l->tx_errors, 1);
		i++;
		tries = 0;
	}
	ur_link_add(&l->tx_pkts, pkts);
	ur_link_add(&l->tx_bytes, bytes);
	return sent;
}

int ur_link_send_raw(struct ur_link *l, const struct ur_txd *d, unsigned int n)
{
	unsigned int done = 0, sent = 0, k;
	int err = -EIO;

	while (done < n) {
		k = UR_MIN(n - done, (unsigned int)UR_LINK_TX_CHUNK);
		sent += send_chunk(l, d + done, k, &err);
		done += k;
	}
	return sent || !n ? (int)sent : err;
}

/* One flat datagram (the fault stage's path). 0 or -errno. */
int ur_link_sendto_raw(struct ur_link *l, const union ur_sockaddr *dst,
		       const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	int rc = send_one(l, dst, &iov, 1, 0);	/* fault stage: class lost */

	if (rc) {
		ur_link_add(&l->tx_errors, 1);
		return rc;
	}
	ur_link_add(&l->tx_pkts, 1);
	ur_link_add(&l->tx_bytes, len);
	return 0;
}

int ur_link_send(struct ur_link *l, const struct ur_txd *d, unsigned int n)
{
	int sent;

	if (!n)
		return 0;
	if (unlikely(atomic_load_explicit(&l->fi_on, memory_order_relaxed)))
		sent = ur_fault_send(l, d, n);
	else
		sent = ur_link_send_raw(l, d, n);
	return sent;
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

static void rx_parse(struct ur_link *l, unsigned int i)
{
	struct msghdr *m = &l->rx_msgs[i].msg_hdr;
	struct ur_link_rxmeta *mt = &l->rx_meta[i];
	struct cmsghdr *c;
	int v;

	mt->len = l->rx_msgs[i].msg_len;
	mt->seg = 0;
	mt->tos = 0;
	mt->ttl = 0;
	memset(&mt->dst, 0, sizeof(mt->dst));
	mt->dst.sa.sa_family = (sa_family_t)l->family;
	for (c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
		if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_PKTINFO) {
			struct in_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			mt->dst.in.sin_addr = pi.ipi_addr;
		} else if (c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_TOS) {
			mt->tos = *(uint8_t *)CMSG_DATA(c);
		} else if (c->cmsg_level == IPPROTO_IP &&
			   c->cmsg_type == IP_TTL) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			mt->ttl = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_PKTINFO) {
			struct in6_pktinfo pi;

			memcpy(&pi, CMSG_DATA(c), sizeof(pi));
			mt->dst.in6.sin6_addr = pi.ipi6_addr;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_TCLASS) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			mt->tos = (uint8_t)v;
		} else if (c->cmsg_level == IPPROTO_IPV6 &&
			   c->cmsg_type == IPV6_HOPLIMIT) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			mt->ttl = (uint8_t)v;
		} else if (c->cmsg_level == SOL_UDP && c->cmsg_type == UDP_GRO) {
			memcpy(&v, CMSG_DATA(c), sizeof(v));
			mt->seg = (uint16_t)v;
		}
	}
	/* mt->src was filled by the kernel (msg_name points at it) */
	if (l->family == AF_INET)
		mt->dst.in.sin_port = l->local.in.sin_port;
	else
		mt->dst.in6.sin6_port = l->local.in6.sin6_port;
}

/* One recvmmsg of up to want messages; returns the count or -errno. */
static int rx_fill(struct ur_link *l, unsigned int want)
{
	unsigned int i, n = UR_MIN(want, l->nslots), good = 0;
	int r;

	for (i = 0; i < n; i++) {
		struct msghdr *m = &l->rx_msgs[i].msg_hdr;

		m->msg_name = &l->rx_meta[i].src;
		m->msg_namelen = sizeof(union ur_sockaddr);
		m->msg_iov = &l->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = l->rx_cmsg + (size_t)i * UR_LINK_CMSG_SPACE;
		m->msg_controllen = UR_LINK_CMSG_SPACE;
		m->msg_flags = 0;
	}
	r = recvmmsg(l->fd, l->rx_msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0)
		return -errno;
	for (i = 0; i < (unsigned int)r; i++) {
		if (l->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			ur_link_add(&l->rx_truncated, 1);
			continue;
		}
		/* msg_name points at rx_meta[i].src: parse before compacting */
		rx_parse(l, i);
		if (good != i) {
			/* keep the slot bases a permutation of the arena */
			void *b = l->rx_iov[good].iov_base;

			l->rx_meta[good] = l->rx_meta[i];
			l->rx_iov[good].iov_base = l->rx_iov[i].iov_base;
			l->rx_iov[i].iov_base = b;
		}
		good++;
	}
	l->pend_cnt = good;
	l->pend_idx = 0;
	l->pend_off = 0;
	return (int)good;
}

/* Hands out pending datagrams (GRO trains split at seg). */
static unsigned int rx_emit(struct ur_link *l, struct ur_rxd *d,
			    unsigned int max)
{
	unsigned int out = 0;
	uint64_t bytes = 0;

	while (out < max && l->pend_idx < l->pend_cnt) {
		const struct ur_link_rxmeta *mt = &l->rx_meta[l->pend_idx];
		uint32_t seg = mt->seg ? mt->seg : mt->len;
		uint32_t chunk = UR_MIN(seg, mt->len - l->pend_off);
		struct ur_rxd *x = &d[out++];

		x->data = (uint8_t *)l->rx_iov[l->pend_idx].iov_base +
			  l->pend_off;
		x->len = chunk;
		x->src = mt->src;
		x->dst = mt->dst;
		x->tos = mt->tos;
		x->ttl = mt->ttl;
		bytes += chunk;
		l->pend_off += chunk;
		if (l->pend_off >= mt->len || !chunk) {
			l->pend_idx++;
			l->pend_off = 0;
		}
	}
	ur_link_add(&l->rx_pkts, out);
	ur_link_add(&l->rx_bytes, bytes);
	return out;
}

int ur_link_recv_raw(struct ur_link *l, struct ur_rxd *d, unsigned int max)
{
	int r;

	if (!max)
		return 0;
	if (l->pend_idx >= l->pend_cnt) {
		/* slots are free again only once everything is out */
		do {
			r = rx_fill(l, max);
		} while (r == 0);	/* all truncated: try again */
		if (r < 0)
			return r == -EAGAIN || r == -EWOULDBLOCK ? 0 : r;
	}
	return (int)rx_emit(l, d, max);
}

static void drain_wake(struct ur_link *l)
{
	uint64_t v;
	ssize_t r = read(l->wake_fd, &v, sizeof(v));

	(void)r;
}

int ur_link_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max,
		 int timeout_ms)
{
	uint64_t deadline = 0, now;
	struct pollfd p[2];
	bool fi;
	int n, wait, fwait;

	if (timeout_ms > 0)
		deadline = ur_now_ns() + (uint64_t)timeout_ms * 1000000ull;
	for (;;) {
		fi = atomic_load_explicit(&l->fi_on, memory_order_relaxed);
		n = fi ? ur_fault_recv(l, d, max) : ur_link_recv_raw(l, d, max);
		if (n != 0 || timeout_ms == 0)
			return n;
		wait = -1;
		if (timeout_ms > 0) {
			now = ur_now_ns();
			if (now >= deadline)
				return 0;
			wait = (int)((deadline - now + 999999) / 1000000);
		}
		if (fi) {
			fwait = ur_fault_poll(l);
			if (ur_fault_rx_ready(l))
				continue;
			if (fwait >= 0 && (wait < 0 || fwait < wait))
				wait = fwait;
		}
		p[0] = (struct pollfd){ .fd = l->fd, .events = POLLIN };
		p[1] = (struct pollfd){ .fd = l->wake_fd, .events = POLLIN };
		n = poll(p, 2, wait);
		if (n < 0 && errno != EINTR)
			return -errno;
		if (n > 0 && (p[1].revents & POLLIN)) {
			drain_wake(l);
			return 0;
		}
	}
}

void ur_link_wake(struct ur_link *l)
{
	uint64_t one = 1;
	ssize_t r = write(l->wake_fd, &one, sizeof(one));

	(void)r;
}

void ur_link_get_stats(const struct ur_link *l, struct ur_link_stats *st)
{
	struct ur_link *m = (struct ur_link *)l;

	memset(st, 0, sizeof(*st));
	st->tx_pkts = atomic_load(&m->tx_pkts);
	st->tx_bytes = atomic_load(&m->tx_bytes);
	st->tx_errors = atomic_load(&m->tx_errors);
	st->rx_pkts = atomic_load(&m->rx_pkts);
	st->rx_bytes = atomic_load(&m->rx_bytes);
	st->rx_truncated = atomic_load(&m->rx_truncated);
	ur_fault_stats(l->fi, st);
}
