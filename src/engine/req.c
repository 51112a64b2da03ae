/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The requester: turns send WQEs into packets. Runs in the send step
 * (send.c, sq_lock held): inline in post_send, and again after a response
 * opened the window or asked for a go-back-N, or after a deadline passed.
 * It reads the window from cc.c and hands failed WQEs to qp_error.c; it
 * never completes WQEs (the send step drains the completer after it).
 *
 * Per WQE: fence and READ/atomic credit checks, local operations (bind,
 * invalidate) executed in SQ order, segmentation by the path MTU with
 * FIRST/MIDDLE/LAST/ONLY opcodes, one PSN per packet except READ (which
 * consumes one per response packet), AckReq on the last packet of a message
 * and every UR_ACKREQ_EVERY packets. Payload goes to the link straight from
 * registered memory as iovecs, the ICRC computed over them incrementally,
 * into the QP's batches (tx.c), which leave after sq_lock (send.c).
 */
#include <errno.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"

enum ur_pos {
	UR_POS_FIRST,
	UR_POS_MIDDLE,
	UR_POS_LAST,
	UR_POS_ONLY,
};

/*
 * The BTH opcode of each packet of a SEND or WRITE, by its position in the
 * message (RC; UC's are RC's + UR_OPC_UC_SEND_FIRST). Which WQE opcodes
 * exist on which QP type, and what they carry, is obj/'s table
 * (obj/wr_opcode.h); the wire opcode is a wire/ fact obj/ cannot see.
 */
struct ur_op_row {
	bool ok;
	uint8_t op[4];			/* by enum ur_pos, RC opcodes */
};

static const struct ur_op_row rc_ops[] = {
	[IBV_WR_SEND] = { true, { UR_OPC_RC_SEND_FIRST, UR_OPC_RC_SEND_MIDDLE,
				  UR_OPC_RC_SEND_LAST,
				  UR_OPC_RC_SEND_ONLY } },
	[IBV_WR_SEND_WITH_IMM] = { true, { UR_OPC_RC_SEND_FIRST,
					   UR_OPC_RC_SEND_MIDDLE,
					   UR_OPC_RC_SEND_LAST_IMM,
					   UR_OPC_RC_SEND_ONLY_IMM } },
	[IBV_WR_SEND_WITH_INV] = { true, { UR_OPC_RC_SEND_FIRST,
					   UR_OPC_RC_SEND_MIDDLE,
					   UR_OPC_RC_SEND_LAST_INV,
					   UR_OPC_RC_SEND_ONLY_INV } },
	[IBV_WR_RDMA_WRITE] = { true, { UR_OPC_RC_WRITE_FIRST,
					UR_OPC_RC_WRITE_MIDDLE,
					UR_OPC_RC_WRITE_LAST,
					UR_OPC_RC_WRITE_ONLY } },
	[IBV_WR_RDMA_WRITE_WITH_IMM] = { true, { UR_OPC_RC_WRITE_FIRST,
						 UR_OPC_RC_WRITE_MIDDLE,
						 UR_OPC_RC_WRITE_LAST_IMM,
						 UR_OPC_RC_WRITE_ONLY_IMM } },
};


static uint32_t wqe_npkts(const struct ur_qp_xport *xp,
			  const struct ur_send_wqe *wqe)
{
	if (ur_wr_has(wqe->opcode, UR_WR_ATOMIC) || !wqe->length ||
	    wqe->dx_placed)
		return 1;
	return (wqe->length + xp->mtu - 1) / xp->mtu;
}

static enum ibv_wc_status req_local_op(struct ur_qp *qp,
				       struct ur_send_wqe *wqe)
{
	if (wqe->opcode == IBV_WR_BIND_MW) {
		if (ur_mw_bind_wqe(qp, wqe))
			return IBV_WC_MW_BIND_ERR;
		return IBV_WC_SUCCESS;
	}
	/* IBA's "memory management error" has no verbs status of its own;
	 * mlx5 reports a failed invalidation as it does a failed bind */
	if (ur_mem_invalidate(qp->dev, qp->pd, ur_qp_num(qp),
			      wqe->invalidate_rkey))
		return IBV_WC_MW_BIND_ERR;
	return IBV_WC_SUCCESS;
}

