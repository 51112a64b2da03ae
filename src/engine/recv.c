/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Classify one received datagram (docs/wire-notes.md §2.11): parse, find
 * the QP, check class, state, peer address (in hardened mode its UDP port
 * too), P_Key, Q_Key and ICRC, then hand requests to the responder and
 * responses to the completer (through the send step, send.c). A UD SEND
 * to QPN 0xFFFFFF at an IP multicast group goes to every QP of the group
 * (mcast.c) whose state and Q_Key accept it. Every drop is counted by
 * reason; nothing here trusts a byte of the packet. Runs with the
 * receiving shard's lock and dev->obj_lock (read) held.
 *
 * A datagram for a QP of another receive shard (the same-host ring and
 * the multicast groups are received by shard 0; the link may have fewer
 * queues than the engine shards) is forwarded: handled here under that
 * shard's lock if a trylock gets it (never a wait: no two shard locks
 * are ever waited for while another is held), else copied to the
 * shard's queue of forwarded datagrams, which its next holder drains;
 * the first one queued wakes the progress thread, which takes the lock
 * (docs/design.md, "Receive shards").
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"
#include "util/log.h"
#include "util/trace.h"

static unsigned int qp_tclass(const struct ur_qp *qp)
{
	switch (qp->type) {
	case IBV_QPT_RC:
		return UR_TCLASS_RC;
	case IBV_QPT_UC:
		return UR_TCLASS_UC;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return UR_TCLASS_XRC;
	default:
		return UR_TCLASS_UD;
	}
}

