/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The data-integrity soak: two processes, each the requester of its own
 * seeded schedule and the responder/receiver of its peer's, moving patterns
 * that the receiving side can check without the sender's help.
 */
#ifndef UR_SOAK_H
#define UR_SOAK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* QPs of one process: two RC (two requesters on one counter), UC, UD. */
enum { SQ_RC0, SQ_RC1, SQ_UC, SQ_UD, SQ__N };
#define SQ_NRC 2

enum soak_op {
	OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_FADD, OP_CAS,
	OP__N
};

#define SOAK_MAX_SGE 4
#define SOAK_GAP 64		/* canary bytes between and after SGE pieces */
#define SOAK_MAX_MSGS 32	/* per QP per round */
#define SOAK_CANARY 0xa5
/* Per RC QP and round: what the requester may stage locally, write into
 * the peer, and make the peer receive. */
#define SOAK_LOCAL_AREA (12u << 20)
#define SOAK_WRITE_AREA (8u << 20)
#define SOAK_RECV_AREA (8u << 20)
#define SOAK_READ_SRC (8u << 20)
/* UC writes rotate over this many areas so that a message that arrives a
 * round late lands where nothing else is being checked. */
#define SOAK_UC_AREAS 4
#define SOAK_UC_AREA (512u << 10)
#define SOAK_UC_MAX (64u << 10)	/* UC message size limit (multi-packet) */
#define SOAK_URING 256		/* UC/UD receive slots */
#define SOAK_QKEY 0x50ac

/* A buffer split into SGE pieces with SOAK_GAP canary bytes between them. */
struct soak_sgl {
	uint32_t n;
	uint32_t len[SOAK_MAX_SGE];
};

struct soak_msg {
	uint8_t op;
	bool inl;
	uint32_t id;		/* unique per (sender side, QP); the immediate */
	uint32_t len;
	struct soak_sgl lsg;	/* requester side pieces */
	struct soak_sgl rsg;	/* receiver's recv pieces (SENDs) */
	uint64_t loff;		/* requester local area offset */
	uint64_t roff;		/* peer: write area / read source offset */
	uint64_t rxoff;		/* peer: recv area offset (RC SEND*) */
	uint64_t add;		/* atomics: amount added */
};

struct soak_round {
	uint32_t n;
	struct soak_msg m[SOAK_MAX_MSGS];
	uint64_t bytes;		/* payload bytes of the round */
	uint64_t write_used, recv_used, local_used;
};

/* wr_id: QP, kind, and a sequence number (sends) or a slot (receives) */
#define WRID(q, kind, n) \
	(((uint64_t)(q) << 56) | ((uint64_t)(kind) << 48) | (uint64_t)(n))
#define WRID_Q(id) ((unsigned int)((id) >> 56))
#define WRID_KIND(id) ((unsigned int)((id) >> 48) & 0xff)
#define WRID_N(id) ((id) & 0xffffffffffffull)
enum { KIND_SEND, KIND_RC_RECV, KIND_RING_RECV };

#define UD_GRH 40		/* a UD receive starts with the GRH */
#define HDR_MAGIC 0x50ac50acull	/* UC/UD SEND without immediate: id header */
#define SOAK_READ_SRC_QP 0xff	/* key of the READ source stream */

/* pattern.c: byte i of stream `key` is addressable, so any piece of any
 * message or of the READ source can be produced or checked alone. */
uint64_t soak_key(uint64_t seed, unsigned int side, unsigned int qp,
		  uint64_t id);
void soak_fill(void *buf, size_t len, uint64_t key, uint64_t pos);
size_t soak_check(const void *buf, size_t len, uint64_t key, uint64_t pos);
size_t soak_check_canary(const void *buf, size_t len);
/* bytes that are neither the pattern nor the canary */
size_t soak_check_or_canary(const void *buf, size_t len, uint64_t key,
			    uint64_t pos);
