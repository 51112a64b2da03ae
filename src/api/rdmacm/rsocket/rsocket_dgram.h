/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' SOCK_DGRAM, rdma-core's datagram protocol: a socket is a
 * kernel UDP socket (its number, and the addresses the application sees)
 * and a UD QP that carries the datagrams once the peer's QP is known.
 *
 * Every UD message starts with a struct rsd_hdr, the sender's UDP address
 * (so rrecvfrom can name the sender as a UDP socket would), then the data;
 * a message is at most RSK_SNDLOWAT bytes with its header. A peer's QP is
 * learned through the UDP socket: until it is known, a datagram goes by
 * UDP behind a struct rsd_udp_hdr (op DATA) naming our QP; the receiver
 * answers with a bare header (op CTRL) naming its own, delivers the data,
 * and from then on both sides send over their UD QPs (Q_Key RDMA_UDP_QKEY).
 */
#ifndef UR_API_RDMACM_RSOCKET_DGRAM_H
#define UR_API_RDMACM_RSOCKET_DGRAM_H

#include <netinet/in.h>
#include <infiniband/verbs.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"

/* Before every UD message (network order, unaligned fields avoided) */
struct rsd_hdr {
	uint8_t version;		/* 4 or 6 */
	uint8_t length;			/* RSD_HDR4_LEN or RSD_HDR6_LEN */
	uint16_t port;
	union {
		uint32_t ipv4;
		struct {
			uint32_t flowinfo;
			uint8_t addr[16];
		} ipv6;
	} addr;
};
#define RSD_HDR4_LEN 8
#define RSD_HDR6_LEN 24

/* Before a datagram sent through the UDP socket (network order) */
struct rsd_udp_hdr {
	uint32_t tag;			/* RSD_UDP_TAG */
	uint8_t version;		/* 4 or 6, the UDP socket's family */
	uint8_t op;			/* RSK_OP_DATA, or RSK_OP_CTRL: no data */
	uint8_t length;			/* RSD_UDP4_LEN or RSD_UDP6_LEN */
	uint8_t reserved;
	uint32_t qpn;			/* the sender's UD QP (low 24 bits) */
	union {
		uint32_t ipv4;
		uint8_t ipv6[16];
	} addr;				/* where the sender's QP is */
};
#define RSD_UDP_TAG 0x55555555u
#define RSD_UDP4_LEN 16
#define RSD_UDP6_LEN 28

_Static_assert(sizeof(struct rsd_hdr) == RSD_HDR6_LEN, "rdma-core's layout");
_Static_assert(sizeof(struct rsd_udp_hdr) == RSD_UDP6_LEN,
	       "rdma-core's layout");

#define RSD_MSG_MAX RSK_SNDLOWAT	/* a UD message, header included */
#define RSD_GRH 40			/* before every UD receive */

union rsd_addr {
	struct sockaddr sa;
	struct sockaddr_in sin;
	struct sockaddr_in6 sin6;
};

/* A peer, known by its UDP address */
struct rsd_dest {
	union rsd_addr addr;
	struct rsd_hdr hdr;		/* ours towards it */
	struct ibv_ah *ah;		/* NULL: its QP is not known yet */
	uint32_t qpn;
};

/* A received datagram: in a receive slot, or copied from the UDP socket */
struct rsd_msg {
	uint8_t *buf;			/* struct rsd_hdr, then the data */
	uint32_t len;			/* header included */
	int slot;			/* its receive slot; -1: buf is malloc'ed */
};

struct rsd {
	struct rdma_cm_id *id;		/* the UD QP's (no channel of ours) */
	union ibv_gid sgid;		/* where our QP is */
	int sgid_index;
	uint32_t max_msg;		/* a UD message, header included */
	struct ibv_mr *smr, *rmr;
	uint8_t *sbuf, *rbuf;		/* sq_size / rq_size slots + a GRH */
	uint16_t *sfree;		/* free send slots (a stack) */
	int nsfree;
	struct rsd_msg *ring;		/* rq_size + 1 */
	int head, tail;
	struct rsd_dest *dests;
	int ndests, cap;
	int conn;			/* rconnect's dest; -1: none */
};

/* rsocket_dgwire.c (lock held): the UD QP, peers, messages, the UDP socket */
int rsd_dest_get(struct rsk *rs, const struct sockaddr *addr,
		 socklen_t len);	/* its index, or -1 */
/* The QP, peers and queued datagrams (not the UDP socket) */
void rsd_free(struct rsk *rs);
int rsd_poll(struct rsk *rs);		/* the CQ and the UDP socket */
bool rsd_have_rdata(struct rsk *rs);
bool rsd_can_send(struct rsk *rs);
bool rsd_sends_done(struct rsk *rs);
int rsd_send_ud(struct rsk *rs, struct rsd_dest *d, const struct iovec *iov,
		int iovcnt, size_t len);
ssize_t rsd_send_udp(struct rsk *rs, struct rsd_dest *d, uint8_t op,
		     const struct iovec *iov, int iovcnt, int flags);
void rsd_repost(struct rsk *rs, struct rsd_msg *m);	/* done with m */
/* Sleeps (lock dropped) on the UDP socket and the CQ, at most ms. */
int rsd_wait(struct rsk *rs, int ms);

#endif /* UR_API_RDMACM_RSOCKET_DGRAM_H */
