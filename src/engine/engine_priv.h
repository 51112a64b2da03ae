/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * engine/ internals: the NIC (link, progress thread, timers, counters), the
 * per-QP transport state (requester, completer, responder) and the
 * functions the engine files call on each other, grouped by file in stage
 * order (docs/design.md has the file map).
 *
 * Threads and locks: the rules (who owns what, the lock order, the
 * tryrdlock rule for obj_lock under sq_lock) live in one place,
 * docs/design.md, "Engine: threads, locks and progress"; the comments
 * here only name the lock a field or function needs.
 */
#ifndef UR_ENGINE_ENGINE_PRIV_H
#define UR_ENGINE_ENGINE_PRIV_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/uio.h>

#include "engine/engine.h"
#include "engine/params.h"
#include "link/link.h"
#include "obj/limits.h"
#include "obj/obj.h"
#include "obj/wr_opcode.h"
#include "util/iba.h"
#include "util/list.h"
#include "wire/wire.h"


enum ur_stat {
	UR_STAT_TX_PKTS,
	UR_STAT_TX_ERRORS,
	UR_STAT_RX_PKTS,
	UR_STAT_RETRANSMITS,
	UR_STAT_TIMEOUTS,
	UR_STAT_SEQ_NAK_SENT,
	UR_STAT_SEQ_NAK_RCVD,
	UR_STAT_RNR_NAK_SENT,
	UR_STAT_RNR_NAK_RCVD,
	UR_STAT_ERR_NAK_SENT,
	UR_STAT_ERR_NAK_RCVD,
	UR_STAT_ACK_SENT,
	UR_STAT_ACK_RCVD,
	UR_STAT_DUP_REQ,
	UR_STAT_READ_REPLAY,
	UR_STAT_ATOMIC_REPLAY,
	UR_STAT_UD_TOO_BIG,
	UR_STAT_STALE_RESP,
	UR_STAT_TIMER_WAKEUPS,
	UR_STAT_DEAF_WAITS,
	UR_STAT_WAIT_YIELDS,
	UR_STAT_REORDER_KEPT,
	UR_STAT_RESENDS,
	UR_STAT_REORDER_CONFLICTS,
	UR_STAT_READ_AHEAD,
	UR_STAT_READ_ASKS,
	UR_STAT_DIRECT_WRITES,
	UR_STAT_DIRECT_READS,
	UR_STAT_DIRECT_BYTES,
	UR_STAT_DIRECT_FALLBACKS,
	UR_STAT_DIRECT_REFUSED,
	UR_STAT_DIRECT_WRITE_IMMS,
	UR_STAT_DIRECT_SENDS,		/* direct_send.c */
	UR_STAT_DIRECT_SEND_PACKETS,
	UR_STAT_XRC_REMOTE_RDMA,	/* xrc_mem.c */
	UR_STAT_XRC_REMOTE_REFUSED,
	UR_STAT_NP_ECN_MARKED,		/* ecn.c: mlx5's names */
	UR_STAT_NP_CNP_SENT,
	UR_STAT_RP_CNP_HANDLED,
	UR_STAT_RP_CNP_IGNORED,
	UR_STAT_PACE_WAITS,		/* cc.c: the requester waited to pace */
	UR_STAT_LOCAL_CONGESTION,	/* cc.c: a cut for a full local queue */
	UR_STAT_SLEEP_TIMERS,		/* progress.c: the thread set timer_fd */
	UR_STAT_RX_FORWARDED,		/* recv.c: to another receive shard */
	UR_STAT_RX_FWD_QUEUED,		/* recv.c: of them, left in its queue */
	UR_STAT__MAX,
};

struct ur_counters {
	_Atomic uint64_t drop[UR_DROP__MAX];
	_Atomic uint64_t stat[UR_STAT__MAX];
};

static inline void ur_cnt_drop(struct ur_counters *c, enum ur_drop_reason r)
{
	atomic_fetch_add_explicit(&c->drop[r], 1, memory_order_relaxed);
}

static inline void ur_cnt_stat(struct ur_counters *c, enum ur_stat s,
			       uint64_t n)
{
	atomic_fetch_add_explicit(&c->stat[s], n, memory_order_relaxed);
}

extern const char *const ur_stat_names[UR_STAT__MAX];

/* One QP's share of the engine counters (the qp/<dev> file of the device
 * tree). Payload bytes; received packets are those passed to the QP. */
enum ur_qstat {
	UR_QSTAT_TX_PKTS,
	UR_QSTAT_TX_BYTES,
	UR_QSTAT_RX_PKTS,
	UR_QSTAT_RX_BYTES,
	UR_QSTAT_RETRANSMITS,
	UR_QSTAT_TIMEOUTS,
	UR_QSTAT_SEQ_NAK_SENT,
	UR_QSTAT_SEQ_NAK_RCVD,
	UR_QSTAT_RNR_NAK_SENT,
	UR_QSTAT_RNR_NAK_RCVD,
	UR_QSTAT_DUP_REQ,
	UR_QSTAT_ECN_MARKED,		/* ecn.c, all three rx owner's */
	UR_QSTAT_CNP_SENT,
	UR_QSTAT_CNP_HANDLED,
	UR_QSTAT_PACE_WAITS,		/* cc.c, sq_lock holder's */
	UR_QSTAT_LOCAL_CONGESTION,	/* cc.c, sq_lock holder's */
	UR_QSTAT__MAX,
};

/*
 * Each array has one writer at a time (its lock's holder), so a counter
 * moves by a relaxed load and store, no locked instruction; the device
 * tree's refresher reads both and adds them.
 */
