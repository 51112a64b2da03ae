/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The completer's READ responses (the UR_COMP_READ state of comp.c's
 * state machine): in order, and past a lost one, where the response is
 * placed at once and the lost ones are asked for again alone.
 */
#include <string.h>

#include "engine/comp_priv.h"
#include "util/lock_assert.h"

/* The response with PSN psn of READ WQE w is placed; the cursor is at
 * it. */
static void read_resp_done(struct ur_comp_ctx *c, struct ur_send_wqe *w,
			   uint32_t psn)
{
	/* the last response of one of the WQE's READ requests, if the
	 * requester counted that request since its last rewind (the cursor
	 * may pass placed responses of requests it has not reached yet) */
	if (((((psn - w->first_psn) & UR_PSN_MASK) + 1) % UR_READ_CHUNK_PKTS ==
		     0 ||
	     psn == w->last_psn) &&
	    ur_psn_before(psn, c->xp->req.psn))
		ur_comp_rd_request_done(c->xp);
	if (psn == w->last_psn)
		ur_comp_wqe_acked(c, w);
	else
		c->xp->comp.psn = ur_psn_inc(psn);
}

/* ------------------------------------------------------------------ */
/* READ responses past a lost one                                      */
/* ------------------------------------------------------------------ */

/*
 * A READ response past a missing one is placed at once and marked
 * (rd_seen), and the missing run is asked for again alone (rd_ask(); the
 * requester sends it, req.c): a READ request for just those PSNs, a
 * duplicate that any IBA responder answers from what it saved of the
 * original request (uroce's resp.c and rxe check that it lies inside it).
 * The cursor still moves in PSN order only, through the marks, so WQEs
 * complete in order and rd_outstanding counts requests as before; what a
 * go-back-N would resend (the rest of the window) goes on as it was.
 * Not while the answers to an earlier go-back-N may still be coming
 * (their gaps say nothing new, comp_retry()), and across READ WQEs only:
 * a SEND or WRITE between them is acknowledged by a PSN the cursor must
 * not pass. A lost ask or answer is found by the recovery probe; its
 * go-back-N asks again for what is not placed only (req.c).
 */
static bool rd_seen(const struct ur_qp_xport *xp, uint32_t psn)
{
	uint32_t i = psn % UR_RD_SEEN_PSNS;

	return (xp->comp.rd_seen[i / 64] >> (i % 64)) & 1;
}

static void rd_seen_flip(struct ur_qp_xport *xp, uint32_t psn)
{
	uint32_t i = psn % UR_RD_SEEN_PSNS;

	xp->comp.rd_seen[i / 64] ^= 1ull << (i % 64);
}

bool ur_comp_rd_placed(const struct ur_qp_xport *xp, uint32_t psn)
{
	return xp->comp.rd_seen_n && !ur_psn_before(psn, xp->comp.psn) &&
	       ur_psn_before(psn, xp->comp.rd_high) && rd_seen(xp, psn);
}

void ur_comp_forget_ahead(struct ur_qp_xport *xp)
{
	memset(xp->comp.rd_seen, 0, sizeof(xp->comp.rd_seen));
	xp->comp.rd_seen_n = 0;
	xp->resend.rd_ask_n = 0;
}

/* The READ WQE in flight whose responses include psn, from SQ index *idx
 * on; NULL if another kind of WQE comes first. */
static struct ur_send_wqe *read_wqe_at(struct ur_qp *qp, uint32_t *idx,
				       uint32_t psn)
{
	for (; *idx != qp->sq.producer && ur_comp_in_flight(qp, *idx);
	     (*idx)++) {
		struct ur_send_wqe *w = ur_wq_slot(&qp->sq, *idx);

		if (w->state == UR_WQE_DONE)
			continue;	/* a local operation, or done */
		if (w->state != UR_WQE_PENDING ||
		    w->opcode != IBV_WR_RDMA_READ)
			return NULL;
		if (ur_psn_in_range(psn, w->first_psn, w->last_psn))
			return w;
	}
	return NULL;
}

/*
 * Queues the asks for the lost responses [from, to), one per READ request
 * (chunk) they belong to. Each starts at the oldest response of its chunk
 * still missing, so it may ask again for an earlier loss of that chunk
 * whose answer is on its way: rxe lets a retried READ start no earlier
 * than the last retry of it did (it keeps that address as the request's
 * start), and the cursor's go-back-N starts at the oldest missing too.
 * false: too many runs at once (the caller goes back N).
 */
static bool rd_ask(struct ur_comp_ctx *c, uint32_t from, uint32_t to)
{
	struct ur_qp_xport *xp = c->xp;
	uint32_t idx = c->qp->sq.consumer;

	while (ur_psn_before(from, to)) {
		struct ur_send_wqe *w = read_wqe_at(c->qp, &idx, from);
		uint32_t k, chunk, start, last;

		if (!w || xp->resend.rd_ask_n == UR_RD_ASKS)
			return false;
		k = (from - w->first_psn) & UR_PSN_MASK;
		chunk = ur_psn_add(w->first_psn,
				   (int32_t)(k - k % UR_READ_CHUNK_PKTS));
		start = ur_psn_before(chunk, xp->comp.psn) ? xp->comp.psn :
							     chunk;
		while (start != from && rd_seen(xp, start))
			start = ur_psn_inc(start);
		last = ur_psn_add(chunk, UR_READ_CHUNK_PKTS - 1);
		if (ur_psn_after(last, w->last_psn))
			last = w->last_psn;
		if (!ur_psn_before(last, to))
			last = ur_psn_add(to, -1);
		xp->resend.rd_ask[xp->resend.rd_ask_n].psn = start;
		xp->resend.rd_ask[xp->resend.rd_ask_n].end = last;
		xp->resend.rd_ask[xp->resend.rd_ask_n].idx = idx;
		xp->resend.rd_ask_n++;
		from = ur_psn_inc(last);
	}
	return true;
}

