/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The memory and completion verbs through the real library (open device,
 * NIC on loopback): return conventions (NULL+errno, errno values, rereg
 * codes), the verbs.h ibv_reg_mr macro paths, and memory windows used by a
 * connected RC pair in one process: type 1 via ibv_bind_mw, type 2 via a
 * BIND_MW WR, RDMA WRITE through both, SEND_WITH_INV, and the remote access
 * error after invalidation. Completions are read with the cq_ex
 * start/next/end calls and through a completion channel.
 */
#include <errno.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "rc_connect.h"

static struct {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq_ex *cq;
	struct ibv_qp *a, *b;
	union ibv_gid gid;
} g;

static char buf_a[4096], buf_b[4096];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Next completion via start_poll/end_poll, 3 s at most. */
static int wait_wc(struct ibv_wc *wc)
{
	struct ibv_poll_cq_attr attr = { 0 };
	uint64_t end = now_ms() + 3000;
	int ret;

	while ((ret = ibv_start_poll(g.cq, &attr)) == ENOENT &&
	       now_ms() < end)
		usleep(100);
	if (ret)
		return ret;
	memset(wc, 0, sizeof(*wc));
	wc->status = g.cq->status;
	wc->wr_id = g.cq->wr_id;
	wc->opcode = ibv_wc_read_opcode(g.cq);
	wc->qp_num = ibv_wc_read_qp_num(g.cq);
	wc->byte_len = ibv_wc_read_byte_len(g.cq);
	wc->wc_flags = ibv_wc_read_wc_flags(g.cq);
	wc->imm_data = ibv_wc_read_imm_data(g.cq);
	ibv_end_poll(g.cq);
	return 0;
}

/* Longer timeouts and retries than rc_conn_default, no atomics. */
static const struct rc_conn conn = {
	.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	.rd_atomic = 1,
	.timeout = 14,
	.retry_cnt = 7,
	.rnr_retry = 7,
};

static void to_rts(struct ibv_qp *qp, uint32_t dest)
{
	rc_to_rts(qp, dest, &g.gid, &conn);
}

static int setup(void **state)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 64,
		.wc_flags = IBV_WC_STANDARD_FLAGS,
	};
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	int n = 0;

	g.list = ibv_get_device_list(&n);
	if (!g.list || !n)
		return -1;
	g.ctx = ibv_open_device(g.list[0]);
	if (!g.ctx || ibv_query_gid(g.ctx, 1, 0, &g.gid))
		return -1;
	g.pd = ibv_alloc_pd(g.ctx);
	g.ch = ibv_create_comp_channel(g.ctx);
	ca.channel = g.ch;
	g.cq = ibv_create_cq_ex(g.ctx, &ca);
	if (!g.pd || !g.ch || !g.cq)
		return -1;
	qa.send_cq = qa.recv_cq = ibv_cq_ex_to_cq(g.cq);
	g.a = ibv_create_qp(g.pd, &qa);
	g.b = ibv_create_qp(g.pd, &qa);
	return g.a && g.b ? 0 : -1;
}

static int teardown(void **state)
{
	if (g.a)
		ibv_destroy_qp(g.a);
	if (g.b)
		ibv_destroy_qp(g.b);
	if (g.cq)
		ibv_destroy_cq(ibv_cq_ex_to_cq(g.cq));
	if (g.ch)
		ibv_destroy_comp_channel(g.ch);
	if (g.pd)
		ibv_dealloc_pd(g.pd);
	if (g.ctx)
		ibv_close_device(g.ctx);
	if (g.list)
		ibv_free_device_list(g.list);
	return 0;
}

static void test_conventions(void **state)
{
	struct ibv_mr *mr, *bad;
	struct ibv_cq *cq;
	struct ibv_mw *mw;
	unsigned int access = IBV_ACCESS_LOCAL_WRITE;

	/* not a constant with an optional bit: the macro calls iova2 */
	access |= IBV_ACCESS_RELAXED_ORDERING;
	mr = ibv_reg_mr(g.pd, buf_a, sizeof(buf_a), access);
	assert_non_null(mr);
	assert_int_equal(mr->lkey, mr->rkey);
	assert_ptr_equal(mr->addr, buf_a);
	errno = 0;
	bad = ibv_reg_mr(g.pd, buf_a, sizeof(buf_a), IBV_ACCESS_REMOTE_WRITE);
	assert_null(bad);
	assert_int_equal(errno, EINVAL);
	bad = ibv_reg_mr_iova(g.pd, buf_a, 16, UINT64_MAX - 4, 0);
	assert_null(bad);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, 0, NULL, NULL, 0, 0),
			 IBV_REREG_MR_ERR_INPUT);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				      NULL, 0, IBV_ACCESS_REMOTE_READ), 0);
	assert_int_equal(ibv_dealloc_pd(g.pd), EBUSY);

	errno = 0;
	assert_null(ibv_create_cq(g.ctx, 0, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);
	cq = ibv_create_cq(g.ctx, 3, NULL, NULL, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= 3);
	assert_int_equal(ibv_resize_cq(cq, -1), EINVAL);
	/* no completion channel: nothing to notify (docs/deviations.md) */
	assert_int_equal(ibv_req_notify_cq(cq, 0), EINVAL);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(g.ch), EBUSY);

	errno = 0;
	assert_null(ibv_alloc_mw(g.pd, 7));
	assert_int_equal(errno, EINVAL);
	mw = ibv_alloc_mw(g.pd, IBV_MW_TYPE_2);
	assert_non_null(mw);
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

