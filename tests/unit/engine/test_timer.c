/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The deadline heap (engine/timer.c) alone, against a model: after any mix
 * of arms, disarms, detaches and expiries, no armed deadline is ever later
 * than the heap's next deadline, and an expiry at time t returns every QP
 * with a deadline <= t (the progress stage then puts each back). A QP with
 * nothing due may come back early (keys are lazy); none is returned twice.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine_priv.h"
#include "util/time.h"

#define NQP 2000

struct t_timers {
	struct ur_nic nic;
	struct ur_qp_xport xp[NQP];
	bool attached[NQP];
};

static int setup(void **state)
{
	struct t_timers *t = calloc(1, sizeof(*t));
	unsigned int i;

	assert_non_null(t);
	t->nic.wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(t->nic.wake_fd >= 0);
	t->nic.timer_fd = timerfd_create(CLOCK_MONOTONIC,
					 TFD_NONBLOCK | TFD_CLOEXEC);
	assert_true(t->nic.timer_fd >= 0);
	ur_timers_init(&t->nic.timers);
	for (i = 0; i < NQP; i++) {
		t->xp[i].nic = &t->nic;
		assert_int_equal(ur_timer_attach(&t->xp[i]), 0);
		t->attached[i] = true;
	}
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t_timers *t = *state;
	unsigned int i;

	for (i = 0; i < NQP; i++)
		if (t->attached[i])
			ur_timer_detach(&t->xp[i]);
	assert_int_equal(t->nic.timers.n, 0);
	assert_int_equal(t->nic.timers.users, 0);
	ur_timers_fini(&t->nic.timers);
	close(t->nic.wake_fd);
	close(t->nic.timer_fd);
	free(t);
	return 0;
}

static _Atomic uint64_t *slot_of(struct ur_qp_xport *xp, unsigned int k)
{
	return k == 0 ? &xp->tmr.rto_deadline :
	       k == 1 ? &xp->tmr.rnr_deadline : &xp->tmr.kick_deadline;
}

static uint64_t earliest(struct ur_qp_xport *xp)
{
	uint64_t d = 0, v;
	unsigned int k;

	for (k = 0; k < 3; k++) {
		v = atomic_load(slot_of(xp, k));
		if (v && (!d || v < d))
			d = v;
	}
	return d;
}

/* The invariant the progress stage relies on: nothing armed is later
 * than what it will wake up for. */
static void check_next(struct t_timers *t)
{
	uint64_t next = ur_timer_next(&t->nic), d;
	unsigned int i;

	for (i = 0; i < NQP; i++) {
		if (!t->attached[i])
			continue;
		d = earliest(&t->xp[i]);
		if (d) {
			assert_true(next != 0);
			assert_true(next <= d);
		}
	}
}

/* Expire at now as the progress stage does; every due QP must be popped,
 * once. Due slots are then disarmed (their handler "ran"). */
static unsigned int expire(struct t_timers *t, uint64_t now)
{
	struct ur_qp_xport *due[UR_TIMER_BATCH];
	static unsigned char seen[NQP];
	unsigned int n, i, k, total = 0;

	memset(seen, 0, sizeof(seen));
	while ((n = ur_timer_expired(&t->nic, now, due, UR_TIMER_BATCH))) {
		assert_true(n <= UR_TIMER_BATCH);
		for (i = 0; i < n; i++) {
			unsigned int idx = (unsigned int)(due[i] - t->xp);

			/* cmocka's fail() returns as far as GCC knows: the
			 * return keeps -O3 from seeing seen[] overrun */
			if (idx >= NQP) {
				fail_msg("popped a QP that is not ours");
				return total;
			}
			assert_true(t->attached[idx]);
			assert_int_equal(seen[idx], 0);
			seen[idx] = 1;
		}
		for (i = 0; i < n; i++) {
			for (k = 0; k < 3; k++) {
				uint64_t v = atomic_load(slot_of(due[i], k));

				if (v && v <= now)
					ur_timer_disarm(slot_of(due[i], k));
			}
			total++;
		}
		/* put back only after the whole pass: a QP still armed
		 * later than now must not come back in this expiry */
		for (i = 0; i < n; i++)
			ur_timer_rearm(due[i], false);
	}
	for (i = 0; i < NQP; i++) {
		uint64_t d = t->attached[i] ? earliest(&t->xp[i]) : 0;

		/* nothing due is left behind */
		assert_false(d && d <= now);
	}
	return total;
}

static void test_timer_model(void **state)
{
	struct t_timers *t = *state;
	uint64_t now = 1000;
	unsigned int round, j;

	srand(12345);
	for (round = 0; round < 300; round++) {
		for (j = 0; j < 200; j++) {
			unsigned int i = (unsigned int)rand() % NQP;
			unsigned int k = (unsigned int)rand() % 3;
			int what = rand() % 10;

			if (!t->attached[i]) {
				if (what == 0) {
					assert_int_equal(
						ur_timer_attach(&t->xp[i]), 0);
					t->attached[i] = true;
				}
				continue;
			}
			if (what < 6)
				ur_timer_arm(&t->xp[i], slot_of(&t->xp[i], k),
					     now + 1 + (uint64_t)(rand() % 5000));
			else if (what < 9)
				ur_timer_disarm(slot_of(&t->xp[i], k));
			else if (rand() % 20 == 0) {
				ur_timer_detach(&t->xp[i]);
				atomic_store(&t->xp[i].tmr.rto_deadline, 0);
				atomic_store(&t->xp[i].tmr.rnr_deadline, 0);
				atomic_store(&t->xp[i].tmr.kick_deadline, 0);
				t->attached[i] = false;
			}
		}
		check_next(t);
		now += (uint64_t)(rand() % 400);
		expire(t, now);
		check_next(t);
	}
}