struct ur_qp_counters {
	_Atomic uint64_t req[UR_QSTAT__MAX];	/* sq_lock holder */
	uint8_t apart[64];	/* two writers: never one cache line */
	_Atomic uint64_t rx[UR_QSTAT__MAX];	/* rx owner */
};

static inline void ur_qcnt(_Atomic uint64_t *c, enum ur_qstat s, uint64_t n)
{
	atomic_store_explicit(&c[s], atomic_load_explicit(&c[s],
				memory_order_relaxed) + n, memory_order_relaxed);
}

/* One packet with paylen bytes of payload handed to the link batch. */
static inline void ur_qcnt_tx(_Atomic uint64_t *c, uint32_t paylen)
{
	ur_qcnt(c, UR_QSTAT_TX_PKTS, 1);
	ur_qcnt(c, UR_QSTAT_TX_BYTES, paylen);
}

/* One packet being assembled: hdr | payload pieces | pad + ICRC. */
struct ur_txpkt {
	uint8_t hdr[UR_HDR_MAX];
	uint8_t trailer[8];
	struct iovec iov[UR_TX_PAY_IOV + 2];
	struct ur_ip_flow flow;
	/* a copy: a requester's batch may leave while ibv_modify_qp
	 * rewrites the QP's address vector */
	union ur_sockaddr dst;
};

/* A batch of packets sent with one ur_link_send(). */
struct ur_txb {
	struct ur_nic *nic;
	unsigned int n;
	int ack_slot;			/* index of a coalescable ACK, or -1 */
	const struct ur_qp *ack_qp;
	/* the last destination the link was asked about: whether it is a
	 * same-host ring peer (its packets then go without ICRC), while the
	 * link's ring generation stays ring_gen (tx.c) */
	union ur_sockaddr ring_dst;
	uint32_t ring_gen;
	bool ring_ok, ring_known;
	struct ur_txd txd[UR_TX_BATCH];
	struct ur_txpkt pkt[UR_TX_BATCH];
	/* GSO trains: equal-sized packets to one peer, iovecs end to end */
	struct ur_txd gtxd[UR_TX_BATCH];
	struct iovec giov[UR_TX_BATCH * UR_GSO_MAX_IOV];
};

/*
 * The requester's two batches (tx.c; the send step's release, send.c):
 * one fills under sq_lock while the other leaves without it, so no thread
 * that needs sq_lock (an ACK, a post) waits for another's sendmmsg, and
 * batches leave in the order they were filled, one sender at a time.
 */
struct ur_txq {
	/* sq_lock, except the batch in flight: its sender's (below) */
	struct ur_txb b[2];
	unsigned int fill;		/* b[fill] takes the new packets */
	bool sending;			/* a thread sends b[!fill] without
					 * sq_lock and comes back for more */
	bool stalled;			/* the requester stopped: no room */
	bool drain_held;		/* the completer stopped at a WQE
					 * with packets not yet sent */
	bool arm_owed;			/* the requester left the retransmit
					 * deadline to the packets' sender */
	/* per batch: it holds packets whose WQE may not complete before
	 * they left (a UD or UC send, an RC retransmission), and the SQ
	 * index of the oldest such WQE */
	bool held[2];
	uint32_t lo[2];
	/* held while a batch leaves; taken under sq_lock (never the other
	 * way round) only to wait for the batch in flight */
	pthread_mutex_t lock;
};

/* The QPs with a deadline armed, earliest first (timer.c). */
struct ur_timers {
	pthread_mutex_t lock;		/* a leaf: nothing is taken under it */
	struct ur_qp_xport **heap;	/* binary min-heap by tmr.key */
	unsigned int n;			/* QPs in the heap */
	unsigned int cap;		/* room, reserved at ur_timer_attach */
	unsigned int users;		/* QPs attached */
	_Atomic uint64_t next;		/* key of the heap's top, ns; 0 none */
};

/* A multicast group of the NIC and the UD QPs attached to it (mcast.c). */
struct ur_mcg {
	uint8_t gid[16];
	union ur_sockaddr group;	/* its IP group, port 4791 */
	unsigned int n;
	struct ur_qp *qps[UR_MAX_MCAST_QP_ATTACH];
};

/* RC receive completions waiting for their ACK in a shard's txb to leave
 * (resp_reply.c, ur_resp_flush()) */
struct ur_held_cqe {
	struct ur_qp *qp;
	struct ur_cq *cq;		/* an XRC target's is its SRQ's */
	struct ibv_wc wc;
	bool solicited;
};

struct ur_rx_fwd;

/*
 * One receive shard (docs/design.md, "Receive shards"): the link's
 * receive queue idx and the responders and completers' receive side of
 * the QPs it owns (ur_xp_shard()), all under lock. Everything below lock
 * is its holder's.
 */
struct ur_rx_shard {
	pthread_mutex_t lock;
	unsigned int idx;
	bool rx_one_sided;		/* this burst had one (progress.c) */
	/* drained store buffers for the next gap: reorder.c */
	struct ur_reorder_pkt *reorder_spare;
	uint64_t reorder_spare_bytes;
	uint32_t reorder_cap;		/* the largest request kept yet */
	unsigned int n_held;
	struct ur_held_cqe held[UR_RX_BATCH];
	struct ur_txb txb;
	struct ur_rxd rxd[UR_RX_BATCH];
	/* datagrams for this shard another shard received while this lock
	 * was taken (recv.c, "forwarded"); fwd_lock is a leaf */
	pthread_mutex_t fwd_lock;
	struct ur_rx_fwd *fwd_head, **fwd_tail;
	atomic_uint fwd_n;
	/* ns: a poll_cq last tried this shard (the thread's deaf waits) */
	_Atomic uint64_t last_app_poll;
	_Atomic uint64_t rx_pkts;	/* datagrams handled here (written by
					 * this lock's holder alone), forwarded
					 * ones included */
	_Atomic uint64_t fwd_in;	/* of them forwarded by another */
};

