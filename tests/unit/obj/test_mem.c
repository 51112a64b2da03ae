/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PD, MR and MW rules (keys: test_keys.c): access flag rules, range
 * checks with overflow, destroy ordering (EBUSY), rereg, and the window
 * bind/invalidate rules the engine relies on.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "to_util.h"

static char buf[8192];

static struct ur_mr *reg(struct ur_pd *pd, void *addr, size_t len,
			 unsigned int access)
{
	struct ur_mr *mr = NULL;

	assert_int_equal(ur_mr_reg(pd, addr, len, (uintptr_t)addr, access,
				   &mr), 0);
	return mr;
}

static void test_access_rules(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);
	struct ur_mr *mr = NULL;
	uintptr_t host;

	assert_int_equal(ur_mr_reg(pd, buf, 64, (uintptr_t)buf,
				   IBV_ACCESS_REMOTE_WRITE, &mr), -EINVAL);
	assert_int_equal(ur_mr_reg(pd, buf, 64, (uintptr_t)buf,
				   IBV_ACCESS_REMOTE_ATOMIC, &mr), -EINVAL);
	assert_int_equal(ur_mr_reg(pd, buf, 64, (uintptr_t)buf, 1u << 12, &mr),
			 -EINVAL);
	assert_int_equal(ur_mr_reg(pd, NULL, 64, 0, 0, &mr), -EINVAL);
	assert_int_equal(ur_mr_reg(pd, buf, 64, UINT64_MAX - 10, 0, &mr),
			 -EINVAL);
	assert_int_equal(atomic_load(&pd->usecnt), 0);
	/* optional bits are ignored, remote read alone is fine */
	assert_int_equal(ur_mr_reg(pd, buf, 64, (uintptr_t)buf,
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_RELAXED_ORDERING, &mr), 0);
	assert_int_equal(mr->mem.access, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(ur_mr_dereg(mr), 0);
	mr = reg(pd, buf, 64, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND |
		 IBV_ACCESS_ON_DEMAND);
	assert_int_equal(ur_mr_dereg(mr), 0);

	/* zero length: a valid, empty MR; only empty accesses pass */
	assert_int_equal(ur_mr_reg(pd, buf, 0, (uintptr_t)buf,
				   IBV_ACCESS_LOCAL_WRITE, &mr), 0);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, (uintptr_t)buf, 0,
				      IBV_ACCESS_LOCAL_WRITE, &host), 0);
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, (uintptr_t)buf, 1,
					  IBV_ACCESS_LOCAL_WRITE, &host), 0);
	assert_int_equal(ur_mr_dereg(mr), 0);
	{
		/* at a page boundary too: there is no page to probe */
		void *page = aligned_alloc(4096, 4096);

		assert_non_null(page);
		assert_int_equal(ur_mr_reg(pd, page, 0, (uintptr_t)page,
					   IBV_ACCESS_LOCAL_WRITE, &mr), 0);
		assert_int_equal(ur_mr_dereg(mr), 0);
		free(page);
	}
	/* zero based: iova 0 whatever the call said; offsets address it */
	assert_int_equal(ur_mr_reg(pd, buf, 64, (uintptr_t)buf,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_ZERO_BASED, &mr), 0);
	assert_int_equal(mr->mem.iova, 0);
	assert_ptr_equal(mr->ibmr.addr, buf);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, 8, 8,
				      IBV_ACCESS_REMOTE_READ, &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 8);
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, 60, 8,
					  IBV_ACCESS_REMOTE_READ, &host), 0);
	/* a new translation stays zero based */
	assert_int_equal(ur_mr_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION,
				     NULL, buf + 64, 32, 0), 0);
	assert_int_equal(mr->mem.iova, 0);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, 0, 32,
				      IBV_ACCESS_REMOTE_READ, &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 64);
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void test_odp_advise(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx), *pd2 = ut_pd(ctx);
	struct ur_mr *mr = NULL, *ro = reg(pd, buf, 64, 0);
	struct ibv_sge sge = { .addr = (uintptr_t)buf, .length = 16 };
	uintptr_t host;

	/* implicit ODP: NULL/SIZE_MAX with ON_DEMAND only */
	assert_int_equal(ur_mr_reg(pd, NULL, SIZE_MAX, 0,
				   IBV_ACCESS_LOCAL_WRITE, &mr), -EINVAL);
	assert_int_equal(ur_mr_reg(pd, NULL, SIZE_MAX, 0,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_ON_DEMAND, &mr), 0);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, (uintptr_t)buf + 7, 9,
				      IBV_ACCESS_LOCAL_WRITE, &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 7);

	sge.lkey = mr->ibmr.lkey;
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1), 0);
	assert_int_equal(ur_mr_advise(pd, 7, 0, &sge, 1), -EOPNOTSUPP);
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 2,
				      &sge, 1), -EINVAL);
	assert_int_equal(ur_mr_advise(pd2, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				      &sge, 1), -EPERM);
	sge.lkey = ro->ibmr.lkey;
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				      &sge, 1), 0);
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      0, &sge, 1), -EPERM);
	sge.length = 65;
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				      &sge, 1), -EFAULT);
	sge.lkey ^= 1;
	assert_int_equal(ur_mr_advise(pd, IBV_ADVISE_MR_ADVICE_PREFETCH, 0,
				      &sge, 1), -EFAULT);
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_mr_dereg(ro), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	assert_int_equal(ur_pd_free(pd2), 0);
	ut_ctx_free(ctx);
}

