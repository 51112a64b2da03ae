/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The schedule: which messages a sender side posts on one QP in one round,
 * their sizes, SGE splits and where they land. A pure function of
 * (seed, side, QP, round), so the receiver knows what to expect.
 */
#include <stdio.h>
#include <string.h>

#include "soak.h"

struct rng {
	uint64_t s;
};

static uint64_t next(struct rng *r)
{
	r->s += 0x9e3779b97f4a7c15ull;
	return soak_mix(r->s);
}

static uint32_t below(struct rng *r, uint32_t n)
{
	return (uint32_t)(next(r) % n);
}

static uint32_t between(struct rng *r, uint32_t lo, uint32_t hi)
{
	return lo + below(r, hi - lo + 1);
}

/* Mostly small messages, a quarter medium, some up to `cap`. */
static uint32_t pick_len(struct rng *r, uint32_t cap)
{
	uint32_t t = below(r, 100), len;

	if (t < 30)
		len = between(r, 1, 64);
	else if (t < 60)
		len = between(r, 65, 4096);
	else if (t < 85)
		len = between(r, 4097, 65536);
	else
		len = between(r, 65537, cap > 65537 ? cap : 65537);
	return len < cap ? len : cap;
}

static void split(struct rng *r, uint32_t len, struct soak_sgl *s)
{
	uint32_t n = 1 + below(r, SOAK_MAX_SGE), left = len;

	if (n > len)
		n = len ? len : 1;
	s->n = n;
	for (uint32_t i = 0; i + 1 < n; i++) {
		/* leave at least one byte for each piece still to come */
		s->len[i] = between(r, 1, left - (n - 1 - i));
		left -= s->len[i];
	}
	s->len[n - 1] = left;
}

static unsigned int pick_rc_op1(struct rng *r)
{
	uint32_t t = below(r, 100);

	if (t < 15)
		return OP_SEND;
	if (t < 30)
		return OP_SEND_IMM;
	if (t < 50)
		return OP_WRITE;
	if (t < 65)
		return OP_WRITE_IMM;
	if (t < 80)
		return OP_READ;
	return t < 90 ? OP_FADD : OP_CAS;
}

/* Draws until the op is one -o allows (the caller checks there is one). */
static unsigned int pick_rc_op(struct rng *r, uint32_t ops)
{
	unsigned int op;

	do
		op = pick_rc_op1(r);
	while (!(ops & (1u << op)));
	return op;
}

static unsigned int pick_uc_op1(struct rng *r, bool ud)
{
	uint32_t t = below(r, 100);

	if (ud)
		return t < 60 ? OP_SEND_IMM : OP_SEND;
	if (t < 40)
		return OP_SEND_IMM;
	if (t < 70)
		return OP_SEND;
	return t < 90 ? OP_WRITE_IMM : OP_WRITE;
}

static unsigned int pick_uc_op(struct rng *r, bool ud, uint32_t ops)
{
	unsigned int op;

	do
		op = pick_uc_op1(r, ud);
	while (!(ops & (1u << op)));
	return op;
}

/* Plans one message; false when it does not fit the round's areas. */
static bool place(struct rng *r, unsigned int qp, uint32_t round,
		  struct soak_round *rd, struct soak_msg *m)
{
	bool rc = qp < SQ_NRC;
	size_t lspan;

	if (m->op == OP_FADD || m->op == OP_CAS) {
		m->len = 8;
		m->lsg.n = 1;
		m->lsg.len[0] = 8;
		m->add = between(r, 1, 1u << 20);
		rd->local_used = (rd->local_used + 7) & ~7ull;
		if (rd->local_used + 8 + SOAK_GAP > SOAK_LOCAL_AREA)
			return false;
		m->loff = rd->local_used;
		rd->local_used += 8 + SOAK_GAP;
		return true;
	}
	split(r, m->len, &m->lsg);
	m->inl = m->op != OP_READ && m->len <= 512 && below(r, 2);
	lspan = soak_sgl_span(&m->lsg);
	if (rd->local_used + lspan > SOAK_LOCAL_AREA)
		return false;
	m->loff = rd->local_used;
	rd->local_used += lspan;