struct ur_nic {
	struct ur_device *dev;
	struct ur_link *link;
	pthread_t thread;
	bool thread_started;
	atomic_bool stop;
	bool busy_poll;
	bool poll_yield;		/* see ur_engine_poll_done() */
	bool wait_yield;		/* see peer_wait_yield() (progress.c) */
	bool srq_copy;			/* SENDs into a plain SRQ by copy */
	bool use_gso;
	bool ecn;			/* UROCE_ECN: packets leave ECT(0) */
	bool lazy_doorbell;		/* see ur_engine_sq_kick() */
	bool pace;			/* UROCE_PACE: cc.c's pacing */
	bool hardened;			/* UROCE_HARDENED: recv.c, resp.c */
	uint64_t quiet_ns;		/* see UR_APP_POLL_QUIET_NS */
	uint64_t spin_ns;		/* see UR_RX_SPIN_NS */
	int wake_fd;			/* eventfd: shutdown, one-sided */
	int timer_fd;			/* timerfd: a deadline before its sleep */
	uint64_t timer_set;		/* progress thread: timer_fd fires by
					 * then (ns), 0 none */
	_Atomic uint64_t reorder_bytes;	/* held by every QP's reorder store */
	/* RC QPs with PSNs unacknowledged: they share UR_NIC_WINDOW_PSNS
	 * (cc.c; each QP's cc.busy says whether it is counted) */
	_Atomic unsigned int rc_busy;

	/* receive shards (UROCE_RX_SHARDS): QP q's is shard[ur_qp_shard_of
	 * (q)]; shard 0 also owns the multicast table and the link's
	 * socket set, and receives the same-host ring */
	struct ur_rx_shard *shard;
	unsigned int n_shard;
	unsigned int n_linkq;		/* the link's queues: shards from
					 * this on get forwarded datagrams
					 * only */
	bool rx_ring;			/* the link has a same-host ring */
	/* who runs expired deadlines (progress.c); taken before any
	 * shard's lock is, never while one is held */
	pthread_mutex_t deadline_lock;
	pthread_mutex_t qp_list_lock;
	struct ur_list qps;		/* ur_qp_xport.node */
	struct ur_timers timers;
	_Atomic uint64_t last_app_poll;	/* ns of the last spinning poll */
	_Atomic uint64_t prev_poll;	/* ns of the last ur_engine_poll() */
	_Atomic unsigned int poll_streak;	/* polls in a row, close together */
	_Atomic uint64_t last_yield;	/* ns: poll_cq last yielded */
	/* ns: a requester stopped with work left that only the peer's
	 * responses let out (its window, or its READs and atomics) */
	_Atomic uint64_t last_req_blocked;
	/* The progress thread's wait as it published it (progress.c): a
	 * deadline armed no earlier than sleep_until needs no wake-up. */
	_Atomic uint64_t sleep_until;	/* ns; UINT64_MAX none; 0 awake */
	atomic_bool wait_deaf;		/* that wait leaves the socket alone */
	_Atomic uint64_t last_one_sided; /* ns: a WRITE/READ/atomic came in */

	/* same-host copies (direct.c): this NIC's published table (in its
	 * ring's area; NULL without a ring), whether its QPs copy */
	void *dx_own;
	int32_t dx_self;		/* our pid, a holder's name */
	bool dx_on;
	uint64_t dx_pidns;
	pthread_mutex_t dx_lock;	/* writers of dx_own */

	struct ur_counters cnt;
	bool stats_written;		/* UROCE_STATS written (dev->lock) */
	struct ur_pcap *pcap;

	/* Cold, at the end: the hot fields above keep their cache lines. */
	/* GID i's packets leave from addrs[i] (IP and port; nic.c) */
	union ur_sockaddr addrs[UR_LINK_MAX_ADDRS];
	unsigned int n_addrs;
	/* multicast groups (mcast.c), shard 0's lock */
	struct ur_mcg *mcg[UR_MAX_MCAST_GRP];
	unsigned int n_mcg;
	unsigned int n_attach;		/* QP attachments, all groups */
};

/* The address GID sgid_index's packets leave from (nic->addrs). */
static inline const union ur_sockaddr *ur_nic_src(const struct ur_nic *nic,
						   unsigned int sgid_index)
{
	return &nic->addrs[sgid_index < nic->n_addrs ? sgid_index : 0];
}

/* Responder resource: a READ or atomic kept for replay (docs/wire-notes.md
 * §3.5); an ATOMIC WRITE or FLUSH too, so a duplicate is answered and
 * never executed again. */
enum ur_res_type {
	UR_RES_NONE,
	UR_RES_READ,
	UR_RES_ATOMIC,
	UR_RES_ATOMIC_WRITE,
	UR_RES_FLUSH,
};

struct ur_res {
	enum ur_res_type type;
	uint32_t first_psn;
	uint32_t last_psn;
	uint64_t va;
	uint32_t rkey;
	uint32_t len;
	uint64_t orig;			/* atomic: value before the operation */
};

/* Which same-host peer pid a table was last proven to be of, and when
 * (ns; direct.c). */
struct ur_dx_proof {
	int32_t pid;
	uint64_t ns;
};

enum ur_resp_msg {
	UR_MSG_NONE,
	UR_MSG_SEND,
	UR_MSG_WRITE,
};

