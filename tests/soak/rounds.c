/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One round of the soak: post this side's schedule (post.c), take every
 * completion (each exactly once, in order, with the right status, opcode,
 * length and immediate) and check every byte that arrived, then, after the
 * peer's round is done too, the memory the peer wrote into.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "soak.h"

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void soak_err(struct soak *s, const char *fmt, ...)
{
	va_list ap;

	if (s->errors_shown++ >= 30)
		return;
	fprintf(stderr, "soak[%c] round %u: ", s->side ? 'B' : 'A', s->round);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* -X: true once per chosen kind, at its first chance */
static bool sabotage(struct soak *s, unsigned int kind)
{
	if (!(s->sabotage & (1u << kind)) || (s->sabotaged & (1u << kind)))
		return false;
	s->sabotaged |= 1u << kind;
	return true;
}

static const enum ibv_wc_opcode wc_opcode[OP__N] = {
	[OP_SEND] = IBV_WC_SEND,
	[OP_SEND_IMM] = IBV_WC_SEND,
	[OP_WRITE] = IBV_WC_RDMA_WRITE,
	[OP_WRITE_IMM] = IBV_WC_RDMA_WRITE,
	[OP_READ] = IBV_WC_RDMA_READ,
	[OP_FADD] = IBV_WC_FETCH_ADD,
	[OP_CAS] = IBV_WC_COMP_SWAP,
};

static void on_send_wc(struct soak *s, const struct ibv_wc *wc)
{
	unsigned int q = WRID_Q(wc->wr_id);
	uint64_t seq = WRID_N(wc->wr_id);
	struct soak_pend *p;
	const struct soak_msg *m;

	if (q >= SQ__N || seq >= s->posted[q] ||
	    s->pend[q][seq % SOAK_PEND].seq != seq ||
	    s->pend[q][seq % SOAK_PEND].completed) {
		s->t.cqe_wrong++;
		soak_err(s, "send CQE with unknown or repeated wr_id %#llx",
			 (unsigned long long)wc->wr_id);
		return;
	}
	p = &s->pend[q][seq % SOAK_PEND];
	p->completed = true;
	if (seq != s->done[q]) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u: send CQE %llu before %u (out of order)", q,
			 (unsigned long long)seq, s->done[q]);
	}
	while (s->done[q] < s->posted[q] &&
	       s->pend[q][s->done[q] % SOAK_PEND].completed)
		s->done[q]++;
	m = &s->mine[q].m[p->msg];
	if (p->round != s->round) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u: send CQE of round %u", q, p->round);
		return;
	}
	if (wc->status == IBV_WC_WR_FLUSH_ERR && s->fatal) {
		s->t.flushed++;	/* the QP is in ERR already: that was the error */
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		s->t.cqe_wrong++;
		s->fatal = true;
		soak_err(s, "qp %u %s id %u len %u: status %s", q,
			 soak_op_name(m->op), m->id, m->len,
			 ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->opcode != wc_opcode[m->op] || wc->qp_num != s->qp[q]->qp_num) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u %s id %u: CQE opcode %d qp %#x", q,
			 soak_op_name(m->op), m->id, wc->opcode, wc->qp_num);
	}

	uint8_t *base = s->local[q].p + m->loff;
	uint64_t orig;
	size_t bad;

	switch (m->op) {
	case OP_READ:
		if (sabotage(s, SAB_READ))
			base[soak_piece_off(&m->lsg, m->lsg.n - 1) +
			     m->lsg.len[m->lsg.n - 1] - 1] ^= 1;
		bad = soak_check_sgl(base, &m->lsg,
				soak_key(s->seed, !s->side, SOAK_READ_SRC_QP, 0),
				m->roff);
		s->t.reads++;
		if (m->len >= (2u << 20))
			s->t.big_reads++;
		s->t.bytes_moved += m->len;
		s->t.msgs++;
		if (bad) {
			s->t.bytes_wrong += bad;
			soak_err(s, "qp %u READ id %u of %u B at %llu: %zu bytes wrong",
				 q, m->id, m->len, (unsigned long long)m->roff,
				 bad);
		}
		break;
	case OP_FADD:
	case OP_CAS:
		memcpy(&orig, base, 8);
		bad = soak_check_canary(base + 8, SOAK_GAP);
		if (bad) {
			s->t.bytes_wrong += bad;
			soak_err(s, "atomic result overran its 8 bytes");
		}
		if (orig + (m->op == OP_CAS ? 0 : m->add) > s->cas_guess)
			s->cas_guess = orig + (m->op == OP_CAS ? 0 : m->add);
		if (m->op == OP_CAS && orig != p->compare) {
			soak_post_cas_retry(s, q, p->msg, orig);
			break;
		}
		if (s->nchain == s->cap_chain) {
			s->cap_chain = s->cap_chain ? 2 * s->cap_chain : 1024;
			s->chain = realloc(s->chain,
					   s->cap_chain * sizeof(*s->chain));
			if (!s->chain)
				abort();
		}
		s->chain[s->nchain][0] = orig;
		s->chain[s->nchain++][1] = m->add;
		if (orig + m->add > s->cas_guess)
			s->cas_guess = orig + m->add;
		s->t.atomics++;
		s->t.msgs++;
		break;
	default:
		break;	/* the receiver checks what arrived */
	}
}

