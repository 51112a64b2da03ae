/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An error NAK that reaches the requester after a go-back-N rewound the
 * WQE it names, and before that WQE's first packet went out again (the
 * pace or the window held it): the responder that sent it has moved to
 * ERR and will answer nothing more, so the NAK must complete the WQE with
 * its error. Ignored, the requester resent into silence until
 * RETRY_EXC_ERR (three copies of unit_engine_direct's dereg race at load
 * 10: the responder counted one more err_nak_sent than the requester
 * err_nak_rcvd, every packet delivered).
 *
 * The fake link holds the responder's NAK; the test then delivers it with
 * the requester rewound, in one hold of its sq_lock from dev 0's receive
 * hook, as a receive that found the QP just rewound would.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fake_env.h"

#define T_TMO 5000
#define T_SHORT 3000		/* three packets at MTU 1024: all sent */
#define T_LONG (256u << 10)	/* past the first window: the cursor is
				 * still inside it when the NAK comes */

static uint8_t nak[256];
static uint32_t nak_len;
static atomic_bool nak_held, hook_due, hook_ran;
static struct ur_qp *req_qp;

/* Every NAK dev 1 sends dev 0 is dropped; the first is kept. */
static bool hold_naks(int to, const uint8_t *d, uint32_t len)
{
	/* the AETH follows the 12-byte BTH: its first byte is the syndrome */
	if (to != 0 || fe_pkt_opcode(d) != UR_OPC_RC_ACK || len < 16 ||
	    (d[12] & UR_AETH_TYPE_MASK) != UR_AETH_NAK)
		return false;
	if (!atomic_load(&nak_held) && len <= sizeof(nak)) {
		memcpy(nak, d, len);
		nak_len = len;
		atomic_store(&nak_held, true);
	}
	return true;
}

/* dev 0's receive lock held: the go-back-N, then the NAK, under one
 * sq_lock hold (nothing resent in between) */
static void rewind_then_nak(int dev)
{
	struct ur_pkt pkt;

	if (dev != 0 || !atomic_exchange(&hook_due, false))
		return;
	/* before the NAK: its completion may be polled at once */
	atomic_store(&hook_ran, true);
	pthread_mutex_lock(&req_qp->sq_lock);
	ur_req_rewind(req_qp);
	if (ur_pkt_parse(nak, nak_len, &pkt) == UR_DROP_NONE)
		ur_comp_rx(req_qp, &pkt);
	pthread_mutex_unlock(&req_qp->sq_lock);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static void nak_after_rewind(uint32_t len)
{
	struct fe_side a, b;
	struct ur_send_wqe *w;
	struct ibv_wc wc;
	uint8_t *src = calloc(1, len), *dst = calloc(1, len);
	struct ur_mr *smr, *dmr;
	uint64_t nak_rcvd0;

	assert_non_null(src);
	assert_non_null(dst);
	fe_set_fault(NULL);
	atomic_store(&nak_held, false);
	atomic_store(&hook_ran, false);
	fe_side_open(&a, 0, IBV_QPT_RC);
	fe_side_open(&b, 1, IBV_QPT_RC);
	smr = fe_reg_mr(a.dev, &a.pd, src, len, IBV_ACCESS_LOCAL_WRITE);
	dmr = fe_reg_mr(b.dev, &b.pd, dst, len,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	/* 268 ms x 2 before RETRY_EXC: the NAK comes long before */
	fe_connect(a.qp, b.qp, 0xfffffe, 0x100, 16, 1, 7);
	req_qp = a.qp;
	nak_rcvd0 = atomic_load(&a.dev->nic->cnt.stat[UR_STAT_ERR_NAK_RCVD]);
	fe_set_filter(hold_naks);

	/* a WRITE through a key the responder never gave: it NAKs the
	 * first packet with a remote access error and goes to ERR */
	w = fe_sq_next(a.qp);
	w->wr_id = 42;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = len;
	w->sge[0].addr = (uintptr_t)src;
	w->sge[0].length = len;
	w->sge[0].lkey = smr->ibmr.lkey;
	w->rdma.remote_addr = (uintptr_t)dst;
	w->rdma.rkey = dmr->ibmr.rkey ^ 0x80;
	fe_sq_post(a.qp);
	for (int i = 0; i < 400 && !atomic_load(&nak_held); i++)
		sleep_ms(5);
	assert_true(atomic_load(&nak_held));

	fe_set_rx_hook(rewind_then_nak);
	atomic_store(&hook_due, true);
	fe_inject(0, nak, nak_len);	/* wakes dev 0's receive path */
	assert_int_equal(fe_cq_wait(&a.scq, &wc, T_TMO), 1);
	assert_true(atomic_load(&hook_ran));
	assert_int_equal(wc.wr_id, 42);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(atomic_load(&a.dev->nic->cnt.stat[UR_STAT_ERR_NAK_RCVD]) -
				 nak_rcvd0, 1);
	assert_int_equal(fe_set_filter(NULL), 1);	/* the one NAK */
	fe_set_rx_hook(NULL);

	fe_dereg_mr(a.dev, smr);
	fe_dereg_mr(b.dev, dmr);
	fe_side_close(&a);
	fe_side_close(&b);
	free(src);
	free(dst);
}

static void test_regress_nak_after_rewind(void **state)
{
	nak_after_rewind(T_SHORT);
}

/* the cursor never left the WQE: the rewind must still count it as sent */
static void test_regress_nak_after_rewind_inside(void **state)
{
	nak_after_rewind(T_LONG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regress_nak_after_rewind),
		cmocka_unit_test(test_regress_nak_after_rewind_inside),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
