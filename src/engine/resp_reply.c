/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the responder sends and how it leaves: ACKs and NAKs, READ
 * responses, atomic ACKs, the batch of replies followed by the receive
 * completions held for them (ur_resp_flush: a CQE becomes visible only
 * after its ACK left), and the responder's move of a QP to ERR. Calls
 * nothing in resp.c, which calls it.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/resp_priv.h"
#include "engine/xrc_mem.h"
#include "util/lock_assert.h"

#define RESP_BOUNCE (64u * 1024u)	/* READ responses of another process's
					 * memory between two batches */

/* An XRC target answers with XRC's opcodes (no XRCETH in responses). */
static uint8_t reply_opcode(const struct ur_resp_ctx *c, uint8_t rc_op)
{
	return c->qp->type == IBV_QPT_XRC_RECV ? ur_op_rc_to_xrc(rc_op) : rc_op;
}

void ur_resp_send_aeth(struct ur_resp_ctx *c, uint8_t opcode, uint8_t syn,
		       uint32_t psn)
{
	struct ur_hdr_fields f = { 0 };

	f.opcode = reply_opcode(c, opcode);
	f.qpn = c->qp->attr.dest_qp_num;
	f.psn = psn;
	f.aeth.syn = syn;
	f.aeth.msn = c->r->msn;
	if (syn == UR_AETH_ACK_UNLIMITED) {
		ur_txb_add_ack(&ur_xp_shard(c->xp)->txb, c->qp, &f);
		ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ACK_SENT, 1);
	} else {
		ur_txb_add(&ur_xp_shard(c->xp)->txb, &c->qp->av.dest, &c->xp->flow, &f,
			   NULL, 0, 0);
		ur_qcnt_tx(c->xp->qcnt.rx, 0);
	}
}

/* A response without payload that a later ACK must never replace (the
 * coalesced ACKs of ur_resp_send_aeth would). */
static void send_result(struct ur_resp_ctx *c, uint8_t opcode, uint32_t psn,
			uint64_t orig)
{
	struct ur_hdr_fields f = { 0 };

	f.opcode = reply_opcode(c, opcode);
	f.qpn = c->qp->attr.dest_qp_num;
	f.psn = psn;
	f.aeth.syn = UR_AETH_ACK_UNLIMITED;
	f.aeth.msn = c->r->msn;
	f.atmack_orig = orig;
	ur_txb_add(&ur_xp_shard(c->xp)->txb, &c->qp->av.dest, &c->xp->flow, &f, NULL,
		   0, 0);
	ur_qcnt_tx(c->xp->qcnt.rx, 0);
}

void ur_resp_send_atomic_ack(struct ur_resp_ctx *c, uint32_t psn,
			     uint64_t orig)
{
	send_result(c, UR_OPC_RC_ATOMIC_ACK, psn, orig);
}

/* IBA 1.5 answers ATOMIC WRITE and FLUSH with a zero-length RDMA READ
 * response ONLY (rxe's send_read_response_ack). */
void ur_resp_send_read_ack(struct ur_resp_ctx *c, uint32_t psn)
{
	send_result(c, UR_OPC_RC_READ_RESP_ONLY, psn, 0);
}

/* Read response packets for [va, va+len) with PSNs from psn on. The
 * memory is re-checked through the rkey for every packet, and a fault
 * while it is read (unmapped since registration, nothing mapped under an
 * on-demand MR) is a remote access error, as a bad rkey. Another
 * process's memory (an XRC SRQ's owner, xrc_mem.c) is read into bounce
 * first, which the batch is sent from before it is filled again. */
static void send_read(struct ur_resp_ctx *c, const struct ur_res *res,
		      uint32_t psn, uint64_t va, uint32_t len, uint8_t *bounce)
{
	uint32_t mtu = c->xp->mtu, n = len ? (len + mtu - 1) / mtu : 1, i;
	struct ur_hdr_fields f = { 0 };
	uint32_t pos = RESP_BOUNCE;
	struct iovec iov;
	uintptr_t host;

	for (i = 0; i < n; i++) {
		uint32_t off = i * mtu, plen = UR_MIN(mtu, len - off);

		if (bounce && pos + plen > RESP_BOUNCE) {
			ur_txb_flush(&ur_xp_shard(c->xp)->txb);
			pos = 0;
		}
		if (bounce ? ur_xrc_mem_read(c->qp, res->rkey, va + off,
					     bounce + pos, plen) :
			     ur_rkey_map(c->qp, res->rkey, va + off, plen,
					 IBV_ACCESS_REMOTE_READ, &host)) {
			ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_NAK_REM_ACC,
				       ur_psn_add(psn, (int32_t)i));
			return;
		}
		memset(&f, 0, sizeof(f));
		if (n == 1)
			f.opcode = UR_OPC_RC_READ_RESP_ONLY;
		else if (!i)
			f.opcode = UR_OPC_RC_READ_RESP_FIRST;
		else if (i == n - 1)
			f.opcode = UR_OPC_RC_READ_RESP_LAST;
		else
			f.opcode = UR_OPC_RC_READ_RESP_MIDDLE;
		f.opcode = reply_opcode(c, f.opcode);
		f.qpn = c->qp->attr.dest_qp_num;
		f.psn = ur_psn_add(psn, (int32_t)i);
		f.aeth.syn = UR_AETH_ACK_UNLIMITED;
		f.aeth.msn = c->r->msn;
		if (bounce) {
			host = (uintptr_t)(bounce + pos);
			pos += plen;
		}
		iov.iov_base = (void *)host;
		iov.iov_len = plen;
		if (ur_txb_add(&ur_xp_shard(c->xp)->txb, &c->qp->av.dest,
			       &c->xp->flow, &f, &iov, 1, plen)) {
			if (c->xp->nic->hardened) {
				ur_cnt_drop(&c->xp->nic->cnt,
					    UR_DROP_HARDENED);
				return;
			}
			ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ERR_NAK_SENT, 1);
			ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_NAK_REM_ACC,
				       f.psn);
			ur_resp_qp_error(c, IBV_EVENT_QP_ACCESS_ERR);
			return;
		}
		ur_qcnt_tx(c->xp->qcnt.rx, plen);
	}
}

