/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RC requester's congestion window (engine/cc.c) alone, on a bare
 * transport state: where a connection starts, how losses shrink the window
 * (once per congestion episode, however many go-back-Ns the episode
 * causes), and how ACKs grow it back; and the pacing of what it
 * releases (a credit at gain x cwnd / srtt, a wait on the kick deadline).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"

struct t_cc {
	struct ur_qp qp;
	struct ur_qp_xport xp;
	struct ur_nic nic;		/* pacing's: its switch and timers */
};

static int setup(void **state)
{
	struct t_cc *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->qp.xp = &t->xp;
	t->qp.type = IBV_QPT_RC;
	t->xp.qp = &t->qp;
	t->xp.nic = &t->nic;
	t->nic.pace = true;
	ur_timers_init(&t->nic.timers);
	assert_int_equal(ur_timer_attach(&t->xp), 0);
	pthread_mutex_init(&t->qp.sq_lock, NULL);
	pthread_mutex_lock(&t->qp.sq_lock);
	t->xp.comp.psn = t->xp.req.psn = t->xp.req.psn_max =
	    0xfffff0; /* wraps */
	ur_cc_reset(&t->xp);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t_cc *t = *state;

	pthread_mutex_unlock(&t->qp.sq_lock);
	pthread_mutex_destroy(&t->qp.sq_lock);
	ur_timer_detach(&t->xp);
	ur_timers_fini(&t->nic.timers);
	free(t);
	return 0;
}

/* n PSNs sent; the requester's psn_max moves, as ur_req_run() does */
static void sent(struct ur_qp_xport *xp, uint32_t n)
{
	xp->req.psn = xp->req.psn_max = ur_psn_add(xp->req.psn_max, (int32_t)n);
}

/* n PSNs acknowledged, as the completer reports them */
static void acked(struct ur_qp_xport *xp, uint32_t n)
{
	xp->comp.psn = ur_psn_add(xp->comp.psn, (int32_t)n);
	ur_cc_acked(xp, n);
}

/* a go-back-N: the requester restarts at the oldest unacked PSN and
 * remembers what it had sent (ur_req_rewind()) */
static void rewind_to_comp(struct ur_qp_xport *xp)
{
	xp->req.psn = xp->comp.psn;
	xp->comp.recover_psn = xp->req.psn_max;
}

/* A new connection starts small and doubles per window of ACKs: its first
 * burst must fit a shallow queue. */
static void test_slow_start(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	assert_int_equal(ur_cc_window(xp), UR_CWND_INIT);
	assert_true(UR_CWND_INIT * 4096 < 48000);
	sent(xp, UR_CWND_INIT);
	acked(xp, UR_CWND_INIT);
	assert_int_equal(ur_cc_window(xp), 2 * UR_CWND_INIT);
	while (ur_cc_window(xp) < UR_WINDOW_PSNS) {
		uint32_t w = ur_cc_window(xp);

		sent(xp, w);
		acked(xp, w);
	}
	assert_int_equal(ur_cc_window(xp), UR_WINDOW_PSNS);
}

/*
 * Losses keep coming while a queue overflows; each NAK causes a go-back-N
 * that moves recover_psn. The window halves once for the losses among what
 * was in flight at the first one, and again as soon as a loss is found
 * among what was sent after that halving, not only after every
 * retransmission is acknowledged (which, under a steady overflow, is
 * never).
 */
static void test_one_decrease_per_episode(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 64;
	xp->cc.ssthresh = UR_WINDOW_PSNS;
	sent(xp, 64);
	ur_cc_loss(xp, UR_CC_NAK);			/* NAK at comp.psn */
	assert_int_equal(ur_cc_window(xp), 32);
	rewind_to_comp(xp);
	sent(xp, 32);
	acked(xp, 10);
	ur_cc_loss(xp, UR_CC_NAK);			/* same episode */
	assert_int_equal(ur_cc_window(xp), 32);
	rewind_to_comp(xp);
	sent(xp, 32);
	/* past the first 64: what is lost now was sent at the new window */
	acked(xp, 60);
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), 16);
	rewind_to_comp(xp);
	sent(xp, 16);
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), 16);
}

/*
 * A NAK repaired by resending the one lost packet takes a sixteenth off,
 * once per episode; a loss in that episode that needs a go-back-N (a run
 * of losses, as an overflowing queue makes) still halves the window.
 */
