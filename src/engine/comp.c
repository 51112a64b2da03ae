/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The completer: consumes ACKs, NAKs, read responses and atomic ACKs for
 * the RC requester, completes WQEs in SQ order, and handles the expiry of
 * the retransmit and RNR deadlines. Runs with qp->sq_lock held, called by
 * the send step (send.c) for a response or an expired deadline; it never
 * runs the requester itself (the send step does, afterwards). A failing WQE
 * goes to qp_error.c, which moves the QP to ERR.
 *
 * Rules (docs/wire-notes.md §3): ACKs are cumulative; any response with PSN
 * p implicitly completes SEND/WRITE WQEs that end before p; a READ, an
 * atomic, an ATOMIC_WRITE or a FLUSH is never completed implicitly -- a
 * response beyond it means its responses were lost, so the requester goes
 * back to it, or, for a READ, asks for the lost responses alone
 * (comp_read.c, which has the READ responses' state).
 */
#include <errno.h>
#include <string.h>

#include "engine/comp_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"

static const char *const ur_comp_state_names[] UR_UNUSED = {
	[UR_COMP_GET_WQE] = "GET_WQE",
	[UR_COMP_CHECK_PSN] = "CHECK_PSN",
	[UR_COMP_CHECK_ACK] = "CHECK_ACK",
	[UR_COMP_READ] = "READ",
	[UR_COMP_ATOMIC] = "ATOMIC",
	[UR_COMP_PLACED] = "PLACED",
	[UR_COMP_WRITE_SEND] = "WRITE_SEND",
	[UR_COMP_PROGRESS] = "PROGRESS",
	[UR_COMP_RETRY] = "RETRY",
	[UR_COMP_RNR] = "RNR",
	[UR_COMP_ERROR] = "ERROR",
	[UR_COMP_DONE] = "DONE",
};

/* RNR timer codes in microseconds (the IBA's RNR timer field encoding;
 * docs/wire-notes.md §3.4). */
static const uint32_t rnr_usec[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static bool wqe_is_rd_atomic(const struct ur_send_wqe *w)
{
	return ur_wr_is_rd_atomic(w->opcode);
}

/* ATOMIC_WRITE or FLUSH: answered by a READ response without data. */
static bool wqe_is_placement(const struct ur_send_wqe *w)
{
	return wqe_is_rd_atomic(w) && !ur_wr_has(w->opcode, UR_WR_SCATTER);
}


/* Posts CQEs for finished WQEs at the head of the SQ, in order. */
void ur_comp_drain(struct ur_qp *qp)
{
	struct ur_wq *sq = &qp->sq;

	UR_ASSERT_HELD(&qp->sq_lock);
	while (sq->consumer != sq->cursor) {
		struct ur_send_wqe *w = ur_wq_slot(sq, sq->consumer);

		/* its CQE frees the memory its packets point into: they
		 * leave first. A UD or UC WQE waits for its sender, who
		 * drains when back (send.c); an RC one held only by a
		 * retransmission (its first copy was acknowledged) sends
		 * it now, a rare loss recovery case, not to hold the
		 * completer's cursor back */
		if (ur_txq_holds(&qp->xp->txq, sq->consumer)) {
			if (!ur_qp_reliable(qp)) {
				qp->xp->txq.drain_held = true;
				break;
			}
			ur_txq_flush_all(&qp->xp->txq);
		}
		if (w->state == UR_WQE_DONE) {
			sq->consumer++;
			if ((qp->sq_sig_all ||
			     (w->send_flags & IBV_SEND_SIGNALED)) &&
			    ur_wqe_complete(qp, w, IBV_WC_SUCCESS)) {
				/* CQ overrun (class G): the QP fails */
				ur_qp_error_locked(qp);
				break;
			}
			continue;
		}
		if (w->state == UR_WQE_ERROR) {
			ur_wqe_complete(qp, w, w->status);
			sq->consumer++;
			ur_qp_error_locked(qp);
		}
		break;
	}
	ur_sqd_check(qp);
}

/* ------------------------------------------------------------------ */
/* The completer state machine                                         */
/* ------------------------------------------------------------------ */

/*
 * READ responses and atomic results count only for requests sent since
 * the last rewind (below xp->req.psn): rd_outstanding counts those. An ACK or
 * NAK may be about anything ever sent (below psn_max): after a go-back-N
 * the responder may already hold far more than what was resent, and its
 * ACK of a resent duplicate says so (the requester then skips ahead).
 */
static enum ur_comp_state comp_get_wqe(struct ur_comp_ctx *c)
{
	bool ack = c->pkt->opcode == UR_OPC_RC_ACK;

	if (ur_psn_diff(c->pkt->psn,
			ack ? c->xp->req.psn_max : c->xp->req.psn) >= 0)
		return UR_COMP_DONE;	/* a PSN never sent */
	c->idx = c->qp->sq.consumer;
	return UR_COMP_CHECK_PSN;
}

/*
 * A positive ACK beyond what the last go-back-N resent (the answer to a
 * probe, or to a resent packet the responder already held) also covers WQEs
 * the requester had sent before the rewind reset them to POSTED: the slots
 * below sq_high, whose PSNs are this lap's. Whole SEND/WRITE WQEs that end
 * at or before the ACK's PSN are acknowledged here, so the go-back-N does not
 * resend what the responder holds; a WQE the ACK covers only in part, and
 * every READ or atomic (never acknowledged implicitly), stop the walk.
 * true: the walk goes on past idx.
 */
static bool comp_beyond_cursor(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;
	struct ur_send_wqe *w = ur_wq_slot(&c->qp->sq, c->idx);

	if (c->pkt->opcode != UR_OPC_RC_ACK || !c->pkt->aeth ||
	    (ur_aeth_syn(c->pkt->aeth) & UR_AETH_TYPE_MASK) != UR_AETH_ACK ||
	    c->idx - c->qp->sq.consumer >= xp->req.sq_high - c->qp->sq.consumer)
		return false;
	if (w->state == UR_WQE_DONE)
		return true;	/* a local operation */
	/* the cursor's WQE may be entered, nothing of it resent yet */
	if ((w->state != UR_WQE_POSTED &&
	     (w->state != UR_WQE_PENDING || c->idx != c->qp->sq.cursor)) ||
	    wqe_is_rd_atomic(w) ||
	    ur_psn_before(c->pkt->psn, w->last_psn) ||
	    !ur_psn_before(w->last_psn, xp->req.psn_max))
		return false;
	ur_comp_wqe_acked(c, w);
	return true;
}

/*
 * An error NAK for the cursor's WQE after a go-back-N rewound it and before
 * its first packet went out again (the pace or the window held it): the
 * WQE is not in flight, but the NAK names a PSN it was given and sent
 * (comp_get_wqe() checked psn_max), and the responder that sent it has
 * gone to ERR and answers nothing more, so the NAK must complete it or the
 * requester resends into silence until RETRY_EXC_ERR.
 */
static bool comp_nak_names_rewound(const struct ur_comp_ctx *c,
				   const struct ur_send_wqe *w)
{
	const struct ur_qp *qp = c->qp;
	uint8_t syn = c->pkt->aeth ? ur_aeth_syn(c->pkt->aeth) : 0;

	if ((syn & UR_AETH_TYPE_MASK) != UR_AETH_NAK ||
	    syn == UR_AETH_NAK_PSN_SEQ || c->idx != qp->sq.cursor ||
	    c->idx - qp->sq.consumer >= c->xp->req.sq_high - qp->sq.consumer ||
	    (w->state != UR_WQE_PENDING && w->state != UR_WQE_POSTED))
		return false;
	return !ur_psn_before(c->pkt->psn, w->first_psn) &&
	       !ur_psn_after(c->pkt->psn, w->last_psn);
}

static enum ur_comp_state comp_check_psn(struct ur_comp_ctx *c)
{
	uint32_t psn = c->pkt->psn;

	for (; c->idx != c->qp->sq.producer; c->idx++) {
		struct ur_send_wqe *w = ur_wq_slot(&c->qp->sq, c->idx);

		if (!ur_comp_in_flight(c->qp, c->idx)) {
			if (comp_nak_names_rewound(c, w)) {
				c->wqe = w;
				return UR_COMP_CHECK_ACK;
			}
			if (!comp_beyond_cursor(c))
				break;
			continue;
		}
		if (w->state == UR_WQE_DONE)
			continue;
		if (w->state != UR_WQE_PENDING)
			return UR_COMP_DONE;
		if (ur_psn_after(psn, w->last_psn)) {
			if (w->opcode == IBV_WR_RDMA_READ &&
			    ur_comp_rd_ahead_ok(c)) {
				c->past_read = true;
				continue;
			}
			if (wqe_is_rd_atomic(w) || c->past_read) {
				c->gap = true;		/* responses lost */
				return UR_COMP_RETRY;
			}
			ur_comp_wqe_acked(c, w);	/* implicit ACK */
			continue;
		}
		if (ur_psn_before(psn, w->first_psn))
			return UR_COMP_DONE;	/* stale */
		if (c->past_read && w->opcode != IBV_WR_RDMA_READ) {
			c->gap = true;
			return UR_COMP_RETRY;
		}
		c->wqe = w;
		return UR_COMP_CHECK_ACK;
	}
	return UR_COMP_PROGRESS;
}

static enum ur_comp_state comp_check_ack(struct ur_comp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_send_wqe *w = c->wqe;

	if (ur_op_is_read(pkt->opcode)) {
		if (w->opcode == IBV_WR_RDMA_READ)
			return UR_COMP_READ;
		return wqe_is_placement(w) ? UR_COMP_PLACED : UR_COMP_DONE;
	}
	if (pkt->opcode == UR_OPC_RC_ATOMIC_ACK)
		return ur_wr_has(w->opcode, UR_WR_ATOMIC) ?
			       UR_COMP_ATOMIC :
			       UR_COMP_DONE;
	c->syn = pkt->aeth ? ur_aeth_syn(pkt->aeth) : 0;
	/* any valid response shows the responder alive: retry_cnt counts
	 * consecutive timeouts only */
	c->xp->comp.retry_left = c->qp->attr.retry_cnt;
	switch (c->syn & UR_AETH_TYPE_MASK) {
	case UR_AETH_ACK:
		return UR_COMP_WRITE_SEND;
	case UR_AETH_RNR_NAK:
		return UR_COMP_RNR;
	case UR_AETH_NAK:
		break;
	default:
		return UR_COMP_DONE;
	}
	ur_cnt_stat(&c->xp->nic->cnt, c->syn == UR_AETH_NAK_PSN_SEQ ?
					      UR_STAT_SEQ_NAK_RCVD :
					      UR_STAT_ERR_NAK_RCVD, 1);
	if (c->syn == UR_AETH_NAK_PSN_SEQ)
		ur_qcnt(c->xp->qcnt.req, UR_QSTAT_SEQ_NAK_RCVD, 1);
	switch (c->syn) {
	case UR_AETH_NAK_PSN_SEQ:
		if (c->xp->comp.rnr_wait)
			return UR_COMP_DONE;
		/*
		 * The NAK acknowledges the requests before its PSN, never the
		 * READ responses or atomic results owed for them: inside a
		 * READ that went out as several requests, earlier chunks'
		 * responses may still be missing.
		 */
		if (!wqe_is_rd_atomic(w) &&
		    ur_psn_after(pkt->psn, c->xp->comp.psn))
			c->xp->comp.psn = pkt->psn;
		return UR_COMP_RETRY;
	case UR_AETH_NAK_INV_REQ:
		c->status = IBV_WC_REM_INV_REQ_ERR;
		break;
	case UR_AETH_NAK_REM_ACC:
		c->status = IBV_WC_REM_ACCESS_ERR;
		break;
	default:
		c->status = IBV_WC_REM_OP_ERR;
		break;
	}
	return UR_COMP_ERROR;
}

static enum ur_comp_state comp_write_send(struct ur_comp_ctx *c)
{
	struct ur_send_wqe *w = c->wqe;

	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ACK_RCVD, 1);
	if (wqe_is_rd_atomic(w))
		return UR_COMP_DONE;
	if (c->pkt->psn == w->last_psn) {
		ur_comp_wqe_acked(c, w);
	} else if (ur_psn_after(ur_psn_inc(c->pkt->psn), c->xp->comp.psn)) {
		c->xp->comp.psn = ur_psn_inc(c->pkt->psn);
	}
	return UR_COMP_PROGRESS;
}

static enum ur_comp_state comp_atomic(struct ur_comp_ctx *c)
{
	struct ur_send_wqe *w = c->wqe;
	uint64_t orig;

	if (c->pkt->psn != w->first_psn || !c->pkt->atmack)
		return UR_COMP_DONE;
	orig = ur_atmack_orig(c->pkt->atmack);
	w->atomic_orig = orig;
	if (ur_sgl_copy_in(c->qp, w->sge, w->num_sge, 0, &orig,
			   sizeof(orig))) {
		c->status = IBV_WC_LOC_PROT_ERR;
		return UR_COMP_ERROR;
	}
	ur_comp_rd_request_done(c->xp);
	ur_comp_wqe_acked(c, w);
	return UR_COMP_PROGRESS;
}

/*
 * The answer to an ATOMIC WRITE or FLUSH (IBA 1.5, as rxe sends it): an
 * RDMA READ response ONLY with no payload and an ACK syndrome, at the
 * request's PSN. The responder sends it once the data is placed.
 */
static enum ur_comp_state comp_placed(struct ur_comp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_send_wqe *w = c->wqe;

	if (pkt->opcode != UR_OPC_RC_READ_RESP_ONLY ||
	    pkt->psn != w->first_psn || pkt->paylen || !pkt->aeth ||
	    (ur_aeth_syn(pkt->aeth) & UR_AETH_TYPE_MASK) != UR_AETH_ACK)
		return UR_COMP_DONE;
	ur_comp_rd_request_done(c->xp);
	ur_comp_wqe_acked(c, w);
	return UR_COMP_PROGRESS;
}

static enum ur_comp_state comp_progress(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;
	struct ur_qp *qp = c->qp;

	xp->comp.retry_left = qp->attr.retry_cnt;
	xp->comp.rnr_left = qp->attr.rnr_retry;
	return UR_COMP_DONE;
}

/*
 * After a response: if the completer's cursor moved (whatever the path:
 * an implicit ACK before a READ's retry moves it too), the timers restart,
 * the window grows and a round trip may be sampled; a run of probes
 * without progress halves its backoff on progress and clears it on a
 * sample.
 */
void ur_comp_advanced(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;
	int32_t acked = ur_psn_diff(xp->comp.psn, c->comp_psn0);

	if (acked <= 0) {
		ur_cc_arm_rto(c->qp, false);
		return;
	}
	xp->comp.retry_left = c->qp->attr.retry_cnt;
	xp->rto.probe_backoff /= 2;
	if (xp->rto.rtt_on && ur_psn_after(xp->comp.psn, xp->rto.rtt_psn)) {
		uint64_t rtt = ur_now_ns() - xp->rto.rtt_t0;

		xp->rto.srtt_ns =
		    xp->rto.srtt_ns ? (7 * xp->rto.srtt_ns + rtt) / 8 : rtt;
		xp->rto.rtt_on = false;
		xp->rto.probe_backoff = 0;
	}
	ur_cc_acked(xp, (uint32_t)acked);
	ur_cc_arm_rto(c->qp, true);
}

/*
 * A sequence NAK: a responder that keeps requests past a gap (reorder.c)
 * holds what came after the lost packet, so only that packet is resent
 * (req.c) while new ones go on. Whether it does is learnt from its
 * answers (ur_comp_rx(), comp_retry()): tried first, given up for a
 * go-back-N when the packet after the one resent turns out missing,
 * tried again when the ACK after a go-back-N covers PSNs not resent, or
 * after UR_RESEND_RETRY_NAKS NAKs (what looked like a responder that
 * drops may have been a run of losses). Not for a READ or atomic (their
 * responses are owed again).
 */
static bool comp_selective(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;

	if (xp->resend.peer_drops &&
	    ++xp->resend.drops_naks >= UR_RESEND_RETRY_NAKS)
		xp->resend.peer_drops = false;
	return !xp->resend.peer_drops && c->syn == UR_AETH_NAK_PSN_SEQ &&
	       !wqe_is_rd_atomic(c->wqe) &&
	       ur_psn_before(xp->comp.psn, xp->req.psn);
}

static void comp_peer_drops(struct ur_qp_xport *xp)
{
	xp->resend.ok = false;
	xp->resend.peer_drops = true;
	xp->resend.drops_naks = 0;
}

/*
 * The packet resent alone is acknowledged. An ACK that stops right after
 * it, with more outstanding, says the responder has nothing past it: it
 * drops what comes past a gap (or lost the next packet too, and its NAK
 * of that follows). Either way the rest goes again (a NAK's go-back-N).
 */
static void comp_resend_answered(struct ur_qp_xport *xp)
{
	xp->resend.active = false;
	xp->resend.ok = xp->comp.psn != ur_psn_inc(xp->resend.psn) ||
			!ur_psn_before(xp->comp.psn, xp->req.psn);
	if (xp->resend.ok)
		return;
	comp_peer_drops(xp);
	xp->resend.nak_rewind = true;
	xp->comp.retry_psn = xp->comp.psn;
	xp->comp.retry_fast_used = true;
	xp->req.need_retry = true;
	ur_cc_loss(xp, UR_CC_NAK);
}

/*
 * Fast retry (NAK or a response past a lost one): once per comp.psn; a
 * second one for the same PSN waits for the timer. A gap in the responses
 * while the last go-back-N is still being answered says nothing new: the
 * responder executed the earlier requests and their responses keep coming
 * (with gaps where packets were lost or reordered) ahead of the answers to
 * the retransmission, and going back for each of them would multiply the
 * traffic until the receive queues overflow.
 */
static enum ur_comp_state comp_retry(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;

	if (xp->comp.rnr_wait ||
	    (xp->comp.retry_psn == xp->comp.psn && xp->req.need_retry))
		return UR_COMP_DONE;
	if (c->gap && ur_psn_before(xp->comp.psn, xp->comp.recover_psn))
		return UR_COMP_DONE;
	if (xp->comp.retry_psn == xp->comp.psn && xp->comp.retry_fast_used)
		return UR_COMP_DONE;
	xp->comp.retry_fast_used = true;
	/* the packet after one resent alone is missing: a responder that
	 * drops what comes past a gap (rxe), or several lost in a row */
	if (xp->resend.active && xp->comp.psn == ur_psn_inc(xp->resend.psn))
		comp_peer_drops(xp);
	if (!c->gap && comp_selective(c)) {
		ur_cc_loss(xp, UR_CC_RESEND);
		xp->comp.retry_psn = xp->comp.psn;
		xp->resend.need = true;
		if (!xp->resend.active)
			xp->resend.base = xp->req.psn;
		xp->resend.active = true;
		xp->resend.psn = xp->comp.psn;
		return UR_COMP_DONE;
	}
	ur_cc_loss(xp, UR_CC_NAK);
	xp->resend.nak_rewind = !c->gap && c->syn == UR_AETH_NAK_PSN_SEQ;
	xp->req.need_retry = true;
	return UR_COMP_DONE;
}

static enum ur_comp_state comp_rnr(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;
	struct ur_qp *qp = c->qp;

	ur_cnt_stat(&xp->nic->cnt, UR_STAT_RNR_NAK_RCVD, 1);
	ur_qcnt(xp->qcnt.req, UR_QSTAT_RNR_NAK_RCVD, 1);
	if (xp->comp.rnr_wait)
		return UR_COMP_DONE;
	/* as for a sequence NAK: never past a READ's missing responses */
	if (!wqe_is_rd_atomic(c->wqe) &&
	    ur_psn_after(c->pkt->psn, xp->comp.psn))
		xp->comp.psn = c->pkt->psn;
	if (!xp->comp.rnr_left) {
		c->status = IBV_WC_RNR_RETRY_EXC_ERR;
		return UR_COMP_ERROR;
	}
	if (qp->attr.rnr_retry != 7)
		xp->comp.rnr_left--;
	xp->comp.rnr_wait = true;
	xp->req.need_retry = true;
	ur_timer_disarm(&xp->tmr.rto_deadline);
	xp->rto.iba_deadline = 0; /* the responder answered: not a timeout */
	ur_timer_arm(xp, &xp->tmr.rnr_deadline,
		     ur_now_ns() + 1000ull * rnr_usec[c->syn & 0x1f]);
	return UR_COMP_DONE;
}

static enum ur_comp_state comp_error(struct ur_comp_ctx *c)
{
	ur_wqe_fail(c->qp, c->idx, c->wqe, c->status);
	return UR_COMP_DONE;
}

typedef enum ur_comp_state (*ur_comp_fn)(struct ur_comp_ctx *c);

static const ur_comp_fn comp_handlers[] = {
	[UR_COMP_GET_WQE] = comp_get_wqe,
	[UR_COMP_CHECK_PSN] = comp_check_psn,
	[UR_COMP_CHECK_ACK] = comp_check_ack,
	[UR_COMP_READ] = ur_comp_read,
	[UR_COMP_ATOMIC] = comp_atomic,
	[UR_COMP_PLACED] = comp_placed,
	[UR_COMP_WRITE_SEND] = comp_write_send,
	[UR_COMP_PROGRESS] = comp_progress,
	[UR_COMP_RETRY] = comp_retry,
	[UR_COMP_RNR] = comp_rnr,
	[UR_COMP_ERROR] = comp_error,
};

/*
 * One response for an RC QP (sq_lock held). false: the QP is in no state
 * to take it. The caller runs the send step afterwards (send.c): the
 * response may have opened the window or asked for a retry.
 */
bool ur_comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_comp_ctx c = { .qp = qp, .xp = qp->xp, .pkt = pkt };
	enum ur_comp_state st = UR_COMP_GET_WQE;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return false;
	c.comp_psn0 = c.xp->comp.psn;
	while (st != UR_COMP_DONE)
		st = comp_handlers[st](&c);
	ur_comp_advanced(&c);
	/* ACKed past what a go-back-N has resent: skip ahead. After a
	 * sequence NAK, that says the responder kept what came past the
	 * gap (a responder that drops it can only have what was resent). */
	if (ur_psn_after(c.xp->comp.psn, c.xp->req.psn)) {
		c.xp->req.need_retry = true;
		if (c.xp->resend.nak_rewind)
			c.xp->resend.peer_drops = false;
	}
	if (c.xp->resend.active &&
	    ur_psn_after(c.xp->comp.psn, c.xp->resend.psn))
		comp_resend_answered(c.xp);
	ur_comp_drain(qp);
	return true;
}