static bool imm_ok(const struct ibv_wc *wc, unsigned int op, uint32_t id)
{
	bool want_imm = op == OP_SEND_IMM || op == OP_WRITE_IMM;
	bool has_imm = wc->wc_flags & IBV_WC_WITH_IMM;
	enum ibv_wc_opcode opc = op == OP_WRITE_IMM ?
		IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;

	if (wc->opcode != opc || want_imm != has_imm)
		return false;
	return !want_imm || ntohl(wc->imm_data) == id;
}

static void on_rc_recv(struct soak *s, const struct ibv_wc *wc)
{
	unsigned int q = WRID_Q(wc->wr_id);
	uint64_t n = WRID_N(wc->wr_id);
	uint32_t k = n & 0xff;
	const struct soak_msg *m;
	size_t bad;

	if (q >= SQ_NRC || n >> 8 != s->round || k >= s->rc_rx_want[q] ||
	    s->rc_rx_seen[q][k]) {
		s->t.cqe_wrong++;
		soak_err(s, "recv CQE with unknown or repeated wr_id %#llx",
			 (unsigned long long)wc->wr_id);
		return;
	}
	s->rc_rx_seen[q][k] = true;
	if (k != s->rc_rx_done[q]) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u: recv CQE %u before %u (out of order)", q, k,
			 s->rc_rx_done[q]);
	}
	while (s->rc_rx_done[q] < s->rc_rx_want[q] &&
	       s->rc_rx_seen[q][s->rc_rx_done[q]])
		s->rc_rx_done[q]++;
	m = &s->theirs[q].m[s->rc_rx_msg[q][k]];
	if (wc->status == IBV_WC_WR_FLUSH_ERR && s->fatal) {
		s->t.flushed++;
		return;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		s->t.cqe_wrong++;
		s->fatal = true;
		soak_err(s, "qp %u recv of %s id %u len %u: status %s", q,
			 soak_op_name(m->op), m->id, m->len,
			 ibv_wc_status_str(wc->status));
		return;
	}
	if (!imm_ok(wc, m->op, m->id) || wc->byte_len != m->len ||
	    wc->qp_num != s->qp[q]->qp_num) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u recv of %s id %u len %u: CQE opcode %d flags %#x imm %u byte_len %u",
			 q, soak_op_name(m->op), m->id, m->len, wc->opcode,
			 wc->wc_flags, ntohl(wc->imm_data), wc->byte_len);
	}
	s->t.msgs++;
	if (m->op == OP_WRITE_IMM) {
		/* the data is in place once the immediate is delivered */
		bad = soak_check_canary(s->rx[q].p + m->rxoff, 16 + SOAK_GAP);
		bad += soak_check(s->wr[q].p + m->roff, m->len,
				  soak_msg_key(s, !s->side, q, m->id), 0);
	} else {
		if (sabotage(s, SAB_SEND))
			s->rx[q].p[m->rxoff] ^= 1;
		if (sabotage(s, SAB_EXTRA))	/* one byte past the message */
			s->rx[q].p[m->rxoff + soak_piece_off(&m->rsg, m->rsg.n - 1) +
				   m->rsg.len[m->rsg.n - 1]] ^= 1;
		bad = soak_check_sgl(s->rx[q].p + m->rxoff, &m->rsg,
				soak_msg_key(s, !s->side, q, m->id), 0);
		s->t.bytes_moved += m->len;
	}
	if (bad) {
		char why[160] = "";

		if (m->op != OP_WRITE_IMM)
			soak_explain_sgl(why, sizeof(why),
					 s->rx[q].p + m->rxoff, &m->rsg,
					 soak_msg_key(s, !s->side, q, m->id));
		s->t.bytes_wrong += bad;
		soak_err(s, "qp %u %s id %u len %u: %zu bytes wrong%s%s", q,
			 soak_op_name(m->op), m->id, m->len, bad,
			 *why ? "; " : "", why);
	}
}

