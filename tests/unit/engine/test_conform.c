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
#include <stdbool.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/shm.h>

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
 * Regression (issue 28 item 1): sends posted in INIT and RTR failed with
 * EINVAL. As mlx5: they are taken and run once the QP reaches RTS, in
 * order, every byte; receives posted in INIT wait for data. RESET still
 * refuses both (IBA C10-96; rdma-core's own test_qpex checks it).
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
	assert_int_equal(te_post_recv(b, 9, 0, 1000), EINVAL);	/* RESET */
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 19, 0, 1000, 0, 0, 0),
			 EINVAL);
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_INIT), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(te_post_recv(b, 10 + i, 8192 + 1000 * i,
					      1000), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 20, 0, 1000, 0, 0, 0),
			 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 21, 1000, 1000, 0, 0,
				      0), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_RTR), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 22, 2000, 1000, 0, 0,
				      0), 0);
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
	assert_int_equal(te_side_to(&p, 1, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_recv(b, 1, 0, 100), 0);
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 3, 0, 100, 0, 0, 0), 0);
	assert_int_equal(te_qp_to_reset(a->qp), 0);
	assert_int_equal(te_poll_none(a->scq, T_QUIET), 0);	/* dropped */
	assert_int_equal(te_side_to(&p, 0, NULL, IBV_QPS_INIT), 0);
	assert_int_equal(te_post_send(a, IBV_WR_SEND, 4, 0, 100, 0, 0, 0), 0);
	assert_int_equal(ibv_modify_qp(a->qp, &err, IBV_QP_STATE), 0);
	assert_int_equal(ibv_modify_qp(b->qp, &err, IBV_QP_STATE), 0);
	expect_wc(a->scq, 4, IBV_WC_WR_FLUSH_ERR);
	expect_wc(b->rcq, 1, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(te_poll_none(a->scq, T_QUIET), 0);
	assert_int_equal(te_poll_none(b->rcq, 0), 0);
	te_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Which error wins (item 2)                                            */
/* ------------------------------------------------------------------ */

static int rc_post(struct te_side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		   uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		   unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf, len, lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = flags;
	if (op == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = 1;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(s->qp, &wr, &bad);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* Both QPs back to RTS (o: NULL for the defaults), their CQs emptied. */
static void rc_restart(struct te_pair *p, const struct te_conn_opts *o)
{
	struct ibv_wc wc;
	int i;

	for (i = 0; i < 2; i++) {
		assert_int_equal(te_qp_to_reset(p->s[i].qp), 0);
		while (ibv_poll_cq(p->s[i].scq, 1, &wc) > 0 ||
		       ibv_poll_cq(p->s[i].rcq, 1, &wc) > 0)
			;
	}
	assert_int_equal(te_pair_connect(p, o), 0);
}

/*
 * A local error, found before anything is sent: its status, the peer
 * untouched (its QP still in RTS, its memory as it was).
 */
static void expect_local_err(struct te_pair *p, uint64_t wr_id,
			     enum ibv_wc_status st)
{
	struct te_side *b = &p->s[1];
	uint8_t before[64];

	memcpy(before, b->buf, sizeof(before));
	expect_wc(p->s[0].scq, wr_id, st);
	assert_int_equal(te_poll_none(p->s[0].scq, T_QUIET), 0);
	assert_int_equal(qp_state(b->qp), IBV_QPS_RTS);
	assert_memory_equal(b->buf, before, sizeof(before));
	rc_restart(p, NULL);
}

/*
 * Regression (issue 28 item 2): a READ or atomic with both a bad local key
 * and a bad remote key, and an atomic with a bad local key aimed at a
 * misaligned address, reported the remote error; hardware finds the local
 * one before sending (IBV_WC_LOC_PROT_ERR) and the peer sees nothing. An
 * atomic whose local buffer is not 8 bytes is taken at post time and
 * completes with IBV_WC_LOC_LEN_ERR, as on mlx5, before its key is looked
 * at. Unsignalled, each still completes.
 */
static void test_regress_local_error_wins(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	uint32_t badl, badr;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	badl = a->mr->lkey ^ 0x5a5a00;
	badr = b->mr->rkey ^ 0x5a5a00;
	memset(b->buf, 0x33, 64);
	assert_int_equal(rc_post(a, IBV_WR_RDMA_READ, 1, 64, badl,
				 (uintptr_t)b->buf, badr, 0), 0);
	expect_local_err(&p, 1, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(rc_post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, 2, 8, badl,
				 (uintptr_t)b->buf, badr, 0), 0);
	expect_local_err(&p, 2, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(rc_post(a, IBV_WR_ATOMIC_CMP_AND_SWP, 3, 8, badl,
				 (uintptr_t)b->buf + 4, b->mr->rkey,
				 IBV_SEND_SIGNALED), 0);
	expect_local_err(&p, 3, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(rc_post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, 4,
				 a->mr->lkey, (uintptr_t)b->buf, b->mr->rkey,
				 0), 0);
	expect_local_err(&p, 4, IBV_WC_LOC_LEN_ERR);
	assert_int_equal(rc_post(a, IBV_WR_ATOMIC_CMP_AND_SWP, 5, 16, badl,
				 (uintptr_t)b->buf + 4, badr, 0), 0);
	expect_local_err(&p, 5, IBV_WC_LOC_LEN_ERR);
	/* a WRITE's bad lkey too: nothing leaves */
	assert_int_equal(rc_post(a, IBV_WR_RDMA_WRITE, 6, 64, badl,
				 (uintptr_t)b->buf, badr, 0), 0);
	expect_local_err(&p, 6, IBV_WC_LOC_PROT_ERR);
	/* and a good atomic still works afterwards */
	assert_int_equal(rc_post(a, IBV_WR_ATOMIC_FETCH_AND_ADD, 7, 8,
				 a->mr->lkey, (uintptr_t)b->buf, b->mr->rkey,
				 IBV_SEND_SIGNALED), 0);
	expect_wc(a->scq, 7, IBV_WC_SUCCESS);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 2): a WRITE with immediate through a bad rkey
 * completed the responder's receive with IBV_WC_REM_ACCESS_ERR (the
 * requester's status, as rxe); IBA's Local Access Error is that case,
 * and mlx5 reports it. The requester: IBV_WC_REM_ACCESS_ERR; the target
 * buffer untouched.
 */
static void test_regress_write_imm_bad_rkey_statuses(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	memset(b->buf, 0x44, 64);
	memset(a->buf, 0x55, 64);
	assert_int_equal(te_post_recv(b, 9, 4096, 64), 0);
	assert_int_equal(rc_post(a, IBV_WR_RDMA_WRITE_WITH_IMM, 1, 64,
				 a->mr->lkey, (uintptr_t)b->buf,
				 b->mr->rkey ^ 0x5a5a00, IBV_SEND_SIGNALED), 0);
	expect_wc(a->scq, 1, IBV_WC_REM_ACCESS_ERR);
	expect_wc(b->rcq, 9, IBV_WC_LOC_ACCESS_ERR);
	assert_int_equal(b->buf[0], 0x44);
	assert_int_equal(b->buf[63], 0x44);
	te_pair_close(&p);
}

static void send_inv(struct te_side *a, uint64_t wr_id, uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)a->buf, 64, a->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rkey;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), 0);
}

/*
 * A failed SEND with Invalidate: the responder's receive completes in
 * error and its QP fails (class J), and the requester hears nothing: no
 * NAK (IBA 9.9.6.3) and no ACK, so no completion until its retries run
 * out (IBV_WC_RETRY_EXC_ERR), as on mlx5.
 */
static void expect_send_inv_failed(struct te_pair *p,
				   const struct te_conn_opts *o,
				   uint64_t wr_id)
{
	struct ibv_wc wc;

	expect_wc(p->s[1].rcq, 9, IBV_WC_REM_INV_REQ_ERR);
	/* RETRY_EXC is itself the proof that neither an ACK nor a NAK came
	 * (either would have completed the WR first); a quiet window before
	 * it raced the retries' end on a loaded host */
	assert_int_equal(te_poll(p->s[0].scq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	rc_restart(p, o);
}

/* A second RC QP on side me's PD and CQs, in RTS (aimed at the other
 * side's QP, though it never sends): windows bound through it are not
 * the first QP's. */
static struct ibv_qp *other_qp(struct te_pair *p, int me)
{
	struct te_side *s = &p->s[me];
	struct ibv_qp *qp = te_rc_qp(s->pd, s->scq, s->rcq, 8);
	struct te_pair q;
	int i;

	assert_non_null(qp);
	q = *p;
	q.s[me].qp = qp;
	for (i = IBV_QPS_INIT; i <= IBV_QPS_RTS; i++)
		assert_int_equal(te_side_to(&q, me, NULL,
					    (enum ibv_qp_state)i), 0);
	return qp;
}

/*
 * Regression (issue 28 item 2): a SEND with Invalidate whose rkey is bad,
 * names a type 1 window, or names a type 2 window bound through another
 * QP failed at the responder, but the requester was ACKed and completed
 * it successfully.
 */
static void test_regress_send_inv_failure_not_acked(void **state)
{
	/* retries that run out soon, but not within T_QUIET */
	struct te_conn_opts o = { .timeout = 14, .retry_cnt = 1,
				  .rnr_retry = 7, .psn = { 5, 6 } };
	struct ibv_mw_bind bind;
	struct ibv_send_wr wr, *bad;
	struct ibv_mw *mw1, *mw2;
	struct ibv_mr *bmr;
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_qp *qp2;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, &o), 0);
	a = &p.s[0];
	b = &p.s[1];
	/* a bad rkey */
	assert_int_equal(te_post_recv(b, 9, 0, 4096), 0);
	send_inv(a, 1, b->mr->rkey ^ 0x5a5a00);
	expect_send_inv_failed(&p, &o, 1);

	/* a type 1 window's rkey: type 1 windows cannot be invalidated */
	bmr = ibv_reg_mr(b->pd, b->buf + 8192, 4096, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_MW_BIND);
	assert_non_null(bmr);
	mw1 = ibv_alloc_mw(b->pd, IBV_MW_TYPE_1);
	assert_non_null(mw1);
	memset(&bind, 0, sizeof(bind));
	bind.wr_id = 70;
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = bmr;
	bind.bind_info.addr = (uintptr_t)b->buf + 8192;
	bind.bind_info.length = 4096;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_bind_mw(b->qp, mw1, &bind), 0);
	expect_wc(b->scq, 70, IBV_WC_SUCCESS);
	assert_int_equal(te_post_recv(b, 9, 0, 4096), 0);
	send_inv(a, 2, mw1->rkey);
	expect_send_inv_failed(&p, &o, 2);

	/* a type 2 window bound through another QP of the same PD */
	qp2 = other_qp(&p, 1);
	mw2 = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	assert_non_null(mw2);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 71;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = ibv_inc_rkey(mw2->rkey);
	wr.bind_mw.bind_info = bind.bind_info;
	assert_int_equal(ibv_post_send(qp2, &wr, &bad), 0);
	expect_wc(b->scq, 71, IBV_WC_SUCCESS);
	assert_int_equal(te_post_recv(b, 9, 0, 4096), 0);
	send_inv(a, 3, wr.bind_mw.rkey);
	expect_send_inv_failed(&p, &o, 3);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
	assert_int_equal(ibv_dealloc_mw(mw2), 0);
	assert_int_equal(ibv_dealloc_mw(mw1), 0);
	assert_int_equal(ibv_dereg_mr(bmr), 0);
	te_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Memory windows (item 3)                                              */
/* ------------------------------------------------------------------ */

/* Posts a type 2 bind of [off, off + len) of mr on qp (no wait). */
static int bind2(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mr *mr,
		 uint64_t wr_id, uint32_t key, uint32_t off, uint32_t len,
		 unsigned int flags)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = (mw->rkey & ~0xffu) | (key & 0xffu);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)mr->addr + off;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ;
	return ibv_post_send(qp, &wr, &bad);
}

