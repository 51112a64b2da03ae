/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Congestion window and retransmission timing of an RC requester: how
 * many PSNs may be unacknowledged (ur_cc_window, ur_cc_window_full) and
 * which packets ask for an ACK (ur_cc_want_ackreq), how a loss shrinks the
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
	ur_cc_set_busy(xp, false);
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
	xp->cc.pace_rate = 0;
}

/*
 * The window is the smaller of the congestion window and the QP's share
 * of the NIC's: the QPs with PSNs unacknowledged split UR_NIC_WINDOW_PSNS
 * evenly (at least UR_CWND_MIN each), so many busy QPs to one peer do not
 * overflow its one receive buffer, and one busy QP among idle ones keeps
 * its whole window. A share read as it changes is at worst one QP's stale
 * share for one requester run.
 */
uint32_t ur_cc_window(const struct ur_qp_xport *xp)
{
	uint32_t w, share;
	unsigned int n;

	if (xp->rto.probe_one)
		return 1;
	w = xp->cc.cwnd && xp->cc.cwnd < UR_WINDOW_PSNS ? xp->cc.cwnd :
							  UR_WINDOW_PSNS;
	n = xp->nic ? atomic_load_explicit(&xp->nic->rc_busy,
					   memory_order_relaxed) : 0;
	if (n > 1) {
		share = UR_MAX(UR_NIC_WINDOW_PSNS / n, UR_CWND_MIN);
		w = UR_MIN(w, share);
	}
	return w;
}

/*
 * While one packet is resent alone (comp_selective()), the window counts
 * from where the requester was when the NAK came: the responder keeps
 * what was sent before, which has left the network as surely as what it
 * acknowledged (TCP's SACKed packets, without the SACK).
 */
bool ur_cc_window_full(const struct ur_qp_xport *xp, uint32_t psn)
{
	uint32_t base = xp->comp.psn;
	int32_t out;

	if (ur_psn_diff(psn, base) >= UR_REORDER_PSNS - 1)
		return true;	/* what the responder can keep */
	if (xp->resend.active && xp->resend.ok &&
	    ur_psn_after(xp->resend.base, base))
		base = xp->resend.base;
	out = ur_psn_diff(psn, base);
	/* READ responses placed past a lost one have arrived (comp_read.c);
	 * after a go-back-N, once the requests for them are sent again */
	if (base == xp->comp.psn && !ur_psn_before(psn, xp->comp.rd_high))
		out -= (int32_t)xp->comp.rd_seen_n;
	return out >= (int32_t)ur_cc_window(xp);
}

/*
 * AckReq on the last packet of a message, on the last one the window lets
 * out, and every UR_ACKREQ_EVERY packets, or every half window when the
 * window is smaller: with a small window (after a loss) one lost ACK or
 * one lost tail packet would otherwise stall the QP until the probe.
 */
bool ur_cc_want_ackreq(struct ur_qp_xport *xp, bool last)
{
	uint32_t every = UR_MAX(UR_MIN(ur_cc_window(xp) / 2, UR_ACKREQ_EVERY),
				1u);

	if (last || ++xp->req.noack_pkts >= every) {
		xp->req.noack_pkts = 0;
		return true;
	}
	return false;
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
 * A send of this QP's packets met a full socket buffer or local queue
 * (the link waited out EAGAIN or ENOBUFS; link_tx_blocked): the host's
 * own way out is congested, as a CE mark says of a queue further on,
 * and the window takes the same cut as for a CNP, once per episode. A
 * tbf or any qdisc that drops on this host says nothing to a UDP socket
 * (the kernel counts it in SndbufErrors only); what the link does see,
 * a full socket buffer, is what this answers. The counter is the
 * device's, so a QP sending at the same moment as one that met it may
 * take the cut too: both were sending into the same full queue.
 */
void ur_cc_local_full(struct ur_qp_xport *xp)
{
	UR_ASSERT_HELD(&xp->qp->sq_lock);
	if (ur_cc_cnp(xp, ur_now_ns())) {
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_LOCAL_CONGESTION, 1);
		ur_qcnt(xp->qcnt.req, UR_QSTAT_LOCAL_CONGESTION, 1);
	}
}