static bool state_accepts(const struct ur_qp *qp, bool request)
{
	switch ((enum ibv_qp_state)qp->state) {	/* one atomic load */
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

/* The P_Key is our table's one entry on its 15 key bits; the top bit
 * (full or limited membership) may be either. */
static bool pkey_accepts(const struct ur_pkt *pkt)
{
	return (ur_bth_pkey(pkt->bth) & 0x7fff) == (UR_PKEY_DEFAULT & 0x7fff);
}

static uint16_t sockaddr_port(const union ur_sockaddr *a)
{
	return a->sa.sa_family == AF_INET ? a->in.sin_port : a->in6.sin6_port;
}

/* A request at the PSN the responder expects, or a response to a PSN the
 * requester has outstanding: what a peer that sees no traffic must guess. */
static bool rx_in_sequence(struct ur_qp *qp, const struct ur_pkt *pkt)
{
	struct ur_qp_xport *xp = qp->xp;
	bool ok;

	if (ur_op_is_request(pkt->opcode))
		return pkt->psn == xp->resp.epsn;
	pthread_mutex_lock(&qp->sq_lock);
	ok = xp->req.psn != xp->comp.psn &&
	     ur_psn_in_range(pkt->psn, xp->comp.psn,
			     ur_psn_add(xp->req.psn, -1));
	pthread_mutex_unlock(&qp->sq_lock);
	return ok;
}

/*
 * Hardened mode: an RC/UC QP is bound to its peer's UDP source port as
 * well as its IP, learned from the first in-sequence packet after the path
 * was loaded (RTR, or a new AV). RoCEv2 senders keep one source port per
 * QP (rxe hashes the QPN, mlx5 derives it from the flow label) but NICs
 * that spray a connection over several ports exist, hence opt-in
 * (docs/design.md, "Hostile peers").
 */
static enum ur_drop_reason rx_peer_port(struct ur_qp *qp,
					const struct ur_pkt *pkt,
					const union ur_sockaddr *src)
{
	struct ur_qp_xport *xp = qp->xp;
	uint16_t port = sockaddr_port(src);

	if (xp->peer_bound)
		return port == xp->peer_port ? UR_DROP_NONE :
					       UR_DROP_WRONG_PORT;
	if (rx_in_sequence(qp, pkt)) {
		xp->peer_port = port;
		xp->peer_bound = true;
	}
	return UR_DROP_NONE;
}

/* An error NAK moves the requester's QP to ERR: in hardened mode nothing
 * but the peer's addresses vouches for it, so it is dropped and the WQE
 * ends by retry exhaustion instead. */
static bool rx_error_nak(const struct ur_pkt *pkt)
{
	uint8_t syn;

	if (!pkt->aeth)
		return false;
	syn = ur_aeth_syn(pkt->aeth);
	return (syn & UR_AETH_TYPE_MASK) == UR_AETH_NAK &&
	       syn != UR_AETH_NAK_PSN_SEQ;
}

/* Fills flow from the datagram and checks its ICRC, unless that was done
 * when it was first received (a request kept past a gap) or a same-host
 * ring says its sender computed none (link.h, ur_rxd.no_icrc). */
static enum ur_drop_reason rx_flow_icrc(const struct ur_rxd *d,
					struct ur_ip_flow *flow, bool checked)
{
	if (ur_ip_flow_from_sockaddr(flow, &d->src, &d->dst))
		return UR_DROP_NOT_ROCE;
	flow->tos = d->tos;
	flow->ttl = d->ttl;
	if (checked || d->no_icrc)
		return UR_DROP_NONE;
	return ur_icrc_check_rx(flow, d->data, d->len);
}

/*
 * A datagram to QPN 0xFFFFFF: a UD SEND (the only multicast operation of
 * the IBA) sent to an IP multicast group this device has QPs attached to.
 * What each QP of the group accepts is rx_mcast_deliver()'s.
 */
static enum ur_drop_reason rx_mcast_classify(struct ur_nic *nic,
					     const struct ur_rxd *d,
					     const struct ur_pkt *pkt,
					     struct ur_ip_flow *flow,
					     struct ur_mcg **out)
{
	enum ur_drop_reason r;
	uint8_t gid[16];

	r = ur_pkt_check_class(pkt, UR_TCLASS_UD);
	if (r)
		return r;
	if (!ur_addr_is_multicast(&d->dst))
		return UR_DROP_MCAST_DEST;
	if (!pkey_accepts(pkt))
		return UR_DROP_BAD_PKEY;
	ur_sockaddr_to_gid(&d->dst, gid);
	*out = ur_mcast_find(nic, gid);
	if (!*out)
		return UR_DROP_MCAST_NO_GROUP;
	return rx_flow_icrc(d, flow, false);
}

/* Sent by qp itself: one of our addresses and qp's number as source. */
static bool rx_from_self(const struct ur_nic *nic, const struct ur_qp *qp,
			 const struct ur_rxd *d, const struct ur_pkt *pkt)
{
	unsigned int i;

	if (ur_deth_sqp(pkt->deth) != ur_qp_num(qp))
		return false;
	for (i = 0; i < nic->n_addrs; i++)
		if (ur_sockaddr_same_host(&nic->addrs[i], &d->src))
			return true;
	return false;
}

/*
 * One attached QP's copy, if it would take it as a unicast SEND: in
 * RTR or later, the Q_Key of the DETH equal to its own (C10-15), within
 * its MTU. As rxe and mlx5 by default, the sending QP gets a copy too
 * when it is attached (IPoIB filters its own); one created with
 * IBV_QP_CREATE_BLOCK_SELF_MCAST_LB does not. qp's shard lock held.
 */
static void rx_mcast_one(struct ur_nic *nic, struct ur_qp *qp,
			 const struct ur_rxd *d, const struct ur_pkt *pkt,
			 const struct ur_ip_flow *flow)
{
	enum ur_drop_reason r;

	if (!state_accepts(qp, true))
		r = UR_DROP_QP_STATE;
	else if (ur_deth_qkey(pkt->deth) != qp->attr.qkey)
		r = UR_DROP_BAD_QKEY;
	else if (pkt->paylen > qp->xp->mtu)
		r = UR_DROP_MTU_EXCEEDED;
	else if (qp->mcast_block_self && rx_from_self(nic, qp, d, pkt))
		r = UR_DROP_MCAST_SELF;
	else
		r = UR_DROP_NONE;
	if (r) {
		ur_cnt_drop(&nic->cnt, r);
		return;
	}
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_RX_PKTS, 1);
	ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_RX_BYTES, pkt->paylen);
	ur_resp_rx(qp, pkt, d, flow);
}

