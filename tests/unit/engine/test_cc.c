/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The RC requester's congestion window (engine/cc.c) alone, on a bare
 * transport state: where a connection starts, how losses shrink the window
 * (once per congestion episode, however many go-back-Ns the episode
 * causes), and how ACKs grow it back.
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
};

static int setup(void **state)
{
	struct t_cc *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->qp.xp = &t->xp;
	t->qp.type = IBV_QPT_RC;
	t->xp.qp = &t->qp;
	pthread_mutex_init(&t->qp.sq_lock, NULL);
	pthread_mutex_lock(&t->qp.sq_lock);
	t->xp.comp.psn = t->xp.req.psn = t->xp.req.psn_max = 0xfffff0; /* wraps */
	ur_cc_reset(&t->xp);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t_cc *t = *state;

	pthread_mutex_unlock(&t->qp.sq_lock);
	pthread_mutex_destroy(&t->qp.sq_lock);
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
	ur_cc_loss(xp, UR_CC_NAK);			/* NAK at comp_psn */
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_slow_start, setup,
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
		cmocka_unit_test_setup_teardown(test_cnp_recovery_ends_at_loss,
						setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