struct ur_resp_state_qp {
	uint32_t epsn;			/* next expected request PSN */
	uint32_t msn;
	bool nak_sent;			/* PSN-sequence NAK sent, awaiting epsn */
	bool uc_drop;			/* UC: dropping until next FIRST/ONLY */
	enum ur_resp_msg msg;		/* multi-packet message in progress */
	uint32_t msg_len;		/* bytes of the current message so far */
	/* WRITE in progress */
	uint64_t va;
	uint32_t rkey;
	uint32_t resid;
	uint32_t write_len;		/* RETH length */
	/* receive WQE taken for the current SEND / WRITE_IMM */
	bool have_rwqe;			/* stored with __atomic_store_n:
					 * ur_flush_rq() reads it unlocked */
	unsigned int held;		/* completions in nic->held, read as
					 * have_rwqe (__atomic) */
	union {
		struct ur_recv_wqe rwqe;
		uint8_t rwqe_buf[sizeof(struct ur_recv_wqe) +
				 UR_MAX_SGE * sizeof(struct ur_sge)];
	};
	/* XRC_RECV: the XRC SRQ rwqe was taken from, where it completes
	 * however its message ends (qp_error.c): its number, and the local
	 * SRQ or the other process's ring with the ring's identity, both
	 * found again by number before use (either may be gone by then) */
	uint32_t rwqe_srqn;
	struct ur_srq *rwqe_srq;
	struct ur_xring *rwqe_ring;
	uint64_t rwqe_ring_id;
	/* XRC_RECV: the last proof of another process's same-host table
	 * for its WRITEs and READs (xrc_mem.c) */
	struct ur_dx_proof xrc_proof;
	/* read/atomic replay ring */
	struct ur_res res[UR_NUM_RES];
	unsigned int res_head;
	/* requests kept past a gap (reorder.c): UR_REORDER_PSNS slots by
	 * PSN, allocated with the first one */
	struct ur_reorder_pkt **reorder;
	unsigned int reorder_n;
	uint32_t reorder_max;		/* the furthest PSN kept */
	uint64_t cnp_ns;		/* when the last CNP left (ecn.c) */
};

/*
 * Per-QP transport state, one sub-struct per stage (as kernel rxe's
 * rxe_req_info / rxe_comp_info / rxe_resp_info), each headed by its owner:
 * the lock or thread that may write it. A stage reads another's fields
 * only under the same lock. The whole rule set is in docs/design.md,
 * "Engine: threads, locks and progress".
 */

/* requester: the cursor over the send queue and what it has sent (sq_lock) */
struct ur_req_info {
	uint32_t psn;			/* next PSN to send */
	uint32_t psn_max;		/* PSN after the furthest ever sent */
	uint32_t pkt;			/* packet index inside the cursor WQE */
	uint32_t sq_high;		/* furthest cursor: WQE states before it
					 * are ours, after it stale slots */
	bool entered;			/* cursor WQE passed fence, credits */
	bool halted;			/* a WQE failed locally: send no more */
	uint32_t noack_pkts;		/* sent since the last ACK request */
	unsigned int rd_outstanding;	/* READ requests (chunks) and atomics
					 * sent since the last rewind and
					 * not answered in full */
	bool need_retry;		/* go back to comp.psn next step */
	bool sqd_notified;		/* IBV_EVENT_SQ_DRAINED raised */
};

/*
 * Selective resend (comp.c and comp_read.c decide, req.c sends; sq_lock):
 * after a sequence NAK only the NAKed packet is sent again, unless the
 * responder showed that it drops what comes past a gap (peer_drops); lost
 * READ responses are asked for again run by run.
 */
struct ur_resend_info {
	bool peer_drops;
	unsigned int drops_naks;	/* NAKs since peer_drops was set */
	bool nak_rewind;		/* the last go-back answered a seq NAK */
	bool need;			/* resend psn alone */
	bool active;			/* until comp.psn passes psn */
	bool ok;			/* its ACK covered the rest */
	uint32_t psn;
	uint32_t base;			/* req.psn when the NAK came */
	struct {
		uint32_t psn, end;	/* [psn, end] */
		uint32_t idx;		/* the READ WQE's SQ index */
	} rd_ask[UR_RD_ASKS];
	unsigned int rd_ask_n;
};

/* completer: acknowledgements, responses and retries (sq_lock) */
struct ur_comp_info {
	uint32_t psn;			/* oldest PSN not yet acknowledged */
	/* READ responses placed past a missing one, marked by PSN modulo
	 * UR_RD_SEEN_PSNS; all in [psn, rd_high) */
	uint64_t rd_seen[UR_RD_SEEN_PSNS / 64];
	uint32_t rd_seen_n;		/* marks set */
	uint32_t rd_high;		/* PSN after the furthest placed */
	unsigned int retry_left;
	unsigned int rnr_left;
	bool rnr_wait;
	uint32_t retry_psn;		/* psn when the last retry began */
	uint32_t recover_psn;		/* req.psn_max when the last retry
					 * began: before it, responses may
					 * still answer requests sent before */
	bool retry_fast_used;		/* a fast retry happened at retry_psn */
};

/* retransmit timeout and round-trip estimate (cc.c; sq_lock) */
struct ur_rto_info {
	uint64_t timeout_ns;		/* 0 = no retransmit timer */
	uint64_t iba_deadline;		/* the QP's timeout (counts retries);
					 * 0 = not running */
	uint64_t srtt_ns;		/* smoothed round trip, 0 = none yet */
	uint64_t rtt_t0;		/* when rtt_psn was sent */
	uint32_t rtt_psn;		/* the PSN being timed */
	bool rtt_on;
	unsigned int probe_backoff;	/* probes since the last progress */
	bool probe_one;			/* this run resends one packet only */
};

