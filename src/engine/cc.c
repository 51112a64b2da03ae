/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion window and retransmission timing of an RC requester: how
 * many PSNs may be unacknowledged (ur_cc_window), how a loss shrinks the
 * window and ACKs grow it back, and when the retransmit deadline (the QP's
 * timeout and the recovery probe) fires. The requester reads the window;
 * the completer reports ACKs and losses. All under qp->sq_lock.
 */
#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"

/*
 * The window starts at UR_CWND_INIT and grows by slow start up to
 * UR_WINDOW_PSNS. A loss shrinks it (ur_cc_loss), once per congestion
 * episode: the losses found until everything sent before the decrease is
 * acknowledged (cc_recover_psn) are the same overflow, however many
 * go-back-Ns they cause.
 *
 * How much depends on what the loss says. A timeout (nothing arrived for
 * the QP's timeout) restarts the window at UR_CWND_MIN, as TCP does, so a
 * retransmission is not the burst a shallow queue just dropped; a probe
 * that found nothing moving halves it. A NAK or a gap halves it when
 * losses come often, within UR_CC_RARE_LOSS_WINDOWS windows of ACKed PSNs
 * since the last decrease: that is a queue that overflows each time the
 * window reaches it. A rarer loss takes an eighth off: random loss (1 %
 * of packets) would otherwise hold the window at a dozen packets, far
 * below what keeps a loopback pipe busy, while a go-back-N already costs
 * a window of packets per loss, so the window stays near the square root
 * of 1/loss rate either way and a queue still makes it converge. A NAK
 * answered by resending the one lost packet (comp.c: the responder kept
 * what came after it) takes only 1/UR_CC_RESEND_CUT off, once per
 * episode; a loss in that episode that needs more (a go-back-N: losses in
 * a row) is judged by the rules above as if the episode had not begun.
 *
 * A decrease by a probe or a timeout is undone when the ACK that ends its
 * episode acknowledges PSNs not resent since: nothing was lost, a loaded
 * host was only slow to answer (as TCP undoes a spurious timeout); a NAK
 * in the episode rules that out.
 *
 * ACKed PSNs grow it back (ur_cc_acked): by the PSNs acked below ssthresh
 * (doubling per round trip), by one per window above it, never by more
 * than the window per ACK (an ACK that skips past what a go-back-N resent
 * acknowledges old data, not a round trip's worth of room). It bounds GSO
 * trains too: a run sends no more than the window allows.
 *
 * A CNP (ur_cc_cnp: the peer saw our packets marked CE by a queue on the
 * path) is DCQCN's reaction in window terms: the window loses alpha/2 of
 * itself, at most once per UR_CC_CNP_INTERVAL_NS and once per episode (a
 * cut shows in the queue a round trip later), and climbs back half the
 * way to where it was per window of ACKed PSNs, UR_CC_CNP_RECOVERY_STEPS
 * times (DCQCN's fast recovery), then by one per window. Alpha starts at
 * 1 and follows how often cuts come: toward 1 at each cut, toward 0 at
 * each window ACKed without one.
 */
void ur_cc_reset(struct ur_qp_xport *xp)
{
	xp->cc.cwnd = UR_CWND_INIT;
	xp->cc.ssthresh = UR_WINDOW_PSNS;
	xp->cc.cwnd_acc = 0;
	xp->cc.acked = 0;
	xp->cc.undo = false;
	xp->cc.by_resend = false;
	xp->cc.recover_psn = xp->comp.psn;
	xp->cc.cnp_ns = 0;
	xp->cc.cnp_steps = 0;
	xp->cc.alpha = UR_CC_ALPHA_ONE;
}

uint32_t ur_cc_window(const struct ur_qp_xport *xp)
{
	if (xp->rto.probe_one)
		return 1;
	return xp->cc.cwnd && xp->cc.cwnd < UR_WINDOW_PSNS ? xp->cc.cwnd :
						       UR_WINDOW_PSNS;
}

