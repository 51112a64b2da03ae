/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting: ibv_post_send, ibv_post_recv, ibv_bind_mw and the ibv_wr_*
 * builders of ibv_qp_ex. Every path writes a WQE into the next free slot
 * (above sq.producer), and ur_send_wqe_check() applies the post-time rules
 * of IBA to it, whichever API built it. Only a WQE that passed is
 * published by advancing sq.producer. The send side runs with qp->sq_lock
 * held by the caller (api/verbs_qp.c), who rings the engine's doorbell
 * before releasing it when sq.producer moved: obj/ never calls the engine.
 *
 * Post-time rules (anything else fails later, with an error completion):
 *  - RESET -> EINVAL (IBA C10-96, and rdma-core's own tests ask it);
 *    INIT and RTR are taken, as mlx5 takes them (not C10-96: see
 *    docs/deviations.md): the WQE waits for RTS, a move to ERR flushes
 *    it, one to RESET drops it; an XRC target has no send queue -> EINVAL;
 *  - the opcode must exist for the QP type (wr_opcode.c), except that a
 *    UD QP takes any opcode IBA defines, as mlx5 does: the engine completes
 *    one UD cannot execute with IBV_WC_LOC_QP_OP_ERR;
 *  - send_flags within FENCE|SIGNALED|SOLICITED|INLINE;
 *  - INLINE only for payload opcodes, total <= max_inline; otherwise
 *    num_sge <= max_send_sge; message <= 2^31;
 *    (INLINE on READ/atomic/BIND_MW/LOCAL_INV is ignored, as hardware does)
 *  - atomics: not inline (one SGE of other than 8 bytes is taken and
 *    completes with IBV_WC_LOC_LEN_ERR in the engine, as on mlx5);
 *  - ATOMIC_WRITE: 8 bytes of payload (one SGE, or inline, which
 *    ibv_wr_atomic_write uses whatever max_inline: the slot has room);
 *  - FLUSH: only through ibv_wr_flush (ibv_send_wr cannot carry it); a
 *    placement type of GLOBAL and/or PERSISTENT, a selectivity of RANGE
 *    or MR;
 *  - UD: an AH (one of another PD, and a message over the MTU, fail in
 *    the engine: mlx5 reports both in a completion);
 *  - BIND_MW via post_send/wr_bind_mw: a type 2 window (type 1 windows are
 *    bound with ibv_bind_mw); no MR only for length 0 (which the
 *    engine fails for a type 2 window: MW_BIND_ERR, as mlx5);
 *  - no free slot -> ENOMEM.
 */
#include <errno.h>
#include <string.h>

#include "obj/obj_priv.h"
#include "util/lock_assert.h"

#define UR_SEND_FLAGS_OK                                                       \
	(IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED |             \
	 IBV_SEND_INLINE)
#define UR_MW_ACCESS_OK                                                        \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_ZERO_BASED)

/*
 * An opcode IBA defines that the UD service does not execute (RDMA,
 * atomics, local operations): mlx5 hands it to the hardware, which
 * completes it with IBV_WC_LOC_QP_OP_ERR; the engine's requester does the
 * same (req_ud()). FLUSH cannot be named by an ibv_send_wr.
 */
static bool ud_foreign_op(const struct ur_qp *qp, enum ibv_wr_opcode op)
{
	return qp->type == IBV_QPT_UD && op != (enum ibv_wr_opcode)UR_WR_FLUSH &&
	       ur_wr_opcode_any(op);
}

static bool sq_full(const struct ur_qp *qp)
{
	return qp->sq.producer - qp->sq.consumer >= qp->sq.max_wr;
}

int ur_send_wqe_check(const struct ur_qp *qp, const struct ur_send_wqe *wqe)
{
	const struct ur_wr_opcode_info *info;
	uint64_t total = 0;
	uint32_t i;

	if (qp->state == IBV_QPS_RESET || qp->type == IBV_QPT_XRC_RECV)
		return -EINVAL;	/* an XRC target has no send queue */
	info = ur_wr_opcode(qp->type, wqe->opcode);
	if (!info)	/* the engine fails a foreign one, nothing to check */
		return ud_foreign_op(qp, wqe->opcode) ? 0 : -EINVAL;
	if (wqe->send_flags & ~UR_SEND_FLAGS_OK)
		return -EINVAL;
	if (wqe->send_flags & IBV_SEND_INLINE) {
		if (!(info->flags & UR_WR_PAYLOAD) || wqe->num_sge ||
		    wqe->length > UR_MAX(qp->sq.max_inline, info->payload_len))
			return -EINVAL;
	} else {
		if (wqe->num_sge > qp->sq.max_sge)
			return -EINVAL;
		for (i = 0; i < wqe->num_sge; i++)
			total += wqe->sge[i].length;
		if (total != wqe->length)
			return -EINVAL;
	}
	if (wqe->length > UR_MAX_MSG_SZ)
		return -EINVAL;
	if (info->payload_len && wqe->length != info->payload_len)
		return -EINVAL;
	if ((info->flags & (UR_WR_LOCAL | UR_WR_FLUSH_ARGS)) &&
	    (wqe->num_sge || wqe->length))
		return -EINVAL;
	if ((info->flags & UR_WR_FLUSH_ARGS) &&
	    (!wqe->flush.type ||
	     (wqe->flush.type & ~(UR_FLUSH_GLOBAL | UR_FLUSH_PERSISTENT)) ||
	     (wqe->flush.level != UR_FLUSH_RANGE &&
	      wqe->flush.level != UR_FLUSH_MR)))
		return -EINVAL;
	if (qp->type == IBV_QPT_UD &&
	    (!wqe->ud.ah || wqe->ud.remote_qpn > UR_QPN_MASK))
		return -EINVAL;
	if (qp->type == IBV_QPT_XRC_SEND && wqe->xrc_srqn > UR_QPN_MASK)
		return -EINVAL;	/* an XRCETH holds 24 bits */
	if (wqe->opcode == IBV_WR_BIND_MW) {
		if (!wqe->bind.mw)
			return -EINVAL;
		if (!wqe->bind.mr && wqe->bind.length)
			return -EINVAL;
		if (wqe->bind.access & ~UR_MW_ACCESS_OK)
			return -EINVAL;
	}
	return 0;
}

static void wqe_init(struct ur_send_wqe *wqe, uint64_t wr_id,
		     enum ibv_wr_opcode op, unsigned int flags)
{
	memset(wqe, 0, sizeof(*wqe));
	wqe->wr_id = wr_id;
	wqe->opcode = op;
	wqe->send_flags = flags;
	wqe->state = UR_WQE_POSTED;
	wqe->status = IBV_WC_SUCCESS;
}

static int wqe_copy_inline(const struct ur_qp *qp, struct ur_send_wqe *wqe,
			   const struct ibv_sge *sg, int num)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < num; i++)
		total += sg[i].length;
	if (total > qp->sq.max_inline)
		return -EINVAL;
	total = 0;
	for (i = 0; i < num; i++) {
		if (!sg[i].length)
			continue;	/* may have no address at all */
		memcpy(wqe->inline_data + total,
		       (const void *)(uintptr_t)sg[i].addr, sg[i].length);
		total += sg[i].length;
	}
	wqe->num_sge = 0;
	wqe->length = (uint32_t)total;
	wqe->send_flags |= IBV_SEND_INLINE;
	return 0;
}

