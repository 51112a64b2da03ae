/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * QP verbs: ibv_create_qp, the create_qp_ex and open_qp ops,
 * ibv_qp_to_qp_ex, ibv_query_qp, ibv_modify_qp, ibv_destroy_qp and the ECE
 * pair ibv_query_ece/ibv_set_ece (posting is verbs_post.c's). A handle
 * from ibv_open_qp stands for an XRC_RECV QP of the XRC domain it was
 * opened in: query, modify and destroy (which closes it) take it; the QP
 * lives until its last handle, the creator's included, is destroyed. Async
 * events name the creator's handle only. obj/ checks and applies; this
 * file turns -errno into the verbs conventions (NULL + errno, or a
 * positive errno) and tells the engine what changed.
 *
 * Unsupported QP types: RAW_PACKET and DRIVER fail with
 * EOPNOTSUPP (the type exists, we do not implement it, as rxe answers);
 * a value that is no QP type at all fails with EINVAL.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "obj/obj_priv.h"

/*
 * A QP's modifies are serialized by its qp->modify_lock, from obj/'s
 * validation to the engine's apply, and destroy's engine teardown never
 * overlaps one. Both applies run under one hold of the NIC's receive lock
 * and qp->sq_lock (ur_engine_qp_lock), so no packet and no post sees the
 * new state before the engine has loaded its PSNs and path. QPs of one
 * device modify one at a time (that receive lock); of different devices,
 * in parallel.
 */

/* The PD, CQs and SRQ a new QP names must be live objects of ours. */
static int check_objects(const struct ibv_qp_init_attr_ex *attr)
{
	int ret = 0;

	if (attr->comp_mask & IBV_QP_INIT_ATTR_PD)
		ret = ur_live_check(UR_OBJ_PD, attr->pd);
	if (!ret && attr->send_cq)
		ret = ur_live_check(UR_OBJ_CQ, attr->send_cq);
	if (!ret && attr->recv_cq)
		ret = ur_live_check(UR_OBJ_CQ, attr->recv_cq);
	if (!ret && attr->srq)
		ret = ur_live_check(UR_OBJ_SRQ, attr->srq);
	if (!ret && (attr->comp_mask & IBV_QP_INIT_ATTR_XRCD))
		ret = ur_live_check(UR_OBJ_XRCD, attr->xrcd);
	return ret;
}

static struct ibv_qp *create_qp(struct ibv_context *ctx,
				struct ibv_qp_init_attr_ex *attr)
{
	struct ur_qp *qp;
	int ret;

	ret = check_objects(attr);
	if (ret)
		goto fail;
	ret = ur_qp_create(ctx, attr, &attr->cap, &qp);
	if (ret)
		goto fail;
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		ur_api_init_wr_batch_ops(qp);
	ret = ur_engine_qp_init(qp);
	if (ret) {
		ur_qp_free(qp);
		goto fail;
	}
	ret = ur_qp_publish(qp);
	if (ret) {
		ur_engine_qp_fini(qp);
		ur_qp_free(qp);
		goto fail;
	}
	ret = ur_api_track(ctx, UR_OBJ_QP, &qp->ibqp_ex.qp_base,
			   qp->ibqp_ex.qp_base.handle);
	if (ret) {
		ur_qp_unpublish(qp);
		ur_engine_qp_fini(qp);
		ur_qp_free(qp);
		goto fail;
	}
	return &qp->ibqp_ex.qp_base;
fail:
	errno = -ret;
	return NULL;
}

UR_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
				       struct ibv_qp_init_attr *init)
{
	struct ibv_qp_init_attr_ex ex;
	struct ibv_qp *qp;
	int err;

	if (!init) {
		errno = EINVAL;
		return NULL;
	}
	err = ur_live_check(UR_OBJ_PD, pd);
	if (err) {
		errno = -err;
		return NULL;
	}
	memset(&ex, 0, sizeof(ex));
	ex.qp_context = init->qp_context;
	ex.send_cq = init->send_cq;
	ex.recv_cq = init->recv_cq;
	ex.srq = init->srq;
	ex.cap = init->cap;
	ex.qp_type = init->qp_type;
	ex.sq_sig_all = init->sq_sig_all;
	ex.comp_mask = IBV_QP_INIT_ATTR_PD;
	ex.pd = pd;
	qp = create_qp(pd->context, &ex);
	if (qp)
		init->cap = ex.cap;
	return qp;
}

