/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An application that spins on its CQ for a while and then arms it and
 * blocks for the completion event (rsockets, UCX's and libfabric's event
 * modes all poll first and sleep after). While it spins, the progress
 * thread leaves the socket to it (a deaf wait, progress.c); once it
 * blocks, only the thread can receive. Regression: the thread stayed deaf
 * for UROCE_QUIET_US after the last poll, so a SEND arriving then waited
 * that long for anyone to receive it. The test runs with the longest
 * quiet time the configuration allows (1 s) so that the old behaviour
 * fails by a wide margin, not by a timing that the host's load can blur.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_env.h"
#include "util/time.h"

#define T_WAIT_MS 300		/* well under the 1 s quiet time */
#define T_TMO_MS 5000

struct t_pair {
	struct fe_side s[2];
};

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_pair_open(p->s);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_pair_close(p->s);
	free(p);
	return 0;
}

static uint64_t deaf_waits(struct fe_side *s)
{
	return atomic_load(&s->dev->nic->cnt.stat[UR_STAT_DEAF_WAITS]);
}

static void post_send(struct fe_side *me, uint64_t wr_id, uint32_t len)
{
	struct ur_send_wqe *w = fe_sq_next(me->qp);

	memset(me->buf, 0x5a, len);
	w->wr_id = wr_id;
	w->opcode = IBV_WR_SEND;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)me->buf;
	w->sge[0].length = len;
	w->sge[0].lkey = me->mr->ibmr.lkey;
	fe_sq_post(me->qp);
}

/*
 * Spins on rx's empty CQ (bursts of polls closer than UR_APP_POLL_GAP_NS)
 * and wakes its progress thread after each burst, until the thread has
 * gone back to sleep deaf at least once: its current wait then ignores the
 * socket until a quiet time after the last poll.
 */
static void spin_until_deaf(struct fe_side *rx)
{
	uint64_t before = deaf_waits(rx), end = ur_now_ns() + 2000000000ull;
	int i;

	do {
		for (i = 0; i < 4 * UR_APP_POLL_SPIN; i++)
			ur_engine_poll(rx->dev);
		ur_nic_wake(rx->dev->nic);
		usleep(1000);
	} while (deaf_waits(rx) == before && ur_now_ns() < end);
	assert_true(deaf_waits(rx) > before);
}

static void test_regress_event_wait_ends_spin(void **state)
{
	struct t_pair *p = *state;
	struct fe_side *tx = &p->s[0], *rx = &p->s[1];
	struct ibv_wc wc;
	int round;

	for (round = 0; round < 3; round++) {
		fe_rq_post(rx->qp, 100 + (uint64_t)round, rx->buf, 256,
			   rx->mr->ibmr.lkey);
		spin_until_deaf(rx);
		/* what ibv_req_notify_cq and ibv_get_cq_event tell the engine */
		ur_engine_event_wait(rx->dev);
		post_send(tx, 200 + (uint64_t)round, 64);
		/* the receiver blocks: only its progress thread may run */
		assert_int_equal(fe_cq_wait(&rx->rcq, &wc, T_WAIT_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 100 + (uint64_t)round);
		assert_int_equal(wc.byte_len, 64);
		assert_int_equal(fe_cq_poll(&tx->scq, &wc, T_TMO_MS), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 200 + (uint64_t)round);
	}
}

/* An application that keeps spinning is still left the socket: the call
 * ends one spin, not the rule. */
static void test_spin_after_event_wait_is_deaf_again(void **state)
{
	struct t_pair *p = *state;
	struct fe_side *rx = &p->s[1];

	spin_until_deaf(rx);
	ur_engine_event_wait(rx->dev);
	spin_until_deaf(rx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_regress_event_wait_ends_spin, setup, teardown),
		cmocka_unit_test_setup_teardown(
			test_spin_after_event_wait_is_deaf_again, setup,
			teardown),
	};
	int rc;

	/* before the configuration is first read (fe_init opens devices) */
	setenv("UROCE_QUIET_US", "1000000", 1);
	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