uint64_t soak_mix(uint64_t x);
size_t soak_sgl_span(const struct soak_sgl *s);
size_t soak_piece_off(const struct soak_sgl *g, uint32_t i);
void soak_fill_sgl(uint8_t *base, const struct soak_sgl *g, uint64_t key);
/* pattern bytes wrong in the pieces plus canary bytes wrong in the gaps */
size_t soak_check_sgl(const uint8_t *base, const struct soak_sgl *g,
		      uint64_t key, uint64_t pos);
void soak_put_msg_bytes(uint8_t *base, const struct soak_sgl *g,
			uint64_t pos, const uint8_t *src, size_t n);
/* For a message whose bytes are wrong: where the first wrong one is, and
 * which of the message's own bytes (if any) lie there, as text in buf: a
 * shift tells a skipped or repeated packet from foreign or stale bytes. */
void soak_explain_sgl(char *buf, size_t n, const uint8_t *base,
		      const struct soak_sgl *g, uint64_t key);

/* Operations that take a receive WQE at the peer. */
static inline bool soak_consumes_recv(unsigned int op)
{
	return op == OP_SEND || op == OP_SEND_IMM || op == OP_WRITE_IMM;
}

/* sched.c: the schedule of one sender side, QP and round; both processes
 * compute the same one. */
/* -o: which operations run (bits 1 << OP_*, and these two for UC, UD) */
#define SOAK_OPS_UC (1u << OP__N)
#define SOAK_OPS_UD (1u << (OP__N + 1))
#define SOAK_OPS_ALL ((1u << (OP__N + 2)) - 1)

struct soak_limits {
	uint32_t ops;
	uint32_t ud_max;	/* UD payload limit (path MTU) */
	uint32_t max_len;	/* largest READ (the opening one of a round) */
};
void soak_schedule(uint64_t seed, unsigned int side, unsigned int qp,
		   uint32_t round, const struct soak_limits *lim,
		   struct soak_round *out);
const char *soak_op_name(unsigned int op);
int soak_parse_ops(const char *list, uint32_t *ops);

/* oob.c: the out-of-band TCP channel (setup exchange and round barriers) */
int soak_oob_listen(const char *addr, int port);
int soak_oob_connect(const char *addr, int port, int timeout_s);
int soak_oob_xchg(int fd, const void *out, void *in, size_t len,
		  int timeout_ms);

/* The state of one soak process. */
#include <infiniband/verbs.h>

struct soak_area {
	uint8_t *p;
	size_t len;
	struct ibv_mr *mr;
};

/* What a process tells its peer once, at setup. */
struct soak_info {
	uint64_t seed;
	uint32_t qpn[SQ__N], psn[SQ__N];
	uint8_t gid[16];
	uint32_t mtu;			/* active MTU in bytes */
	uint32_t max_len;
	uint32_t ops;
	uint64_t write_addr[SQ_UC + 1];
	uint32_t write_rkey[SQ_UC + 1];
	uint64_t read_addr, cnt_addr;
	uint32_t read_rkey, cnt_rkey;
	uint32_t dup_faults;		/* UROCE_FAULT duplicates datagrams */
};

/* One posted send WR, in post order per QP. */
struct soak_pend {
	uint32_t msg;			/* index in the round's schedule */
	uint32_t round;
	uint64_t compare;		/* CAS: what it compared with */
	uint64_t seq;
	bool completed;
};
#define SOAK_PEND 1024		/* per QP; a round posts far fewer */

struct soak_totals {
	uint64_t bytes_moved, bytes_wrong, cqe_wrong, msgs;
	uint64_t lost[2], got[2];	/* UC, UD */
	uint64_t twice[2];		/* duplicated on the path, delivered */
	uint64_t counter_wrong;
	uint64_t flushed;		/* after the first error: not counted again */
	uint64_t big_reads, reads, atomics, cas_retries, uc_write_lost;
};