static void wqe_sent(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	if (!ur_qp_reliable(qp))
		wqe->state = UR_WQE_DONE;
	ur_sq_advance(qp);
}

/* An XRC initiator sends RC's packets under XRC opcodes, each request
 * naming the responder's XRC SRQ in its XRCETH. */
static void req_xrc(const struct ur_qp *qp, const struct ur_send_wqe *wqe,
		    struct ur_hdr_fields *f)
{
	if (qp->type != IBV_QPT_XRC_SEND)
		return;
	f->opcode = ur_op_rc_to_xrc(f->opcode);
	f->xrc_srqn = wqe->xrc_srqn;
}

/* Payload of [off, off+len) of a WQE as iovecs; 0 or -errno. */
static int wqe_payload(struct ur_qp *qp, struct ur_send_wqe *wqe,
		       uint32_t off, uint32_t len, struct iovec *iov,
		       unsigned int *niov)
{
	if (wqe->send_flags & IBV_SEND_INLINE) {
		iov[0].iov_base = wqe->inline_data + off;
		iov[0].iov_len = len;
		*niov = 1;
		return 0;
	}
	return ur_sgl_map(qp, wqe->sge, wqe->num_sge, off, len, 0, iov,
			  UR_TX_PAY_IOV, niov);
}

static void req_ud(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_hdr_fields f = { 0 };
	struct iovec iov[UR_TX_PAY_IOV];
	struct ur_ip_flow flow;
	unsigned int niov = 0;
	struct ur_ah *ah = wqe->ud.ah;
	uint32_t qkey = wqe->ud.remote_qkey;

	if (wqe->opcode != IBV_WR_SEND && wqe->opcode != IBV_WR_SEND_WITH_IMM) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_QP_OP_ERR);
		return;
	}
	/* an AH of another PD: IBA C10-10's status, and rxe's (mlx5's AH
	 * is a copy the hardware cannot tie to a PD, so it sends) */
	if (!ah || ah->pd != qp->pd ||
	    ur_ip_flow_from_sockaddr(&flow,
					    ur_nic_src(xp->nic,
						       ah->av.sgid_index),
					    &ah->av.dest)) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_QP_OP_ERR);
		return;
	}
	flow.tos = ah->av.traffic_class;
	/* A group's datagram leaves with the AH's hop limit as its TTL (as
	 * rxe sends it): it decides how far the group reaches. Unicast keeps
	 * the socket's, since applications put 0 or 1 there for one link. */
	if (ur_addr_is_multicast(&ah->av.dest))
		flow.ttl = ah->av.hop_limit;
	if (wqe->length > xp->mtu) {
		/* too big for the port MTU: mlx5 completes it with a length
		 * error; rxe's silent success (C10-93.1.1's "lost in the
		 * fabric") would say it was sent (docs/deviations.md) */
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_UD_TOO_BIG, 1);
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_LEN_ERR);
		return;
	}
	if (wqe_payload(qp, wqe, 0, wqe->length, iov, &niov)) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_PROT_ERR);
		return;
	}
	if (qkey & 0x80000000u)
		qkey = qp->attr.qkey;
	if (ur_qp_num(qp) == UR_QPN_GSI)
		qkey = UR_GSI_QKEY;
	f.opcode = wqe->opcode == IBV_WR_SEND ? UR_OPC_UD_SEND_ONLY :
						UR_OPC_UD_SEND_ONLY_IMM;
	f.se = wqe->send_flags & IBV_SEND_SOLICITED;
	f.qpn = wqe->ud.remote_qpn;
	f.psn = xp->req.psn;
	f.deth.qkey = qkey;
	f.deth.sqp = ur_qp_num(qp);
	f.imm_be = wqe->imm_data;
	if (ur_txq_add(&xp->txq, qp->sq.cursor, &ah->av.dest, &flow, &f, iov,
		       niov, wqe->length)) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_PROT_ERR);	/* memory faulted */
		return;
	}
	ur_qcnt_tx(xp->qcnt.req, wqe->length);
	wqe->first_psn = wqe->last_psn = xp->req.psn;
	xp->req.psn = ur_psn_inc(xp->req.psn);
	wqe_sent(qp, wqe);
}

