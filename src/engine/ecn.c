/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ECN and CNPs as RoCEv2 NICs do them (DCQCN's notification and reaction
 * points; docs/design.md, "ECN and CNPs"). Packets leave ECT(0)
 * (ur_ecn_tos, applied by tx.c). A CE-marked packet for a connected QP
 * makes this NIC send the peer's QP a CNP, at most one per
 * UR_CNP_INTERVAL_NS per QP; a CNP received shrinks the window of the
 * QP it names (cc.c). CNPs are never answered and never counted as
 * drops, whoever sent them (mlx5 and other NICs send the same format;
 * rxe sends none and drops ours as an unknown opcode). The mlx5 names of
 * the counters: np_ecn_marked_roce_packets, np_cnp_sent, rp_cnp_handled,
 * rp_cnp_ignored.
 */
#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/time.h"

bool ur_ecn_cnp_due(uint64_t *last, uint64_t now)
{
	if (*last && now - *last < UR_CNP_INTERVAL_NS)
		return false;
	*last = now;
	return true;
}

/*
 * The CNP of RoCEv2 (IBA annex A17.9.3): a BTH with opcode 0x81, the
 * peer's QP as destination, P_Key 0xFFFF, BECN set (the B bit "is set in
 * an ACK or CN BTH"), PSN 0, then 16 reserved zero bytes and the ICRC.
 * It leaves through the receive path's batch, flushed with the replies
 * of the burst it came in.
 */
static void send_cnp(struct ur_nic *nic, struct ur_qp *qp)
{
	struct ur_hdr_fields f = { 0 };

	f.opcode = UR_OPC_CNP;
	f.becn = true;
	f.qpn = qp->attr.dest_qp_num;
	if (ur_txb_add(&ur_xp_shard(qp->xp)->txb, &qp->av.dest, &qp->xp->flow, &f, NULL, 0, 0))
		return;
	ur_qcnt_tx(qp->xp->qcnt.rx, 0);
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_CNP_SENT, 1);
	ur_cnt_stat(&nic->cnt, UR_STAT_NP_CNP_SENT, 1);
}

void ur_ecn_rx_ce(struct ur_nic *nic, struct ur_qp *qp)
{
	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	ur_cnt_stat(&nic->cnt, UR_STAT_NP_ECN_MARKED, 1);
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_ECN_MARKED, 1);
	/* a UD sender has no window to shrink and no QP of ours to name */
	if (qp->type == IBV_QPT_UD)
		return;
	if (ur_ecn_cnp_due(&qp->xp->resp.cnp_ns, ur_now_ns()))
		send_cnp(nic, qp);
}

/* The connected QP a CNP from d names, or NULL: the checks of any packet
 * of the connection (its peer's address; in hardened mode its port), the
 * ICRC, but not the P_Key or PSN, which NICs fill as they please. */
static struct ur_qp *cnp_qp(struct ur_nic *nic, const struct ur_rxd *d,
			    const struct ur_pkt *pkt)
{
	struct ur_qp *qp = pkt->qpn ? ur_qp_lookup(nic->dev, pkt->qpn) : NULL;
	enum ibv_qp_state st;
	struct ur_ip_flow flow;
	uint16_t port;

	if (!qp || !qp->xp || qp->type == IBV_QPT_UD)
		return NULL;
	st = atomic_load_explicit(&qp->state, memory_order_relaxed);
	/* a path is loaded from RTR on, and gone in ERR */
	if (st == IBV_QPS_RESET || st == IBV_QPS_INIT || st == IBV_QPS_ERR ||
	    !ur_sockaddr_same_host(&d->src, &qp->av.dest))
		return NULL;
	port = d->src.sa.sa_family == AF_INET ? d->src.in.sin_port :
						d->src.in6.sin6_port;
	if (nic->hardened && qp->xp->peer_bound && port != qp->xp->peer_port)
		return NULL;
	if (ur_ip_flow_from_sockaddr(&flow, &d->src, &d->dst))
		return NULL;
	flow.tos = d->tos;
	flow.ttl = d->ttl;
	/* a same-host ring's packet may come without one (link.h) */
	if (d->no_icrc)
		return qp;
	return ur_icrc_check_rx(&flow, d->data, d->len) ? NULL : qp;
}

void ur_ecn_rx_cnp(struct ur_nic *nic, const struct ur_rxd *d,
		   const struct ur_pkt *pkt)
{
	struct ur_qp *qp;

	qp = cnp_qp(nic, d, pkt);
	if (!qp) {
		ur_cnt_stat(&nic->cnt, UR_STAT_RP_CNP_IGNORED, 1);
		return;
	}
	UR_ASSERT_HELD(&ur_xp_shard(qp->xp)->lock);
	ur_cnt_stat(&nic->cnt, UR_STAT_RP_CNP_HANDLED, 1);
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_CNP_HANDLED, 1);
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_RX_PKTS, 1);
	/* UC has no window: counted only */
	if (!ur_qp_reliable(qp))
		return;
	pthread_mutex_lock(&qp->sq_lock);
	ur_cc_cnp(qp->xp, ur_now_ns());
	pthread_mutex_unlock(&qp->sq_lock);
}
