/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The UDP socket link: one unconnected socket per address bound to
 * <ip>:<port> (sock.c says why), one per joined multicast group, batches
 * with sendmmsg/recvmmsg, UDP_SEGMENT (GSO) on send, UDP_GRO on receive.
 * A datagram leaves from the socket of the address its descriptor names
 * (ur_txd.via); receives take turns over the sockets, and the link's fd is
 * the lone socket or, once there are several, an epoll fd over them.
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
 * across several ur_udp_recv() calls; the arena is not refilled until the
 * last message is out, so earlier pointers stay valid as link.h promises).
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "link/params.h"
#include "link/sock.h"
#include "link/udp.h"
#include "util/log.h"
#include "util/compiler.h"

/* What we parsed from one received message (a datagram or a GRO train). */
struct udp_rxmeta {
	uint32_t len;			/* bytes in the slot */
	uint16_t seg;			/* GRO segment size, 0 = one datagram */
	uint8_t tos, ttl;
	union ur_sockaddr src, dst;
};

struct ur_udp {
	struct ur_link_config cfg;	/* buffers, GSO/GRO for later sockets */
	/* [0, n_addr): the addresses (fd -1 if not bound), then the groups;
	 * allocated whole at open: senders read the addresses' entries
	 * with no lock while a join adds a group */
	struct ur_sock *socks;
	unsigned int n_addr, n_sock;
	int ep_fd;			/* epoll over every open socket */
	atomic_int poll_fd;		/* ur_udp_fd(): a lone socket or ep_fd */
	uint32_t max_payload;
	bool gso_ok;			/* kernel accepts UDP_SEGMENT */
	bool gro_on;			/* UDP_GRO enabled on the sockets */

	/* receive side: one thread at a time (link.h) */
	unsigned int next_sock;		/* where the next recvmmsg starts */
	unsigned int nslots;
	size_t slot_size;
	size_t arena_size;
	uint8_t *arena;			/* nslots * slot_size, mmap'd */
	struct mmsghdr *rx_msgs;
	struct iovec *rx_iov;
	uint8_t *rx_cmsg;		/* nslots * UR_LINK_CMSG_SPACE */
	struct udp_rxmeta *rx_meta;
	unsigned int pend_cnt;		/* messages of the last recvmmsg */
	unsigned int pend_idx;		/* next message to hand out */
	uint32_t pend_off;		/* offset inside that message */

	_Atomic uint64_t tx_pkts, tx_bytes, tx_errors;
	_Atomic uint64_t rx_pkts, rx_bytes, rx_truncated;
};

static inline void udp_count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

static socklen_t sa_len(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);
}

static int rx_setup(struct ur_udp *u)
{
	unsigned int i;

	u->nslots = u->gro_on ? UR_LINK_RX_SLOTS_GRO : UR_LINK_RX_SLOTS;
	u->slot_size = u->gro_on ? UR_LINK_RX_BUF_GRO : UR_LINK_RX_BUF;
	u->arena_size = (size_t)u->nslots * u->slot_size;
	/* mmap: pages stay unbacked until a datagram that large arrives */
	u->arena = mmap(NULL, u->arena_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (u->arena == MAP_FAILED) {
		u->arena = NULL;
		return -ENOMEM;
	}
	u->rx_msgs = calloc(u->nslots, sizeof(*u->rx_msgs));
	u->rx_iov = calloc(u->nslots, sizeof(*u->rx_iov));
	u->rx_cmsg = calloc(u->nslots, UR_LINK_CMSG_SPACE);
	u->rx_meta = calloc(u->nslots, sizeof(*u->rx_meta));
	if (!u->rx_msgs || !u->rx_iov || !u->rx_cmsg || !u->rx_meta)
		return -ENOMEM;
	for (i = 0; i < u->nslots; i++) {
		u->rx_iov[i].iov_base = u->arena + (size_t)i * u->slot_size;
		u->rx_iov[i].iov_len = u->slot_size;
	}
	return 0;
}

/* Watches socket i in the epoll set; ur_udp_fd() is that set as soon as
 * it holds more than one socket. */
static int set_watch(struct ur_udp *u, unsigned int i)
{
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned int open = 0, k;

	if (epoll_ctl(u->ep_fd, EPOLL_CTL_ADD, u->socks[i].fd, &ev))
		return -errno;
	for (k = 0; k < u->n_sock; k++)
		open += u->socks[k].fd >= 0;
	atomic_store(&u->poll_fd, open > 1 ? u->ep_fd : u->socks[i].fd);
	return 0;
}

/* Binds address i of cfg; only address 0 must succeed. */
static int open_addr(struct ur_udp *u, unsigned int i,
		     const union ur_sockaddr *addr)
{
	struct ur_sock *s = &u->socks[i];
	int rc;

	rc = ur_sock_open_addr(&u->cfg, addr, s);
	if (rc) {
		if (i)
			ur_warn("link: address %u not bound (%s): it sends "
				"from address 0 and receives nothing", i,
				strerror(-rc));
		return rc;
	}
	if (!i) {
		u->gso_ok = s->gso_ok;
		u->gro_on = s->gro_on;
		u->max_payload = ur_sock_max_payload(&s->local);
		/* every socket delivers into one arena sized for GRO or not */
		u->cfg.use_gro = s->gro_on;
	} else {
		u->max_payload = UR_MIN(u->max_payload,
					ur_sock_max_payload(&s->local));
	}
	return set_watch(u, i);
}

static uint16_t port_of(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET ? a->in.sin_port : a->in6.sin6_port;
}

static void set_port(union ur_sockaddr *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET)
		a->in.sin_port = port;
	else
		a->in6.sin6_port = port;
}