static enum ur_pos pkt_pos(uint32_t idx, uint32_t n)
{
	if (n == 1)
		return UR_POS_ONLY;
	if (!idx)
		return UR_POS_FIRST;
	return idx == n - 1 ? UR_POS_LAST : UR_POS_MIDDLE;
}

/* Packet pkt of a SEND/WRITE on RC/UC, with PSN psn, into the batch:
 * 0, or -EFAULT when its local memory failed (unmapped, or a key). */
static int req_write_pkt(struct ur_qp *qp, uint32_t idx,
			 struct ur_send_wqe *wqe, uint32_t pkt, uint32_t psn,
			 bool ackreq)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_hdr_fields f = { 0 };
	struct iovec iov[UR_TX_PAY_IOV];
	unsigned int niov = 0;
	uint32_t off = pkt * xp->mtu;
	uint32_t len = wqe->dx_placed ? 0 : UR_MIN(xp->mtu, wqe->length - off);
	enum ur_pos pos = pkt_pos(pkt, wqe->npkts);
	bool last = pos == UR_POS_LAST || pos == UR_POS_ONLY;

	if (len && wqe_payload(qp, wqe, off, len, iov, &niov))
		return -EFAULT;
	f.placed = wqe->dx_placed;
	f.opcode = rc_ops[wqe->opcode].op[pos];
	if (qp->type == IBV_QPT_UC)
		f.opcode += UR_OPC_UC_SEND_FIRST;
	f.qpn = qp->attr.dest_qp_num;
	f.psn = psn;
	f.ackreq = ackreq;
	f.se = last && (wqe->send_flags & IBV_SEND_SOLICITED) &&
	       wqe->opcode != IBV_WR_RDMA_WRITE;
	if (pos == UR_POS_FIRST || pos == UR_POS_ONLY) {
		f.reth.va = wqe->rdma.remote_addr;
		f.reth.rkey = wqe->rdma.rkey;
		f.reth.len = wqe->length;
	}
	f.imm_be = wqe->imm_data;
	f.ieth_rkey = wqe->invalidate_rkey;
	req_xrc(qp, wqe, &f);
	if (ur_txq_add(&xp->txq, idx, &qp->av.dest, &xp->flow, &f, iov, niov,
		       len))
		return -EFAULT;	/* memory faulted */
	ur_qcnt_tx(xp->qcnt.req, len);
	return 0;
}

/* The cursor's next packet of a SEND/WRITE on RC/UC. */
static void req_send_write_pkt(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;
	uint32_t off = xp->req.pkt * xp->mtu;
	uint32_t len = UR_MIN(xp->mtu, wqe->length - off);
	bool last = xp->req.pkt + 1 == wqe->npkts;
	/* the last packet the window lets out asks for an ACK too: if the
	 * packets after it never come, nothing else would */
	bool full = ur_cc_window_full(xp, ur_psn_inc(xp->req.psn));
	bool ackreq = ur_qp_reliable(qp) && ur_cc_want_ackreq(xp, last || full);

	if (req_write_pkt(qp, qp->sq.cursor, wqe, xp->req.pkt, xp->req.psn,
			  ackreq)) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_PROT_ERR);
		return;
	}
	xp->req.psn = ur_psn_inc(xp->req.psn);
	wqe->sent = wqe->dx_placed ? wqe->length : off + len;
	if (++xp->req.pkt == wqe->npkts)
		wqe_sent(qp, wqe);
}

/*
 * Resends the packet with PSN resend.psn alone, with AckReq, the cursor
 * staying where it is (comp_selective()). false: it is not a SEND or
 * WRITE packet sent in this lap, and the caller goes back N instead.
 */
static bool req_resend_one(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_wq *sq = &qp->sq;
	uint32_t psn = xp->resend.psn, i;

	if (!ur_psn_before(psn, xp->req.psn))
		return false;
	for (i = sq->consumer; i != sq->producer; i++) {
		struct ur_send_wqe *w = ur_wq_slot(sq, i);

		if (i - sq->consumer > sq->cursor - sq->consumer)
			return false;
		if (w->state != UR_WQE_PENDING ||
		    !ur_psn_in_range(psn, w->first_psn, w->last_psn))
			continue;
		if (ur_wr_is_rd_atomic(w->opcode) ||
		    req_write_pkt(qp, i, w, (psn - w->first_psn) & UR_PSN_MASK,
				  psn, true))
			return false;
		/* a retransmission, as a go-back-N is; the device also
		 * counts these apart */
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_RETRANSMITS, 1);
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_RESENDS, 1);
		ur_qcnt(xp->qcnt.req, UR_QSTAT_RETRANSMITS, 1);
		return true;
	}
	return false;
}