static int wqe_copy_sges(const struct ur_qp *qp, struct ur_send_wqe *wqe,
			 const struct ibv_sge *sg, size_t num)
{
	uint64_t total = 0;
	size_t i;

	if (num > qp->sq.max_sge)
		return -EINVAL;
	for (i = 0; i < num; i++) {
		wqe->sge[i].addr = sg[i].addr;
		wqe->sge[i].length = sg[i].length;
		wqe->sge[i].lkey = sg[i].lkey;
		total += sg[i].length;
	}
	if (total > UR_MAX_MSG_SZ)
		return -EINVAL;
	wqe->num_sge = (uint32_t)num;
	wqe->length = (uint32_t)total;
	wqe->send_flags &= ~IBV_SEND_INLINE;
	return 0;
}

/* ibv_send_wr -> the WQE in the next slot (not yet published). */
static int wqe_from_wr(struct ur_qp *qp, struct ur_send_wqe *wqe,
		       const struct ibv_send_wr *wr)
{
	const struct ur_wr_opcode_info *info;
	int ret;

	info = ur_wr_opcode(qp->type, wr->opcode);
	if (!info && ud_foreign_op(qp, wr->opcode))
		info = ur_wr_opcode_any(wr->opcode);
	if (!info || wr->num_sge < 0 || (info->flags & UR_WR_FLUSH_ARGS))
		return -EINVAL;
	wqe_init(wqe, wr->wr_id, wr->opcode, wr->send_flags);
	if (info->flags & UR_WR_IMM)
		wqe->imm_data = wr->imm_data;
	if (info->flags & UR_WR_INV)
		wqe->invalidate_rkey = wr->invalidate_rkey;

	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
	case IBV_WR_ATOMIC_WRITE:
		wqe->rdma.remote_addr = wr->wr.rdma.remote_addr;
		wqe->rdma.rkey = wr->wr.rdma.rkey;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wqe->atomic.remote_addr = wr->wr.atomic.remote_addr;
		wqe->atomic.compare_add = wr->wr.atomic.compare_add;
		wqe->atomic.swap = wr->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
				   wr->wr.atomic.swap : 0;
		wqe->atomic.rkey = wr->wr.atomic.rkey;
		break;
	case IBV_WR_LOCAL_INV:
		wqe->invalidate_rkey = wr->invalidate_rkey;
		break;
	case IBV_WR_BIND_MW:
		if (!wr->bind_mw.mw || wr->bind_mw.mw->type != IBV_MW_TYPE_2)
			return -EINVAL;
		wqe->bind.mw = to_ur_mw(wr->bind_mw.mw);
		wqe->bind.rkey = wr->bind_mw.rkey;
		wqe->bind.mr = wr->bind_mw.bind_info.mr ?
			       to_ur_mr(wr->bind_mw.bind_info.mr) : NULL;
		wqe->bind.addr = wr->bind_mw.bind_info.addr;
		wqe->bind.length = wr->bind_mw.bind_info.length;
		wqe->bind.access = wr->bind_mw.bind_info.mw_access_flags;
		break;
	default:
		break;
	}
	if (qp->type == IBV_QPT_XRC_SEND)
		wqe->xrc_srqn = wr->qp_type.xrc.remote_srqn;
	if (qp->type == IBV_QPT_UD) {
		wqe->ud.ah = wr->wr.ud.ah ? to_ur_ah(wr->wr.ud.ah) : NULL;
		wqe->ud.remote_qpn = wr->wr.ud.remote_qpn;
		wqe->ud.remote_qkey = wr->wr.ud.remote_qkey;
	}

	if (info->flags & UR_WR_LOCAL) {
		/* no data: SGEs of a local operation mean nothing */
		wqe->send_flags &= ~IBV_SEND_INLINE;
	} else if ((wqe->send_flags & IBV_SEND_INLINE) &&
		   (info->flags & UR_WR_PAYLOAD)) {
		ret = wqe_copy_inline(qp, wqe, wr->sg_list, wr->num_sge);
		if (ret)
			return ret;
	} else {
		ret = wqe_copy_sges(qp, wqe, wr->sg_list, (size_t)wr->num_sge);
		if (ret)
			return ret;
	}
	return ur_send_wqe_check(qp, wqe);
}