static void test_resend_takes_a_sixteenth(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 64;
	xp->cc.ssthresh = UR_WINDOW_PSNS;
	sent(xp, 64);
	ur_cc_loss(xp, UR_CC_RESEND);
	assert_int_equal(ur_cc_window(xp), 60);
	ur_cc_loss(xp, UR_CC_RESEND);		/* same episode */
	assert_int_equal(ur_cc_window(xp), 60);
	ur_cc_loss(xp, UR_CC_NAK);		/* a run: go-back-N */
	assert_int_equal(ur_cc_window(xp), 30);
	ur_cc_loss(xp, UR_CC_NAK);		/* its episode now */
	assert_int_equal(ur_cc_window(xp), 30);
	/* a new episode once everything of the old one is acknowledged
	 * (the ACK grows the window by one: ssthresh is 30) */
	acked(xp, 64);
	assert_int_equal(ur_cc_window(xp), 31);
	sent(xp, 31);
	ur_cc_loss(xp, UR_CC_RESEND);
	assert_int_equal(ur_cc_window(xp), 30);
}

/* A timeout is the strong signal: the window restarts at UR_CWND_MIN even
 * inside an episode, and slow start takes it back to half the flight. */
static void test_timeout_restarts(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 100;
	sent(xp, 100);
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), 50);
	ur_cc_loss(xp, UR_CC_TIMEOUT);
	assert_int_equal(ur_cc_window(xp), UR_CWND_MIN);
	rewind_to_comp(xp);
	sent(xp, UR_CWND_MIN);
	acked(xp, UR_CWND_MIN);
	assert_int_equal(ur_cc_window(xp), 2 * UR_CWND_MIN);
}

/* An ACK that skips past a go-back-N acknowledges old data: it grows the
 * window by at most the window (slow start), one PSN above ssthresh. */
static void test_growth_per_ack_bounded(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 8;
	sent(xp, 400);
	acked(xp, 400);
	assert_int_equal(ur_cc_window(xp), 16);
	xp->cc.ssthresh = 16;
	sent(xp, 400);
	acked(xp, 400);
	assert_int_equal(ur_cc_window(xp), 17);
	/* below one window of ACKs, nothing yet */
	sent(xp, 16);
	acked(xp, 16);
	assert_int_equal(ur_cc_window(xp), 17);
	acked(xp, 1);
	assert_int_equal(ur_cc_window(xp), 18);
}

/*
 * Random loss is not congestion: a NAK after UR_CC_RARE_LOSS_WINDOWS
 * windows of ACKs without a loss takes an eighth off; the next loss soon
 * after (a queue that overflows at this window) halves it; a probe that
 * found nothing moving halves it whenever it comes.
 */
static void test_rare_loss_takes_an_eighth(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;
	unsigned int i;
	uint32_t w;

	xp->cc.cwnd = xp->cc.ssthresh = 64;
	for (i = 0; i <= UR_CC_RARE_LOSS_WINDOWS; i++) {
		sent(xp, 63);
		acked(xp, 63);
	}
	sent(xp, 64);
	w = ur_cc_window(xp);
	assert_true(w > 64 && w < 70);	/* +1 per window of ACKs */
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), w - w / 8);
	rewind_to_comp(xp);
	acked(xp, 64);
	sent(xp, 59);
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), 59 / 2);
	/* a probe is never a rare loss */
	for (i = 0; i < 2 * UR_CC_RARE_LOSS_WINDOWS; i++) {
		sent(xp, 29);
		acked(xp, 29);
	}
	w = ur_cc_window(xp);
	ur_cc_loss(xp, UR_CC_PROBE);
	assert_int_equal(ur_cc_window(xp), w / 2);
}

/*
 * A timeout on a slow host: the responder had everything, and the ACK
 * that ends the episode acknowledges PSNs the go-back-N has not resent
 * yet. The decrease is undone; had a NAK come in the episode, it stays.
 */
