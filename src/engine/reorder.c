/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A responder's reorder store: RC requests that arrive past a gap in the
 * PSNs are kept, not dropped, and handled in order once the missing one
 * comes (recv.c drains the store after an in-order request; resp.c NAKs
 * each gap once and ACKs what the drain executed). To the requester this
 * is indistinguishable from packets that were only delayed: nothing is
 * executed out of order, and what it resends is a duplicate. It turns a
 * loss from a window of resent packets into one (docs/design.md, "Keeping
 * what comes past a gap"). Runs with the QP's shard lock held, except
 * ur_reorder_clear() (a QP's reset or destruction; nothing else runs on
 * its store then), which frees rather than keeps spares.
 *
 * A drained request's buffer goes to its shard's spares for the next gap
 * (UR_REORDER_SPARE_BYTES says why). Every buffer holds the largest
 * request the shard has kept yet (a larger one frees the spares), so
 * every spare fits whatever comes.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"
#include "util/lock_assert.h"

static unsigned int slot_of(uint32_t psn)
{
	return psn & (UR_REORDER_PSNS - 1);
}

static uint64_t pkt_bytes(const struct ur_reorder_pkt *p)
{
	return sizeof(*p) + p->cap;
}

void ur_reorder_spares_free(struct ur_rx_shard *sh)
{
	struct ur_reorder_pkt *p;

	while ((p = sh->reorder_spare)) {
		sh->reorder_spare = p->next;
		free(p);
	}
	sh->reorder_spare_bytes = 0;
}

/* What a buffer for a request of len bytes holds: the largest request
 * kept yet, so that every spare fits whatever comes. */
static uint32_t pkt_cap(const struct ur_rx_shard *sh, uint32_t len)
{
	return UR_MAX(len, sh->reorder_cap);
}

/* A buffer for a request of len bytes: a spare, or a new one. */
static struct ur_reorder_pkt *pkt_get(struct ur_rx_shard *sh, uint32_t len)
{
	struct ur_reorder_pkt *p;

	if (len > sh->reorder_cap) {
		sh->reorder_cap = len;
		ur_reorder_spares_free(sh);	/* all too small now */
	}
	p = sh->reorder_spare;
	if (p) {
		sh->reorder_spare = p->next;
		sh->reorder_spare_bytes -= pkt_bytes(p);
		return p;
	}
	p = malloc(sizeof(*p) + sh->reorder_cap);
	if (p)
		p->cap = sh->reorder_cap;
	return p;
}

/* sh->lock held: p (out of its store) to the spares or freed. */
static void pkt_put(struct ur_rx_shard *sh, struct ur_reorder_pkt *p)
{
	if (p->cap < sh->reorder_cap ||
	    sh->reorder_spare_bytes + pkt_bytes(p) > UR_REORDER_SPARE_BYTES) {
		free(p);
		return;
	}
	p->next = sh->reorder_spare;
	sh->reorder_spare = p;
	sh->reorder_spare_bytes += pkt_bytes(p);
}

/* Takes the request with PSN psn out of its slot: the buffer to the
 * spares (the shard's lock held) or freed. */
static void slot_drop(struct ur_qp_xport *xp, uint32_t psn, bool spare)
{
	struct ur_resp_state_qp *r = &xp->resp;
	struct ur_reorder_pkt *p = r->reorder[slot_of(psn)];

	r->reorder[slot_of(psn)] = NULL;
	r->reorder_n--;
	atomic_fetch_sub_explicit(&xp->nic->reorder_bytes, pkt_bytes(p),
				  memory_order_relaxed);
	if (spare)
		pkt_put(ur_xp_shard(xp), p);
	else
		free(p);
}

/*
 * A resent copy carries what the first did: the opcode, the extension
 * headers and the payload. The AckReq bit (in the PSN word) and the ICRC
 * may differ.
 */
static bool same_request(const struct ur_reorder_pkt *p,
			 const struct ur_rxd *d)
{
	return p->d.len == d->len && d->len >= UR_BTH_BYTES + UR_ICRC_BYTES &&
	       p->buf[0] == d->data[0] &&
	       !memcmp(p->buf + UR_BTH_BYTES, d->data + UR_BTH_BYTES,
		       d->len - UR_BTH_BYTES - UR_ICRC_BYTES);
}

bool ur_reorder_keep(struct ur_qp_xport *xp, uint32_t psn,
		     const struct ur_rxd *d)
{
	struct ur_resp_state_qp *r = &xp->resp;
	struct ur_reorder_pkt *p;
	int32_t ahead = ur_psn_diff(psn, r->epsn);
	uint64_t bytes;

	UR_ASSERT_HELD(&ur_xp_shard(xp)->lock);
	if (ahead <= 0 || ahead >= UR_REORDER_PSNS)
		return false;
	if (!r->reorder) {
		r->reorder = calloc(UR_REORDER_PSNS, sizeof(*r->reorder));
		if (!r->reorder)
			return false;
	}
	p = r->reorder[slot_of(psn)];
	if (p && p->psn == psn) {
		if (same_request(p, d))
			return true;	/* a resent copy of a kept one */
		/* two requests for one PSN: one is not the peer's (a forged
		 * packet, UROCE_HARDENED's concern) or was corrupted past
		 * the ICRC; keep neither, the gap's NAK gets it resent */
		slot_drop(xp, psn, true);
		ur_cnt_stat(&xp->nic->cnt, UR_STAT_REORDER_CONFLICTS, 1);
		return false;
	}
	if (p)	/* an earlier lap's, never drained: its PSN was skipped */
		slot_drop(xp, p->psn, true);
	bytes = sizeof(*p) + pkt_cap(ur_xp_shard(xp), d->len);
	if (atomic_load_explicit(&xp->nic->reorder_bytes,
				 memory_order_relaxed) + bytes >
	    UR_REORDER_MAX_BYTES)
		return false;
	p = pkt_get(ur_xp_shard(xp), d->len);
	if (!p)
		return false;
	bytes = pkt_bytes(p);
	p->psn = psn;
	p->d = *d;
	p->d.data = p->buf;
	memcpy(p->buf, d->data, d->len);
	r->reorder[slot_of(psn)] = p;
	if (!r->reorder_n || ur_psn_after(psn, r->reorder_max))
		r->reorder_max = psn;
	r->reorder_n++;
	atomic_fetch_add_explicit(&xp->nic->reorder_bytes, bytes,
				  memory_order_relaxed);
	ur_cnt_stat(&xp->nic->cnt, UR_STAT_REORDER_KEPT, 1);
	return true;
}

struct ur_reorder_pkt *ur_reorder_take(struct ur_qp_xport *xp)
{
	struct ur_resp_state_qp *r = &xp->resp;
	struct ur_reorder_pkt *p;

	if (!r->reorder_n)
		return NULL;
	p = r->reorder[slot_of(r->epsn)];
	if (!p || p->psn != r->epsn)
		return NULL;
	r->reorder[slot_of(r->epsn)] = NULL;
	r->reorder_n--;
	return p;
}

void ur_reorder_free(struct ur_qp_xport *xp, struct ur_reorder_pkt *p)
{
	UR_ASSERT_HELD(&ur_xp_shard(xp)->lock);
	atomic_fetch_sub_explicit(&xp->nic->reorder_bytes, pkt_bytes(p),
				  memory_order_relaxed);
	pkt_put(ur_xp_shard(xp), p);
}

static void reorder_empty(struct ur_qp_xport *xp, bool spare)
{
	struct ur_resp_state_qp *r = &xp->resp;
	unsigned int i;

	for (i = 0; i < UR_REORDER_PSNS && r->reorder_n; i++)
		if (r->reorder[i])
			slot_drop(xp, r->reorder[i]->psn, spare);
}

bool ur_reorder_ahead(struct ur_qp_xport *xp)
{
	struct ur_resp_state_qp *r = &xp->resp;

	UR_ASSERT_HELD(&ur_xp_shard(xp)->lock);
	if (!r->reorder_n)
		return false;
	if (!ur_psn_before(r->reorder_max, r->epsn))
		return true;
	reorder_empty(xp, true);
	return false;
}

void ur_reorder_clear(struct ur_qp_xport *xp)
{
	struct ur_resp_state_qp *r = &xp->resp;

	if (!r->reorder)
		return;
	reorder_empty(xp, false);
	free(r->reorder);
	r->reorder = NULL;
}