/* A READ request for the responses [pkt, end) of READ WQE w (packet
 * indexes), at their PSNs: a first request, a retry's or an ask. */
static void req_read_request(struct ur_qp *qp, uint32_t idx,
			     struct ur_send_wqe *w, uint32_t pkt, uint32_t end)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_hdr_fields f = { 0 };
	uint32_t off = pkt * xp->mtu;

	f.opcode = UR_OPC_RC_READ_REQ;
	f.qpn = qp->attr.dest_qp_num;
	f.psn = ur_psn_add(w->first_psn, (int32_t)pkt);
	f.ackreq = true;
	f.reth.va = w->rdma.remote_addr + off;
	f.reth.rkey = w->rdma.rkey;
	f.reth.len = (uint32_t)UR_MIN((uint64_t)(end - pkt) * xp->mtu,
				      (uint64_t)(w->length - off));
	req_xrc(qp, w, &f);
	ur_txq_add(&xp->txq, idx, &qp->av.dest, &xp->flow, &f, NULL, 0, 0);
	ur_qcnt_tx(xp->qcnt.req, 0);
}

/*
 * The READ requests the completer asks for again (comp_read.c, rd_ask()),
 * each for a run of lost responses alone, inside the request that first
 * asked for them; the cursor stays where it is. A run answered in the
 * meantime (reordered, not lost) is not asked for.
 */
static void req_read_asks(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	for (unsigned int a = 0; a < xp->resend.rd_ask_n; a++) {
		uint32_t psn = xp->resend.rd_ask[a].psn,
			 end = xp->resend.rd_ask[a].end;
		struct ur_send_wqe *w =
		    ur_wq_slot(&qp->sq, xp->resend.rd_ask[a].idx);

		if (ur_psn_before(psn, xp->comp.psn) ||
		    !ur_psn_before(end, xp->req.psn) ||
		    w->state != UR_WQE_PENDING ||
		    w->opcode != IBV_WR_RDMA_READ ||
		    !ur_psn_in_range(psn, w->first_psn, w->last_psn))
			continue;
		req_read_request(qp, xp->resend.rd_ask[a].idx, w,
				 (psn - w->first_psn) & UR_PSN_MASK,
				 ((end - w->first_psn) & UR_PSN_MASK) + 1);
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_RETRANSMITS, 1);
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_READ_ASKS, 1);
		ur_qcnt(xp->qcnt.req, UR_QSTAT_RETRANSMITS, 1);
	}
	xp->resend.rd_ask_n = 0;
}

/*
 * IBA 1.5's ATOMIC WRITE (its 8 bytes after a RETH) and FLUSH (FETH and
 * RETH; the RETH's address and length name the range, ignored by the
 * responder for selectivity MR). Both are answered by a zero-length READ
 * response (comp.c). false: the WQE failed (its local payload).
 */
static bool req_placement_hdr(struct ur_qp *qp, struct ur_send_wqe *wqe,
			      struct ur_hdr_fields *f, struct iovec *iov,
			      unsigned int *niov)
{
	if (wqe->opcode == IBV_WR_ATOMIC_WRITE) {
		f->opcode = UR_OPC_RC_ATOMIC_WRITE;
		f->reth.va = wqe->rdma.remote_addr;
		f->reth.rkey = wqe->rdma.rkey;
		f->reth.len = wqe->length;
		if (wqe_payload(qp, wqe, 0, wqe->length, iov, niov)) {
			ur_wqe_fail(qp, qp->sq.cursor, wqe,
				    IBV_WC_LOC_PROT_ERR);
			return false;
		}
		return true;
	}
	f->opcode = UR_OPC_RC_FLUSH;
	f->feth.sel = wqe->flush.level;
	f->feth.plt = wqe->flush.type;
	f->reth.va = wqe->flush.remote_addr;
	f->reth.rkey = wqe->flush.rkey;
	f->reth.len = wqe->flush.length;
	return true;
}

