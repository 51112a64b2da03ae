/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The datagram backend's receive side (udp.c says what the backend is):
 * recvmmsg into one mmap'd arena of slots, GRO trains handed out as their
 * datagrams, the same-host ring's datagrams in turn with the sockets',
 * and the ring's part of the receiving thread's sleep.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "link/params.h"
#include "link/udp_priv.h"
#include "util/compiler.h"

/* Receive buffers: see udp.c's comment on the arena. */
int ur_udp_rx_setup(struct ur_udp *u)
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
		if (!u->rx_msgs[i].msg_len)
			continue;	/* a same-host ring's doorbell */
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
		x->ring = false;
		x->no_icrc = false;
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

/* The sockets' part of ur_udp_recv(). */
static int sock_recv(struct ur_udp *u, struct ur_rxd *d, unsigned int max)
{
	int r;

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

/* The ring's part of ur_udp_recv(). */
static int shm_recv(struct ur_udp *u, struct ur_rxd *d, unsigned int max)
{
	unsigned int n = ur_shm_recv(u->shm, d, max), i;
	uint64_t bytes = 0;

	for (i = 0; i < n; i++)
		bytes += d[i].len;
	udp_count(&u->rx_pkts, n);
	udp_count(&u->rx_bytes, bytes);
	return (int)n;
}

/*
 * The ring comes first, and the sockets every UR_SHM_SOCK_TURN-th call
 * (link/params.h says why), so that a stream on one never starves the
 * other; a call returns what the first one that had anything brought.
 */
int ur_udp_recv(struct ur_udp *u, struct ur_rxd *d, unsigned int max)
{
	bool ring_first;
	int r;

	if (!max)
		return 0;
	if (!u->shm)
		return sock_recv(u, d, max);
	u->rx_turn = (u->rx_turn + 1) % UR_SHM_SOCK_TURN;
	ring_first = u->rx_turn != 0;
	r = ring_first ? shm_recv(u, d, max) : sock_recv(u, d, max);
	if (r)
		return r;
	return ring_first ? sock_recv(u, d, max) : shm_recv(u, d, max);
}

/* link.h's ur_link_rx_maybe(). The arena's pending datagrams are not
 * looked at (that would race with the receiver): a burst runs until a
 * call returns less than it asked for, which leaves none pending. */
bool ur_udp_rx_maybe(struct ur_udp *u)
{
	/* ur_udp_fd()'s value, read here: udp.c calls this file, not back */
	struct pollfd p = { .fd = atomic_load(&u->poll_fd), .events = POLLIN };

	if (u->shm && ur_shm_rx_maybe(u->shm))
		return true;
	return poll(&p, 1, 0) != 0;
}

bool ur_udp_wait_arm(struct ur_udp *u)
{
	return u->shm && ur_shm_wait_arm(u->shm);
}

void ur_udp_wait_disarm(struct ur_udp *u)
{
	if (u->shm)
		ur_shm_wait_disarm(u->shm);
}
