/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Object handles, errno and limits through the real library:
 *  - a failing int verb returns its errno value and sets errno to it;
 *  - a destroy of an object destroyed already, never created, or whose
 *    handle or context the application overwrote fails (ENOENT, EINVAL)
 *    and frees nothing; the object still works once repaired;
 *  - max_pd, max_ah and max_srq are enforced (ENOMEM past them) and a
 *    slot freed is usable again;
 *  - max_cqe is mlx5's 4,194,303 and such CQs cost little memory.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

static struct ibv_device **list;
static struct ibv_context *ctx;
static struct ibv_device_attr dattr;
static char buf[4096];

static int setup(void **state)
{
	list = ibv_get_device_list(NULL);
	if (!list || !list[0])
		return -1;
	ctx = ibv_open_device(list[0]);
	if (!ctx || ibv_query_device(ctx, &dattr))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	int rc = ibv_close_device(ctx);

	ibv_free_device_list(list);
	return rc;
}

static void test_busy_sets_errno(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_mr *mr;

	assert_non_null(pd);
	mr = ibv_reg_mr(pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	errno = 0;
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);
	assert_int_equal(errno, EBUSY);
	errno = 0;
	assert_int_equal(ibv_resize_cq(NULL, 8), EINVAL);
	assert_int_equal(errno, EINVAL);
	/* no QP: in the return value and errno */
	errno = 0;
	assert_int_equal(ibv_attach_mcast(NULL, NULL, 0), EINVAL);
	assert_int_equal(errno, EINVAL);
	/* the verbs we do not implement say so in errno as well */
	errno = 0;
	assert_null(ibv_import_mr(pd, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static void test_double_destroy(void **state)
{
	struct ibv_comp_channel *ch = ibv_create_comp_channel(ctx);
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, ch, 0);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(pd, &sa);
	struct ibv_mr *mr = ibv_reg_mr(pd, buf, sizeof(buf), 0);
	struct ibv_mw *mw = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	struct ibv_qp_init_attr qa = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(pd, &qa);

	assert_non_null(ch);
	assert_non_null(srq);
	assert_non_null(mr);
	assert_non_null(mw);
	assert_non_null(qp);

	assert_int_equal(ibv_destroy_qp(qp), 0);
	errno = 0;
	assert_int_equal(ibv_destroy_qp(qp), ENOENT);
	assert_int_equal(errno, ENOENT);
	/* not twice: verbs.h's inline ibv_dealloc_mw reads mw->context */
	assert_int_equal(ibv_dealloc_mw(mw), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(mr), ENOENT);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_destroy_srq(srq), ENOENT);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_cq(cq), ENOENT);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), ENOENT);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
	errno = 0;
	assert_int_equal(ibv_dealloc_pd(pd), ENOENT);
	assert_int_equal(errno, ENOENT);
	/* a freed PD is no PD to register on */
	errno = 0;
	assert_null(ibv_reg_mr(pd, buf, sizeof(buf), 0));
	assert_int_equal(errno, ENOENT);
}

