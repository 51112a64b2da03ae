/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared receive queues: a ring of receive WQEs (srq->lock) that several
 * QPs consume, with the IBA limit ("low watermark") event: armed by
 * ibv_modify_srq(IBV_SRQ_LIMIT), raised once when the number of queued WQEs
 * drops below the limit, then disarmed (srq_limit reads back 0).
 * Scatter lists are not checked at post time; the lkeys are checked when a
 * message lands (IBA: local protection errors complete on the receive).
 * Once a QP on it connects to a same-host ring peer, its WQEs move into a
 * shared ring for good (rq_ring.c), where posts resolve the keys.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/*
 * Granted depth: 2^k - 1 >= max_wr, mlx5's, which is also what a CQ asked
 * for max_wr completions holds (cq.c), so a transport that sizes its
 * receive CQ by its SRQ (UCX's rc_verbs) cannot overrun it.
 */
static int srq_wq_alloc(struct ur_pd *parent, struct ur_wq *wq,
			uint32_t max_wr, uint32_t max_sge)
{
	wq->slots = pow2_at_least(max_wr + 1);
	wq->max_wr = wq->slots - 1;
	wq->max_sge = max_sge;
	wq->stride = sizeof(struct ur_recv_wqe) + max_sge * sizeof(struct ur_sge);
	wq->buf = ur_pd_buf_alloc(parent, (size_t)wq->slots * wq->stride,
				  UR_RES_TYPE_SRQ, &wq->custom_buf);
	return wq->buf ? 0 : -ENOMEM;
}

static void srq_wq_free(struct ur_srq *srq, struct ur_wq *wq)
{
	ur_pd_buf_free(srq->parent, wq->buf, UR_RES_TYPE_SRQ, wq->custom_buf);
}

int ur_srq_create(struct ur_pd *pd, void *srq_context,
		  struct ibv_srq_attr *attr, struct ur_srq **out)
{
	struct ur_srq *srq;
	uint32_t max_sge;

	if (!attr->max_wr || attr->max_wr > UR_MAX_SRQ_WR ||
	    attr->max_sge > UR_MAX_SRQ_SGE)
		return -EINVAL;
	max_sge = attr->max_sge ? attr->max_sge : 1;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	srq->parent = pd->prot ? pd : NULL;
	if (srq_wq_alloc(srq->parent, &srq->rq, attr->max_wr, max_sge)) {
		free(srq);
		return -ENOMEM;
	}
	pthread_spin_init(&srq->lock, PTHREAD_PROCESS_PRIVATE);
	srq->pd = ur_pd_prot(pd);
	atomic_init(&srq->usecnt, 0);
	srq->ibsrq.context = pd->ibpd.context;
	srq->ibsrq.srq_context = srq_context;
	srq->ibsrq.pd = &pd->ibpd;
	srq->ibsrq.handle = ur_obj_handle();
	pthread_mutex_init(&srq->ibsrq.mutex, NULL);
	pthread_cond_init(&srq->ibsrq.cond, NULL);
	atomic_fetch_add(&srq->pd->usecnt, 1);
	if (srq->parent)
		atomic_fetch_add(&srq->parent->usecnt, 1);
	/* report what was granted; srq_limit is ignored at creation */
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = max_sge;
	*out = srq;
	return 0;
}

int ur_srq_destroy(struct ur_srq *srq)
{
	struct ur_device *dev = ur_ctx_dev(srq->ibsrq.context);

	if (atomic_load(&srq->usecnt))
		return -EBUSY;
	ur_async_events_purge(srq->ibsrq.context, &srq->ibsrq);
	ur_srq_wait_acked(srq);
	/* as a writer: no packet in flight still looks at it */
	pthread_rwlock_wrlock(&dev->obj_lock);
	if (srq->xrcd)
		ur_u32_map_remove(&dev->srqns, srq->srq_num);
	pthread_rwlock_unlock(&dev->obj_lock);
	ur_xring_destroy(srq);	/* no other process's copy inside */
	if (srq->xrcd) {
		/* its number's record in the host registry (xrcd.c) */
		if (srq->xrc_host_slot >= 0)
			ur_xrc_host_srq_release(srq->xrc_host,
						(uint32_t)srq->xrc_host_slot);
		srq->xrc_host_slot = -1;
		atomic_fetch_sub(&srq->xrcd->usecnt, 1);
		atomic_fetch_sub(&srq->xrc_cq->usecnt, 1);
	}
	atomic_fetch_sub(&srq->pd->usecnt, 1);
	if (srq->parent)
		atomic_fetch_sub(&srq->parent->usecnt, 1);
	pthread_mutex_destroy(&srq->ibsrq.mutex);
	pthread_cond_destroy(&srq->ibsrq.cond);
	pthread_spin_destroy(&srq->lock);
	srq_wq_free(srq, &srq->rq);
	free(srq);
	return 0;
}