/* congestion window (cc.c, ecn.c's CNP reaction; sq_lock) */
struct ur_cc_info {
	uint32_t cwnd;			/* PSNs the requester may have unacked */
	uint32_t ssthresh;		/* slow start below, +1/window above */
	uint32_t cwnd_acc;		/* PSNs acked toward the next +1 */
	uint32_t acked;			/* PSNs acked since the last decrease */
	bool undo;			/* a probe or timeout shrank the window
					 * and no NAK has confirmed a loss */
	uint32_t undo_cwnd;		/* the window before that decrease */
	uint32_t undo_ssthresh;
	bool by_resend;			/* the episode began with RESEND */
	uint32_t recover_psn;		/* req.psn_max when the window last
					 * shrank: losses before it is acked
					 * belong to that congestion episode */
	uint64_t cnp_ns;		/* when a CNP last shrank the window */
	uint32_t cnp_target;		/* the window before that cut */
	unsigned int cnp_steps;		/* recovery steps toward it left */
	uint32_t alpha;			/* DCQCN's alpha, of UR_CC_ALPHA_ONE */
	bool busy;			/* counted in nic->rc_busy */
	/* pacing of what the window releases */
	uint64_t pace_rate;		/* bytes per second, 0 = unpaced */
	uint64_t pace_ns;		/* when pace_credit was last topped up */
	int64_t pace_credit;		/* wire bytes that may leave now */
};

/*
 * Deadlines (timer.c): the slots are written by the sq_lock holder and
 * read by whoever pops the heap; key and pos belong to timers.lock.
 */
struct ur_tmr_info {
	_Atomic uint64_t rto_deadline;	/* earlier of rto.iba_deadline and the
					 * recovery probe; 0 = off */
	_Atomic uint64_t rnr_deadline;	/* 0 = off */
	_Atomic uint64_t kick_deadline;	/* requester deferred (obj_lock busy),
					 * or the error path wants a visit */
	_Atomic uint64_t key;		/* heap key, no later than the earliest
					 * armed deadline; 0 = not in the heap */
	unsigned int pos;		/* heap index + 1; 0 = not in it */
};

/* same-host copies (direct.c; sq_lock) */
struct ur_dx_info {
	uint64_t verified;		/* ns: the peer's pid last proven */
	bool refused;			/* the kernel refused: packets only */
	/* the peer QP's RQ ring, mapped for SENDs (direct_send.c), or the
	 * time its table last said it has none */
	struct ur_xring *rq;
	int32_t rq_pid, rq_fd;
	uint64_t rq_id;
	uint64_t rq_none;
};

struct ur_qp_xport {
	/* identity and path: set under obj_lock's write side (modify_qp),
	 * read by every stage */
	struct ur_qp *qp;
	struct ur_nic *nic;
	struct ur_list node;		/* in nic->qps (qp_list_lock) */
	struct ur_ip_flow flow;		/* RC/UC: our address -> peer */
	uint32_t mtu;			/* RC/UC: path MTU; UD: port MTU */
	/* RC/UC, hardened mode (rx owner): the peer's UDP source port,
	 * bound by the first in-sequence packet after the path is loaded */
	bool peer_bound;
	uint16_t peer_port;		/* network order */

	struct ur_req_info req;		/* sq_lock */
	struct ur_resend_info resend;	/* sq_lock */
	struct ur_comp_info comp;	/* sq_lock */
	struct ur_rto_info rto;		/* sq_lock */
	struct ur_cc_info cc;		/* sq_lock */
	struct ur_tmr_info tmr;		/* see above */
	struct ur_resp_state_qp resp;	/* its shard's lock (ur_xp_shard) */
	struct ur_txq txq;		/* requester's batches (see above) */
	struct ur_qp_counters qcnt;
	struct ur_dx_info dx;		/* sq_lock */
};

/* Whether the QP has PSNs unacknowledged, for the NIC's shared window
 * (cc.c); sq_lock held. Any stage that ends a QP's traffic (a reset, the
 * move to ERR, destruction) says false. */
static inline void ur_cc_set_busy(struct ur_qp_xport *xp, bool busy)
{
	if (xp->cc.busy == busy || !xp->nic)
		return;
	xp->cc.busy = busy;
	if (busy)
		atomic_fetch_add_explicit(&xp->nic->rc_busy, 1,
					  memory_order_relaxed);
	else
		atomic_fetch_sub_explicit(&xp->nic->rc_busy, 1,
					  memory_order_relaxed);
}

static inline uint32_t ur_qp_num(const struct ur_qp *qp)
{
	return qp->ibqp_ex.qp_base.qp_num;
}

/*
 * The receive shard that owns qp's responder and completer's receive side
 * (docs/design.md, "Receive shards"): its QPN's, as the link steers
 * (link.h, "Receive queues"); an XRC target's is shard 0, since the
 * domain's cache of other processes' SRQ rings is shared by its QPs.
 * Fixed for the QP's life.
 */
static inline unsigned int ur_qp_shard_of(const struct ur_nic *nic,
					  const struct ur_qp *qp)
{
	if (nic->n_shard <= 1 || qp->type == IBV_QPT_XRC_RECV)
		return 0;
	return ur_qp_num(qp) % nic->n_shard;
}

static inline struct ur_rx_shard *ur_xp_shard(const struct ur_qp_xport *xp)
{
	return &xp->nic->shard[ur_qp_shard_of(xp->nic, xp->qp)];
}

/* Opcode facts come from obj/'s table (obj/wr_opcode.h). */
static inline bool ur_wr_has(enum ibv_wr_opcode op, unsigned int flag)
{
	const struct ur_wr_opcode_info *info = ur_wr_opcode_any(op);

	return info && (info->flags & flag);
}

