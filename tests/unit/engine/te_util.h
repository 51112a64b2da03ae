/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine tests through the public verbs API: two devices in one process
 * (UROCE_NUM_DEVICES=2), one RC/UC/UD QP on each, connected over loopback.
 */
#ifndef UR_TE_UTIL_H
#define UR_TE_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#define TE_BUF 65536
#define TE_MTU IBV_MTU_1024

struct te_side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_qp *qp;
	uint8_t *buf;
	struct ibv_mr *mr;
	union ibv_gid gid;
};

struct te_pair {
	struct te_side s[2];
	enum ibv_qp_type type;
};

struct te_conn_opts {
	uint8_t timeout;		/* 0 = default 12 */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint32_t psn[2];
	unsigned int access;		/* more qp_access_flags for both */
};

/*
 * te_conn_opts.timeout for traffic that must not end in RETRY_EXC_ERR
 * when the host is overloaded: 4.096 us x 2^16 = 268 ms, so 8 timeouts
 * in a row (retry_cnt 7) take 2.1 s without one ACK. The default (12:
 * 16.8 ms, 134 ms for all 8) is below what a software responder's thread
 * may wait for a CPU at load 10 on 2 cores (gaps of a 1 ms sleeper up to
 * 1 s were measured there). Losses are found by the engine's recovery
 * probes, not by this timeout, so such tests are not slower.
 */
#define TE_TIMEOUT_LOADED 16

/* Opens both devices (once per process) and sets up QPs of type t. */
int te_pair_open(struct te_pair *p, enum ibv_qp_type t);
/* An RC QP of pd on these CQs, depth WRs and one SGE each way, in RESET;
 * NULL when refused. */
struct ibv_qp *te_rc_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			struct ibv_cq *rcq, uint32_t depth);
/* The same with ibv_create_qp_ex and these IBV_QP_EX_WITH_* (0: none). */
int te_pair_open_ex(struct te_pair *p, enum ibv_qp_type t, uint64_t send_ops);
void te_pair_close(struct te_pair *p);
/* A cmocka teardown for a pair its setup calloc'ed into *state: closes
 * and frees it. */
int te_pair_teardown(void **state);
/* Closes both devices (UROCE_STATS then dumps the engine counters). */
void te_close_devices(void);
/* RESET -> INIT -> RTR -> RTS on both sides, each aimed at the other. */
int te_pair_connect(struct te_pair *p, const struct te_conn_opts *o);
int te_qp_to_reset(struct ibv_qp *qp);
/* One step of te_pair_connect() for side me: the move into to (INIT from
 * RESET, RTR from INIT or RTS from RTR), aimed at the other side (o: NULL
 * for te_pair_connect()'s defaults). */
int te_side_to(struct te_pair *p, int me, const struct te_conn_opts *o,
	       enum ibv_qp_state to);

/* Polls cq until one completion or timeout_ms; returns 1, 0, or -1. */
int te_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms);
/* Waits that nothing arrives for ms on cq (returns the count seen). */
int te_poll_none(struct ibv_cq *cq, int ms);

int te_post_recv(struct te_side *s, uint64_t wr_id, uint32_t off,
		 uint32_t len);
int te_post_send(struct te_side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		 uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		 unsigned int flags);

/* How many of n bytes at p are not 0: what landed where nothing may. */
size_t te_nonzero_bytes(const void *p, size_t n);
/*
 * A deregistration racing incoming SENDs: n receives of len bytes each,
 * in one buffer registered on pd, are posted to srq (or, if NULL, to qp);
 * a thread of ours sends len-byte SENDs from a's buffer, one at a time
 * (each polled for up to poll_ms), while this one, after a random few
 * hundred us, deregisters that buffer (which stays mapped), clears it and
 * looks 20 ms later. Returns how many bytes landed after ibv_dereg_mr
 * returned (0 when the deregistration waited for every copy into it), or
 * SIZE_MAX when the set-up failed.
 */
size_t te_dereg_during_sends(struct te_side *a, struct ibv_pd *pd,
			     struct ibv_qp *qp, struct ibv_srq *srq,
			     uint32_t len, uint32_t n, int poll_ms);
/* A hw_counters value of s's device, from this process's device tree
 * (refreshed every 50 ms); 0 when it cannot be read. */
uint64_t te_counter(struct te_side *s, const char *name);
/* The counter once it reached at least want (up to 2 s), else its value. */
uint64_t te_counter_reaches(struct te_side *s, const char *name,
			    uint64_t want);
/* The counter after the tree had time to show anything new. */
uint64_t te_counter_settled(struct te_side *s, const char *name);

#endif