static void test_spurious_timeout_undone(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 64;
	sent(xp, 40);
	ur_cc_loss(xp, UR_CC_TIMEOUT);
	assert_int_equal(ur_cc_window(xp), UR_CWND_MIN);
	rewind_to_comp(xp);
	xp->req.psn = ur_psn_add(xp->req.psn, UR_CWND_MIN);	/* resent 4 */
	acked(xp, 40);				/* all 40: skip ahead */
	assert_true(ur_cc_window(xp) >= 64);
	assert_int_equal(xp->cc.ssthresh, UR_WINDOW_PSNS);

	/* the same with a NAK inside the episode: a loss for certain */
	xp->cc.cwnd = 64;
	sent(xp, 40);
	ur_cc_loss(xp, UR_CC_PROBE);
	assert_int_equal(ur_cc_window(xp), 20);
	rewind_to_comp(xp);
	xp->req.psn = ur_psn_add(xp->req.psn, 20);
	ur_cc_loss(xp, UR_CC_NAK);
	acked(xp, 40);
	assert_true(ur_cc_window(xp) <= 21);
}

/* The floor: no loss takes the window below UR_CWND_MIN. */
static void test_floor(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;
	unsigned int i;

	xp->cc.cwnd = UR_CWND_MIN + 1;
	for (i = 0; i < 5; i++) {
		sent(xp, 2);
		ur_cc_loss(xp, UR_CC_NAK);
		acked(xp, 2);
	}
	assert_int_equal(ur_cc_window(xp), UR_CWND_MIN);
}

/*
 * A CNP (ecn.c) is DCQCN's cut in window terms: half the window while
 * alpha is 1, at most once per UR_CC_CNP_INTERVAL_NS and once per episode
 * (what was in flight at the cut), however many CNPs come.
 */
static void test_cnp_cut_once_per_interval(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;
	uint64_t t = 1000000000ull;

	xp->cc.cwnd = 64;
	xp->cc.ssthresh = 64;
	sent(xp, 64);
	assert_true(ur_cc_cnp(xp, t));
	assert_int_equal(ur_cc_window(xp), 32);
	/* within the episode (what was in flight at the cut): nothing */
	acked(xp, 20);
	assert_false(ur_cc_cnp(xp, t + 2 * UR_CC_CNP_INTERVAL_NS));
	assert_int_equal(ur_cc_window(xp), 32);
	/* past the episode but within the interval: nothing */
	acked(xp, 44);		/* a window acked: a recovery step, 48 */
	assert_int_equal(ur_cc_window(xp), 48);
	assert_false(ur_cc_cnp(xp, t + UR_CC_CNP_INTERVAL_NS - 1));
	assert_int_equal(ur_cc_window(xp), 48);
	/* both past: a second cut; alpha fell a sixteenth in the window
	 * acked without one, so a little less than half goes */
	sent(xp, 48);
	assert_true(ur_cc_cnp(xp, t + UR_CC_CNP_INTERVAL_NS));
	assert_in_range(ur_cc_window(xp), 25, 27);
	assert_true(ur_cc_window(xp) >= UR_CWND_MIN);
}

/*
 * After a cut the window climbs back half the way to where it was per
 * window of ACKed PSNs (DCQCN's fast recovery), UR_CC_CNP_RECOVERY_STEPS
 * times, then grows by one per window; alpha falls meanwhile, so the next
 * cut takes less than half.
 */
static void test_cnp_recovery(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;
	uint32_t want = 50, w;
	unsigned int i;

	xp->cc.cwnd = 100;
	xp->cc.ssthresh = 100;
	assert_true(ur_cc_cnp(xp, 1000000000ull));
	assert_int_equal(ur_cc_window(xp), 50);
	for (i = 0; i < UR_CC_CNP_RECOVERY_STEPS; i++) {
		w = ur_cc_window(xp);
		sent(xp, w);
		acked(xp, w);
		want += (100 - want + 1) / 2;
		assert_int_equal(ur_cc_window(xp), want);
	}
	assert_int_equal(want, 99);
	w = ur_cc_window(xp);
	sent(xp, w);
	acked(xp, w);
	assert_int_equal(ur_cc_window(xp), 100);	/* +1 per window now */
	assert_true(xp->cc.alpha < UR_CC_ALPHA_ONE);
	w = ur_cc_window(xp);
	assert_true(ur_cc_cnp(xp, 2000000000ull));
	assert_true(ur_cc_window(xp) > w / 2);
	assert_true(ur_cc_window(xp) < w);
}

/* A loss during the recovery ends it: the loss rules set the window. */
static void test_cnp_recovery_ends_at_loss(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;

	xp->cc.cwnd = 100;
	xp->cc.ssthresh = 100;
	assert_true(ur_cc_cnp(xp, 1000000000ull));
	sent(xp, 50);
	acked(xp, 50);
	assert_int_equal(ur_cc_window(xp), 75);
	sent(xp, 75);
	ur_cc_loss(xp, UR_CC_NAK);
	assert_int_equal(ur_cc_window(xp), 37);
	assert_int_equal(xp->cc.cnp_steps, 0);
}

