/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IBA 1.5's ATOMIC WRITE and FLUSH through the public verbs, between two
 * devices of one process (issue 12, item 4): both posting paths, what the
 * peer's memory holds afterwards, the completions, the device's
 * capabilities, and the errors of misuse on either side (post-time EINVAL,
 * misaligned, out of range, no access, persistence asked for). The wire
 * itself, duplicates included, is test_placement_wire.c's.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/verbs_abi.h"
#include "te_util.h"

#define T_TMO 3000

/* ibv_qp_ex as rdma-core 45 lays it out: wr_flush after wr_atomic_write. */
struct qp_ex45 {
	struct ibv_qp_ex ex;
	ur_wr_flush_fn wr_flush;
};

/* QPs whose access flags allow FLUSH placement types (access), or none. */
static int open_rc(void **state, unsigned int access)
{
	struct te_pair *p = calloc(1, sizeof(*p));
	struct te_conn_opts o = { .retry_cnt = 7, .rnr_retry = 7,
				  .psn = { 0xfffffe, 0x10 }, .access = access };

	if (!p ||
	    te_pair_open_ex(p, IBV_QPT_RC,
			    IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_ATOMIC_WRITE |
				    UR_QP_EX_WITH_FLUSH) ||
	    te_pair_connect(p, &o))
		return -1;
	*state = p;
	return 0;
}

/* as rdma-core's tests (45 on) set up every RC QP */
static int setup_rc(void **state)
{
	return open_rc(state,
		       UR_ACCESS_FLUSH_GLOBAL | UR_ACCESS_FLUSH_PERSISTENT);
}

static int setup_rc_noflush(void **state)
{
	return open_rc(state, 0);
}

static void expect_wc(struct ibv_cq *cq, uint64_t wr_id,
		      enum ibv_wc_status st, int op, uint32_t byte_len)
{
	struct ibv_wc wc;

	assert_int_equal(te_poll(cq, &wc, T_TMO), 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, st);
	if (st == IBV_WC_SUCCESS) {
		assert_int_equal(wc.opcode, op);
		assert_int_equal(wc.byte_len, byte_len);
	}
}

/* ATOMIC_WRITE by ibv_post_send: its 8 bytes from a->buf (one SGE) */
static int post_atomic_write(struct te_side *a, uint64_t wr_id,
			     uint64_t raddr, uint32_t rkey, uint32_t len,
			     unsigned int flags)
{
	return te_post_send(a, IBV_WR_ATOMIC_WRITE, wr_id, 0, len, raddr, rkey,
			    flags);
}

