/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A QP's own receive queue moved into a shared ring (the layout of a
 * shared XRC SRQ's, xrc_ring.h), so that a same-host peer's requester can
 * take a WQE, write a SEND's payload into it and hand its completion back
 * without a packet (engine/direct_send.c; docs/design.md, "SENDs by a
 * single copy"). The ring lives in a memfd the peer opens through
 * /proc/<pid>/fd (a name only processes that may write our memory can
 * open, gone with the process): no file is ever left behind.
 *
 * The engine opens it when an RC QP is connected to a ring peer and
 * closes it when the QP stops accepting requests. While it is open, the
 * QP's posts go into it (each SGE resolved as the XRC ring's are) and its
 * own responder takes from it (the lkeys, checked at copy time as
 * before), so the queue stays one queue in one order. Closing marks the
 * ring gone, waits for the copiers inside, moves their completions into
 * the CQ and the WQEs nobody took back into the private queue, where the
 * usual flush finds them.
 *
 * A QP on a plain SRQ shares the SRQ's queue instead: the SRQ's WQEs move
 * into one ring for good when its first QP connects to a ring peer, and
 * each such QP joins it as a member (at most XR_MEMBERS), named in the
 * ring's header so that a copy into it names an open QP. The copies'
 * completions then go to the member's own receive CQ. A member leaves as
 * a QP's ring closes (its completions moved first); the WQEs stay the
 * SRQ's.
 */
#include <errno.h>
#include <sys/mman.h>

#include "obj/xrc_ring.h"

/* Moves the private queue's WQEs into x, in order (rq_lock held). With
 * obj_lock unavailable they go unresolved: marked bad, which a peer
 * leaves to the packets, and the responder takes them with their lkeys. */
static void rq_move_in(struct ur_wq *rq, struct ur_xring *x, bool resolve)
{
	while (rq->consumer != rq->producer) {
		const struct ur_recv_wqe *w = ur_wq_slot(rq, rq->consumer);
		struct ibv_sge sg[UR_MAX_SGE];
		struct ibv_recv_wr wr = {
			.wr_id = w->wr_id,
			.sg_list = sg,
			.num_sge = (int)w->num_sge,
		};
		uint32_t i;

		for (i = 0; i < w->num_sge; i++)
			sg[i] = (struct ibv_sge){ w->sge[i].addr,
						  w->sge[i].length,
						  w->sge[i].lkey };
		if (ur_xring_post_locked(x, &wr, NULL, resolve))
			break;	/* cannot be: the ring is as deep */
		rq->consumer++;
	}
}

/* Joins and leaves of plain SRQs' rings (the ring is made at the first). */
static pthread_mutex_t srq_ring_mu = PTHREAD_MUTEX_INITIALIZER;

/* srq's ring, its WQEs moved in (srq_ring_mu held). */
static struct ur_xring *srq_ring_new(struct ur_srq *srq)
{
	struct ur_device *dev = ur_ctx_dev(srq->ibsrq.context);
	struct ur_xring *x;
	bool resolve;
	int fd;