/*
 * The QPs of a NIC with PSNs unacknowledged share UR_NIC_WINDOW_PSNS: a
 * receiver's one buffer took sixteen whole windows (perftest -q 16) only
 * by dropping; a QP alone, or once the others finished, has its whole
 * window again, and a QP's end (reset, ERR) gives its share back.
 */
#define N_SHARE 16
static void test_nic_window_shared(void **state)
{
	struct ur_nic *nic = calloc(1, sizeof(*nic));
	struct ur_qp qp[N_SHARE];
	struct ur_qp_xport xp[N_SHARE];
	unsigned int i;

	(void)state;
	assert_non_null(nic);
	memset(qp, 0, sizeof(qp));
	memset(xp, 0, sizeof(xp));
	ur_timers_init(&nic->timers);
	for (i = 0; i < N_SHARE; i++) {
		qp[i].type = IBV_QPT_RC;
		qp[i].state = IBV_QPS_RTS;
		qp[i].xp = &xp[i];
		xp[i].qp = &qp[i];
		xp[i].nic = nic;
		pthread_mutex_init(&qp[i].sq_lock, NULL);
		assert_int_equal(ur_timer_attach(&xp[i]), 0);
		ur_cc_reset(&xp[i]);
		xp[i].cc.cwnd = UR_WINDOW_PSNS;		/* grown */
	}
	/* QP 0 alone has PSNs out: its whole window */
	pthread_mutex_lock(&qp[0].sq_lock);
	sent(&xp[0], 8);
	ur_cc_arm_rto(&qp[0], false);
	pthread_mutex_unlock(&qp[0].sq_lock);
	assert_int_equal(atomic_load(&nic->rc_busy), 1);
	assert_int_equal(ur_cc_window(&xp[0]), UR_WINDOW_PSNS);
	/* all of them: an even share each, together the NIC's window */
	for (i = 1; i < N_SHARE; i++) {
		pthread_mutex_lock(&qp[i].sq_lock);
		sent(&xp[i], 8);
		ur_cc_arm_rto(&qp[i], false);
		ur_cc_arm_rto(&qp[i], false);	/* counted once */
		pthread_mutex_unlock(&qp[i].sq_lock);
	}
	assert_int_equal(atomic_load(&nic->rc_busy), N_SHARE);
	for (i = 0; i < N_SHARE; i++)
		assert_int_equal(ur_cc_window(&xp[i]),
				 UR_MAX(UR_NIC_WINDOW_PSNS / N_SHARE,
					UR_CWND_MIN));
	assert_true(N_SHARE * ur_cc_window(&xp[0]) <= UR_NIC_WINDOW_PSNS);
	/* the others finish (all acked), go to ERR, or are reset */
	for (i = 1; i < N_SHARE; i++) {
		pthread_mutex_lock(&qp[i].sq_lock);
		if (i % 3 == 0) {
			acked(&xp[i], 8);
			ur_cc_arm_rto(&qp[i], true);
		} else if (i % 3 == 1) {
			ur_cc_set_busy(&xp[i], false);	/* as the move to ERR */
		} else {
			ur_cc_reset(&xp[i]);
		}
		pthread_mutex_unlock(&qp[i].sq_lock);
	}
	assert_int_equal(atomic_load(&nic->rc_busy), 1);
	assert_int_equal(ur_cc_window(&xp[0]), UR_WINDOW_PSNS);
	/* the congestion window still bounds a QP below its share */
	xp[0].cc.cwnd = UR_CWND_MIN;
	assert_int_equal(ur_cc_window(&xp[0]), UR_CWND_MIN);
	for (i = 0; i < N_SHARE; i++) {
		pthread_mutex_lock(&qp[i].sq_lock);
		ur_cc_set_busy(&xp[i], false);
		pthread_mutex_unlock(&qp[i].sq_lock);
		ur_timer_detach(&xp[i]);
		pthread_mutex_destroy(&qp[i].sq_lock);
	}
	assert_int_equal(atomic_load(&nic->rc_busy), 0);
	ur_timers_fini(&nic->timers);
	free(nic);
}

