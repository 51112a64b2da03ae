/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder: executes requests that arrive for a QP (docs/wire-notes.md
 * §1.5, §3). One dispatcher loop walks the states below for each packet;
 * the error states are named after the IBA error they report and map to the
 * NAK classes of docs/wire-notes.md §3.7. Runs on the thread that owns the
 * receive path (the QP's shard lock) with dev->obj_lock held for reading, so every
 * key it resolves stays valid while the packet is handled.
 */
#include <errno.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "engine/resp_priv.h"
#include "engine/xrc_mem.h"
#include "util/lock_assert.h"
#include "util/log.h"
#include "util/memguard.h"

enum ur_resp_state {
	UR_RESP_CHK_PSN,
	UR_RESP_CHK_OP_SEQ,
	UR_RESP_CHK_OP_VALID,
	UR_RESP_CHK_RESOURCE,
	UR_RESP_CHK_LENGTH,
	UR_RESP_CHK_RKEY,
	UR_RESP_EXECUTE,
	UR_RESP_COMPLETE,
	UR_RESP_READ_REPLY,
	UR_RESP_ATOMIC_REPLY,
	UR_RESP_PLACE,			/* ATOMIC WRITE, FLUSH (IBA 1.5) */
	UR_RESP_ACKNOWLEDGE,
	UR_RESP_DUPLICATE,
	UR_RESP_ERR_PSN_SEQUENCE,	/* class B: NAK 0x60 */
	UR_RESP_ERR_RNR,		/* class B: RNR NAK */
	UR_RESP_ERR_INVALID_REQUEST,	/* class C: NAK 0x61 */
	UR_RESP_ERR_LENGTH,		/* class C: NAK 0x61, LOC_LEN_ERR */
	UR_RESP_ERR_REMOTE_ACCESS,	/* class C: NAK 0x62 */
	UR_RESP_ERR_REMOTE_OPERATION,	/* class A: NAK 0x63 */
	UR_RESP_DROP,
	UR_RESP_DONE,
	UR_RESP__MAX,
};

static const char *const ur_resp_state_names[UR_RESP__MAX] = {
	[UR_RESP_CHK_PSN] = "CHK_PSN",
	[UR_RESP_CHK_OP_SEQ] = "CHK_OP_SEQ",
	[UR_RESP_CHK_OP_VALID] = "CHK_OP_VALID",
	[UR_RESP_CHK_RESOURCE] = "CHK_RESOURCE",
	[UR_RESP_CHK_LENGTH] = "CHK_LENGTH",
	[UR_RESP_CHK_RKEY] = "CHK_RKEY",
	[UR_RESP_EXECUTE] = "EXECUTE",
	[UR_RESP_COMPLETE] = "COMPLETE",
	[UR_RESP_READ_REPLY] = "READ_REPLY",
	[UR_RESP_ATOMIC_REPLY] = "ATOMIC_REPLY",
	[UR_RESP_PLACE] = "PLACE",
	[UR_RESP_ACKNOWLEDGE] = "ACKNOWLEDGE",
	[UR_RESP_DUPLICATE] = "DUPLICATE",
	[UR_RESP_ERR_PSN_SEQUENCE] = "ERR_PSN_SEQUENCE",
	[UR_RESP_ERR_RNR] = "ERR_RNR",
	[UR_RESP_ERR_INVALID_REQUEST] = "ERR_INVALID_REQUEST",
	[UR_RESP_ERR_LENGTH] = "ERR_LENGTH",
	[UR_RESP_ERR_REMOTE_ACCESS] = "ERR_REMOTE_ACCESS",
	[UR_RESP_ERR_REMOTE_OPERATION] = "ERR_REMOTE_OPERATION",
	[UR_RESP_DROP] = "DROP",
	[UR_RESP_DONE] = "DONE",
};

/*
 * On RoCE a UD receive completion's sl carries the packet type, as mlx5's
 * CQE does and UCX's ud_verbs reads it to find the DGID in the GRH image:
 * bit 3 = UDP-encapsulated (RoCEv2), bits 2:0 = L3 header (1 IPv6, 2 IPv4).
 */
enum {
	UR_WC_SL_ROCEV2_IPV6 = 0x8 | 0x1,
	UR_WC_SL_ROCEV2_IPV4 = 0x8 | 0x2,
};

/* ------------------------------------------------------------------ */
/* States                                                              */
/* ------------------------------------------------------------------ */

static void msg_reset(struct ur_resp_state_qp *r)
{
	r->msg = UR_MSG_NONE;
	r->msg_len = 0;
}

/* A request answered by more than an ACK: READ, atomic, ATOMIC WRITE,
 * FLUSH. */
static bool resp_op_answered(const struct ur_resp_ctx *c)
{
	return c->op == UR_OPC_RC_READ_REQ || ur_op_is_atomic(c->op) ||
	       ur_resp_is_placement(c);
}

static enum ur_resp_state resp_chk_psn(struct ur_resp_ctx *c)
{
	struct ur_resp_state_qp *r = c->r;
	uint32_t psn = c->pkt->psn;
	int32_t diff = ur_psn_diff(psn, r->epsn);

	if (c->qp->type == IBV_QPT_UD)
		return UR_RESP_CHK_RESOURCE;
	if (c->qp->type == IBV_QPT_UC) {
		if (diff || r->uc_drop) {
			if (!ur_op_has_start(c->op)) {
				r->uc_drop = true;
				r->epsn = ur_psn_inc(psn);
				c->drop = UR_DROP_PSN_WINDOW;
				return UR_RESP_DROP;
			}
			r->uc_drop = false;
			msg_reset(r);
			r->epsn = psn;
		}
		return UR_RESP_CHK_OP_SEQ;
	}
	if (diff > 0) {
		/* kept for when the gap fills (reorder.c), NAKed once; not a
		 * READ or atomic: the requester asks for those again anyway
		 * (comp.c), and executing a kept one too would send its
		 * responses twice */
		c->kept = c->d && !resp_op_answered(c) &&
			  ur_reorder_keep(c->xp, psn, c->d);
		if (r->nak_sent) {
			if (c->kept)
				return UR_RESP_DONE;
			c->drop = UR_DROP_PSN_WINDOW;
			return UR_RESP_DROP;
		}
		return UR_RESP_ERR_PSN_SEQUENCE;
	}
	if (diff < 0)
		return UR_RESP_DUPLICATE;
	r->nak_sent = false;
	return UR_RESP_CHK_OP_SEQ;
}

static enum ur_resp_state resp_seq_error(struct ur_resp_ctx *c)
{
	if (ur_resp_is_rc(c))
		return UR_RESP_ERR_INVALID_REQUEST;
	c->r->uc_drop = true;
	msg_reset(c->r);
	c->drop = UR_DROP_OPCODE_SEQ;
	return UR_RESP_DROP;
}

/* The target memory faulted (util/memguard.h): what a bad rkey does. */
static enum ur_resp_state resp_mem_fault(struct ur_resp_ctx *c)
{
	if (ur_resp_is_rc(c))
		return UR_RESP_ERR_REMOTE_ACCESS;
	c->drop = UR_DROP_ACCESS;
	c->r->uc_drop = true;
	msg_reset(c->r);
	return UR_RESP_DROP;
}

static enum ur_resp_state resp_chk_op_seq(struct ur_resp_ctx *c)
{
	struct ur_resp_state_qp *r = c->r;
	uint8_t op = c->op;

	switch (r->msg) {
	case UR_MSG_SEND:
		if (!ur_op_is_send(op) || ur_op_has_start(op))
			return resp_seq_error(c);
		break;
	case UR_MSG_WRITE:
		if (!ur_op_is_write(op) || ur_op_has_start(op))
			return resp_seq_error(c);
		break;
	default:
		if (!ur_op_has_start(op))
			return resp_seq_error(c);
		break;
	}
	return UR_RESP_CHK_OP_VALID;
}

static enum ur_resp_state resp_chk_op_valid(struct ur_resp_ctx *c)
{
	unsigned int acc = c->qp->attr.qp_access_flags, need = 0;

	if (ur_op_is_write(c->op) || c->op == UR_OPC_RC_ATOMIC_WRITE)
		need = IBV_ACCESS_REMOTE_WRITE;
	else if (ur_op_is_read(c->op))
		need = IBV_ACCESS_REMOTE_READ;
	else if (ur_op_is_atomic(c->op))
		need = IBV_ACCESS_REMOTE_ATOMIC;
	else if (c->op == UR_OPC_RC_FLUSH)
		need = ur_resp_flush_access(c->pkt->feth);
	if ((acc & need) != need) {
		if (ur_resp_is_rc(c))
			return UR_RESP_ERR_INVALID_REQUEST;
		c->r->uc_drop = true;
		c->drop = UR_DROP_ACCESS;
		return UR_RESP_DROP;
	}
	return UR_RESP_CHK_RESOURCE;
}

/* An XRC target notes which SRQ lent the WQE: should the message not
 * end, its completion goes there (qp_error.c). */
static void resp_note_xrc_srq(struct ur_resp_ctx *c)
{
	struct ur_resp_state_qp *r = c->r;

	r->rwqe_srqn = ur_xrceth_srqn(c->pkt->xrceth);
	r->rwqe_srq = c->qp->xrc_srq;
	r->rwqe_ring = c->qp->xrc_ring;
	r->rwqe_ring_id = r->rwqe_ring ? ur_xring_id(r->rwqe_ring) : 0;
}

static enum ur_resp_state resp_chk_resource(struct ur_resp_ctx *c)
{
	struct ur_resp_state_qp *r = c->r;

	if ((ur_op_is_read(c->op) || ur_op_is_atomic(c->op) ||
	     c->op == UR_OPC_RC_ATOMIC_WRITE) &&
	    !c->qp->attr.max_dest_rd_atomic)
		return UR_RESP_ERR_INVALID_REQUEST;
	if (ur_op_consumes_rwr(c->op) && !r->have_rwqe) {
		if (ur_qp_take_recv(c->qp, &r->rwqe)) {
			if (ur_resp_is_rc(c))
				return UR_RESP_ERR_RNR;
			c->drop = UR_DROP_NO_RECV_WQE;
			if (c->qp->type == IBV_QPT_UC)
				r->uc_drop = true;
			return UR_RESP_DROP;
		}
		if (c->qp->type == IBV_QPT_XRC_RECV)
			resp_note_xrc_srq(c);
		__atomic_store_n(&r->have_rwqe, true, __ATOMIC_RELAXED);
		r->msg_len = 0;
	}
	return UR_RESP_CHK_LENGTH;
}

static enum ur_resp_state resp_chk_length(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_resp_state_qp *r = c->r;
	uint64_t need;

	if (ur_op_is_send(c->op)) {
		need = (uint64_t)r->msg_len + pkt->paylen;
		if (c->qp->type == IBV_QPT_UD)
			need += UR_GRH_BYTES;
		if (need > r->rwqe.length) {
			if (ur_resp_is_rc(c))
				return UR_RESP_ERR_LENGTH;
			c->drop = UR_DROP_RECV_TOO_SMALL;
			if (c->qp->type == IBV_QPT_UC) {
				r->uc_drop = true;
				msg_reset(r);
			}
			return UR_RESP_DROP;
		}
	}
	if (ur_op_is_atomic(c->op) && (ur_atmeth_va(pkt->atmeth) & 7))
		return UR_RESP_ERR_INVALID_REQUEST;
	if (pkt->reth && ur_reth_len(pkt->reth) > UR_MAX_MSG_SZ)
		return UR_RESP_ERR_INVALID_REQUEST;
	return UR_RESP_CHK_RKEY;
}

/* The bytes a WRITE packet places: its payload, or all of a same-host
 * WRITE with immediate whose payload the requester copied already
 * (direct.c; recv.c let the mark through on that opcode only). */
static uint32_t resp_write_bytes(const struct ur_resp_ctx *c)
{
	return c->pkt->placed ? ur_reth_len(c->pkt->reth) : c->pkt->paylen;
}

static enum ur_resp_state resp_chk_rkey(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_resp_state_qp *r = c->r;

	if (ur_op_is_write(c->op)) {
		uint32_t len = resp_write_bytes(c);

		if (ur_op_has_start(c->op)) {
			r->va = ur_reth_va(pkt->reth);
			r->rkey = ur_reth_rkey(pkt->reth);
			r->resid = r->write_len = ur_reth_len(pkt->reth);
		}
		if (len > r->resid ||
		    (ur_op_has_end(c->op) && len != r->resid) ||
		    (!ur_op_has_end(c->op) && len == r->resid)) {
			if (ur_resp_is_rc(c))
				return UR_RESP_ERR_INVALID_REQUEST;
			c->drop = UR_DROP_BAD_LENGTH;
			r->uc_drop = true;
			msg_reset(r);
			return UR_RESP_DROP;
		}
		/* another process's memory: checked as it is copied */
		if (!c->qp->xrc_ring &&
		    ur_rkey_map(c->qp, r->rkey, r->va, len,
				IBV_ACCESS_REMOTE_WRITE, &c->host)) {
			if (ur_resp_is_rc(c))
				return UR_RESP_ERR_REMOTE_ACCESS;
			c->drop = UR_DROP_ACCESS;
			r->uc_drop = true;
			msg_reset(r);
			return UR_RESP_DROP;
		}
	} else if (ur_op_is_read(c->op)) {
		if (c->qp->xrc_ring ?
			    ur_xrc_mem_check(c->qp, ur_reth_rkey(pkt->reth),
					     ur_reth_va(pkt->reth),
					     ur_reth_len(pkt->reth), false) :
			    ur_rkey_map(c->qp, ur_reth_rkey(pkt->reth),
					ur_reth_va(pkt->reth),
					ur_reth_len(pkt->reth),
					IBV_ACCESS_REMOTE_READ, &c->host))
			return UR_RESP_ERR_REMOTE_ACCESS;
	} else if (ur_op_is_atomic(c->op)) {
		if (ur_rkey_map(c->qp, ur_atmeth_rkey(pkt->atmeth),
				ur_atmeth_va(pkt->atmeth), 8,
				IBV_ACCESS_REMOTE_ATOMIC, &c->host))
			return UR_RESP_ERR_REMOTE_ACCESS;
		if (c->host & 7)
			return UR_RESP_ERR_INVALID_REQUEST;
	} else if (ur_resp_is_placement(c)) {
		switch (ur_resp_place_check(c)) {
		case 0:
			break;
		case -EACCES:
			return UR_RESP_ERR_REMOTE_ACCESS;
		default:
			return UR_RESP_ERR_INVALID_REQUEST;
		}
	}
	return UR_RESP_EXECUTE;
}

static enum ur_resp_state resp_exec_send(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_resp_state_qp *r = c->r;
	struct ur_recv_wqe *w = &r->rwqe;
	uint32_t off = r->msg_len;
	int rc;

	if (c->qp->type == IBV_QPT_UD) {
		uint8_t grh[UR_GRH_BYTES];

		memset(grh, 0, sizeof(grh));
		ur_grh_image_build(grh, c->flow, c->d->len);
		rc = ur_recv_copy_in(c->qp, w->sge, w->num_sge, 0, grh,
				     sizeof(grh));
		off = UR_GRH_BYTES;
		r->msg_len = UR_GRH_BYTES;
		if (rc)
			goto err;
	}
	if (c->qp->xrc_ring)	/* into another process's XRC SRQ */
		rc = ur_xring_copy(c->qp->xrc_ring, w, off, pkt->payload,
				   pkt->paylen);
	else
		rc = ur_recv_copy_in(c->qp, w->sge, w->num_sge, off,
				     pkt->payload, pkt->paylen);
	if (rc)
		goto err;
	r->msg_len += pkt->paylen;
	r->msg = ur_op_has_end(c->op) ? UR_MSG_NONE : UR_MSG_SEND;
	return UR_RESP_DONE;
err:
	c->rwqe_status = rc == -EMSGSIZE ? IBV_WC_LOC_LEN_ERR :
					   IBV_WC_LOC_PROT_ERR;
	return UR_RESP_ERR_REMOTE_OPERATION;
}

static enum ur_resp_state resp_execute(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_resp_state_qp *r = c->r;
	enum ur_resp_state st;

	if (ur_op_is_read(c->op))
		return UR_RESP_READ_REPLY;
	if (ur_op_is_atomic(c->op))
		return UR_RESP_ATOMIC_REPLY;
	if (ur_resp_is_placement(c))
		return UR_RESP_PLACE;
	if (ur_op_is_send(c->op)) {
		st = resp_exec_send(c);
		if (st != UR_RESP_DONE)
			return st;
	} else {
		uint32_t len = resp_write_bytes(c);

		if (c->qp->xrc_ring ?
			    ur_xrc_mem_write(c->qp, r->rkey, r->va,
					     pkt->payload, len) :
			    !pkt->placed && len &&
				    ur_memguard_copy((void *)c->host,
						     pkt->payload, len))
			return resp_mem_fault(c);
		r->va += len;
		r->resid -= len;
		r->msg = ur_op_has_end(c->op) ? UR_MSG_NONE : UR_MSG_WRITE;
	}
	if (pkt->ieth) {
		uint32_t rkey = ur_ieth_rkey(pkt->ieth);

		if (ur_mem_invalidate(c->qp->dev, ur_qp_target_pd(c->qp),
				      ur_qp_num(c->qp), rkey))
			c->inv_failed = true;
	}
	r->epsn = ur_psn_inc(pkt->psn);
	if (ur_op_has_end(c->op))
		r->msn = (r->msn + 1) & UR_PSN_MASK;
	if (ur_op_has_end(c->op) && ur_op_completes_rwr(c->op))
		return UR_RESP_COMPLETE;
	return UR_RESP_ACKNOWLEDGE;
}

/*
 * The completion of a message placed into another process's XRC SRQ
 * goes to that process's completion ring (obj/xrc_ring.c), after the
 * ACK and every completion held before it: the owner may see it at once.
 */
static enum ur_resp_state resp_complete_elsewhere(struct ur_resp_ctx *c,
						  const struct ibv_wc *wc)
{
	struct ur_resp_state_qp *r = c->r;

	if (c->pkt->ackreq && !c->inv_failed)
		ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_ACK_UNLIMITED,
				  c->pkt->psn);
	ur_resp_flush(ur_xp_shard(c->xp));
	__atomic_store_n(&r->have_rwqe, false, __ATOMIC_RELAXED);
	ur_xring_complete(c->qp->xrc_ring, r->rwqe.wr_id, wc);
	return UR_RESP_DONE;
}