static void req_read_atomic(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_hdr_fields f = { 0 };
	struct iovec iov[UR_TX_PAY_IOV];
	unsigned int niov = 0;
	uint32_t end, paylen = 0;

	f.qpn = qp->attr.dest_qp_num;
	f.ackreq = true;
	xp->req.noack_pkts = 0;
	if (wqe->opcode == IBV_WR_RDMA_READ) {
		/*
		 * A large READ goes out as several requests of at most
		 * UR_READ_CHUNK_PKTS responses each, so the window bounds
		 * the responses in flight too. A retry resumes inside a chunk
		 * and ends where the chunk ends: a subset of what the
		 * responder saved for it. It starts at the first response
		 * not placed yet (comp_read.c placed those past a lost
		 * one), as the completer's asks for the lost ones did: rxe
		 * answers a retried READ only from where its last retry
		 * started on.
		 */
		end = (xp->req.pkt / UR_READ_CHUNK_PKTS + 1) *
		      UR_READ_CHUNK_PKTS;
		end = UR_MIN(wqe->npkts, end);
		while (xp->req.pkt < end &&
		       ur_comp_rd_placed(xp, ur_psn_add(wqe->first_psn,
							(int32_t)xp->req.pkt)))
			xp->req.pkt++;
		/* all placed: nothing to ask, but counted as a request
		 * (the completer ends it when its cursor passes) */
		if (xp->req.pkt < end)
			req_read_request(qp, qp->sq.cursor, wqe, xp->req.pkt,
					 end);
		xp->req.rd_outstanding++;
		xp->req.psn = ur_psn_add(wqe->first_psn, (int32_t)end);
		xp->req.pkt = end;
		if (end == wqe->npkts)
			wqe_sent(qp, wqe);
		return;
	} else if (!ur_wr_has(wqe->opcode, UR_WR_SCATTER)) {
		if (!req_placement_hdr(qp, wqe, &f, iov, &niov))
			return;
		paylen = f.opcode == UR_OPC_RC_ATOMIC_WRITE ? wqe->length : 0;
	} else {
		f.opcode = wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
				   UR_OPC_RC_CMP_SWAP :
				   UR_OPC_RC_FETCH_ADD;
		f.atmeth.va = wqe->atomic.remote_addr;
		f.atmeth.rkey = wqe->atomic.rkey;
		if (wqe->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			f.atmeth.swap_add = wqe->atomic.swap;
			f.atmeth.compare = wqe->atomic.compare_add;
		} else {
			f.atmeth.swap_add = wqe->atomic.compare_add;
		}
	}
	f.psn = xp->req.psn;
	req_xrc(qp, wqe, &f);
	if (ur_txq_add(&xp->txq, qp->sq.cursor, &qp->av.dest, &xp->flow, &f,
		       iov, niov, paylen)) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_PROT_ERR);	/* memory faulted */
		return;
	}
	ur_qcnt_tx(xp->qcnt.req, paylen);
	xp->req.rd_outstanding++;
	xp->req.psn = ur_psn_inc(wqe->last_psn);
	wqe_sent(qp, wqe);
}

/* Checks before a WQE starts (or resumes after a rewind). true = go. */
static bool req_enter(struct ur_qp *qp, struct ur_send_wqe *wqe,
		      bool scatter)
{
	struct ur_qp_xport *xp = qp->xp;

	if (xp->req.entered)
		return true;
	if ((wqe->send_flags & IBV_SEND_FENCE) && xp->req.rd_outstanding)
		return false;
	if (!xp->req.pkt) {
		wqe->npkts = wqe_npkts(xp, wqe);
		wqe->first_psn = xp->req.psn;
		wqe->last_psn =
		    ur_psn_add(xp->req.psn, (int32_t)wqe->npkts - 1);
		wqe->sent = 0;
		/* an atomic's result is 8 bytes: any other buffer is a
		 * length error, found before its key is (mlx5 says
		 * LOC_LEN_ERR; obj/ took it at post time) */
		if (ur_wr_has(wqe->opcode, UR_WR_ATOMIC) &&
		    (wqe->num_sge != 1 || wqe->length != 8)) {
			ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_LEN_ERR);
			return false;
		}
		/* READ and atomic results land in local memory: a bad key
		 * there fails before anything is sent, whatever the remote
		 * key or address */
		if (scatter && !(wqe->send_flags & IBV_SEND_INLINE) &&
		    ur_sgl_check(qp, wqe->sge, wqe->num_sge,
				 IBV_ACCESS_LOCAL_WRITE)) {
			ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_PROT_ERR);
			return false;
		}
	}
	wqe->state = UR_WQE_PENDING;
	xp->req.entered = true;
	return true;
}