static struct ibv_mr *mw_mr(struct te_side *s)
{
	struct ibv_mr *mr = ibv_reg_mr(s->pd, s->buf + 8192, 8192,
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE |
				       IBV_ACCESS_REMOTE_READ |
				       IBV_ACCESS_MW_BIND);

	assert_non_null(mr);
	return mr;
}

/*
 * Issue 28 item 3: a type 2 window bound again while bound
 * (through its own QP with another key, or through another QP) must fail
 * with IBV_WC_MW_BIND_ERR (IBA table 78), signalled or not, and leave the
 * first binding working. The issue saw the requester wait forever; 4240ce6
 * already passes this (own QP, another QP, READs through the window in
 * flight), so it pins the answer rather than a fix.
 */
static void test_type2_rebind_fails(void **state)
{
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_qp *qp2;
	uint32_t rkey;
	int i;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	mr = mw_mr(b);
	mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	assert_int_equal(bind2(b->qp, mw, mr, 1, 0x11, 0, 4096,
			       IBV_SEND_SIGNALED), 0);
	expect_wc(b->scq, 1, IBV_WC_SUCCESS);
	rkey = mw->rkey;
	/* through another QP of the PD */
	qp2 = other_qp(&p, 1);
	assert_int_equal(bind2(qp2, mw, mr, 2, 0x22, 0, 4096,
			       IBV_SEND_SIGNALED), 0);
	expect_wc(b->scq, 2, IBV_WC_MW_BIND_ERR);
	assert_int_equal(mw->rkey, rkey);
	/* the first binding still works */
	memset(a->buf, 0x66, 64);
	assert_int_equal(rc_post(a, IBV_WR_RDMA_WRITE, 4, 64, a->mr->lkey,
				 (uintptr_t)b->buf + 8192, rkey,
				 IBV_SEND_SIGNALED), 0);
	expect_wc(a->scq, 4, IBV_WC_SUCCESS);
	assert_int_equal(b->buf[8192 + 63], 0x66);
	/* through its own QP, another key, unsignalled, while the peer
	 * READs through the window (rdma-unit-test's MwType2AdvancedTest) */
	for (i = 0; i < 16; i++)
		assert_int_equal(rc_post(a, IBV_WR_RDMA_READ, 100 + i, 4096,
					 a->mr->lkey, (uintptr_t)b->buf + 8192,
					 rkey, IBV_SEND_SIGNALED), 0);
	assert_int_equal(bind2(b->qp, mw, mr, 3, 0x33, 0, 4096, 0), 0);
	expect_wc(b->scq, 3, IBV_WC_MW_BIND_ERR);
	assert_int_equal(mw->rkey, rkey);
	assert_int_equal(te_poll_none(b->scq, T_QUIET), 0);
	/* every READ completes once, in order; once the owner's QP has
	 * failed, they end in error (RETRY_EXC_ERR, then flushes) */
	for (i = 0; i < 16; i++) {
		struct ibv_wc wc;

		assert_int_equal(te_poll(a->scq, &wc, 10000), 1);
		assert_int_equal(wc.wr_id, 100 + i);
		if (wc.status != IBV_WC_SUCCESS)
			assert_true(wc.status == IBV_WC_RETRY_EXC_ERR ||
				    wc.status == IBV_WC_WR_FLUSH_ERR);
	}
	assert_int_equal(te_poll_none(a->scq, 0), 0);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 3): a zero-length bind of a type 2 window
 * succeeded (an empty window); IBA and mlx5 forbid it: IBV_WC_MW_BIND_ERR.
 */
