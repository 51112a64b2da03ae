/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory rules over connected RC pairs in one process (real library, NIC
 * on loopback), each checked against what the peer's memory holds:
 *  - receives taken from an SRQ are checked against the SRQ's PD;
 *  - zero-length MRs, zero-based MRs (IBV_ACCESS_ZERO_BASED and
 *    ibv_reg_mr_iova with iova 0) serve RDMA at offsets;
 *  - ibv_rereg_mr reports a permission failure as IBV_REREG_MR_ERR_CMD;
 *  - a type 2 bind takes only the key byte of the WR's rkey; LOCAL_INV and
 *    SEND_WITH_INV of a type 2B window work only on the QP it is bound to,
 *    and a bad rkey in SEND_WITH_INV fails the receive (REM_INV_REQ_ERR);
 *  - a deregistered MR's rkey is a remote access error while its slot is
 *    quarantined and after the slot names a new MR (obj/mem.c).
 */
#include "obj/obj.h"
#include "obj/params.h"
#include "rc_pair.h"

static uint8_t buf_a[8192], buf_b[8192];

static void post_send_inv(struct ibv_qp *qp, uint64_t id, struct ibv_mr *mr,
			  uint32_t rkey)
{
	struct ibv_sge sge = { .addr = (uintptr_t)buf_a, .length = 8,
			       .lkey = mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_SEND_WITH_INV, .invalidate_rkey = rkey,
	};

	post_one(qp, &wr);
}

static void test_srq_pd(void **state)
{
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd2, &sa);
	struct ibv_mr *mra = ibv_reg_mr(pd, buf_a, sizeof(buf_a), 0);
	struct ibv_mr *mr_qp_pd = ibv_reg_mr(pd, buf_b, sizeof(buf_b),
					     IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mr_srq_pd = ibv_reg_mr(pd2, buf_b, sizeof(buf_b),
					      IBV_ACCESS_LOCAL_WRITE);
	struct ibv_qp *qps[2];
	struct ibv_sge sge = { .addr = (uintptr_t)buf_a, .length = 100,
			       .lkey = mra->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND };
	struct ibv_wc wc;

	assert_non_null(srq);
	qps[0] = qp_new(NULL);
	qps[1] = qp_new(srq);		/* PD pd, its SRQ on pd2 */
	connect_pair(qps[0], qps[1]);
	for (int i = 0; i < 100; i++)
		buf_a[i] = (uint8_t)(i * 7 + 1);
	memset(buf_b, 0, sizeof(buf_b));

	/* a buffer of the SRQ's PD receives */
	post_recv_buf(NULL, srq, 500, mr_srq_pd, buf_b, 256);
	wr.wr_id = 501;
	post_one(qps[0], &wr);
	wc = wait_wr(500);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 100);
	assert_memory_equal(buf_b, buf_a, 100);
	assert_int_equal(buf_b[100], 0);
	assert_int_equal(wait_wr(501).status, IBV_WC_SUCCESS);

	/* one of the QP's PD (not the SRQ's) is a protection error */
	memset(buf_b, 0, sizeof(buf_b));
	post_recv_buf(NULL, srq, 502, mr_qp_pd, buf_b + 1024, 256);
	wr.wr_id = 503;
	post_one(qps[0], &wr);
	wc = wait_wr(502);
	assert_int_equal(wc.status, IBV_WC_LOC_PROT_ERR);
	assert_int_equal(buf_b[1024], 0);
	wait_wr(503);	/* the sender's status is the engine's business */

	destroy_qps(qps, 2);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dereg_mr(mr_srq_pd), 0);
	assert_int_equal(ibv_dereg_mr(mr_qp_pd), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
}

