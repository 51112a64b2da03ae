/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the responder's two files share: the context of one packet being
 * handled (resp.c's state machine) and the replies it sends
 * (resp_reply.c). Runs with the QP's shard lock held (docs/design.md,
 * "Locks").
 */
#ifndef UR_ENGINE_RESP_PRIV_H
#define UR_ENGINE_RESP_PRIV_H

#include "engine/engine_priv.h"

struct ur_resp_ctx {
	struct ur_qp *qp;
	struct ur_qp_xport *xp;
	struct ur_resp_state_qp *r;
	const struct ur_pkt *pkt;
	const struct ur_rxd *d;
	const struct ur_ip_flow *flow;
	uint8_t op;
	uintptr_t host;			/* resolved target of WRITE/atomic */
	enum ur_drop_reason drop;
	enum ibv_wc_status rwqe_status;	/* for a taken receive WQE */
	bool inv_failed;
	bool kept;			/* past a gap, kept (reorder.c) */
};

/* The context of a request handled for qp (its shard's lock held). */
static inline struct ur_resp_ctx ur_resp_ctx_of(struct ur_qp *qp,
						const struct ur_pkt *pkt,
						const struct ur_rxd *d,
						const struct ur_ip_flow *flow)
{
	return (struct ur_resp_ctx){
		.qp = qp,
		.xp = qp->xp,
		.r = &qp->xp->resp,
		.pkt = pkt,
		.d = d,
		.flow = flow,
		.op = pkt->opcode,
	};
}

static inline bool ur_resp_is_rc(const struct ur_resp_ctx *c)
{
	return ur_qp_reliable(c->qp);	/* RC, and XRC's target */
}

/* IBA 1.5's ATOMIC WRITE or FLUSH (resp_place.c). */
static inline bool ur_resp_is_placement(const struct ur_resp_ctx *c)
{
	return c->op == UR_OPC_RC_ATOMIC_WRITE || c->op == UR_OPC_RC_FLUSH;
}

/* What a FLUSH needs, of its QP's access flags and of its MR's (as rxe):
 * the flag of each placement type it asks for. */
static inline unsigned int ur_resp_flush_access(const struct ur_feth *feth)
{
	uint8_t plt = ur_feth_plt(feth);

	return (plt & UR_FLUSH_GLOBAL ? UR_ACCESS_FLUSH_GLOBAL : 0) |
	       (plt & UR_FLUSH_PERSISTENT ? UR_ACCESS_FLUSH_PERSISTENT : 0);
}

/* resp_place.c */
/* Fields, key, range, access and alignment: 0, -EINVAL (invalid request)
 * or -EACCES (remote access error). Sets c->host. */
int ur_resp_place_check(struct ur_resp_ctx *c);
/* Executes it, keeps it for replay and answers: 0, or -EFAULT when the
 * target memory faulted (nothing was answered). */
int ur_resp_place(struct ur_resp_ctx *c);
/* A duplicate: true when it was answered from res. */
bool ur_resp_place_replay(struct ur_resp_ctx *c, const struct ur_res *res);

/* resp_reply.c */
void ur_resp_send_aeth(struct ur_resp_ctx *c, uint8_t opcode, uint8_t syn,
		       uint32_t psn);
void ur_resp_send_atomic_ack(struct ur_resp_ctx *c, uint32_t psn,
			     uint64_t orig);
/* The answer to an ATOMIC WRITE or FLUSH: a READ response ONLY without
 * data. */
void ur_resp_send_read_ack(struct ur_resp_ctx *c, uint32_t psn);
/* Read response packets for [va, va+len) with PSNs from psn on. */
void ur_resp_send_read(struct ur_resp_ctx *c, const struct ur_res *res,
		       uint32_t psn, uint64_t va, uint32_t len);
/* Responder-side class A/C error: the QP goes to ERR. */
void ur_resp_qp_error(struct ur_resp_ctx *c, enum ibv_event_type ev_type);

#endif
