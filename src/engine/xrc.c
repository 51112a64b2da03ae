/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The XRC target's share of the responder. An XRC_RECV QP owns no receive
 * queue, PD or CQ: every request names, in its XRCETH, the XRC SRQ that
 * lends them (receive WQEs, the PD that receive buffers and the request's
 * rkeys are checked against, the CQ of the completions). The SRQ must
 * exist and belong to the target QP's XRC domain; if it does, the request
 * runs through the responder like an RC one with that SRQ lent for its
 * duration (qp->xrc_srq). If not, the responder answers as for a remote
 * access violation (NAK remote access error, QP to ERR, an
 * IBV_EVENT_QP_ACCESS_ERR: what hardware raises for an invalid XRCETH or
 * an XRC domain violation); a request that is not the expected one is
 * only dropped. Runs with nic->rx_lock and dev->obj_lock (read) held: the
 * SRQ cannot go away while the request is handled.
 */
#include "engine/resp_priv.h"
#include "util/lock_assert.h"

static void xrc_bad_srq(struct ur_qp *qp, const struct ur_pkt *pkt,
			const struct ur_rxd *d, const struct ur_ip_flow *flow)
{
	struct ur_resp_ctx c = ur_resp_ctx_of(qp, pkt, d, flow);
	struct ur_counters *cnt = &qp->xp->nic->cnt;

	c.rwqe_status = IBV_WC_REM_ACCESS_ERR;
	if (pkt->psn != c.r->epsn || qp->xp->nic->hardened) {
		ur_cnt_drop(cnt, qp->xp->nic->hardened ? UR_DROP_HARDENED :
							  UR_DROP_ACCESS);
		return;
	}
	ur_cnt_stat(cnt, UR_STAT_ERR_NAK_SENT, 1);
	ur_resp_send_aeth(&c, UR_OPC_RC_ACK, UR_AETH_NAK_REM_ACC, pkt->psn);
	ur_resp_qp_error(&c, IBV_EVENT_QP_ACCESS_ERR);
}

void ur_xrc_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		    const struct ur_rxd *d, const struct ur_ip_flow *flow)
{
	struct ur_srq *srq;

	UR_ASSERT_HELD(&qp->xp->nic->rx_lock);
	srq = ur_srq_lookup_xrc(qp->dev, ur_xrceth_srqn(pkt->xrceth));
	if (!srq || !ur_xrcd_same_domain(srq->xrcd, qp->xrcd)) {
		xrc_bad_srq(qp, pkt, d, flow);
		return;
	}
	qp->xrc_srq = srq;
	ur_resp_rx(qp, pkt, d, flow);
	qp->xrc_srq = NULL;
}