static void rx_forward(struct ur_nic *nic, struct ur_rx_shard *from,
		       struct ur_rx_shard *to, const struct ur_rxd *d,
		       uint32_t only_qpn);

/* One copy to each attached QP (rx_mcast_one()); a QP of another shard
 * gets it forwarded. sh (shard 0) holds the table. */
static void rx_mcast_deliver(struct ur_nic *nic, struct ur_rx_shard *sh,
			     const struct ur_mcg *g, const struct ur_rxd *d,
			     const struct ur_pkt *pkt,
			     const struct ur_ip_flow *flow)
{
	unsigned int i;

	for (i = 0; i < g->n; i++) {
		struct ur_qp *qp = g->qps[i];
		struct ur_rx_shard *own = ur_xp_shard(qp->xp);

		if (own != sh)
			rx_forward(nic, sh, own, d, ur_qp_num(qp));
		else
			rx_mcast_one(nic, qp, d, pkt, flow);
	}
}

/* A unicast packet's QP in *out; a multicast one's group in *mcg. */
static enum ur_drop_reason rx_classify(struct ur_nic *nic, struct ur_rxd *d,
				       bool kept, struct ur_pkt *pkt,
				       struct ur_ip_flow *flow,
				       struct ur_qp **out, struct ur_mcg **mcg)
{
	enum ur_drop_reason r;
	struct ur_qp *qp;
	bool request;

	r = ur_pkt_parse(d->data, d->len, pkt);
	if (r || pkt->opcode == UR_OPC_CNP)	/* a CNP: ecn.c's, no QP */
		return r;
	if (pkt->qpn == UR_QPN_MCAST)
		return rx_mcast_classify(nic, d, pkt, flow, mcg);
	qp = pkt->qpn ? ur_qp_lookup(nic->dev, pkt->qpn) : NULL;
	if (!qp || !qp->xp)
		return UR_DROP_UNKNOWN_QP;
	r = ur_pkt_check_class(pkt, qp_tclass(qp));
	if (r)
		return r;
	/* the same-host mark (direct.c) means something only from a
	 * uroce peer's ring, on the one opcode that carries it */
	if (pkt->placed && (!d->ring || qp->type != IBV_QPT_RC ||
			    pkt->opcode != UR_OPC_RC_WRITE_ONLY_IMM ||
			    pkt->paylen))
		return UR_DROP_RESERVED;
	request = ur_op_is_request(pkt->opcode);
	/* XRC's halves: the target only answers, the initiator only asks */
	if ((qp->type == IBV_QPT_XRC_RECV && !request) ||
	    (qp->type == IBV_QPT_XRC_SEND && request))
		return UR_DROP_OPCODE_CLASS;
	if (!state_accepts(qp, request))
		return UR_DROP_QP_STATE;
	if (qp->type != IBV_QPT_UD &&
	    !ur_sockaddr_same_host(&d->src, &qp->av.dest))
		return UR_DROP_WRONG_PEER;
	if (!pkey_accepts(pkt))
		return UR_DROP_BAD_PKEY;
	if (qp->type == IBV_QPT_UD && pkt->deth &&
	    ur_deth_qkey(pkt->deth) != (pkt->qpn == UR_QPN_GSI ?
						UR_GSI_QKEY : qp->attr.qkey))
		return UR_DROP_BAD_QKEY;
	r = rx_flow_icrc(d, flow, kept);
	if (r)
		return r;
	if (qp->type != IBV_QPT_UD && nic->hardened) {
		r = rx_peer_port(qp, pkt, &d->src);
		if (r)
			return r;
		if (!request && rx_error_nak(pkt))
			return UR_DROP_HARDENED;
	}
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

/*
 * A datagram past its capture. A request that moved its RC QP's expected
 * PSN may let requests kept past a gap follow (reorder.c): they are
 * handled here, in order, as if they came now (every check again but
 * the ICRC's, which they passed when they came).
 * Returns the QP of a request that did, for the caller's drain.
 */
static struct ur_qp *rx_dispatch(struct ur_nic *nic, struct ur_rx_shard *sh,
				 struct ur_rxd *d, bool kept)
{
	struct ur_ip_flow flow;
	enum ur_drop_reason r;
	struct ur_qp *qp = NULL;
	struct ur_mcg *mcg = NULL;
	struct ur_pkt pkt;
	uint32_t epsn;