static void test_garbled_and_foreign(void **state)
{
	struct ibv_pd *pd = ibv_alloc_pd(ctx);
	struct ibv_cq *cq = ibv_create_cq(ctx, 8, NULL, NULL, 0);
	struct ibv_pd fake_pd = { .context = ctx, .handle = pd->handle };
	struct ibv_cq fake_cq = { .context = ctx };
	struct ibv_qp_init_attr qa = {
		.send_cq = &fake_cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_context *saved;

	assert_non_null(pd);
	assert_non_null(cq);
	/* objects that are not ours: refused before any byte is read */
	assert_int_equal(ibv_dealloc_pd(&fake_pd), ENOENT);
	errno = 0;
	assert_null(ibv_create_qp(pd, &qa));
	assert_int_equal(errno, ENOENT);
	assert_null(ibv_alloc_mw(&fake_pd, IBV_MW_TYPE_2));
	assert_int_equal(errno, ENOENT);

	/* a handle overwritten by the application */
	pd->handle ^= 0x5a5a;
	assert_int_equal(ibv_dealloc_pd(pd), ENOENT);
	assert_null(ibv_alloc_mw(pd, IBV_MW_TYPE_2));
	pd->handle ^= 0x5a5a;

	/* a context overwritten by the application */
	saved = cq->context;
	cq->context = (struct ibv_context *)(uintptr_t)0x10;
	assert_int_equal(ibv_destroy_cq(cq), EINVAL);
	assert_int_equal(ibv_resize_cq(cq, 16), EINVAL);
	cq->context = saved;

	/* repaired, both still work and go away once */
	assert_int_equal(ibv_resize_cq(cq, 16), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

/* Creates objects until one fails; returns how many, all destroyed. */
static int fill_to_limit(void *(*make)(void *), int (*kill)(void *),
			 void *arg, int max, int *err)
{
	void **objs = calloc((size_t)max + 2, sizeof(*objs));
	int n = 0;

	assert_non_null(objs);
	*err = 0;
	while (n < max + 2) {
		errno = 0;
		objs[n] = make(arg);
		if (!objs[n]) {
			*err = errno;
			break;
		}
		n++;
	}
	/* a slot freed is usable again */
	if (n && *err) {
		assert_int_equal(kill(objs[n - 1]), 0);
		objs[n - 1] = make(arg);
		assert_non_null(objs[n - 1]);
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(kill(objs[i]), 0);
	free(objs);
	return n;
}

static void *make_pd(void *arg)
{
	return ibv_alloc_pd(arg);
}

static int kill_pd(void *o)
{
	return ibv_dealloc_pd(o);
}

static void *make_ah(void *pd)
{
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };

	ibv_query_gid(ctx, 1, 0, &a.grh.dgid);
	a.grh.hop_limit = 1;
	return ibv_create_ah(pd, &a);
}

static int kill_ah(void *o)
{
	return ibv_destroy_ah(o);
}

static void *make_srq(void *pd)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 1, .max_sge = 1 } };

	return ibv_create_srq(pd, &sa);
}

static int kill_srq(void *o)
{
	return ibv_destroy_srq(o);
}

static void test_object_limits(void **state)
{
	struct ibv_pd *pd;
	int n, err;

	n = fill_to_limit(make_pd, kill_pd, ctx, dattr.max_pd, &err);
	assert_int_equal(n, dattr.max_pd);
	assert_int_equal(err, ENOMEM);

	pd = ibv_alloc_pd(ctx);
	assert_non_null(pd);
	n = fill_to_limit(make_ah, kill_ah, pd, dattr.max_ah, &err);
	assert_int_equal(n, dattr.max_ah);
	assert_int_equal(err, ENOMEM);
	n = fill_to_limit(make_srq, kill_srq, pd, dattr.max_srq, &err);
	assert_int_equal(n, dattr.max_srq);
	assert_int_equal(err, ENOMEM);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static long rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void test_max_cqe(void **state)
{
	struct ibv_cq *cqs[32];
	long before, after;

	assert_int_equal(dattr.max_cqe, 4194303);
	errno = 0;
	assert_null(ibv_create_cq(ctx, dattr.max_cqe + 1, NULL, NULL, 0));
	assert_int_equal(errno, EINVAL);

	/* 32 CQs of the full depth: 8 GiB if allocated up front */
	before = rss_kib();
	for (int i = 0; i < 32; i++) {
		cqs[i] = ibv_create_cq(ctx, dattr.max_cqe, NULL, NULL, 0);
		assert_non_null(cqs[i]);
		assert_int_equal(cqs[i]->cqe, dattr.max_cqe);
	}
	after = rss_kib();
	assert_true(after - before < 32 * 1024);
	/* resizing to what it holds or more is fine; past the limit is not */
	assert_int_equal(ibv_resize_cq(cqs[0], 100), 0);
	assert_true(cqs[0]->cqe >= 100);
	assert_int_equal(ibv_resize_cq(cqs[0], dattr.max_cqe + 1), EINVAL);
	assert_int_equal(ibv_resize_cq(cqs[0], dattr.max_cqe), 0);
	for (int i = 0; i < 32; i++)
		assert_int_equal(ibv_destroy_cq(cqs[i]), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_busy_sets_errno),
		cmocka_unit_test(test_double_destroy),
		cmocka_unit_test(test_garbled_and_foreign),
		cmocka_unit_test(test_object_limits),
		cmocka_unit_test(test_max_cqe),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
