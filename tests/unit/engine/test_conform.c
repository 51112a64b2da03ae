/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The corners where uroce answers as mlx5 does rather than as IBA's letter
 * or rxe (docs/deviations.md): errors hardware reports in a completion
 * instead of at post time, which of two errors wins, posting before RTS.
 * Two devices in one process, through the public verbs API.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "te_util.h"

#define T_TMO 3000
#define T_QUIET 50	/* ms in which nothing may arrive */

static struct ibv_ah *ah_to(struct ibv_pd *pd, struct te_side *to)
{
	struct ibv_ah_attr aa;

	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = to->gid;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	return ibv_create_ah(pd, &aa);
}

static int ud_post(struct te_side *s, enum ibv_wr_opcode op,
		   struct ibv_ah *ah, uint32_t qpn, uint64_t wr_id,
		   uint32_t len, unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, len, s->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = flags;
	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = 0x11111111;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		sge.length = 8;
		wr.wr.atomic.remote_addr = (uintptr_t)s->buf;
		wr.wr.atomic.rkey = s->mr->rkey;
	}
	return ibv_post_send(s->qp, &wr, &bad);
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
}

/* A UD QP back from ERR: RESET, then up to RTS again. */
static void ud_restart(struct te_pair *p, int me)
{
	assert_int_equal(te_qp_to_reset(p->s[me].qp), 0);
	assert_int_equal(te_side_to(p, me, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_side_to(p, me, NULL, IBV_QPS_RTR), 0);
	assert_int_equal(te_side_to(p, me, NULL, IBV_QPS_RTS), 0);
}

/*
 * Regression (issue 28 item 1): RDMA, atomics and local operations posted
 * to a UD QP failed ibv_post_send with EINVAL; mlx5 takes them and
 * completes each with IBV_WC_LOC_QP_OP_ERR, unsignalled too, and nothing
 * reaches the peer. Fixed by the commit that added this test.
 */
static void test_regress_ud_foreign_opcode_completes(void **state)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM,
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV,
		IBV_WR_SEND_WITH_INV,
	};
	struct te_pair p;
	struct ibv_ah *ah;
	unsigned int i;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	ah = ah_to(p.s[0].pd, &p.s[1]);
	assert_non_null(ah);
	assert_int_equal(te_post_recv(&p.s[1], 1, 0, 4096), 0);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		assert_int_equal(ud_post(&p.s[0], ops[i], ah,
					 p.s[1].qp->qp_num, 100 + i, 64,
					 i & 1 ? 0 : IBV_SEND_SIGNALED), 0);
		expect_wc(p.s[0].scq, 100 + i, IBV_WC_LOC_QP_OP_ERR);
		assert_int_equal(te_poll_none(p.s[0].scq, 0), 0);
		ud_restart(&p, 0);
	}
	assert_int_equal(te_poll_none(p.s[1].rcq, T_QUIET), 0);
	/* and a SEND still goes through afterwards */
	assert_int_equal(ud_post(&p.s[0], IBV_WR_SEND, ah, p.s[1].qp->qp_num,
				 7, 64, IBV_SEND_SIGNALED), 0);
	expect_wc(p.s[0].scq, 7, IBV_WC_SUCCESS);
	expect_wc(p.s[1].rcq, 1, IBV_WC_SUCCESS);
	ibv_destroy_ah(ah);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 1): a UD SEND whose AH belongs to another PD
 * was refused at post time; it is taken and completes in error
 * (IBV_WC_LOC_QP_OP_ERR, rxe's status), sending nothing.
 */
static void test_regress_ud_ah_other_pd_completes(void **state)
{
	struct te_pair p;
	struct ibv_pd *pd2;
	struct ibv_ah *ah;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	pd2 = ibv_alloc_pd(p.s[0].ctx);
	assert_non_null(pd2);
	ah = ah_to(pd2, &p.s[1]);
	assert_non_null(ah);
	assert_int_equal(te_post_recv(&p.s[1], 1, 0, 4096), 0);
	assert_int_equal(ud_post(&p.s[0], IBV_WR_SEND, ah, p.s[1].qp->qp_num,
				 5, 64, 0), 0);
	expect_wc(p.s[0].scq, 5, IBV_WC_LOC_QP_OP_ERR);
	assert_int_equal(te_poll_none(p.s[1].rcq, T_QUIET), 0);
	ibv_destroy_ah(ah);
	ibv_dealloc_pd(pd2);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 1): a UD SEND larger than the port MTU was
 * completed successfully without being sent (rxe's answer); mlx5 completes
 * it with IBV_WC_LOC_LEN_ERR. One of exactly the MTU still goes.
 */
static void test_regress_ud_over_mtu_len_err(void **state)
{
	struct ibv_port_attr pa;
	struct te_pair p;
	struct ibv_ah *ah;
	uint32_t mtu;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_UD), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	assert_int_equal(ibv_query_port(p.s[0].ctx, 1, &pa), 0);
	mtu = 128u << pa.active_mtu;
	ah = ah_to(p.s[0].pd, &p.s[1]);
	assert_non_null(ah);
	assert_int_equal(te_post_recv(&p.s[1], 1, 0, mtu + 40), 0);
	assert_int_equal(ud_post(&p.s[0], IBV_WR_SEND, ah, p.s[1].qp->qp_num,
				 5, mtu + 1, IBV_SEND_SIGNALED), 0);
	expect_wc(p.s[0].scq, 5, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(te_poll_none(p.s[1].rcq, T_QUIET), 0);
	ud_restart(&p, 0);
	assert_int_equal(ud_post(&p.s[0], IBV_WR_SEND, ah, p.s[1].qp->qp_num,
				 6, mtu, IBV_SEND_SIGNALED), 0);
	expect_wc(p.s[0].scq, 6, IBV_WC_SUCCESS);
	expect_wc(p.s[1].rcq, 1, IBV_WC_SUCCESS);
	ibv_destroy_ah(ah);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 1): posts in RESET (receives and sends), INIT
 * and RTR (sends) failed with EINVAL. As mlx5: they are taken, receives
 * wait for data, sends run once the QP reaches RTS, in order, every byte.
 */
static void test_regress_post_before_rts_runs_at_rts(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_wc wc;
	int i;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	a = &p.s[0];
	b = &p.s[1];
	for (i = 0; i < 3000; i++)
		a->buf[i] = (uint8_t)(i * 7 + 1);
	for (i = 0; i < 3; i++)		/* b in RESET */
		assert_int_equal(te_post_recv(b, 10 + i, 8192 + 1000 * i,
					      1000), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 20, 0, 1000, 0, 0, 0),
			 0);		/* a in RESET */
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 21, 1000, 1000, 0, 0,
				      0), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_RTR), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 22, 2000, 1000, 0, 0,
				      0), 0);
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_RTR), 0);
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_RTS), 0);
	/* nothing runs before RTS */
	assert_int_equal(te_poll_none(a->scq, T_QUIET), 0);
	assert_int_equal(te_poll_none(b->rcq, 0), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_RTS), 0);
	for (i = 0; i < 3; i++) {
		expect_wc(a->scq, 20 + i, IBV_WC_SUCCESS);
		assert_int_equal(te_poll(b->rcq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, 10 + i);
		assert_int_equal(wc.byte_len, 1000);
	}
	assert_memory_equal(b->buf + 8192, a->buf, 3000);
	te_pair_close(&p);
}