/*
 * Pacing. The window says how much may be unacknowledged, not how fast
 * it may leave: a window released at the speed of the CPU (a burst per
 * ACK, an ACK per 32 packets) overflows a shallow queue on the way (the
 * sender's own 48 KB tbf at 1 Gbit/s dropped thousands of packets in 5 s)
 * even when the window itself fits the path. So the requester spends a
 * credit of wire bytes that refills at gain x cwnd / srtt (TCP's pacing
 * rate, as Linux computes it for fq); this kernel has neither fq nor etf,
 * so the engine keeps the time itself: a packet that finds the credit
 * spent waits for the QP's kick deadline (timer.c), set for when half of
 * UR_PACE_BURST_NS worth is back. Until a round trip is measured, and
 * with UROCE_PACE=0, nothing waits. Only SEND and WRITE packets are
 * paced: a READ's responses leave at the responder's pace.
 */
void ur_cc_pace_start(struct ur_qp_xport *xp)
{
	uint64_t cwnd = UR_MIN(xp->cc.cwnd, UR_WINDOW_PSNS), rate, burst, now;
	uint64_t pkt = xp->mtu + UR_PACE_HDR_BYTES;
	unsigned __int128 add;
	unsigned int gain = xp->cc.cwnd < xp->cc.ssthresh ? UR_PACE_GAIN_SS :
						      UR_PACE_GAIN_CA;

	if (!xp->nic->pace || !xp->rto.srtt_ns) {
		xp->cc.pace_rate = 0;
		return;
	}
	rate = cwnd * pkt * gain * (1000000000ull / 4) / xp->rto.srtt_ns;
	rate = UR_MIN(UR_MAX(rate, 1ull), UR_PACE_RATE_MAX);
	burst = UR_MAX(rate * UR_PACE_BURST_NS / 1000000000ull, 2 * pkt);
	now = ur_now_ns();
	if (!xp->cc.pace_rate) {
		xp->cc.pace_credit = (int64_t)burst;	/* pacing starts */
	} else {
		/* (128 bits: a long pause at a high rate; the time is never
		 * capped, a slow rate must earn its packet in one wait) */
		add = (unsigned __int128)(now - xp->cc.pace_ns) * rate /
		      1000000000u;
		if (add >= (unsigned __int128)(burst + pkt))
			xp->cc.pace_credit = (int64_t)burst;
		else
			xp->cc.pace_credit = UR_MIN(
			    xp->cc.pace_credit + (int64_t)add, (int64_t)burst);
	}
	xp->cc.pace_ns = now;
	xp->cc.pace_rate = rate;
}

bool ur_cc_pace_wait(struct ur_qp_xport *xp, uint32_t wire_bytes)
{
	uint64_t need, half;

	UR_ASSERT_HELD(&xp->qp->sq_lock);
	if (!xp->cc.pace_rate)
		return false;
	if (xp->cc.pace_credit >= 0) {
		xp->cc.pace_credit -= wire_bytes;
		return false;
	}
	half = UR_MAX(xp->cc.pace_rate * UR_PACE_BURST_NS / 2000000000ull,
		      (uint64_t)wire_bytes);
	need = (uint64_t)-xp->cc.pace_credit + half;
	ur_timer_arm(xp, &xp->tmr.kick_deadline,
		     xp->cc.pace_ns + need * 1000000000ull / xp->cc.pace_rate);
	ur_cnt_stat(&xp->nic->cnt, UR_STAT_PACE_WAITS, 1);
	ur_qcnt(xp->qcnt.req, UR_QSTAT_PACE_WAITS, 1);
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
	uint64_t ns = xp->rto.srtt_ns
			  ? UR_MAX(3 * xp->rto.srtt_ns, UR_PROBE_MIN_NS)
			  : UR_PROBE_INIT_NS;

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
		ur_cc_set_busy(xp, false);
		return;
	}
	ur_cc_set_busy(xp, true);
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

