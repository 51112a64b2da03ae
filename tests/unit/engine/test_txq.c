/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Packets leave after the QP's sq_lock is released (engine/tx.c's txq,
 * send.c's ur_send_unlock()), on the fake link. A sender is held inside
 * its "sendmmsg" (fe_set_send_hook: its datagrams delivered, the call not
 * returned, as a thread preempted in the system call): meanwhile the ACK
 * of what it sent is processed and another thread posts, neither waiting
 * for it; what they built leaves after its batch, in PSN order, and every
 * WQE completes exactly once. A UD send completes only once its packet
 * left, and a move to ERR waits for the batch in flight.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fake_env.h"
#include "util/time.h"

#define T_TMO 5000
#define T_PSN 0x100

struct t_pair {
	struct fe_side a, b;
};

/* ---- the held sender ---- */

static _Atomic int hold_armed;	/* the next send of device 0 is held */
static _Atomic int hold_in;	/* a sender is held now */
static _Atomic int hold_go;	/* let it return */

static void hold_hook(int dev, unsigned int n)
{
	int one = 1;

	(void)n;
	if (dev != 0 || !atomic_compare_exchange_strong(&hold_armed, &one, 0))
		return;
	atomic_store(&hold_in, 1);
	/* bounded: a test that failed to release still ends */
	for (int i = 0; i < 20000 && !atomic_load(&hold_go); i++)
		usleep(500);
	atomic_store(&hold_in, 0);
}

static void hold_arm(void)
{
	atomic_store(&hold_go, 0);
	atomic_store(&hold_in, 0);
	atomic_store(&hold_armed, 1);
	fe_set_send_hook(hold_hook);
}

static bool hold_wait_in(void)
{
	for (int i = 0; i < 10000 && !atomic_load(&hold_in); i++)
		usleep(200);
	return atomic_load(&hold_in);
}

static void hold_release(void)
{
	atomic_store(&hold_go, 1);
	for (int i = 0; i < 10000 && atomic_load(&hold_in); i++)
		usleep(200);
	atomic_store(&hold_armed, 0);
}

/* ---- the requests device 1 received, in order ---- */

#define T_MAX_REC 64
static uint32_t rec_psn[T_MAX_REC];
static unsigned int rec_n;

static void tap_requests(int to, const uint8_t *d, uint32_t len)
{
	(void)len;
	if (to == 1 && ur_op_is_request(fe_pkt_opcode(d)) &&
	    rec_n < T_MAX_REC)
		rec_psn[rec_n++] = fe_pkt_psn(d);
}

/* what the tap recorded so far (the tap runs under the fake network's
 * lock: reinstalling it orders the reads) */
static unsigned int tap_count(void)
{
	unsigned int n;

	fe_set_tap(NULL);
	n = rec_n;
	fe_set_tap(tap_requests);
	return n;
}

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_set_fault(NULL);
	fe_set_filter(NULL);
	fe_set_tap(NULL);
	fe_set_send_hook(NULL);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_set_send_hook(NULL);
	fe_set_tap(NULL);
	atomic_store(&hold_go, 1);
	fe_side_close(&p->a);
	fe_side_close(&p->b);
	free(p);
	return 0;
}

static void rc_open(struct t_pair *p)
{
	fe_side_open(&p->a, 0, IBV_QPT_RC);
	fe_side_open(&p->b, 1, IBV_QPT_RC);
	fe_connect(p->a.qp, p->b.qp, T_PSN, 0x200, 14, 7, 7);
}

/* A one-packet WRITE of 512 bytes at offset off, both sides. */
static void wqe_write(struct fe_side *a, struct fe_side *b, uint64_t id,
		      uint32_t off)
{
	struct ur_send_wqe *w = fe_sq_next(a->qp);

	for (uint32_t i = 0; i < 512; i++)
		a->buf[off + i] = (uint8_t)(id * 13 + i);
	w->wr_id = id;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = 512;
	w->sge[0].addr = (uintptr_t)a->buf + off;
	w->sge[0].length = 512;
	w->sge[0].lkey = a->mr->ibmr.lkey;
	w->rdma.remote_addr = (uintptr_t)b->buf + off;
	w->rdma.rkey = b->mr->ibmr.rkey;
}

static void *post_thread(void *arg)
{
	fe_sq_post(arg);
	return NULL;
}

/* Rings qp's doorbell from a thread of its own (*t) and returns once that
 * thread's send is held (hold_arm() first); fails the test otherwise. */
static void post_held(struct ur_qp *qp, pthread_t *t)
{
	assert_int_equal(pthread_create(t, NULL, post_thread, qp), 0);
	if (!hold_wait_in()) {
		hold_release();
		pthread_join(*t, NULL);
		fail_msg("the send was never held");
	}
}

/* Requester's cursor of the completer, read under sq_lock within ms:
 * false when sq_lock stayed held that long. */
static bool comp_psn_within(struct ur_qp *qp, int ms, uint32_t *psn)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	ts.tv_sec += ms / 1000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	if (pthread_mutex_timedlock(&qp->sq_lock, &ts))
		return false;
	*psn = qp->xp->comp.psn;
	pthread_mutex_unlock(&qp->sq_lock);
	return true;
}

/*
 * WRITE 1 leaves from a thread held inside its send. Its ACK is
 * processed meanwhile (the completer's cursor moves: sq_lock was free),
 * WRITEs 2 and 3 are posted without waiting and do not overtake the held
 * batch; once the sender returns they leave, in PSN order, and each WQE
 * completes once, every byte in place.
 */
