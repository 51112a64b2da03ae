/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * link/ internals shared by udp.c (the socket) and fault.c (the fault
 * injection stage). Nothing outside link/ includes this.
 */
#ifndef UR_LINK_LINK_PRIV_H
#define UR_LINK_LINK_PRIV_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "link/link.h"

/* Receive buffers: one per recvmmsg slot. With GRO a slot may hold a whole
 * 64 KiB train; without it a jumbo datagram is the largest we expect. */
#define UR_LINK_RX_SLOTS 64
#define UR_LINK_RX_SLOTS_GRO 32
#define UR_LINK_RX_BUF 9216u
#define UR_LINK_RX_BUF_GRO 65536u
#define UR_LINK_TX_CHUNK 64		/* messages per sendmmsg() */
#define UR_LINK_CMSG_SPACE 128		/* per received message */

/* What we parsed from one received message (a datagram or a GRO train). */
struct ur_link_rxmeta {
	uint32_t len;			/* bytes in the slot */
	uint16_t seg;			/* GRO segment size, 0 = one datagram */
	uint8_t tos, ttl;
	union ur_sockaddr src, dst;
};

struct ur_fault;

struct ur_link {
	int fd;
	int wake_fd;			/* eventfd for ur_link_wake() */
	int family;
	uint32_t max_payload;
	bool gso_ok;			/* kernel accepts UDP_SEGMENT */
	bool gro_on;			/* UDP_GRO enabled on the socket */
	union ur_sockaddr local;

	/* receive side: one thread at a time (link.h) */
	unsigned int nslots;
	size_t slot_size;
	size_t arena_size;
	uint8_t *arena;			/* nslots * slot_size, mmap'd */
	struct mmsghdr *rx_msgs;
	struct iovec *rx_iov;
	uint8_t *rx_cmsg;		/* nslots * UR_LINK_CMSG_SPACE */
	struct ur_link_rxmeta *rx_meta;
	unsigned int pend_cnt;		/* messages of the last recvmmsg */
	unsigned int pend_idx;		/* next message to hand out */
	uint32_t pend_off;		/* offset inside that message */

	_Atomic uint64_t tx_pkts, tx_bytes, tx_errors;
	_Atomic uint64_t rx_pkts, rx_bytes, rx_truncated;

	int tm_fd;			/* fault release timerfd or -1 */
	int ep_fd;			/* epoll(socket, tm_fd) or -1 */
	atomic_bool fi_on;		/* fast-path check */
	struct ur_fault *fi;		/* always allocated; guarded inside */
};

static inline void ur_link_add(_Atomic uint64_t *c, uint64_t v)
{
	atomic_fetch_add_explicit(c, v, memory_order_relaxed);
}

/* udp.c: the raw paths, no fault stage. */
int ur_link_send_raw(struct ur_link *l, const struct ur_txd *d,
		     unsigned int n);
/* Non-blocking: hands out what is pending or what one recvmmsg brings. */
int ur_link_recv_raw(struct ur_link *l, struct ur_rxd *d, unsigned int max);
int ur_link_sendto_raw(struct ur_link *l, const union ur_sockaddr *dst,
		       const void *buf, size_t len);

/* fault.c */
int ur_fault_create(struct ur_fault **out);
void ur_fault_destroy(struct ur_fault *f);
/* Parses spec into l->fi; returns 1 if the spec enables any fault, 0 if
 * none, -EINVAL on a syntax error (logged, old config kept). Held tx
 * datagrams are sent and held rx datagrams dropped first. */
int ur_fault_configure(struct ur_link *l, const char *spec);
int ur_fault_send(struct ur_link *l, const struct ur_txd *d, unsigned int n);
int ur_fault_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max);
/* Releases due held datagrams (tx and rx sides); returns ms until the next
 * one is due, or -1 when nothing is held. */
int ur_fault_poll(struct ur_link *l);
/* True when rx-held datagrams are due now (recv must not block). */
bool ur_fault_rx_ready(struct ur_link *l);
void ur_fault_stats(const struct ur_fault *f, struct ur_link_stats *st);

#endif