int ur_udp_open(const struct ur_link_config *cfg, struct ur_udp **out)
{
	unsigned int i, n = 1 + UR_MIN(cfg->n_more, UR_LINK_MAX_ADDRS - 1u);
	union ur_sockaddr a;
	struct ur_udp *u;
	int rc;

	*out = NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->cfg = *cfg;
	u->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	u->socks = calloc(UR_LINK_MAX_ADDRS + UR_LINK_MAX_GROUPS,
			  sizeof(*u->socks));
	rc = u->ep_fd < 0 ? -errno : !u->socks ? -ENOMEM : 0;
	for (i = 0; !rc && i < n; i++) {
		u->socks[i].fd = -1;
		u->n_sock = u->n_addr = i + 1;
		a = i ? cfg->more[i - 1] : cfg->bind;
		if (i)	/* the port address 0 got */
			set_port(&a, port_of(&u->socks[0].local));
		rc = open_addr(u, i, &a);
		if (i)
			rc = 0;
	}
	rc = rc ?: rx_setup(u);
	if (rc) {
		ur_udp_close(u);
		return rc;
	}
	ur_info("link: %u address(es), max payload %u, gso %d, gro %d", n,
		u->max_payload, u->gso_ok, u->gro_on);
	*out = u;
	return 0;
}

void ur_udp_close(struct ur_udp *u)
{
	unsigned int i;

	if (!u)
		return;
	for (i = 0; i < u->n_sock; i++)
		ur_sock_close(&u->socks[i]);
	if (u->ep_fd >= 0)
		close(u->ep_fd);
	if (u->arena)
		munmap(u->arena, u->arena_size);
	free(u->socks);
	free(u->rx_msgs);
	free(u->rx_iov);
	free(u->rx_cmsg);
	free(u->rx_meta);
	free(u);
}

int ur_udp_fd(const struct ur_udp *u)
{
	return atomic_load(&((struct ur_udp *)u)->poll_fd);
}

int ur_udp_set_fd(const struct ur_udp *u)
{
	return u->ep_fd;
}

uint32_t ur_udp_max_payload(const struct ur_udp *u)
{
	return u->max_payload;
}

int ur_udp_local_addr(const struct ur_udp *u, unsigned int i,
		      union ur_sockaddr *out)
{
	if (i >= u->n_addr || u->socks[i].fd < 0)
		return -ENOENT;
	*out = u->socks[i].local;
	return 0;
}

/* The group's socket, or NULL. */
static struct ur_sock *group_find(struct ur_udp *u,
				  const union ur_sockaddr *group)
{
	unsigned int i;

	for (i = u->n_addr; i < u->n_sock; i++)
		if (ur_sockaddr_same_host(&u->socks[i].local, group))
			return &u->socks[i];
	return NULL;
}