/* What -X can spoil, once each. */
enum { SAB_SEND = 1, SAB_EXTRA, SAB_READ, SAB_WRITE, SAB_UD, SAB_CQE,
       SAB_COUNTER, SAB__N };

struct soak {
	/* options */
	int side;			/* 0 listens, 1 connects */
	uint64_t seed;
	uint64_t target_bytes;
	double max_seconds, stuck_seconds;
	uint32_t max_len;
	uint8_t timeout;		/* QP local ACK timeout exponent */
	bool verbose;
	/* -X: spoil things on purpose, to prove the checks catch them */
	uint32_t sabotage, sabotaged;	/* bits 1 << SAB_* */

	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_comp_channel *ch;
	struct ibv_cq *scq, *rcq;
	struct ibv_qp *qp[SQ__N];
	struct ibv_ah *ah;
	struct soak_area local[SQ__N], wr[SQ_UC + 1], rx[SQ_NRC], ring[2],
		rsrc, cnt;
	uint32_t ring_slot;		/* bytes per UC/UD receive slot */
	struct soak_info me, peer;
	struct soak_limits lim;
	int oob;

	/* the round in progress */
	uint32_t round;
	struct soak_round mine[SQ__N], theirs[SQ__N];
	uint32_t posted[SQ__N], done[SQ__N];	/* send WR sequence numbers */
	struct soak_pend pend[SQ__N][SOAK_PEND];
	uint32_t rc_rx_want[SQ_NRC], rc_rx_done[SQ_NRC];
	uint32_t rc_rx_msg[SQ_NRC][SOAK_MAX_MSGS];
	bool rc_rx_seen[SQ_NRC][SOAK_MAX_MSGS];
	bool ring_busy[2][SOAK_URING];
	uint32_t ring_free[2][SOAK_URING], ring_nfree[2];
	uint8_t *seen[2];		/* UC/UD ids received */
	uint32_t max_ids;
	uint64_t cas_guess;
	uint64_t (*chain)[2];		/* successful atomics: original, add */
	size_t nchain, cap_chain;
	uint64_t expect_counter;	/* sum of the peer's adds */
	bool fatal;
	bool dups_on_path;		/* either side duplicates datagrams */
	uint32_t errors_shown;
	struct soak_totals t;
};

/* soak.c: a round barrier over the TCP channel; > 0 when both sides are
 * fine and want another round, 0 when one wants to stop, < 0 on failure */
int soak_barrier(struct soak *s, uint32_t phase, bool more);

/* post.c */
int soak_post_mine(struct soak *s);
void soak_post_cas_retry(struct soak *s, unsigned int q, uint32_t k,
			 uint64_t compare);
int soak_post_rc_recvs(struct soak *s);

static inline uint64_t soak_msg_key(const struct soak *s, unsigned int side,
				    unsigned int q, uint32_t id)
{
	return soak_key(s->seed, side, q, id);
}

/* rounds.c */
int soak_round_run(struct soak *s);
void soak_round_verify(struct soak *s);
void soak_drain_unreliable(struct soak *s, int ms);
void soak_finish(struct soak *s, uint64_t peer_counter);
void soak_post_rings(struct soak *s);
__attribute__((format(printf, 2, 3)))
void soak_err(struct soak *s, const char *fmt, ...);

/* stats.c: UROCE_STATS and UROCE_FAULT */
struct soak_faults {
	bool have;
	double p_drop, p_dup, p_reorder, p_corrupt, p_delay;
	uint64_t dropped, duplicated, reordered, corrupted, delayed;
	uint64_t retransmits, timeouts, seq_nak_sent, seq_nak_rcvd;
	uint64_t reorder_kept, selective_resends, read_asks;
	uint64_t drop_bad_icrc, drops_total, dup_requests;
};
void soak_stats_prepare(char *path, size_t len);
void soak_fault_env(struct soak_faults *f);
int soak_stats_read(const char *path, struct soak_faults *f);

#endif