void ur_cc_loss(struct ur_qp_xport *xp, enum ur_cc_signal sig)
{
	uint32_t cwnd = UR_MIN(xp->cc.cwnd, UR_WINDOW_PSNS);
	uint32_t flight = (uint32_t)UR_MAX(ur_psn_diff(xp->req.psn_max,
						       xp->comp.psn), 0);
	uint32_t w = UR_MIN(flight, cwnd);

	UR_ASSERT_HELD(&xp->qp->sq_lock);
	xp->cc.cnp_steps = 0;	/* a loss sets where the window goes now */
	if (sig == UR_CC_RESEND) {
		/* one packet lost among those around it: random loss more
		 * likely than a queue, and cheap to repair (comp.c) */
		xp->cc.undo = false;
		if (ur_psn_before(xp->comp.psn, xp->cc.recover_psn))
			return;
		xp->cc.recover_psn = xp->req.psn_max;
		xp->cc.by_resend = true;
		w = cwnd - UR_MAX(cwnd / UR_CC_RESEND_CUT, 1u);
		xp->cc.ssthresh = UR_MAX(w, UR_CWND_MIN);
		xp->cc.cwnd = xp->cc.ssthresh;
		xp->cc.cwnd_acc = 0;
		xp->cc.acked = 0;
		return;
	}
	if (sig == UR_CC_NAK)
		xp->cc.undo = false;	/* a loss for certain */
	/* an episode that began with a loss repaired by one resend is not
	 * one of a queue: a loss that needs more decides again */
	if (sig != UR_CC_TIMEOUT && !xp->cc.by_resend &&
	    ur_psn_before(xp->comp.psn, xp->cc.recover_psn))
		return;
	xp->cc.by_resend = false;
	if (sig != UR_CC_NAK && !xp->cc.undo) {
		xp->cc.undo = true;
		xp->cc.undo_cwnd = xp->cc.cwnd;
		xp->cc.undo_ssthresh = xp->cc.ssthresh;
	}
	if (sig == UR_CC_NAK &&
	    xp->cc.acked >= UR_CC_RARE_LOSS_WINDOWS * cwnd)
		w = cwnd - cwnd / 8;
	else
		w /= 2;
	xp->cc.recover_psn = xp->req.psn_max;
	xp->cc.ssthresh = UR_MAX(w, UR_CWND_MIN);
	xp->cc.cwnd = sig == UR_CC_TIMEOUT ? UR_CWND_MIN : xp->cc.ssthresh;
	xp->cc.cwnd_acc = 0;
	xp->cc.acked = 0;
}

void ur_cc_acked(struct ur_qp_xport *xp, uint32_t psns)
{
	UR_ASSERT_HELD(&xp->qp->sq_lock);
	xp->cc.acked = UR_MIN(xp->cc.acked + psns, UINT32_MAX / 2);
	if (xp->cc.undo && !ur_psn_before(xp->comp.psn, xp->cc.recover_psn)) {
		/* everything outstanding at the decrease is acknowledged,
		 * past what was resent since: it had all arrived, the
		 * probe or timeout only met a slow host */
		if (ur_psn_after(xp->comp.psn, xp->req.psn)) {
			xp->cc.cwnd = UR_MAX(xp->cc.cwnd, xp->cc.undo_cwnd);
			xp->cc.ssthresh = UR_MAX(xp->cc.ssthresh,
					      xp->cc.undo_ssthresh);
		}
		xp->cc.undo = false;
	}
	if (xp->cc.cwnd >= UR_WINDOW_PSNS)
		return;
	psns = UR_MIN(psns, xp->cc.cwnd);
	if (xp->cc.cwnd < xp->cc.ssthresh) {
		xp->cc.cwnd = UR_MIN(xp->cc.cwnd + psns, xp->cc.ssthresh);
		return;
	}
	xp->cc.cwnd_acc += psns;
	if (xp->cc.cwnd_acc < xp->cc.cwnd)
		return;
	/* a window of PSNs ACKed: a round trip without a cut */
	xp->cc.cwnd_acc -= xp->cc.cwnd;
	xp->cc.alpha -= xp->cc.alpha >> UR_CC_ALPHA_SHIFT;
	if (xp->cc.cnp_steps && xp->cc.cnp_target > xp->cc.cwnd) {
		xp->cc.cnp_steps--;
		xp->cc.cwnd += (xp->cc.cnp_target - xp->cc.cwnd + 1) / 2;
		xp->cc.ssthresh = xp->cc.cwnd;
		return;
	}
	xp->cc.cnp_steps = 0;
	xp->cc.cwnd++;
}

