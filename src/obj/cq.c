/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Completion queues and completion channels.
 *
 * A CQ is a ring of final ibv_wc entries (cq->lock). The engine adds with
 * ur_cq_push(); poll_cq copies out. An armed CQ that receives a matching
 * completion disarms and queues one event on its channel: the channel's
 * fd counts queued events (util/evcount.h), so it is readable exactly
 * while an event waits, and ibv_get_cq_event takes the oldest CQ off the
 * channel's pending list and one count with it. A CQ destroyed with
 * events still queued takes their counts back.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obj/obj_priv.h"
#include "util/evcount.h"
#include "util/time.h"

#define UR_CQ_WC_FLAGS_SUPPORTED                                               \
	((uint64_t)IBV_WC_STANDARD_FLAGS |                                     \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |                                 \
	 IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define UR_CQ_INIT_MASK_SUPPORTED                                              \
	(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD)
#define UR_CQ_FLAGS_SUPPORTED                                                  \
	(IBV_CREATE_CQ_ATTR_SINGLE_THREADED | IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN)

/*
 * Slots are a power of two >= cqe + 1 and at least UR_CQ_MIN_SLOTS, and
 * ibv_cq.cqe reports the real capacity (slots - 1), as the man page allows
 * ("at least cqe"). Tiny CQs are where applications that poll a CQE per
 * event overflow (perftest -e creates its send CQ with cqe = tx_depth = 1);
 * hardware CQs have such minimums too.
 */
#define UR_CQ_MIN_SLOTS 64

/*
 * Memory follows use, not the requested depth: a CQ starts with at most
 * UR_CQ_INIT_RING entries allocated (cq->ring_len) and doubles the ring,
 * under cq->lock, when a push finds it full and the CQ's capacity allows
 * more. A CQ of mlx5's 4,194,303 entries thus costs 256 entries until its
 * completions really pile up (a ring that only wraps touches all of its
 * memory over time, so allocating up front would cost the full depth
 * sooner or later). The ring never shrinks while the CQ lives.
 *
 * A CQ created on a parent domain with allocators (IBV_CQ_INIT_ATTR_MASK_PD)
 * takes its whole ring from the parent's alloc at creation and resize
 * instead: those callbacks are the application's and must not run under
 * cq->lock in the NIC's thread.
 */
#define UR_CQ_INIT_RING 256u

static uint32_t ring_slots(uint32_t cqe)
{
	uint32_t n = UR_CQ_MIN_SLOTS;

	while (n < cqe + 1)
		n <<= 1;
	return n;
}

static inline uint32_t cq_count(const struct ur_cq *cq)
{
	return cq->tail - cq->head;
}

static inline struct ur_cqe *cq_slot(const struct ur_cq *cq, uint32_t idx)
{
	return &cq->ring[idx & (cq->ring_len - 1)];
}

/*
 * A ring of len entries holding the count entries from head on, at the
 * same free-running indices. NULL when memory is short.
 */
static struct ur_cqe *ring_copy(const struct ur_cq *cq, uint32_t len,
				 struct ur_cqe *ring)
{
	uint32_t i;

	if (!ring)
		ring = malloc((size_t)len * sizeof(*ring));
	if (!ring)
		return NULL;
	for (i = cq->head; i != cq->tail; i++)
		ring[i & (len - 1)] = *cq_slot(cq, i);
	return ring;
}

/* Caller holds cq->lock and found the ring full. 0 or -ENOMEM. */
static int ring_grow(struct ur_cq *cq)
{
	struct ur_cqe *ring;

	if (cq->ring_len >= cq->size)
		return -ENOMEM;
	if (cq->custom_ring)
		return -ENOMEM;		/* allocated whole; cannot happen */
	ring = ring_copy(cq, cq->ring_len * 2, NULL);
	if (!ring)
		return -ENOMEM;
	free(cq->ring);
	cq->ring = ring;
	cq->ring_len *= 2;
	return 0;
}

int ur_cq_create(struct ibv_context *ctx, const struct ibv_cq_init_attr_ex *a,
		 struct ur_cq **out)
{
	struct ur_comp_channel *ch = NULL;
	struct ur_cq *cq;

	if (!a->cqe || a->cqe > UR_MAX_CQE)
		return -EINVAL;
	if (ctx->num_comp_vectors > 0 &&
	    a->comp_vector >= (uint32_t)ctx->num_comp_vectors)
		return -EINVAL;
	if (a->wc_flags & ~UR_CQ_WC_FLAGS_SUPPORTED)
		return -EOPNOTSUPP;
	if (a->comp_mask & ~(uint32_t)UR_CQ_INIT_MASK_SUPPORTED)
		return -EOPNOTSUPP;
	/* MASK_PD names a parent domain (rdma-core: a plain PD is EINVAL) */
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!a->parent_domain || !to_ur_pd(a->parent_domain)->prot ||
	     a->parent_domain->context != ctx))
		return -EINVAL;
	if ((a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (a->flags & ~(uint32_t)UR_CQ_FLAGS_SUPPORTED))
		return -EOPNOTSUPP;
	if (a->channel) {
		ch = to_ur_channel(a->channel);
		if (ch->ibch.context != ctx)
			return -EINVAL;
	}

	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->size = ring_slots(a->cqe);
	if (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
		cq->parent = to_ur_pd(a->parent_domain);
	if (cq->parent && cq->parent->alloc) {
		cq->ring_len = cq->size;
		cq->ring = ur_pd_buf_alloc(cq->parent,
					   (size_t)cq->size * sizeof(*cq->ring),
					   UR_RES_TYPE_CQ, &cq->custom_ring);
	} else {
		cq->ring_len = UR_MIN(cq->size, UR_CQ_INIT_RING);
		cq->ring = calloc(cq->ring_len, sizeof(*cq->ring));
	}
	if (!cq->ring) {
		free(cq);
		return -ENOMEM;
	}
	if (cq->parent)
		atomic_fetch_add(&cq->parent->usecnt, 1);
	pthread_spin_init(&cq->lock, PTHREAD_PROCESS_PRIVATE);
	ur_list_init(&cq->chan_node);
	cq->arm = UR_CQ_DISARMED;
	cq->wc_flags_ex = a->wc_flags;
	cq->ignore_overrun = (a->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
			     (a->flags & IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN);
	atomic_init(&cq->usecnt, 0);

	cq->ibcq.context = ctx;
	cq->ibcq.channel = a->channel;
	cq->ibcq.cq_context = a->cq_context;
	cq->ibcq.handle = ur_obj_handle();
	cq->ibcq.cqe = (int)(cq->size - 1);
	pthread_mutex_init(&cq->ibcq.mutex, NULL);
	pthread_cond_init(&cq->ibcq.cond, NULL);
	if (ch) {
		atomic_fetch_add(&ch->refcnt, 1);
		pthread_mutex_lock(&ch->lock);
		ch->ibch.refcnt++;
		pthread_mutex_unlock(&ch->lock);
	}
	*out = cq;
	return 0;
}

int ur_cq_destroy(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = NULL;

	if (atomic_load(&cq->usecnt))
		return -EBUSY;
	ur_async_events_purge(cq->ibcq.context, &cq->ibcq);
	ur_cq_wait_acked(cq);
	if (cq->ibcq.channel) {
		ch = to_ur_channel(cq->ibcq.channel);
		pthread_mutex_lock(&ch->lock);
		if (cq->events_queued)
			ur_list_del(&cq->chan_node);
		/* poll(2) on the channel no longer announces them */
		for (; cq->events_queued; cq->events_queued--)
			ur_evcount_take(ch->ibch.fd);
		ch->ibch.refcnt--;
		pthread_mutex_unlock(&ch->lock);
		atomic_fetch_sub(&ch->refcnt, 1);
	}
	pthread_mutex_destroy(&cq->ibcq.mutex);
	pthread_cond_destroy(&cq->ibcq.cond);
	pthread_spin_destroy(&cq->lock);
	ur_pd_buf_free(cq->parent, cq->ring, UR_RES_TYPE_CQ, cq->custom_ring);
	if (cq->parent)
		atomic_fetch_sub(&cq->parent->usecnt, 1);
	free(cq);
	return 0;
}

int ur_cq_resize(struct ur_cq *cq, int cqe)
{
	struct ur_cqe *ring, *old, *pre = NULL;
	bool custom = false, old_custom = cq->custom_ring;
	uint32_t slots, len, n;

	if (cqe <= 0 || cqe > UR_MAX_CQE)
		return -EINVAL;
	slots = ring_slots((uint32_t)cqe);
	if (cq->parent && cq->parent->alloc) {
		/* the application's allocator, outside the lock */
		pre = ur_pd_buf_alloc(cq->parent, (size_t)slots * sizeof(*pre),
				      UR_RES_TYPE_CQ, &custom);
		if (!pre)
			return -ENOMEM;
	}
	pthread_spin_lock(&cq->lock);
	n = cq_count(cq);
	/* man ibv_resize_cq: fewer entries than the CQ holds is EINVAL */
	if ((uint32_t)cqe < n) {
		pthread_spin_unlock(&cq->lock);
		ur_pd_buf_free(cq->parent, pre, UR_RES_TYPE_CQ, custom);
		return -EINVAL;
	}
	len = pre ? slots : UR_MIN(slots, UR_CQ_INIT_RING);
	while (len <= n)
		len *= 2;
	ring = ring_copy(cq, len, pre);
	if (!ring) {
		pthread_spin_unlock(&cq->lock);
		return -ENOMEM;
	}
	cq->custom_ring = custom;
	old = cq->ring;
	cq->ring = ring;
	cq->ring_len = len;
	cq->size = slots;
	cq->overflow = false;
	cq->ibcq.cqe = (int)(slots - 1);
	pthread_spin_unlock(&cq->lock);
	ur_pd_buf_free(cq->parent, old, UR_RES_TYPE_CQ, old_custom);
	return 0;
}

int ur_cq_poll(struct ur_cq *cq, int n, struct ibv_wc *wc)
{
	int i = 0;

	pthread_spin_lock(&cq->lock);
	while (i < n && cq->head != cq->tail) {
		wc[i++] = cq_slot(cq, cq->head)->wc;
		cq->head++;
	}
	pthread_spin_unlock(&cq->lock);
	return i;
}

int ur_cq_clean(struct ur_cq *cq, uint32_t qp_num)
{
	uint32_t src, dst;
	int removed;

	pthread_spin_lock(&cq->lock);
	/* compact towards the tail so the oldest survivors keep their order */
	dst = cq->tail;
	for (src = cq->tail; src != cq->head;) {
		src--;
		if (cq_slot(cq, src)->wc.qp_num == qp_num)
			continue;
		dst--;
		if (dst != src)
			*cq_slot(cq, dst) = *cq_slot(cq, src);
	}
	removed = (int)(dst - cq->head);
	cq->head = dst;
	pthread_spin_unlock(&cq->lock);
	return removed;
}

int ur_cq_pop_ex(struct ur_cq *cq)
{
	int err = -ENOENT;

	pthread_spin_lock(&cq->lock);
	if (cq->head != cq->tail) {
		cq->ex_cqe = *cq_slot(cq, cq->head);
		cq->head++;
		err = 0;
	}
	pthread_spin_unlock(&cq->lock);
	return err;
}

static void channel_signal(struct ur_cq *cq);

int ur_cq_arm(struct ur_cq *cq, int solicited_only)
{
	bool fire = false;

	/* no channel, so no event could ever be delivered: EINVAL, as the
	 * providers that check it answer (mlx5 arms it and returns 0;
	 * docs/deviations.md) */
	if (!cq->ibcq.channel)
		return -EINVAL;
	pthread_spin_lock(&cq->lock);
	/* "next completion" already covers the solicited ones */
	if (!solicited_only)
		cq->arm = UR_CQ_ARMED_NEXT;
	else if (cq->arm != UR_CQ_ARMED_NEXT)
		cq->arm = UR_CQ_ARMED_SOLICITED;
	/*
	 * mlx5 arms a CQ at its consumer index: an entry already written and
	 * not yet polled raises the event at once. UCX relies on it: it polls
	 * until idle, arms, and sleeps without polling again, so an entry
	 * pushed between its last poll and the arm would otherwise wait for
	 * the next one (a blocking ping-pong: for ever). An application that
	 * polls after arming, as the man page suggests, only sees an event
	 * for an entry it has taken already, which it must expect anyway.
	 */
	if (cq_count(cq) &&
	    (cq->arm == UR_CQ_ARMED_NEXT ||
	     cq->tail - cq->wake_tail < cq_count(cq))) {
		cq->arm = UR_CQ_DISARMED;
		fire = true;
	}
	pthread_spin_unlock(&cq->lock);
	if (fire)
		channel_signal(cq);
	return 0;
}

static void channel_signal(struct ur_cq *cq)
{
	struct ur_comp_channel *ch = to_ur_channel(cq->ibcq.channel);

	pthread_mutex_lock(&ch->lock);
	if (!cq->events_queued++)
		ur_list_add_tail(&ch->pending, &cq->chan_node);
	ur_evcount_add(ch->ibch.fd);
	pthread_mutex_unlock(&ch->lock);
}

int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	bool fire = false, overflow_event = false;
	struct ur_cqe *e;

	pthread_spin_lock(&cq->lock);
	/* a full ring that may grow and cannot is an overrun too */
	if (cq_count(cq) >= cq->size - 1 ||
	    (cq_count(cq) == cq->ring_len && ring_grow(cq))) {
		if (cq->ignore_overrun) {
			/* the application promised this never happens */
			pthread_spin_unlock(&cq->lock);
			return 0;
		}
		if (!cq->overflow) {
			cq->overflow = true;
			overflow_event = true;
		}
		pthread_spin_unlock(&cq->lock);
		if (overflow_event) {
			struct ibv_async_event ev = {
				.element.cq = &cq->ibcq,
				.event_type = IBV_EVENT_CQ_ERR,
			};

			ur_async_event_post(cq->ibcq.context, &ev);
		}
		return -ENOSPC;
	}
	e = cq_slot(cq, cq->tail);
	e->wc = *wc;
	if (cq->wc_flags_ex & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		e->ts_ns = ur_now_ns();
	if (cq->wc_flags_ex & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		e->wall_ns = (uint64_t)ts.tv_sec * 1000000000ull +
			     (uint64_t)ts.tv_nsec;
	}
	cq->tail++;
	if (solicited || wc->status != IBV_WC_SUCCESS)
		cq->wake_tail = cq->tail;
	if (cq->arm == UR_CQ_ARMED_NEXT ||
	    (cq->arm == UR_CQ_ARMED_SOLICITED &&
	     (solicited || wc->status != IBV_WC_SUCCESS))) {
		cq->arm = UR_CQ_DISARMED;
		fire = cq->ibcq.channel != NULL;
	}
	pthread_spin_unlock(&cq->lock);
	if (fire)
		channel_signal(cq);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Completion channels                                                 */
/* ------------------------------------------------------------------ */

int ur_channel_create(struct ibv_context *ctx, struct ur_comp_channel **out)
{
	struct ur_comp_channel *ch = calloc(1, sizeof(*ch));

	if (!ch)
		return -ENOMEM;
	ch->ibch.fd = ur_evcount_open();
	if (ch->ibch.fd < 0) {
		int err = -errno;

		free(ch);
		return err;
	}
	ch->ibch.context = ctx;
	ch->ibch.refcnt = 0;
	pthread_mutex_init(&ch->lock, NULL);
	ur_list_init(&ch->pending);
	atomic_init(&ch->refcnt, 0);
	*out = ch;
	return 0;
}

int ur_channel_destroy(struct ur_comp_channel *ch)
{
	if (atomic_load(&ch->refcnt))
		return -EBUSY;
	close(ch->ibch.fd);
	pthread_mutex_destroy(&ch->lock);
	free(ch);
	return 0;
}

int ur_channel_get_event(struct ur_comp_channel *ch, struct ur_cq **out)
{
	struct ur_cq *cq;
	int ret;

	for (;;) {
		pthread_mutex_lock(&ch->lock);
		if (!ur_list_empty(&ch->pending))
			break;
		pthread_mutex_unlock(&ch->lock);
		/* EINTR too ends the call, as a read of the kernel's fd does */
		ret = ur_evcount_wait(ch->ibch.fd);
		if (ret)
			return ret;
	}
	cq = ur_list_first(&ch->pending, struct ur_cq, chan_node);
	if (!--cq->events_queued)
		ur_list_del(&cq->chan_node);
	ur_evcount_take(ch->ibch.fd);
	pthread_mutex_unlock(&ch->lock);

	pthread_mutex_lock(&cq->ibcq.mutex);
	cq->comp_delivered++;
	pthread_mutex_unlock(&cq->ibcq.mutex);
	*out = cq;
	return 0;
}

void ur_cq_ack_events(struct ur_cq *cq, unsigned int n)
{
	pthread_mutex_lock(&cq->ibcq.mutex);
	cq->ibcq.comp_events_completed += n;
	pthread_cond_broadcast(&cq->ibcq.cond);
	pthread_mutex_unlock(&cq->ibcq.mutex);
}

void ur_cq_wait_acked(struct ur_cq *cq)
{
	pthread_mutex_lock(&cq->ibcq.mutex);
	while (cq->ibcq.comp_events_completed != cq->comp_delivered ||
	       cq->ibcq.async_events_completed != cq->async_delivered)
		pthread_cond_wait(&cq->ibcq.cond, &cq->ibcq.mutex);
	pthread_mutex_unlock(&cq->ibcq.mutex);
}