/*
 * The other ends of the same choice: what was posted before RTS is flushed
 * (every WR, signalled or not, once) when the QP goes to ERR instead, and
 * dropped without a completion when it goes back to RESET (IBA 10.3.1).
 */
static void test_post_before_rts_flushed_or_dropped(void **state)
{
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct te_pair p;
	struct te_side *a, *b;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	a = &p.s[0];
	b = &p.s[1];
	assert_int_equal(te_post_recv(b, 1, 0, 100), 0);	/* RESET */
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 2, 0, 100, 0, 0, 0), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 3, 0, 100, 0, 0, 0), 0);
	assert_int_equal(te_qp_to_reset(a->qp), 0);
	assert_int_equal(te_poll_none(a->scq, T_QUIET), 0);	/* dropped */
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 4, 0, 100, 0, 0, 0), 0);
	assert_int_equal(ibv_modify_qp(a->qp, &err, IBV_QP_STATE), 0);
	/* RESET goes to INIT only; the receive waits there too */
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(ibv_modify_qp(b->qp, &err, IBV_QP_STATE), 0);
	expect_wc(a->scq, 4, IBV_WC_WR_FLUSH_ERR);
	expect_wc(b->rcq, 1, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(te_poll_none(a->scq, T_QUIET), 0);
	assert_int_equal(te_poll_none(b->rcq, 0), 0);
	te_pair_close(&p);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regress_ud_foreign_opcode_completes),
		cmocka_unit_test(test_regress_ud_ah_other_pd_completes),
		cmocka_unit_test(test_regress_ud_over_mtu_len_err),
		cmocka_unit_test(test_regress_post_before_rts_runs_at_rts),
		cmocka_unit_test(test_post_before_rts_flushed_or_dropped),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