bool ur_cc_cnp(struct ur_qp_xport *xp, uint64_t now)
{
	uint32_t cwnd = UR_MIN(xp->cc.cwnd, UR_WINDOW_PSNS), cut;

	UR_ASSERT_HELD(&xp->qp->sq_lock);
	if (xp->cc.cnp_ns && now - xp->cc.cnp_ns < UR_CC_CNP_INTERVAL_NS)
		return false;
	/* the window already shrank for what is in flight */
	if (ur_psn_before(xp->comp.psn, xp->cc.recover_psn))
		return false;
	xp->cc.alpha += (UR_CC_ALPHA_ONE - xp->cc.alpha) >> UR_CC_ALPHA_SHIFT;
	cut = (uint32_t)((uint64_t)cwnd * xp->cc.alpha / (2 * UR_CC_ALPHA_ONE));
	xp->cc.cnp_ns = now;
	xp->cc.cnp_target = cwnd;
	xp->cc.cnp_steps = UR_CC_CNP_RECOVERY_STEPS;
	xp->cc.recover_psn = xp->req.psn_max;
	xp->cc.undo = false;	/* congestion for certain */
	xp->cc.by_resend = false;
	xp->cc.ssthresh = UR_MAX(cwnd - UR_MAX(cut, 1u), UR_CWND_MIN);
	xp->cc.cwnd = xp->cc.ssthresh;
	xp->cc.cwnd_acc = 0;
	xp->cc.acked = 0;
	return true;
}


/*
 * Two timers share rto_deadline. The QP's timeout (iba_deadline) runs
 * from the last progress and counts retries. The recovery probe fires
 * after a few round trips without progress and goes back N without
 * counting a retry: a lost retransmission, a lost tail or a lost NAK
 * (which the responder sends only once per gap) is then found in a few
 * round trips instead of a whole timeout (67 ms at perftest's 14). Every
 * probe doubles the interval until a new round-trip sample (Karn: never
 * from a retransmitted PSN) shows the estimate was right, so a loaded
 * host whose round trips grew does not probe itself into a storm of
 * replays; only the QP's timeout ends the connection. progress: ACKs
 * moved the completer's cursor.
 */
static uint64_t probe_interval(const struct ur_qp_xport *xp)
{
	uint64_t ns = xp->rto.srtt_ns ? UR_MAX(3 * xp->rto.srtt_ns, UR_PROBE_MIN_NS) :
				    UR_PROBE_INIT_NS;

	return ns << UR_MIN(xp->rto.probe_backoff, UR_PROBE_MAX_BACKOFF);
}

void ur_cc_arm_rto(struct ur_qp *qp, bool progress)
{
	struct ur_qp_xport *xp = qp->xp;
	uint64_t now, when;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!ur_qp_reliable(qp) || xp->comp.rnr_wait)
		return;
	if (xp->req.psn == xp->comp.psn) {
		ur_timer_disarm(&xp->tmr.rto_deadline);
		xp->rto.iba_deadline = 0;
		xp->rto.probe_backoff = 0;
		return;
	}
	if (!progress &&
	    atomic_load_explicit(&xp->tmr.rto_deadline, memory_order_relaxed))
		return;
	now = ur_now_ns();
	if (progress)
		xp->rto.iba_deadline = 0;
	if (!xp->rto.iba_deadline && xp->rto.timeout_ns)
		xp->rto.iba_deadline = now + xp->rto.timeout_ns;
	when = now + probe_interval(xp);
	if (xp->rto.iba_deadline && xp->rto.iba_deadline < when)
		when = xp->rto.iba_deadline;
	ur_timer_arm(xp, &xp->tmr.rto_deadline, when);
}