void ur_resp_send_read(struct ur_resp_ctx *c, const struct ur_res *res,
		       uint32_t psn, uint64_t va, uint32_t len)
{
	uint8_t *bounce;

	if (!c->qp->xrc_ring) {
		send_read(c, res, psn, va, len, NULL);
		return;
	}
	bounce = malloc(RESP_BOUNCE);
	if (!bounce) {
		ur_resp_send_aeth(c, UR_OPC_RC_ACK, UR_AETH_NAK_REM_ACC, psn);
		return;
	}
	send_read(c, res, psn, va, len, bounce);
	ur_txb_flush(&ur_xp_shard(c->xp)->txb);	/* it points into bounce */
	free(bounce);
}

/* Responder-side class A/C error: the QP goes to ERR. */
void ur_resp_qp_error(struct ur_resp_ctx *c, enum ibv_event_type ev_type)
{
	struct ur_qp *qp = c->qp;
	struct ibv_async_event ev = {
		.element.qp = &qp->ibqp_ex.qp_base,
		.event_type = ev_type,
	};

	/* the completions held for their ACK come before the error's */
	if (c->r->held)
		ur_resp_flush(ur_xp_shard(c->xp));
	if (c->r->have_rwqe && c->rwqe_status != IBV_WC_SUCCESS) {
		struct ibv_wc wc;

		memset(&wc, 0, sizeof(wc));
		wc.wr_id = c->r->rwqe.wr_id;
		wc.status = c->rwqe_status;
		wc.opcode = IBV_WC_RECV;
		wc.qp_num = ur_qp_num(qp);
		__atomic_store_n(&c->r->have_rwqe, false, __ATOMIC_RELAXED);
		if (ur_rq_ring_on(qp))	/* older: a peer's SENDs by copy */
			ur_rq_ring_drain(qp);
		/* an XRC target's WQE goes back to the SRQ that lent it, of
		 * this process or another: nowhere if that SRQ is gone */
		if (qp->type == IBV_QPT_XRC_RECV)
			ur_xrc_rwqe_complete(qp, &wc);
		else if (ur_qp_recv_cq(qp))
			ur_cq_push(ur_qp_recv_cq(qp), &wc, false);
	}
	pthread_mutex_lock(&qp->sq_lock);
	ur_qp_error_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
	ur_flush_rq(qp, true);
	/* an XRC target whose creator's handle is gone has no handle to name
	 * (obj_lock held: the flag is stable) */
	if (!qp->xrc_orphan)
		ur_async_event_post(qp->ibqp_ex.qp_base.context, &ev);
}

void ur_resp_flush(struct ur_rx_shard *sh)
{
	bool overrun[UR_RX_BATCH];
	unsigned int i, n = sh->n_held;

	UR_ASSERT_HELD(&sh->lock);
	ur_txb_flush(&sh->txb);
	sh->n_held = 0;
	for (i = 0; i < n; i++) {
		struct ur_held_cqe *h = &sh->held[i];
		struct ur_resp_state_qp *r = &h->qp->xp->resp;

		overrun[i] = ur_cq_push(h->cq, &h->wc, h->solicited);
		__atomic_store_n(&r->held, r->held - 1, __ATOMIC_RELEASE);
		/* a peer's SENDs by copy waited behind it (obj/rq_ring.c) */
		if (!r->held && ur_rq_ring_on(h->qp))
			ur_rq_ring_drain(h->qp);
	}
	/* CQ overrun (class G): the QP fails, once all are posted */
	for (i = 0; i < n; i++) {
		struct ur_qp *qp = sh->held[i].qp;
		struct ur_resp_ctx c = {
			.qp = qp,
			.xp = qp->xp,
			.r = &qp->xp->resp,
			.rwqe_status = IBV_WC_SUCCESS,
		};

		if (overrun[i] && qp->state != IBV_QPS_ERR)
			ur_resp_qp_error(&c, IBV_EVENT_QP_FATAL);
	}
}