int ur_qp_post_send(struct ur_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad)
{
	int ret = 0;

	UR_ASSERT_HELD(&qp->sq_lock);
	for (; wr; wr = wr->next) {
		if (qp->state == IBV_QPS_RESET ||
		    qp->type == IBV_QPT_XRC_RECV) {
			ret = EINVAL;	/* an XRC target has no send queue */
			break;
		}
		if (sq_full(qp)) {
			ret = ENOMEM;
			break;
		}
		ret = -wqe_from_wr(qp, ur_wq_slot(&qp->sq, qp->sq.producer),
				   wr);
		if (ret)
			break;
		qp->sq.producer++;
	}
	if (ret)
		*bad = wr;
	return ret;
}

int ur_qp_post_recv(struct ur_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad)
{
	struct ur_wq *rq = &qp->rq;
	struct ur_recv_wqe *w;
	bool shared = qp->rq_ring;	/* stale: rechecked under rq_lock */
	uint64_t total;
	int ret = 0;
	int i;

	/* a shared RQ resolves the keys at post (rq_ring.c) */
	if (shared)
		pthread_rwlock_rdlock(&qp->dev->obj_lock);
	pthread_spin_lock(&qp->rq_lock);
	if (shared && ur_rq_ring_post(qp, &wr, bad, &ret)) {
		pthread_spin_unlock(&qp->rq_lock);
		pthread_rwlock_unlock(&qp->dev->obj_lock);
		return ret;
	}
	for (; wr; wr = wr->next) {
		/* XRC QPs have no receive queue: their SRQ takes receives */
		if (qp->state == IBV_QPS_RESET || qp->srq ||
		    qp->type == IBV_QPT_XRC_SEND ||
		    qp->type == IBV_QPT_XRC_RECV || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > rq->max_sge) {
			ret = EINVAL;
			break;
		}
		if (rq->producer - rq->consumer >= rq->max_wr) {
			ret = ENOMEM;
			break;
		}
		w = ur_wq_slot(rq, rq->producer);
		w->wr_id = wr->wr_id;
		w->num_sge = (uint32_t)wr->num_sge;
		total = 0;
		for (i = 0; i < wr->num_sge; i++) {
			w->sge[i].addr = wr->sg_list[i].addr;
			w->sge[i].length = wr->sg_list[i].length;
			w->sge[i].lkey = wr->sg_list[i].lkey;
			total += wr->sg_list[i].length;
		}
		w->length = total > UINT32_MAX ? UINT32_MAX : (uint32_t)total;
		rq->producer++;
	}
	pthread_spin_unlock(&qp->rq_lock);
	if (shared)
		pthread_rwlock_unlock(&qp->dev->obj_lock);
	if (ret)
		*bad = wr;
	return ret;
}