static void test_regress_type2_zero_length_bind_fails(void **state)
{
	struct te_pair p;
	struct ibv_mr *mr;
	struct ibv_mw *mw;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	mr = mw_mr(&p.s[1]);
	mw = ibv_alloc_mw(p.s[1].pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	assert_int_equal(bind2(p.s[1].qp, mw, mr, 1, 0x11, 0, 0,
			       IBV_SEND_SIGNALED), 0);
	expect_wc(p.s[1].scq, 1, IBV_WC_MW_BIND_ERR);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 3): LOCAL_INV of a type 2 window through a QP
 * it is not bound to failed with IBV_WC_LOC_PROT_ERR; mlx5 (and the suites
 * written against it) say IBV_WC_MW_BIND_ERR. The window stays bound.
 */
static void test_regress_local_inv_other_qp(void **state)
{
	struct ibv_send_wr wr, *bad;
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_mr *mr;
	struct ibv_mw *mw;
	struct ibv_qp *qp2;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	mr = mw_mr(b);
	mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	assert_int_equal(bind2(b->qp, mw, mr, 1, 0x11, 0, 4096,
			       IBV_SEND_SIGNALED), 0);
	expect_wc(b->scq, 1, IBV_WC_SUCCESS);
	qp2 = other_qp(&p, 1);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 2;
	wr.opcode = IBV_WR_LOCAL_INV;
	wr.invalidate_rkey = mw->rkey;
	assert_int_equal(ibv_post_send(qp2, &wr, &bad), 0);	/* unsignalled */
	expect_wc(b->scq, 2, IBV_WC_MW_BIND_ERR);
	memset(a->buf, 0x77, 64);
	assert_int_equal(rc_post(a, IBV_WR_RDMA_WRITE, 3, 64, a->mr->lkey,
				 (uintptr_t)b->buf + 8192, mw->rkey,
				 IBV_SEND_SIGNALED), 0);
	expect_wc(a->scq, 3, IBV_WC_SUCCESS);
	assert_int_equal(b->buf[8192], 0x77);
	assert_int_equal(ibv_destroy_qp(qp2), 0);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	te_pair_close(&p);
}

/*
 * Regression (issue 28 item 3): ibv_bind_mw of a type 1 window refused an
 * MR or a window whose handle the program had garbled (ENOENT). On mlx5
 * the bind is a post that never reads handles: it is taken and the window
 * works (rdma-unit-test's MwGeneralTest.BindInvalidMr/BindInvalidMw).
 * A pointer that is not a live object of ours is still refused.
 */
static void test_regress_bind_type1_garbled_handles(void **state)
{
	struct ibv_mw_bind bind;
	struct te_pair p;
	struct te_side *a, *b;
	struct ibv_mr *mr, fake;
	struct ibv_mw *mw;
	int i;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	assert_int_equal(te_pair_connect(&p, NULL), 0);
	a = &p.s[0];
	b = &p.s[1];
	mr = mw_mr(b);
	mw = ibv_alloc_mw(b->pd, IBV_MW_TYPE_1);
	assert_non_null(mw);
	memset(&bind, 0, sizeof(bind));
	bind.send_flags = IBV_SEND_SIGNALED;
	bind.bind_info.mr = mr;
	bind.bind_info.addr = (uintptr_t)mr->addr;
	bind.bind_info.length = 4096;
	bind.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	for (i = 0; i < 2; i++) {
		uint32_t *h = i ? &mw->handle : &mr->handle;

		*h ^= 0xdeadbeef;
		bind.wr_id = 10 + i;
		assert_int_equal(ibv_bind_mw(b->qp, mw, &bind), 0);
		*h ^= 0xdeadbeef;
		expect_wc(b->scq, 10 + i, IBV_WC_SUCCESS);
		memset(a->buf, 0x20 + i, 64);
		assert_int_equal(rc_post(a, IBV_WR_RDMA_WRITE, 20 + i, 64,
					 a->mr->lkey, (uintptr_t)mr->addr,
					 mw->rkey, IBV_SEND_SIGNALED), 0);
		expect_wc(a->scq, 20 + i, IBV_WC_SUCCESS);
		assert_int_equal(b->buf[8192 + 63], 0x20 + i);
	}
	fake = *mr;			/* not one of ours */
	bind.bind_info.mr = &fake;
	assert_int_not_equal(ibv_bind_mw(b->qp, mw, &bind), 0);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	te_pair_close(&p);
}

/* ------------------------------------------------------------------ */
/* Fresh memory, one device (item 8a)                                   */
/* ------------------------------------------------------------------ */

/* A page of memory the way allocators get it: 0 private anonymous, 1
 * shared anonymous, 2 memfd, 3 System V shared memory, 4 posix_memalign
 * of 64 bytes. NULL when this machine cannot. */
static void *fresh_page(int how)
{
	void *p = NULL;
	int fd, id;

	switch (how) {
	case 0:
	case 1:
		p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			 (how ? MAP_SHARED : MAP_PRIVATE) | MAP_ANONYMOUS, -1,
			 0);
		break;
	case 2:
		fd = memfd_create("conform", 0);
		if (fd < 0)
			return NULL;
		if (!ftruncate(fd, 4096))
			p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
				 MAP_SHARED, fd, 0);
		close(fd);
		break;
	case 3:
		id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
		if (id < 0)
			return NULL;
		p = shmat(id, NULL, 0);
		shmctl(id, IPC_RMID, NULL);
		break;
	default:
		if (posix_memalign(&p, 4096, 64))
			return NULL;
		return p;
	}
	return p == MAP_FAILED || p == (void *)-1 ? NULL : p;
}