	switch (m->op) {
	case OP_WRITE:
	case OP_WRITE_IMM: {
		uint64_t area = rc ? SOAK_WRITE_AREA : SOAK_UC_AREA;

		if (rd->write_used + m->len + SOAK_GAP > area)
			return false;
		m->roff = rd->write_used;
		if (!rc)
			m->roff += (uint64_t)(round % SOAK_UC_AREAS) * SOAK_UC_AREA;
		rd->write_used += m->len + SOAK_GAP;
		if (rc && m->op == OP_WRITE_IMM) {
			/* consumes a receive: a small buffer that must stay untouched */
			m->rsg.n = 1;
			m->rsg.len[0] = 16;
			m->rxoff = rd->recv_used;
			rd->recv_used += 16 + SOAK_GAP;
		}
		return true;
	}
	case OP_READ:
		m->roff = below(r, SOAK_READ_SRC - m->len + 1);
		return true;
	default:		/* SEND, SEND_IMM */
		if (!rc)
			return true;
		split(r, m->len, &m->rsg);
		if (rd->recv_used + soak_sgl_span(&m->rsg) > SOAK_RECV_AREA)
			return false;
		m->rxoff = rd->recv_used;
		rd->recv_used += soak_sgl_span(&m->rsg);
		return true;
	}
}

void soak_schedule(uint64_t seed, unsigned int side, unsigned int qp,
		   uint32_t round, const struct soak_limits *lim,
		   struct soak_round *out)
{
	struct rng r = { soak_key(seed, side, qp, (1ull << 32) | round) };
	uint32_t want = qp < SQ_NRC ? SOAK_MAX_MSGS : SOAK_MAX_MSGS / 2;

	uint32_t rc_ops = lim->ops & ((1u << OP__N) - 1);
	uint32_t uc_ops = rc_ops & ((1u << OP_SEND) | (1u << OP_SEND_IMM) |
				    (1u << OP_WRITE) | (1u << OP_WRITE_IMM));
	uint32_t ud_ops = rc_ops & ((1u << OP_SEND) | (1u << OP_SEND_IMM));

	*out = (struct soak_round){ 0 };
	if ((qp < SQ_NRC && !rc_ops) ||
	    (qp == SQ_UC && (!(lim->ops & SOAK_OPS_UC) || !uc_ops)) ||
	    (qp == SQ_UD && (!(lim->ops & SOAK_OPS_UD) || !ud_ops)))
		return;
	for (uint32_t k = 0; k < want; k++) {
		struct soak_msg m = { .id = round * SOAK_MAX_MSGS + k };

		if (qp < SQ_NRC) {
			/* every round opens with a READ of 2-4 MiB on each QP:
			 * several request chunks, the case that lost data */
			if (k == 0 && (rc_ops & (1u << OP_READ))) {
				m.op = OP_READ;
				m.len = between(&r, 2u << 20, lim->max_len);
			} else {
				m.op = pick_rc_op(&r, rc_ops);
				m.len = pick_len(&r, 1u << 20);
			}
		} else {
			m.op = pick_uc_op(&r, qp == SQ_UD,
					  qp == SQ_UD ? ud_ops : uc_ops);
			m.len = pick_len(&r, qp == SQ_UD ? lim->ud_max :
					 SOAK_UC_MAX);
			if (m.op == OP_SEND && m.len < 8)
				m.len = 8;	/* room for the id header */
		}
		if (!place(&r, qp, round, out, &m))
			break;
		out->m[out->n++] = m;
		out->bytes += m.len;
	}
}

const char *soak_op_name(unsigned int op)
{
	static const char *const names[OP__N] = {
		"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "FADD", "CAS",
	};

	return op < OP__N ? names[op] : "?";
}

/* "read,cas,uc" -> bits; "all" is everything. */
int soak_parse_ops(const char *list, uint32_t *ops)
{
	static const char *const names[OP__N + 2] = {
		"send", "send_imm", "write", "write_imm", "read", "fadd", "cas",
		"uc", "ud",
	};
	char buf[256], *save = NULL;

	*ops = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		if (!strcmp(w, "all")) {
			*ops = SOAK_OPS_ALL;
			continue;
		}
		for (i = 0; i < OP__N + 2 && strcmp(w, names[i]); i++)
			;
		if (i == OP__N + 2)
			return -1;
		*ops |= 1u << i;
	}
	return *ops ? 0 : -1;
}
