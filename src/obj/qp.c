/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Queue pairs: creation checks and granted capabilities, the WQE rings,
 * random QP numbers, query, destruction, and the two functions the engine
 * uses to find a QP and take its receive WQEs.
 *
 * QPNs are 24 random bits from the OS CSPRNG (never 0, 1 or 0xFFFFFF),
 * unique among the live QPs of a device and not equal to any of the last
 * UR_QPN_RECENT numbers freed in the process, so a late packet for a
 * destroyed QP does not land on its successor.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"
#include "util/log.h"
#include "util/random.h"

#define UR_QPN_RECENT 1024
#define UR_QPN_TRIES 256

static pthread_mutex_t recent_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t recent_qpns[UR_QPN_RECENT];
static unsigned int recent_pos;

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

/* parent: the parent domain whose allocator provides the ring, or NULL. */
static int wq_alloc(struct ur_pd *parent, struct ur_wq *wq, uint32_t max_wr,
		    uint32_t stride)
{
	memset(wq, 0, sizeof(*wq));
	wq->slots = pow2_at_least(max_wr ? max_wr : 1);
	wq->stride = UR_ALIGN_UP(stride, 8u);
	wq->max_wr = max_wr;
	wq->buf = ur_pd_buf_alloc(parent, (size_t)wq->slots * wq->stride,
				  UR_RES_TYPE_QP, &wq->custom_buf);
	return wq->buf ? 0 : -ENOMEM;
}

static void qp_bufs_free(struct ur_qp *qp)
{
	ur_pd_buf_free(qp->parent, qp->sq.buf, UR_RES_TYPE_QP,
		       qp->sq.custom_buf);
	ur_pd_buf_free(qp->parent, qp->rq.buf, UR_RES_TYPE_QP,
		       qp->rq.custom_buf);
}

/* comp_mask bits we know but do not implement */
#define UR_QP_INIT_UNSUPPORTED                                                 \
	(IBV_QP_INIT_ATTR_MAX_TSO_HEADER | IBV_QP_INIT_ATTR_IND_TABLE |        \
	 IBV_QP_INIT_ATTR_RX_HASH)
#define UR_QP_INIT_SUPPORTED                                                   \
	(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_CREATE_FLAGS |                 \
	 IBV_QP_INIT_ATTR_SEND_OPS_FLAGS | IBV_QP_INIT_ATTR_XRCD)

static int check_type(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return 0;
	case IBV_QPT_RAW_PACKET:
	case IBV_QPT_DRIVER:
		return -EOPNOTSUPP;	/* real types we do not implement */
	default:
		return -EINVAL;
	}
}

/*
 * An XRC target QP (XRC_RECV) has an XRC domain and nothing else: no PD,
 * no CQ, no SRQ, no queue (what the kernel does with those fields: they
 * are ignored); the XRC SRQ its requests name lends it all of them.
 */
static int check_xrc_recv_attr(struct ibv_context *ctx,
			       const struct ibv_qp_init_attr_ex *a)
{
	if (!(a->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !a->xrcd ||
	    a->xrcd->context != ctx)
		return -EINVAL;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		return -EINVAL;		/* nothing to send with */
	return 0;
}

static int check_init_attr(struct ibv_context *ctx,
			   const struct ibv_qp_init_attr_ex *a)
{
	const struct ibv_qp_cap *c = &a->cap;
	/* an XRC initiator has a send queue only: its receive side (recv_cq,
	 * srq, receive caps) is ignored, as the kernel ignores it */
	bool has_rq = a->qp_type != IBV_QPT_XRC_SEND;
	int ret;

	if (a->comp_mask & ~(uint32_t)(UR_QP_INIT_SUPPORTED |
				       UR_QP_INIT_UNSUPPORTED))
		return -EINVAL;
	if (a->comp_mask & UR_QP_INIT_UNSUPPORTED)
		return -EOPNOTSUPP;
	/* the one creation flag: a UD QP that does not hear its own
	 * multicast (engine/recv.c); mlx5 refuses it on other types too */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && a->create_flags &&
	    (a->create_flags != IBV_QP_CREATE_BLOCK_SELF_MCAST_LB ||
	     a->qp_type != IBV_QPT_UD))
		return -EOPNOTSUPP;
	/* (an XRC target has no PD) */
	if (a->qp_type != IBV_QPT_XRC_RECV &&
	    (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd))
		return -EINVAL;
	ret = check_type(a->qp_type);
	if (ret)
		return ret;
	if (a->qp_type == IBV_QPT_XRC_RECV)
		return check_xrc_recv_attr(ctx, a);
	if (!a->send_cq || (has_rq && !a->recv_cq))
		return -EINVAL;
	if (a->pd->context != ctx || a->send_cq->context != ctx ||
	    (has_rq && (a->recv_cq->context != ctx ||
			(a->srq && a->srq->context != ctx))))
		return -EINVAL;
	if (c->max_send_wr > UR_MAX_QP_WR || c->max_send_sge > UR_MAX_SGE ||
	    c->max_inline_data > UR_MAX_INLINE_DATA)
		return -EINVAL;
	if (has_rq && !a->srq &&
	    (c->max_recv_wr > UR_MAX_QP_WR || c->max_recv_sge > UR_MAX_SGE))
		return -EINVAL;
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~ur_wr_send_ops_supported(a->qp_type)))
		return -EOPNOTSUPP;
	return 0;
}

