/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the completer's two files share: comp.c (the state machine, ACKs,
 * NAKs, atomics, deadlines) and comp_read.c (READ responses, in order and
 * past a lost one). comp_read.c calls down into comp.c; comp.c reaches
 * comp_read.c only through its handler table (docs/design.md, the file
 * map).
 */
#ifndef UR_ENGINE_COMP_PRIV_H
#define UR_ENGINE_COMP_PRIV_H

#include "engine/engine_priv.h"

enum ur_comp_state {
	UR_COMP_GET_WQE,
	UR_COMP_CHECK_PSN,
	UR_COMP_CHECK_ACK,
	UR_COMP_READ,
	UR_COMP_ATOMIC,
	UR_COMP_PLACED,
	UR_COMP_WRITE_SEND,
	UR_COMP_PROGRESS,
	UR_COMP_RETRY,
	UR_COMP_RNR,
	UR_COMP_ERROR,
	UR_COMP_DONE,
};

struct ur_comp_ctx {
	struct ur_qp *qp;
	struct ur_qp_xport *xp;
	const struct ur_pkt *pkt;
	uint32_t comp_psn0;		/* comp_psn before this response */
	uint32_t idx;			/* SQ index of the WQE it is about */
	struct ur_send_wqe *wqe;
	uint8_t syn;
	bool gap;			/* RETRY: a response past a missing one */
	bool past_read;			/* the walk passed a READ it still owes */
	enum ibv_wc_status status;
};

/* SQ slot idx was sent in this lap (the cursor's WQE once a packet of it
 * left). */
static inline bool ur_comp_in_flight(const struct ur_qp *qp, uint32_t idx)
{
	const struct ur_wq *sq = &qp->sq;

	if (idx - sq->consumer < sq->cursor - sq->consumer)
		return true;
	return idx == sq->cursor && sq->cursor != sq->producer &&
	       qp->xp->req.entered && qp->xp->req.pkt > 0;
}

/*
 * A READ request (one chunk of a READ WQE) or an atomic got all its
 * responses. Responses are accepted only for PSNs sent since the last
 * rewind (comp.c, comp_get_wqe()), and a rewind recounts, so this matches
 * one request counted by the requester.
 */
static inline void ur_comp_rd_request_done(struct ur_qp_xport *xp)
{
	if (xp->req.rd_outstanding)
		xp->req.rd_outstanding--;
}

/* w is answered in full: done, and the cursor is past it. */
static inline void ur_comp_wqe_acked(struct ur_comp_ctx *c,
				     struct ur_send_wqe *w)
{
	struct ur_qp_xport *xp = c->xp;

	w->state = UR_WQE_DONE;
	if (ur_psn_after(ur_psn_inc(w->last_psn), xp->comp.psn))
		xp->comp.psn = ur_psn_inc(w->last_psn);
}

/* READ responses may be placed past a missing one (comp_read.c): for a
 * READ response, and not while the answers to a go-back-N may still be
 * coming (their gaps say nothing new, comp.c's comp_retry()). */
static inline bool ur_comp_rd_ahead_ok(const struct ur_comp_ctx *c)
{
	return ur_op_is_read(c->pkt->opcode) &&
	       !ur_psn_before(c->xp->comp.psn, c->xp->comp.recover_psn);
}

/* comp.c: the cursor moved (or not) after a response */
void ur_comp_advanced(struct ur_comp_ctx *c);

/* comp_read.c: the handler of UR_COMP_READ */
enum ur_comp_state ur_comp_read(struct ur_comp_ctx *c);

#endif