static enum ur_resp_state resp_complete(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_resp_state_qp *r = c->r;
	struct ibv_wc wc;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->rwqe.wr_id;
	wc.status = IBV_WC_SUCCESS;
	wc.qp_num = ur_qp_num(c->qp);
	if (ur_op_is_write(c->op)) {
		wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		wc.byte_len = r->write_len;
	} else {
		wc.opcode = IBV_WC_RECV;
		wc.byte_len = r->msg_len;
	}
	if (pkt->immdt) {
		wc.imm_data = ur_immdt_imm_be(pkt->immdt);
		wc.wc_flags |= IBV_WC_WITH_IMM;
	}
	if (pkt->ieth) {
		wc.invalidated_rkey = ur_ieth_rkey(pkt->ieth);
		wc.wc_flags |= IBV_WC_WITH_INV;
		if (c->inv_failed)
			wc.status = IBV_WC_REM_INV_REQ_ERR;
	}
	if (c->qp->type == IBV_QPT_UD) {
		wc.src_qp = ur_deth_sqp(pkt->deth);
		wc.wc_flags |= IBV_WC_GRH;
		wc.sl = c->flow->family == AF_INET ? UR_WC_SL_ROCEV2_IPV4 :
						     UR_WC_SL_ROCEV2_IPV6;
	} else {
		wc.src_qp = c->qp->attr.dest_qp_num;
	}
	r->msg_len = 0;
	if (ur_rq_ring_on(c->qp))	/* a peer's SENDs before this one */
		ur_rq_ring_drain(c->qp);
	if (c->qp->xrc_ring)
		return resp_complete_elsewhere(c, &wc);
	/*
	 * The ACK is on the wire before the CQE is visible, as a NIC does
	 * it: an application that polls this completion and exits at once
	 * (a server after its last receive) would otherwise never send it,
	 * and the peer's SEND would end in RETRY_EXC_ERR. A successful one
	 * waits in its shard's held for the batch to leave (ur_resp_flush()), so
	 * the ACKs stay coalesced; while it waits, r->held keeps others from
	 * flushing the RQ past it. Class J is rare: the batch leaves now,
	 * then the CQE, then the QP fails. A SEND with Invalidate whose
	 * invalidation failed is not acknowledged at all (class J sends no
	 * NAK, and mlx5 no ACK either): its requester hears nothing.
	 */
	if (ur_resp_is_rc(c) && pkt->ackreq && !c->inv_failed) {
		struct ur_rx_shard *sh = ur_xp_shard(c->xp);

		ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_ACK_UNLIMITED,
				  pkt->psn);
		if (wc.status == IBV_WC_SUCCESS) {
			if (sh->n_held == UR_RX_BATCH)
				ur_resp_flush(sh);
			sh->held[sh->n_held++] = (struct ur_held_cqe){
				.qp = c->qp, .cq = ur_qp_recv_cq(c->qp),
				.wc = wc, .solicited = pkt->se,
			};
			__atomic_store_n(&r->held, r->held + 1,
					 __ATOMIC_SEQ_CST);
			__atomic_store_n(&r->have_rwqe, false,
					 __ATOMIC_RELEASE);
			return UR_RESP_DONE;
		}
		ur_resp_flush(sh);
	} else if (r->held) {
		ur_resp_flush(ur_xp_shard(c->xp));	/* keep the RQ's order */
	}
	__atomic_store_n(&r->have_rwqe, false, __ATOMIC_RELAXED);
	if (ur_cq_push(ur_qp_recv_cq(c->qp), &wc, pkt->se)) {
		/* CQ overrun (class G): the QP fails */
		ur_resp_qp_error(c, IBV_EVENT_QP_FATAL);
		return UR_RESP_DONE;
	}
	if (wc.status != IBV_WC_SUCCESS && ur_resp_is_rc(c))
		ur_resp_qp_error(c, IBV_EVENT_QP_REQ_ERR);	/* class J */
				 return UR_RESP_DONE;
}