static void test_ack_while_sending(void **state)
{
	struct t_pair *p = *state;
	uint32_t psn = 0;
	unsigned int before, i;
	bool acked = false, free_lock;
	struct ibv_wc wc;
	pthread_t t;
	uint64_t t0;

	rc_open(p);
	rec_n = 0;
	fe_set_tap(tap_requests);
	hold_arm();
	wqe_write(&p->a, &p->b, 1, 0);
	post_held(p->a.qp, &t);
	/* the ACK of WRITE 1 comes back while its sender is held */
	t0 = ur_now_ns();
	do {
		free_lock = comp_psn_within(p->a.qp, 100, &psn);
		acked = free_lock && psn == ((T_PSN + 1) & UR_PSN_MASK);
		if (!acked)
			usleep(200);
	} while (!acked && ur_now_ns() - t0 < 2000000000ull);
	if (acked) {
		/* two more, posted by this thread: nothing to wait for */
		wqe_write(&p->a, &p->b, 2, 1024);
		fe_sq_post(p->a.qp);
		wqe_write(&p->a, &p->b, 3, 2048);
		fe_sq_post(p->a.qp);
	}
	before = tap_count();
	free_lock = atomic_load(&hold_in);	/* still held after all that */
	hold_release();
	pthread_join(t, NULL);
	if (!acked)
		fail_msg("ACK not processed while the send was held (psn %u)",
			 psn);
	assert_true(free_lock);
	assert_int_equal(before, 1);	/* 2 and 3 waited for the batch */
	for (i = 1; i <= 3; i++) {
		assert_int_equal(fe_cq_poll(&p->a.scq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
	assert_int_equal(fe_cq_poll(&p->a.scq, &wc, 50), 0);
	assert_memory_equal(p->b.buf, p->a.buf, 512);
	assert_memory_equal(p->b.buf + 1024, p->a.buf + 1024, 512);
	assert_memory_equal(p->b.buf + 2048, p->a.buf + 2048, 512);
	fe_set_tap(NULL);
	assert_true(rec_n >= 3);
	for (i = 0; i < 3; i++)
		assert_int_equal(rec_psn[i], (T_PSN + i) & UR_PSN_MASK);
}

/* A UD send's CQE says its packet left: none while the sender is held. */
static void test_ud_completes_after_send(void **state)
{
	struct t_pair *p = *state;
	struct ur_send_wqe *w;
	struct ur_ah ah;
	struct ibv_wc wc;
	bool early;
	pthread_t t;
	int k;

	fe_side_open(&p->a, 0, IBV_QPT_UD);
	fe_side_open(&p->b, 1, IBV_QPT_UD);
	for (k = 0; k < 2; k++) {
		struct ur_qp *qp = k ? p->b.qp : p->a.qp;

		qp->attr.qkey = 0x11111111;
		fe_qp_modify(qp, IBV_QPS_INIT, 0);
		fe_qp_modify(qp, IBV_QPS_RTR, 0);
		fe_qp_modify(qp, IBV_QPS_RTS, 0);
	}
	fe_rq_post(p->b.qp, 7, p->b.buf, 4096, p->b.mr->ibmr.lkey);
	memset(&ah, 0, sizeof(ah));
	ah.pd = p->a.qp->pd;
	ah.av.dest = p->b.dev->gids[0].addr;
	fe_set_port(&ah.av.dest);
	w = fe_sq_next(p->a.qp);
	w->wr_id = 9;
	w->opcode = IBV_WR_SEND;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = 256;
	w->sge[0].addr = (uintptr_t)p->a.buf;
	w->sge[0].length = 256;
	w->sge[0].lkey = p->a.mr->ibmr.lkey;
	w->ud.ah = &ah;
	w->ud.remote_qpn = ur_qp_num(p->b.qp);
	w->ud.remote_qkey = 0x11111111;
	hold_arm();
	post_held(p->a.qp, &t);
	early = fe_cq_wait(&p->a.scq, &wc, 100) != 0;
	hold_release();
	pthread_join(t, NULL);
	assert_false(early);
	assert_int_equal(fe_cq_wait(&p->a.scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(fe_cq_wait(&p->a.scq, &wc, 50), 0);
	assert_int_equal(fe_cq_poll(&p->b.rcq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(p->b.buf + 40, p->a.buf, 256);
}

static void *to_err_thread(void *arg)
{
	fe_qp_modify(arg, IBV_QPS_ERR, 0);
	return NULL;
}

/*
 * The move to ERR flushes WQEs whose memory their packets point into: it
 * waits for the batch in flight, and every WQE completes exactly once.
 */
static void test_err_waits_for_batch(void **state)
{
	struct t_pair *p = *state;
	unsigned int seen[4] = { 0 };
	struct ibv_wc wc;
	pthread_t t, e;
	bool early;

	rc_open(p);
	hold_arm();
	wqe_write(&p->a, &p->b, 1, 0);
	post_held(p->a.qp, &t);
	wqe_write(&p->a, &p->b, 2, 1024);
	fe_sq_post(p->a.qp);	/* left to the held sender */
	assert_int_equal(pthread_create(&e, NULL, to_err_thread, p->a.qp), 0);
	usleep(100000);
	/* WRITE 2 was not flushed while its packet waited to leave */
	early = false;
	while (fe_cq_wait(&p->a.scq, &wc, 0)) {
		early |= wc.wr_id == 2;
		seen[wc.wr_id & 3]++;
	}
	hold_release();
	pthread_join(t, NULL);
	pthread_join(e, NULL);
	assert_false(early);
	while (fe_cq_wait(&p->a.scq, &wc, 200))
		seen[wc.wr_id & 3]++;
	/* WRITE 1 acknowledged or flushed, WRITE 2 flushed: once each */
	assert_int_equal(seen[1], 1);
	assert_int_equal(seen[2], 1);
	assert_int_equal(seen[0] + seen[3], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_ack_while_sending, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_ud_completes_after_send,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_err_waits_for_batch,
						setup, teardown),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