static void fresh_free(int how, void *p)
{
	if (how == 3)
		shmdt(p);
	else if (how == 4)
		free(p);
	else
		munmap(p, 4096);
}

static struct ibv_qp *rc_qp_on(struct te_side *s)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.cap.max_inline_data = 64;	/* UCX's put_short */
	return ibv_create_qp(s->pd, &ia);
}

/* qp to RTS aimed at QP number dqpn of side 0's device. */
static void rc_to(struct te_pair *p, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = TE_MTU;
	a.dest_qp_num = dqpn;
	a.rq_psn = 7;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = p->s[0].gid;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC), 0);
}

/*
 * Issue 28 item 8a: a transport library's 64-byte WRITE, then a fenced
 * second one, into a 64-byte buffer its allocator had just mapped and
 * registered, two RC QPs of one device connected to each other (or one
 * QP connected to itself), was NAKed with a remote access error. Not
 * reproduced with plain verbs at 4240ce6 on any of these allocations
 * (hugetlb pages are not configured here) with a plain, an explicit
 * on-demand or an implicit on-demand MR, nor with UCX's relaxed-ordering
 * pair (reg 3: its verbs memory domain registers the buffer twice, with
 * IBV_ACCESS_RELAXED_ORDERING and without, and a fenced put goes inline
 * through the strict one's rkey): this keeps every one of them working,
 * every byte there.
 */