/* The peer's schedule of an earlier round, for a UC/UD message that came
 * late. */
static const struct soak_msg *their_msg(struct soak *s, unsigned int q,
					uint32_t id, struct soak_round *tmp)
{
	uint32_t round = id / SOAK_MAX_MSGS, k = id % SOAK_MAX_MSGS;
	const struct soak_round *rd = &s->theirs[q];

	if (round > s->round)
		return NULL;
	if (round != s->round) {
		soak_schedule(s->seed, !s->side, q, round, &s->lim, tmp);
		rd = tmp;
	}
	return k < rd->n ? &rd->m[k] : NULL;
}

static void on_ring_recv(struct soak *s, const struct ibv_wc *wc)
{
	static struct soak_round tmp;
	unsigned int q = WRID_Q(wc->wr_id), ri = q - SQ_UC;
	uint64_t slot = WRID_N(wc->wr_id);
	uint32_t hdr = q == SQ_UD ? UD_GRH : 0, id;
	const struct soak_msg *m;
	const uint8_t *buf;
	size_t bad;

	if (q < SQ_UC || q >= SQ__N || slot >= SOAK_URING ||
	    !s->ring_busy[ri][slot]) {
		s->t.cqe_wrong++;
		soak_err(s, "ring CQE with unknown or repeated wr_id %#llx",
			 (unsigned long long)wc->wr_id);
		return;
	}
	s->ring_busy[ri][slot] = false;
	s->ring_free[ri][s->ring_nfree[ri]++] = (uint32_t)slot;
	buf = s->ring[ri].p + slot * s->ring_slot;
	if (wc->status != IBV_WC_SUCCESS) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u recv: status %s", q,
			 ibv_wc_status_str(wc->status));
		return;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM) {
		id = ntohl(wc->imm_data);
	} else {
		uint64_t h;

		memcpy(&h, buf + hdr, 8);
		if (wc->byte_len < hdr + 8 || h >> 32 != HDR_MAGIC) {
			s->t.cqe_wrong++;
			soak_err(s, "qp %u: SEND without our header (len %u)",
				 q, wc->byte_len);
			return;
		}
		id = (uint32_t)h;
	}
	m = id < s->max_ids ? their_msg(s, q, id, &tmp) : NULL;
	if (!m || !imm_ok(wc, m->op, id) || wc->qp_num != s->qp[q]->qp_num ||
	    (q == SQ_UD && wc->src_qp != s->peer.qpn[SQ_UD])) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u: CQE for no message we expect (id %u opcode %d flags %#x)",
			 q, id, wc->opcode, wc->wc_flags);
		return;
	}
	if (s->seen[ri][id] && !s->dups_on_path) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u: %s id %u delivered twice", q,
			 soak_op_name(m->op), id);
		return;
	}
	/* UD has no PSN check and UC none across messages: a datagram the
	 * path duplicates may be delivered twice (counted, still checked) */
	if (s->seen[ri][id])
		s->t.twice[ri]++;
	else
		s->t.got[ri]++;
	s->seen[ri][id] = 1;
	s->t.msgs++;
	if (wc->byte_len != m->len + hdr) {
		s->t.cqe_wrong++;
		soak_err(s, "qp %u %s id %u: byte_len %u, sent %u (in part)", q,
			 soak_op_name(m->op), id, wc->byte_len, m->len);
		return;
	}
	if (m->op == OP_WRITE_IMM) {
		bad = soak_check(s->wr[SQ_UC].p + m->roff, m->len,
				 soak_msg_key(s, !s->side, q, id), 0);
	} else {
		uint32_t skip = m->op == OP_SEND ? 8 : 0;

		if (q == SQ_UD && m->len > skip && sabotage(s, SAB_UD))
			((uint8_t *)buf)[hdr + m->len - 1] ^= 1;

		bad = soak_check(buf + hdr + skip, m->len - skip,
				 soak_msg_key(s, !s->side, q, id), skip);
		/* a UD message is one packet: nothing may land past it */
		if (q == SQ_UD)
			bad += soak_check_canary(buf + hdr + m->len, SOAK_GAP);
	}
	s->t.bytes_moved += m->len;
	if (bad) {
		s->t.bytes_wrong += bad;
		soak_err(s, "qp %u %s id %u len %u: %zu bytes wrong", q,
			 soak_op_name(m->op), id, m->len, bad);
	}
}