int ur_udp_join(struct ur_udp *u, const union ur_sockaddr *group)
{
	union ur_sockaddr addrs[UR_LINK_MAX_ADDRS], g = *group;
	unsigned int i, n = 0;
	int rc;

	if (!ur_addr_is_multicast(group))
		return -EINVAL;
	if (group_find(u, group))
		return -EALREADY;
	for (i = 0; i < u->n_addr; i++)
		if (u->socks[i].fd >= 0)
			addrs[n++] = u->socks[i].local;
	if (u->n_sock - u->n_addr >= UR_LINK_MAX_GROUPS)
		return -ENOMEM;
	set_port(&g, port_of(&u->socks[0].local));
	rc = ur_sock_open_group(&u->cfg, u->gro_on, &g, addrs, n,
				&u->socks[u->n_sock]);
	if (rc)
		return rc;
	u->n_sock++;
	rc = set_watch(u, u->n_sock - 1);
	if (rc) {
		ur_sock_close(&u->socks[--u->n_sock]);
		return rc;
	}
	return 0;
}

int ur_udp_leave(struct ur_udp *u, const union ur_sockaddr *group)
{
	struct ur_sock *s = group_find(u, group);

	if (!s)
		return -ENOENT;
	epoll_ctl(u->ep_fd, EPOLL_CTL_DEL, s->fd, NULL);
	ur_sock_close(s);
	*s = u->socks[--u->n_sock];
	u->next_sock = 0;
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

/* The socket a datagram leaves from: its address's, or address 0's when
 * that one was not bound (the engine's flow then says address 0 too). */
static int tx_fd(const struct ur_udp *u, uint8_t via)
{
	if (via < u->n_addr && u->socks[via].fd >= 0)
		return u->socks[via].fd;
	return u->socks[0].fd;
}

/* Waits a little for the socket to drain after EAGAIN/ENOBUFS. */
static void tx_backoff(int fd, int err)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	struct timespec ts = { 0, 20000 };

	if (err == EAGAIN)
		poll(&p, 1, 1);
	else if (err == ENOBUFS)
		nanosleep(&ts, NULL);
}

/* Room for the UDP_SEGMENT, traffic class and TTL cmsgs of one message. */
#define UR_TX_CMSG_SPACE (CMSG_SPACE(sizeof(uint16_t)) + \
			  2 * CMSG_SPACE(sizeof(int)))

/* Appends one int cmsg (IPv4 type v4, IPv6 type v6) to m; cbuf has
 * UR_TX_CMSG_SPACE bytes. */
static void tx_add_int(struct msghdr *m, char *cbuf,
		       const union ur_sockaddr *dst, int v4, int v6, int v)
{
	struct cmsghdr *c;

	m->msg_control = cbuf;
	c = (struct cmsghdr *)(void *)(cbuf + m->msg_controllen);
	m->msg_controllen += CMSG_SPACE(sizeof(int));
	c->cmsg_level = dst->sa.sa_family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
	c->cmsg_type = dst->sa.sa_family == AF_INET ? v4 : v6;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &v, sizeof(v));
}

/*
 * The per-datagram IP fields as cmsgs, so that no setsockopt is needed per
 * peer: IP_TOS/IPV6_TCLASS when tos is not 0 (the GRH traffic class its AH
 * or QP asked for), IP_TTL/IPV6_HOPLIMIT when ttl is not 0 (a multicast
 * AH's hop limit; Linux takes either for multicast too, over the socket's
 * IP_MULTICAST_TTL). Unicast with the default class pays two tests.
 */
static void tx_add_ip_fields(struct msghdr *m, char *cbuf,
			     const union ur_sockaddr *dst, uint8_t tos,
			     uint8_t ttl)
{
	if (tos)
		tx_add_int(m, cbuf, dst, IP_TOS, IPV6_TCLASS, tos);
	if (ttl)
		tx_add_int(m, cbuf, dst, IP_TTL, IPV6_HOPLIMIT, ttl);
}

/* Sends one datagram built from the iovecs; retries transient errors. */
static int send_one(int fd, const union ur_sockaddr *dst,
		    struct iovec *iov, unsigned int iovcnt, uint8_t tos,
		    uint8_t ttl)
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

	tx_add_ip_fields(&m, cb.buf, dst, tos, ttl);

	for (tries = 0; tries <= UR_LINK_TX_RETRIES; tries++) {
		if (sendmsg(fd, &m, 0) >= 0)
			return 0;
		if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			return -errno;
		tx_backoff(fd, errno);
	}
	return -EAGAIN;
}

/* No UDP_SEGMENT: cut the train into datagrams here. 0 or -errno. */
static int send_split(struct ur_udp *u, const struct ur_txd *d)
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
		rc = send_one(tx_fd(u, d->via), d->dst, seg, n, d->tos,
			      d->ttl);
		if (rc)
			return rc;
	}
	return 0;
}

