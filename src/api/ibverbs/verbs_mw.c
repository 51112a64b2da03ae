/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory windows: the alloc_mw and dealloc_mw ops that verbs.h's inline
 * ibv_alloc_mw and ibv_dealloc_mw jump through. Binding a window queues a
 * BIND_MW WQE (verbs_post.c); the windows' rules are obj/mem.c's.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

struct ibv_mw *ur_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ur_mw *mw = NULL;
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (!err)
		err = ur_mw_alloc(to_ur_pd(pd), type, &mw);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_MW, &mw->ibmw,
				   mw->ibmw.handle);
		if (err)
			ur_mw_dealloc(mw);
	}
	return ur_api_ptr(err, err ? NULL : &mw->ibmw);
}

int ur_op_dealloc_mw(struct ibv_mw *mw)
{
	int err = ur_live_take(UR_OBJ_MW, mw);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(mw, ur_mw_dealloc(to_ur_mw(mw)));
}
