/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The QP of an rdma_cm id, which the CM moves through its states as
 * rdma-core does (INIT with no remote access at rdma_create_qp; the access
 * flags, RTR and RTS when the connection is made; ERR on disconnect), and
 * the CQs rdma_create_qp makes when the caller gives none.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/rdmacm/rdmacm_priv.h"
#include "util/random.h"

/* Attributes for moving the id's QP to state (rdma_init_qp_attr). Lock held. */
int cma_qp_attr(struct cma_id *id, enum ibv_qp_state state,
		struct ibv_qp_attr *a, int *mask)
{
	bool connected = id->state >= CMA_REQ_SENT;

	memset(a, 0, sizeof(*a));
	a->qp_state = state;
	switch (state) {
	case IBV_QPS_INIT:
		a->pkey_index = 0;
		a->port_num = 1;
		*mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (id->id.qp_type == IBV_QPT_UD) {
			a->qkey = RDMA_UDP_QKEY;
			*mask |= IBV_QP_QKEY;
			return 0;
		}
		a->qp_access_flags = 0;
		if (connected) {
			a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
			if (id->resp_res)
				a->qp_access_flags |= IBV_ACCESS_REMOTE_READ |
						      IBV_ACCESS_REMOTE_ATOMIC;
		}
		*mask |= IBV_QP_ACCESS_FLAGS;
		return 0;
	case IBV_QPS_RTR:
		*mask = IBV_QP_STATE;
		if (id->id.qp_type == IBV_QPT_UD)
			return 0;
		if (!connected)
			return EINVAL;
		/* an XRC initiator receives nothing: no responder fields */
		if (id->id.qp_type != IBV_QPT_XRC_SEND)
			*mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				 IBV_QP_MIN_RNR_TIMER;
		a->path_mtu = id->path_mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->rq_psn;
		a->max_dest_rd_atomic = id->resp_res;
		a->min_rnr_timer = 0;	/* 655 ms, as rdma-core's CM programs */
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		memcpy(a->ah_attr.grh.dgid.raw, id->peer_gid, 16);
		a->ah_attr.grh.sgid_index = id->sgid;
		a->ah_attr.grh.hop_limit = UR_DEFAULT_HOP_LIMIT;
		a->ah_attr.grh.traffic_class = id->tos;
		*mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			 IBV_QP_RQ_PSN;
		return 0;
	case IBV_QPS_RTS:
		a->sq_psn = id->sq_psn;
		*mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->id.qp_type == IBV_QPT_UD)
			return 0;
		if (!connected)
			return EINVAL;
		a->timeout = id->ack_timeout;
		*mask |= IBV_QP_TIMEOUT;
		if (id->id.qp_type == IBV_QPT_XRC_RECV)
			return 0;	/* a target sends nothing of its own */
		a->retry_cnt = id->retry_count;
		a->rnr_retry = id->rnr_retry;
		a->max_rd_atomic = id->init_depth;
		*mask |= IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			 IBV_QP_MAX_QP_RD_ATOMIC;
		return 0;
	default:
		return EINVAL;
	}
}

UR_EXPORT int rdma_init_qp_attr(struct rdma_cm_id *id,
				struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	int ret;

	if (!id || !qp_attr || !qp_attr_mask)
		return cma_err(EINVAL);
	pthread_mutex_lock(&cma.lock);
	ret = cma_qp_attr(to_cma_id(id), qp_attr->qp_state, qp_attr,
			  qp_attr_mask);
	pthread_mutex_unlock(&cma.lock);
	return ret ? cma_err(ret) : 0;
}

/* Moves id->qp to state with cma_qp_attr's attributes. Lock held. */
int cma_modify_qp(struct cma_id *id, enum ibv_qp_state state)
{
	struct ibv_qp_attr a;
	int mask, ret;

	if (!id->id.qp)
		return 0;
	ret = cma_qp_attr(id, state, &a, &mask);
	if (ret)
		return ret;
	return ibv_modify_qp(id->id.qp, &a, mask);
}

void cma_qp_to_err(struct cma_id *id)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	if (id->id.qp)
		ibv_modify_qp(id->id.qp, &a, IBV_QP_STATE);
}

int cma_create_recv_cq(struct rdma_cm_id *id, int n)
{
	id->recv_cq_channel = ibv_create_comp_channel(id->verbs);
	if (!id->recv_cq_channel)
		return errno ? errno : ENOMEM;
	id->recv_cq = ibv_create_cq(id->verbs, n > 0 ? n : 1, id,
				    id->recv_cq_channel, 0);
	if (!id->recv_cq)
		return errno ? errno : ENOMEM;
	return 0;
}

/*
 * The CQs an id's QP gets when the caller gives none. An XRC_RECV QP has
 * neither queue (its receives complete on the CQ of the XRC SRQ,
 * rdma_create_srq's), an XRC_SEND QP no receive queue.
 */
