/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting: the post_send, post_recv and bind_mw ops and ibv_wr_start,
 * ibv_wr_complete and ibv_wr_abort. obj/post.c checks each WR and writes
 * it into the ring; this file holds qp->sq_lock around that and rings the
 * engine's doorbell directly when something was published, so posting
 * has one owner and no hook. (post_srq_recv is verbs_srq.c's: an SRQ
 * needs no doorbell, a responder takes its WQEs when a message arrives.)
 */
#include <errno.h>
#include <stdbool.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "obj/obj_priv.h"

/*
 * The send side: obj/ checks and writes the ring under qp->sq_lock, and the
 * engine's requester runs inline from here when the producer moved from
 * where it was at lock time, still under the lock (one lock and direct
 * calls per ibv_post_send); what it built leaves as the engine releases
 * the lock.
 */
static void sq_ring_and_unlock(struct ur_qp *qp, uint32_t first)
{
	if (qp->sq.producer != first)
		ur_engine_sq_kick(qp);
	ur_engine_sq_unlock(qp);	/* the packets leave after it */
}

int ur_op_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	struct ur_qp *qp = to_ur_qp(ibqp);
	uint32_t first;
	int err;

	pthread_mutex_lock(&qp->sq_lock);
	first = qp->sq.producer;
	err = ur_qp_post_send(qp, wr, bad);
	sq_ring_and_unlock(qp, first);
	if (err)
		errno = err;
	return err;
}

/* Whether a post_recv-style call queued anything: all of a non-empty list
 * on success, the WRs before *bad on failure. */
static bool posted_any(const struct ibv_recv_wr *wr, int err,
		       struct ibv_recv_wr *const *bad)
{
	return err ? *bad != wr : wr != NULL;
}

/* QPs whose shared RQs' completions overran cq fail (obj/rq_ring.c). */
static void rq_overruns(struct ur_cq *cq)
{
	struct ur_qp *qp;

	while ((qp = ur_xring_overran(cq)))
		ur_engine_rq_overrun(qp);
}

int ur_op_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad)
{
	struct ur_qp *qp = to_ur_qp(ibqp);
	int err = ur_qp_post_recv(qp, wr, bad);

	if (posted_any(wr, err, bad))
		ur_engine_rq_kick(qp);
	/* a full shared RQ drained into its CQ, which overran */
	if (qp->rq_ring && qp->recv_cq &&
	    atomic_load_explicit(&qp->recv_cq->xrings, memory_order_relaxed))
		rq_overruns(qp->recv_cq);
	if (err)
		errno = err;
	return err;
}

int ur_op_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *bind)
{
	struct ur_qp *qp = to_ur_qp(ibqp);
	uint32_t first;
	/* live objects of ours, so nothing freed is read; their handles
	 * are not looked at, as mlx5's bind (a post) never does */
	int err = ur_live_check_ptr(UR_OBJ_MW, mw);

	if (!err && !bind)
		err = -EINVAL;
	if (!err && bind->bind_info.mr)
		err = ur_live_check_ptr(UR_OBJ_MR, bind->bind_info.mr);
	if (err)
		return ur_api_ret(err);
	pthread_mutex_lock(&qp->sq_lock);
	first = qp->sq.producer;
	err = ur_qp_bind_mw(qp, mw, bind);
	sq_ring_and_unlock(qp, first);
	if (err)
		errno = err;
	return err;
}

/*
 * ibv_wr_start .. ibv_wr_complete/abort: the lock is held across the batch
 * (obj/'s builders write into the ring), and the doorbell rings once.
 */
static void op_wr_start(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);

	pthread_mutex_lock(&qp->sq_lock);
	ur_qp_wr_begin(qp);
}

static int op_wr_complete(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);
	int err = ur_qp_wr_end(qp);

	sq_ring_and_unlock(qp, qp->wr_start_producer);
	return err;
}

static void op_wr_abort(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);

	ur_qp_wr_rewind(qp);
	pthread_mutex_unlock(&qp->sq_lock);
}

void ur_api_init_wr_batch_ops(struct ur_qp *qp)
{
	struct ibv_qp_ex *x = &qp->ibqp_ex;

	x->wr_start = op_wr_start;
	x->wr_complete = op_wr_complete;
	x->wr_abort = op_wr_abort;
}