/* Builds the message for descriptor d; cbuf (UR_TX_CMSG_SPACE bytes) gets
 * the UDP_SEGMENT, traffic class and TTL cmsgs. */
static void tx_msg(struct ur_udp *u, const struct ur_txd *d, size_t len,
		   struct msghdr *m, char *cbuf)
{
	struct cmsghdr *c;

	memset(m, 0, sizeof(*m));
	m->msg_name = (void *)d->dst;
	m->msg_namelen = sa_len(d->dst);
	m->msg_iov = (struct iovec *)d->iov;
	m->msg_iovlen = d->iovcnt;
	if (d->gso_size && len > d->gso_size && u->gso_ok) {
		m->msg_control = cbuf;
		m->msg_controllen = CMSG_SPACE(sizeof(uint16_t));
		c = CMSG_FIRSTHDR(m);
		c->cmsg_level = SOL_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		memcpy(CMSG_DATA(c), &d->gso_size, sizeof(uint16_t));
	}
	tx_add_ip_fields(m, cbuf, d->dst, d->tos, d->ttl);
}

/*
 * Sends a chunk of at most UR_LINK_TX_CHUNK descriptors. Returns the number
 * handed to the kernel (not necessarily a prefix: a descriptor the kernel
 * refuses for good is skipped and counted in tx_errors).
 */
static unsigned int send_chunk(struct ur_udp *u, const struct ur_txd *d,
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
		tx_msg(u, &d[i], len[i], &mm[i].msg_hdr, cb[i].buf);
	}
	i = 0;
	while (i < n) {
		/* a train without kernel GSO goes out on its own */
		if (!u->gso_ok && txd_segments(&d[i], len[i]) > 1) {
			r = send_split(u, &d[i]);
			if (r) {
				*err = r;
				udp_count(&u->tx_errors, 1);
			} else {
				sent++;
				pkts += txd_segments(&d[i], len[i]);
				bytes += len[i];
			}
			i++;
			continue;
		}
		/* one sendmmsg per run of datagrams from one address */
		for (k = i + 1; k < n; k++)
			if ((!u->gso_ok && txd_segments(&d[k], len[k]) > 1) ||
			    d[k].via != d[i].via)
				break;
		r = sendmmsg(tx_fd(u, d[i].via), mm + i, k - i, 0);
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
			tx_backoff(tx_fd(u, d[i].via), errno);
			continue;
		}
		/* hard error (or out of retries) on message i: skip it */
		*err = r < 0 ? -errno : -EIO;
		ur_dbg_dp("link: send failed: %d", *err);
		udp_count(&u->tx_errors, 1);
		i++;
		tries = 0;
	}
	udp_count(&u->tx_pkts, pkts);
	udp_count(&u->tx_bytes, bytes);
	return sent;
}

int ur_udp_send(struct ur_udp *u, const struct ur_txd *d, unsigned int n)
{
	unsigned int done = 0, sent = 0, k;
	int err = -EIO;

	while (done < n) {
		k = UR_MIN(n - done, (unsigned int)UR_LINK_TX_CHUNK);
		sent += send_chunk(u, d + done, k, &err);
		done += k;
	}
	return sent || !n ? (int)sent : err;
}