static void test_pd_busy(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx);
	struct ur_mr *mr = reg(pd, buf, 64, 0);
	struct ur_mw *mw = NULL;

	assert_int_equal(ur_pd_free(pd), -EBUSY);
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_mw_alloc(pd, IBV_MW_TYPE_2, &mw), 0);
	assert_int_equal(ur_pd_free(pd), -EBUSY);
	assert_int_equal(ur_mw_dealloc(mw), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

static void test_mem_check_bounds(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx), *pd2 = ut_pd(ctx);
	struct ur_mr *mr = NULL;
	uint64_t iova = 0x1000;
	uintptr_t host = 0;

	assert_int_equal(ur_mr_reg(pd, buf, 4096, iova,
				   IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_READ, &mr), 0);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, iova, 4096,
				      IBV_ACCESS_REMOTE_READ, &host), 0);
	assert_int_equal(host, (uintptr_t)buf);
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, iova + 100, 10, 0,
				      &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 100);
	/* one byte past either end */
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, iova + 1, 4096, 0,
					  &host), 0);
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, iova - 1, 2, 0,
					  &host), 0);
	/* iova + len wraps around 2^64 */
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, iova + 8,
					  UINT64_MAX - 4, 0, &host), 0);
	assert_int_not_equal(ur_mem_check(&mr->mem, pd, 0, UINT64_MAX - 2, 8,
					  0, &host), 0);
	/* access not granted, other PD */
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, iova, 8,
				      IBV_ACCESS_REMOTE_WRITE, &host), -EACCES);
	assert_int_equal(ur_mem_check(&mr->mem, pd2, 0, iova, 8, 0, &host),
			 -EACCES);
	/* zero length: no range check */
	assert_int_equal(ur_mem_check(&mr->mem, pd, 0, 0, 0, 0, &host), 0);
	/* lookups match the exact key only */
	assert_ptr_equal(ur_mem_lookup(ut_dev(ctx), mr->ibmr.lkey), &mr->mem);
	assert_null(ur_mem_lookup(ut_dev(ctx), mr->ibmr.lkey ^ 1));
	assert_null(ur_mem_lookup(ut_dev(ctx), 0));
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	assert_int_equal(ur_pd_free(pd2), 0);
	ut_ctx_free(ctx);
}

static void test_rereg(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_pd *pd = ut_pd(ctx), *pd2 = ut_pd(ctx);
	struct ur_mr *mr = reg(pd, buf, 64, 0);
	uint32_t key = mr->ibmr.lkey;
	uintptr_t host;

	assert_int_equal(ur_mr_rereg(mr, 0, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(ur_mr_rereg(mr, 1 << 5, NULL, NULL, 0, 0), -EINVAL);
	assert_int_equal(ur_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				     NULL, 0, IBV_ACCESS_REMOTE_WRITE),
			 -EINVAL);
	assert_int_equal(ur_mr_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				     NULL, 64, 0), -EINVAL);
	assert_int_equal(ur_mr_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION |
				     IBV_REREG_MR_CHANGE_PD |
				     IBV_REREG_MR_CHANGE_ACCESS, pd2,
				     buf + 1024, 512,
				     IBV_ACCESS_LOCAL_WRITE |
				     IBV_ACCESS_REMOTE_WRITE), 0);
	assert_int_equal(mr->ibmr.lkey, key);
	assert_ptr_equal(mr->ibmr.pd, &pd2->ibpd);
	assert_int_equal(atomic_load(&pd->usecnt), 0);
	assert_int_equal(atomic_load(&pd2->usecnt), 1);
	assert_int_equal(ur_mem_check(&mr->mem, pd2, 0,
				      (uintptr_t)buf + 1024 + 500, 12,
				      IBV_ACCESS_REMOTE_WRITE, &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 1524);
	assert_int_not_equal(ur_mem_check(&mr->mem, pd2, 0, (uintptr_t)buf,
					  8, 0, &host), 0);
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	assert_int_equal(ur_pd_free(pd2), 0);
	ut_ctx_free(ctx);
}