static void post_write(uint64_t wr_id, struct ibv_mr *src, void *dst,
		       uint32_t rkey, uint32_t len)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src->addr, .length = len,
			       .lkey = src->lkey };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = (uintptr_t)dst, .rkey = rkey },
	}, *bad;

	assert_int_equal(ibv_post_send(g.a, &wr, &bad), 0);
}

static void test_windows_on_rc(void **state)
{
	struct ibv_mr *mra = ibv_reg_mr(g.pd, buf_a, sizeof(buf_a),
					IBV_ACCESS_LOCAL_WRITE);
	struct ibv_mr *mrb = ibv_reg_mr(g.pd, buf_b, sizeof(buf_b),
					IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_MW_BIND);
	struct ibv_mw *mw1 = ibv_alloc_mw(g.pd, IBV_MW_TYPE_1);
	struct ibv_mw *mw2 = ibv_alloc_mw(g.pd, IBV_MW_TYPE_2);
	struct ibv_mw_bind b1 = {
		.wr_id = 71, .send_flags = IBV_SEND_SIGNALED,
		.bind_info = { .mr = mrb, .addr = (uintptr_t)buf_b + 64,
			       .length = 128,
			       .mw_access_flags = IBV_ACCESS_REMOTE_WRITE },
	};
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge sge;
	struct ibv_wc wc, wc2;
	struct ibv_cq *evcq;
	struct pollfd pfd = { .fd = g.ch->fd, .events = POLLIN };
	void *evctx;
	uint32_t old1, rkey2;

	assert_non_null(mra);
	assert_non_null(mrb);
	assert_non_null(mw1);
	assert_non_null(mw2);
	to_rts(g.a, g.b->qp_num);
	to_rts(g.b, g.a->qp_num);
	memset(buf_a, 0xAB, sizeof(buf_a));
	memset(buf_b, 0, sizeof(buf_b));

	/* type 1 via ibv_bind_mw: the rkey tag advances at once */
	old1 = mw1->rkey;
	assert_int_equal(ibv_bind_mw(g.b, mw1, &b1), 0);
	assert_int_equal(mw1->rkey, ibv_inc_rkey(old1));
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 71);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	assert_int_equal(ibv_dereg_mr(mrb), EBUSY);

	/* RDMA WRITE through the window; completion via the channel */
	assert_int_equal(ibv_req_notify_cq(ibv_cq_ex_to_cq(g.cq), 0), 0);
	post_write(1, mra, buf_b + 64 + 8, mw1->rkey, 32);
	assert_int_equal(poll(&pfd, 1, 3000), 1);
	assert_int_equal(ibv_get_cq_event(g.ch, &evcq, &evctx), 0);
	assert_ptr_equal(evcq, ibv_cq_ex_to_cq(g.cq));
	ibv_ack_cq_events(evcq, 1);
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(wc.qp_num, g.a->qp_num);
	assert_int_equal(buf_b[64 + 8], (char)0xAB);
	assert_int_equal(buf_b[64 + 8 + 31], (char)0xAB);
	assert_int_equal(buf_b[64 + 8 + 32], 0);

	/* type 2 via a BIND_MW WR on B */
	rkey2 = ibv_inc_rkey(mw2->rkey);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 72;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = mw2;
	wr.bind_mw.rkey = rkey2;
	wr.bind_mw.bind_info.mr = mrb;
	wr.bind_mw.bind_info.addr = (uintptr_t)buf_b + 1024;
	wr.bind_mw.bind_info.length = 256;
	wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_post_send(g.b, &wr, &bad), 0);
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 72);
	post_write(2, mra, buf_b + 1024, rkey2, 256);
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(buf_b[1024 + 255], (char)0xAB);

	/* SEND_WITH_INV from A frees B's type 2 window */
	sge.addr = (uintptr_t)buf_b + 3000;
	sge.length = 64;
	sge.lkey = mrb->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 90;
	rwr.sg_list = &sge;
	rwr.num_sge = 1;
	assert_int_equal(ibv_post_recv(g.b, &rwr, &rbad), 0);
	sge.addr = (uintptr_t)buf_a;
	sge.length = 16;
	sge.lkey = mra->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.invalidate_rkey = rkey2;
	assert_int_equal(ibv_post_send(g.a, &wr, &bad), 0);
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wait_wc(&wc2), 0);
	if (wc.wr_id == 3)		/* either side may complete first */
		wc = wc2;
	else
		assert_int_equal(wc2.wr_id, 3);
	assert_int_equal(wc.wr_id, 90);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.imm_data, rkey2);	/* invalidated_rkey */

	/* the invalidated window refuses the next write */
	post_write(4, mra, buf_b + 1024, rkey2, 8);
	assert_int_equal(wait_wc(&wc), 0);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, IBV_WC_REM_ACCESS_ERR);

	assert_int_equal(ibv_dealloc_mw(mw1), 0);
	assert_int_equal(ibv_dealloc_mw(mw2), 0);
	assert_int_equal(ibv_dereg_mr(mrb), 0);
	assert_int_equal(ibv_dereg_mr(mra), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_conventions),
		cmocka_unit_test(test_windows_on_rc),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