/*
 * The requester has work that only the peer's responses let out: its
 * window, or its READs and atomics in flight, are full. Noted for
 * poll_cq (peer_wait_yield(), progress.c): until those responses come,
 * an application spinning on its CQ only takes the CPU from whoever
 * must run to send them, on this host the peer's progress thread.
 */
static void req_blocked(struct ur_qp_xport *xp)
{
	atomic_store_explicit(&xp->nic->last_req_blocked, ur_now_ns(),
			      memory_order_relaxed);
}

/* A local operation: executed here, no PSN of its own. */
static bool req_is_local(const struct ur_qp *qp,
			 const struct ur_send_wqe *wqe)
{
	const struct ur_wr_opcode_info *info = ur_wr_opcode(qp->type,
							    wqe->opcode);

	return info && (info->flags & UR_WR_LOCAL);
}

/*
 * The same-host copy of the cursor WQE (entered), with the WRITEs posted
 * right behind it that the requester never visited: how many were done.
 * A WRITE with immediate may end the batch: its payload is copied, and it
 * is not done but placed, its one packet still to send (the receive it
 * consumes and its completion are the responder's).
 */
static unsigned int req_direct(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_wq *sq = &qp->sq;
	struct ur_send_wqe *w[UR_DX_BATCH];
	uint32_t i = sq->cursor + 1;
	unsigned int n = 1, k, j;
	bool send = ur_dx_send_op(wqe->opcode);	/* SENDs batch alike */

	if (wqe->dx_placed)
		return 0;	/* copied before a go-back-N */
	w[0] = wqe;
	while ((wqe->opcode == IBV_WR_RDMA_WRITE || send) &&
	       n < UR_DX_BATCH && i != sq->producer &&
	       i - sq->consumer >= xp->req.sq_high - sq->consumer) {
		struct ur_send_wqe *x = ur_wq_slot(sq, i++);

		if ((send ? !ur_dx_send_op(x->opcode) :
			    (x->opcode != IBV_WR_RDMA_WRITE &&
			     x->opcode != IBV_WR_RDMA_WRITE_WITH_IMM) ||
				    !x->length) ||
		    x->length > UR_DX_BATCH_BYTES)
			break;
		w[n++] = x;
		if (x->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			break;
	}
	if (send)
		return ur_direct_send(qp, w, n);
	k = ur_direct_run(qp, w, n);
	for (j = 0; j < k; j++) {
		if (w[j]->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
			w[j]->dx_placed = true;
			if (!j) {	/* entered: one packet, one PSN */
				wqe->npkts = 1;
				wqe->last_psn = wqe->first_psn;
			}
			return j;
		}
		ur_direct_done(qp, w[j]);
	}
	return k;
}

/* Returns false when the requester must stop for now. */
static bool req_step(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;
	const struct ur_wr_opcode_info *info;
	enum ibv_wc_status st;
	bool rd_atomic;

	if (qp->sq.cursor - qp->sq.consumer >=
		xp->req.sq_high - qp->sq.consumer &&
	    !xp->req.entered && !xp->req.pkt)
		wqe->state = UR_WQE_POSTED;	/* a fresh slot */
	if (wqe->state == UR_WQE_DONE) {
		/*
		 * Finished before the requester came back to it: a local
		 * operation, or a READ whose responses were all placed
		 * ahead, which the completer's cursor passed (comp_read.c)
		 * while the requester was still inside it after a go-back-N.
		 * Its PSNs stay its own: the next WQE starts after them (it
		 * started 31 PSNs early in a soak run, on PSNs the responder
		 * had taken for that READ: its packets were duplicates there,
		 * ACKed and never executed, or requests out of sequence).
		 */
		if (ur_qp_reliable(qp) && !req_is_local(qp, wqe) &&
		    ur_psn_in_range(xp->req.psn, wqe->first_psn, wqe->last_psn))
			xp->req.psn = ur_psn_inc(wqe->last_psn);
		ur_sq_advance(qp);
		return true;
	}
	if (wqe->state == UR_WQE_ERROR) {
		xp->req.halted = true;
		ur_sq_advance(qp);
		return false;
	}
	/* NULL: not an opcode this QP type executes (post refused it) */
	info = ur_wr_opcode(qp->type, wqe->opcode);
	if (info && (info->flags & UR_WR_LOCAL)) {
		if (wqe->opcode == IBV_WR_LOCAL_INV &&
		    qp->sq.consumer != qp->sq.cursor)
			return false;	/* waits for every prior WQE */
		if ((wqe->send_flags & IBV_SEND_FENCE) &&
		    xp->req.rd_outstanding)
			return false;
		st = req_local_op(qp, wqe);
		if (st != IBV_WC_SUCCESS) {
			ur_wqe_fail(qp, qp->sq.cursor, wqe, st);
			return false;
		}
		wqe->state = UR_WQE_DONE;
		ur_sq_advance(qp);
		return true;
	}
	if (qp->type == IBV_QPT_UD) {
		req_ud(qp, wqe);
		return !xp->req.halted;
	}
	if (!xp->req.entered && qp->state != IBV_QPS_RTS)
		return false;	/* SQD: nothing new starts */
	rd_atomic = info && (info->flags & UR_WR_RESPONSE);
	if (!info || (!rd_atomic &&
		      ((unsigned int)wqe->opcode >= UR_ARRAY_SIZE(rc_ops) ||
		       !rc_ops[wqe->opcode].ok))) {
		ur_wqe_fail(qp, qp->sq.cursor, wqe, IBV_WC_LOC_QP_OP_ERR);
		return false;
	}
	if (!req_enter(qp, wqe, info->flags & UR_WR_SCATTER))
		return false;
	if (!xp->req.pkt && req_direct(qp, wqe))
		return true;
	if (ur_qp_reliable(qp) && ur_cc_window_full(xp, xp->req.psn)) {
		req_blocked(xp);
		return false;
	}
	/*
	 * max_rd_atomic bounds READ and atomic *requests* in flight (ATOMIC
	 * WRITE and FLUSH too), each
	 * chunk of a large READ counting as one: the responder keeps that
	 * many for replay and overwrites the oldest (rxe too), so one more
	 * could make a retried request unanswerable.
	 */
	if (rd_atomic && xp->req.rd_outstanding >=
	    (qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1u)) {
		req_blocked(xp);
		return false;
	}
	if (rd_atomic) {
		req_read_atomic(qp, wqe);
	} else {
		uint32_t left = wqe->length - xp->req.pkt * xp->mtu;

		if (ur_qp_reliable(qp) &&
		    ur_cc_pace_wait(xp, UR_MIN(left, xp->mtu) +
					UR_PACE_HDR_BYTES))
			return false;	/* cc.c's kick deadline resumes */
		req_send_write_pkt(qp, wqe);
	}
	return !xp->req.halted;
}

/* Karn: time one PSN of new data; a retransmission cancels the sample. */
static void rtt_start(struct ur_qp_xport *xp, uint32_t sent_from)
{
	if (xp->rto.rtt_on || xp->req.psn == sent_from ||
	    !ur_psn_after(xp->req.psn, xp->req.psn_max))
		return;
	xp->rto.rtt_on = true;
	xp->rto.rtt_psn = ur_psn_add(xp->req.psn, -1);
	xp->rto.rtt_t0 = ur_now_ns();
}

void ur_req_run(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_device *dev = qp->dev;
	unsigned int budget = UR_REQ_BUDGET;
	uint64_t blocked;
	uint32_t psn0;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!xp)
		return;
	if (qp->state == IBV_QPS_ERR) {
		ur_flush_sq(qp);
		return;
	}
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	if (xp->comp.rnr_wait)
		return;
	if (xp->req.need_retry) {
		xp->req.need_retry = false;
		ur_req_rewind(qp);
	}
	/*
	 * Never wait for obj_lock while holding sq_lock (the receive path
	 * takes them the other way round). It only fails while a control
	 * verb holds it as a writer; then the progress thread runs us soon.
	 */
	if (pthread_rwlock_tryrdlock(&dev->obj_lock)) {
		ur_timer_arm(xp, &xp->tmr.kick_deadline, ur_now_ns());
		return;
	}
	if (xp->resend.need) {
		xp->resend.need = false;
		if (!req_resend_one(qp))
			ur_req_rewind(qp);
	}
	if (xp->resend.rd_ask_n)
		req_read_asks(qp);
	if (ur_qp_reliable(qp))
		ur_cc_pace_start(xp);
	psn0 = xp->req.psn;
	blocked = ur_link_tx_blocked(xp->nic->link);
	while (!xp->req.halted && qp->sq.cursor != qp->sq.producer &&
	       budget--) {
		struct ur_send_wqe *wqe = ur_wq_slot(&qp->sq, qp->sq.cursor);

		if (ur_txq_stalled(&xp->txq))	/* its sender reruns us */
			break;
		if (!req_step(qp, wqe))
			break;
	}
	/* what the run built leaves when sq_lock is released (send.c); a
	 * send it made itself (both batches full) found the local socket
	 * or queue full: congestion here (cc.c) */
	if (ur_qp_reliable(qp) &&
	    ur_link_tx_blocked(xp->nic->link) != blocked)
		ur_cc_local_full(xp);
	pthread_rwlock_unlock(&dev->obj_lock);
	xp->rto.probe_one = false;
	if (ur_qp_reliable(qp)) {
		rtt_start(xp, psn0);
		if (ur_psn_after(xp->req.psn, xp->req.psn_max))
			xp->req.psn_max = xp->req.psn;
		/* packets to leave: their sender arms it (a probe must
		 * not resend what a preempted sender still sends) */
		if (ur_txq_pending(&xp->txq))
			xp->txq.arm_owed = true;
		else
			ur_cc_arm_rto(qp, false);
	}
}