static enum ur_resp_state resp_read_reply(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_res *res = ur_res_alloc(c->xp);
	uint32_t len = ur_reth_len(pkt->reth), mtu = c->xp->mtu;
	uint32_t n = len ? (len + mtu - 1) / mtu : 1;

	res->type = UR_RES_READ;
	res->first_psn = pkt->psn;
	res->last_psn = ur_psn_add(pkt->psn, (int32_t)n - 1);
	res->va = ur_reth_va(pkt->reth);
	res->rkey = ur_reth_rkey(pkt->reth);
	res->len = len;
	c->r->epsn = ur_psn_add(pkt->psn, (int32_t)n);
	c->r->msn = (c->r->msn + 1) & UR_PSN_MASK;
	ur_resp_send_read(c, res, pkt->psn, res->va, len);
	return UR_RESP_DONE;
}

static enum ur_resp_state resp_atomic_reply(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	uint64_t *p = (uint64_t *)c->host;
	uint64_t orig, swap = ur_atmeth_swap_add(pkt->atmeth);
	struct ur_res *res;

	if (c->op == UR_OPC_RC_CMP_SWAP ?
		    ur_memguard_cmp_swap(p, ur_atmeth_compare(pkt->atmeth),
					 swap, &orig) :
		    ur_memguard_fetch_add(p, swap, &orig))
		return UR_RESP_ERR_REMOTE_ACCESS;
	res = ur_res_alloc(c->xp);
	res->type = UR_RES_ATOMIC;
	res->first_psn = res->last_psn = pkt->psn;
	res->orig = orig;
	c->r->epsn = ur_psn_inc(pkt->psn);
	c->r->msn = (c->r->msn + 1) & UR_PSN_MASK;
	ur_resp_send_atomic_ack(c, pkt->psn, orig);
	return UR_RESP_DONE;
}