int ur_qp_bind_mw(struct ur_qp *qp, struct ibv_mw *mw,
		  const struct ibv_mw_bind *bind)
{
	const struct ibv_mw_bind_info *bi = &bind->bind_info;
	struct ur_send_wqe *wqe;
	uint32_t rkey;
	int ret;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!mw || mw->type != IBV_MW_TYPE_1 || qp->state == IBV_QPS_RESET)
		return EINVAL;
	if (sq_full(qp))
		return ENOMEM;
	rkey = ibv_inc_rkey(mw->rkey);
	wqe = ur_wq_slot(&qp->sq, qp->sq.producer);
	wqe_init(wqe, bind->wr_id, IBV_WR_BIND_MW,
		 bind->send_flags & ~IBV_SEND_INLINE);
	wqe->bind.mw = to_ur_mw(mw);
	wqe->bind.rkey = rkey;
	wqe->bind.mr = bi->mr ? to_ur_mr(bi->mr) : NULL;
	wqe->bind.addr = bi->addr;
	wqe->bind.length = bi->length;
	wqe->bind.access = bi->mw_access_flags;
	ret = -ur_send_wqe_check(qp, wqe);
	if (ret)
		return ret;
	qp->sq.producer++;
	mw->rkey = rkey;
	return 0;
}

/* ------------------------------------------------------------------ */
/* ibv_qp_ex: ibv_wr_start ... ibv_wr_complete (man ibv_wr_post(3))     */
/* ------------------------------------------------------------------ */

/*
 * Between wr_start and wr_complete the caller holds qp->sq_lock (api/
 * takes it in wr_start and releases it in wr_complete or wr_abort), so
 * WQEs can be written straight into slots and sq.producer advanced: nobody
 * else reads it until the lock is released. wr_start_producer is where the
 * batch began; an abort or a failed complete rewinds to it. The first
 * error is kept in wr_err and every later call of the batch is ignored.
 */

static void wr_fail(struct ur_qp *qp, int err)
{
	if (!qp->wr_err)
		qp->wr_err = err;
}

static struct ur_send_wqe *wr_new(struct ibv_qp_ex *qpx,
				  enum ibv_wr_opcode op)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);
	struct ur_send_wqe *wqe;

	UR_ASSERT_HELD(&qp->sq_lock);	/* inside ibv_wr_start .. complete */
	if (qp->wr_err)
		return NULL;
	if (!ur_wr_opcode(qp->type, op)) {
		wr_fail(qp, EINVAL);
		return NULL;
	}
	if (sq_full(qp)) {
		wr_fail(qp, ENOMEM);
		return NULL;
	}
	wqe = ur_wq_slot(&qp->sq, qp->sq.producer);
	wqe_init(wqe, qpx->wr_id, op, qpx->wr_flags & ~IBV_SEND_INLINE);
	qp->sq.producer++;
	return wqe;
}

