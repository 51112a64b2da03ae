/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The datagram backend: one unconnected socket per address bound to
 * <ip>:<port> (sock.c says why), one per joined multicast group, batches
 * with sendmmsg/recvmmsg, UDP_SEGMENT (GSO) on send, UDP_GRO on receive;
 * and, with ur_link_config.same_host, the same-host rings (shm.c): a
 * descriptor for a uroce process of this host goes into its ring, the
 * rest to the sockets, and receives take turns between the two.
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
 * The receive side is udp_rx.c.
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
#include "link/udp_priv.h"
#include "util/addr.h"
#include "util/log.h"
#include "util/compiler.h"
#include "util/memguard.h"
#include "util/trace.h"

static socklen_t sa_len(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) :
					      sizeof(struct sockaddr_in);
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
	bool fixed = port_of(addr) != 0;
	int rc;

	/* with queues, claim before the bind, or a process that lost the
	 * race would sit in the owner's group for a moment */
	rc = fixed ? ur_udp_steer_claim(u, i, addr) : 0;
	rc = rc ?: ur_sock_open_addr(&u->cfg, addr, s);
	if (!rc && !fixed) {
		rc = ur_udp_steer_claim(u, i, &s->local);
		if (rc)
			ur_sock_close(s);
	}
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

/* The same-host ring under the bound addresses; without one (no loopback
 * address, no /dev/shm) every datagram goes by UDP. */
static void shm_setup(struct ur_udp *u)
{
	union ur_sockaddr bound[UR_LINK_MAX_ADDRS];
	unsigned int i, n = 0;

	for (i = 0; i < u->n_addr; i++)
		if (u->socks[i].fd >= 0)
			bound[n++] = u->socks[i].local;
	if (ur_shm_open(bound, n, &u->shm))
		u->shm = NULL;
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
	u->cfg.rx_queues = UR_MIN(UR_MAX(cfg->rx_queues, 1u),
				  (unsigned int)UR_LINK_MAX_RXQ);
	for (i = 0; i < UR_LINK_MAX_ADDRS; i++)
		u->claim_fd[i] = -1;
	u->n_rxq = 1;
	u->rxq = calloc(u->cfg.rx_queues, sizeof(*u->rxq));
	u->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	u->socks = calloc(UR_LINK_MAX_ADDRS + UR_LINK_MAX_GROUPS,
			  sizeof(*u->socks));
	rc = u->ep_fd < 0 ? -errno : !u->socks || !u->rxq ? -ENOMEM : 0;
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
	rc = rc ?: ur_udp_rx_setup(u, &u->rxq[0]);
	if (rc) {
		ur_udp_close(u);
		return rc;
	}
	ur_udp_steer_open(u);
	if (cfg->same_host)
		shm_setup(u);
	ur_info("link: %u address(es), max payload %u, gso %d, gro %d, "
		"same-host rings %d, receive queues %u", n, u->max_payload,
		u->gso_ok, u->gro_on, u->shm != NULL, u->n_rxq);
	*out = u;
	return 0;
}

void *ur_udp_own_area(struct ur_udp *u)
{
	return ur_shm_own_area(u->shm);
}

void *ur_udp_peer_area_get(struct ur_udp *u, const union ur_sockaddr *dst,
			   int32_t *owner)
{
	return ur_shm_area_get(u->shm, dst, owner);
}

void ur_udp_peer_area_put(struct ur_udp *u)
{
	ur_shm_area_put(u->shm);
}

bool ur_udp_is_ring(struct ur_udp *u, const union ur_sockaddr *dst)
{
	return u->cfg.seal && ur_shm_is_ring(u->shm, dst);
}

uint32_t ur_udp_ring_gen(const struct ur_udp *u)
{
	return ur_shm_gen(u->shm);
}

