/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Posting: this side's round as one WR list per QP (sources staged with
 * their patterns, READ and atomic destinations with the canary), the
 * receives the peer's round will consume, and the UC/UD receive rings.
 */
#include <arpa/inet.h>
#include <string.h>

#include "soak.h"

static const enum ibv_wr_opcode wr_opcode[OP__N] = {
	[OP_SEND] = IBV_WR_SEND,
	[OP_SEND_IMM] = IBV_WR_SEND_WITH_IMM,
	[OP_WRITE] = IBV_WR_RDMA_WRITE,
	[OP_WRITE_IMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
	[OP_READ] = IBV_WR_RDMA_READ,
	[OP_FADD] = IBV_WR_ATOMIC_FETCH_AND_ADD,
	[OP_CAS] = IBV_WR_ATOMIC_CMP_AND_SWP,
};


/* Fills in one send WR for message k of this side's round on QP q. */
static void build_wr(struct soak *s, unsigned int q, uint32_t k,
		     uint64_t compare, struct ibv_send_wr *wr,
		     struct ibv_sge *sge)
{
	const struct soak_msg *m = &s->mine[q].m[k];
	uint8_t *base = s->local[q].p + m->loff;
	uint32_t seq = s->posted[q]++;
	struct soak_pend *p = &s->pend[q][seq % SOAK_PEND];

	*p = (struct soak_pend){ .msg = k, .round = s->round,
				 .compare = compare, .seq = seq };
	for (uint32_t i = 0; i < m->lsg.n; i++)
		sge[i] = (struct ibv_sge){
			.addr = (uintptr_t)(base + soak_piece_off(&m->lsg, i)),
			.length = m->lsg.len[i],
			.lkey = s->local[q].mr->lkey,
		};
	*wr = (struct ibv_send_wr){
		.wr_id = WRID(q, KIND_SEND, seq),
		.sg_list = sge,
		.num_sge = (int)m->lsg.n,
		.opcode = wr_opcode[m->op],
		.send_flags = IBV_SEND_SIGNALED | (m->inl ? IBV_SEND_INLINE : 0),
		.imm_data = htonl(m->id),
	};
	switch (m->op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr->wr.rdma.remote_addr = s->peer.write_addr[q] + m->roff;
		wr->wr.rdma.rkey = s->peer.write_rkey[q];
		break;
	case OP_READ:
		wr->wr.rdma.remote_addr = s->peer.read_addr + m->roff;
		wr->wr.rdma.rkey = s->peer.read_rkey;
		break;
	case OP_FADD:
	case OP_CAS:
		wr->wr.atomic.remote_addr = s->peer.cnt_addr;
		wr->wr.atomic.rkey = s->peer.cnt_rkey;
		wr->wr.atomic.compare_add = m->op == OP_FADD ? m->add : compare;
		wr->wr.atomic.swap = compare + m->add;
		break;
	default:
		break;
	}
	if (q == SQ_UD) {
		wr->wr.ud.ah = s->ah;
		wr->wr.ud.remote_qpn = s->peer.qpn[SQ_UD];
		wr->wr.ud.remote_qkey = SOAK_QKEY;
	}
}

/* Stages the source (or a canary destination) of every message. */
static void stage(struct soak *s, unsigned int q)
{
	for (uint32_t k = 0; k < s->mine[q].n; k++) {
		const struct soak_msg *m = &s->mine[q].m[k];
		uint8_t *base = s->local[q].p + m->loff;

		switch (m->op) {
		case OP_READ:
		case OP_FADD:
		case OP_CAS:
			memset(base, SOAK_CANARY, soak_sgl_span(&m->lsg));
			break;
		default:
			soak_fill_sgl(base, &m->lsg, soak_msg_key(s, s->side, q, m->id));
			if (q >= SQ_UC && m->op == OP_SEND) {
				uint64_t h = HDR_MAGIC << 32 | m->id;

				soak_put_msg_bytes(base, &m->lsg, 0, (uint8_t *)&h, 8);
			}
		}
	}
}

int soak_post_mine(struct soak *s)
{
	for (unsigned int q = 0; q < SQ__N; q++) {
		static struct ibv_send_wr wrs[SOAK_MAX_MSGS];
		static struct ibv_sge sges[SOAK_MAX_MSGS][SOAK_MAX_SGE];
		struct ibv_send_wr *bad = NULL;
		const struct soak_round *rd = &s->mine[q];
		bool inl = false;
		int rc;

		if (!rd->n)
			continue;
		stage(s, q);
		for (uint32_t k = 0; k < rd->n; k++) {
			build_wr(s, q, k, s->cas_guess, &wrs[k], sges[k]);
			wrs[k].next = k + 1 < rd->n ? &wrs[k + 1] : NULL;
			inl |= rd->m[k].inl;
		}
		/* one WR list per QP: the whole round in one call */
		rc = ibv_post_send(s->qp[q], wrs, &bad);
		if (rc) {
			soak_err(s, "ibv_post_send qp %u: %s", q, strerror(rc));
			s->fatal = true;
			return -1;
		}
		/* inline data was copied at post time: spoil the sources */
		for (uint32_t k = 0; inl && k < rd->n; k++)
			if (rd->m[k].inl)
				memset(s->local[q].p + rd->m[k].loff, 0x5a,
				       soak_sgl_span(&rd->m[k].lsg));
	}
	return 0;
}

void soak_post_cas_retry(struct soak *s, unsigned int q, uint32_t k,
			   uint64_t compare)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[SOAK_MAX_SGE];
	int rc;

	memset(s->local[q].p + s->mine[q].m[k].loff, SOAK_CANARY, 8);
	build_wr(s, q, k, compare, &wr, sge);
	rc = ibv_post_send(s->qp[q], &wr, &bad);
	if (rc) {
		soak_err(s, "CAS retry post: %s", strerror(rc));
		s->fatal = true;
	}
	s->t.cas_retries++;
}

