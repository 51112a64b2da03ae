/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ibv_query_rt_values_ex: the raw clock is the counter completion
 * timestamps come from (1 GHz, as hca_core_clock says): a completion's
 * timestamp lies between two clock reads around it, the clock moves
 * forward, and comp_mask out says what was filled.
 */
#include "rc_pair.h"

static uint64_t raw_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK |
						IBV_VALUES_MASK_RESERVED };

	assert_int_equal(ibv_query_rt_values_ex(ctx, &v), 0);
	assert_int_equal(v.comp_mask, IBV_VALUES_MASK_RAW_CLOCK);
	assert_int_equal(v.raw_clock.tv_sec, 0);
	return (uint64_t)v.raw_clock.tv_nsec;
}

static void test_clock_brackets_completion(void **state)
{
	static uint8_t src[256], dst[256];
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 16,
		.wc_flags = IBV_WC_STANDARD_FLAGS |
			    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
	};
	struct ibv_device_attr_ex ax;
	struct ibv_poll_cq_attr pa = { 0 };
	struct ibv_cq_ex *cqx = ibv_create_cq_ex(ctx, &ca);
	struct ibv_cq *saved = cq;
	struct ibv_values_ex none = { .comp_mask = 0 };
	struct ibv_mr *ms, *md;
	struct ibv_qp *qps[2];
	uint64_t t1, t2, ts, end;
	int ret;

	assert_non_null(cqx);
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ax), 0);
	assert_int_equal(ax.hca_core_clock, 1000000);	/* kHz: 1 GHz */
	assert_int_equal(ibv_query_rt_values_ex(ctx, &none), 0);
	assert_int_equal(none.comp_mask, 0);

	cq = ibv_cq_ex_to_cq(cqx);
	qps[0] = qp_new(NULL);
	qps[1] = qp_new(NULL);
	cq = saved;
	connect_pair(qps[0], qps[1]);
	ms = ibv_reg_mr(pd, src, sizeof(src), 0);
	md = ibv_reg_mr(pd, dst, sizeof(dst),
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(ms);
	assert_non_null(md);

	t1 = raw_clock();
	post_rdma(qps[0], 1, IBV_WR_RDMA_WRITE, ms, src, sizeof(src),
		  (uintptr_t)dst, md->rkey);
	end = now_ms() + 3000;
	while ((ret = ibv_start_poll(cqx, &pa)) == ENOENT && now_ms() < end)
		usleep(100);
	assert_int_equal(ret, 0);
	assert_int_equal(cqx->status, IBV_WC_SUCCESS);
	ts = ibv_wc_read_completion_ts(cqx);
	ibv_end_poll(cqx);
	t2 = raw_clock();
	assert_true(t1 <= ts);
	assert_true(ts <= t2);
	assert_true(t1 < t2);

	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(ms), 0);
	assert_int_equal(ibv_dereg_mr(md), 0);
	assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cqx)), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_brackets_completion),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