static void test_zero_length_and_zero_based(void **state)
{
	unsigned int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mra = ibv_reg_mr(pd, buf_a, sizeof(buf_a),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *zb = ibv_reg_mr(pd, buf_b, 4096,
				       acc | IBV_ACCESS_ZERO_BASED);
	struct ibv_mr *iova0 = ibv_reg_mr_iova(pd, buf_b + 4096, 4096, 0, acc);
	struct ibv_mr *empty = ibv_reg_mr(pd, buf_b, 0, acc);
	struct ibv_qp *qps[2];

	assert_non_null(mra);
	assert_non_null(zb);
	assert_non_null(iova0);
	assert_non_null(empty);
	assert_ptr_equal(zb->addr, buf_b);
	assert_int_equal(empty->length, 0);
	qps[0] = qp_new(NULL);
	qps[1] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
	for (size_t i = 0; i < sizeof(buf_b); i++)
		buf_b[i] = (uint8_t)(i * 13 + 5);
	memset(buf_a, 0, sizeof(buf_a));

	/* READ at offset 100 of each zero-based MR */
	post_rdma(qps[0], 600, IBV_WR_RDMA_READ, mra, buf_a, 64, 100,
		  zb->rkey);
	assert_int_equal(wait_wr(600).status, IBV_WC_SUCCESS);
	assert_memory_equal(buf_a, buf_b + 100, 64);
	post_rdma(qps[0], 601, IBV_WR_RDMA_READ, mra, buf_a + 64, 64, 100,
		  iova0->rkey);
	assert_int_equal(wait_wr(601).status, IBV_WC_SUCCESS);
	assert_memory_equal(buf_a + 64, buf_b + 4096 + 100, 64);
	/* a zero-length WRITE through the empty MR is fine */
	post_rdma(qps[0], 602, IBV_WR_RDMA_WRITE, mra, buf_a, 0,
		  (uintptr_t)buf_b, empty->rkey);
	assert_int_equal(wait_wr(602).status, IBV_WC_SUCCESS);
	/* past the end of a zero-based MR: remote access error */
	post_rdma(qps[0], 603, IBV_WR_RDMA_READ, mra, buf_a, 64, 4090,
		  zb->rkey);
	assert_int_equal(wait_wr(603).status, IBV_WC_REM_ACCESS_ERR);

	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(empty), 0);
	assert_int_equal(ibv_dereg_mr(iova0), 0);
	assert_int_equal(ibv_dereg_mr(zb), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
}

static void test_rereg_codes(void **state)
{
	struct ibv_mr *mr = ibv_reg_mr(pd, buf_a, 64, IBV_ACCESS_LOCAL_WRITE);
	uint32_t lkey = mr->lkey;

	errno = 0;
	/* remote write without local write: the kernel's refusal */
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_REMOTE_WRITE),
			 IBV_REREG_MR_ERR_CMD);
	assert_int_equal(errno, EINVAL);
	/* what libibverbs itself checks */
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION,
				      NULL, NULL, 0, 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_PD, NULL, NULL,
				      0, 0), IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(mr->lkey, lkey);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

static void bind_type2(struct ibv_qp *qp, uint64_t id, struct ibv_mw *mw,
		       uint32_t rkey, struct ibv_mr *mr, void *addr,
		       uint32_t len)
{
	struct ibv_send_wr wr = {
		.wr_id = id, .opcode = IBV_WR_BIND_MW,
		.bind_mw = {
			.mw = mw, .rkey = rkey,
			.bind_info = { .mr = mr, .addr = (uintptr_t)addr,
				       .length = len,
				       .mw_access_flags =
					       IBV_ACCESS_REMOTE_WRITE },
		},
	};

	post_one(qp, &wr);
}