static struct ur_send_wqe bind_wqe(struct ur_mw *mw, struct ur_mr *mr,
				   uint32_t rkey, void *addr, uint64_t len,
				   unsigned int access)
{
	struct ur_send_wqe w;

	memset(&w, 0, sizeof(w));
	w.opcode = IBV_WR_BIND_MW;
	w.bind.mw = mw;
	w.bind.mr = mr;
	w.bind.rkey = rkey;
	w.bind.addr = (uintptr_t)addr;
	w.bind.length = len;
	w.bind.access = access;
	return w;
}

static void test_mw_type2(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_device *dev = ut_dev(ctx);
	struct ur_pd *pd = ut_pd(ctx), *pd2 = ut_pd(ctx);
	struct ur_mr *mr = reg(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_MW_BIND);
	struct ur_mr *ro = reg(pd, buf, 4096, IBV_ACCESS_MW_BIND);
	struct ur_mr *nobind = reg(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	struct ur_qp *qp = ut_qp_new(pd, IBV_QPT_RC, 0x123);
	struct ur_qp *qp_other = ut_qp_new(pd, IBV_QPT_RC, 0x456);
	struct ur_qp *ud = ut_qp_new(pd, IBV_QPT_UD, 0x789);
	struct ur_mw *mw = NULL;
	struct ur_send_wqe w;
	uint32_t k0, k1;
	uintptr_t host;

	assert_int_equal(ur_mw_alloc(pd, 3, &mw), -EINVAL);
	assert_int_equal(ur_mw_alloc(pd, IBV_MW_TYPE_2, &mw), 0);
	k0 = mw->ibmw.rkey;
	k1 = ibv_inc_rkey(k0);
	assert_int_not_equal(k0, 0);
	assert_false(mw->mem.valid);	/* type 2 starts free */
	/* free window: lookups find it, checks refuse it */
	assert_ptr_equal(ur_mem_lookup(dev, k0), &mw->mem);
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x123, 0, 0, 0, &host),
			 -EACCES);

	/* refused binds */
	w = bind_wqe(mw, nobind, k1, buf, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);	/* no MW_BIND */
	w = bind_wqe(mw, ro, k1, buf, 64, IBV_ACCESS_REMOTE_WRITE);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);	/* no LOCAL_WRITE */
	w = bind_wqe(mw, mr, k1, buf + 4000, 200, IBV_ACCESS_REMOTE_READ);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);	/* outside MR */
	w = bind_wqe(mw, mr, k1, buf, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_not_equal(ur_mw_bind_wqe(ud, &w), 0);	/* UD QP */
	w = bind_wqe(mw, mr, k1, buf, 64, IBV_ACCESS_LOCAL_WRITE << 12);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);	/* bad access */
	qp_other->pd = pd2;
	assert_int_not_equal(ur_mw_bind_wqe(qp_other, &w), 0);	/* PD */
	qp_other->pd = pd;
	assert_false(mw->mem.valid);
	assert_int_equal(atomic_load(&mr->num_mw), 0);

	/* good bind: zero based, remote write (local write: ignored); the
	 * WR's rkey gives only the key byte, the window keeps its index */
	w = bind_wqe(mw, mr, k1 ^ 0xABCD00, buf + 256, 128,
		     IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED |
		     IBV_ACCESS_LOCAL_WRITE);
	assert_int_equal(ur_mw_bind_wqe(qp, &w), 0);
	assert_int_equal(mw->mem.access, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(mw->ibmw.rkey, k1);
	assert_int_equal(atomic_load(&mr->num_mw), 1);
	assert_null(ur_mem_lookup(dev, k0));
	assert_ptr_equal(ur_mem_lookup(dev, k1), &mw->mem);
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x123, 8, 16,
				      IBV_ACCESS_REMOTE_WRITE, &host), 0);
	assert_int_equal(host, (uintptr_t)buf + 264);
	assert_int_not_equal(ur_mem_check(&mw->mem, pd, 0x123, 120, 16,
					  IBV_ACCESS_REMOTE_WRITE, &host), 0);
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x123, 0, 8,
				      IBV_ACCESS_REMOTE_READ, &host), -EACCES);
	/* type 2: bound to its QP only */
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x456, 0, 8,
				      IBV_ACCESS_REMOTE_WRITE, &host),
			 -EACCES);
	/* a bound type 2 window cannot be bound again */
	w = bind_wqe(mw, mr, ibv_inc_rkey(k1), buf, 64,
		     IBV_ACCESS_REMOTE_READ);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);
	/* the MR cannot go or change while the window is bound */
	assert_int_equal(ur_mr_dereg(mr), -EBUSY);
	assert_int_equal(ur_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL,
				     NULL, 0, 0), -EBUSY);

	/* invalidate: MRs, wrong PD and (type 2B) another QP refused, then
	 * frees the window */
	assert_int_not_equal(ur_mem_invalidate(dev, pd, 0x123, mr->ibmr.rkey),
			     0);
	assert_int_not_equal(ur_mem_invalidate(dev, pd, 0x123, k0), 0);
	assert_int_equal(ur_mem_invalidate(dev, pd2, 0x123, k1), -EACCES);
	assert_int_equal(ur_mem_invalidate(dev, pd, 0x456, k1), -EACCES);
	assert_true(mw->mem.valid);
	assert_int_equal(ur_mem_invalidate(dev, pd, 0x123, k1), 0);
	assert_false(mw->mem.valid);
	assert_int_equal(atomic_load(&mr->num_mw), 0);
	assert_int_not_equal(ur_mem_invalidate(dev, pd, 0x123, k1), 0);
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x123, 0, 8,
				      IBV_ACCESS_REMOTE_WRITE, &host),
			 -EACCES);
	assert_int_equal(ur_mr_dereg(nobind), 0);
	assert_int_equal(ur_mr_dereg(ro), 0);

	/* rebind, then dealloc releases the MR */
	w = bind_wqe(mw, mr, ibv_inc_rkey(k1), buf, 64,
		     IBV_ACCESS_REMOTE_READ);
	assert_int_equal(ur_mw_bind_wqe(qp, &w), 0);
	assert_int_equal(ur_mr_dereg(mr), -EBUSY);
	assert_int_equal(ur_mw_dealloc(mw), 0);
	assert_int_equal(ur_mr_dereg(mr), 0);
	free(qp);
	free(qp_other);
	free(ud);
	assert_int_equal(ur_pd_free(pd), 0);
	assert_int_equal(ur_pd_free(pd2), 0);
	ut_ctx_free(ctx);
}