	r = rx_classify(nic, d, kept, &pkt, &flow, &qp, &mcg);
	if (r) {
		ur_cnt_drop(&nic->cnt, r);
		ur_dbg_dp("engine: drop %s", ur_drop_reason_str(r));
		return NULL;
	}
	if (mcg) {
		rx_mcast_deliver(nic, sh, mcg, d, &pkt, &flow);
		return NULL;
	}
	if (!qp) {
		ur_ecn_rx_cnp(nic, d, &pkt);
		return NULL;
	}
	if (!kept) {	/* counted when it came */
		ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_RX_PKTS, 1);
		ur_qcnt(qp->xp->qcnt.rx, UR_QSTAT_RX_BYTES, pkt.paylen);
		if (ur_ecn_is_ce(d->tos))
			ur_ecn_rx_ce(nic, qp);
	}
	/* past here an XRC packet is handled as the RC one it stands for;
	 * its headers (pkt.xrceth included) stay where XRC put them */
	pkt.opcode = ur_op_xrc_to_rc(pkt.opcode);
	if (!ur_op_is_request(pkt.opcode)) {
		ur_send_on_response(qp, &pkt);
		return NULL;
	}
	/* a WRITE, READ, atomic, ATOMIC_WRITE or FLUSH: progress.c
	 * listens for more (one_sided_note). A SEND's middle packets
	 * consume no receive WQE but are not one-sided; the first
	 * packets of a WRITE with immediate cannot be told from a
	 * WRITE's. */
	if (!ur_op_is_send(pkt.opcode) && !ur_op_completes_rwr(pkt.opcode))
		sh->rx_one_sided = true;
	epsn = qp->xp->resp.epsn;
	if (qp->type == IBV_QPT_XRC_RECV)
		ur_xrc_resp_rx(qp, &pkt, d, &flow);
	else
		ur_resp_rx(qp, &pkt, d, &flow);
	return qp->xp->resp.reorder_n && qp->xp->resp.epsn != epsn ? qp :
								       NULL;
}

/* Requests kept past a gap that the last one filled, in order, until one
 * is not executed (no receive WQE: RNR; an error; a drop): the requester
 * sends that one again, and the drain goes on behind it then. */
static void rx_reorder_drain(struct ur_nic *nic, struct ur_rx_shard *sh,
			     struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_reorder_pkt *p;
	unsigned int n = 0;
	bool stalled = false;

	while (!stalled && (p = ur_reorder_take(xp))) {
		uint32_t epsn = xp->resp.epsn;

		rx_dispatch(nic, sh, &p->d, true);
		ur_reorder_free(xp, p);
		stalled = xp->resp.epsn == epsn;
		n += !stalled;
	}
	if (state_accepts(qp, true))	/* not moved to ERR by one of them */
		ur_resp_reorder_done(qp, n, stalled);
}

/*
 * Records d before any check, dropped packets included. The socket never
 * saw the IPv4 ID: the record has the one the ICRC says the sender's
 * kernel wrote (0 if none fits). A ring datagram sent with no ICRC is
 * recorded with the one it would have carried (ID 0): a capture shows
 * packets as the wire would.
 */
static void rx_pcap(struct ur_nic *nic, const struct ur_rxd *d)
{
	struct iovec iov[2] = { { .iov_base = d->data, .iov_len = d->len } };
	uint8_t icrc[UR_ICRC_BYTES];
	struct ur_ip_flow flow;

	if (ur_ip_flow_from_sockaddr(&flow, &d->src, &d->dst))
		return;
	flow.tos = d->tos;
	flow.ttl = d->ttl;
	if (d->no_icrc && d->len >= UR_ICRC_BYTES) {
		ur_icrc_store(icrc, ur_icrc_compute(&flow, d->data, d->len));
		iov[0].iov_len = d->len - UR_ICRC_BYTES;
		iov[1].iov_base = icrc;
		iov[1].iov_len = UR_ICRC_BYTES;
		ur_pcap_write(nic->pcap, &flow, iov, 2);
		return;
	}
	if (ur_icrc_check_rx(&flow, d->data, d->len))
		flow.ip_id = 0;
	ur_pcap_write(nic->pcap, &flow, iov, 1);
}