static void test_type2_window_rules(void **state)
{
	struct ibv_mr *mra = ibv_reg_mr(pd, buf_a, sizeof(buf_a),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ibv_reg_mr(pd, buf_b, sizeof(buf_b),
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_qp *qps[4];	/* A-B and C-D */
	struct ibv_send_wr inv = { .wr_id = 710, .opcode = IBV_WR_LOCAL_INV };
	uint32_t index, rkey;
	struct ibv_wc wc;

	assert_non_null(mw);
	for (int i = 0; i < 4; i++)
		qps[i] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
	connect_pair(qps[2], qps[3]);
	memset(buf_a, 0x3C, sizeof(buf_a));
	memset(buf_b, 0, sizeof(buf_b));

	/* bind on B with garbage above the key byte: index kept */
	index = mw->rkey & ~0xFFu;
	rkey = ibv_inc_rkey(mw->rkey);
	bind_type2(qps[1], 700, mw, (rkey & 0xFF) | (~index & ~0xFFu), mrb,
		   buf_b + 512, 256);
	assert_int_equal(wait_wr(700).status, IBV_WC_SUCCESS);
	assert_int_equal(mw->rkey, index | (rkey & 0xFF));
	post_rdma(qps[0], 701, IBV_WR_RDMA_WRITE, mra, buf_a, 256,
		  (uintptr_t)buf_b + 512, mw->rkey);
	assert_int_equal(wait_wr(701).status, IBV_WC_SUCCESS);
	assert_int_equal(buf_b[512], 0x3C);
	assert_int_equal(buf_b[767], 0x3C);
	assert_int_equal(buf_b[768], 0);

	/* LOCAL_INV on D (same PD, not the window's QP): refused */
	inv.invalidate_rkey = mw->rkey;
	post_one(qps[3], &inv);
	assert_int_equal(wait_wr(710).status, IBV_WC_MW_BIND_ERR);
	/* SEND_WITH_INV to D: D's receive fails, the window stays */
	post_recv_buf(qps[3], NULL, 720, mrb, buf_b + 4096, 64);
	post_send_inv(qps[2], 721, mra, mw->rkey);
	wc = wait_wr(720);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);	/* D is in ERR */
	memset(buf_b, 0, sizeof(buf_b));
	post_rdma(qps[0], 702, IBV_WR_RDMA_WRITE, mra, buf_a, 8,
		  (uintptr_t)buf_b + 512, mw->rkey);
	assert_int_equal(wait_wr(702).status, IBV_WC_SUCCESS);
	assert_int_equal(buf_b[512], 0x3C);

	/* SEND_WITH_INV on C-D again after D's reset, into a live D */
	destroy_qps(&qps[2], 2);
	qps[2] = qp_new(NULL);
	qps[3] = qp_new(NULL);
	connect_pair(qps[2], qps[3]);
	post_recv_buf(qps[3], NULL, 730, mrb, buf_b + 4096, 64);
	post_send_inv(qps[2], 731, mra, mw->rkey);
	wc = wait_wr(730);
	assert_int_equal(wc.status, IBV_WC_REM_INV_REQ_ERR);
	post_rdma(qps[0], 703, IBV_WR_RDMA_WRITE, mra, buf_a, 8,
		  (uintptr_t)buf_b + 520, mw->rkey);
	assert_int_equal(wait_wr(703).status, IBV_WC_SUCCESS);

	/* a bad rkey in SEND_WITH_INV to B fails B's receive */
	post_recv_buf(qps[1], NULL, 740, mrb, buf_b + 4096, 64);
	post_send_inv(qps[0], 741, mra, mw->rkey ^ 0x100);
	assert_int_equal(wait_wr(740).status, IBV_WC_REM_INV_REQ_ERR);

	destroy_qps(qps, 4);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mrb), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
}

/*
 * A rebind that fails (a type 2 window is bound already) fails the
 * binding QP; a READ the peer then sends through the window must still
 * complete, with an error, not wait forever.
 */
