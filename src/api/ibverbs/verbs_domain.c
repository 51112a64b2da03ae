/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Thread domains and parent domains: the alloc_td, dealloc_td and
 * alloc_parent_domain slots of the verbs_context (verbs.h's inline
 * ibv_alloc_td, ibv_dealloc_td and ibv_alloc_parent_domain). A parent
 * domain is an ibv_pd: ibv_dealloc_pd frees it, and every verb that takes
 * a PD takes it (obj/pd.c says what it means).
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"

struct ibv_td *ur_op_alloc_td(struct ibv_context *ctx,
			      struct ibv_td_init_attr *attr)
{
	struct ur_td *td = NULL;
	int err = ur_td_alloc(ctx, attr, &td);

	if (!err) {
		err = ur_api_track(ctx, UR_OBJ_TD, &td->ibtd, 0);
		if (err)
			ur_td_free(td);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &td->ibtd;
}

int ur_op_dealloc_td(struct ibv_td *td)
{
	int err = ur_live_take(UR_OBJ_TD, td);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(td, ur_td_free(to_ur_td(td)));
}

struct ibv_pd *
ur_op_alloc_parent_domain(struct ibv_context *ctx,
			  struct ibv_parent_domain_init_attr *attr)
{
	struct ur_pd *pd = NULL;
	int err = attr ? ur_live_check(UR_OBJ_PD, attr->pd) : -EINVAL;

	if (!err && attr->td)
		err = ur_live_check(UR_OBJ_TD, attr->td);
	if (!err)
		err = ur_parent_domain_alloc(ctx, attr, &pd);
	if (!err) {
		err = ur_api_track(ctx, UR_OBJ_PD, &pd->ibpd, pd->ibpd.handle);
		if (err)
			ur_pd_free(pd);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &pd->ibpd;
}
