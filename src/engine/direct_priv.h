/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The table a same-host target publishes in its ring file's area
 * (direct.c writes it, and the requester's copies read it: WRITE and
 * READ in direct.c, SEND in direct_send.c).
 */
#ifndef UR_ENGINE_DIRECT_PRIV_H
#define UR_ENGINE_DIRECT_PRIV_H

#include <stdalign.h>

#include "engine/engine_priv.h"

#define DX_MAGIC 0x75447831u	/* "uDx1" */
#define DX_QPS 1024u
#define DX_MRS 2048u
#define DX_PROBES 8u		/* open addressing: slots tried per key */
#define DX_HOLDERS 4u

struct dx_qp {
	_Atomic uint32_t seq;		/* odd while the owner rewrites it */
	uint32_t qpn;			/* 0: empty */
	uint32_t pd;			/* PD handle */
	uint32_t access;		/* qp_access_flags */
	uint32_t dest_qpn;
	uint32_t reads;			/* max_dest_rd_atomic > 0 */
	uint8_t peer[16];		/* the connected peer's IP, as a GID */
	int32_t rq_fd;			/* its RQ's ring: the memfd in the */
	uint64_t rq_id;			/* owner, and its nonce; 0: none */
};

struct dx_mr {
	_Atomic uint32_t seq;		/* odd while the owner rewrites it */
	uint32_t key;			/* 0: empty */
	uint32_t pd;
	uint32_t access;
	uint64_t iova, length, host_base;
	_Atomic int32_t holder[DX_HOLDERS];	/* pids inside a copy */
};

struct dx_table {
	_Atomic uint32_t magic;		/* stored last */
	int32_t pid;
	uint64_t pidns;			/* the owner's pid namespace */
	uint64_t nonce;			/* read back through its pid */
	uint64_t self;			/* this table's address in the owner */
	struct dx_qp qp[DX_QPS];
	alignas(64) struct dx_mr mr[DX_MRS];
};
_Static_assert(sizeof(struct dx_table) <= UR_LINK_AREA_BYTES,
	       "the table fits the ring's area");

/* A stable copy of the target QP's entry, or false. */
bool ur_dx_qp_find(struct dx_table *t, uint32_t qpn, struct dx_qp *out);
/* The peer behind the QP's destination, checked (its pid proven), with
 * its area held (ur_link_peer_area_put), or NULL. */
struct dx_table *ur_dx_peer_get(struct ur_qp *qp, int32_t *pid);

/*
 * The ordering rule of every copy: nothing ever sent is unacknowledged,
 * so the copy cannot overtake a request, and the responder expects
 * exactly the PSN the requester sends next (the copy takes none). After a
 * go-back-N psn is back at comp.psn while the responder may hold
 * requests up to psn_max: a WQE copied then would leave the next packets
 * in its PSNs, taken there for duplicates (atomics answered from the
 * replay cache, SENDs dropped: soak_loopback_direct).
 */
static inline bool ur_dx_idle(const struct ur_qp_xport *xp)
{
	return xp->req.psn == xp->comp.psn && xp->req.psn_max == xp->comp.psn &&
	       !xp->req.rd_outstanding && !xp->req.pkt && !xp->resend.active;
}

/* Drops the requester's mapping of the peer QP's RQ ring (sq_lock held,
 * or the QP being destroyed). */
void ur_dx_send_fini(struct ur_qp *qp);

#endif
