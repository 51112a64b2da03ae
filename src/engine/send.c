/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The send step of a QP: run the requester, then drain the completer (post
 * the CQEs of whatever finished at the head of the SQ), after letting it
 * move through READ responses it had placed before a go-back-N sent their
 * READ again (and running the requester again if that moved its cursor).
 * It is the one way into the requester: a doorbell (post_send:
 * ur_engine_sq_kick, here), a response the completer took, an expired
 * deadline, a state change. So the requester and the completer never call
 * each other; each does its part and returns here. Everything runs under
 * qp->sq_lock, except the system call that sends what the step built: the
 * thread that releases sq_lock sends it after the release
 * (ur_send_unlock()), so a thread that processes an ACK or posts never
 * waits for another's sendmmsg.
 */
#include "engine/engine_priv.h"
#include "util/lock_assert.h"

void ur_send_step(struct ur_qp *qp)
{
	UR_ASSERT_HELD(&qp->sq_lock);
	if (!qp->xp)
		return;
	ur_req_run(qp);
	/* what the cursor's move opens (window, READ credits) is the
	 * requester's at once: nothing else may come to run it */
	while (ur_comp_catch_up(qp))
		ur_req_run(qp);
	ur_comp_drain(qp);
}

void ur_send_on_response(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	UR_ASSERT_NOT_HELD(&qp->sq_lock);
	if (!ur_qp_reliable(qp))
		return;
	pthread_mutex_lock(&qp->sq_lock);
	if (ur_comp_rx(qp, pkt))
		ur_send_step(qp);
	ur_send_unlock(qp);
}

/* The retransmit deadline the requester left for the packets' sender
 * (req.c): armed once they left. */
static void send_arm_owed(struct ur_qp *qp)
{
	if (!qp->xp->txq.arm_owed)
		return;
	qp->xp->txq.arm_owed = false;
	ur_cc_arm_rto(qp, false);
}

/*
 * The batches the send steps built leave here, after sq_lock (the txq's
 * protocol: tx.c). One thread sends at a time, the older batch first; it
 * comes back under sq_lock for what others built meanwhile and left to
 * it, lets cc.c hear of a full local queue, and runs the send step again
 * for a requester that stopped for want of a batch, or a completer that
 * stopped at a WQE whose packets had not left (its CQE would let the
 * application reuse or deregister the memory they point into).
 */
void ur_send_unlock(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_txb *b;

	UR_ASSERT_HELD(&qp->sq_lock);
	while (xp && (b = ur_txq_take(&xp->txq))) {
		uint64_t blocked = ur_link_tx_blocked(xp->nic->link);

		pthread_mutex_unlock(&qp->sq_lock);
		ur_txq_send(&xp->txq, b);
		pthread_mutex_lock(&qp->sq_lock);
		ur_txq_back(&xp->txq);
		if (ur_qp_reliable(qp) &&
		    ur_link_tx_blocked(xp->nic->link) != blocked)
			ur_cc_local_full(xp);
		send_arm_owed(qp);
		if (xp->txq.stalled) {
			xp->txq.stalled = false;
			xp->txq.drain_held = false;
			ur_send_step(qp);
		} else if (xp->txq.drain_held) {
			xp->txq.drain_held = false;
			ur_comp_drain(qp);
		}
	}
	/* what left under sq_lock (comp.c's ur_txq_flush_all()) */
	if (xp && !xp->txq.sending)
		send_arm_owed(qp);
	pthread_mutex_unlock(&qp->sq_lock);
}

void ur_engine_sq_unlock(struct ur_qp *qp)
{
	ur_send_unlock(qp);
}

void ur_send_on_deadline(struct ur_qp *qp, uint64_t now)
{
	UR_ASSERT_HELD(&qp->sq_lock);
	if (ur_comp_timer(qp, now))
		ur_send_step(qp);
}

/*
 * Doorbell. An RC QP with packets in flight will hear an ACK (or its
 * timer) soon, and the send step runs the requester then: new WQEs wait for
 * that and leave in one batch with whatever else was posted meanwhile,
 * instead of one sendmmsg per post. An idle QP sends at once, so latency
 * is untouched.
 */
void ur_engine_sq_kick(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (xp && xp->nic->lazy_doorbell && ur_qp_reliable(qp) &&
	    qp->state == IBV_QPS_RTS && xp->req.psn != xp->comp.psn &&
	    !xp->req.need_retry && !xp->comp.rnr_wait &&
	    atomic_load_explicit(&xp->tmr.rto_deadline, memory_order_relaxed))
		return;
	ur_send_step(qp);
}
