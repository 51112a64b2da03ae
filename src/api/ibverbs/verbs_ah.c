/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Address handles: ibv_create_ah, ibv_destroy_ah, and an AH's attributes
 * from a received completion and its GRH (ibv_init_ah_from_wc: 0 or -1
 * with errno set). obj/ah.c checks and resolves them.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

UR_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
				       struct ibv_ah_attr *attr)
{
	struct ur_ah *ah = NULL;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_ah_create(to_ur_pd(pd), attr, &ah);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_AH, &ah->ibah,
				   ah->ibah.handle);
		if (err)
			ur_ah_destroy(ah);
	}
	return ur_api_ptr(err, err ? NULL : &ah->ibah);
}

UR_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	int err = ur_live_take(UR_OBJ_AH, ah);

	if (err)
		return ur_api_ret(err);
	ur_ah_destroy(to_ur_ah(ah));
	return ur_api_destroyed(ah, 0);
}

UR_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				  uint8_t port_num, struct ibv_wc *wc,
				  struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	int err = ur_ah_attr_from_grh(ur_ctx_dev(context), port_num, wc, grh,
				      ah_attr);

	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

UR_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
					       struct ibv_wc *wc,
					       struct ibv_grh *grh,
					       uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (err) {
		errno = -err;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}