static void test_fresh_memory_fenced_writes(void **state)
{
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;
	struct ibv_mr *implicit;
	struct te_pair p;
	struct te_side *a;
	int how, reg, self;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	a = &p.s[0];
	implicit = ibv_reg_mr(a->pd, NULL, SIZE_MAX,
			      acc | IBV_ACCESS_ON_DEMAND);
	assert_non_null(implicit);
	for (self = 0; self < 2; self++)
	for (how = 0; how < 5; how++)
	for (reg = 0; reg < 4; reg++) {
		struct ibv_qp *q1 = rc_qp_on(a), *q2 = self ? q1 : rc_qp_on(a);
		uint8_t *buf = fresh_page(how);
		struct ibv_mr *mr, *strict = NULL;
		int k;

		assert_non_null(q1);
		assert_non_null(q2);
		assert_non_null(buf);
		rc_to(&p, q1, q2->qp_num);
		if (!self)
			rc_to(&p, q2, q1->qp_num);
		if (reg == 2)
			mr = implicit;
		else if (reg == 3)
			mr = ibv_reg_mr(a->pd, buf, 64,
					acc | IBV_ACCESS_REMOTE_ATOMIC |
					IBV_ACCESS_RELAXED_ORDERING);
		else
			mr = ibv_reg_mr(a->pd, buf, 64,
					acc | (reg ? IBV_ACCESS_ON_DEMAND : 0));
		assert_non_null(mr);
		if (reg == 3) {
			strict = ibv_reg_mr(a->pd, buf, 64,
					    acc | IBV_ACCESS_REMOTE_ATOMIC);
			assert_non_null(strict);
		}
		for (k = 0; k < 2; k++) {
			struct ibv_sge sge = { (uintptr_t)a->buf + 64 * k, 64,
					       a->mr->lkey };
			struct ibv_send_wr wr = {
				.wr_id = (uint64_t)k, .sg_list = &sge,
				.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED |
					      (k ? IBV_SEND_FENCE : 0),
			}, *bad;

			memset(a->buf + 64 * k, 0x30 + k + 2 * how + 10 * reg,
			       64);
			wr.wr.rdma.remote_addr = (uintptr_t)buf;
			wr.wr.rdma.rkey = k && strict ? strict->rkey : mr->rkey;
			if (strict)	/* UCX's put_short */
				wr.send_flags |= IBV_SEND_INLINE;
			assert_int_equal(ibv_post_send(q1, &wr, &bad), 0);
		}
		expect_wc(a->scq, 0, IBV_WC_SUCCESS);
		expect_wc(a->scq, 1, IBV_WC_SUCCESS);
		assert_memory_equal(buf, a->buf + 64, 64);
		if (mr != implicit)
			assert_int_equal(ibv_dereg_mr(mr), 0);
		if (strict)
			assert_int_equal(ibv_dereg_mr(strict), 0);
		assert_int_equal(ibv_destroy_qp(q1), 0);
		if (!self)
			assert_int_equal(ibv_destroy_qp(q2), 0);
		fresh_free(how, buf);
	}
	assert_int_equal(ibv_dereg_mr(implicit), 0);
	te_pair_close(&p);
}

