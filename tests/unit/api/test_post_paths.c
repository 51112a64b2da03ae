/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every way of posting reaches the engine by itself (real library, NIC on
 * loopback): a list of SENDs through ibv_post_send, an ibv_wr_* batch, a
 * type 1 window through ibv_bind_mw, and ibv_post_recv/ibv_post_send on a
 * QP in ERR (flushed at once). Nothing else would make these move: an idle QP has
 * no timer armed and nobody polls its send queue, so a path that forgot
 * its doorbell shows up as a missing completion. Each completion is seen
 * exactly once, with its status, and the bytes are checked where data
 * moved. Empty, failed and aborted ibv_wr_* batches publish nothing and
 * leave the QP usable.
 */
#include "rc_pair.h"

static uint8_t src[4096], dst[4096];

static struct ibv_qp *qp_ex_new(void)
{
	struct ibv_qp_init_attr_ex qa = {
		.send_cq = cq, .recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 2, .max_recv_sge = 2 },
		.comp_mask = IBV_QP_INIT_ATTR_PD |
			     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				  IBV_QP_EX_WITH_SEND,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(ctx, &qa);

	assert_non_null(qp);
	return qp;
}

/* Nothing more arrives within 50 ms (no completion twice, none extra). */
static void assert_cq_quiet(void)
{
	struct ibv_wc wc;

	assert_int_equal(nstash, 0);
	usleep(50 * 1000);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 13);
}

static void test_post_send_list(void **state)
{
	struct ibv_mr *ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	struct ibv_mr *md = ibv_reg_mr(pd, dst, sizeof(dst),
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge[3];
	struct ibv_send_wr wr[3], *bad = NULL;
	struct ibv_qp *qps[2];
	struct ibv_wc wc;
	int i;

	assert_non_null(ms);
	assert_non_null(md);
	pair_new(qps);
	fill(src, sizeof(src), 3);
	memset(dst, 0, sizeof(dst));
	for (i = 0; i < 3; i++)
		post_recv_buf(qps[1], NULL, 10 + i, md, dst + 1024 * i, 1024);
	for (i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)src + 1000 * i,
					   .length = 1000, .lkey = ms->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = 20 + i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED,
			.next = i < 2 ? &wr[i + 1] : NULL,
		};
	}
	assert_int_equal(ibv_post_send(qps[0], wr, &bad), 0);
	for (i = 0; i < 3; i++) {
		wc = wait_wr(20 + i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_SEND);
		wc = wait_wr(10 + i);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.opcode, IBV_WC_RECV);
		assert_int_equal(wc.byte_len, 1000);
		assert_memory_equal(dst + 1024 * i, src + 1000 * i, 1000);
	}
	assert_cq_quiet();
	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
}

static void write_wr(struct ibv_qp_ex *x, uint64_t id, struct ibv_mr *ms,
		     struct ibv_mr *md, size_t off, uint32_t len)
{
	x->wr_id = id;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, md->rkey, (uintptr_t)dst + off);
	ibv_wr_set_sge(x, ms->lkey, (uintptr_t)src + off, len);
}

static void test_wr_batch(void **state)
{
	struct ibv_mr *ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	struct ibv_mr *md = ibv_reg_mr(pd, dst, sizeof(dst),
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_REMOTE_WRITE);
	struct ibv_qp *qps[2];
	struct ibv_qp_ex *x;
	struct ibv_wc wc;

	assert_non_null(ms);
	assert_non_null(md);
	qps[0] = qp_ex_new();
	qps[1] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
	x = ibv_qp_to_qp_ex(qps[0]);
	assert_non_null(x);
	fill(src, sizeof(src), 5);
	memset(dst, 0, sizeof(dst));

	/* empty, failed and aborted batches publish nothing */
	ibv_wr_start(x);
	assert_int_equal(ibv_wr_complete(x), 0);
	ibv_wr_start(x);
	write_wr(x, 30, ms, md, 0, 64);
	ibv_wr_set_xrc_srqn(x, 1);		/* not on an RC QP */
	assert_int_equal(ibv_wr_complete(x), EOPNOTSUPP);
	ibv_wr_start(x);
	write_wr(x, 31, ms, md, 0, 64);
	ibv_wr_abort(x);

	/* one batch of two WRITEs: both done, each exactly once */
	ibv_wr_start(x);
	write_wr(x, 32, ms, md, 0, 1500);
	write_wr(x, 33, ms, md, 2048, 2000);
	assert_int_equal(ibv_wr_complete(x), 0);
	wc = wait_wr(32);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	wc = wait_wr(33);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(dst, src, 1500);
	assert_memory_equal(dst + 2048, src + 2048, 2000);
	for (size_t i = 1500; i < 2048; i++)
		assert_int_equal(dst[i], 0);
	assert_cq_quiet();
	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
}

static void test_bind_mw(void **state)
{
	struct ibv_mr *ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	struct ibv_mr *md = ibv_reg_mr(pd, dst, sizeof(dst),
				       IBV_ACCESS_LOCAL_WRITE |
				       IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = {
		.wr_id = 40, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = md, .addr = (uintptr_t)dst + 256,
			       .length = 512,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_qp *qps[2];
	struct ibv_wc wc;

	assert_non_null(ms);
	assert_non_null(md);
	assert_non_null(mw);
	pair_new(qps);
	fill(src, sizeof(src), 9);
	memset(dst, 0, sizeof(dst));

	assert_int_equal(ibv_bind_mw(qps[1], mw, &b), 0);
	wc = wait_wr(40);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	post_rdma(qps[0], 41, IBV_WR_RDMA_WRITE, ms, src, 512,
		  (uintptr_t)dst + 256, mw->rkey);
	wc = wait_wr(41);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(dst + 256, src, 512);
	assert_int_equal(dst[255], 0);
	assert_int_equal(dst[768], 0);
	assert_cq_quiet();
	destroy_qps(qps, 2);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
}

/* A QP in ERR: posted WRs are flushed at once, both queues. */
static void test_post_in_err(void **state)
{
	struct ibv_mr *m = ibv_reg_mr(pd, dst, sizeof(dst),
				      IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	struct ibv_sge sge[2];
	struct ibv_recv_wr rwr[2], *rbad = NULL;
	struct ibv_qp *qps[2];
	struct ibv_wc wc;
	int i;

	assert_non_null(m);
	pair_new(qps);
	assert_int_equal(ibv_modify_qp(qps[0], &a, IBV_QP_STATE), 0);
	usleep(10 * 1000);
	assert_cq_quiet();

	for (i = 0; i < 2; i++) {
		sge[i] = (struct ibv_sge){ .addr = (uintptr_t)dst + 64 * i,
					   .length = 64, .lkey = m->lkey };
		rwr[i] = (struct ibv_recv_wr){
			.wr_id = 50 + i, .sg_list = &sge[i], .num_sge = 1,
			.next = i ? NULL : &rwr[1],
		};
	}
	assert_int_equal(ibv_post_recv(qps[0], rwr, &rbad), 0);
	for (i = 0; i < 2; i++) {
		wc = wait_wr(50 + i);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc.qp_num, qps[0]->qp_num);
	}
	post_rdma(qps[0], 52, IBV_WR_RDMA_WRITE, m, dst, 64, (uintptr_t)src,
		  0x1234);
	wc = wait_wr(52);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	assert_cq_quiet();
	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(m), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_post_send_list),
		cmocka_unit_test(test_wr_batch),
		cmocka_unit_test(test_bind_mw),
		cmocka_unit_test(test_post_in_err),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