/* XRC_RECV has no send queue, XRC_SEND and XRC_RECV no receive queue. */
static bool qp_has_sq(const struct ur_qp *qp)
{
	return qp->type != IBV_QPT_XRC_RECV;
}

static bool qp_has_rq(const struct ur_qp *qp)
{
	return qp->type != IBV_QPT_XRC_SEND && qp->type != IBV_QPT_XRC_RECV;
}

/* The objects a QP names, each held (usecnt) while the QP lives. */
static void qp_link_objects(struct ur_qp *qp,
			    const struct ibv_qp_init_attr_ex *attr)
{
	if (qp->type == IBV_QPT_XRC_RECV) {
		qp->xrcd = to_ur_xrcd(attr->xrcd);
		atomic_fetch_add(&qp->xrcd->usecnt, 1);
		return;
	}
	qp->pd = ur_pd_prot(to_ur_pd(attr->pd));
	qp->send_cq = to_ur_cq(attr->send_cq);
	atomic_fetch_add(&qp->pd->usecnt, 1);
	if (qp->parent)
		atomic_fetch_add(&qp->parent->usecnt, 1);
	atomic_fetch_add(&qp->send_cq->usecnt, 1);
	if (!qp_has_rq(qp))
		return;
	qp->recv_cq = to_ur_cq(attr->recv_cq);
	qp->srq = attr->srq ? to_ur_srq(attr->srq) : NULL;
	atomic_fetch_add(&qp->recv_cq->usecnt, 1);
	if (qp->srq)
		atomic_fetch_add(&qp->srq->usecnt, 1);
}

static void qp_unlink_objects(struct ur_qp *qp)
{
	if (qp->xrcd)
		atomic_fetch_sub(&qp->xrcd->usecnt, 1);
	if (qp->pd)
		atomic_fetch_sub(&qp->pd->usecnt, 1);
	if (qp->parent)
		atomic_fetch_sub(&qp->parent->usecnt, 1);
	if (qp->send_cq)
		atomic_fetch_sub(&qp->send_cq->usecnt, 1);
	if (qp->recv_cq)
		atomic_fetch_sub(&qp->recv_cq->usecnt, 1);
	if (qp->srq)
		atomic_fetch_sub(&qp->srq->usecnt, 1);
}

/* What a send slot really holds: max(SGE array, inline bytes), and at
 * least the 8 bytes ibv_wr_atomic_write copies into it (obj/post.c). */
static uint32_t send_room(uint32_t max_sge, uint32_t max_inline)
{
	return UR_MAX(UR_MAX(max_sge * (uint32_t)sizeof(struct ur_sge),
			     (uint32_t)UR_ALIGN_UP(max_inline, 8u)),
		      8u);
}

int ur_qp_create(struct ibv_context *ctx,
		 const struct ibv_qp_init_attr_ex *attr, struct ibv_qp_cap *cap,
		 struct ur_qp **out)
{
	struct ur_context *uctx = to_ur_context(ctx);
	const struct ibv_qp_cap *c = &attr->cap;
	uint32_t inl, rq_wr, rq_sge;
	struct ur_qp *qp;
	struct ibv_qp *ibqp;
	int ret;

	ret = check_init_attr(ctx, attr);
	if (ret)
		return ret;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->type = attr->qp_type;
	if (qp->type != IBV_QPT_XRC_RECV && to_ur_pd(attr->pd)->prot)
		qp->parent = to_ur_pd(attr->pd);