/*
 * Item 8a, the same with two contexts of one device in one process (a
 * transport library opens one per memory domain): q1 in the pair's
 * context, q2 and the target MR in a second one of the same device.
 */
static void test_two_contexts_fenced_writes(void **state)
{
	const unsigned int acc = IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ;
	struct ibv_device **list;
	struct te_side s2;
	struct te_pair p;
	struct te_side *a;
	struct ibv_qp *q1, *q2;
	struct ibv_mr *mr;
	uint8_t *buf;
	int n, i, k;

	(void)state;
	assert_int_equal(te_pair_open(&p, IBV_QPT_RC), 0);
	a = &p.s[0];
	memset(&s2, 0, sizeof(s2));
	list = ibv_get_device_list(&n);
	assert_non_null(list);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]),
			    ibv_get_device_name(a->ctx->device)))
			s2.ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	assert_non_null(s2.ctx);
	assert_ptr_not_equal(s2.ctx, a->ctx);
	s2.pd = ibv_alloc_pd(s2.ctx);
	s2.scq = s2.rcq = ibv_create_cq(s2.ctx, 16, NULL, NULL, 0);
	assert_non_null(s2.pd);
	assert_non_null(s2.scq);
	q1 = rc_qp_on(a);
	q2 = rc_qp_on(&s2);
	assert_non_null(q1);
	assert_non_null(q2);
	rc_to(&p, q1, q2->qp_num);
	rc_to(&p, q2, q1->qp_num);
	buf = fresh_page(0);
	assert_non_null(buf);
	mr = ibv_reg_mr(s2.pd, buf, 64, acc | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(mr);
	for (k = 0; k < 2; k++) {
		struct ibv_sge sge = { (uintptr_t)a->buf + 64 * k, 64,
				       a->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)k, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE |
				      (k ? IBV_SEND_FENCE : 0),
		}, *bad;

		memset(a->buf + 64 * k, 0x61 + k, 64);
		wr.wr.rdma.remote_addr = (uintptr_t)buf;
		wr.wr.rdma.rkey = mr->rkey;
		assert_int_equal(ibv_post_send(q1, &wr, &bad), 0);
	}
	expect_wc(a->scq, 0, IBV_WC_SUCCESS);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS);
	assert_memory_equal(buf, a->buf + 64, 64);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_qp(q1), 0);
	assert_int_equal(ibv_destroy_qp(q2), 0);
	fresh_free(0, buf);
	assert_int_equal(ibv_destroy_cq(s2.scq), 0);
	assert_int_equal(ibv_dealloc_pd(s2.pd), 0);
	assert_int_equal(ibv_close_device(s2.ctx), 0);
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
		cmocka_unit_test(test_regress_local_error_wins),
		cmocka_unit_test(test_regress_write_imm_bad_rkey_statuses),
		cmocka_unit_test(test_regress_send_inv_failure_not_acked),
		cmocka_unit_test(test_type2_rebind_fails),
		cmocka_unit_test(test_regress_type2_zero_length_bind_fails),
		cmocka_unit_test(test_regress_local_inv_other_qp),
		cmocka_unit_test(test_regress_bind_type1_garbled_handles),
		cmocka_unit_test(test_fresh_memory_fenced_writes),
		cmocka_unit_test(test_two_contexts_fenced_writes),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