/* A READ, an atomic, an ATOMIC_WRITE or a FLUSH: answered by its own
 * response only, and counted against max_rd_atomic. */
static inline bool ur_wr_is_rd_atomic(enum ibv_wr_opcode op)
{
	return ur_wr_has(op, UR_WR_RESPONSE);
}

/* timer.c: the deadline heap; see the comment at its top. */
void ur_nic_wake(struct ur_nic *nic);
/* Makes the progress thread wake by when if its published wait lasts
 * longer (seq_cst: pairs with the publication in progress.c's nic_wait). */
void ur_nic_wake_by(struct ur_nic *nic, uint64_t when);
void ur_timers_init(struct ur_timers *t);
void ur_timers_fini(struct ur_timers *t);
int ur_timer_attach(struct ur_qp_xport *xp);	/* 0 or -ENOMEM */
void ur_timer_detach(struct ur_qp_xport *xp);
void ur_timer_arm(struct ur_qp_xport *xp, _Atomic uint64_t *slot,
		  uint64_t when);
void ur_timer_disarm(_Atomic uint64_t *slot);
/* Pops up to max QPs whose key is due; each is out of the heap until
 * ur_timer_rearm() (or a new arm) puts it back; wake: tell the progress
 * thread if its deadline moved (false when it is the caller). */
unsigned int ur_timer_expired(struct ur_nic *nic, uint64_t now,
			      struct ur_qp_xport **due, unsigned int max);
void ur_timer_rearm(struct ur_qp_xport *xp, bool wake);
bool ur_timer_due(struct ur_nic *nic, uint64_t now);
uint64_t ur_timer_next(struct ur_nic *nic);	/* ns; 0 = nothing armed */

/* tx.c: packet batches. */
void ur_txb_init(struct ur_txb *b, struct ur_nic *nic);
/* Adds one packet; payload as iovecs (may be 0). Flushes when full.
 * -EFAULT (nothing added) when the payload's memory faulted. */
int ur_txb_add(struct ur_txb *b, const union ur_sockaddr *dst,
	       const struct ur_ip_flow *flow, struct ur_hdr_fields *f,
	       const struct iovec *pay, unsigned int npay, uint32_t paylen);
/* Adds an ACK that replaces a still-queued ACK of the same QP. */
void ur_txb_add_ack(struct ur_txb *b, const struct ur_qp *qp,
		    struct ur_hdr_fields *f);
void ur_txb_flush(struct ur_txb *b);
/* The requester's batches (struct ur_txq); sq_lock held unless said. */
int ur_txq_init(struct ur_txq *q, struct ur_nic *nic);
void ur_txq_fini(struct ur_txq *q);
/* Whether the filling batch takes one more packet (it may switch to the
 * other batch); false: both hold packets that have not left. */
bool ur_txq_room(struct ur_txq *q);
/* No room: the requester stops, and the batches' sender, when back, runs
 * the send step again (send.c). */
bool ur_txq_stalled(struct ur_txq *q);
/* ur_txb_add() for a packet of the WQE at SQ index idx. Never sends
 * unless both batches are full: then it waits for the one in flight, or
 * sends the older itself. */
int ur_txq_add(struct ur_txq *q, uint32_t idx, const union ur_sockaddr *dst,
	       const struct ur_ip_flow *flow, struct ur_hdr_fields *f,
	       const struct iovec *pay, unsigned int npay, uint32_t paylen);
/* Whether packets wait to leave or are leaving. */
bool ur_txq_pending(const struct ur_txq *q);
/* Whether a packet the WQE at SQ index idx may not complete before (a
 * UD or UC one, an RC retransmission: tx.c) has not left yet. */
bool ur_txq_holds(const struct ur_txq *q, uint32_t idx);
/* Sends everything now, in order, after the batch in flight (the rare
 * case that cannot wait: comp.c). */
void ur_txq_flush_all(struct ur_txq *q);
/* The batch to send next, with q->lock taken and sending set; NULL when
 * another thread sends or nothing waits. The caller drops sq_lock,
 * ur_txq_send()s it, takes sq_lock again and calls ur_txq_back(). */
struct ur_txb *ur_txq_take(struct ur_txq *q);
void ur_txq_send(struct ur_txq *q, struct ur_txb *b);	/* no sq_lock */
void ur_txq_back(struct ur_txq *q);
/* Drops every packet not sent, after the batch in flight left (the QP
 * moves to ERR or RESET or goes: its WQEs' memory may go with them). */
void ur_txq_discard(struct ur_txq *q);

/* qp_error.c: send CQEs, failed WQEs, the move to ERR, flushes, SQD. */
int ur_wqe_complete(struct ur_qp *qp, struct ur_send_wqe *wqe,
		    enum ibv_wc_status status);
void ur_qp_error_locked(struct ur_qp *qp);	/* sq_lock held */
void ur_qp_entered_err(struct ur_qp *qp);	/* sq_lock held */
void ur_flush_sq(struct ur_qp *qp);		/* sq_lock held */
void ur_flush_rq(struct ur_qp *qp, bool rx_owner);
/* XRC_RECV, rx owner, dev->obj_lock held (for a local SRQ's WQE):
 * completes with wc the receive WQE the responder holds, in the SRQ it
 * came from (nothing if that SRQ is gone); false on a CQ overrun. */
bool ur_xrc_rwqe_complete(struct ur_qp *qp, const struct ibv_wc *wc);
/* XRC_RECV, rx owner, without obj_lock: completes the held receive WQE
 * with IBV_WC_WR_FLUSH_ERR where it came from. may_wait: take obj_lock
 * (no sq_lock held); else only try it, and false when a local SRQ's WQE
 * needed it (the WQE stays held). */
