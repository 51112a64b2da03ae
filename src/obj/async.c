/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Asynchronous events. Each context queues its events (async_lock) and
 * counts them in its async eventfd (semaphore mode), which is the
 * ibv_context.async_fd users poll or make non-blocking. Getting an event
 * counts it as delivered on its object; acking counts it as completed in
 * the verbs object (events_completed / async_events_completed) and wakes a
 * destroy that waits for every delivered event to be acked.
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "obj/obj_priv.h"

void ur_async_event_post(struct ibv_context *ctx,
			 const struct ibv_async_event *ev)
{
	struct ur_context *uctx = to_ur_context(ctx);
	struct ur_async_event *e = malloc(sizeof(*e));
	uint64_t one = 1;

	if (!e)
		return;		/* nothing better to do: the event is lost */
	e->ev = *ev;
	pthread_mutex_lock(&uctx->async_lock);
	ur_list_add_tail(&uctx->async_events, &e->node);
	pthread_mutex_unlock(&uctx->async_lock);
	if (write(uctx->async_efd, &one, sizeof(one)) != sizeof(one))
		return;
}

/* The object an affiliated event names, NULL for device/port events. */
static const void *event_object(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		return ev->element.cq;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return ev->element.qp;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return ev->element.srq;
	case IBV_EVENT_WQ_FATAL:
		return ev->element.wq;
	default:
		return NULL;
	}
}

void ur_async_events_purge(struct ibv_context *ctx, const void *obj)
{
	struct ur_context *uctx = to_ur_context(ctx);
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&uctx->async_lock);
	ur_list_for_each_safe(pos, tmp, &uctx->async_events) {
		struct ur_async_event *e =
			ur_list_entry(pos, struct ur_async_event, node);

		if (event_object(&e->ev) == obj) {
			ur_list_del(pos);
			free(e);
		}
	}
	pthread_mutex_unlock(&uctx->async_lock);
}

static void mark_delivered(const struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ur_cq *cq = to_ur_cq(ev->element.cq);

		pthread_mutex_lock(&cq->ibcq.mutex);
		cq->async_delivered++;
		pthread_mutex_unlock(&cq->ibcq.mutex);
		break;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ur_qp *qp = to_ur_qp(ev->element.qp);

		pthread_mutex_lock(&qp->ibqp_ex.qp_base.mutex);
		qp->async_delivered++;
		pthread_mutex_unlock(&qp->ibqp_ex.qp_base.mutex);
		break;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ur_srq *srq = to_ur_srq(ev->element.srq);

		pthread_mutex_lock(&srq->ibsrq.mutex);
		srq->async_delivered++;
		pthread_mutex_unlock(&srq->ibsrq.mutex);
		break;
	}
	default:
		break;
	}
}

int ur_async_event_get(struct ur_context *uctx, struct ibv_async_event *ev)
{
	struct ur_async_event *e;
	uint64_t v;

	for (;;) {
		if (read(uctx->async_efd, &v, sizeof(v)) != sizeof(v))
			return errno ? -errno : -EIO;
		pthread_mutex_lock(&uctx->async_lock);
		if (!ur_list_empty(&uctx->async_events))
			break;
		pthread_mutex_unlock(&uctx->async_lock);
	}
	e = ur_list_first(&uctx->async_events, struct ur_async_event, node);
	ur_list_del(&e->node);
	pthread_mutex_unlock(&uctx->async_lock);
	*ev = e->ev;
	free(e);
	mark_delivered(ev);
	return 0;
}

static void ack_one(pthread_mutex_t *mu, pthread_cond_t *cv, uint32_t *cnt)
{
	pthread_mutex_lock(mu);
	(*cnt)++;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(mu);
}

void ur_async_event_ack(struct ibv_async_event *ev)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR:
		ack_one(&ev->element.cq->mutex, &ev->element.cq->cond,
			&ev->element.cq->async_events_completed);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		ack_one(&ev->element.qp->mutex, &ev->element.qp->cond,
			&ev->element.qp->events_completed);
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		ack_one(&ev->element.srq->mutex, &ev->element.srq->cond,
			&ev->element.srq->events_completed);
		break;
	case IBV_EVENT_WQ_FATAL:
		ack_one(&ev->element.wq->mutex, &ev->element.wq->cond,
			&ev->element.wq->events_completed);
		break;
	default:
		break;		/* device and port events: nothing to count */
	}
}

void ur_srq_wait_acked(struct ur_srq *srq)
{
	pthread_mutex_lock(&srq->ibsrq.mutex);
	while (srq->ibsrq.events_completed != srq->async_delivered)
		pthread_cond_wait(&srq->ibsrq.cond, &srq->ibsrq.mutex);
	pthread_mutex_unlock(&srq->ibsrq.mutex);
}

/* ibv_destroy_qp(3): returns only after every event delivered for the QP
 * was acknowledged. */
void ur_qp_wait_acked(struct ur_qp *qp)
{
	struct ibv_qp *ibqp = &qp->ibqp_ex.qp_base;

	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->async_delivered)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
}

/* Drops the events still queued on a closing context. */
void ur_async_events_drain(struct ur_context *uctx)
{
	struct ur_list *pos, *tmp;

	pthread_mutex_lock(&uctx->async_lock);
	ur_list_for_each_safe(pos, tmp, &uctx->async_events) {
		ur_list_del(pos);
		free(ur_list_entry(pos, struct ur_async_event, node));
	}
	pthread_mutex_unlock(&uctx->async_lock);
}
