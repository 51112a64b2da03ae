/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Device memory verbs: the alloc_dm, free_dm and reg_dm_mr slots of the
 * verbs_context (verbs.h's ibv_alloc_dm, ibv_free_dm and ibv_reg_dm_mr
 * jump through them) and the memcpy_to_dm/memcpy_from_dm pointers each
 * ibv_dm carries. obj/dm.c says what device memory is here.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"

static int dm_copy_to(struct ibv_dm *dm, uint64_t off, const void *src,
		      size_t len)
{
	return ur_api_ret(ur_dm_copy_to(to_ur_dm(dm), off, src, len));
}

static int dm_copy_from(void *dst, struct ibv_dm *dm, uint64_t off,
			size_t len)
{
	return ur_api_ret(ur_dm_copy_from(dst, to_ur_dm(dm), off, len));
}

struct ibv_dm *ur_op_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr)
{
	struct ur_dm *dm = NULL;
	int err = ur_dm_alloc(ctx, attr, &dm);

	if (!err) {
		dm->ibdm.memcpy_to_dm = dm_copy_to;
		dm->ibdm.memcpy_from_dm = dm_copy_from;
		err = ur_api_track(ctx, UR_OBJ_DM, &dm->ibdm, dm->ibdm.handle);
		if (err)
			ur_dm_free(dm);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &dm->ibdm;
}

int ur_op_free_dm(struct ibv_dm *dm)
{
	int err = ur_live_take(UR_OBJ_DM, dm);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(dm, ur_dm_free(to_ur_dm(dm)));
}

struct ibv_mr *ur_op_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			       uint64_t off, size_t len,
			       unsigned int access)
{
	struct ur_mr *mr = NULL;
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (!err)
		err = ur_live_check(UR_OBJ_DM, dm);
	if (!err)
		err = ur_dm_reg_mr(to_ur_pd(pd), to_ur_dm(dm), off, len, access,
				   &mr);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_MR, &mr->ibmr,
				   mr->ibmr.handle);
		if (err)
			ur_mr_dereg(mr);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &mr->ibmr;
}
