/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What api/ tells the engine about a QP: its creation and destruction
 * (the transport state and its place in the NIC's QP list and timer
 * heap), state changes (RESET clears the transport state, RTR/RTS load
 * PSNs, peer and timers, ERR flushes) and the receive queue's doorbell
 * (the send queue's is the send step's entry, send.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"

/* Tells qp's CQs which receive shard completes there, for their empty
 * polls (engine/progress.c); a UD QP's multicast copies come through
 * shard 0 (mcast.c). At every state change, as the number is given when
 * the QP is published, after ur_engine_qp_init(). Bits are never
 * cleared: a CQ that outlives a QP only polls a shard more. */
static void xp_note_shard(struct ur_qp *qp)
{
	uint64_t bit = 1ull << ur_qp_shard_of(qp->xp->nic, qp);

	if (qp->type == IBV_QPT_UD)
		bit |= 1;
	if (qp->send_cq)
		atomic_fetch_or(&qp->send_cq->rx_shards, bit);
	if (qp->recv_cq)
		atomic_fetch_or(&qp->recv_cq->rx_shards, bit);
}

int ur_engine_qp_init(struct ur_qp *qp)
{
	struct ur_nic *nic = qp->dev->nic;
	struct ur_qp_xport *xp;

	if (!nic)
		return -ENODEV;
	xp = calloc(1, sizeof(*xp));
	if (!xp)
		return -ENOMEM;
	xp->qp = qp;
	xp->nic = nic;
	xp->mtu = ur_mtu_bytes(qp->dev->active_mtu);
	if (ur_txq_init(&xp->txq, nic)) {
		free(xp);
		return -ENOMEM;
	}
	pthread_mutex_lock(&nic->qp_list_lock);
	if (ur_timer_attach(xp)) {
		pthread_mutex_unlock(&nic->qp_list_lock);
		ur_txq_fini(&xp->txq);
		free(xp);
		return -ENOMEM;
	}
	ur_list_add_tail(&nic->qps, &xp->node);
	pthread_mutex_unlock(&nic->qp_list_lock);
	qp->xp = xp;
	return 0;
}

/* The progress stage holds qp_list_lock while it runs a QP's deadlines:
 * once this has it, no handler runs on xp any more. */
void ur_engine_qp_fini(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	if (!xp)
		return;
	ur_mcast_qp_gone(qp);	/* as the kernel detaches a destroyed QP */
	if (qp->type == IBV_QPT_XRC_RECV) {
		/* the WQE it held mid-message completes flushed, as a NIC
		 * flushes a destroyed target QP's (its SRQ is the domain's) */
		pthread_mutex_lock(&ur_xp_shard(xp)->lock);
		ur_xrc_rwqe_flush(qp, true);
		pthread_mutex_unlock(&ur_xp_shard(xp)->lock);
	}
	pthread_mutex_lock(&xp->nic->qp_list_lock);
	ur_list_del(&xp->node);
	ur_timer_detach(xp);
	pthread_mutex_unlock(&xp->nic->qp_list_lock);
	/* after the deadlines: their flush closes the RQ's ring too */
	ur_direct_qp_gone(qp);
	pthread_mutex_lock(&qp->sq_lock);
	ur_cc_set_busy(xp, false);
	/* a batch in flight leaves before its memory goes */
	ur_txq_discard(&xp->txq);
	pthread_mutex_unlock(&qp->sq_lock);
	qp->xp = NULL;
	ur_reorder_clear(xp);
	ur_txq_fini(&xp->txq);
	free(xp);
}

static uint64_t timeout_ns(uint8_t timeout)
{
	if (!timeout)
		return 0;	/* infinite */
	/* no floor: losses are found sooner by the recovery probe (comp.c) */
	return ur_iba_timeout_ns(timeout);
}

static void xp_reset(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_wq *sq = &qp->sq;

	ur_timer_disarm(&xp->tmr.rto_deadline);
	ur_timer_disarm(&xp->tmr.rnr_deadline);
	ur_timer_disarm(&xp->tmr.kick_deadline);
	ur_txq_discard(&xp->txq);
	xp->req.psn = xp->comp.psn = xp->req.psn_max = xp->comp.recover_psn = 0;
	xp->req.pkt = 0;
	xp->req.entered = false;
	xp->req.halted = false;
	xp->req.noack_pkts = 0;
	xp->req.rd_outstanding = 0;
	xp->req.need_retry = false;
	xp->comp.rnr_wait = false;
	xp->comp.retry_fast_used = false;
	xp->rto.iba_deadline = 0;
	xp->rto.srtt_ns = 0;
	xp->rto.rtt_on = false;
	xp->rto.probe_backoff = 0;
	xp->resend.peer_drops = false;
	xp->resend.drops_naks = 0;
	xp->resend.nak_rewind = false;
	xp->resend.need = false;
	xp->resend.active = false;
	xp->resend.ok = false;
	ur_comp_forget_ahead(xp);
	ur_cc_reset(xp);
	sq->cursor = sq->consumer;
	xp->req.sq_high = sq->consumer;
	ur_resp_reset(qp);
	ur_res_clear(xp);
}

static void xp_load_path(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;

	if (qp->type == IBV_QPT_UD) {
		xp->mtu = ur_mtu_bytes(qp->dev->active_mtu);
		return;
	}
	xp->mtu = qp->path_mtu_bytes ? qp->path_mtu_bytes :
				       ur_mtu_bytes(qp->attr.path_mtu);
	/* obj/ validated path_mtu; ur_mtu_bytes() says 0 for an invalid
	 * code, and the requester divides by this: IBA's smallest MTU */
	if (!xp->mtu)
		xp->mtu = 256;
	xp->peer_bound = false;		/* a new path: learn the port again */
	if (ur_ip_flow_from_sockaddr(&xp->flow,
				     ur_nic_src(xp->nic, qp->av.sgid_index),
				     &qp->av.dest))
		memset(&xp->flow, 0, sizeof(xp->flow));
	xp->flow.tos = qp->av.traffic_class;	/* the GRH traffic class */
}

void ur_engine_qp_lock(struct ur_qp *qp)
{
	if (qp->xp)
		pthread_mutex_lock(&ur_xp_shard(qp->xp)->lock);
	pthread_mutex_lock(&qp->sq_lock);
}

void ur_engine_qp_unlock(struct ur_qp *qp)
{
	ur_send_unlock(qp);	/* what the move to RTS sent */
	if (qp->xp)
		pthread_mutex_unlock(&ur_xp_shard(qp->xp)->lock);
}

void ur_engine_qp_modified(struct ur_qp *qp, enum ibv_qp_state old_state,
			   int attr_mask)
{
	struct ur_qp_xport *xp = qp->xp;
	bool kick = false;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!xp)
		return;
	UR_ASSERT_HELD(&ur_xp_shard(xp)->lock);
	xp_note_shard(qp);
	switch ((enum ibv_qp_state)qp->state) {	/* one atomic load */
	case IBV_QPS_RESET:
		xp_reset(qp);
		break;
	case IBV_QPS_INIT:
		if (old_state == IBV_QPS_RESET)
			xp_reset(qp);
		break;
	case IBV_QPS_RTR:
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		if (attr_mask & (IBV_QP_AV | IBV_QP_PATH_MTU) ||
		    old_state == IBV_QPS_INIT)
			xp_load_path(qp);
		if (attr_mask & IBV_QP_RQ_PSN) {
			xp->resp.epsn = qp->attr.rq_psn & UR_PSN_MASK;
			xp->resp.nak_sent = false;
		}
		if (attr_mask & IBV_QP_SQ_PSN) {
			xp->req.psn = xp->comp.psn =
			    qp->attr.sq_psn & UR_PSN_MASK;
			xp->comp.retry_psn = xp->comp.psn;
			xp->req.psn_max = xp->comp.recover_psn = xp->comp.psn;
			xp->cc.recover_psn = xp->comp.psn;
		}
		if (attr_mask & IBV_QP_TIMEOUT)
			xp->rto.timeout_ns = timeout_ns(qp->attr.timeout);
		if (attr_mask & IBV_QP_RETRY_CNT)
			xp->comp.retry_left = qp->attr.retry_cnt;
		if (attr_mask & IBV_QP_RNR_RETRY)
			xp->comp.rnr_left = qp->attr.rnr_retry;
		kick = qp->state == IBV_QPS_RTS;
		if (qp->state == IBV_QPS_SQD && old_state != IBV_QPS_SQD) {
			xp->req.sqd_notified = false;
			ur_sqd_check(qp);
		}
		break;
	case IBV_QPS_ERR:
		/* obj/ already set the state: the event is raised here */
		if (old_state != IBV_QPS_ERR)
			ur_qp_entered_err(qp);
		ur_qp_error_locked(qp);
		ur_flush_rq(qp, true);
		break;
	default:
		break;
	}
	ur_direct_qp_update(qp);
	if (kick)
		ur_send_step(qp);
}

void ur_engine_rq_kick(struct ur_qp *qp)
{
	if (qp->state == IBV_QPS_ERR)
		ur_flush_rq(qp, false);
}