/* A datagram for sh, its own or forwarded to it (after its capture). */
/*
 * sh->lock held: one more datagram handled here. Only the lock's holder
 * writes the count (readers load it), so a plain load and store: a locked
 * add after every WRITE's copy into memory waited for all of the copy's
 * stores to drain (4.6 % of a target's CPU in 64 KiB ib_write_bw, on that
 * one instruction), where the next packet's parse and ICRC could run.
 */
static inline void rx_count(struct ur_rx_shard *sh)
{
	atomic_store_explicit(&sh->rx_pkts,
			      atomic_load_explicit(&sh->rx_pkts,
						   memory_order_relaxed) + 1,
			      memory_order_relaxed);
}

static void rx_local(struct ur_nic *nic, struct ur_rx_shard *sh,
		     struct ur_rxd *d)
{
	struct ur_qp *qp = rx_dispatch(nic, sh, d, false);

	rx_count(sh);
	if (qp)
		rx_reorder_drain(nic, sh, qp);
}

/* A multicast copy forwarded to one attached QP of sh (qpn): the checks
 * of its group's copies again, the ICRC's done by the receiving shard. */
static void rx_mcast_fwd(struct ur_nic *nic, struct ur_rx_shard *sh,
			 struct ur_rxd *d, uint32_t qpn)
{
	struct ur_ip_flow flow;
	struct ur_qp *qp;
	struct ur_pkt pkt;

	rx_count(sh);
	qp = ur_qp_lookup(nic->dev, qpn);
	if (!qp || !qp->xp || ur_xp_shard(qp->xp) != sh ||
	    ur_pkt_parse(d->data, d->len, &pkt) ||
	    rx_flow_icrc(d, &flow, true)) {
		ur_cnt_drop(&nic->cnt, UR_DROP_UNKNOWN_QP);
		return;
	}
	rx_mcast_one(nic, qp, d, &pkt, &flow);
}

/* The shard of d's destination QP (the BTH's, read before any check:
 * rx_classify() checks it there), or sh when there is none. */
static struct ur_rx_shard *rx_owner(struct ur_nic *nic,
				    struct ur_rx_shard *sh,
				    const struct ur_rxd *d)
{
	struct ur_qp *qp;
	uint32_t qpn;

	if (nic->n_shard <= 1 || d->len < UR_BTH_BYTES)
		return sh;
	qpn = (uint32_t)d->data[5] << 16 | (uint32_t)d->data[6] << 8 |
	      d->data[7];
	if (qpn == UR_QPN_MCAST)
		return &nic->shard[0];	/* it holds the groups */
	qp = qpn ? ur_qp_lookup(nic->dev, qpn) : NULL;
	return qp && qp->xp ? ur_xp_shard(qp->xp) : sh;
}

/* A forwarded datagram's copy, in its shard's queue. */
struct ur_rx_fwd {
	struct ur_rx_fwd *next;
	uint32_t only_qpn;		/* a multicast copy for this QP */
	struct ur_rxd d;		/* d.data points into buf */
	uint8_t buf[];
};

static void rx_handle(struct ur_nic *nic, struct ur_rx_shard *sh,
		      struct ur_rxd *d, uint32_t only_qpn)
{
	if (only_qpn)
		rx_mcast_fwd(nic, sh, d, only_qpn);
	else
		rx_local(nic, sh, d);
}

/*
 * from->lock held: d to shard to (the file's comment says how). A QP's
 * datagrams keep their order: they all come through one shard (its link
 * queue's, or shard 0's), which forwards them one by one under its lock,
 * and one goes into the queue whenever the queue is not empty, or is
 * handled only after what the queue holds.
 */