static enum ur_resp_state resp_place(struct ur_resp_ctx *c)
{
	return ur_resp_place(c) ? resp_mem_fault(c) : UR_RESP_DONE;
}

static enum ur_resp_state resp_acknowledge(struct ur_resp_ctx *c)
{
	if (ur_resp_is_rc(c) && c->pkt->ackreq)
		ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_ACK_UNLIMITED,
				  c->pkt->psn);
	return UR_RESP_DONE;
}

static enum ur_resp_state resp_duplicate(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_res *res;
	uint64_t va;
	uint32_t len, mtu = c->xp->mtu;

	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_DUP_REQ, 1);
	ur_qcnt(c->xp->qcnt.rx, UR_QSTAT_DUP_REQ, 1);
	if (ur_op_is_send(c->op) || ur_op_is_write(c->op)) {
		/* C9-105: not executed again; ACK the last in-order PSN */
		if (pkt->ackreq)
			ur_resp_send_aeth(c, UR_OPC_RC_ACK,
					  UR_AETH_ACK_UNLIMITED,
					  ur_psn_add(c->r->epsn, -1));
		return UR_RESP_DONE;
	}
	res = ur_res_find(c->xp, pkt->psn);
	c->drop = UR_DROP_DUPLICATE;
	if (!res)
		return UR_RESP_DROP;
	if (ur_op_is_atomic(c->op)) {
		if (res->type != UR_RES_ATOMIC || res->first_psn != pkt->psn)
			return UR_RESP_DROP;
		ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ATOMIC_REPLAY, 1);
		ur_resp_send_atomic_ack(c, pkt->psn, res->orig);
		return UR_RESP_DONE;
	}
	if (ur_resp_is_placement(c))
		return ur_resp_place_replay(c, res) ? UR_RESP_DONE :
						      UR_RESP_DROP;
	if (res->type != UR_RES_READ)
		return UR_RESP_DROP;
	va = ur_reth_va(pkt->reth);
	len = ur_reth_len(pkt->reth);
	/* a retried READ asks for a tail of the original range */
	if (ur_reth_rkey(pkt->reth) != res->rkey || va < res->va ||
	    va + len > res->va + res->len ||
	    (va - res->va) !=
		    (uint64_t)((pkt->psn - res->first_psn) & UR_PSN_MASK) * mtu)
		return UR_RESP_DROP;
	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_READ_REPLAY, 1);
	ur_resp_send_read(c, res, pkt->psn, va, len);
	return UR_RESP_DONE;
}