	/* inline: what the slot holds anyway, at least what was asked */
	inl = UR_MIN((uint32_t)UR_MAX_INLINE_DATA,
		     UR_MAX(c->max_inline_data,
			    c->max_send_sge * (uint32_t)sizeof(struct ur_sge)));
	if (qp->type == IBV_QPT_XRC_RECV)
		inl = 0;
	ret = wq_alloc(qp->parent, &qp->sq, qp_has_sq(qp) ? c->max_send_wr : 0,
		       sizeof(struct ur_send_wqe) +
			       send_room(qp_has_sq(qp) ? c->max_send_sge : 0,
					 inl));
	if (ret)
		goto err;
	qp->sq.max_sge = qp_has_sq(qp) ? c->max_send_sge : 0;
	qp->sq.max_inline = inl;

	rq_wr = attr->srq || !qp_has_rq(qp) ? 0 : c->max_recv_wr;
	rq_sge = attr->srq || !qp_has_rq(qp) ? 0 : c->max_recv_sge;
	ret = wq_alloc(qp->parent, &qp->rq, rq_wr, sizeof(struct ur_recv_wqe) +
			       rq_sge * sizeof(struct ur_sge));
	if (ret)
		goto err;
	qp->rq.max_sge = rq_sge;

	qp->dev = uctx->dev;
	qp->sq_sig_all = !!attr->sq_sig_all;
	qp->mcast_block_self =
		(attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) &&
		(attr->create_flags & IBV_QP_CREATE_BLOCK_SELF_MCAST_LB);
	qp->state = IBV_QPS_RESET;
	ur_qp_attr_defaults(qp);
	pthread_mutex_init(&qp->modify_lock, NULL);
	pthread_mutex_init(&qp->sq_lock, NULL);
	pthread_spin_init(&qp->rq_lock, PTHREAD_PROCESS_PRIVATE);
	qp_link_objects(qp, attr);

	ibqp = &qp->ibqp_ex.qp_base;
	ibqp->context = ctx;
	ibqp->qp_context = attr->qp_context;
	ibqp->pd = qp->pd ? attr->pd : NULL;
	ibqp->send_cq = qp->send_cq ? attr->send_cq : NULL;
	ibqp->recv_cq = qp->recv_cq ? attr->recv_cq : NULL;
	ibqp->srq = qp->srq ? attr->srq : NULL;
	ibqp->qp_type = attr->qp_type;
	ibqp->state = IBV_QPS_RESET;
	ibqp->events_completed = 0;
	pthread_mutex_init(&ibqp->mutex, NULL);
	pthread_cond_init(&ibqp->cond, NULL);

	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		ur_qp_init_wr_ops(qp);

	ur_qp_caps(qp, cap);
	*out = qp;
	return 0;
err:
	qp_bufs_free(qp);
	free(qp);
	return ret;
}

static bool qpn_recent(uint32_t qpn)
{
	unsigned int i;

	for (i = 0; i < UR_QPN_RECENT; i++)
		if (recent_qpns[i] == qpn)
			return true;
	return false;
}

int ur_qp_publish(struct ur_qp *qp)
{
	struct ur_device *dev = qp->dev;
	uint32_t qpn = 0;
	int ret = -ENOMEM;
	unsigned int i;

	pthread_rwlock_wrlock(&dev->obj_lock);
	pthread_mutex_lock(&recent_lock);
	if (dev->qpns.live >= UR_MAX_QP)
		goto out;
	for (i = 0; i < UR_QPN_TRIES; i++) {
		qpn = ur_random_u32() & UR_QPN_MASK;
		if (qpn <= 1 || qpn == UR_QPN_MASK)
			continue;
		if (ur_u32_map_contains(&dev->qpns, qpn) || qpn_recent(qpn))
			continue;
		ret = ur_u32_map_insert(&dev->qpns, qpn, qp);
		break;
	}
	if (!ret) {
		qp->ibqp_ex.qp_base.qp_num = qpn;
		qp->ibqp_ex.qp_base.handle = qpn;
	}
out:
	pthread_mutex_unlock(&recent_lock);
	pthread_rwlock_unlock(&dev->obj_lock);
	return ret;
}

