/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What happens to a QP's state inside the engine: a send WQE's CQE
 * (ur_wqe_complete, which the flushes share), a WQE that failed, the
 * move to ERR (the failing WQE completes with its status, everything else
 * with IBV_WC_WR_FLUSH_ERR), flushing the send and receive queues, and
 * SQD's drained event. Below the requester, completer and responder, which
 * all end up here; it calls only the timers.
 *
 * qp->state is written by obj/ (ibv_modify_qp) and here (the move to ERR);
 * docs/design.md, "Engine: threads, locks and progress", says under which
 * locks.
 */
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"

int ur_wqe_complete(struct ur_qp *qp, struct ur_send_wqe *wqe,
		    enum ibv_wc_status status)
{
	const struct ur_wr_opcode_info *info = ur_wr_opcode_any(wqe->opcode);
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.status = status;
	wc.opcode = info ? info->wc_opcode : IBV_WC_SEND;
	wc.qp_num = ur_qp_num(qp);
	wc.byte_len = info && info->wc_byte_len ? info->wc_byte_len :
						  wqe->length;
	return ur_cq_push(qp->send_cq, &wc, false);
}

/*
 * Every outstanding WR gets its flush CQE, signalled or not, in order (the
 * IBA's flush; mlx5 and rxe alike). One that does not fit overruns the CQ:
 * ur_cq_push raises IBV_EVENT_CQ_ERR once, and the rest of the queue is
 * retired without CQEs, as rxe stops at its first failed post. A consumer
 * that may move a QP to ERR sizes its CQ for every WR it posts (UCX counts
 * a CQ credit per WR for this); a destroy flushes nothing (verbs_qp.c).
 */
void ur_flush_sq(struct ur_qp *qp)
{
	struct ur_wq *sq = &qp->sq;
	bool room = true;

	UR_ASSERT_HELD(&qp->sq_lock);
	/* no packet of a flushed WQE may leave after its CQE */
	if (qp->xp)
		ur_txq_discard(&qp->xp->txq);
	while (sq->consumer != sq->producer) {
		struct ur_send_wqe *w = ur_wq_slot(sq, sq->consumer);

		if (room && ur_wqe_complete(qp, w, IBV_WC_WR_FLUSH_ERR))
			room = false;
		sq->consumer++;
	}
	sq->cursor = sq->consumer;
	if (qp->xp) {
		qp->xp->req.sq_high = sq->consumer;
		qp->xp->req.pkt = 0;
		qp->xp->req.entered = false;
		qp->xp->req.rd_outstanding = 0;
	}
}

static void flush_wc(struct ur_qp *qp, uint64_t wr_id, struct ibv_wc *wc)
{
	memset(wc, 0, sizeof(*wc));
	wc->wr_id = wr_id;
	wc->status = IBV_WC_WR_FLUSH_ERR;
	wc->opcode = IBV_WC_RECV;
	wc->qp_num = ur_qp_num(qp);
}

/* false: the CQ overran (the receive flush stops there, as the send's) */
static bool flush_recv_one(struct ur_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc;

	flush_wc(qp, wr_id, &wc);
	return !ur_qp_recv_cq(qp) ||
	       !ur_cq_push(ur_qp_recv_cq(qp), &wc, false);
}

/*
 * An XRC target's WQE belongs to the SRQ its message named, of this
 * process or of another one (obj/xrc_ring.c), and completes there: the
 * responder noted which when it took it. The SRQ may have been destroyed
 * since (a ring may even have been mapped again for a new SRQ of the
 * same number): a WQE of an SRQ gone completes nowhere, as it went with
 * its queue.
 */
bool ur_xrc_rwqe_complete(struct ur_qp *qp, const struct ibv_wc *wc)
{
	struct ur_resp_state_qp *r = &qp->xp->resp;
	struct ur_xring *ring;
	struct ur_srq *srq;

	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	if (r->rwqe_ring) {
		if (!ur_xrcd_ring(qp->xrcd, r->rwqe_srqn, &ring) &&
		    ur_xring_id(ring) == r->rwqe_ring_id)
			ur_xring_complete(ring, r->rwqe.wr_id, wc);
		return true;
	}
	srq = ur_srq_lookup_xrc(qp->dev, r->rwqe_srqn);
	if (!srq || srq != r->rwqe_srq)
		return true;
	return !ur_cq_push(srq->xrc_cq, wc, false);
}

/*
 * Finding a local SRQ by number needs obj_lock (read), which the responder
 * and the progress stage hold; ibv_modify_qp holds sq_lock instead, under
 * which obj_lock is only tried (docs/design.md, "Locks"). Should that fail
 * (a control verb holds it as a writer), the move to ERR kicked the
 * progress stage, whose flush completes the WQE moments later; a RESET
 * then drops it, as a RESET drops its own RQ's (a local SRQ's slot is
 * free once taken). Another process's ring is found under shard 0's lock
 * alone (the shard of every XRC target):
 * the domain's ring cache is that shard's, and its slot must not stay
 * taken.
 */
bool ur_xrc_rwqe_flush(struct ur_qp *qp, bool may_wait)
{
	struct ur_resp_state_qp *r = &qp->xp->resp;
	pthread_rwlock_t *l = &qp->dev->obj_lock;
	bool locked = false, room;
	struct ibv_wc wc;

	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	if (!r->have_rwqe)
		return true;
	if (may_wait)
		locked = !pthread_rwlock_rdlock(l);
	else
		locked = !pthread_rwlock_tryrdlock(l);
	if (!locked && !r->rwqe_ring)
		return false;
	__atomic_store_n(&r->have_rwqe, false, __ATOMIC_RELAXED);
	flush_wc(qp, r->rwqe.wr_id, &wc);
	room = ur_xrc_rwqe_complete(qp, &wc);
	if (locked)
		pthread_rwlock_unlock(l);
	return room;
}

