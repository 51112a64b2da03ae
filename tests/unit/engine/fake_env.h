/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A test bench for the engine alone: the obj/ functions the engine calls
 * and the link API, faked in memory. Two devices "127.0.0.1" and
 * "127.0.0.2" exchange datagrams through queues with programmable loss,
 * duplication and reordering (deterministic PRNG).
 */
#ifndef UR_FAKE_ENV_H
#define UR_FAKE_ENV_H

#include "engine/engine_priv.h"

struct fe_fault {
	unsigned int drop_pct;
	unsigned int dup_pct;
	unsigned int reorder_pct;
	unsigned int drop_opcode_once;	/* drop the first packet of this
					 * opcode + 1 (0 = off) */
	bool tx_blocked;		/* every send found the socket full
					 * and waited (link_tx_blocked) */
};

/* The faults from now on (NULL: none). The NIC threads are running: the
 * settings, hooks and counts below are only reached through these calls. */
void fe_set_fault(const struct fe_fault *f);

/* Scripted faults: called for every datagram before the random ones;
 * returns true to drop it. fe_set_filter() installs one (NULL: none) and
 * returns how many datagrams the previous one dropped. */
typedef bool fe_filter_fn(int to_dev, const uint8_t *data, uint32_t len);
unsigned int fe_set_filter(fe_filter_fn *filter);
/* Datagrams the random faults dropped, duplicated and reordered so far. */
struct fe_counts {
	unsigned long dropped, duplicated, reordered;
};
void fe_get_counts(struct fe_counts *c);
/* Restarts the fault PRNG (tests that loop over seeds). */
void fe_seed(uint64_t seed);
/* BTH fields of a datagram on the fake link (no IP/UDP headers there). */
static inline uint8_t fe_pkt_opcode(const uint8_t *d)
{
	return d[0];
}

static inline uint32_t fe_pkt_psn(const uint8_t *d)
{
	return (uint32_t)d[9] << 16 | (uint32_t)d[10] << 8 | d[11];
}

/* Called for every datagram the fake network delivers (tests record), one
 * at a time; what it recorded is safe to read after fe_set_tap(NULL). */
typedef void fe_tap_fn(int to_dev, const uint8_t *data, uint32_t len);
void fe_set_tap(fe_tap_fn *tap);
/* Called at the end of every ur_link_send() of device dev (its datagrams
 * delivered, the call not yet returned: a sender preempted inside
 * sendmmsg), with no lock of the fake network's: a test may block there. */
typedef void fe_send_hook_fn(int dev, unsigned int n);
void fe_set_send_hook(fe_send_hook_fn *hook);
/* Called by device dev's NIC when it takes datagrams off the fake link,
 * with its receive lock held and no lock of the fake network's: where a
 * test may change a QP of that device under the QP's sq_lock, as the
 * engine's own receive path would (the canonical lock order). */
typedef void fe_rx_hook_fn(int dev);
void fe_set_rx_hook(fe_rx_hook_fn *hook);
/* The IP TOS byte device dev's datagrams arrive with from now on (0 at
 * start; ECN CE marks: ecn.c), and the one its last datagram was sent
 * with. */
void fe_set_rx_tos(int dev, uint8_t tos);
uint8_t fe_last_tx_tos(int dev);
/* Puts a datagram from the other device into device to_dev's queue. */
void fe_inject(int to_dev, const uint8_t *data, uint32_t len);
/* Same with any source address (a third host). */
void fe_inject_from(int to_dev, const union ur_sockaddr *src,
		    const uint8_t *data, uint32_t len);

struct fe_side {
	struct ur_device *dev;
	struct ur_pd pd;
	struct ur_cq scq, rcq;
	struct ur_qp *qp;
	uint8_t *buf;
	struct ur_mr *mr;
};

void fe_init(void);
void fe_debug(void);
void fe_set_port(union ur_sockaddr *a);
void fe_fini(void);
struct ur_device *fe_dev(int i);
struct ur_mr *fe_reg_mr(struct ur_device *dev, struct ur_pd *pd, void *addr,
			size_t len, unsigned int access);
void fe_dereg_mr(struct ur_device *dev, struct ur_mr *mr);
void fe_cq_init(struct ur_cq *cq, uint32_t size);
int fe_cq_poll(struct ur_cq *cq, struct ibv_wc *wc, int timeout_ms);
/* Spins on cq like an application's poll_cq: no sleep, and only dev's
 * receive path runs inline (the other device is another process). */
int fe_cq_spin(struct ur_cq *cq, struct ur_device *dev, struct ibv_wc *wc,
	       int timeout_ms);
/* Waits for a completion without running the engine: only the NIC
 * threads make progress (an application blocked elsewhere). */
int fe_cq_wait(struct ur_cq *cq, struct ibv_wc *wc, int timeout_ms);
struct ur_qp *fe_qp_create(struct ur_device *dev, struct ur_pd *pd,
			   struct ur_cq *scq, struct ur_cq *rcq,
			   enum ibv_qp_type t);
void fe_qp_destroy(struct ur_qp *qp);
void fe_qp_modify(struct ur_qp *qp, enum ibv_qp_state st, int mask);
void fe_connect(struct ur_qp *a, struct ur_qp *b, uint32_t psn_a,
		uint32_t psn_b, uint8_t timeout, uint8_t retry,
		uint8_t rnr_retry);
struct ur_send_wqe *fe_sq_next(struct ur_qp *qp);
void fe_sq_post(struct ur_qp *qp);
void fe_rq_post(struct ur_qp *qp, uint64_t wr_id, void *addr, uint32_t len,
		uint32_t lkey);
int fe_side_open(struct fe_side *s, int dev, enum ibv_qp_type t);
void fe_side_close(struct fe_side *s);
/* Two sides, one on each device, with RC QPs connected to each other
 * (PSNs 0x10 and 0x20) and no faults. The ACK timeout is perftest's (14:
 * 67 ms): a loaded 2-core box starves threads for tens of ms, and 8
 * timeouts in a row end the QP. Closing also removes any filter. */
void fe_pair_open(struct fe_side s[2]);
void fe_pair_close(struct fe_side s[2]);

#endif
