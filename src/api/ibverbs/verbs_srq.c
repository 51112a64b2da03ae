/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues: the exported verbs of basic SRQs, the
 * create_srq_ex op (which hands XRC SRQs to verbs_xrc.c) and the
 * post_srq_recv op. An SRQ needs no doorbell: a responder takes its WQEs
 * when a message arrives. obj/srq.c checks and applies.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

UR_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					 struct ibv_srq_init_attr *attr)
{
	struct ur_srq *srq = NULL;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_srq_create(to_ur_pd(pd), attr->srq_context,
				    &attr->attr, &srq);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_SRQ, &srq->ibsrq,
				   srq->ibsrq.handle);
		if (err)
			ur_srq_destroy(srq);
	}
	return ur_api_ptr(err, err ? NULL : &srq->ibsrq);
}

struct ibv_srq *ur_op_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t basic = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;

	if (attr->comp_mask & ~(uint32_t)(basic | IBV_SRQ_INIT_ATTR_XRCD |
					  IBV_SRQ_INIT_ATTR_CQ |
					  IBV_SRQ_INIT_ATTR_TM)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_XRC)
		return ur_api_create_xrc_srq(context, attr);
	if ((attr->comp_mask & ~basic) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;	/* tag matching; XRC fields on a basic */
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    ur_live_check(UR_OBJ_PD, attr->pd) ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_create_srq(attr->pd, (struct ibv_srq_init_attr *)attr);
}

UR_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			     int mask)
{
	int err = ur_live_check(UR_OBJ_SRQ, srq);

	if (!err && !attr)
		err = -EINVAL;
	if (!err)
		err = ur_srq_modify(to_ur_srq(srq), attr, mask);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	int err = ur_live_check(UR_OBJ_SRQ, srq);

	if (!err && !attr)
		err = -EINVAL;
	if (!err)
		ur_srq_query(to_ur_srq(srq), attr);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	int err = ur_live_take(UR_OBJ_SRQ, srq);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(srq, ur_srq_destroy(to_ur_srq(srq)));
}

int ur_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	return ur_api_ret(ur_srq_post(to_ur_srq(srq), wr, bad));
}
