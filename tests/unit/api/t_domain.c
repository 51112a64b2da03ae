/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread domains and parent domains through the real library:
 *  - the allocation rules (comp_mask, a parent of a parent, EBUSY while
 *    named);
 *  - QPs, SRQs and CQs created on a parent domain take their rings from
 *    its alloc callback (with pd_context and our resource types), give
 *    them back through free, fall back to the heap on
 *    IBV_ALLOCATOR_USE_DEFAULT and fail with ENOMEM on NULL;
 *  - a parent domain stands for its PD: an RC QP on it, fed by an SRQ on
 *    it, with an MR on it, talks to a QP on the plain PD, every byte
 *    checked.
 */
#include <stdbool.h>

#include "rc_pair.h"

#define RES_QP ((0x7572ull << 32) + 1)
#define RES_SRQ ((0x7572ull << 32) + 2)
#define RES_CQ ((0x7572ull << 32) + 3)

struct alloc_log {
	int allocs[4], frees[4];	/* by resource type - base */
	void *live[16];
	int nlive;
	bool use_default, fail;
	struct ibv_pd *expect_pd;
	bool bad_args;
};

static int type_index(uint64_t type)
{
	if (type < RES_QP || type > RES_CQ)
		return 0;
	return (int)(type - (0x7572ull << 32));
}

static void *log_alloc(struct ibv_pd *on, void *pd_context, size_t size,
		       size_t alignment, uint64_t type)
{
	struct alloc_log *l = pd_context;
	void *p;

	if (on != l->expect_pd || !size || !alignment || !type_index(type))
		l->bad_args = true;
	if (l->fail)
		return NULL;
	if (l->use_default)
		return IBV_ALLOCATOR_USE_DEFAULT;
	if (posix_memalign(&p, alignment, size))
		return NULL;
	memset(p, 0xEE, size);	/* the library must clear it itself */
	l->allocs[type_index(type)]++;
	l->live[l->nlive++] = p;
	return p;
}

static void log_free(struct ibv_pd *on, void *pd_context, void *ptr,
		     uint64_t type)
{
	struct alloc_log *l = pd_context;
	int i;

	for (i = 0; i < l->nlive && l->live[i] != ptr; i++)
		;
	if (i == l->nlive || on != l->expect_pd) {
		l->bad_args = true;
		return;
	}
	l->live[i] = l->live[--l->nlive];
	l->frees[type_index(type)]++;
	free(ptr);
}