/* The gap's PSN-sequence NAK: one until the expected PSN arrives. */
static void resp_send_seq_nak(struct ur_resp_ctx *c)
{
	c->r->nak_sent = true;
	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_SEQ_NAK_SENT, 1);
	ur_qcnt(c->xp->qcnt.rx, UR_QSTAT_SEQ_NAK_SENT, 1);
	ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_NAK_PSN_SEQ, c->r->epsn);
	/* at once, not after the rest of the receive burst: until the
	 * requester hears it, the gap holds up all it sends */
	ur_resp_flush(ur_xp_shard(c->xp));
}

static enum ur_resp_state resp_err_psn_sequence(struct ur_resp_ctx *c)
{
	resp_send_seq_nak(c);
	if (c->kept)
		return UR_RESP_DONE;
	c->drop = UR_DROP_PSN_WINDOW;
	return UR_RESP_DROP;
}

static enum ur_resp_state resp_err_rnr(struct ur_resp_ctx *c)
{
	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_RNR_NAK_SENT, 1);
	ur_qcnt(c->xp->qcnt.rx, UR_QSTAT_RNR_NAK_SENT, 1);
	ur_resp_send_aeth(c, UR_OPC_RC_ACK,
			  UR_AETH_RNR_NAK | (c->qp->attr.min_rnr_timer & 0x1f),
			  c->pkt->psn);
	c->drop = UR_DROP_NO_RECV_WQE;
	return UR_RESP_DROP;
}