/* packets of pkt wire bytes let out until the credit is spent */
static unsigned int paced_burst(struct ur_qp_xport *xp, uint32_t pkt)
{
	unsigned int n = 0;

	while (!ur_cc_pace_wait(xp, pkt))
		assert_true(++n < 100000);
	return n;
}

/*
 * No pacing before a round trip is measured or with UROCE_PACE=0; then a
 * credit of UR_PACE_BURST_NS at gain x cwnd / srtt, spent packet by
 * packet; a packet that finds it spent waits, the kick deadline set for
 * when half of it is back, and the wait is counted.
 */
static void test_pace_credit(void **state)
{
	struct t_cc *t = *state;
	struct ur_qp_xport *xp = &t->xp;
	uint32_t pkt = 4096 + UR_PACE_HDR_BYTES;
	uint64_t rate, burst, half, when;

	xp->mtu = 4096;
	ur_cc_pace_start(xp);	/* no srtt yet */
	assert_int_equal(xp->cc.pace_rate, 0);
	assert_false(ur_cc_pace_wait(xp, pkt));
	xp->rto.srtt_ns = 1000000;
	xp->cc.cwnd = 100;
	xp->cc.ssthresh = 50;	/* above it: 5/4 */
	t->nic.pace = false;
	ur_cc_pace_start(xp);
	assert_int_equal(xp->cc.pace_rate, 0);
	t->nic.pace = true;

	ur_cc_pace_start(xp);
	rate = 100ull * pkt * 1000 * 5 / 4;	/* bytes/s at 1 ms */
	assert_int_equal(xp->cc.pace_rate, rate);
	burst = rate * UR_PACE_BURST_NS / 1000000000ull;
	assert_int_equal(paced_burst(xp, pkt), burst / pkt + 1);
	half = rate * UR_PACE_BURST_NS / 2000000000ull;
	when = xp->cc.pace_ns + ((uint64_t)-xp->cc.pace_credit + half) *
				     1000000000ull / rate;
	assert_int_equal(atomic_load(&xp->tmr.kick_deadline), when);
	assert_int_equal(atomic_load(&t->nic.cnt.stat[UR_STAT_PACE_WAITS]), 1);
	assert_int_equal(atomic_load(&xp->qcnt.req[UR_QSTAT_PACE_WAITS]), 1);

	/* slow start paces at twice the window */
	xp->cc.cwnd = 40;
	ur_cc_pace_start(xp);
	assert_int_equal(xp->cc.pace_rate, 40ull * pkt * 1000 * 2);
}

/*
 * A slow rate (a small window over a long round trip) earns its next
 * packet in one wait: when the requester runs at the deadline the wait
 * set, the packet may leave. (The credit once grew by at most 400 us of
 * the rate per run, so a rate that needs longer for a packet waited
 * again and again: paced 8-to-1 incasts ended in RETRY_EXC.)
 */
static void test_pace_slow_rate(void **state)
{
	struct ur_qp_xport *xp = &((struct t_cc *)*state)->xp;
	uint32_t pkt = 4096 + UR_PACE_HDR_BYTES;
	uint64_t wait;

	xp->mtu = 4096;
	xp->rto.srtt_ns = 100000000;	/* 100 ms */
	xp->cc.cwnd = UR_CWND_MIN;
	xp->cc.ssthresh = UR_CWND_MIN;
	ur_cc_pace_start(xp);
	assert_true(xp->cc.pace_rate < 1000000); /* a packet takes > 4 ms */
	/* a cap of two packets, and one more into debt */
	assert_int_equal(paced_burst(xp, pkt), 3);
	wait = atomic_load(&xp->tmr.kick_deadline) - xp->cc.pace_ns;
	assert_true(wait > 2 * UR_PACE_BURST_NS);
	/* as if the requester ran at that deadline */
	xp->cc.pace_ns -= wait;
	ur_cc_pace_start(xp);
	assert_false(ur_cc_pace_wait(xp, pkt));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_slow_start, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pace_credit, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_pace_slow_rate, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_one_decrease_per_episode,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_resend_takes_a_sixteenth,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_timeout_restarts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_growth_per_ack_bounded,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_rare_loss_takes_an_eighth,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_spurious_timeout_undone,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_floor, setup, teardown),
		cmocka_unit_test_setup_teardown(test_cnp_cut_once_per_interval,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_cnp_recovery, setup,
						teardown),
		cmocka_unit_test(test_nic_window_shared),
		cmocka_unit_test_setup_teardown(test_cnp_recovery_ends_at_loss,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
