/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What udp.c (open, sockets, send) and udp_rx.c (receive) share: the
 * backend's state. Nothing outside those two includes this.
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

	/* the same-host rings (shm.h), NULL when off or unusable; receives
	 * take turns between them and the sockets (rx_turn) */
	struct ur_shm *shm;
	unsigned int rx_turn;

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

/* udp_rx.c: the receive arena and its message headers. 0 or -ENOMEM. */
int ur_udp_rx_setup(struct ur_udp *u);

#endif