void ur_qp_unpublish(struct ur_qp *qp)
{
	struct ur_device *dev = qp->dev;
	uint32_t qpn = qp->ibqp_ex.qp_base.qp_num;

	if (!qpn)
		return;
	pthread_rwlock_wrlock(&dev->obj_lock);
	if (ur_u32_map_find(&dev->qpns, qpn) == qp)
		ur_u32_map_remove(&dev->qpns, qpn);
	pthread_mutex_lock(&recent_lock);
	recent_qpns[recent_pos++ % UR_QPN_RECENT] = qpn;
	pthread_mutex_unlock(&recent_lock);
	pthread_rwlock_unlock(&dev->obj_lock);
}

void ur_qp_free(struct ur_qp *qp)
{
	struct ibv_qp *ibqp = &qp->ibqp_ex.qp_base;

	qp_unlink_objects(qp);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	pthread_mutex_destroy(&qp->modify_lock);
	pthread_mutex_destroy(&qp->sq_lock);
	pthread_spin_destroy(&qp->rq_lock);
	qp_bufs_free(qp);
	free(qp);
}

void ur_qp_caps(const struct ur_qp *qp, struct ibv_qp_cap *cap)
{
	cap->max_send_wr = qp->sq.max_wr;
	cap->max_send_sge = qp->sq.max_sge;
	cap->max_inline_data = qp->sq.max_inline;
	cap->max_recv_wr = qp->rq.max_wr;
	cap->max_recv_sge = qp->rq.max_sge;
}

void ur_qp_query(struct ur_qp *qp, struct ibv_qp_attr *attr,
		 struct ibv_qp_init_attr *init)
{
	struct ibv_qp *ibqp = &qp->ibqp_ex.qp_base;

	pthread_mutex_lock(&qp->sq_lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	ur_qp_caps(qp, &attr->cap);
	pthread_mutex_unlock(&qp->sq_lock);

	memset(init, 0, sizeof(*init));
	init->qp_context = ibqp->qp_context;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->srq = ibqp->srq;
	init->cap = attr->cap;
	init->qp_type = qp->type;
	init->sq_sig_all = qp->sq_sig_all;
}

struct ur_qp *ur_qp_lookup(struct ur_device *dev, uint32_t qpn)
{
	return ur_u32_map_find(&dev->qpns, qpn & UR_QPN_MASK);
}

/*
 * Why a responder found no receive (an RNR NAK on RC, a drop on UD/UC):
 * every receive the application posted was taken. The completions still
 * in the receive CQ tell an application that is behind (it has not polled
 * them) from one that polled them but did not post again yet. Not said
 * for the flush of a QP in ERR, which empties the queue on purpose.
 */
static void rq_empty_note(struct ur_qp *qp, uint32_t posted)
{
	uint32_t unpolled = 0;

	if (likely(ur_log_level < UR_LOG_DEBUG) || qp->state == IBV_QPS_ERR)
		return;
	if (qp->recv_cq) {
		pthread_spin_lock(&qp->recv_cq->lock);
		unpolled = qp->recv_cq->tail - qp->recv_cq->head;
		pthread_spin_unlock(&qp->recv_cq->lock);
	}
	ur_dbg("qp %u: receive queue empty: all %u receives posted since "
	       "RESET were taken; %u completions in its CQ not yet polled",
	       qp->ibqp_ex.qp_base.qp_num, posted, unpolled);
}

int ur_qp_take_recv(struct ur_qp *qp, struct ur_recv_wqe *out)
{
	const struct ur_recv_wqe *w;
	struct ur_wq *rq = &qp->rq;

	if (ur_qp_rq_srq(qp))
		return ur_srq_take(ur_qp_rq_srq(qp), out);
	if (qp->type == IBV_QPT_XRC_RECV)
		return qp->xrc_ring ? ur_xring_take(qp->xrc_ring, out) : -EAGAIN;
	pthread_spin_lock(&qp->rq_lock);
	if (qp->rq_ring) {
		int rc = ur_rq_ring_take(qp, out);

		if (rc <= 0) {
			pthread_spin_unlock(&qp->rq_lock);
			return rc;
		}
	}
	if (rq->producer == rq->consumer) {
		uint32_t posted = rq->producer;

		pthread_spin_unlock(&qp->rq_lock);
		rq_empty_note(qp, posted);
		return -EAGAIN;
	}
	w = ur_wq_slot(rq, rq->consumer);
	memcpy(out, w, sizeof(*w) + w->num_sge * sizeof(struct ur_sge));
	rq->consumer++;
	pthread_spin_unlock(&qp->rq_lock);
	return 0;
}