bool ur_xrc_rwqe_flush(struct ur_qp *qp, bool may_wait);
void ur_sqd_check(struct ur_qp *qp);		/* sq_lock held */
void ur_sq_advance(struct ur_qp *qp);		/* sq_lock held */
void ur_wqe_fail(struct ur_qp *qp, uint32_t idx, struct ur_send_wqe *w,
		 enum ibv_wc_status st);	/* sq_lock held */

/* cc.c: window and retransmit deadline (sq_lock held). */
void ur_cc_reset(struct ur_qp_xport *xp);	/* a new connection */
uint32_t ur_cc_window(const struct ur_qp_xport *xp);
/* Whether sending PSN psn would overrun the window; whether the next
 * packet (the last of its message: last) asks for an ACK. */
bool ur_cc_window_full(const struct ur_qp_xport *xp, uint32_t psn);
bool ur_cc_want_ackreq(struct ur_qp_xport *xp, bool last);
/* What found a loss: a NAK or a gap in the responses, a recovery probe
 * that found nothing moving, the QP's timeout. */
enum ur_cc_signal {
	UR_CC_NAK,
	UR_CC_RESEND,		/* a NAK answered by resending one packet */
	UR_CC_PROBE,
	UR_CC_TIMEOUT,
};
void ur_cc_loss(struct ur_qp_xport *xp, enum ur_cc_signal sig);
/* A CNP for this QP came at now (ns): true when it shrank the window. */
bool ur_cc_cnp(struct ur_qp_xport *xp, uint64_t now);
void ur_cc_acked(struct ur_qp_xport *xp, uint32_t psns);
/* The requester's packets found the local socket or queue full. */
void ur_cc_local_full(struct ur_qp_xport *xp);
void ur_cc_arm_rto(struct ur_qp *qp, bool progress);
/* Pacing (req.c): at the start of a requester run, tops up the credit;
 * before a SEND/WRITE packet of wire_bytes, true when it must wait (the
 * QP's kick deadline is armed for when it may leave), else charges it. */
void ur_cc_pace_start(struct ur_qp_xport *xp);
bool ur_cc_pace_wait(struct ur_qp_xport *xp, uint32_t wire_bytes);

/* direct.c: same-host WRITE and READ by one copy. ur_direct_init at NIC
 * start (after the link and pcap); ur_direct_qp_update after a QP's
 * state or attributes changed (sq_lock), ur_direct_qp_gone before it is
 * freed; ur_direct_run (req.c, sq_lock and obj_lock read held): how many
 * of the n WQEs from the cursor on (w[0] a WRITE, WRITE with immediate
 * or READ, the rest WRITEs never visited, the last of them possibly with
 * immediate) were copied whole: only their completions left, or for a
 * WRITE with immediate its packet. */
void ur_direct_init(struct ur_nic *nic);
void ur_direct_qp_update(struct ur_qp *qp);
void ur_direct_qp_gone(struct ur_qp *qp);
/* direct_send.c: SENDs (with immediate) w[0..n), the requester's cursor
 * WQE and those posted right behind it that it never visited, by one copy
 * into the peer QP's receives (sq_lock and obj_lock read held): how many,
 * in order, were done (the last of them failed if the copy faulted in
 * it: IBV_WC_REM_OP_ERR); the next goes as packets. ur_direct_done: a WQE
 * a copy executed completes when the completer drains it, with no PSN of
 * its own. */
static inline bool ur_dx_send_op(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM;
}

unsigned int ur_direct_send(struct ur_qp *qp, struct ur_send_wqe **w,
			    unsigned int n);
void ur_direct_done(struct ur_qp *qp, struct ur_send_wqe *wqe);
unsigned int ur_direct_run(struct ur_qp *qp, struct ur_send_wqe **w,
			   unsigned int n);

/* req.c (sq_lock held; only send.c runs it) */
void ur_req_run(struct ur_qp *qp);
void ur_req_rewind(struct ur_qp *qp);

/* comp.c (sq_lock held) */
bool ur_comp_rx(struct ur_qp *qp, const struct ur_pkt *pkt);
void ur_comp_drain(struct ur_qp *qp);
bool ur_comp_timer(struct ur_qp *qp, uint64_t now);
/* comp_read.c (sq_lock held). READ responses placed past a lost one:
 * whether the one with this PSN is (req.c asks only for the others); the
 * cursor moving through them after the requester ran (send.c; true: it
 * moved); forgetting them all (a QP reset). */
bool ur_comp_rd_placed(const struct ur_qp_xport *xp, uint32_t psn);
bool ur_comp_catch_up(struct ur_qp *qp);
void ur_comp_forget_ahead(struct ur_qp_xport *xp);

/* send.c: the send step, the only caller of the requester. */
void ur_send_step(struct ur_qp *qp);		/* sq_lock held */
/* Releases sq_lock after a send step; what it built leaves first, without
 * the lock (ur_engine_sq_unlock is the same for api/). */
void ur_send_unlock(struct ur_qp *qp);
void ur_send_on_response(struct ur_qp *qp, const struct ur_pkt *pkt);
void ur_send_on_deadline(struct ur_qp *qp, uint64_t now); /* sq_lock */

/* xrc.c (shard 0's lock and obj_lock read held): an XRC request to an
 * XRC_RECV QP, through the responder with the XRC SRQ its XRCETH names. */
void ur_xrc_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		    const struct ur_rxd *d, const struct ur_ip_flow *flow);

/* mcast.c: the group of a multicast GID, or NULL (shard 0's lock); a QP's
 * attachments end with it (ur_engine_qp_fini); the groups go with the
 * NIC, whose link leaves them by closing. */