/* The WQE the last builder started (the setters' target). */
static struct ur_send_wqe *wr_cur(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);

	if (qp->wr_err)
		return NULL;
	if (qp->sq.producer == qp->wr_start_producer) {
		wr_fail(qp, EINVAL);
		return NULL;
	}
	return ur_wq_slot(&qp->sq, qp->sq.producer - 1);
}

void ur_qp_wr_begin(struct ur_qp *qp)
{
	UR_ASSERT_HELD(&qp->sq_lock);
	qp->wr_err = 0;
	qp->wr_start_producer = qp->sq.producer;
}

int ur_qp_wr_end(struct ur_qp *qp)
{
	uint32_t i;
	int ret = qp->wr_err;

	UR_ASSERT_HELD(&qp->sq_lock);
	for (i = qp->wr_start_producer; !ret && i != qp->sq.producer; i++)
		ret = -ur_send_wqe_check(qp, ur_wq_slot(&qp->sq, i));
	if (ret)
		qp->sq.producer = qp->wr_start_producer;
	qp->wr_err = 0;
	return ret;
}

void ur_qp_wr_rewind(struct ur_qp *qp)
{
	UR_ASSERT_HELD(&qp->sq_lock);
	qp->sq.producer = qp->wr_start_producer;
	qp->wr_err = 0;
}

static void wr_rdma(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
		    uint32_t rkey, uint64_t remote_addr)
{
	struct ur_send_wqe *wqe = wr_new(qpx, op);

	if (!wqe)
		return;
	wqe->rdma.remote_addr = remote_addr;
	wqe->rdma.rkey = rkey;
}

static void wr_rdma_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			  uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_WRITE, rkey, remote_addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm)
{
	struct ur_send_wqe *wqe;

	wr_rdma(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr);
	wqe = wr_cur(qpx);
	if (wqe)
		wqe->imm_data = imm;
}

static void wr_rdma_read(struct ibv_qp_ex *qpx, uint32_t rkey,
			 uint64_t remote_addr)
{
	wr_rdma(qpx, IBV_WR_RDMA_READ, rkey, remote_addr);
}

static void wr_atomic(struct ibv_qp_ex *qpx, enum ibv_wr_opcode op,
		      uint32_t rkey, uint64_t remote_addr,
		      uint64_t compare_add, uint64_t swap)
{
	struct ur_send_wqe *wqe = wr_new(qpx, op);

	if (!wqe)
		return;
	wqe->atomic.remote_addr = remote_addr;
	wqe->atomic.rkey = rkey;
	wqe->atomic.compare_add = compare_add;
	wqe->atomic.swap = swap;
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *qpx, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare,
		  swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *qpx, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	wr_atomic(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void wr_send(struct ibv_qp_ex *qpx)
{
	wr_new(qpx, IBV_WR_SEND);
}

static void wr_send_imm(struct ibv_qp_ex *qpx, __be32 imm)
{
	struct ur_send_wqe *wqe = wr_new(qpx, IBV_WR_SEND_WITH_IMM);

	if (wqe)
		wqe->imm_data = imm;
}

static void wr_send_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ur_send_wqe *wqe = wr_new(qpx, IBV_WR_SEND_WITH_INV);

	if (wqe)
		wqe->invalidate_rkey = rkey;
}

static void wr_local_inv(struct ibv_qp_ex *qpx, uint32_t rkey)
{
	struct ur_send_wqe *wqe = wr_new(qpx, IBV_WR_LOCAL_INV);

	if (wqe)
		wqe->invalidate_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *qpx, struct ibv_mw *mw,
		       uint32_t rkey, const struct ibv_mw_bind_info *bi)
{
	struct ur_send_wqe *wqe;

	if (!mw || mw->type != IBV_MW_TYPE_2 || !bi) {
		wr_fail(to_ur_qp_ex(qpx), EINVAL);
		return;
	}
	wqe = wr_new(qpx, IBV_WR_BIND_MW);
	if (!wqe)
		return;
	wqe->bind.mw = to_ur_mw(mw);
	wqe->bind.rkey = rkey;
	wqe->bind.mr = bi->mr ? to_ur_mr(bi->mr) : NULL;
	wqe->bind.addr = bi->addr;
	wqe->bind.length = bi->length;
	wqe->bind.access = bi->mw_access_flags;
}

static void wr_set_ud_addr(struct ibv_qp_ex *qpx, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct ur_send_wqe *wqe = wr_cur(qpx);

	if (!wqe)
		return;
	wqe->ud.ah = ah ? to_ur_ah(ah) : NULL;
	wqe->ud.remote_qpn = remote_qpn;
	wqe->ud.remote_qkey = remote_qkey;
}

static void wr_set_sge_list(struct ibv_qp_ex *qpx, size_t num,
			    const struct ibv_sge *sg)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);
	struct ur_send_wqe *wqe = wr_cur(qpx);

	if (wqe && wqe_copy_sges(qp, wqe, sg, num))
		wr_fail(qp, EINVAL);
}