/* An expiry with many QPs armed far ahead returns none of them: the cost
 * of a visit follows the QPs due, not the QPs that exist. */
static void test_timer_only_due(void **state)
{
	struct t_timers *t = *state;
	unsigned int i;

	for (i = 0; i < NQP; i++)
		ur_timer_arm(&t->xp[i], &t->xp[i].tmr.rto_deadline,
			     1000000 + i);
	ur_timer_arm(&t->xp[7], &t->xp[7].tmr.kick_deadline, 10);
	assert_int_equal(ur_timer_next(&t->nic), 10);
	assert_int_equal(expire(t, 100), 1);
	assert_int_equal(ur_timer_next(&t->nic), 1000000);
	assert_int_equal(expire(t, 1000000 + 99), 100);
	assert_int_equal(ur_timer_next(&t->nic), 1000000 + 100);
	/* a deadline moved later keeps the old key: the QP pops early,
	 * with nothing due, and goes back with its real deadline */
	ur_timer_arm(&t->xp[500], &t->xp[500].tmr.rto_deadline, 5000000);
	assert_int_equal(expire(t, 1000000 + 500), 401);
	assert_int_equal(atomic_load(&t->xp[500].tmr.rto_deadline), 5000000);
	assert_true(t->xp[500].tmr.pos != 0);
}

/*
 * The progress thread's timerfd: when it fires lies in [*lo, *hi] (0 and
 * 0 if disarmed). timerfd_gettime() says how long is left, not when: the
 * clock is read before and after it, so that a test preempted in between
 * (a loaded CI machine) widens the range instead of shifting it.
 */
static void timerfd_when(struct t_timers *t, uint64_t *lo, uint64_t *hi)
{
	struct itimerspec its;
	uint64_t before, after, left;

	before = ur_now_ns();
	assert_int_equal(timerfd_gettime(t->nic.timer_fd, &its), 0);
	after = ur_now_ns();
	left = (uint64_t)its.it_value.tv_sec * 1000000000ull +
	       (uint64_t)its.it_value.tv_nsec;
	*lo = left ? before + left : 0;
	*hi = left ? after + left : 0;
}

/* The timerfd fires at when (to the timer's rounding), or is disarmed for
 * when == 0. */
static void assert_timerfd_at(struct t_timers *t, uint64_t when)
{
	uint64_t lo, hi;

	timerfd_when(t, &lo, &hi);
	if (!when) {
		assert_int_equal(hi, 0);
		return;
	}
	assert_true(lo <= when + 1000000);
	assert_true(hi + 1000000 >= when);
}

static bool woken_now(struct t_timers *t)
{
	uint64_t v;

	return read(t->nic.wake_fd, &v, sizeof(v)) == sizeof(v);
}

/*
 * Regression (cd2f1d2, ib_write_lat 17 -> 300 us): every post armed a
 * probe as the new earliest deadline and woke the progress thread at once.
 * A new earliest deadline now leaves a thread that is awake, or that
 * sleeps until no later, alone, and makes one that sleeps longer wake by
 * then through its timerfd, never at once.
 */
static void test_regress_arm_wakes_thread_only_by_deadline(void **state)
{
	struct t_timers *t = *state;
	uint64_t now = ur_now_ns(), when;

	/* awake: it reads the heap before it sleeps */
	atomic_store(&t->nic.sleep_until, 0);
	ur_timer_arm(&t->xp[0], &t->xp[0].tmr.rto_deadline,
		     now + 3000000000ull);
	assert_timerfd_at(t, 0);
	assert_false(woken_now(t));
	/* asleep until before the new deadline: it looks again by then */
	atomic_store(&t->nic.sleep_until, now + 1000000000ull);
	ur_timer_arm(&t->xp[1], &t->xp[1].tmr.rto_deadline,
		     now + 2000000000ull);
	assert_timerfd_at(t, 0);
	assert_false(woken_now(t));
	/* asleep for longer (or with no timeout): woken by the deadline */
	atomic_store(&t->nic.sleep_until, UINT64_MAX);
	when = now + 500000000ull;
	ur_timer_arm(&t->xp[2], &t->xp[2].tmr.rto_deadline, when);
	assert_timerfd_at(t, when);
	assert_false(woken_now(t));
	/* a deadline that is not the earliest changes nothing */
	ur_timer_arm(&t->xp[3], &t->xp[3].tmr.rto_deadline, when + 1000);
	assert_timerfd_at(t, when);
	assert_int_equal(atomic_load(&t->nic.cnt.stat[UR_STAT_TIMER_WAKEUPS]),
			 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_timer_model, setup, teardown),
		cmocka_unit_test_setup_teardown(test_timer_only_due, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			test_regress_arm_wakes_thread_only_by_deadline, setup,
			teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