int soak_post_rc_recvs(struct soak *s)
{
	for (unsigned int q = 0; q < SQ_NRC; q++) {
		static struct ibv_recv_wr wrs[SOAK_MAX_MSGS];
		static struct ibv_sge sges[SOAK_MAX_MSGS][SOAK_MAX_SGE];
		const struct soak_round *rd = &s->theirs[q];
		struct ibv_recv_wr *bad = NULL;
		uint32_t n = 0;
		int rc;

		for (uint32_t k = 0; k < rd->n; k++) {
			const struct soak_msg *m = &rd->m[k];
			uint8_t *base = s->rx[q].p + m->rxoff;

			if (!soak_consumes_recv(m->op))
				continue;
			for (uint32_t i = 0; i < m->rsg.n; i++)
				sges[n][i] = (struct ibv_sge){
					.addr = (uintptr_t)(base +
						soak_piece_off(&m->rsg, i)),
					.length = m->rsg.len[i],
					.lkey = s->rx[q].mr->lkey,
				};
			wrs[n] = (struct ibv_recv_wr){
				.wr_id = WRID(q, KIND_RC_RECV,
					      (uint64_t)s->round << 8 | n),
				.sg_list = sges[n],
				.num_sge = (int)m->rsg.n,
				.next = NULL,
			};
			if (n)
				wrs[n - 1].next = &wrs[n];
			s->rc_rx_msg[q][n++] = k;
		}
		s->rc_rx_want[q] = n;
		s->rc_rx_done[q] = 0;
		memset(s->rc_rx_seen[q], 0, sizeof(s->rc_rx_seen[q]));
		if (!n)
			continue;
		rc = ibv_post_recv(s->qp[q], wrs, &bad);
		if (rc) {
			soak_err(s, "ibv_post_recv qp %u: %s", q, strerror(rc));
			s->fatal = true;
			return -1;
		}
	}
	return 0;
}

/* Every free UC/UD slot goes back on its QP with a fresh canary. */
void soak_post_rings(struct soak *s)
{
	for (unsigned int ri = 0; ri < 2; ri++) {
		unsigned int q = SQ_UC + ri;

		while (s->ring_nfree[ri]) {
			uint32_t slot = s->ring_free[ri][--s->ring_nfree[ri]];
			uint8_t *p = s->ring[ri].p + (size_t)slot * s->ring_slot;
			struct ibv_sge sge = {
				.addr = (uintptr_t)p,
				.length = s->ring_slot - SOAK_GAP,
				.lkey = s->ring[ri].mr->lkey,
			};
			struct ibv_recv_wr wr = {
				.wr_id = WRID(q, KIND_RING_RECV, slot),
				.sg_list = &sge,
				.num_sge = 1,
			}, *bad = NULL;
			int rc;

			memset(p, SOAK_CANARY, s->ring_slot);
			rc = ibv_post_recv(s->qp[q], &wr, &bad);
			if (rc) {
				soak_err(s, "ring post_recv: %s", strerror(rc));
				s->fatal = true;
				return;
			}
			s->ring_busy[ri][slot] = true;
		}
	}
}
