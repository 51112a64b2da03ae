/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Asynchronous events. Each context queues its events (async_lock) and
 * counts them in its async fd (util/evcount.h), which is the
 * ibv_context.async_fd users poll or make non-blocking. Getting an event
 * counts it as delivered on its object; acking counts it as completed in
 * the verbs object (events_completed / async_events_completed) and wakes a
 * destroy that waits for every delivered event to be acked.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "obj/obj_priv.h"
#include "util/evcount.h"

void ur_async_event_post(struct ibv_context *ctx,
			 const struct ibv_async_event *ev)
{
	struct ur_context *uctx = to_ur_context(ctx);
	struct ur_async_event *e = malloc(sizeof(*e));

	if (!e)
		return;		/* nothing better to do: the event is lost */
	e->ev = *ev;
	pthread_mutex_lock(&uctx->async_lock);
	ur_list_add_tail(&uctx->async_events, &e->node);
	ur_evcount_add(uctx->async_efd);
	pthread_mutex_unlock(&uctx->async_lock);
}

void ur_srq_limit_reached(struct ur_srq *srq)
{
	struct ibv_async_event ev = {
		.element.srq = &srq->ibsrq,
		.event_type = IBV_EVENT_SRQ_LIMIT_REACHED,
	};

	ur_async_event_post(srq->ibsrq.context, &ev);
}

/*
 * What an affiliated event is counted on: the verbs object it names, the
 * mutex/cond of that object, its "completed" counter (bumped by
 * ibv_ack_async_event) and our "delivered" counter (bumped by
 * ibv_get_async_event; NULL for WQs, which we never create). Returns false
 * for device and port events, which nothing counts.
 */
struct event_owner {
	const void *obj;
	pthread_mutex_t *mu;
	pthread_cond_t *cv;
	uint32_t *completed;
	uint32_t *delivered;
};

static bool event_owner(const struct ibv_async_event *ev,
			struct event_owner *o)
{
	switch (ev->event_type) {
	case IBV_EVENT_CQ_ERR: {
		struct ibv_cq *cq = ev->element.cq;

		*o = (struct event_owner){ cq, &cq->mutex, &cq->cond,
					   &cq->async_events_completed,
					   &to_ur_cq(cq)->async_delivered };
		return true;
	}
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED: {
		struct ibv_qp *qp = ev->element.qp;

		*o = (struct event_owner){ qp, &qp->mutex, &qp->cond,
					   &qp->events_completed,
					   &to_ur_qp(qp)->async_delivered };
		return true;
	}
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED: {
		struct ibv_srq *srq = ev->element.srq;

		*o = (struct event_owner){ srq, &srq->mutex, &srq->cond,
					   &srq->events_completed,
					   &to_ur_srq(srq)->async_delivered };
		return true;
	}
	case IBV_EVENT_WQ_FATAL: {
		struct ibv_wq *wq = ev->element.wq;

		*o = (struct event_owner){ wq, &wq->mutex, &wq->cond,
					   &wq->events_completed, NULL };
		return true;
	}
	default:
		return false;
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
		struct event_owner o;

		if (event_owner(&e->ev, &o) && o.obj == obj) {
			ur_list_del(pos);
			free(e);
			ur_evcount_take(uctx->async_efd);
		}
	}
	pthread_mutex_unlock(&uctx->async_lock);
}

static void mark_delivered(const struct ibv_async_event *ev)
{
	struct event_owner o;

	if (!event_owner(ev, &o) || !o.delivered)
		return;
	pthread_mutex_lock(o.mu);
	(*o.delivered)++;
	pthread_mutex_unlock(o.mu);
}

int ur_async_event_get(struct ur_context *uctx, struct ibv_async_event *ev)
{
	struct ur_async_event *e;
	int ret;

	for (;;) {
		pthread_mutex_lock(&uctx->async_lock);
		if (!ur_list_empty(&uctx->async_events))
			break;
		pthread_mutex_unlock(&uctx->async_lock);
		/* EINTR too ends the call, as a read of the kernel's fd does */
		ret = ur_evcount_wait(uctx->async_efd);
		if (ret)
			return ret;
	}
	e = ur_list_first(&uctx->async_events, struct ur_async_event, node);
	ur_list_del(&e->node);
	ur_evcount_take(uctx->async_efd);
	/* counted before async_lock goes: a destroy's purge (under it)
	 * either finds the event queued or sees it delivered and waits for
	 * its ack, never frees the object between the two */
	mark_delivered(&e->ev);
	pthread_mutex_unlock(&uctx->async_lock);
	*ev = e->ev;
	free(e);
	return 0;
}

void ur_async_event_ack(struct ibv_async_event *ev)
{
	struct event_owner o;

	if (!event_owner(ev, &o))
		return;		/* device and port events: nothing to count */
	pthread_mutex_lock(o.mu);
	(*o.completed)++;
	pthread_cond_broadcast(o.cv);
	pthread_mutex_unlock(o.mu);
}

/* Destroy verbs return only after every event delivered for the object
 * was acknowledged (ibv_destroy_qp(3), ibv_destroy_srq(3)). */
static void wait_all_acked(pthread_mutex_t *mu, pthread_cond_t *cv,
			   const uint32_t *completed, const uint32_t *delivered)
{
	pthread_mutex_lock(mu);
	while (*completed != *delivered)
		pthread_cond_wait(cv, mu);
	pthread_mutex_unlock(mu);
}

void ur_srq_wait_acked(struct ur_srq *srq)
{
	wait_all_acked(&srq->ibsrq.mutex, &srq->ibsrq.cond,
		       &srq->ibsrq.events_completed, &srq->async_delivered);
}

void ur_qp_wait_acked(struct ur_qp *qp)
{
	struct ibv_qp *ibqp = &qp->ibqp_ex.qp_base;

	wait_all_acked(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
		       &qp->async_delivered);
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