static void test_failed_rebind(void **state)
{
	struct ibv_mr *mra = ibv_reg_mr(pd, buf_a, sizeof(buf_a),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ibv_reg_mr(pd, buf_b, sizeof(buf_b),
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_qp *qps[2];
	struct ibv_wc wc;
	uint64_t t0;

	qps[0] = qp_new(NULL);
	qps[1] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
	bind_type2(qps[1], 800, mw, ibv_inc_rkey(mw->rkey), mrb, buf_b, 512);
	assert_int_equal(wait_wr(800).status, IBV_WC_SUCCESS);
	bind_type2(qps[1], 801, mw, ibv_inc_rkey(mw->rkey), mrb, buf_b, 64);
	assert_int_equal(wait_wr(801).status, IBV_WC_MW_BIND_ERR);
	t0 = now_ms();
	post_rdma(qps[0], 802, IBV_WR_RDMA_READ, mra, buf_a, 64,
		  (uintptr_t)buf_b, mw->rkey);
	wc = wait_wr(802);
	assert_int_not_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(now_ms() - t0 < 3000);

	destroy_qps(qps, 2);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mrb), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
}

static void set_quarantine(uint32_t n)
{
	struct ur_device *dev = to_ur_context(ctx)->dev;

	pthread_rwlock_wrlock(&dev->obj_lock);
	dev->keys.quarantine = n;
	pthread_rwlock_unlock(&dev->obj_lock);
}

/*
 * A WRITE through a dead rkey fails with a remote access error, whether
 * its slot is still quarantined or already names a new MR (reached at
 * once by a quarantine of 1: the oldest retired slot comes back first),
 * and the new MR's own rkey works.
 */
static void test_stale_rkey(void **state)
{
	unsigned int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	struct ibv_mr *mra = ibv_reg_mr(pd, buf_a, sizeof(buf_a),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ibv_reg_mr(pd, buf_b, sizeof(buf_b), access);
	struct ibv_qp *qps[2];
	uint32_t dead;
	int i;

	assert_non_null(mra);
	assert_non_null(mrb);
	dead = mrb->rkey;
	assert_int_equal(ibv_dereg_mr(mrb), 0);
	memset(buf_a, 0x5A, sizeof(buf_a));
	memset(buf_b, 0, sizeof(buf_b));
	pair_new(qps);
	post_rdma(qps[0], 900, IBV_WR_RDMA_WRITE, mra, buf_a, 64,
		  (uintptr_t)buf_b, dead);
	assert_int_equal(wait_wr(900).status, IBV_WC_REM_ACCESS_ERR);
	destroy_qps(qps, 2);

	set_quarantine(1);
	mrb = NULL;
	for (i = 0; i < 100000 && (!mrb || mrb->rkey >> 8 != dead >> 8); i++) {
		if (mrb)
			assert_int_equal(ibv_dereg_mr(mrb), 0);
		mrb = ibv_reg_mr(pd, buf_b, sizeof(buf_b), access);
		assert_non_null(mrb);
	}
	set_quarantine(UR_KEY_QUARANTINE);
	assert_int_equal(mrb->rkey >> 8, dead >> 8);
	assert_int_not_equal(mrb->rkey, dead);
	pair_new(qps);
	post_rdma(qps[0], 901, IBV_WR_RDMA_WRITE, mra, buf_a, 64,
		  (uintptr_t)buf_b, mrb->rkey);
	assert_int_equal(wait_wr(901).status, IBV_WC_SUCCESS);
	assert_int_equal(buf_b[63], 0x5A);
	memset(buf_b, 0, sizeof(buf_b));
	post_rdma(qps[0], 902, IBV_WR_RDMA_WRITE, mra, buf_a, 64,
		  (uintptr_t)buf_b, dead);
	assert_int_equal(wait_wr(902).status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(buf_b[0], 0);
	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(mrb), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_srq_pd),
		cmocka_unit_test(test_zero_length_and_zero_based),
		cmocka_unit_test(test_rereg_codes),
		cmocka_unit_test(test_type2_window_rules),
		cmocka_unit_test(test_failed_rebind),
		cmocka_unit_test(test_stale_rkey),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
