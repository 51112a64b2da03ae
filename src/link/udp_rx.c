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
int ur_udp_rx_setup(struct ur_udp *u, struct udp_rxq *q)
{
	unsigned int i;

	q->nslots = u->gro_on ? UR_LINK_RX_SLOTS_GRO : UR_LINK_RX_SLOTS;
	q->slot_size = u->gro_on ? UR_LINK_RX_BUF_GRO : UR_LINK_RX_BUF;
	q->arena_size = (size_t)q->nslots * q->slot_size;
	/* mmap: pages stay unbacked until a datagram that large arrives */
	q->arena = mmap(NULL, q->arena_size, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (q->arena == MAP_FAILED) {
		q->arena = NULL;
		return -ENOMEM;
	}
	q->rx_msgs = calloc(q->nslots, sizeof(*q->rx_msgs));
	q->rx_iov = calloc(q->nslots, sizeof(*q->rx_iov));
	q->rx_cmsg = calloc(q->nslots, UR_LINK_CMSG_SPACE);
	q->rx_meta = calloc(q->nslots, sizeof(*q->rx_meta));
	if (!q->rx_msgs || !q->rx_iov || !q->rx_cmsg || !q->rx_meta)
		return -ENOMEM;
	for (i = 0; i < q->nslots; i++) {
		q->rx_iov[i].iov_base = q->arena + (size_t)i * q->slot_size;
		q->rx_iov[i].iov_len = q->slot_size;
	}
	return 0;
}

void ur_udp_rx_free(struct udp_rxq *q)
{
	if (q->arena)
		munmap(q->arena, q->arena_size);
	free(q->rx_msgs);
	free(q->rx_iov);
	free(q->rx_cmsg);
	free(q->rx_meta);
}

/* Message i, received by socket s. */
static void rx_parse(struct udp_rxq *q, const union ur_sockaddr *local,
		     unsigned int i)
{
	struct msghdr *m = &q->rx_msgs[i].msg_hdr;
	struct udp_rxmeta *mt = &q->rx_meta[i];
	struct cmsghdr *c;
	int v;

	mt->len = q->rx_msgs[i].msg_len;
	mt->seg = 0;
	mt->tos = 0;
	mt->ttl = 0;
	memset(&mt->dst, 0, sizeof(mt->dst));
	mt->dst.sa.sa_family = local->sa.sa_family;
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
	set_port(&mt->dst, port_of(local));
}

/* Queue q's socket k of rxq_socks(): its fd (-1 closed) and address. */
static int rxq_sock(const struct ur_udp *u, unsigned int qi, unsigned int k,
		    const union ur_sockaddr **local)
{
	*local = &u->socks[k].local;
	return qi ? u->rxq[qi].fds[k] : u->socks[k].fd;
}

/* How many sockets queue q has: queue 0 the addresses' and the groups',
 * the others one per address. */
static unsigned int rxq_socks(const struct ur_udp *u, unsigned int qi)
{
	return qi ? u->n_addr : u->n_sock;
}

/*
 * One recvmmsg of up to want messages from the first socket of queue qi,
 * in turn from its next_sock, that has any (so that no socket starves the
 * others). Returns the count of untruncated ones, -EAGAIN when no socket
 * had any, or -errno.
 */
static int rx_fill(struct ur_udp *u, unsigned int qi, unsigned int want)
{
	struct udp_rxq *q = &u->rxq[qi];
	unsigned int i, k, n = UR_MIN(want, q->nslots), good = 0;
	unsigned int ns = rxq_socks(u, qi);
	const union ur_sockaddr *local = NULL;
	int r = -1, fd;

	for (i = 0; i < n; i++) {
		struct msghdr *m = &q->rx_msgs[i].msg_hdr;

		m->msg_name = &q->rx_meta[i].src;
		m->msg_namelen = sizeof(union ur_sockaddr);
		m->msg_iov = &q->rx_iov[i];
		m->msg_iovlen = 1;
		m->msg_control = q->rx_cmsg + (size_t)i * UR_LINK_CMSG_SPACE;
		m->msg_controllen = UR_LINK_CMSG_SPACE;
		m->msg_flags = 0;
	}
	for (k = 0; k < ns; k++) {
		fd = rxq_sock(u, qi, (q->next_sock + k) % ns, &local);
		if (fd < 0)
			continue;
		r = recvmmsg(fd, q->rx_msgs, n, MSG_DONTWAIT, NULL);
		if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
			break;
	}
	if (r < 0)
		return k == ns ? -EAGAIN : -errno;
	q->next_sock = (q->next_sock + k + 1) % ns;
	for (i = 0; i < (unsigned int)r; i++) {
		if (q->rx_msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			udp_count(&u->rx_truncated, 1);
			continue;
		}
		if (!q->rx_msgs[i].msg_len)
			continue;	/* a same-host ring's doorbell */
		/* msg_name points at rx_meta[i].src: parse before compacting */
		rx_parse(q, local, i);
		if (good != i) {
			/* keep the slot bases a permutation of the arena */
			void *b = q->rx_iov[good].iov_base;

			q->rx_meta[good] = q->rx_meta[i];
			q->rx_iov[good].iov_base = q->rx_iov[i].iov_base;
			q->rx_iov[i].iov_base = b;
		}
		good++;
	}
	q->pend_cnt = good;
	q->pend_idx = 0;
	q->pend_off = 0;
	return (int)good;
}

/* Hands out pending datagrams (GRO trains split at seg). */
static unsigned int rx_emit(struct ur_udp *u, struct udp_rxq *q,
			    struct ur_rxd *d, unsigned int max)
{
	unsigned int out = 0;
	uint64_t bytes = 0;

	while (out < max && q->pend_idx < q->pend_cnt) {
		const struct udp_rxmeta *mt = &q->rx_meta[q->pend_idx];
		uint32_t seg = mt->seg ? mt->seg : mt->len;
		uint32_t chunk = UR_MIN(seg, mt->len - q->pend_off);
		struct ur_rxd *x = &d[out++];

		x->data = (uint8_t *)q->rx_iov[q->pend_idx].iov_base +
			  q->pend_off;
		x->len = chunk;
		x->src = mt->src;
		x->dst = mt->dst;
		x->tos = mt->tos;
		x->ttl = mt->ttl;
		x->ring = false;
		x->no_icrc = false;
		bytes += chunk;
		q->pend_off += chunk;
		if (q->pend_off >= mt->len || !chunk) {
			q->pend_idx++;
			q->pend_off = 0;
		}
	}
	udp_count(&u->rx_pkts, out);
	udp_count(&u->rx_bytes, bytes);
	return out;
}

/* The sockets' part of ur_udp_recv(). */
static int sock_recv(struct ur_udp *u, unsigned int qi, struct ur_rxd *d,
		     unsigned int max)
{
	struct udp_rxq *q = &u->rxq[qi];
	int r;

	if (q->pend_idx >= q->pend_cnt) {
		/* slots are free again only once everything is out */
		do {
			r = rx_fill(u, qi, max);
		} while (r == 0);	/* all truncated: try again */
		if (r < 0)
			return r == -EAGAIN || r == -EWOULDBLOCK ? 0 : r;
	}
	return (int)rx_emit(u, q, d, max);
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
	struct udp_rxq *q = &u->rxq[0];
	bool ring_first;
	int r;

	if (!max)
		return 0;
	if (!u->shm)
		return sock_recv(u, 0, d, max);
	q->rx_turn = (q->rx_turn + 1) % UR_SHM_SOCK_TURN;
	ring_first = q->rx_turn != 0;
	r = ring_first ? shm_recv(u, d, max) : sock_recv(u, 0, d, max);
	if (r)
		return r;
	return ring_first ? sock_recv(u, 0, d, max) : shm_recv(u, d, max);
}

int ur_udp_recv_q(struct ur_udp *u, unsigned int q, struct ur_rxd *d,
		  unsigned int max)
{
	if (!q)
		return ur_udp_recv(u, d, max);
	if (!max || q >= u->n_rxq)
		return 0;
	return sock_recv(u, q, d, max);
}

unsigned int ur_udp_rx_queues(const struct ur_udp *u)
{
	return u->n_rxq;
}

int ur_udp_fd_q(const struct ur_udp *u, unsigned int q)
{
	if (!q)
		return atomic_load(&((struct ur_udp *)u)->poll_fd);
	return q < u->n_rxq ? u->rxq[q].poll_fd : -1;
}

bool ur_udp_rx_maybe_q(struct ur_udp *u, unsigned int q)
{
	struct pollfd p = { .events = POLLIN };

	if (!q)
		return ur_udp_rx_maybe(u);
	if (q >= u->n_rxq)
		return false;
	p.fd = u->rxq[q].poll_fd;
	return poll(&p, 1, 0) != 0;
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