/* First WQE still waiting for its responses. */
static struct ur_send_wqe *comp_head(struct ur_qp *qp, uint32_t *idx)
{
	uint32_t i;

	for (i = qp->sq.consumer; ur_comp_in_flight(qp, i); i++) {
		struct ur_send_wqe *w = ur_wq_slot(&qp->sq, i);

		if (w->state == UR_WQE_PENDING) {
			*idx = i;
			return w;
		}
	}
	return NULL;
}

/*
 * The retransmit or RNR deadline passed (sq_lock held). true: the
 * requester must run (a go-back-N, a probe or the end of an RNR wait).
 */
bool ur_comp_timer(struct ur_qp *qp, uint64_t now)
{
	struct ur_qp_xport *xp = qp->xp;
	uint64_t rnr = atomic_load(&xp->tmr.rnr_deadline);
	uint64_t rto = atomic_load(&xp->tmr.rto_deadline);
	struct ur_send_wqe *head;
	uint32_t idx = 0;
	bool timeout;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD) {
		ur_timer_disarm(&xp->tmr.rnr_deadline);
		ur_timer_disarm(&xp->tmr.rto_deadline);
		return false;
	}
	if (rnr && rnr <= now) {
		ur_timer_disarm(&xp->tmr.rnr_deadline);
		xp->comp.rnr_wait = false;
		xp->req.need_retry = true;
		return true;
	}
	if (!rto || rto > now)
		return false;
	ur_timer_disarm(&xp->tmr.rto_deadline);
	head = comp_head(qp, &idx);
	if (!head || xp->comp.rnr_wait)
		return false;
	timeout = xp->rto.iba_deadline && xp->rto.iba_deadline <= now;
	if (timeout) {
		/* the QP's timeout: no progress for 4.096 us x 2^timeout */
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_TIMEOUTS, 1);
		ur_qcnt(xp->qcnt.req, UR_QSTAT_TIMEOUTS, 1);
		xp->rto.iba_deadline = 0;
		if (!xp->comp.retry_left) {
			ur_wqe_fail(qp, idx, head, IBV_WC_RETRY_EXC_ERR);
			ur_comp_drain(qp);
			return false;
		}
		xp->comp.retry_left--;
	}
	/*
	 * A timeout or a recovery probe (ur_cc_arm_rto()). The first probe
	 * after progress resends only the oldest unacknowledged packet, with
	 * AckReq (as TCP's tail loss probe): if only a tail packet or an ACK
	 * was lost, or the host was just slow, the responder's ACK moves the
	 * cursor (or skips it ahead) without a window of duplicates; if more
	 * was lost, the go-back-N goes on at the pace of the ACKs. A second
	 * probe halves the window, a timeout restarts it.
	 */
	xp->comp.retry_fast_used = false;
	xp->req.need_retry = true;
	xp->resend.nak_rewind = false;
	if (!timeout && !xp->rto.probe_backoff)
		xp->rto.probe_one = true;
	else
		ur_cc_loss(xp, timeout ? UR_CC_TIMEOUT : UR_CC_PROBE);
	xp->rto.probe_backoff++;
	return true;
}