void ur_udp_close(struct ur_udp *u)
{
	unsigned int i;

	if (!u)
		return;
	ur_shm_close(u->shm);
	ur_udp_steer_close(u);
	for (i = 0; i < u->n_sock; i++)
		ur_sock_close(&u->socks[i]);
	if (u->ep_fd >= 0)
		close(u->ep_fd);
	if (u->rxq)
		ur_udp_rx_free(&u->rxq[0]);
	for (i = 0; i < UR_LINK_MAX_ADDRS; i++)
		if (u->claim_fd[i] >= 0)
			close(u->claim_fd[i]);
	free(u->socks);
	free(u->rxq);
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
	u->rxq[0].next_sock = 0;
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
static const struct ur_sock *tx_sock(const struct ur_udp *u, uint8_t via)
{
	if (via < u->n_addr && u->socks[via].fd >= 0)
		return &u->socks[via];
	return &u->socks[0];
}

/*
 * Waits a little for the socket to drain after EAGAIN/ENOBUFS, and counts
 * it: a socket buffer or a local queue that is full is congestion on this
 * host, which the engine reacts to (tx_blocked, ur_link_tx_blocked()).
 */
static void tx_backoff(struct ur_udp *u, int fd, int err)
{
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	struct timespec ts = { 0, 20000 };

	if (err != EINTR)
		udp_count(&u->tx_blocked, 1);
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
 * peer: IP_TOS/IPV6_TCLASS when tos is not the sockets' own (deftos,
 * ur_link_config.tos: the GRH traffic class its AH or QP asked for, with
 * the engine's ECN bits), IP_TTL/IPV6_HOPLIMIT when ttl is not 0 (a
 * multicast AH's hop limit; Linux takes either for multicast too, over
 * the socket's IP_MULTICAST_TTL). Unicast with the default class pays two
 * tests.
 */
static void tx_add_ip_fields(struct msghdr *m, char *cbuf,
			     const union ur_sockaddr *dst, uint8_t tos,
			     uint8_t ttl, uint8_t deftos)
{
	if (tos != deftos)
		tx_add_int(m, cbuf, dst, IP_TOS, IPV6_TCLASS, tos);
	if (ttl)
		tx_add_int(m, cbuf, dst, IP_TTL, IPV6_HOPLIMIT, ttl);
}

/* Sends one datagram built from the iovecs; retries transient errors. */
static int send_one(struct ur_udp *u, int fd, const union ur_sockaddr *dst,
		    struct iovec *iov, unsigned int iovcnt, uint8_t tos,
		    uint8_t ttl, uint8_t deftos)
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

	tx_add_ip_fields(&m, cb.buf, dst, tos, ttl, deftos);

	for (tries = 0; tries <= UR_LINK_TX_RETRIES; tries++) {
		if (sendmsg(fd, &m, 0) >= 0)
			return 0;
		if (errno != EAGAIN && errno != ENOBUFS && errno != EINTR)
			return -errno;
		tx_backoff(u, fd, errno);
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
		rc = send_one(u, tx_sock(u, d->via)->fd, d->dst, seg, n, d->tos,
			      d->ttl, u->cfg.tos);
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
	tx_add_ip_fields(m, cbuf, d->dst, d->tos, d->ttl, u->cfg.tos);
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
		r = sendmmsg(tx_sock(u, d[i].via)->fd, mm + i, k - i, 0);
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
			tx_backoff(u, tx_sock(u, d[i].via)->fd, errno);
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

/* The ring's owner sleeps: wake it with a zero-length datagram, which
 * its receive drops (rx_fill). */
static void shm_doorbell(struct ur_udp *u, uint8_t via,
			 const union ur_sockaddr *dst)
{
	ur_trace(UR_TR_DOORBELL, 0, 0);
	if (!send_one(u, tx_sock(u, via)->fd, dst, NULL, 0, u->cfg.tos, 0,
		      u->cfg.tos))
		ur_shm_note_doorbell(u->shm);
}

bool ur_udp_seal_tx(struct ur_udp *u, uint8_t via,
		    const union ur_sockaddr *dst, uint8_t *pkt, size_t len)
{
	if (!u->cfg.seal || len < 4)
		return false;
	u->cfg.seal(pkt, len, &tx_sock(u, via)->local, dst);
	return true;
}

bool ur_udp_seal_rx(struct ur_udp *u, struct ur_rxd *x)
{
	if (!u->cfg.seal || x->len < 4)
		return false;
	u->cfg.seal(x->data, x->len, &x->src, &x->dst);
	x->no_icrc = false;
	return true;
}

/*
 * A descriptor built for a ring without its ICRC (ur_txd.no_icrc) that no
 * ring took (its owner closed, another process owns the address now):
 * each datagram is copied out, sealed with its ICRC and sent alone, so
 * that nothing leaves by a socket without one. The engine's next lookup
 * (ur_link_is_ring()) stops building such descriptors. Returns the
 * datagrams sent.
 */
static unsigned int seal_send(struct ur_udp *u, const struct ur_txd *d,
			      size_t len)
{
	size_t seg = d->gso_size && len > d->gso_size ? d->gso_size : len;
	const struct ur_sock *sk = tx_sock(u, d->via);
	uint8_t buf[UR_SHM_SLOT_DATA];
	unsigned int i = 0, sent = 0;
	size_t off = 0, pos = 0, take, chunk, k;
	struct iovec iov;

	for (; pos < len; pos += chunk) {
		chunk = UR_MIN(seg, len - pos);
		for (k = 0; k < chunk && chunk <= sizeof(buf); k += take) {
			take = UR_MIN(chunk - k, d->iov[i].iov_len - off);
			if (ur_memguard_copy(buf + k,
					     (const uint8_t *)d->iov[i].iov_base +
						     off, take))
				break;	/* unmapped: lost, as sendmsg's EFAULT */
			off += take;
			if (off == d->iov[i].iov_len) {
				i++;
				off = 0;
			}
		}
		if (!u->cfg.seal || chunk > sizeof(buf) || k < chunk ||
		    chunk < 4) {
			udp_count(&u->tx_errors, 1);
			if (k < chunk)
				break;	/* the iovec cursor is lost */
			continue;
		}
		u->cfg.seal(buf, chunk, &sk->local, d->dst);
		iov.iov_base = buf;
		iov.iov_len = chunk;
		if (send_one(u, sk->fd, d->dst, &iov, 1, d->tos, d->ttl,
			     u->cfg.tos)) {
			udp_count(&u->tx_errors, 1);
			continue;
		}
		udp_count(&u->tx_pkts, 1);
		udp_count(&u->tx_bytes, chunk);
		sent++;
	}
	return sent;
}

/*
 * Hands the descriptors bound for same-host rings to them; the others go
 * to rest (at most n). Returns how many are left for the sockets and adds
 * the ones the rings took to *taken.
 *
 * The doorbell of a run of descriptors to one peer is rung after the
 * run's last put, on what that put saw: a doorbell rung at the first put
 * that found the owner asleep wakes it at once (the other core), it
 * drains, arms again and sleeps while the run's later puts land, and
 * their `waiting` then asks for a doorbell the run had already spent
 * (test_regress_doorbell_after_last_put). Only a put's own read of
 * `waiting`, after its store of head, pairs with the owner's arm; an
 * earlier put of the run that asked for one still rings if no later put
 * of the run stored anything (a full or closed ring).
 */
static unsigned int shm_route(struct ur_udp *u, const struct ur_txd *d,
			      unsigned int n, struct ur_txd *rest,
			      unsigned int *taken)
{
	uint64_t pkts = 0, bytes = 0;
	unsigned int i, left = 0;
	bool wake = false;
	enum ur_shm_tx r;
	size_t len;

	for (i = 0; i < n; i++) {
		if (!ur_addr_is_loopback(d[i].dst)) {
			rest[left++] = d[i];	/* another host: no ring */
			continue;
		}
		len = iov_total(d[i].iov, d[i].iovcnt);
		r = ur_shm_send(u->shm, &d[i], len,
				&tx_sock(u, d[i].via)->local);
		if (r == UR_SHM_NOT_LOCAL && d[i].no_icrc) {
			*taken += seal_send(u, &d[i], len) ==
				  txd_segments(&d[i], len);
		} else if (r == UR_SHM_NOT_LOCAL) {
			rest[left++] = d[i];
		} else {
			if (r != UR_SHM_SENT_NONE)
				wake = r == UR_SHM_SENT_WAKE;
			pkts += txd_segments(&d[i], len);
			bytes += len;
			(*taken)++;
		}
		/* the run to this peer ends here: ring for it */
		if (wake && (i + 1 == n || d[i + 1].dst != d[i].dst)) {
			shm_doorbell(u, d[i].via, d[i].dst);
			wake = false;
		}
	}
	udp_count(&u->tx_pkts, pkts);
	udp_count(&u->tx_bytes, bytes);
	return left;
}

/* Whether a descriptor of d may be for a same-host ring: else the batch
 * goes to the sockets as the engine built it. */
static bool any_loopback(const struct ur_txd *d, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ur_addr_is_loopback(d[i].dst))
			return true;
	return false;
}

int ur_udp_send(struct ur_udp *u, const struct ur_txd *d, unsigned int n)
{
	struct ur_txd rest[UR_LINK_TX_CHUNK];
	unsigned int done = 0, sent = 0, k, left;
	int err = -EIO;

	while (done < n) {
		k = UR_MIN(n - done, (unsigned int)UR_LINK_TX_CHUNK);
		if (u->shm && any_loopback(d + done, k)) {
			left = shm_route(u, d + done, k, rest, &sent);
			if (left)
				sent += send_chunk(u, rest, left, &err);
		} else {
			sent += send_chunk(u, d + done, k, &err);
		}
		done += k;
	}
	return sent || !n ? (int)sent : err;
}

int ur_udp_sendto(struct ur_udp *u, uint8_t via, const union ur_sockaddr *dst,
		  uint8_t tos, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct ur_txd d = { .dst = dst, .iov = &iov, .iovcnt = 1, .tos = tos,
			    .via = via };
	unsigned int taken = 0;
	int rc;

	if (u->shm && any_loopback(&d, 1) && !shm_route(u, &d, 1, &d, &taken))
		return 0;
	rc = send_one(u, tx_sock(u, via)->fd, dst, &iov, 1, tos, 0, u->cfg.tos);
	if (rc) {
		udp_count(&u->tx_errors, 1);
		return rc;
	}
	udp_count(&u->tx_pkts, 1);
	udp_count(&u->tx_bytes, len);
	return 0;
}

uint64_t ur_udp_tx_blocked(const struct ur_udp *u)
{
	return atomic_load_explicit(&((struct ur_udp *)u)->tx_blocked,
				    memory_order_relaxed);
}

void ur_udp_stats(const struct ur_udp *u, struct ur_link_stats *st)
{
	struct ur_udp *m = (struct ur_udp *)u;

	st->tx_pkts = atomic_load(&m->tx_pkts);
	st->tx_bytes = atomic_load(&m->tx_bytes);
	st->tx_errors = atomic_load(&m->tx_errors);
	st->tx_blocked = atomic_load(&m->tx_blocked);
	st->rx_pkts = atomic_load(&m->rx_pkts);
	st->rx_bytes = atomic_load(&m->rx_bytes);
	st->rx_truncated = atomic_load(&m->rx_truncated);
	ur_shm_stats(m->shm, st);
}