static void wr_set_sge(struct ibv_qp_ex *qpx, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct ibv_sge sg = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(qpx, 1, &sg);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *qpx, size_t num,
				    const struct ibv_data_buf *buf)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);
	struct ur_send_wqe *wqe = wr_cur(qpx);
	uint64_t total = 0;
	size_t i;

	if (!wqe)
		return;
	for (i = 0; i < num; i++)
		total += buf[i].length;
	if (total > qp->sq.max_inline) {
		wr_fail(qp, EINVAL);
		return;
	}
	total = 0;
	for (i = 0; i < num; i++) {
		memcpy(wqe->inline_data + total, buf[i].addr, buf[i].length);
		total += buf[i].length;
	}
	wqe->num_sge = 0;
	wqe->length = (uint32_t)total;
	wqe->send_flags |= IBV_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *qpx, void *addr,
			       size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(qpx, 1, &b);
}

/* Builders we do not implement: the batch fails with EOPNOTSUPP. */
static void wr_send_tso(struct ibv_qp_ex *qpx, void *hdr, uint16_t hdr_sz,
			uint16_t mss)
{
	wr_fail(to_ur_qp_ex(qpx), EOPNOTSUPP);
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *qpx, uint32_t srqn)
{
	struct ur_send_wqe *wqe = wr_cur(qpx);

	if (!wqe)
		return;
	if (to_ur_qp_ex(qpx)->type != IBV_QPT_XRC_SEND)
		wr_fail(to_ur_qp_ex(qpx), EOPNOTSUPP);	/* not an XRC QP */
	else
		wqe->xrc_srqn = srqn;
}

/* The 8 bytes go into the WQE, as rxe's provider copies them: the
 * caller's buffer may be reused as soon as this returns. */
static void wr_atomic_write(struct ibv_qp_ex *qpx, uint32_t rkey,
			    uint64_t remote_addr, const void *atomic_wr)
{
	struct ur_send_wqe *wqe;

	if (!atomic_wr) {
		wr_fail(to_ur_qp_ex(qpx), EINVAL);
		return;
	}
	wr_rdma(qpx, IBV_WR_ATOMIC_WRITE, rkey, remote_addr);
	wqe = wr_cur(qpx);
	if (!wqe)
		return;
	memcpy(wqe->inline_data, atomic_wr, 8);
	wqe->length = 8;
	wqe->send_flags |= IBV_SEND_INLINE;
}

static void wr_flush(struct ibv_qp_ex *qpx, uint32_t rkey,
		     uint64_t remote_addr, size_t len, uint8_t type,
		     uint8_t level)
{
	struct ur_send_wqe *wqe;

	if (len > UR_MAX_MSG_SZ) {
		wr_fail(to_ur_qp_ex(qpx), EINVAL);
		return;
	}
	wqe = wr_new(qpx, (enum ibv_wr_opcode)UR_WR_FLUSH);
	if (!wqe)
		return;
	wqe->flush.remote_addr = remote_addr;
	wqe->flush.rkey = rkey;
	wqe->flush.length = (uint32_t)len;
	wqe->flush.type = type;
	wqe->flush.level = level;
}

void ur_qp_init_wr_ops(struct ur_qp *qp)
{
	struct ibv_qp_ex *x = &qp->ibqp_ex;

	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	x->wr_atomic_fetch_add = wr_atomic_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_atomic_write = wr_atomic_write;
	qp->wr_flush = wr_flush;
}
