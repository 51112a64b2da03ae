/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC verbs: the open_xrcd, close_xrcd, get_srq_num slots of the
 * verbs_context (verbs.h's inline ibv_open_xrcd, ibv_close_xrcd,
 * ibv_get_srq_num) and the XRC branch of ibv_create_srq_ex. obj/xrcd.c
 * says what a domain is here; XRC QPs are created by verbs_qp.c like the
 * others.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"

struct ibv_xrcd *ur_op_open_xrcd(struct ibv_context *ctx,
				 struct ibv_xrcd_init_attr *attr)
{
	struct ur_xrcd *x = NULL;
	int err = ur_xrcd_open(ctx, attr, &x);

	if (!err) {
		err = ur_api_track(ctx, UR_OBJ_XRCD, &x->ibxrcd, 0);
		if (err)
			ur_xrcd_close(x);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &x->ibxrcd;
}

int ur_op_close_xrcd(struct ibv_xrcd *xrcd)
{
	int err = ur_live_take(UR_OBJ_XRCD, xrcd);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(xrcd, ur_xrcd_close(to_ur_xrcd(xrcd)));
}

/* ibv_create_srq_ex with IBV_SRQT_XRC: PD, XRCD and CQ all required. */
struct ibv_srq *ur_api_create_xrc_srq(struct ibv_context *ctx,
				      struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t need = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_XRCD |
			      IBV_SRQ_INIT_ATTR_CQ;
	struct ur_srq *srq = NULL;
	int err = 0;

	if ((attr->comp_mask & need) != need || !attr->pd ||
	    attr->pd->context != ctx)
		err = -EINVAL;
	if (!err)
		err = ur_live_check(UR_OBJ_PD, attr->pd);
	if (!err)
		err = ur_live_check(UR_OBJ_XRCD, attr->xrcd);
	if (!err)
		err = ur_live_check(UR_OBJ_CQ, attr->cq);
	if (!err)
		err = ur_srq_create_xrc(to_ur_pd(attr->pd),
					to_ur_xrcd(attr->xrcd),
					to_ur_cq(attr->cq), attr->srq_context,
					&attr->attr, &srq);
	if (!err) {
		err = ur_api_track(ctx, UR_OBJ_SRQ, &srq->ibsrq,
				   srq->ibsrq.handle);
		if (err)
			ur_srq_destroy(srq);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	return &srq->ibsrq;
}

int ur_op_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	int err = ur_live_check(UR_OBJ_SRQ, ibsrq);

	if (!err && (!srq_num || !to_ur_srq(ibsrq)->xrcd))
		err = -EINVAL;		/* a basic SRQ has no number */
	if (err)
		return ur_api_ret(err);
	*srq_num = to_ur_srq(ibsrq)->srq_num;
	return 0;
}