/* Moves the queued WQEs into nwq, which then holds the old ring for the
 * caller to free outside the lock; srq->lock held. */
static void srq_move(struct ur_srq *srq, struct ur_wq *nwq)
{
	struct ur_wq old;
	struct ur_wq *wq = &srq->rq;
	uint32_t i, n = ur_wq_count(wq);

	for (i = 0; i < n; i++)
		memcpy(ur_wq_slot(nwq, i), ur_wq_slot(wq, wq->consumer + i),
		       wq->stride);
	nwq->producer = n;
	nwq->consumer = 0;
	old = *wq;
	*wq = *nwq;
	*nwq = old;
}

int ur_srq_modify(struct ur_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct ur_wq nwq = { 0 };
	uint32_t max_wr;
	int err = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	if ((mask & IBV_SRQ_MAX_WR) &&
	    (!attr->max_wr || attr->max_wr > UR_MAX_SRQ_WR))
		return -EINVAL;
	/* a shared XRC SRQ's ring is sized once, in other processes' maps */
	if ((mask & IBV_SRQ_MAX_WR) && srq->xring)
		return -EINVAL;
	if (mask & IBV_SRQ_MAX_WR) {
		if (srq_wq_alloc(srq->parent, &nwq, attr->max_wr,
				 srq->rq.max_sge))
			return -ENOMEM;
	}
	pthread_spin_lock(&srq->lock);
	max_wr = (mask & IBV_SRQ_MAX_WR) ? nwq.max_wr : srq->rq.max_wr;
	if ((mask & IBV_SRQ_MAX_WR) && ur_wq_count(&srq->rq) > nwq.max_wr)
		err = -EINVAL;		/* cannot drop queued WQEs */
	else if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > max_wr)
		err = -EINVAL;
	if (!err) {
		if (mask & IBV_SRQ_MAX_WR) {
			srq_move(srq, &nwq);
			attr->max_wr = srq->rq.max_wr;
		}
		if (mask & IBV_SRQ_LIMIT)
			srq->limit = attr->srq_limit;
	}
	pthread_spin_unlock(&srq->lock);
	srq_wq_free(srq, &nwq);
	return err;
}

void ur_srq_query(struct ur_srq *srq, struct ibv_srq_attr *attr)
{
	pthread_spin_lock(&srq->lock);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_spin_unlock(&srq->lock);
}

int ur_srq_post(struct ur_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad)
{
	struct ur_wq *wq = &srq->rq;
	int err = 0;

	/* set once, under the lock, when the SRQ becomes shared */
	if (__atomic_load_n(&srq->xring, __ATOMIC_ACQUIRE))
		return ur_xring_post(srq, wr, bad);
	pthread_spin_lock(&srq->lock);
	/* shared meanwhile (rq_ring.c): for good, it never goes back */
	if (srq->xring) {
		pthread_spin_unlock(&srq->lock);
		return ur_xring_post(srq, wr, bad);
	}
	for (; wr; wr = wr->next) {
		struct ur_recv_wqe *w;
		uint32_t i, len = 0;

		if (wr->num_sge < 0 || (uint32_t)wr->num_sge > wq->max_sge) {
			err = -EINVAL;
			break;
		}
		if (ur_wq_count(wq) >= wq->max_wr) {
			err = -ENOMEM;
			break;
		}
		w = ur_wq_slot(wq, wq->producer);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		for (i = 0; i < w->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
			len += wr->sg_list[i].length;
		}
		w->length = len;
		wq->producer++;
	}
	pthread_spin_unlock(&srq->lock);
	if (err && bad)
		*bad = wr;
	return err;
}

int ur_srq_take(struct ur_srq *srq, struct ur_recv_wqe *out)
{
	struct ur_wq *wq = &srq->rq;
	struct ur_recv_wqe *w;
	bool fire = false;

	if (__atomic_load_n(&srq->xring, __ATOMIC_ACQUIRE))
		return ur_xring_take_local(srq, out);
	pthread_spin_lock(&srq->lock);
	if (srq->xring) {
		pthread_spin_unlock(&srq->lock);
		return ur_xring_take_local(srq, out);
	}
	if (wq->producer == wq->consumer) {
		pthread_spin_unlock(&srq->lock);
		return -EAGAIN;
	}
	w = ur_wq_slot(wq, wq->consumer);
	memcpy(out, w, sizeof(*w) + w->num_sge * sizeof(struct ur_sge));
	wq->consumer++;
	fire = ur_srq_limit_crossed(srq, ur_wq_count(wq));
	pthread_spin_unlock(&srq->lock);
	if (fire)
		ur_srq_limit_reached(srq);
	return 0;
}