/* The response's payload into the READ's local memory at off; false: it
 * faulted (c->status says so). */
static bool read_resp_place(struct ur_comp_ctx *c, uint32_t off)
{
	if (!ur_sgl_copy_in(c->qp, c->wqe->sge, c->wqe->num_sge, off,
			    c->pkt->payload, c->pkt->paylen))
		return true;
	c->status = IBV_WC_LOC_PROT_ERR;
	return false;
}

/* A READ response past the cursor, its payload for off: placed and
 * marked, and if it is past the furthest placed, what lies between is
 * asked for again. */
static enum ur_comp_state comp_read_ahead(struct ur_comp_ctx *c,
					  uint32_t off)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_qp_xport *xp = c->xp;
	uint32_t high = xp->comp.rd_seen_n ? xp->comp.rd_high : xp->comp.psn;
	bool new_gap = ur_psn_after(pkt->psn, high);

	/* beyond the ring a mark would name another PSN */
	if (ur_psn_diff(pkt->psn, xp->comp.psn) >= UR_RD_SEEN_PSNS) {
		c->gap = true;
		return UR_COMP_RETRY;
	}
	if (rd_seen(xp, pkt->psn))
		return UR_COMP_DONE;	/* placed already */
	if (new_gap && !rd_ask(c, high, pkt->psn)) {
		c->gap = true;
		return UR_COMP_RETRY;
	}
	/* one lost response among those that came is random loss more
	 * likely than a queue, whose losses come in runs (cc.c) */
	if (new_gap)
		ur_cc_loss(xp, ur_psn_diff(pkt->psn, high) > 1 ? UR_CC_NAK :
								 UR_CC_RESEND);
	if (!read_resp_place(c, off))
		return UR_COMP_ERROR;
	rd_seen_flip(xp, pkt->psn);
	xp->comp.rd_seen_n++;
	if (!ur_psn_before(pkt->psn, high))
		xp->comp.rd_high = ur_psn_inc(pkt->psn);
	ur_cnt_stat(&xp->nic->cnt, UR_STAT_READ_AHEAD, 1);
	return UR_COMP_DONE;
}

/* The cursor reached responses placed ahead: it moves on through them. */
static void rd_seen_advance(struct ur_comp_ctx *c)
{
	struct ur_qp_xport *xp = c->xp;
	uint32_t idx = c->idx;

	while (xp->comp.rd_seen_n && rd_seen(xp, xp->comp.psn)) {
		uint32_t psn = xp->comp.psn;
		struct ur_send_wqe *w = read_wqe_at(c->qp, &idx, psn);

		if (!w) {
			/* a READ not sent again yet since a go-back-N: the
			 * send step comes back once it is
			 * (ur_comp_catch_up()); only READs lie between marks
			 * (comp_check_psn()) */
			if (ur_comp_in_flight(c->qp, idx))
				ur_comp_forget_ahead(xp);
			return;
		}
		rd_seen_flip(xp, psn);
		xp->comp.rd_seen_n--;
		read_resp_done(c, w, psn);
	}
}

/* A READ response for the WQE the walk found (comp.c, comp_check_psn()). */
enum ur_comp_state ur_comp_read(struct ur_comp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_send_wqe *w = c->wqe;
	struct ur_qp_xport *xp = c->xp;
	uint32_t off, expect;

	if (pkt->psn != xp->comp.psn) {
		if (!ur_psn_after(pkt->psn, xp->comp.psn))
			return UR_COMP_DONE;
		if (!ur_comp_rd_ahead_ok(c)) {
			c->gap = true;
			return UR_COMP_RETRY;
		}
	}
	off = ((pkt->psn - w->first_psn) & UR_PSN_MASK) * xp->mtu;
	expect = w->length > off ? UR_MIN(xp->mtu, w->length - off) : 0;
	if (pkt->paylen != expect)
		return UR_COMP_DONE;
	if (pkt->psn != xp->comp.psn)
		return comp_read_ahead(c, off);
	/*
	 * A FIRST or ONLY response where one was expected starts the answer
	 * to a (re)sent request: whatever the responder sends now answers the
	 * retransmission, so a gap from here on is a new loss.
	 */
	if ((pkt->opcode == UR_OPC_RC_READ_RESP_FIRST ||
	     pkt->opcode == UR_OPC_RC_READ_RESP_ONLY) &&
	    ur_psn_before(xp->comp.psn, xp->comp.recover_psn))
		xp->comp.recover_psn = xp->comp.psn;
	if (!read_resp_place(c, off))
		return UR_COMP_ERROR;
	read_resp_done(c, w, pkt->psn);
	if (xp->comp.rd_seen_n)
		rd_seen_advance(c);
	return UR_COMP_PROGRESS;
}

/*
 * After the requester ran: a go-back-N may have sent a READ again whose
 * responses at the cursor were placed before it (the request asks for
 * the rest only, or is only counted, req.c); the cursor moves through
 * them now. true: it moved.
 */
bool ur_comp_catch_up(struct ur_qp *qp)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_comp_ctx c = { .qp = qp, .xp = xp };

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!xp->comp.rd_seen_n || !rd_seen(xp, xp->comp.psn) ||
	    (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD))
		return false;
	c.comp_psn0 = xp->comp.psn;
	c.idx = qp->sq.consumer;
	rd_seen_advance(&c);
	ur_comp_advanced(&c);
	return xp->comp.psn != c.comp_psn0;
}