static void test_mw_type1(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_device *dev = ut_dev(ctx);
	struct ur_pd *pd = ut_pd(ctx);
	struct ur_mr *mr = reg(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE |
			       IBV_ACCESS_MW_BIND);
	struct ur_qp *qp = ut_qp_new(pd, IBV_QPT_RC, 0x10);
	struct ur_mw *mw = NULL;
	struct ur_send_wqe w;
	uint32_t k;
	uintptr_t host;

	assert_int_equal(ur_mw_alloc(pd, IBV_MW_TYPE_1, &mw), 0);
	assert_true(mw->mem.valid);
	k = ibv_inc_rkey(mw->ibmw.rkey);
	w = bind_wqe(mw, mr, k, buf, 64,
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ZERO_BASED);
	assert_int_not_equal(ur_mw_bind_wqe(qp, &w), 0);  /* zero based */
	w = bind_wqe(mw, mr, k, buf + 64, 64, IBV_ACCESS_REMOTE_READ);
	assert_int_equal(ur_mw_bind_wqe(qp, &w), 0);
	assert_ptr_equal(ur_mem_lookup(dev, k), &mw->mem);
	/* type 1 is not tied to a QP */
	assert_int_equal(ur_mem_check(&mw->mem, pd, 0x999, (uintptr_t)buf + 64,
				      64, IBV_ACCESS_REMOTE_READ, &host), 0);
	/* type 1 rebinds while bound; cannot be invalidated */
	assert_int_not_equal(ur_mem_invalidate(dev, pd, 0x10, k), 0);
	w = bind_wqe(mw, mr, ibv_inc_rkey(k), buf, 128,
		     IBV_ACCESS_REMOTE_READ);
	assert_int_equal(ur_mw_bind_wqe(qp, &w), 0);
	assert_int_equal(atomic_load(&mr->num_mw), 1);
	assert_null(ur_mem_lookup(dev, k));
	/* zero length unbinds */
	w = bind_wqe(mw, NULL, ibv_inc_rkey(ibv_inc_rkey(k)), NULL, 0, 0);
	assert_int_equal(ur_mw_bind_wqe(qp, &w), 0);
	assert_int_equal(atomic_load(&mr->num_mw), 0);
	assert_int_not_equal(ur_mem_check(&mw->mem, pd, 0, (uintptr_t)buf, 8,
					  IBV_ACCESS_REMOTE_READ, &host), 0);
	assert_int_equal(ur_mr_dereg(mr), 0);
	assert_int_equal(ur_mw_dealloc(mw), 0);
	free(qp);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_access_rules),
		cmocka_unit_test(test_odp_advise),
		cmocka_unit_test(test_pd_busy),
		cmocka_unit_test(test_mem_check_bounds),
		cmocka_unit_test(test_rereg),
		cmocka_unit_test(test_mw_type2),
		cmocka_unit_test(test_mw_type1),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