static enum ur_resp_state resp_err_class_c(struct ur_resp_ctx *c, uint8_t syn,
					   enum ibv_event_type ev)
{
	ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ERR_NAK_SENT, 1);
	ur_resp_send_aeth(c, UR_OPC_RC_ACK, syn, c->pkt->psn);
	ur_resp_qp_error(c, ev);
	return UR_RESP_DONE;
}

/*
 * Hardened mode (UROCE_HARDENED): a request that would move the QP to ERR
 * (class C: bad opcode sequence, length, alignment, rkey) is dropped and
 * counted instead of NAKed; on RoCEv2 nothing but the addresses vouches for
 * its sender. A real peer's bad request then ends in retry exhaustion.
 */
static bool resp_hardened_drop(struct ur_resp_ctx *c)
{
	if (!c->xp->nic->hardened)
		return false;
	c->drop = UR_DROP_HARDENED;
	return true;
}

static enum ur_resp_state resp_err_invalid_request(struct ur_resp_ctx *c)
{
	if (resp_hardened_drop(c))
		return UR_RESP_DROP;
	c->rwqe_status = IBV_WC_REM_INV_REQ_ERR;
	return resp_err_class_c(c, UR_AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
}

static enum ur_resp_state resp_err_length(struct ur_resp_ctx *c)
{
	if (resp_hardened_drop(c))
		return UR_RESP_DROP;
	c->rwqe_status = IBV_WC_LOC_LEN_ERR;
	return resp_err_class_c(c, UR_AETH_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
}

static enum ur_resp_state resp_err_remote_access(struct ur_resp_ctx *c)
{
	if (resp_hardened_drop(c))
		return UR_RESP_DROP;
	/* the receive a WRITE with immediate took: IBA's Local Access
	 * Error is this case exactly, and mlx5 reports it (rxe says
	 * REM_ACCESS_ERR, the requester's status) */
	c->rwqe_status = IBV_WC_LOC_ACCESS_ERR;
	return resp_err_class_c(c, UR_AETH_NAK_REM_ACC,
				IBV_EVENT_QP_ACCESS_ERR);
}

static enum ur_resp_state resp_err_remote_operation(struct ur_resp_ctx *c)
{
	if (c->rwqe_status == IBV_WC_SUCCESS)
		c->rwqe_status = IBV_WC_LOC_QP_OP_ERR;
	if (!ur_resp_is_rc(c)) {
		/* UC/UD: the message is dropped, the WQE kept for reuse */
		c->r->msg_len = 0;
		c->r->uc_drop = c->qp->type == IBV_QPT_UC;
		c->drop = UR_DROP_RECV_TOO_SMALL;
		return UR_RESP_DROP;
	}
	return resp_err_class_c(c, UR_AETH_NAK_REM_OP, IBV_EVENT_QP_FATAL);
}

static enum ur_resp_state resp_drop(struct ur_resp_ctx *c)
{
	ur_cnt_drop(&c->xp->nic->cnt, c->drop ? c->drop : UR_DROP_UNSUPPORTED);
	return UR_RESP_DONE;
}

typedef enum ur_resp_state (*ur_resp_fn)(struct ur_resp_ctx *c);

static const ur_resp_fn resp_handlers[UR_RESP__MAX] = {
	[UR_RESP_CHK_PSN] = resp_chk_psn,
	[UR_RESP_CHK_OP_SEQ] = resp_chk_op_seq,
	[UR_RESP_CHK_OP_VALID] = resp_chk_op_valid,
	[UR_RESP_CHK_RESOURCE] = resp_chk_resource,
	[UR_RESP_CHK_LENGTH] = resp_chk_length,
	[UR_RESP_CHK_RKEY] = resp_chk_rkey,
	[UR_RESP_EXECUTE] = resp_execute,
	[UR_RESP_COMPLETE] = resp_complete,
	[UR_RESP_READ_REPLY] = resp_read_reply,
	[UR_RESP_ATOMIC_REPLY] = resp_atomic_reply,
	[UR_RESP_PLACE] = resp_place,
	[UR_RESP_ACKNOWLEDGE] = resp_acknowledge,
	[UR_RESP_DUPLICATE] = resp_duplicate,
	[UR_RESP_ERR_PSN_SEQUENCE] = resp_err_psn_sequence,
	[UR_RESP_ERR_RNR] = resp_err_rnr,
	[UR_RESP_ERR_INVALID_REQUEST] = resp_err_invalid_request,
	[UR_RESP_ERR_LENGTH] = resp_err_length,
	[UR_RESP_ERR_REMOTE_ACCESS] = resp_err_remote_access,
	[UR_RESP_ERR_REMOTE_OPERATION] = resp_err_remote_operation,
	[UR_RESP_DROP] = resp_drop,
};

void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		const struct ur_rxd *d, const struct ur_ip_flow *flow)
{
	struct ur_resp_ctx c = ur_resp_ctx_of(qp, pkt, d, flow);
	enum ur_resp_state st = UR_RESP_CHK_PSN;

	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	while (st != UR_RESP_DONE) {
		ur_dbg_dp("resp qp %u psn %u: %s", ur_qp_num(qp), pkt->psn,
			  ur_resp_state_names[st]);
		st = resp_handlers[st](&c);
	}
	(void)ur_resp_state_names;
}

void ur_resp_reorder_done(struct ur_qp *qp, unsigned int drained,
			  bool stalled)
{
	struct ur_resp_ctx c = {
		.qp = qp, .xp = qp->xp, .r = &qp->xp->resp,
	};

	/* the requester may be resending all of them: tell it how far */
	if (drained)
		ur_resp_send_aeth(&c, UR_OPC_RC_ACK, UR_AETH_ACK_UNLIMITED,
				  ur_psn_add(c.r->epsn, -1));
	if (!stalled && !c.r->nak_sent && ur_reorder_ahead(c.xp))
		resp_send_seq_nak(&c);
}

void ur_resp_reset(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	/* a RESET discards the QP's own RQ; a WQE of an XRC SRQ belongs to
	 * the domain and completes flushed, in its owner's process too */
	if (qp->type == IBV_QPT_XRC_RECV)
		ur_xrc_rwqe_flush(qp, false);
	ur_reorder_clear(xp);
	memset(&xp->resp, 0, sizeof(xp->resp));
	xp->resp.epsn = qp->attr.rq_psn & UR_PSN_MASK;
}
