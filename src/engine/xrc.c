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
 * only dropped. Runs with shard 0's lock and dev->obj_lock (read) held: the
 * SRQ cannot go away while the request is handled.
 *
 * An SRQ of the same file-backed domain created by another process of
 * this host lends its receive WQEs from a file both map (obj/xrc_ring.c):
 * this process keeps the transport (PSN, ACK, NAK, RNR, duplicates) and
 * places SENDs into the owner's memory, and the completion goes to the
 * owner's completion ring. WRITEs and READs use the owner's keys as it
 * publishes them (xrc_mem.c). Atomics and SENDs with Invalidate are not
 * done from here: they get the answer for no SRQ, as does a request for
 * an SRQ whose owner is gone or whose memory this process may not write,
 * with a warning naming the cause once per process.
 */
#include <errno.h>

#include "engine/resp_priv.h"
#include "util/lock_assert.h"
#include "util/log.h"

static void xrc_bad_srq(struct ur_qp *qp, const struct ur_pkt *pkt,
			const struct ur_rxd *d, const struct ur_ip_flow *flow)
{
	struct ur_resp_ctx c = ur_resp_ctx_of(qp, pkt, d, flow);
	struct ur_counters *cnt = &qp->xp->nic->cnt;

	/* the WQE a message in progress holds, as resp.c's remote access
	 * errors complete it */
	c.rwqe_status = IBV_WC_LOC_ACCESS_ERR;
	if (pkt->psn != c.r->epsn || qp->xp->nic->hardened) {
		ur_cnt_drop(cnt, qp->xp->nic->hardened ? UR_DROP_HARDENED :
							  UR_DROP_ACCESS);
		return;
	}
	ur_cnt_stat(cnt, UR_STAT_ERR_NAK_SENT, 1);
	ur_resp_send_aeth(&c, UR_OPC_RC_ACK, UR_AETH_NAK_REM_ACC, pkt->psn);
	ur_resp_qp_error(&c, IBV_EVENT_QP_ACCESS_ERR);
}

static void xrc_warn_elsewhere(struct ur_qp *qp, const struct ur_pkt *pkt,
			       const char *why)
{
	static atomic_bool warned;
	uint32_t srqn = ur_xrceth_srqn(pkt->xrceth);

	if (atomic_load_explicit(&warned, memory_order_relaxed) ||
	    !ur_xrcd_srq_on_host(qp->xrcd, srqn) ||
	    atomic_exchange(&warned, true))
		return;
	ur_warn("XRC: QP %#x received a request for SRQ %#x of its domain, created by another process: %s (NAK remote access error)",
		qp->ibqp_ex.qp_base.qp_num, srqn, why);
}

/* What can be done for another process's SRQ: SENDs (its WQEs and its
 * CQ), WRITEs and READs (its owner's published keys, xrc_mem.c). Not
 * atomics: a copy between processes is not atomic against the owner's
 * other requesters, whose atomics its own responder executes; nor a SEND
 * with Invalidate: the owner's keys are invalidated in the owner only. */
static bool xrc_op_elsewhere_ok(const struct ur_pkt *pkt)
{
	return (ur_op_is_send(pkt->opcode) && !pkt->ieth) ||
	       ur_op_is_write(pkt->opcode) || ur_op_is_read(pkt->opcode);
}

static const char *xrc_why(int err)
{
	switch (err) {
	case -EPERM:
		return "its memory cannot be written from this process (process_vm_writev refused)";
	case -EOPNOTSUPP:
		return "its CQ waits on a completion channel and its process has no thread to take the completions";
	case 0:
		return "atomics and SENDs with Invalidate are not done for another process's SRQ";
	default:
		return "the SRQ or its process is gone";
	}
}

void ur_xrc_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		    const struct ur_rxd *d, const struct ur_ip_flow *flow)
{
	uint32_t srqn = ur_xrceth_srqn(pkt->xrceth);
	struct ur_resp_state_qp *r = &qp->xp->resp;
	struct ur_xring *ring = NULL;
	struct ur_srq *srq;
	int err;

	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	/* the packets of one message name one SRQ, whose WQE it holds */
	if (r->have_rwqe && pkt->psn == r->epsn && srqn != r->rwqe_srqn) {
		xrc_bad_srq(qp, pkt, d, flow);
		return;
	}
	srq = ur_srq_lookup_xrc(qp->dev, srqn);
	if (srq && ur_xrcd_same_domain(srq->xrcd, qp->xrcd)) {
		qp->xrc_srq = srq;
		ur_resp_rx(qp, pkt, d, flow);
		qp->xrc_srq = NULL;
		return;
	}
	err = srq ? -ENODEV : ur_xrcd_ring(qp->xrcd, srqn, &ring);
	if (err || !xrc_op_elsewhere_ok(pkt)) {
		xrc_warn_elsewhere(qp, pkt, xrc_why(err));
		xrc_bad_srq(qp, pkt, d, flow);
		return;
	}
	qp->xrc_ring = ring;
	ur_resp_rx(qp, pkt, d, flow);
	qp->xrc_ring = NULL;
}