/* ibv_wr_flush through the slot rdma-core 45's inline calls. */
static int post_flush(struct te_side *a, uint64_t wr_id, uint32_t rkey,
		      uint64_t raddr, size_t len, uint8_t type, uint8_t level)
{
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(a->qp);
	struct qp_ex45 *x = (struct qp_ex45 *)qpx;

	assert_non_null(qpx);
	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	x->wr_flush(qpx, rkey, raddr, len, type, level);
	return ibv_wr_complete(qpx);
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

/* The three ways to post one: an SGE, inline, ibv_wr_atomic_write. */
static void test_atomic_write(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint64_t *target = (uint64_t *)(b->buf + 64);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(a->qp);
	const uint8_t val[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	uint8_t v2[8];

	memcpy(a->buf, "sge-8byt", 8);
	assert_int_equal(post_atomic_write(a, 1, (uintptr_t)target,
					   b->mr->rkey, 8, 0), 0);
	expect_wc(a->scq, 1, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	assert_memory_equal(target, "sge-8byt", 8);

	memcpy(a->buf, "inline-8", 8);
	assert_int_equal(post_atomic_write(a, 2, (uintptr_t)target,
					   b->mr->rkey, 8, IBV_SEND_INLINE), 0);
	memset(a->buf, 0, 8);	/* inline: copied at post time */
	expect_wc(a->scq, 2, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	assert_memory_equal(target, "inline-8", 8);

	/* the builder copies the value: the buffer may change at once */
	memcpy(v2, val, 8);
	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, b->mr->rkey, (uintptr_t)target, v2);
	memset(v2, 0xee, 8);
	assert_int_equal(ibv_wr_complete(qpx), 0);
	expect_wc(a->scq, 3, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	assert_memory_equal(target, val, 8);
}

/* A WRITE of data and an ATOMIC WRITE of its flag, posted together: the
 * flag is placed after the data (the responder runs in PSN order). */
static void test_atomic_write_after_data(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	uint64_t flag = 0xf1a9f1a9f1a9f1a9ull, got;
	int i;

	for (i = 0; i < 4096; i++)
		a->buf[256 + i] = (uint8_t)(i * 13);
	memcpy(a->buf, &flag, 8);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 10, 256, 4096,
				      (uintptr_t)b->buf + 1024, b->mr->rkey,
				      0), 0);
	assert_int_equal(post_atomic_write(a, 11, (uintptr_t)b->buf + 8,
					   b->mr->rkey, 8, 0), 0);
	expect_wc(a->scq, 10, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 4096);
	expect_wc(a->scq, 11, IBV_WC_SUCCESS, IBV_WC_ATOMIC_WRITE, 8);
	memcpy(&got, b->buf + 8, 8);
	assert_int_equal(got, flag);
	assert_memory_equal(b->buf + 1024, a->buf + 256, 4096);
}

/* Post-time rules: 8 bytes exactly, RC only. */
static void test_atomic_write_post_errors(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(a->qp);

	assert_int_equal(post_atomic_write(a, 1, (uintptr_t)b->buf,
					   b->mr->rkey, 7, 0), EINVAL);
	assert_int_equal(post_atomic_write(a, 1, (uintptr_t)b->buf,
					   b->mr->rkey, 16, 0), EINVAL);
	ibv_wr_start(qpx);
	ibv_wr_atomic_write(qpx, b->mr->rkey, (uintptr_t)b->buf, NULL);
	assert_int_equal(ibv_wr_complete(qpx), EINVAL);
	assert_int_equal(te_poll_none(a->scq, 50), 0);
}

/* Misaligned: invalid request (rxe's ERR_MISALIGNED_ATOMIC), the QP
 * fails on both sides, the memory is untouched. */
static void test_atomic_write_misaligned(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];

	memset(b->buf, 0x5a, 32);
	memcpy(a->buf, "12345678", 8);
	assert_int_equal(post_atomic_write(a, 5, (uintptr_t)b->buf + 4,
					   b->mr->rkey, 8, 0), 0);
	expect_wc(a->scq, 5, IBV_WC_REM_INV_REQ_ERR, 0, 0);
	assert_int_equal(b->buf[4], 0x5a);
	assert_int_equal(b->buf[11], 0x5a);
	assert_int_equal(qp_state(b->qp), IBV_QPS_ERR);
}

/* Past the MR's end, or a bad rkey: remote access error. */
static void test_atomic_write_out_of_range(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];

	assert_int_equal(post_atomic_write(a, 6,
					   (uintptr_t)b->buf + TE_BUF,
					   b->mr->rkey, 8, 0), 0);
	expect_wc(a->scq, 6, IBV_WC_REM_ACCESS_ERR, 0, 0);
	assert_int_equal(qp_state(b->qp), IBV_QPS_ERR);
}

/* A FLUSH needs an MR with IBV_ACCESS_FLUSH_GLOBAL: range and MR level
 * succeed after a WRITE, a range past the MR fails. */
static void test_flush(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_mr *fmr;

	fmr = ibv_reg_mr(b->pd, b->buf, TE_BUF,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 UR_ACCESS_FLUSH_GLOBAL);
	assert_non_null(fmr);
	memset(a->buf, 0x77, 512);
	assert_int_equal(te_post_send(a, IBV_WR_RDMA_WRITE, 20, 0, 512,
				      (uintptr_t)b->buf + 2048, fmr->rkey, 0),
			 0);
	expect_wc(a->scq, 20, IBV_WC_SUCCESS, IBV_WC_RDMA_WRITE, 512);
	assert_int_equal(post_flush(a, 21, fmr->rkey,
				    (uintptr_t)b->buf + 2048, 512,
				    UR_FLUSH_GLOBAL, UR_FLUSH_RANGE), 0);
	expect_wc(a->scq, 21, IBV_WC_SUCCESS, UR_WC_FLUSH, 0);
	assert_int_equal(b->buf[2048 + 511], 0x77);
	/* selectivity MR: the address and length are not looked at */
	assert_int_equal(post_flush(a, 22, fmr->rkey, 0, 0, UR_FLUSH_GLOBAL,
				    UR_FLUSH_MR), 0);
	expect_wc(a->scq, 22, IBV_WC_SUCCESS, UR_WC_FLUSH, 0);
	/* a range that leaves the MR */
	assert_int_equal(post_flush(a, 23, fmr->rkey,
				    (uintptr_t)b->buf + TE_BUF - 8, 16,
				    UR_FLUSH_GLOBAL, UR_FLUSH_RANGE), 0);
	expect_wc(a->scq, 23, IBV_WC_REM_ACCESS_ERR, 0, 0);
	assert_int_equal(qp_state(b->qp), IBV_QPS_ERR);
	assert_int_equal(ibv_dereg_mr(fmr), 0);
}

/* An MR without FLUSH_GLOBAL: remote access error, as rxe. */
static void test_flush_no_access(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];

	assert_int_equal(post_flush(a, 30, b->mr->rkey, (uintptr_t)b->buf, 64,
				    UR_FLUSH_GLOBAL, UR_FLUSH_RANGE), 0);
	expect_wc(a->scq, 30, IBV_WC_REM_ACCESS_ERR, 0, 0);
}