/* Takes what the CQs hold; returns how many completions. */
static int drain(struct soak *s)
{
	struct ibv_wc wc[32];
	int total = 0, n;

	while ((n = ibv_poll_cq(s->scq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			on_send_wc(s, &wc[i]);
			if (sabotage(s, SAB_CQE))
				on_send_wc(s, &wc[i]);	/* as if seen twice */
		}
		total += n;
	}
	while ((n = ibv_poll_cq(s->rcq, 32, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			if (WRID_KIND(wc[i].wr_id) == KIND_RING_RECV)
				on_ring_recv(s, &wc[i]);
			else
				on_rc_recv(s, &wc[i]);
		}
		total += n;
	}
	if (n < 0) {
		soak_err(s, "ibv_poll_cq failed");
		s->fatal = true;
	}
	return total;
}

/* Sleeps on the completion channel until something may have completed. */
static void wait_cq(struct soak *s, int ms)
{
	struct pollfd p = { .fd = s->ch->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;

	ibv_req_notify_cq(s->scq, 0);
	ibv_req_notify_cq(s->rcq, 0);
	if (drain(s))
		return;
	if (poll(&p, 1, ms) == 1 && !ibv_get_cq_event(s->ch, &cq, &ctx))
		ibv_ack_cq_events(cq, 1);
}

static bool round_done(const struct soak *s)
{
	for (unsigned int q = 0; q < SQ__N; q++)
		if (s->done[q] != s->posted[q])
			return false;
	for (unsigned int q = 0; q < SQ_NRC; q++)
		if (s->rc_rx_done[q] != s->rc_rx_want[q])
			return false;
	return true;
}

void soak_drain_unreliable(struct soak *s, int ms)
{
	double end = now_s() + ms / 1000.0;

	while (now_s() < end) {
		if (!drain(s))
			wait_cq(s, 10);
	}
}

int soak_round_run(struct soak *s)
{
	double last = now_s();

	for (unsigned int q = 0; q < SQ__N; q++) {
		soak_schedule(s->seed, s->side, q, s->round, &s->lim,
			      &s->mine[q]);
		soak_schedule(s->seed, !s->side, q, s->round, &s->lim,
			      &s->theirs[q]);
	}
	for (unsigned int q = 0; q < SQ_NRC; q++)
		for (uint32_t k = 0; k < s->theirs[q].n; k++)
			if (s->theirs[q].m[k].op == OP_FADD ||
			    s->theirs[q].m[k].op == OP_CAS)
				s->expect_counter += s->theirs[q].m[k].add;
	/* the UC area the peer writes this round starts clean */
	memset(s->wr[SQ_UC].p + (size_t)(s->round % SOAK_UC_AREAS) * SOAK_UC_AREA,
	       SOAK_CANARY, SOAK_UC_AREA);
	if (soak_post_rc_recvs(s))
		return -1;
	soak_post_rings(s);
	if (s->fatal)
		return -1;
	if (soak_barrier(s, 1, true) <= 0 || soak_post_mine(s))
		return -1;
	while (!round_done(s) && !s->fatal) {
		if (drain(s)) {
			last = now_s();
			continue;
		}
		wait_cq(s, 100);
		if (now_s() - last > s->stuck_seconds) {
			for (unsigned int q = 0; q < SQ__N; q++)
				soak_err(s, "stuck: qp %u %u of %u send CQEs",
					 q, s->done[q], s->posted[q]);
			for (unsigned int q = 0; q < SQ_NRC; q++)
				soak_err(s, "stuck: qp %u %u of %u recv CQEs",
					 q, s->rc_rx_done[q], s->rc_rx_want[q]);
			s->t.cqe_wrong++;
			s->fatal = true;
		}
	}
	return s->fatal ? -1 : 0;
}

/* After both sides finished the round: what the peer wrote into us. */
void soak_round_verify(struct soak *s)
{
	for (unsigned int q = 0; q <= SQ_UC; q++) {
		const struct soak_round *rd = &s->theirs[q];
		uint8_t *area = s->wr[q].p;
		size_t used = q == SQ_UC ? 0 : rd->write_used, bad;

		for (uint32_t k = 0; k < rd->n; k++) {
			const struct soak_msg *m = &rd->m[k];
			uint64_t key = soak_msg_key(s, !s->side, q, m->id);

			if (m->op != OP_WRITE && m->op != OP_WRITE_IMM)
				continue;
			bad = soak_check_canary(area + m->roff + m->len,
						SOAK_GAP);
			if (q < SQ_UC) {
				if (sabotage(s, SAB_WRITE))
					area[m->roff + m->len / 2] ^= 1;
				bad += soak_check(area + m->roff, m->len, key, 0);
				if (m->op == OP_WRITE) {
					s->t.bytes_moved += m->len;
					s->t.msgs++;
				} else {
					s->t.bytes_moved += m->len;
				}
			} else if (m->op == OP_WRITE) {
				/* UC: a WRITE may be lost or cut short, but
				 * every byte is either ours or untouched */
				if (soak_check(area + m->roff, m->len, key, 0)) {
					s->t.uc_write_lost++;
					bad += soak_check_or_canary(area + m->roff,
						m->len, key, 0);
				} else {
					s->t.bytes_moved += m->len;
				}
			}
			if (bad) {
				s->t.bytes_wrong += bad;
				soak_err(s, "qp %u %s id %u len %u into our memory: %zu bytes wrong",
					 q, soak_op_name(m->op), m->id, m->len,
					 bad);
			}
		}
		if (q == SQ_UC)
			continue;
		/* nothing past the last message either */
		bad = soak_check_canary(area + used, 4096);
		if (bad) {
			s->t.bytes_wrong += bad;
			soak_err(s, "qp %u: %zu bytes written past the round's WRITEs",
				 q, bad);
		}
		memset(area, SOAK_CANARY, used);
		memset(s->rx[q].p, SOAK_CANARY, rd->recv_used);
	}
}

static int cmp_chain(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

void soak_finish(struct soak *s, uint64_t peer_counter)
{
	uint64_t mine, at = 0;

	/* the peer's two QPs added exactly what its schedule says */
	memcpy(&mine, s->cnt.p, 8);
	if (sabotage(s, SAB_COUNTER))
		mine++;
	if (mine != s->expect_counter) {
		s->t.counter_wrong++;
		soak_err(s, "our counter is %llu, the peer's adds sum to %llu",
			 (unsigned long long)mine,
			 (unsigned long long)s->expect_counter);
	}
	/* our atomics: each saw the value the one before left, once */
	qsort(s->chain, s->nchain, sizeof(*s->chain), cmp_chain);
	for (size_t i = 0; i < s->nchain; i++) {
		if (s->chain[i][0] != at) {
			s->t.counter_wrong++;
			soak_err(s, "atomic %zu of %zu saw %llu where the chain is at %llu",
				 i, s->nchain,
				 (unsigned long long)s->chain[i][0],
				 (unsigned long long)at);
			break;
		}
		at += s->chain[i][1];
	}
	if (at != peer_counter) {
		s->t.counter_wrong++;
		soak_err(s, "our atomics sum to %llu, the peer's counter is %llu",
			 (unsigned long long)at,
			 (unsigned long long)peer_counter);
	}
	/* UC/UD: count what never arrived */
	for (uint32_t r = 0; r < s->round; r++) {
		for (unsigned int ri = 0; ri < 2; ri++) {
			static struct soak_round rd;

			soak_schedule(s->seed, !s->side, SQ_UC + ri, r, &s->lim,
				      &rd);
			uint64_t before = s->t.lost[ri];

			for (uint32_t k = 0; k < rd.n; k++)
				if (soak_consumes_recv(rd.m[k].op) &&
				    !s->seen[ri][rd.m[k].id])
					s->t.lost[ri]++;
			if (s->verbose && s->t.lost[ri] != before)
				fprintf(stderr, "soak[%c]: qp %u round %u: %llu of %u lost\n",
					s->side ? 'B' : 'A', SQ_UC + ri, r,
					(unsigned long long)(s->t.lost[ri] - before),
					rd.n);
		}
	}
}