struct ibv_qp *ur_op_create_qp_ex(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	return create_qp(ctx, attr);
}

/* man ibv_create_qp_ex(3): NULL unless created with send_ops_flags. */
UR_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct ur_qp *qp;

	if (ur_live_check(UR_OBJ_QP, ibqp)) {
		errno = EINVAL;
		return NULL;
	}
	qp = to_ur_qp(ibqp);

	return qp->ibqp_ex.wr_start ? &qp->ibqp_ex : NULL;
}

/* The QP a handle stands for: its own, or the one ibv_open_qp opened. */
static int qp_of(struct ibv_qp *ibqp, struct ur_qp **out)
{
	int err = ur_live_check(UR_OBJ_QP, ibqp);

	if (!err)
		*out = to_ur_qp(ibqp);
	else if (!ur_live_check(UR_OBJ_QP_OPEN, ibqp))
		*out = to_ur_qp_open(ibqp)->qp;
	else
		return err;
	return 0;
}

UR_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			   int attr_mask, struct ibv_qp_init_attr *init)
{
	struct ur_qp *qp = NULL;
	int err = qp_of(ibqp, &qp);

	if (!err && (!attr || !init))
		err = -EINVAL;
	if (err)
		return ur_api_ret(err);
	/* like rdma-core: every field is filled whatever the mask */
	ur_qp_query(qp, attr, init);
	return 0;
}

/* Completions of a QP that was reset or destroyed must not be polled
 * afterwards (a restarted QP would see stale flush CQEs). */
static void clean_cqs(struct ur_qp *qp)
{
	uint32_t qpn = qp->ibqp_ex.qp_base.qp_num;

	/* XRC QPs lack one (XRC_SEND) or both (XRC_RECV) */
	if (qp->send_cq)
		ur_cq_clean(qp->send_cq, qpn);
	if (qp->recv_cq && qp->recv_cq != qp->send_cq)
		ur_cq_clean(qp->recv_cq, qpn);
}

UR_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr,
			    int attr_mask)
{
	struct ur_qp *qp = NULL;
	enum ibv_qp_state old;
	int ret = qp_of(ibqp, &qp);

	if (!ret && !attr)
		ret = -EINVAL;
	if (ret)
		return ur_api_ret(ret);
	pthread_mutex_lock(&qp->modify_lock);
	ur_engine_qp_lock(qp);
	ret = ur_qp_modify(qp, attr, attr_mask, &old);
	if (!ret)
		ur_engine_qp_modified(qp, old, attr_mask);
	ur_engine_qp_unlock(qp);
	pthread_mutex_unlock(&qp->modify_lock);
	if (!ret && qp->state == IBV_QPS_RESET)
		clean_cqs(qp);
	if (!ret && (attr_mask & IBV_QP_STATE))
		ibqp->state = attr->qp_state;	/* an opened handle's too */
	return ur_api_ret(ret);
}

static void qp_teardown(struct ur_qp *qp)
{
	struct ibv_qp *ibqp = &qp->ibqp_ex.qp_base;

	/* after unpublish no packet can find it (obj_lock write) */
	ur_qp_unpublish(qp);
	pthread_mutex_lock(&qp->modify_lock);
	ur_engine_qp_fini(qp);
	pthread_mutex_unlock(&qp->modify_lock);
	clean_cqs(qp);
	ur_async_events_purge(ibqp->context, ibqp);
	ur_qp_wait_acked(qp);
	ur_qp_free(qp);
}

/* An ibv_open_qp handle goes; the QP with it if it was the last one. */
static int close_opened(struct ibv_qp *ibqp)
{
	struct ur_qp_open *h = to_ur_qp_open(ibqp);

	if (ur_xrc_qp_release(h->qp, true))
		qp_teardown(h->qp);
	atomic_fetch_sub(&h->xrcd->usecnt, 1);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	free(h);
	return 0;
}

UR_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct ur_qp *qp = to_ur_qp(ibqp);
	int err = ur_live_take(UR_OBJ_QP, ibqp);

	if (err && !ur_live_take(UR_OBJ_QP_OPEN, ibqp)) {
		ur_live_drop(ibqp);	/* forgotten before it is freed */
		return close_opened(ibqp);
	}
	if (err)
		return ur_api_ret(err);
	/* an XRC target outlives its creator's handle while opened ones do */
	if (qp->type != IBV_QPT_XRC_RECV || ur_xrc_qp_release(qp, false))
		qp_teardown(qp);
	return ur_api_destroyed(ibqp, 0);
}