static int create_cqs(struct cma_id *cid, struct ibv_qp_init_attr_ex *attr)
{
	struct rdma_cm_id *id = &cid->id;

	if (attr->qp_type == IBV_QPT_XRC_RECV)
		return 0;
	if (!attr->send_cq) {
		id->send_cq_channel = ibv_create_comp_channel(id->verbs);
		if (!id->send_cq_channel)
			return errno ? errno : ENOMEM;
		id->send_cq = ibv_create_cq(id->verbs,
					    (int)(attr->cap.max_send_wr ?
						  attr->cap.max_send_wr : 1),
					    id, id->send_cq_channel, 0);
		if (!id->send_cq)
			return errno ? errno : ENOMEM;
		attr->send_cq = id->send_cq;
	}
	if (!attr->recv_cq && !attr->srq && attr->qp_type != IBV_QPT_XRC_SEND) {
		int ret = cma_create_recv_cq(id, (int)attr->cap.max_recv_wr);

		if (ret)
			return ret;
		attr->recv_cq = id->recv_cq;
	}
	return 0;
}

void cma_destroy_cqs(struct rdma_cm_id *id)
{
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	if (id->recv_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->recv_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

/* What a failed rdma_create_qp_ex made (create_cqs): an XRC_RECV id's
 * receive CQ, if any, is its SRQ's and stays. */
static void undo_cqs(struct rdma_cm_id *id,
		     const struct ibv_qp_init_attr_ex *attr)
{
	if (attr->qp_type != IBV_QPT_XRC_RECV)
		cma_destroy_cqs(id);
}

UR_EXPORT int rdma_create_qp_ex(struct rdma_cm_id *id,
				struct ibv_qp_init_attr_ex *attr)
{
	struct cma_id *cid;
	struct ibv_qp *qp;
	int ret;

	if (!id || !attr || !id->verbs)
		return cma_err(EINVAL);
	cid = to_cma_id(id);
	if (id->qp)
		return cma_err(EINVAL);
	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_PD) || !attr->pd) {
		attr->pd = id->pd ? id->pd : cid->dev->pd;
		attr->comp_mask |= IBV_QP_INIT_ATTR_PD;
	}
	if (attr->pd->context != id->verbs)
		return cma_err(EINVAL);
	/* an XRC target QP lives in a domain: the device's, as rdma-core */
	if (attr->qp_type == IBV_QPT_XRC_RECV &&
	    (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd)) {
		pthread_mutex_lock(&cma.lock);
		attr->xrcd = cma_dev_xrcd(cid->dev);
		pthread_mutex_unlock(&cma.lock);
		if (!attr->xrcd)
			return -1;
		attr->comp_mask |= IBV_QP_INIT_ATTR_XRCD;
	}
	/* an XRC QP has no SRQ of its own: an XRC_RECV id's is its target */
	if (!attr->srq && id->srq && attr->qp_type != IBV_QPT_XRC_RECV &&
	    attr->qp_type != IBV_QPT_XRC_SEND)
		attr->srq = id->srq;
	ret = create_cqs(cid, attr);
	if (ret) {
		undo_cqs(id, attr);
		return cma_err(ret);
	}
	qp = ibv_create_qp_ex(id->verbs, attr);
	if (!qp) {
		ret = errno ? errno : ENOMEM;
		undo_cqs(id, attr);
		return cma_err(ret);
	}
	pthread_mutex_lock(&cma.lock);
	id->qp = qp;
	id->pd = attr->pd;	/* rdma_verbs.h's rdma_reg_msgs() uses it */
	cid->srq = attr->srq != NULL;
	ret = cma_modify_qp(cid, IBV_QPS_INIT);
	if (!ret && id->qp_type != IBV_QPT_UD)
		ret = cma_ece_qp_created(cid, qp);
	if (!ret && id->qp_type == IBV_QPT_UD) {
		cid->sq_psn = ur_random_u32() & UR_PSN_MASK;
		ret = cma_modify_qp(cid, IBV_QPS_RTR);
		if (!ret)
			ret = cma_modify_qp(cid, IBV_QPS_RTS);
	}
	if (ret)
		id->qp = NULL;
	pthread_mutex_unlock(&cma.lock);
	if (ret) {
		ibv_destroy_qp(qp);
		undo_cqs(id, attr);
		return cma_err(ret);
	}
	return 0;
}

UR_EXPORT int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	int ret;

	if (!id || !qp_init_attr)
		return cma_err(EINVAL);
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	ret = rdma_create_qp_ex(id, &ax);
	if (ret)
		return ret;
	qp_init_attr->send_cq = ax.send_cq;
	qp_init_attr->recv_cq = ax.recv_cq;
	qp_init_attr->srq = ax.srq;
	qp_init_attr->cap = ax.cap;
	return 0;
}

UR_EXPORT void rdma_destroy_qp(struct rdma_cm_id *id)
{
	struct ibv_qp *qp;

	if (!id)
		return;
	pthread_mutex_lock(&cma.lock);
	qp = id->qp;
	id->qp = NULL;
	pthread_mutex_unlock(&cma.lock);
	if (qp)
		ibv_destroy_qp(qp);
	/* an XRC target's receive CQ is its SRQ's (rdma_destroy_srq) */
	if (!(id->qp_type == IBV_QPT_XRC_RECV && id->srq))
		cma_destroy_cqs(id);
}