void ur_flush_rq(struct ur_qp *qp, bool rx_owner)
{
	struct ur_qp_xport *xp = qp->xp;
	union {
		struct ur_recv_wqe w;
		uint8_t buf[sizeof(struct ur_recv_wqe) +
			    UR_MAX_SGE * sizeof(struct ur_sge)];
	} r;
	bool room = true;

	/* a peer's SENDs by copy complete before the flush, and the WQEs
	 * nobody took come back here (obj/rq_ring.c) */
	if (ur_rq_ring_on(qp))
		ur_rq_ring_close(qp);
	/* a non-owner reads have_rwqe racing the responder: the stores are
	 * atomic (relaxed) for this read, which may be stale */
	if (xp && (__atomic_load_n(&xp->resp.have_rwqe, __ATOMIC_SEQ_CST) ||
		   __atomic_load_n(&xp->resp.held, __ATOMIC_SEQ_CST))) {
		/* the WQE the responder holds (or a completion it holds back
		 * until its ACK has left) is older than the ring's: only its
		 * owner flushes, after it (RQ completions in order) */
		if (!rx_owner)
			return;
		if (qp->type == IBV_QPT_XRC_RECV) {
			/* no RQ: its SRQs belong to the domain's other QPs */
			ur_xrc_rwqe_flush(qp, false);
			return;
		}
		if (xp->resp.have_rwqe) {
			__atomic_store_n(&xp->resp.have_rwqe, false,
					 __ATOMIC_RELAXED);
			room = flush_recv_one(qp, xp->resp.rwqe.wr_id);
		}
	}
	if (qp->type == IBV_QPT_XRC_RECV || ur_qp_rq_srq(qp))
		return;	/* SRQ WQEs belong to the other QPs too */
	while (!ur_qp_take_recv(qp, &r.w))
		if (room)
			room = flush_recv_one(qp, r.w.wr_id);
}

/* A QP on an SRQ that enters ERR, by the engine or by ibv_modify_qp,
 * takes no more of the SRQ's WQEs: IBV_EVENT_QP_LAST_WQE_REACHED, once. */
void ur_qp_entered_err(struct ur_qp *qp)
{
	struct ibv_async_event ev = {
		.element.qp = &qp->ibqp_ex.qp_base,
		.event_type = IBV_EVENT_QP_LAST_WQE_REACHED,
	};

	UR_ASSERT_HELD(&qp->sq_lock);
	if (qp->srq)
		ur_async_event_post(qp->ibqp_ex.qp_base.context, &ev);
}

void ur_qp_error_locked(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (qp->state != IBV_QPS_ERR) {
		qp->state = IBV_QPS_ERR;
		qp->attr.qp_state = IBV_QPS_ERR;
		ur_direct_qp_update(qp);	/* no more copies into it */
		ur_qp_entered_err(qp);
	}
	if (xp) {
		ur_timer_disarm(&xp->tmr.rto_deadline);
		ur_timer_disarm(&xp->tmr.rnr_deadline);
		ur_cc_set_busy(xp, false);	/* sends nothing more */
		xp->comp.rnr_wait = false;
		xp->req.need_retry = false;
		/* a receive WQE the responder holds is flushed by the receive
		 * path owner: have the progress stage visit this QP now */
		ur_timer_arm(xp, &xp->tmr.kick_deadline, ur_now_ns());
	}
	ur_flush_sq(qp);
	ur_flush_rq(qp, false);
}

/* SQD: once nothing is in flight, IBV_EVENT_SQ_DRAINED (once). */
void ur_sqd_check(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ibv_async_event ev = {
		.element.qp = &qp->ibqp_ex.qp_base,
		.event_type = IBV_EVENT_SQ_DRAINED,
	};

	UR_ASSERT_HELD(&qp->sq_lock);
	if (qp->state != IBV_QPS_SQD || !xp || xp->req.sqd_notified)
		return;
	if (qp->sq.consumer != qp->sq.cursor || xp->req.entered ||
	    (ur_qp_reliable(qp) && xp->req.psn != xp->comp.psn))
		return;
	xp->req.sqd_notified = true;
	ur_async_event_post(qp->ibqp_ex.qp_base.context, &ev);
}

/* The requester's cursor passes its WQE (sent, failed or done locally). */
void ur_sq_advance(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_wq *sq = &qp->sq;

	UR_ASSERT_HELD(&qp->sq_lock);
	sq->cursor++;
	if (sq->cursor - sq->consumer > xp->req.sq_high - sq->consumer)
		xp->req.sq_high = sq->cursor;
	xp->req.pkt = 0;
	xp->req.entered = false;
}

/*
 * The WQE at SQ index idx failed: it completes with st when the completer
 * reaches it, and the requester sends nothing more. The QP moves to ERR
 * then (ur_comp_drain()).
 */
void ur_wqe_fail(struct ur_qp *qp, uint32_t idx, struct ur_send_wqe *w,
		 enum ibv_wc_status st)
{
	UR_ASSERT_HELD(&qp->sq_lock);
	w->state = UR_WQE_ERROR;
	w->status = st;
	qp->xp->req.halted = true;
	if (idx == qp->sq.cursor)	/* partly sent */
		ur_sq_advance(qp);
}