	fd = memfd_create("uroce-srq", MFD_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (ur_xring_lock0(fd)) {
		close(fd);
		return NULL;
	}
	x = ur_xring_new(fd, srq->rq.max_wr, srq->rq.max_sge, srq->pd, NULL,
			 &srq->lock);
	if (x)
		x->mem = calloc(XR_MEMBERS, sizeof(*x->mem));
	if (!x || !x->mem) {
		if (x)
			xr_unmap(x);
		else
			close(fd);
		return NULL;
	}
	x->srq = srq;
	x->h->srq_members = 1;
	ur_xring_start(x);
	/* rx_lock may be held: never wait for obj_lock behind a writer */
	resolve = !pthread_rwlock_tryrdlock(&dev->obj_lock);
	pthread_spin_lock(&srq->lock);
	rq_move_in(&srq->rq, x, resolve);
	/* posts and takes go there from now on */
	__atomic_store_n(&srq->xring, x, __ATOMIC_RELEASE);
	pthread_spin_unlock(&srq->lock);
	if (resolve)
		pthread_rwlock_unlock(&dev->obj_lock);
	return x;
}

static int srq_join(struct ur_qp *qp, const unsigned int *defer)
{
	struct ur_srq *srq = qp->srq;
	struct ur_cq *cq = qp->recv_cq;
	uint32_t qpn = qp->ibqp_ex.qp_base.qp_num;
	struct ur_xring *x;
	struct xr_member *m;
	uint32_t i;
	int err = 0;

	if (srq->xrcd || !cq)
		return -EINVAL;
	if (qp->srq_member)
		return 0;
	pthread_mutex_lock(&srq_ring_mu);
	x = srq->xring ? srq->xring : srq_ring_new(srq);
	if (!x) {
		err = -ENOMEM;
		goto out;
	}
	/* its CQ waited on: our waker fires the event for the copies */
	if (cq->ibcq.channel && ur_xring_waker(x)) {
		err = -EAGAIN;
		goto out;
	}
	for (i = 0; i < XR_MEMBERS && x->mem[i].qp; i++)
		;
	if (i == XR_MEMBERS) {
		err = -ENOSPC;	/* the rest of its QPs keep packets */
		goto out;
	}
	m = &x->mem[i];
	atomic_fetch_add(&cq->xrings, 1);
	pthread_spin_lock(x->lock);
	m->qpn = qpn;
	m->qp = qp;
	m->defer = defer;
	atomic_store(&m->overran, false);
	atomic_store(&m->cq, cq);
	/* waiting completions may not reach the smallest member's CQ */
	if (!x->h->cq_room || (uint32_t)cq->ibcq.cqe < x->h->cq_room)
		x->h->cq_room = (uint32_t)cq->ibcq.cqe;
	__atomic_store_n(&qp->srq_member, i + 1, __ATOMIC_RELAXED);
	pthread_spin_unlock(x->lock);
	atomic_store(&x->h->member[i], qpn);
out:
	pthread_mutex_unlock(&srq_ring_mu);
	return err;
}

/* Whether a completion for qpn waits in x. */
static bool srq_waiting(struct ur_xring *x, uint32_t qpn)
{
	struct xr_hdr *h = x->h;
	uint64_t t;

	for (t = atomic_load(&h->cq_tail); t != atomic_load(&h->cq_head); t++)
		if (xr_cqe(x, t)->qp_num == qpn)
			return true;
	return false;
}

static void srq_leave(struct ur_qp *qp)
{
	uint32_t i, qpn = qp->ibqp_ex.qp_base.qp_num;
	struct ur_xring *x;
	struct xr_member *m;
	struct ur_cq *cq;

	if (!__atomic_load_n(&qp->srq_member, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&srq_ring_mu);
	i = qp->srq_member;
	x = qp->srq->xring;
	if (!i || !x) {
		pthread_mutex_unlock(&srq_ring_mu);
		return;
	}
	m = &x->mem[i - 1];
	/* no copy names it from now on, and those inside are finished */
	atomic_store(&x->h->member[i - 1], 0);
	ur_xring_wait_holders(x);
	/* its completions into its CQ: another member holding older ones
	 * of its own stops the drain only a moment, but this may run
	 * under the responder's lock that clears it: then all go */
	ur_xring_drain_qp(x, qpn);
	if (srq_waiting(x, qpn))
		ur_xring_drain_all(x);
	pthread_spin_lock(x->lock);
	cq = atomic_load(&m->cq);
	atomic_store(&m->cq, NULL);
	m->qp = NULL;
	m->qpn = 0;
	m->defer = NULL;
	atomic_store(&m->overran, false);
	__atomic_store_n(&qp->srq_member, 0, __ATOMIC_RELAXED);
	pthread_spin_unlock(x->lock);
	if (cq)
		atomic_fetch_sub(&cq->xrings, 1);
	pthread_mutex_unlock(&srq_ring_mu);
}

int ur_rq_ring_open(struct ur_qp *qp, const unsigned int *defer)
{
	struct ur_device *dev = qp->dev;
	struct ur_xring *x = qp->rq_ring;
	bool resolve;
	int fd;

	if (qp->srq)
		return srq_join(qp, defer);
	if (!qp->recv_cq || !qp->rq.max_wr)
		return -EINVAL;
	if (!x) {
		fd = memfd_create("uroce-rq", MFD_CLOEXEC);
		if (fd < 0)
			return -errno;
		if (ur_xring_lock0(fd)) {
			close(fd);
			return -EIO;
		}
		x = ur_xring_new(fd, qp->rq.max_wr, qp->rq.max_sge, qp->pd,
				 qp->recv_cq, &qp->rq_lock);
		if (!x) {
			close(fd);
			return -ENOMEM;
		}
		x->defer = defer;
		x->qp = qp;
		x->h->cq_room = (uint32_t)qp->recv_cq->ibcq.cqe;
		ur_xring_start(x);
	}
	/* rx_lock may be held: never wait for obj_lock behind a writer */
	resolve = !pthread_rwlock_tryrdlock(&dev->obj_lock);
	pthread_spin_lock(&qp->rq_lock);
	qp->rq_ring = x;
	rq_move_in(&qp->rq, x, resolve);
	x->active = true;
	atomic_store(&x->h->gone, 0);
	pthread_spin_unlock(&qp->rq_lock);
	if (resolve)
		pthread_rwlock_unlock(&dev->obj_lock);
	return 0;
}

void ur_rq_ring_close(struct ur_qp *qp)
{
	struct ur_xring *x = qp->rq_ring;
	struct xr_hdr *h;
	struct ur_wq *rq = &qp->rq;
	uint64_t c;

	if (qp->srq)
		srq_leave(qp);
	if (!x || !x->active)
		return;
	h = x->h;
	atomic_store(&h->gone, 1);
	ur_xring_wait_holders(x);	/* every WQE taken now has its CQE */
	ur_xring_drain_all(x);
	pthread_spin_lock(&qp->rq_lock);
	/* what nobody took goes back, in order, for the flush (RESET
	 * empties the queue: nothing goes back) */
	for (c = atomic_load(&h->claimed); c < atomic_load(&h->posted); c++) {
		struct xr_slot *s = xr_slot(x, c);
		struct ur_recv_wqe *w = ur_wq_slot(rq, rq->producer);
		uint32_t i;

		w->wr_id = s->wr_id;
		w->num_sge = s->num_sge;
		w->length = s->length;
		for (i = 0; i < s->num_sge; i++) {
			w->sge[i].addr = s->sge[i].iova;
			w->sge[i].length = s->sge[i].length;
			w->sge[i].lkey = s->sge[i].lkey;
		}
		atomic_store(&s->state, 0);
		if (qp->state != IBV_QPS_RESET)
			rq->producer++;
	}
	atomic_store(&h->claimed, c);
	x->active = false;
	pthread_spin_unlock(&qp->rq_lock);
}

void ur_rq_ring_free(struct ur_qp *qp)
{
	struct ur_xring *x = qp->rq_ring;

	if (qp->srq)
		srq_leave(qp);
	if (!x)
		return;
	ur_rq_ring_close(qp);
	pthread_spin_lock(&qp->rq_lock);
	qp->rq_ring = NULL;
	pthread_spin_unlock(&qp->rq_lock);
	ur_xring_free(x);
}

bool ur_rq_ring_ident(const struct ur_qp *qp, int32_t *fd, uint64_t *id)
{
	const struct ur_xring *x = qp->rq_ring;

	if (ur_rq_ring_on(qp) && !x) {
		x = __atomic_load_n(&qp->srq->xring, __ATOMIC_ACQUIRE);
		*fd = x->fd;
		*id = x->h->nonce;
		return true;
	}
	if (!x || !x->active)
		return false;
	*fd = x->fd;
	*id = x->h->nonce;
	return true;
}

void ur_rq_ring_drain(struct ur_qp *qp)
{
	struct ur_xring *x = qp->rq_ring;

	if (!x && ur_rq_ring_on(qp))
		x = __atomic_load_n(&qp->srq->xring, __ATOMIC_ACQUIRE);
	if (x)
		ur_xring_drain_ring(x);
}

/* ur_qp_post_recv's way while it is open (rq_lock held, and obj_lock
 * read): 1 when done (*err a positive errno), 0 when the private queue is
 * the way for *wrp. */
int ur_rq_ring_post(struct ur_qp *qp, struct ibv_recv_wr **wrp,
		    struct ibv_recv_wr **bad, int *err)
{
	struct ur_xring *x = qp->rq_ring;

	if (!x || !x->active)
		return 0;
	*err = -ur_xring_post_locked(x, *wrp, bad, true);
	if (*err == ENOMEM) {
		/* taken but not drained yet still hold their slots */
		*wrp = *bad;
		pthread_spin_unlock(&qp->rq_lock);
		ur_xring_drain_ring(x);
		pthread_spin_lock(&qp->rq_lock);
		if (!x->active)
			return 0;
		*err = -ur_xring_post_locked(x, *wrp, bad, true);
	}
	return 1;
}

/* ur_qp_take_recv's way while it is open (rq_lock held): 1 when the
 * private queue is the way. */
int ur_rq_ring_take(struct ur_qp *qp, struct ur_recv_wqe *out)
{
	struct ur_xring *x = qp->rq_ring;

	if (!x || !x->active)
		return 1;
	return ur_xring_claim(x, out, false) < 0 ? -EAGAIN : 0;
}