static void rx_forward(struct ur_nic *nic, struct ur_rx_shard *from,
		       struct ur_rx_shard *to, const struct ur_rxd *d,
		       uint32_t only_qpn)
{
	struct ur_rx_fwd *f;
	unsigned int before;

	ur_cnt_stat(&nic->cnt, UR_STAT_RX_FORWARDED, 1);
	if (!atomic_load(&to->fwd_n) && !pthread_mutex_trylock(&to->lock)) {
		struct ur_rxd copy = *d;

		ur_rx_fwd_drain(nic, to);
		rx_handle(nic, to, &copy, only_qpn);
		ur_resp_flush(to);
		if (to->rx_one_sided) {	/* progress.c looks at from's */
			to->rx_one_sided = false;
			from->rx_one_sided = true;
		}
		pthread_mutex_unlock(&to->lock);
		return;
	}
	f = malloc(sizeof(*f) + d->len);
	if (!f) {	/* as a full socket buffer: RC sends it again */
		ur_dbg_dp("engine: no memory to forward a datagram");
		return;
	}
	ur_cnt_stat(&nic->cnt, UR_STAT_RX_FWD_QUEUED, 1);
	f->next = NULL;
	f->only_qpn = only_qpn;
	f->d = *d;
	f->d.data = f->buf;
	memcpy(f->buf, d->data, d->len);
	pthread_mutex_lock(&to->fwd_lock);
	*to->fwd_tail = f;
	to->fwd_tail = &f->next;
	before = atomic_fetch_add(&to->fwd_n, 1);
	pthread_mutex_unlock(&to->fwd_lock);
	/* the holder may be leaving without looking again: the progress
	 * thread drains every shard's queue when woken */
	if (!before)
		ur_nic_wake(nic);
}

unsigned int ur_rx_fwd_drain(struct ur_nic *nic, struct ur_rx_shard *sh)
{
	struct ur_rx_fwd *f, *next;
	unsigned int n = 0;

	UR_ASSERT_HELD(&sh->lock);
	if (!atomic_load_explicit(&sh->fwd_n, memory_order_relaxed))
		return 0;
	pthread_mutex_lock(&sh->fwd_lock);
	f = sh->fwd_head;
	sh->fwd_head = NULL;
	sh->fwd_tail = &sh->fwd_head;
	atomic_store(&sh->fwd_n, 0);
	pthread_mutex_unlock(&sh->fwd_lock);
	for (; f; f = next, n++) {
		next = f->next;
		atomic_fetch_add_explicit(&sh->fwd_in, 1,
					  memory_order_relaxed);
		rx_handle(nic, sh, &f->d, f->only_qpn);
		free(f);
	}
	return n;
}

void ur_rx_datagram(struct ur_nic *nic, struct ur_rx_shard *sh,
		    struct ur_rxd *d)
{
	struct ur_rx_shard *own;

	UR_ASSERT_HELD(&sh->lock);
	ur_trace_bth(UR_TR_RX, d->data, d->len);
	if (nic->pcap)
		rx_pcap(nic, d);
	own = rx_owner(nic, sh, d);
	if (own != sh) {
		rx_forward(nic, sh, own, d, 0);
		return;
	}
	rx_local(nic, sh, d);
}

int ur_rx_shards_init(struct ur_nic *nic, unsigned int n)
{
	unsigned int i;

	nic->shard = calloc(n, sizeof(*nic->shard));
	if (!nic->shard)
		return -ENOMEM;
	nic->n_shard = n;
	for (i = 0; i < n; i++) {
		struct ur_rx_shard *sh = &nic->shard[i];

		sh->idx = i;
		pthread_mutex_init(&sh->lock, NULL);
		pthread_mutex_init(&sh->fwd_lock, NULL);
		sh->fwd_tail = &sh->fwd_head;
		ur_txb_init(&sh->txb, nic);
	}
	return 0;
}

void ur_rx_shards_fini(struct ur_nic *nic)
{
	struct ur_rx_fwd *f;
	unsigned int i;

	for (i = 0; i < nic->n_shard; i++) {
		struct ur_rx_shard *sh = &nic->shard[i];

		while ((f = sh->fwd_head)) {
			sh->fwd_head = f->next;
			free(f);
		}
		ur_reorder_spares_free(sh);
		pthread_mutex_destroy(&sh->lock);
		pthread_mutex_destroy(&sh->fwd_lock);
	}
	free(nic->shard);
	nic->shard = NULL;
	nic->n_shard = 0;
}