/* Go-back-N (docs/wire-notes.md §3.3): restart from the oldest
 * unacknowledged PSN; a partially acknowledged head WQE resumes at that
 * packet (a READ asks for the remaining bytes only). */
void ur_req_rewind(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_wq *sq = &qp->sq;
	struct ur_send_wqe *head = NULL;
	uint32_t i, end = xp->req.sq_high;

	UR_ASSERT_HELD(&qp->sq_lock);
	/* the cursor's WQE, entered, is ours too (its PSNs are this
	 * lap's): the completer must know it for a NAK that names it before
	 * it is entered again (comp.c, comp_nak_names_rewound()) */
	if (xp->req.entered && sq->cursor == end)
		xp->req.sq_high = ++end;
	for (i = sq->consumer; i != end; i++) {
		struct ur_send_wqe *w = ur_wq_slot(sq, i);

		if (w->state == UR_WQE_POSTED || w->state == UR_WQE_ERROR)
			break;
		if (w->state == UR_WQE_PENDING) {
			if (!head)
				head = w;
			w->state = UR_WQE_POSTED;
		}
	}
	sq->cursor = sq->consumer;
	xp->req.psn = xp->comp.psn;
	xp->req.pkt = 0;
	xp->req.entered = false;
	xp->req.halted = false;
	xp->req.rd_outstanding = 0;
	xp->req.noack_pkts = 0;
	xp->comp.retry_psn = xp->comp.psn;
	xp->comp.recover_psn = xp->req.psn_max;
	xp->rto.rtt_on = false;
	xp->resend.need = false;
	xp->resend.active = false;
	xp->resend.rd_ask_n = 0;	/* what they ask for is asked again */
	if (head && ur_psn_in_range(xp->comp.psn, head->first_psn,
				    head->last_psn))
		xp->req.pkt = (xp->comp.psn - head->first_psn) & UR_PSN_MASK;
	ur_cnt_stat(&xp->nic->cnt, UR_STAT_RETRANSMITS, 1);
	ur_qcnt(xp->qcnt.req, UR_QSTAT_RETRANSMITS, 1);
}