struct ur_mcg *ur_mcast_find(struct ur_nic *nic, const uint8_t gid[16]);
void ur_mcast_qp_gone(struct ur_qp *qp);
void ur_mcast_fini(struct ur_nic *nic);

/* ecn.c: ECN marks and CNPs (docs/design.md, "ECN and CNPs"). */
/* The IP TOS / traffic class a packet with GRH traffic class tclass
 * leaves with: its DSCP, and ECT(0) unless UROCE_ECN=0. */
static inline uint8_t ur_ecn_tos(const struct ur_nic *nic, uint8_t tclass)
{
	return nic->ecn ? (uint8_t)((tclass & ~UR_IP_ECN_MASK) |
				    UR_IP_ECN_ECT0) :
			  tclass;
}

static inline bool ur_ecn_is_ce(uint8_t tos)
{
	return (tos & UR_IP_ECN_MASK) == UR_IP_ECN_CE;
}

/* Whether a CNP may leave at now, one interval after the last (*last,
 * updated when it may). */
bool ur_ecn_cnp_due(uint64_t *last, uint64_t now);
/* A CE-marked packet passed to qp (its shard's lock held): counted, and a
 * CNP to the peer's QP when qp is connected and its interval has passed. */
void ur_ecn_rx_ce(struct ur_nic *nic, struct ur_qp *qp);
/* A parsed CNP (the shard's lock of the QP it names and obj_lock read
 * held): that QP's window shrinks; never answered, never a drop. */
void ur_ecn_rx_cnp(struct ur_nic *nic, const struct ur_rxd *d,
		   const struct ur_pkt *pkt);

/* recv.c (sh->lock and obj_lock read held): one datagram sh received;
 * one for another shard's QP is forwarded there. */
void ur_rx_datagram(struct ur_nic *nic, struct ur_rx_shard *sh,
		    struct ur_rxd *d);
/* recv.c (sh->lock and obj_lock read held): what other shards forwarded
 * to sh. Returns how many. */
unsigned int ur_rx_fwd_drain(struct ur_nic *nic, struct ur_rx_shard *sh);
/* recv.c: the shards (0 or -ENOMEM), and freeing them (nothing runs). */
int ur_rx_shards_init(struct ur_nic *nic, unsigned int n);
void ur_rx_shards_fini(struct ur_nic *nic);

/* progress.c */
void *ur_progress_thread(void *arg);

/* reorder.c (the QP's shard lock held): requests kept past a gap, by PSN */
struct ur_reorder_pkt {
	uint32_t psn;
	uint32_t cap;			/* bytes buf holds */
	struct ur_reorder_pkt *next;	/* in ur_rx_shard.reorder_spare */
	struct ur_rxd d;		/* d.data points into buf */
	uint8_t buf[];
};
/* Keeps a copy of request d with PSN psn, ahead of resp.epsn: true when
 * it is kept (now or before). */
bool ur_reorder_keep(struct ur_qp_xport *xp, uint32_t psn,
		     const struct ur_rxd *d);
/* The kept request for resp.epsn, taken out of the store, or NULL. */
struct ur_reorder_pkt *ur_reorder_take(struct ur_qp_xport *xp);
/* A taken request's buffer back to its shard's spares (its lock held). */
void ur_reorder_free(struct ur_qp_xport *xp, struct ur_reorder_pkt *p);
/* Frees a shard's spare buffers (it is going away). */
void ur_reorder_spares_free(struct ur_rx_shard *sh);
/* Whether a kept request is ahead of resp.epsn (past a gap); when none
 * is, those left behind it (inside a READ's PSNs) are freed. */
bool ur_reorder_ahead(struct ur_qp_xport *xp);
/* Frees every kept request (QP reset or destroy). */
void ur_reorder_clear(struct ur_qp_xport *xp);

/* resp.c */
void ur_resp_rx(struct ur_qp *qp, const struct ur_pkt *pkt,
		const struct ur_rxd *d, const struct ur_ip_flow *flow);
void ur_resp_reset(struct ur_qp *qp);
/* After the kept requests that followed an in-order one were handled
 * (drained of them, stalled: the last one was not executed and has been
 * answered), for a QP in a state that answers requests: ACKs them, and
 * NAKs the next gap if more are kept. */
void ur_resp_reorder_done(struct ur_qp *qp, unsigned int drained,
			  bool stalled);
/* resp_reply.c, sh->lock held: sends sh's batch, then makes visible the
 * receive completions that waited for their ACK in it. */
void ur_resp_flush(struct ur_rx_shard *sh);

/* rdatm.c */
struct ur_res *ur_res_alloc(struct ur_qp_xport *xp);
struct ur_res *ur_res_find(struct ur_qp_xport *xp, uint32_t psn);
void ur_res_clear(struct ur_qp_xport *xp);

/* copy.c: SGE walks. Return 0, -EACCES (key/range/access), -EMSGSIZE;
 * ur_sgl_copy_in() also -EFAULT (the memory faulted). */
int ur_sgl_map(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
	       uint32_t off, uint32_t len, unsigned int access,
	       struct iovec *iov, unsigned int max_iov, unsigned int *niov);
int ur_sgl_check(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		 unsigned int access);
int ur_sgl_copy_in(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		   uint32_t off, const void *src, uint32_t len);
/* ur_sgl_copy_in for a receive WQE: checked against ur_qp_recv_pd(). */
int ur_recv_copy_in(struct ur_qp *qp, const struct ur_sge *sge, uint32_t nsge,
		    uint32_t off, const void *src, uint32_t len);
int ur_rkey_map(struct ur_qp *qp, uint32_t rkey, uint64_t va, uint32_t len,
		unsigned int access, uintptr_t *host);

#endif
