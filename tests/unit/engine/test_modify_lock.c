/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ibv_modify_qp against the receive path, through the public verbs API
 * with one look inside: the engine's receive lock (engine_priv.h). The
 * receive path runs under it, so whoever holds it must find each QP
 * either before a modify or after all of it. obj/ once published the new
 * state before the engine had loaded the PSNs and path: a packet that
 * came in between met a QP in RTR with its expected PSN still 0 and its
 * flow not loaded, and was NAKed with PSN 0 and an ICRC computed for no
 * flow (seen in ibv_xsrq_pingpong's captures, about 1 run in 100).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_priv.h"
#include "te_util.h"

#define T_TMO 3000
#define HOLD_MS 100

struct connect_job {
	struct te_pair *p;
	struct te_conn_opts o;
	int rc;
};

static void *connect_thread(void *arg)
{
	struct connect_job *j = arg;

	j->rc = te_pair_connect(j->p, &j->o);
	return NULL;
}

static enum ibv_qp_state state_of(struct ibv_qp *qp)
{
	return (enum ibv_qp_state)to_ur_qp(qp)->state;
}

/* While side 1's receive lock is held, its QP keeps the state it had:
 * RESET, though another thread is connecting it (RESET -> INIT -> RTR ->
 * RTS); once the lock is released the connect finishes, with the PSNs it
 * asked for loaded. */
static void test_regress_modify_excluded_by_rx_lock(void **state)
{
	struct te_pair *p = calloc(1, sizeof(*p));
	struct connect_job j = { .p = p };
	struct ur_qp *qp1;
	pthread_mutex_t *rx_lock;
	struct timespec hold = { 0, HOLD_MS * 1000000L };
	enum ibv_qp_state seen;
	struct ibv_wc wc;
	pthread_t t;

	(void)state;
	assert_non_null(p);
	assert_int_equal(te_pair_open(p, IBV_QPT_RC), 0);
	qp1 = to_ur_qp(p->s[1].qp);
	assert_non_null(qp1->xp);
	rx_lock = &ur_xp_shard(qp1->xp)->lock;	/* the QP's receive shard */
	assert_int_equal(state_of(p->s[1].qp), IBV_QPS_RESET);

	j.o.retry_cnt = 7;
	j.o.rnr_retry = 7;
	j.o.psn[0] = 0x2468ac;
	j.o.psn[1] = 0x13579b;
	pthread_mutex_lock(rx_lock);
	assert_int_equal(pthread_create(&t, NULL, connect_thread, &j), 0);
	nanosleep(&hold, NULL);
	seen = state_of(p->s[1].qp);
	pthread_mutex_unlock(rx_lock);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(seen, IBV_QPS_RESET);

	assert_int_equal(j.rc, 0);
	assert_int_equal(state_of(p->s[1].qp), IBV_QPS_RTS);
	pthread_mutex_lock(rx_lock);
	assert_int_equal(qp1->xp->resp.epsn, j.o.psn[0]);
	assert_int_equal(qp1->xp->req.psn, j.o.psn[1]);
	pthread_mutex_unlock(rx_lock);
	/* and it works */
	assert_int_equal(te_post_recv(&p->s[1], 1, 0, 64), 0);
	assert_int_equal(te_post_send(&p->s[0], IBV_WR_SEND, 2, 0, 64, 0, 0,
				      IBV_SEND_SIGNALED), 0);
	assert_int_equal(te_poll(p->s[1].rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(te_poll(p->s[0].scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	te_pair_close(p);
	free(p);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regress_modify_excluded_by_rx_lock),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
