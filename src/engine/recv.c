/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classify one received datagram (wire notes §2.11): parse, find the QP,
 * check class, state, peer address, P_Key, Q_Key and ICRC, then hand
 * requests to the responder and responses to the completer. Every drop is
 * counted by reason; nothing here trusts a byte of the packet. Runs with
 * nic->rx_lock and dev->obj_lock (read) held.
 */
#include "engine/engine_priv.h"
#include "util/log.h"

static unsigned int qp_tclass(const struct ur_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_RC:
		return UR_TCLASS_RC;
	case IBV_QPT_UC:
		return UR_TCLASS_UC;
	default:
		return UR_TCLASS_UD;
	}
}

static bool state_accepts(const struct ur_qp *qp, bool request)
{
	switch (qp->state) {
	case IBV_QPS_RTR:
		return request;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
	case IBV_QPS_SQE:
		return true;
	default:
		return false;
	}
}

static enum ur_drop_reason rx_classify(struct ur_nic *nic, struct ur_rxd *d,
				       struct ur_pkt *pkt,
				       struct ur_ip_flow *flow,
				       struct ur_qp **out)
{
	enum ur_drop_reason r;
	struct ur_qp *qp;
	bool request;

	r = ur_pkt_parse(d->data, d->len, pkt);
	if (r)
		return r;
	if (pkt->opcode == UR_OPC_CNP || pkt->qpn == UR_QPN_MCAST)
		return UR_DROP_UNSUPPORTED;
	qp = pkt->qpn ? ur_qp_lookup(nic->dev, pkt->qpn) : NULL;
	if (!qp || !qp->xp)
		return UR_DROP_UNKNOWN_QP;
	r = ur_pkt_check_class(pkt, qp_tclass(qp));
	if (r)
		return r;
	request = ur_op_is_request(pkt->opcode);
	if (!state_accepts(qp, request))
		return UR_DROP_QP_STATE;
	if (qp->type != IBV_QPT_UD &&
	    !ur_sockaddr_same_host(&d->src, &qp->av.dest))
		return UR_DROP_WRONG_PEER;
	if ((ur_bth_pkey(pkt->bth) & 0x7fff) != 0x7fff)
		return UR_DROP_BAD_PKEY;
	if (qp->type == IBV_QPT_UD && pkt->deth &&
	    ur_deth_qkey(pkt->deth) != (pkt->qpn == UR_QPN_GSI ?
						UR_GSI_QKEY : qp->attr.qkey))
		return UR_DROP_BAD_QKEY;
	if (ur_ip_flow_from_sockaddr(flow, &d->src, &d->dst))
		return UR_DROP_NOT_ROCE;
	flow->tos = d->tos;
	flow->ttl = d->ttl;
	r = ur_icrc_check_rx(flow, d->data, d->len);
	if (r)
		return r;
	if (qp->type != IBV_QPT_UD) {
		r = ur_pkt_check_mtu(pkt, qp->xp->mtu);
		if (r)
			return r;
	} else if (pkt->paylen > qp->xp->mtu) {
		return UR_DROP_MTU_EXCEEDED;
	}
	*out = qp;
	return UR_DROP_NONE;
}

void ur_rx_datagram(struct ur_nic *nic, struct ur_rxd *d)
{
	struct ur_ip_flow flow;
	enum ur_drop_reason r;
	struct ur_qp *qp = NULL;
	struct ur_pkt pkt;

	if (nic->pcap && !ur_ip_flow_from_sockaddr(&flow, &d->src, &d->dst)) {
		struct iovec iov = { .iov_base = d->data, .iov_len = d->len };

		/* Recorded before any check, dropped packets included. The
		 * socket never saw the IPv4 ID: record the one the ICRC says
		 * the sender's kernel wrote (0 if none fits). */
		flow.tos = d->tos;
		flow.ttl = d->ttl;
		if (ur_icrc_check_rx(&flow, d->data, d->len))
			flow.ip_id = 0;
		ur_pcap_write(nic->pcap, &flow, &iov, 1);
	}
	r = rx_classify(nic, d, &pkt, &flow, &qp);
	if (r) {
		ur_cnt_drop(&nic->cnt, r);
		ur_dbg_dp("engine: drop %s", ur_drop_reason_str(r));
		return;
	}
	if (ur_op_is_request(pkt.opcode))
		ur_resp_rx(qp, &pkt, d, &flow);
	else
		ur_comp_rx(qp, &pkt);
}
