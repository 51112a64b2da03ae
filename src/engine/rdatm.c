/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Responder resources (docs/wire-notes.md §3.5): every READ and atomic
 * executed is remembered in a ring so a duplicate request is answered from
 * it: a READ is replayed from the saved range (the memory is read again,
 * through the rkey), an atomic gets its saved original value and is never
 * re-executed. The oldest entry is overwritten: bounding outstanding
 * requests is the requester's job (max_rd_atomic).
 */
#include <string.h>

#include "engine/engine_priv.h"

struct ur_res *ur_res_alloc(struct ur_qp_xport *xp)
{
	struct ur_resp_state_qp *r = &xp->resp;
	struct ur_res *res = &r->res[r->res_head];

	r->res_head = (r->res_head + 1) % UR_NUM_RES;
	memset(res, 0, sizeof(*res));
	return res;
}

struct ur_res *ur_res_find(struct ur_qp_xport *xp, uint32_t psn)
{
	struct ur_resp_state_qp *r = &xp->resp;
	unsigned int i, idx;

	/* newest first: a replayed range may overlap an older one */
	for (i = 1; i <= UR_NUM_RES; i++) {
		idx = (r->res_head + UR_NUM_RES - i) % UR_NUM_RES;
		if (r->res[idx].type != UR_RES_NONE &&
		    ur_psn_in_range(psn, r->res[idx].first_psn,
				    r->res[idx].last_psn))
			return &r->res[idx];
	}
	return NULL;
}

void ur_res_clear(struct ur_qp_xport *xp)
{
	memset(xp->resp.res, 0, sizeof(xp->resp.res));
	xp->resp.res_head = 0;
}