int ur_udp_sendto(struct ur_udp *u, uint8_t via, const union ur_sockaddr *dst,
		  const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	/* fault stage: class lost */
	int rc = send_one(tx_fd(u, via), dst, &iov, 1, 0, 0);

	if (rc) {
		udp_count(&u->tx_errors, 1);
		return rc;
	}
	udp_count(&u->tx_pkts, 1);
	udp_count(&u->tx_bytes, len);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Receive                                                             */
/* ------------------------------------------------------------------ */

/* Message i, received by socket s. */
static void rx_parse(struct ur_udp *u, const struct ur_sock *s,
		     unsigned int i)
{
	struct msghdr *m = &u->rx_msgs[i].msg_hdr;
	struct udp_rxmeta *mt = &u->rx_meta[i];
	struct cmsghdr *c;
	int v;

	mt->len = u->rx_msgs[i].msg_len;
	mt->seg = 0;
	mt->tos = 0;
	mt->ttl = 0;
	memset(&mt->dst, 0, sizeof(mt->dst));
	mt->dst.sa.sa_family = s->local.sa.sa_family;
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
	set_port(&mt->dst, port_of(&s->local));
}

/*
 * One recvmmsg of up to want messages from the first socket, in turn from
 * u->next_sock, that has any (so that no socket starves the others).
 * Returns the count of untruncated ones, -EAGAIN when no socket had any,
 * or -errno.
 */
static int rx_fill(struct ur_udp *u, unsigned int want)
{
	unsigned int i, k, n = UR_MIN(want, u->nslots), good = 0;
	const struct ur_sock *s = NULL;
	int r = -1;

	for (i = 0; i < n; i++) {
		struct msghdr *m = &u->rx_msgs[i].msg_hdr;

		m->msg_name = &u->rx_meta[i].src;
		m->msg_namelen = sizeof(union ur_sockaddr);
		m->msg_iov = &u->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = u->rx_cmsg + (size_t)i * UR_LINK_CMSG_SPACE;
		m->msg_controllen = UR_LINK_CMSG_SPACE;
		m->msg_flags = 0;
	}
	for (k = 0; k < u->n_sock; k++) {
		s = &u->socks[(u->next_sock + k) % u->n_sock];
		if (s->fd < 0)
			continue;
		r = recvmmsg(s->fd, u->rx_msgs, n, MSG_DONTWAIT, NULL);
		if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
	}
	if (r < 0)
		return k == u->n_sock ? -EAGAIN : -errno;
	u->next_sock = (u->next_sock + k + 1) % u->n_sock;
	for (i = 0; i < (unsigned int)r; i++) {
		if (u->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			udp_count(&u->rx_truncated, 1);
			continue;
		}
		/* msg_name points at rx_meta[i].src: parse before compacting */
		rx_parse(u, s, i);
		if (good != i) {
			/* keep the slot bases a permutation of the arena */
			void *b = u->rx_iov[good].iov_base;

			u->rx_meta[good] = u->rx_meta[i];
			u->rx_iov[good].iov_base = u->rx_iov[i].iov_base;
			u->rx_iov[i].iov_base = b;
		}
		good++;
	}
	u->pend_cnt = good;
	u->pend_idx = 0;
	u->pend_off = 0;
	return (int)good;
}

/* Hands out pending datagrams (GRO trains split at seg). */
static unsigned int rx_emit(struct ur_udp *u, struct ur_rxd *d,
			    unsigned int max)
{
	unsigned int out = 0;
	uint64_t bytes = 0;

	while (out < max && u->pend_idx < u->pend_cnt) {
		const struct udp_rxmeta *mt = &u->rx_meta[u->pend_idx];
		uint32_t seg = mt->seg ? mt->seg : mt->len;
		uint32_t chunk = UR_MIN(seg, mt->len - u->pend_off);
		struct ur_rxd *x = &d[out++];

		x->data = (uint8_t *)u->rx_iov[u->pend_idx].iov_base +
			  u->pend_off;
		x->len = chunk;
		x->src = mt->src;
		x->dst = mt->dst;
		x->tos = mt->tos;
		x->ttl = mt->ttl;
		bytes += chunk;
		u->pend_off += chunk;
		if (u->pend_off >= mt->len || !chunk) {
			u->pend_idx++;
			u->pend_off = 0;
		}
	}
	udp_count(&u->rx_pkts, out);
	udp_count(&u->rx_bytes, bytes);
	return out;
}

int ur_udp_recv(struct ur_udp *u, struct ur_rxd *d, unsigned int max)
{
	int r;

	if (!max)
		return 0;
	if (u->pend_idx >= u->pend_cnt) {
		/* slots are free again only once everything is out */
		do {
			r = rx_fill(u, max);
		} while (r == 0);	/* all truncated: try again */
		if (r < 0)
			return r == -EAGAIN || r == -EWOULDBLOCK ? 0 : r;
	}
	return (int)rx_emit(u, d, max);
}

void ur_udp_stats(const struct ur_udp *u, struct ur_link_stats *st)
{
	struct ur_udp *m = (struct ur_udp *)u;

	st->tx_pkts = atomic_load(&m->tx_pkts);
	st->tx_bytes = atomic_load(&m->tx_bytes);
	st->tx_errors = atomic_load(&m->tx_errors);
	st->rx_pkts = atomic_load(&m->rx_pkts);
	st->rx_bytes = atomic_load(&m->rx_bytes);
	st->rx_truncated = atomic_load(&m->rx_truncated);
}
