/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What udp.c (open, sockets, send), udp_rx.c (receive) and steer.c (the
 * receive queues steered by QP number) share: the backend's state.
 * Nothing outside those three includes this.
 */
#ifndef UR_LINK_UDP_PRIV_H
#define UR_LINK_UDP_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "link/shm.h"
#include "link/sock.h"
#include "link/udp.h"

/* What we parsed from one received message (a datagram or a GRO train). */
struct udp_rxmeta {
	uint32_t len;			/* bytes in the slot */
	uint16_t seg;			/* GRO segment size, 0 = one datagram */
	uint8_t tos, ttl;
	union ur_sockaddr src, dst;
};

/* One receive queue: one thread at a time (link.h), its own sockets and
 * receive slots. */
struct udp_rxq {
	int fds[UR_LINK_MAX_ADDRS];	/* q > 0: per address, -1 none */
	int ep_fd;			/* q > 0: epoll over fds, or -1 */
	int poll_fd;			/* q > 0: what to poll */
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
	unsigned int rx_turn;		/* q 0: ring or sockets first */
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

	/* receive queues (steer.c): [0] has the address sockets above, the
	 * groups' and the ring; [q > 0] one more socket per address, bound
	 * with SO_REUSEPORT, that the kernel hands the datagrams of the QPs
	 * with QPN % n_rxq == q */
	struct udp_rxq *rxq;
	unsigned int n_rxq;
	int claim_fd[UR_LINK_MAX_ADDRS];	/* steer.c: owns address i */

	/* the same-host rings (shm.h), NULL when off or unusable; receives
	 * take turns between them and the sockets (rx_turn) */
	struct ur_shm *shm;

	_Atomic uint64_t tx_pkts, tx_bytes, tx_errors;
	_Atomic uint64_t tx_blocked;	/* EAGAIN/ENOBUFS waited out */
	_Atomic uint64_t rx_pkts, rx_bytes, rx_truncated;
};

static inline void udp_count(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}


static inline uint16_t port_of(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET ? a->in.sin_port : a->in6.sin6_port;
}

static inline void set_port(union ur_sockaddr *a, uint16_t port)
{
	if (a->sa.sa_family == AF_INET)
		a->in.sin_port = port;
	else
		a->in6.sin6_port = port;
}

/* udp_rx.c: queue q's receive arena and message headers (0 or -ENOMEM);
 * freeing them. */
int ur_udp_rx_setup(struct ur_udp *u, struct udp_rxq *q);
void ur_udp_rx_free(struct udp_rxq *q);

/* steer.c: with cfg.rx_queues > 1, the claim on address i (port 0: the
 * kernel's port; claimed after the bind then): 0, or -EADDRINUSE when
 * another process owns it. */
int ur_udp_steer_claim(struct ur_udp *u, unsigned int i,
		       const union ur_sockaddr *a);
/* steer.c: queues 1 .. n-1 of cfg.rx_queues once the address sockets are
 * bound (fewer when the kernel refuses; never an error); closing them. */
void ur_udp_steer_open(struct ur_udp *u);
void ur_udp_steer_close(struct ur_udp *u);

#endif