/* ibv_open_qp (man ibv_open_qp(3); rdma-core's ibv_cmd_open_qp rules). */
struct ibv_qp *ur_op_open_qp(struct ibv_context *ctx,
			     struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
			      IBV_QP_OPEN_ATTR_TYPE;
	struct ur_qp_open *h;
	struct ur_qp *qp;
	int err = 0;

	if (!attr || attr->comp_mask >= IBV_QP_OPEN_ATTR_RESERVED)
		err = attr ? -EOPNOTSUPP : -EINVAL;
	else if ((attr->comp_mask & need) != need ||
		 attr->qp_type != IBV_QPT_XRC_RECV)
		err = -EINVAL;
	else
		err = ur_live_check(UR_OBJ_XRCD, attr->xrcd);
	if (!err && attr->xrcd->context != ctx)
		err = -EINVAL;
	if (err)
		goto fail;
	h = calloc(1, sizeof(*h));
	if (!h) {
		err = -ENOMEM;
		goto fail;
	}
	err = ur_xrc_qp_open(to_ur_xrcd(attr->xrcd), attr->qp_num, &qp);
	if (err) {
		free(h);
		goto fail;
	}
	h->qp = qp;
	h->xrcd = to_ur_xrcd(attr->xrcd);
	atomic_fetch_add(&h->xrcd->usecnt, 1);
	h->ibqp.context = ctx;
	h->ibqp.qp_context = (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ?
				     attr->qp_context : NULL;
	h->ibqp.qp_num = attr->qp_num;
	h->ibqp.qp_type = IBV_QPT_XRC_RECV;
	h->ibqp.state = IBV_QPS_UNKNOWN;
	h->ibqp.handle = ur_obj_handle();
	pthread_mutex_init(&h->ibqp.mutex, NULL);
	pthread_cond_init(&h->ibqp.cond, NULL);
	err = ur_api_track(ctx, UR_OBJ_QP_OPEN, &h->ibqp, h->ibqp.handle);
	if (err) {
		close_opened(&h->ibqp);
		goto fail;
	}
	return &h->ibqp;
fail:
	errno = -err;
	return NULL;
}

/*
 * Enhanced Connection Establishment: a QP's vendor options, exchanged by
 * the CM and applied by the device as the QP goes to RTR and RTS. uroce's
 * device has none, so it answers as an ECE-capable NIC whose firmware
 * accepts no option: query reports our vendor id with options 0, and set
 * takes any options of our vendor and keeps none of them (the accepted
 * set, which query returns, is the empty one). mlx5's checks and errno
 * values, in its order: comp_mask, then vendor (libibverbs refuses vendor
 * 0 with EOPNOTSUPP before the provider sees it). Options are negotiated
 * before the connection exists: a QP past RTR is refused (mlx5 would
 * keep them for a transition that never comes; docs/deviations.md).
 */
UR_EXPORT int ibv_query_ece(struct ibv_qp *ibqp, struct ibv_ece *ece)
{
	struct ur_qp *qp = NULL;
	int err = qp_of(ibqp, &qp);

	if (!err && !ece)
		err = -EINVAL;
	if (err)
		return ur_api_ret(err);
	ece->vendor_id = UR_VENDOR_ID;
	ece->options = 0;
	ece->comp_mask = 0;
	return 0;
}

UR_EXPORT int ibv_set_ece(struct ibv_qp *ibqp, struct ibv_ece *ece)
{
	struct ur_qp *qp = NULL;
	int err;

	if (!ece)
		return ur_api_ret(-EINVAL);
	if (!ece->vendor_id)
		return ur_api_ret(-EOPNOTSUPP);
	err = qp_of(ibqp, &qp);
	if (!err && (ece->comp_mask || ece->vendor_id != UR_VENDOR_ID))
		err = -EINVAL;
	if (!err) {
		switch (atomic_load(&qp->state)) {
		case IBV_QPS_RESET:
		case IBV_QPS_INIT:
		case IBV_QPS_RTR:
			break;
		default:
			err = -EINVAL;
		}
	}
	return ur_api_ret(err);
}
