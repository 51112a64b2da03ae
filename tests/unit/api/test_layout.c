/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The context we hand out must be laid out as verbs.h's inline functions
 * expect: struct ibv_context last in struct verbs_context, sz just before
 * it, abi_compat = __VERBS_ABI_IS_EXTENDED, every slot we fill reachable
 * through verbs_get_ctx_op(), and every other slot failing with EOPNOTSUPP
 * (never NULL, as rdma-core's dummy ops).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include <infiniband/verbs.h>

#include "obj/obj.h"

static struct ibv_context *open_first(void)
{
	struct ibv_device **list;
	struct ibv_context *ctx;
	int n;

	list = ibv_get_device_list(&n);
	assert_non_null(list);
	assert_true(n >= 1);
	ctx = ibv_open_device(list[0]);
	assert_non_null(ctx);
	ibv_free_device_list(list);
	return ctx;
}

static void static_layout(void **state)
{
	/* verbs.h: context must be the last field, sz right before it */
	assert_int_equal(offsetof(struct verbs_context, context) +
				 sizeof(struct ibv_context),
			 sizeof(struct verbs_context));
	assert_int_equal(offsetof(struct verbs_context, sz) + sizeof(size_t),
			 offsetof(struct verbs_context, context));
	/* ours: vctx is the last member too, so nothing follows context */
	assert_int_equal(offsetof(struct ur_context, vctx) +
				 sizeof(struct verbs_context),
			 sizeof(struct ur_context));
	/* the legacy ops are at the start of ibv_context, after device */
	assert_int_equal(offsetof(struct ibv_context, ops), sizeof(void *));
}

static void ctx_abi(void **state)
{
	struct ibv_context *ctx = open_first();
	struct verbs_context *vctx = verbs_get_ctx(ctx);
	struct ur_context *uctx = to_ur_context(ctx);

	assert_ptr_equal(ctx->abi_compat, __VERBS_ABI_IS_EXTENDED);
	assert_non_null(vctx);
	assert_ptr_equal(vctx, &uctx->vctx);
	assert_int_equal(vctx->sz, sizeof(struct verbs_context));
	assert_int_equal(ctx->num_comp_vectors, 1);
	assert_true(ctx->async_fd >= 0);
	assert_int_equal(ctx->async_fd, uctx->async_efd);
	assert_true(ctx->cmd_fd >= 0);
	assert_true(ctx->cmd_fd != ctx->async_fd);
	assert_ptr_equal(uctx->dev, to_ur_device(ctx->device));

	/* slots we fill, found the way the inline verbs find them */
	assert_ptr_equal(verbs_get_ctx_op(ctx, query_port), vctx);
	assert_ptr_equal(verbs_get_ctx_op(ctx, query_device_ex), vctx);
	assert_non_null(vctx->query_port);
	assert_non_null(vctx->query_device_ex);
	/* device memory is ours (api/ibverbs/verbs_dm.c) */
	assert_ptr_equal(verbs_get_ctx_op(ctx, alloc_dm), vctx);
	/* every function slot of verbs_context is set, implemented or not
	 * (priv and the ABI placeholders are not functions) */
	for (size_t off = 0; off < offsetof(struct verbs_context,
					    _ABI_placeholder3);
	     off += sizeof(void *)) {
		void *p;

		if (off == offsetof(struct verbs_context, priv) ||
		    off == offsetof(struct verbs_context, ABI_placeholder1) ||
		    off == offsetof(struct verbs_context, ABI_placeholder2))
			continue;
		memcpy(&p, (char *)vctx + off, sizeof(p));
		assert_non_null(p);
	}

	/* every legacy slot is set: old inline callers jump without checks */
	for (size_t off = 0; off < sizeof(ctx->ops); off += sizeof(void *)) {
		void *p;

		memcpy(&p, (char *)&ctx->ops + off, sizeof(p));
		assert_non_null(p);
	}
	assert_int_equal(ibv_close_device(ctx), 0);
}

static void inline_paths(void **state)
{
	struct ibv_context *ctx = open_first();
	struct ibv_device_attr_ex ax;
	struct ibv_port_attr pa;
	struct ibv_xrcd_init_attr xa = { 0 };
	struct ibv_wq_init_attr wa = { 0 };
	struct ibv_counters_init_attr ca = { 0 };
	struct ibv_qp_open_attr oa = { 0 };
	struct ibv_modify_cq_attr ma = { 0 };
	struct ibv_cq *cq;

	/* ibv_query_device_ex (inline) -> vctx->query_device_ex */
	memset(&ax, 0xAB, sizeof(ax));
	assert_int_equal(ibv_query_device_ex(ctx, NULL, &ax), 0);
	assert_int_equal(ax.orig_attr.phys_port_cnt, 1);
	assert_int_equal(ax.phys_port_cnt_ex, 1);
	assert_int_equal(ax.comp_mask, 0);
	/* ibv_query_port (macro -> ___ibv_query_port) -> vctx->query_port */
	memset(&pa, 0xAB, sizeof(pa));
	assert_int_equal(ibv_query_port(ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.flags, 0);
	assert_int_equal(pa.port_cap_flags2, 0);
	/* ibv_open_xrcd (inline) -> vctx->open_xrcd: an empty mask */
	errno = 0;
	assert_null(ibv_open_xrcd(ctx, &xa));
	assert_int_equal(errno, EINVAL);
	/* verbs we do not implement fail with EOPNOTSUPP, the verb's way */
	errno = 0;
	assert_null(ibv_create_wq(ctx, &wa));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_create_counters(ctx, &ca));
	assert_int_equal(errno, EOPNOTSUPP);
	/* ibv_open_qp (inline) -> vctx->open_qp: an empty mask */
	errno = 0;
	assert_null(ibv_open_qp(ctx, &oa));
	assert_int_equal(errno, EINVAL);
	cq = ibv_create_cq(ctx, 4, NULL, NULL, 0);
	assert_non_null(cq);
	assert_int_equal(ibv_modify_cq(cq, &ma), EOPNOTSUPP);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_close_device(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(static_layout),
		cmocka_unit_test(ctx_abi),
		cmocka_unit_test(inline_paths),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