/* A QP without FLUSH_GLOBAL in its access flags: invalid request (rxe's
 * check of the QP's access), whatever the MR allows. */
static void test_flush_qp_no_access(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_mr *fmr;

	fmr = ibv_reg_mr(b->pd, b->buf, TE_BUF, UR_ACCESS_FLUSH_GLOBAL);
	assert_non_null(fmr);
	assert_int_equal(post_flush(a, 32, fmr->rkey, 0, 0, UR_FLUSH_GLOBAL,
				    UR_FLUSH_MR), 0);
	expect_wc(a->scq, 32, IBV_WC_REM_INV_REQ_ERR, 0, 0);
	assert_int_equal(ibv_dereg_mr(fmr), 0);
}

/* Persistence: no MR gets it (EINVAL, as rxe for memory that is not
 * pmem), so a FLUSH asking for it is a remote access error. */
static void test_flush_persistent(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_mr *fmr;

	errno = 0;
	assert_null(ibv_reg_mr(b->pd, b->buf, TE_BUF,
			       IBV_ACCESS_LOCAL_WRITE |
				       UR_ACCESS_FLUSH_PERSISTENT));
	assert_int_equal(errno, EINVAL);
	fmr = ibv_reg_mr(b->pd, b->buf, TE_BUF, UR_ACCESS_FLUSH_GLOBAL);
	assert_non_null(fmr);
	assert_int_equal(post_flush(a, 31, fmr->rkey, 0, 0,
				    UR_FLUSH_GLOBAL | UR_FLUSH_PERSISTENT,
				    UR_FLUSH_MR), 0);
	expect_wc(a->scq, 31, IBV_WC_REM_ACCESS_ERR, 0, 0);
	assert_int_equal(ibv_dereg_mr(fmr), 0);
}

/* Post-time rules: a placement type, a selectivity level, and only
 * ibv_wr_flush (ibv_send_wr has no field for them). */
static void test_flush_post_errors(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0], *b = &p->s[1];
	struct ibv_send_wr wr, *bad;

	assert_int_equal(post_flush(a, 1, b->mr->rkey, 0, 0, 0, UR_FLUSH_MR),
			 EINVAL);
	assert_int_equal(post_flush(a, 1, b->mr->rkey, 0, 0, 4, UR_FLUSH_MR),
			 EINVAL);
	assert_int_equal(post_flush(a, 1, b->mr->rkey, 0, 0, UR_FLUSH_GLOBAL,
				    2), EINVAL);
	memset(&wr, 0, sizeof(wr));
	wr.opcode = (enum ibv_wr_opcode)UR_WR_FLUSH;
	assert_int_equal(ibv_post_send(a->qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	assert_int_equal(te_poll_none(a->scq, 50), 0);
}

/* What the device says (rxe's bits on Linux 6.2; no persistence) and
 * which QPs may ask for the builders. */
static void test_caps(void **state)
{
	struct te_pair *p = *state;
	struct te_side *a = &p->s[0];
	struct ibv_device_attr_ex attr;
	struct ibv_qp_init_attr_ex ia;
	struct ibv_qp *qp;

	assert_int_equal(ibv_query_device_ex(a->ctx, NULL, &attr), 0);
	assert_true(attr.device_cap_flags_ex & UR_DEVICE_ATOMIC_WRITE);
	assert_true(attr.device_cap_flags_ex & UR_DEVICE_FLUSH_GLOBAL);
	assert_false(attr.device_cap_flags_ex & UR_DEVICE_FLUSH_PERSISTENT);
	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_RC;
	ia.send_cq = a->scq;
	ia.recv_cq = a->rcq;
	ia.pd = a->pd;
	ia.cap.max_send_wr = 4;
	ia.cap.max_recv_wr = 4;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	ia.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE | UR_QP_EX_WITH_FLUSH;
	qp = ibv_create_qp_ex(a->ctx, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	ia.qp_type = IBV_QPT_UC;
	errno = 0;
	assert_null(ibv_create_qp_ex(a->ctx, &ia));
	assert_int_equal(errno, EOPNOTSUPP);
}

int main(void)
{
	int rc;
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_atomic_write, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_after_data,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_post_errors,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_misaligned,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_atomic_write_out_of_range,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_flush, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_flush_no_access, setup_rc,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_flush_qp_no_access,
						setup_rc_noflush,
						te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_flush_persistent,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_flush_post_errors,
						setup_rc, te_pair_teardown),
		cmocka_unit_test_setup_teardown(test_caps, setup_rc,
						te_pair_teardown),
	};

	rc = cmocka_run_group_tests(tests, NULL, NULL);
	te_close_devices();
	return rc;
}