static struct ibv_qp *qp_on(struct ibv_pd *on, struct ibv_cq *c,
			    struct ibv_srq *srq)
{
	struct ibv_qp_init_attr qa = {
		.send_cq = c, .recv_cq = c, .srq = srq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(on, &qa);
}

static void test_domain_rules(void **state)
{
	struct ibv_td_init_attr ta = { .comp_mask = 1 };
	struct ibv_parent_domain_init_attr pa = { 0 };
	struct ibv_td *td;
	struct ibv_pd *par, *p2;
	struct ibv_cq_init_attr_ex ca = { .cqe = 8,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };

	errno = 0;
	assert_null(ibv_alloc_td(ctx, &ta));
	assert_int_equal(errno, EINVAL);
	ta.comp_mask = 0;
	td = ibv_alloc_td(ctx, &ta);
	assert_non_null(td);

	assert_null(ibv_alloc_parent_domain(ctx, &pa));	/* no PD */
	pa.pd = pd;
	pa.td = td;
	pa.comp_mask = 1u << 7;
	assert_null(ibv_alloc_parent_domain(ctx, &pa));
	assert_int_equal(errno, EINVAL);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS;	/* none */
	assert_null(ibv_alloc_parent_domain(ctx, &pa));
	pa.comp_mask = 0;
	par = ibv_alloc_parent_domain(ctx, &pa);
	assert_non_null(par);
	pa.pd = par;					/* parent of a parent */
	assert_null(ibv_alloc_parent_domain(ctx, &pa));
	assert_int_equal(errno, EINVAL);

	/* a CQ's MASK_PD wants a parent domain */
	ca.parent_domain = pd;
	assert_null(ibv_create_cq_ex(ctx, &ca));
	assert_int_equal(errno, EINVAL);

	/* the TD and the PD live while the parent domain does */
	assert_int_equal(ibv_dealloc_td(td), EBUSY);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	/* a parent domain without allocators makes ordinary queues */
	ca.parent_domain = par;
	p2 = par;
	{
		struct ibv_cq_ex *cx = ibv_create_cq_ex(ctx, &ca);

		assert_non_null(cx);
		assert_int_equal(ibv_dealloc_pd(p2), EBUSY);
		assert_int_equal(ibv_destroy_cq(ibv_cq_ex_to_cq(cx)), 0);
	}
	assert_int_equal(ibv_dealloc_pd(par), 0);
	assert_int_equal(ibv_dealloc_td(td), 0);
}

static void test_allocators_and_traffic(void **state)
{
	static uint8_t src[4096], dst[4096];
	struct alloc_log log = { 0 };
	struct ibv_parent_domain_init_attr pa = {
		.pd = pd,
		.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			     IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT,
		.alloc = log_alloc, .free = log_free, .pd_context = &log,
	};
	struct ibv_cq_init_attr_ex ca = { .cqe = 100,
					  .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD };
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 1 } };
	struct ibv_pd *par = ibv_alloc_parent_domain(ctx, &pa);
	struct ibv_mr *smr, *dmr;
	struct ibv_cq *pcq;
	struct ibv_srq *srq;
	struct ibv_qp *qps[2];
	struct ibv_qp *none;
	struct ibv_wc wc;

	assert_non_null(par);
	log.expect_pd = par;
	ca.parent_domain = par;
	pcq = ibv_cq_ex_to_cq(ibv_create_cq_ex(ctx, &ca));
	assert_non_null(pcq);
	assert_int_equal(ibv_resize_cq(pcq, 300), 0);	/* a new ring */
	srq = ibv_create_srq(par, &sa);
	assert_non_null(srq);
	qps[0] = qp_on(pd, cq, NULL);
	qps[1] = qp_on(par, pcq, srq);	/* the parent domain's QP */
	assert_non_null(qps[0]);
	assert_non_null(qps[1]);
	assert_int_equal(log.allocs[3], 2);	/* CQ, then its resize */
	assert_int_equal(log.frees[3], 1);
	assert_int_equal(log.allocs[2], 1);	/* SRQ */
	assert_int_equal(log.allocs[1], 2);	/* SQ and RQ */

	/* the allocator's NULL fails the creation; USE_DEFAULT does not */
	log.fail = true;
	errno = 0;
	assert_null(qp_on(par, pcq, NULL));
	assert_int_equal(errno, ENOMEM);
	log.fail = false;
	log.use_default = true;
	none = qp_on(par, pcq, NULL);
	assert_non_null(none);
	log.use_default = false;
	assert_int_equal(log.allocs[1], 2);
	assert_int_equal(ibv_destroy_qp(none), 0);

	/* the parent domain is the PD in every check: traffic */
	smr = ibv_reg_mr(pd, src, sizeof(src), 0);
	dmr = ibv_reg_mr(par, dst, sizeof(dst), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(dmr);
	assert_ptr_equal(dmr->pd, par);
	connect_pair(qps[0], qps[1]);
	for (size_t i = 0; i < sizeof(src); i++)
		src[i] = (uint8_t)(i * 11 + 3);
	memset(dst, 0, sizeof(dst));
	post_recv_buf(NULL, srq, 1, dmr, dst, sizeof(dst));
	post_rdma(qps[0], 2, IBV_WR_SEND, smr, src, 3000, 0, 0);
	assert_int_equal(wait_wr(2).status, IBV_WC_SUCCESS);
	for (uint64_t end = now_ms() + 3000;
	     ibv_poll_cq(pcq, 1, &wc) == 0 && now_ms() < end;)
		usleep(100);
	assert_int_equal(wc.wr_id, 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 3000);
	assert_memory_equal(dst, src, 3000);
	assert_int_equal(dst[3000], 0);

	/* busy while used; every custom buffer back through free */
	assert_int_equal(ibv_dealloc_pd(par), EBUSY);
	destroy_qps(qps, 2);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_destroy_cq(pcq), 0);
	assert_int_equal(ibv_dereg_mr(dmr), 0);
	assert_int_equal(ibv_dereg_mr(smr), 0);
	assert_int_equal(ibv_dealloc_pd(par), 0);
	assert_int_equal(log.nlive, 0);
	for (int t = 1; t <= 3; t++)
		assert_int_equal(log.allocs[t], log.frees[t]);
	assert_false(log.bad_args);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_rules),
		cmocka_unit_test(test_allocators_and_traffic),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
