/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory through the real library: the allocation, copy and
 * registration rules (EINVAL, EFAULT, EBUSY), max_dm_size reported, and a
 * DM as the source and target of every operation over a connected RC
 * pair: SEND from and into DM, RDMA WRITE into and READ from a remote DM,
 * READ into a local DM, FETCH_ADD on a DM with its result landing in a
 * DM; every byte checked through ibv_memcpy_from_dm.
 */
#include "rc_pair.h"

static void test_dm_rules(void **state)
{
	struct ibv_device_attr_ex ax;
	struct ibv_alloc_dm_attr da = { .length = 0 };
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	uint8_t b[64] = { 1, 2, 3 };

	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ax), 0);
	assert_int_equal(ax.max_dm_size, 4u << 20);
	errno = 0;
	assert_null(ibv_alloc_dm(ctx, &da));
	assert_int_equal(errno, EINVAL);
	da.length = ax.max_dm_size + 1;
	assert_null(ibv_alloc_dm(ctx, &da));
	assert_int_equal(errno, EINVAL);
	da.length = 100;
	da.comp_mask = 1;
	assert_null(ibv_alloc_dm(ctx, &da));
	da.comp_mask = 0;
	da.log_align_req = 12;
	dm = ibv_alloc_dm(ctx, &da);
	assert_non_null(dm);

	/* copies: inside only */
	assert_int_equal(ibv_memcpy_to_dm(dm, 92, b, 8), 0);
	assert_int_equal(ibv_memcpy_to_dm(dm, 96, b, 8), EFAULT);
	assert_int_equal(ibv_memcpy_from_dm(b, dm, 0, 104), EFAULT);
	/* 4-byte words only, as mlx5's device memory */
	errno = 0;
	assert_int_equal(ibv_memcpy_to_dm(dm, 2, b, 8), EINVAL);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_memcpy_from_dm(b, dm, 0, 6), EINVAL);
	assert_int_equal(ibv_memcpy_from_dm(b + 12, dm, 92, 4), 0);
	assert_int_equal(b[12], 1);
	assert_int_equal(b[14], 3);

	/* registration: zero based only, inside only */
	errno = 0;
	assert_null(ibv_reg_dm_mr(pd, dm, 0, 100, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);
	assert_null(ibv_reg_dm_mr(pd, dm, 50, 51, IBV_ACCESS_ZERO_BASED));
	mr = ibv_reg_dm_mr(pd, dm, 50, 50,
			   IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	assert_int_equal(ibv_free_dm(dm), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	/* not twice: verbs.h's inline ibv_free_dm reads dm->context */
	assert_int_equal(ibv_free_dm(dm), 0);
}

static struct ibv_dm *dm_new(size_t len, uint8_t seed)
{
	struct ibv_alloc_dm_attr da = { .length = len };
	struct ibv_dm *dm = ibv_alloc_dm(ctx, &da);
	uint8_t *tmp = malloc(len);

	assert_non_null(dm);
	for (size_t i = 0; i < len; i++)
		tmp[i] = (uint8_t)(seed + i * 3);
	assert_int_equal(ibv_memcpy_to_dm(dm, 0, tmp, len), 0);
	free(tmp);
	return dm;
}

static void dm_read(struct ibv_dm *dm, uint64_t off, void *out, size_t len)
{
	assert_int_equal(ibv_memcpy_from_dm(out, dm, off, len), 0);
}

static void test_dm_every_op(void **state)
{
	const unsigned int acc = IBV_ACCESS_ZERO_BASED |
				 IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC;
	struct ibv_dm *da = dm_new(8192, 0x10), *db = dm_new(8192, 0x80);
	struct ibv_mr *ma = ibv_reg_dm_mr(pd, da, 0, 8192, acc);
	struct ibv_mr *mb = ibv_reg_dm_mr(pd, db, 0, 8192, acc);
	uint8_t ea[8192], eb[8192], got[8192];
	struct ibv_qp *qps[2];
	struct ibv_sge sge;
	struct ibv_send_wr wr;
	uint64_t v;

	assert_non_null(ma);
	assert_non_null(mb);
	qps[0] = qp_new(NULL);
	qps[1] = qp_new(NULL);
	connect_pair(qps[0], qps[1]);
	dm_read(da, 0, ea, sizeof(ea));
	dm_read(db, 0, eb, sizeof(eb));

	/* SEND: DM A [0, 3000) -> DM B [4096, 7096) (several packets) */
	post_recv_buf(qps[1], NULL, 900, mb, (void *)(uintptr_t)4096, 3100);
	post_rdma(qps[0], 901, IBV_WR_SEND, ma, (void *)(uintptr_t)0, 3000,
		  0, 0);
	assert_int_equal(wait_wr(900).byte_len, 3000);
	assert_int_equal(wait_wr(901).status, IBV_WC_SUCCESS);
	memcpy(eb + 4096, ea, 3000);

	/* RDMA WRITE: DM A [100, 1100) -> DM B [0, 1000) */
	post_rdma(qps[0], 902, IBV_WR_RDMA_WRITE, ma, (void *)(uintptr_t)100,
		  1000, 0, mb->rkey);
	assert_int_equal(wait_wr(902).status, IBV_WC_SUCCESS);
	memcpy(eb, ea + 100, 1000);

	/* RDMA READ: DM B [2000, 4000) -> DM A [5000, 7000) */
	post_rdma(qps[0], 903, IBV_WR_RDMA_READ, ma, (void *)(uintptr_t)5000,
		  2000, 2000, mb->rkey);
	assert_int_equal(wait_wr(903).status, IBV_WC_SUCCESS);
	memcpy(ea + 5000, eb + 2000, 2000);

	/* FETCH_ADD on DM B [8000], the old value into DM A [8000] */
	memset(&wr, 0, sizeof(wr));
	sge.addr = 8000;
	sge.length = 8;
	sge.lkey = ma->lkey;
	wr.wr_id = 904;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = 8000;
	wr.wr.atomic.rkey = mb->rkey;
	wr.wr.atomic.compare_add = 5;
	post_one(qps[0], &wr);
	assert_int_equal(wait_wr(904).status, IBV_WC_SUCCESS);
	memcpy(ea + 8000, eb + 8000, 8);
	memcpy(&v, eb + 8000, 8);
	v += 5;
	memcpy(eb + 8000, &v, 8);

	dm_read(da, 0, got, sizeof(got));
	assert_memory_equal(got, ea, sizeof(ea));
	dm_read(db, 0, got, sizeof(got));
	assert_memory_equal(got, eb, sizeof(eb));

	/* outside the DM MR: a remote access error, nothing written */
	post_rdma(qps[0], 905, IBV_WR_RDMA_WRITE, ma, (void *)(uintptr_t)0,
		  64, 8190, mb->rkey);
	assert_int_equal(wait_wr(905).status, IBV_WC_REM_ACCESS_ERR);
	dm_read(db, 0, got, sizeof(got));
	assert_memory_equal(got, eb, sizeof(eb));

	destroy_qps(qps, 2);
	assert_int_equal(ibv_dereg_mr(ma), 0);
	assert_int_equal(ibv_dereg_mr(mb), 0);
	assert_int_equal(ibv_free_dm(da), 0);
	assert_int_equal(ibv_free_dm(db), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_dm_rules),
		cmocka_unit_test(test_dm_every_op),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
