/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UROCE_BUSY_POLL=1: the progress thread polls for a while after traffic
 * and then sleeps as without it. Regression: it spun for good (with
 * sched_yield), so on 2 cores a 64 B ib_write_lat pair was four spinners
 * and every round trip waited for a scheduler tick (4-10 ms). An idle
 * busy-polling thread now uses next to no CPU, and WRITEs still complete
 * with no application polling (the thread is woken as a sleeping one).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_env.h"
#include "util/time.h"

#define T_TMO_MS 5000
#define T_IDLE_NS 300000000ull

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

static uint64_t thread_cpu_ns(pthread_t t)
{
	struct timespec ts;
	clockid_t c;

	assert_int_equal(pthread_getcpuclockid(t, &c), 0);
	assert_int_equal(clock_gettime(c, &ts), 0);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void write_once(struct fe_side *me, struct fe_side *peer, uint64_t id)
{
	struct ur_send_wqe *w = fe_sq_next(me->qp);
	struct ibv_wc wc;

	w->wr_id = id;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = 64;
	w->sge[0].addr = (uintptr_t)me->buf;
	w->sge[0].length = 64;
	w->sge[0].lkey = me->mr->ibmr.lkey;
	w->rdma.remote_addr = (uintptr_t)peer->buf;
	w->rdma.rkey = peer->mr->ibmr.rkey;
	fe_sq_post(me->qp);
	/* no poll_cq runs the engine here: the progress threads do it all */
	assert_int_equal(fe_cq_poll(&me->scq, &wc, T_TMO_MS), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, id);
}

static void test_regress_idle_busy_poll_sleeps(void **state)
{
	struct t_pair *p = *state;
	struct ur_nic *nic = p->s[1].dev->nic;
	struct timespec idle = { 0, (long)T_IDLE_NS };
	uint64_t cpu0, cpu;
	int i;

	assert_true(nic->busy_poll);
	for (i = 0; i < 100; i++)
		write_once(&p->s[0], &p->s[1], (uint64_t)i + 1);
	cpu0 = thread_cpu_ns(nic->thread);
	nanosleep(&idle, NULL);
	cpu = thread_cpu_ns(nic->thread) - cpu0;
	printf("# idle busy-polling thread: %llu us of CPU in %llu ms\n",
	       (unsigned long long)(cpu / 1000),
	       (unsigned long long)(T_IDLE_NS / 1000000));
	/* spinning for good it takes whatever the scheduler gives it, on
	 * a loaded machine still tens of ms of 300 */
	assert_true(cpu < T_IDLE_NS / 30);
	/* and after the idle time it is woken for traffic again */
	for (i = 0; i < 10; i++)
		write_once(&p->s[0], &p->s[1], (uint64_t)i + 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(
			test_regress_idle_busy_poll_sleeps, setup, teardown),
	};
	int rc;

	/* read once, when the first device opens */
	setenv("UROCE_BUSY_POLL", "1", 1);
	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
