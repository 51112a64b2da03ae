/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs objects: device, context, PD, MR, MW, CQ, QP, SRQ, AH.
 *
 * obj/ holds state and enforces the IBA rules on it; it never sends a packet.
 * api/ calls obj/ to create/check/modify objects and then tells engine/ what
 * changed; engine/ reads and updates the queues and state defined here.
 *
 * Every object embeds its verbs ABI object first and is recovered with a
 * typed to_ur_*() helper, never a bare cast.
 *
 * Locking (see docs/design.md):
 *  - dev->obj_lock (rwlock): readers are the engine while it resolves keys,
 *    QPNs and touches registered memory for one packet or one WQE; writers
 *    are the control verbs that remove or change such objects (dereg_mr,
 *    rereg_mr, dealloc_mw, destroy_qp/srq). Holding it as a writer therefore
 *    guarantees no packet is using the object.
 *  - qp->sq_lock (mutex): send queue indices, requester and completer
 *    state. Taken by post_send (which runs the requester inline) and by the
 *    thread that processes ACKs for this QP.
 *  - qp->rq_lock / srq->lock (spinlock): receive queue indices.
 *  - cq->lock (spinlock): the CQE ring and the notification state.
 *  - The responder state of a QP is touched only by the thread that owns the
 *    NIC's receive path (one at a time, see engine/).
 */
#ifndef UR_OBJ_OBJ_H
#define UR_OBJ_OBJ_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "obj/limits.h"
#include "obj/verbs_abi.h"
#include "util/addr.h"
#include "util/compiler.h"
#include "util/list.h"
#include "util/u32map.h"

struct ur_nic;		/* engine-owned: link, progress thread, timers */
struct ur_qp_xport;	/* engine-owned: per-QP transport state */
struct ur_counters;	/* engine-owned: per-reason drop counters */

/* ------------------------------------------------------------------ */
/* Device                                                              */
/* ------------------------------------------------------------------ */

/* Kinds of object the live-object registry (obj/handle.c) tracks. */
enum ur_obj_kind {
	UR_OBJ_PD = 1,
	UR_OBJ_MR,
	UR_OBJ_MW,
	UR_OBJ_CQ,
	UR_OBJ_QP,
	UR_OBJ_SRQ,
	UR_OBJ_AH,
	UR_OBJ_CHANNEL,
	UR_OBJ_DM,
	UR_OBJ_TD,
	UR_OBJ_XRCD,
	UR_OBJ_QP_OPEN,		/* an XRC_RECV QP's handle from ibv_open_qp */
	UR_OBJ_KINDS
};

/*
 * The memory keys of a device (mem.c has the policy): every slot is free,
 * live (dev->mem_keys names its MR or MW) or quarantined (in the ring of
 * retired keys). dev->obj_lock held for writing guards all of it.
 */
struct ur_key_space {
	uint8_t *taken;			/* bitmap by slot: live or quarantined */
	uint32_t *retired;		/* ring of retired keys, oldest first */
	uint32_t head, len, size;	/* ring: first entry, entries, room */
	uint32_t live;			/* keys issued and not retired */
	/* UR_KEY_SLOT_BITS and UR_KEY_QUARANTINE; the unit tests shrink them
	 * (before the first key) to reach the slots' reuse quickly */
	unsigned int slot_bits;
	uint32_t quarantine;
};

struct ur_gid_entry {
	union ibv_gid gid;
	union ur_sockaddr addr;		/* the IP this GID stands for */
	bool valid;
};


/*
 * One software device, process-wide. Devices are created once, by the first
 * ibv_get_device_list(), and live until the process exits; the NIC behind a
 * device (socket, thread) exists while at least one context is open.
 */
struct ur_device {
	struct ibv_device ibdev;	/* must stay first: handed to users */
	unsigned int index;		/* uroce<index> */

	pthread_mutex_t lock;		/* open_count, nic */
	int open_count;

	struct ur_gid_entry gids[UR_MAX_GID];
	unsigned int num_gids;
	uint64_t node_guid;		/* network order */
	enum ibv_mtu active_mtu;
	uint32_t link_mtu;		/* bytes the link carries in one datagram */

	pthread_rwlock_t obj_lock;	/* see the locking note above */
	struct ur_u32_map mem_keys;	/* lkey/rkey -> ur_mr or ur_mw */
	struct ur_u32_map qpns;		/* qp_num -> ur_qp */
	struct ur_key_space keys;	/* obj_lock W */
	struct ur_u32_map srqns;	/* XRC srq_num -> ur_srq (obj_lock W) */

	struct ur_nic *nic;		/* NULL while no context is open */
	/* live objects per kind, for the limits (obj/handle.c's lock) */
	unsigned int obj_count[UR_OBJ_KINDS];
};

static inline struct ur_device *to_ur_device(struct ibv_device *ibdev)
{
	return container_of(ibdev, struct ur_device, ibdev);
}

/* ------------------------------------------------------------------ */
/* Context and async events                                            */
/* ------------------------------------------------------------------ */

struct ur_async_event {
	struct ur_list node;
	struct ibv_async_event ev;
};

struct ur_context {
	struct ur_device *dev;
	pthread_mutex_t async_lock;
	struct ur_list async_events;	/* queued ur_async_event */
	int async_efd;			/* eventfd (semaphore) == ibv_context.async_fd */
	struct verbs_context vctx;	/* abi_compat + sz make verbs_get_ctx() work */
};

static inline struct ur_context *to_ur_context(struct ibv_context *ibctx)
{
	return container_of(ibctx, struct ur_context, vctx.context);
}

/* ------------------------------------------------------------------ */
/* PD, MR, MW                                                           */
/* ------------------------------------------------------------------ */

struct ur_td {
	struct ibv_td ibtd;
	atomic_int usecnt;		/* parent domains naming it */
};

static inline struct ur_td *to_ur_td(struct ibv_td *ibtd)
{
	return container_of(ibtd, struct ur_td, ibtd);
}

/*
 * A PD, or a parent domain (ibv_alloc_parent_domain): then prot is the PD
 * it stands for in every protection check, and alloc/free (when set)
 * provide the buffers of the queues created on it (obj/pd.c).
 */
struct ur_pd {
	struct ibv_pd ibpd;
	atomic_int usecnt;		/* MRs, MWs, QPs, SRQs, AHs, CQs, parent
					 * domains using it */
	struct ur_pd *prot;		/* parent domain: its PD; NULL for a PD */
	struct ur_td *td;		/* parent domain: its TD or NULL */
	void *pd_context;
	void *(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
		       size_t alignment, uint64_t resource_type);
	void (*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
		     uint64_t resource_type);
};

static inline struct ur_pd *to_ur_pd(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct ur_pd, ibpd);
}

/* The PD protection checks compare: a parent domain's PD, or pd itself. */
static inline struct ur_pd *ur_pd_prot(struct ur_pd *pd)
{
	return pd->prot ? pd->prot : pd;
}

/* resource_type values our parent domain allocators are called with
 * (provider specific, as mlx5dv's MLX5DV_RES_TYPE_*): 'ur' << 32 + n. */
#define UR_RES_TYPE_QP ((0x7572ull << 32) + 1)	/* SQ and RQ rings */
#define UR_RES_TYPE_SRQ ((0x7572ull << 32) + 2)
#define UR_RES_TYPE_CQ ((0x7572ull << 32) + 3)

enum ur_mem_kind {
	UR_MEM_MR = 1,
	UR_MEM_MW = 2,
};

/* Common head of anything a memory key names (found via dev->mem_keys). */
struct ur_mem {
	enum ur_mem_kind kind;
	struct ur_pd *pd;
	uint64_t iova;			/* address the peer/SGE uses */
	uint64_t length;
	uintptr_t host_base;		/* host address of iova */
	unsigned int access;		/* IBV_ACCESS_* granted */
	bool valid;			/* MW: bound; MR: registered */
	uint32_t key;			/* current lkey/rkey (MW: changes on bind) */
};

struct ur_dm;

struct ur_mr {
	struct ibv_mr ibmr;
	struct ur_mem mem;
	atomic_int num_mw;		/* windows bound to it */
	struct ur_dm *dm;		/* ibv_reg_dm_mr: the DM it covers */
};

/*
 * Device memory (ibv_alloc_dm): heap memory the library owns, reached by
 * the application only through ibv_memcpy_to/from_dm and by the NIC
 * through zero-based MRs over it (ibv_reg_dm_mr).
 */
struct ur_dm {
	struct ibv_dm ibdm;
	uint8_t *buf;
	size_t length;
	atomic_int usecnt;		/* MRs over it */
};

static inline struct ur_dm *to_ur_dm(struct ibv_dm *ibdm)
{
	return container_of(ibdm, struct ur_dm, ibdm);
}

static inline struct ur_mr *to_ur_mr(struct ibv_mr *ibmr)
{
	return container_of(ibmr, struct ur_mr, ibmr);
}

struct ur_mw {
	struct ibv_mw ibmw;
	struct ur_mem mem;
	struct ur_mr *mr;		/* bound to; NULL when unbound */
	uint32_t qp_num;		/* type 2: the QP it is bound to */
	pthread_spinlock_t lock;	/* mem + mr + qp_num vs bind/invalidate */
};

static inline struct ur_mw *to_ur_mw(struct ibv_mw *ibmw)
{
	return container_of(ibmw, struct ur_mw, ibmw);
}

/* ------------------------------------------------------------------ */
/* CQ and completion channel                                            */
/* ------------------------------------------------------------------ */

struct ur_comp_channel {
	struct ibv_comp_channel ibch;	/* ibch.fd is an eventfd (semaphore) */
	pthread_mutex_t lock;
	struct ur_list pending;		/* ur_cq.chan_node with an undelivered event */
	atomic_int refcnt;		/* CQs using it */
};

static inline struct ur_comp_channel *to_ur_channel(struct ibv_comp_channel *c)
{
	return container_of(c, struct ur_comp_channel, ibch);
}

/* One CQE as kept in the ring: the final ibv_wc, plus what cq_ex reads. */
struct ur_cqe {
	struct ibv_wc wc;
	uint64_t ts_ns;			/* completion timestamp (cq_ex) */
	uint64_t wall_ns;		/* CLOCK_REALTIME ns, when requested */
};

enum ur_cq_arm {
	UR_CQ_DISARMED,
	UR_CQ_ARMED_NEXT,		/* any completion fires an event */
	UR_CQ_ARMED_SOLICITED,		/* only solicited or error completions */
};

struct ur_cq {
	union {
		struct ibv_cq ibcq;
		struct ibv_cq_ex ibcq_ex;	/* shares its head with ibcq */
	};
	pthread_spinlock_t lock;
	struct ur_cqe *ring;		/* ring_len entries, grows (cq.c) */
	uint32_t ring_len;		/* power of two, <= size */
	uint32_t size;			/* slots, power of two, >= cqe + 1 */
	uint32_t head;			/* next to consume */
	uint32_t tail;			/* next to produce */
	bool overflow;			/* IBV_EVENT_CQ_ERR already raised */
	enum ur_cq_arm arm;
	uint32_t wake_tail;		/* tail after the last entry that
					 * wakes a solicited-only arm */
	struct ur_list chan_node;	/* in channel->pending when an event waits */
	uint64_t wc_flags_ex;		/* IBV_WC_EX_WITH_* requested */
	atomic_int usecnt;		/* QPs and SRQs using it */
	uint32_t events_queued;		/* channel events not yet fetched */
	uint32_t comp_delivered;	/* by ibv_get_cq_event (ibcq.mutex) */
	uint32_t async_delivered;	/* by ibv_get_async_event (ibcq.mutex) */
	struct ur_cqe ex_cqe;		/* cq_ex: the entry being read */
	bool ignore_overrun;		/* IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN */
	struct ur_pd *parent;		/* IBV_CQ_INIT_ATTR_MASK_PD, or NULL */
	bool custom_ring;		/* ring from parent->alloc */
	atomic_uint xrings;		/* shared XRC SRQs completing here:
					 * poll_cq drains them (xrc_ring.c) */
	/* the engine's receive shards of the QPs completing here (bit q:
	 * shard q; engine/qp_xport.c sets, none: every shard): the ones
	 * an empty poll_cq receives for (engine/progress.c) */
	_Atomic uint64_t rx_shards;
};

static inline struct ur_cq *to_ur_cq(struct ibv_cq *ibcq)
{
	return container_of(ibcq, struct ur_cq, ibcq);
}

static inline struct ur_cq *to_ur_cq_ex(struct ibv_cq_ex *ibcq)
{
	return container_of(ibcq, struct ur_cq, ibcq_ex);
}

/* ------------------------------------------------------------------ */
/* Work queue entries                                                   */
/* ------------------------------------------------------------------ */

struct ur_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

/* Where a WQE is in its life (engine-maintained after posting). */
enum ur_wqe_state {
	UR_WQE_POSTED,			/* queued, nothing sent */
	UR_WQE_PENDING,			/* some or all packets sent, not acked */
	UR_WQE_DONE,			/* finished; waits for CQE in order */
	UR_WQE_ERROR,			/* failed; status holds why */
};

/*
 * A send WQE. Slots are fixed size per QP: this header followed by either
 * num_sge ur_sge entries or, for IBV_SEND_INLINE, the copied bytes.
 */
struct ur_send_wqe {
	uint64_t wr_id;
	enum ibv_wr_opcode opcode;
	unsigned int send_flags;	/* IBV_SEND_* */
	uint32_t num_sge;		/* 0 when inline */
	uint32_t length;		/* total payload bytes */
	__be32 imm_data;		/* WITH_IMM: immediate (network order) */
	uint32_t invalidate_rkey;	/* SEND_WITH_INV, LOCAL_INV */
	uint32_t xrc_srqn;		/* XRC_SEND: the responder's XRC SRQ */
	union {
		struct {
			uint64_t remote_addr;
			uint32_t rkey;
		} rdma;
		struct {
			uint64_t remote_addr;
			uint64_t compare_add;
			uint64_t swap;
			uint32_t rkey;
		} atomic;
		struct {
			struct ur_ah *ah;
			uint32_t remote_qpn;
			uint32_t remote_qkey;
		} ud;
		struct {			/* UR_WR_FLUSH_ARGS */
			uint64_t remote_addr;
			uint32_t rkey;
			uint32_t length;	/* of the range (level RANGE) */
			uint8_t type;		/* UR_FLUSH_GLOBAL|_PERSISTENT */
			uint8_t level;		/* UR_FLUSH_RANGE or _MR */
		} flush;
		struct {
			struct ur_mw *mw;
			uint32_t rkey;		/* new rkey for the window */
			struct ur_mr *mr;
			uint64_t addr;
			uint64_t length;
			unsigned int access;
		} bind;
	};

	/* transport state, written by engine/ only */
	enum ur_wqe_state state;
	enum ibv_wc_status status;
	uint32_t first_psn;
	uint32_t last_psn;
	uint32_t sent;			/* payload bytes sent so far */
	uint32_t npkts;			/* packets (or PSNs) the message uses */
	uint64_t atomic_orig;		/* atomic result before it is scattered */
	bool dx_placed;			/* a WRITE with immediate whose payload
					 * engine/direct.c copied: its one
					 * packet carries no payload */

	union {
		struct ur_sge sge[0];
		uint8_t inline_data[0];
	};
};

struct ur_recv_wqe {
	uint64_t wr_id;
	uint32_t num_sge;
	uint32_t length;		/* sum of sge lengths */
	struct ur_sge sge[];
};

/*
 * A ring of fixed-size WQE slots. Indices are free-running 32-bit counters;
 * slot = index & (slots - 1). For the SQ: posted (producer) >= sent (the
 * requester's next WQE) >= done (the completer's oldest).
 */
struct ur_wq {
	uint8_t *buf;
	uint32_t stride;		/* bytes per slot */
	uint32_t slots;			/* power of two */
	uint32_t max_wr;		/* capacity granted to the user */
	uint32_t max_sge;
	uint32_t max_inline;
	uint32_t producer;
	uint32_t consumer;
	uint32_t cursor;		/* SQ: requester position */
	bool custom_buf;		/* buf from a parent domain's alloc */
};

static inline void *ur_wq_slot(const struct ur_wq *wq, uint32_t idx)
{
	return wq->buf + (size_t)(idx & (wq->slots - 1)) * wq->stride;
}

static inline uint32_t ur_wq_count(const struct ur_wq *wq)
{
	return wq->producer - wq->consumer;
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                   */
/* ------------------------------------------------------------------ */

/*
 * An XRC domain (ibv_open_xrcd). Every XRCD opened on the same file (its
 * inode) of one device in this process is the same domain; an XRCD opened
 * with fd -1 is a domain of its own (obj/xrcd.c).
 */
struct ur_xrc_domain;
struct ur_xrc_host;		/* obj/xrc_host.c: a domain's host registry */

struct ur_xrcd {
	struct ibv_xrcd ibxrcd;
	struct ur_xrc_domain *dom;
	atomic_int usecnt;		/* XRC SRQs (and XRC_RECV QPs) on it */
};

static inline struct ur_xrcd *to_ur_xrcd(struct ibv_xrcd *ibxrcd)
{
	return container_of(ibxrcd, struct ur_xrcd, ibxrcd);
}

struct ur_srq {
	struct ibv_srq ibsrq;
	struct ur_pd *pd;		/* protection (ur_pd_prot of the given) */
	struct ur_pd *parent;		/* created on a parent domain, or NULL */
	pthread_spinlock_t lock;
	struct ur_wq rq;
	uint32_t limit;			/* srq_limit; 0 = disarmed */
	struct ur_xrcd *xrcd;		/* IBV_SRQT_XRC: its domain, else NULL */
	struct ur_cq *xrc_cq;		/* IBV_SRQT_XRC: completions go here */
	uint32_t srq_num;		/* IBV_SRQT_XRC: 24 bits, in dev->srqns */
	int64_t xrc_host_slot;		/* its record in the domain's host
					 * registry (xrc_host.c), or -1 */
	struct ur_xrc_host *xrc_host;	/* that registry, with a record */
	struct ur_xring *xring;		/* its WQEs shared with the domain's
					 * other processes (xrc_ring.c), or
					 * NULL: a private queue in rq */
	atomic_int usecnt;		/* QPs attached */
	uint32_t async_delivered;	/* by ibv_get_async_event (ibsrq.mutex) */
};

static inline struct ur_srq *to_ur_srq(struct ibv_srq *ibsrq)
{
	return container_of(ibsrq, struct ur_srq, ibsrq);
}

/* ------------------------------------------------------------------ */
/* AH                                                                    */
/* ------------------------------------------------------------------ */

/* A resolved address vector: what the engine needs to reach a peer. */
struct ur_av {
	struct ibv_ah_attr attr;	/* as given (copied) */
	union ur_sockaddr dest;		/* peer IP, UDP port 4791 */
	union ur_sockaddr src;		/* our IP for attr.grh.sgid_index */
	uint8_t sgid_index;
	uint8_t traffic_class;
	uint8_t hop_limit;
	uint32_t flow_label;
};

struct ur_ah {
	struct ibv_ah ibah;
	struct ur_av av;
	struct ur_pd *pd;
};

static inline struct ur_ah *to_ur_ah(struct ibv_ah *ibah)
{
	return container_of(ibah, struct ur_ah, ibah);
}

/* ------------------------------------------------------------------ */
/* QP                                                                    */
/* ------------------------------------------------------------------ */

struct ur_qp {
	struct ibv_qp_ex ibqp_ex;	/* ibqp_ex.qp_base is the ibv_qp */
	ur_wr_flush_fn wr_flush;	/* ibv_qp_ex's next member since
					 * rdma-core 45 (obj/verbs_abi.h) */
	struct ur_device *dev;
	struct ur_pd *pd;		/* protection (ur_pd_prot of the given) */
	struct ur_pd *parent;		/* created on a parent domain, or NULL */
	struct ur_cq *send_cq;
	struct ur_cq *recv_cq;
	struct ur_srq *srq;
	enum ibv_qp_type type;
	bool sq_sig_all;
	/* XRC_RECV: its domain (pd, CQs, srq and both rings are unused), and
	 * the XRC SRQ the request being handled names: set and cleared
	 * around each request by the receive path's owner (engine/xrc.c) */
	struct ur_xrcd *xrcd;
	struct ur_srq *xrc_srq;
	struct ur_xring *xrc_ring;	/* XRC_RECV: another process's SRQ the
					 * request names (rx owner, like
					 * xrc_srq), or NULL */
	/* XRC_RECV (dev->obj_lock W): handles ibv_open_qp gave out, and
	 * whether the creator's handle was destroyed while they lived (the
	 * QP then lives until the last of them is, as the kernel's shared
	 * XRC target QPs do) */
	unsigned int xrc_opens;
	bool xrc_orphan;
	/* IBV_QP_CREATE_BLOCK_SELF_MCAST_LB: multicast this QP sent is not
	 * delivered back to it */
	bool mcast_block_self;

	/* state and attributes as last set by modify_qp (query_qp reads).
	 * state is written only under sq_lock (modify_qp, and the engine's
	 * move to ERR) and read anywhere: atomic, so a reader without
	 * sq_lock sees a recent value and rechecks under the lock before
	 * acting on it (docs/design.md, "Engine: threads, locks and
	 * progress"). */
	_Atomic enum ibv_qp_state state;
	struct ibv_qp_attr attr;
	struct ur_av av;		/* RC/UC: the connected peer */
	uint32_t path_mtu_bytes;	/* RC/UC segment size */

	/* ibv_modify_qp from validation to the engine's apply, and
	 * ibv_destroy_qp's engine teardown (api/ibverbs/verbs_qp.c) */
	pthread_mutex_t modify_lock;
	pthread_mutex_t sq_lock;
	struct ur_wq sq;
	pthread_spinlock_t rq_lock;
	struct ur_wq rq;
	/* the RQ shared with a same-host peer's requester (rq_ring.c), or
	 * NULL: set under rq_lock by the engine (sq_lock held), freed when
	 * the QP is */
	struct ur_xring *rq_ring;
	/* on a plain SRQ whose ring a same-host peer's requester copies
	 * into (rq_ring.c): its slot there + 1, else 0 (set as rq_ring) */
	uint32_t srq_member;

	/* ibv_wr_* builder state (between wr_start and wr_complete) */
	int wr_err;
	uint32_t wr_start_producer;

	struct ur_qp_xport *xp;		/* engine's transport state */
	uint32_t async_delivered;	/* events handed to the user (ibqp mutex) */
};

static_assert(offsetof(struct ur_qp, wr_flush) == sizeof(struct ibv_qp_ex),
	      "wr_flush follows ibv_qp_ex as in rdma-core 45's layout");

static inline struct ur_qp *to_ur_qp(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct ur_qp, ibqp_ex.qp_base);
}

static inline struct ur_qp *to_ur_qp_ex(struct ibv_qp_ex *ibqpx)
{
	return container_of(ibqpx, struct ur_qp, ibqp_ex);
}

/* ------------------------------------------------------------------ */
/* What engine/ may call (implemented in obj/)                           */
/* ------------------------------------------------------------------ */

/* Caller holds dev->obj_lock for reading; the result is valid until then. */
struct ur_qp *ur_qp_lookup(struct ur_device *dev, uint32_t qpn);
struct ur_mem *ur_mem_lookup(struct ur_device *dev, uint32_t key);

/*
 * Checks that [iova, iova+len) lies in m, that m belongs to pd (and, for a
 * type 2 window, to qp_num), is valid, and grants every bit of access.
 * On success stores the host address of iova. Returns 0 or -EACCES/-EINVAL.
 * Zero-length accesses pass without a range check (C9-88).
 */
int ur_mem_check(const struct ur_mem *m, const struct ur_pd *pd,
		 uint32_t qp_num, uint64_t iova, uint64_t len,
		 unsigned int access, uintptr_t *host);

/*
 * Adds one completion. Fires the channel event when the CQ is armed (for
 * ARMED_SOLICITED only if solicited or wc->status != IBV_WC_SUCCESS).
 * Returns 0, or -ENOSPC on overflow (the CQE is lost and IBV_EVENT_CQ_ERR
 * is raised once; a CQ created with IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN
 * drops it silently and returns 0). Takes cq->lock (spinlock) itself.
 */
int ur_cq_push(struct ur_cq *cq, const struct ibv_wc *wc, bool solicited);

/* RC and both XRC halves: acknowledged, retried, in order (the engine's
 * reliable-connection paths serve all three). */
static inline bool ur_qp_reliable(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}

/* Where a QP's receive WQEs come from: its SRQ, an XRC target's the XRC
 * SRQ the request names, or NULL (its own RQ). */
static inline struct ur_srq *ur_qp_rq_srq(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->xrc_srq : qp->srq;
}

/* The PD receive buffers are checked against: the SRQ's when it has one. */
static inline struct ur_pd *ur_qp_recv_pd(const struct ur_qp *qp)
{
	struct ur_srq *srq = ur_qp_rq_srq(qp);

	return srq ? srq->pd : qp->pd;
}

/* The PD a peer's RDMA and atomic accesses are checked against: an XRC
 * target QP has none, the XRC SRQ its request names lends its own (the
 * requester's rkeys belong to that SRQ's PD, IBA XRC annex). */
static inline struct ur_pd *ur_qp_target_pd(const struct ur_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? ur_qp_recv_pd(qp) : qp->pd;
}

/* Where receive completions go: an XRC SRQ's CQ for an XRC target QP
 * (NULL between requests), else the QP's receive CQ. */
static inline struct ur_cq *ur_qp_recv_cq(const struct ur_qp *qp)
{
	if (qp->type == IBV_QPT_XRC_RECV)
		return qp->xrc_srq ? qp->xrc_srq->xrc_cq : NULL;
	return qp->recv_cq;
}

/*
 * Takes the oldest receive WQE of qp (its SRQ if it has one) and copies it
 * into out, which has room for UR_MAX_SGE entries. Raises
 * IBV_EVENT_SRQ_LIMIT_REACHED when an SRQ drops below its limit.
 * Returns 0 or -EAGAIN when the queue is empty.
 */
int ur_qp_take_recv(struct ur_qp *qp, struct ur_recv_wqe *out);

/*
 * rq_ring.c: an RC QP's own RQ, shared with a same-host peer so that its
 * SENDs need no packet (engine/direct_send.c). The engine opens it when
 * the QP connects to a ring peer (defer: the responder's count of
 * completions it holds back, which the ring's may not pass) and closes it
 * when the QP stops accepting requests (sq_lock held for both); closed,
 * no other process writes into the QP's buffers and the WQEs nobody took
 * are in the private RQ again. ur_rq_ring_ident: what the peer opens it
 * by (its memfd in this process, and its random identity).
 */
int ur_rq_ring_open(struct ur_qp *qp, const unsigned int *defer);
void ur_rq_ring_close(struct ur_qp *qp);
void ur_rq_ring_free(struct ur_qp *qp);
bool ur_rq_ring_ident(const struct ur_qp *qp, int32_t *fd, uint64_t *id);
/* The peer's completions into the CQ, unless the responder holds older
 * ones (it drains again after it pushed them). */
void ur_rq_ring_drain(struct ur_qp *qp);
/* Whether a same-host peer copies SENDs into qp's receives: its own RQ
 * shared, or its plain SRQ's ring with qp a member (stale: a hint). */
static inline bool ur_rq_ring_on(const struct ur_qp *qp)
{
	return qp->rq_ring ||
	       __atomic_load_n(&qp->srq_member, __ATOMIC_RELAXED);
}

/* Whether two XRCDs name the same domain (same file, same device). */
bool ur_xrcd_same_domain(const struct ur_xrcd *a, const struct ur_xrcd *b);
/* The XRC SRQ numbered srqn (dev->obj_lock held for reading), or NULL. */
struct ur_srq *ur_srq_lookup_xrc(struct ur_device *dev, uint32_t srqn);
/*
 * Whether srqn names a live XRC SRQ of xrcd's file-backed domain in any
 * process of this host, this one included (it reads the host registry: a
 * slow path, for a request that found no SRQ in this process). Never
 * waits: false when another thread or process holds the registry.
 */
bool ur_xrcd_srq_on_host(const struct ur_xrcd *xrcd, uint32_t srqn);

/*
 * Another process's XRC SRQ of xrcd's domain (xrc_ring.c), for an XRC
 * target QP's request naming srqn: 0 and *out, or -ENODEV (no such SRQ,
 * or its owner is gone), -EPERM (the owner's memory cannot be written
 * from here), -EOPNOTSUPP (its CQ waits on a channel and its process
 * has no thread to move the completions). The rx owner's,
 * with dev->obj_lock held for reading.
 */
struct ur_xring;
int ur_xrcd_ring(const struct ur_xrcd *xrcd, uint32_t srqn,
		 struct ur_xring **out);
/* Takes its oldest WQE into out: wr_id is the claim index, addr the host
 * address in the owner. 0 or -EAGAIN (empty). */
int ur_xring_take(struct ur_xring *x, struct ur_recv_wqe *out);
/* Writes len bytes at offset off of a WQE taken from x into the owner:
 * 0, -EMSGSIZE, -EACCES (its MR was deregistered or never resolved),
 * -ENODEV (the owner or the SRQ is gone), -EFAULT, -EBUSY. */
int ur_xring_copy(struct ur_xring *x, const struct ur_recv_wqe *w,
		  uint32_t off, const void *src, uint32_t len);
/* Hands the completion of the WQE claimed as idx to the owner. */
void ur_xring_complete(struct ur_xring *x, uint64_t idx,
		       const struct ibv_wc *wc);
/* What tells x's file from a later one of the same SRQ number (a random
 * number the owner chose). */
uint64_t ur_xring_id(const struct ur_xring *x);
/* Its owner's pid, the SRQ's PD handle (the one its rkeys must be of) and
 * the owner device's address (GID index 0), for the WRITEs and READs
 * another process does into the owner's memory (engine/xrc_mem.c). */
void ur_xring_owner(const struct ur_xring *x, int32_t *pid, uint32_t *pd,
		    uint8_t gid[16]);
/* A QP's RQ ring in process pid, by its fd there and the identity its
 * table names (engine/direct_send.c): 0, -EPERM (the kernel refuses),
 * -ENODEV (not that ring), -ENOMEM. ur_xring_close unmaps it. */
int ur_xring_open_fd(int32_t pid, int32_t fd, uint64_t id,
		     struct ur_xring **out);
void ur_xring_close(struct ur_xring *x);
/*
 * SENDs into the oldest WQEs of x by one process_vm_writev, and their
 * completions (each m[i].wc, byte_len its len) handed to the owner (me:
 * this process's pid, which getpid() would ask the kernel for). *copied:
 * how many of m, in order, were done. The return says why the next was
 * not: 0 (all done); nothing taken: -EAGAIN (no WQE posted), -EINVAL (the
 * WQE did not resolve, or is shorter than the message), -EBUSY (a
 * deregistration is in progress), -ENODEV (the queue is closed, or its
 * owner died), -EIO (the copy faulted in that message: it and those
 * behind it were given back untaken, for the packets); -EFAULT: the copy
 * faulted and its WQEs were taken again meanwhile (an SRQ's): that
 * message's WQE completed with IBV_WC_LOC_PROT_ERR, those behind flushed.
 */
#define UR_XSEND_IOV 128u
struct iovec;
struct ur_xsend {
	const struct iovec *local;
	unsigned int nlocal;
	uint32_t len;
	struct ibv_wc wc;
	bool solicited;
};
int ur_xring_send(struct ur_xring *x, int32_t me, struct ur_xsend *m,
		  unsigned int n, unsigned int *copied);

/* Queues an async event on the context that owns the object. */
void ur_async_event_post(struct ibv_context *ctx,
			 const struct ibv_async_event *ev);

/*
 * Takes the oldest WQE of srq into out (room for UR_MAX_SGE entries).
 * Takes srq->lock itself. Raises IBV_EVENT_SRQ_LIMIT_REACHED once when the
 * count drops below an armed limit, then disarms. Returns 0 or -EAGAIN.
 */
int ur_srq_take(struct ur_srq *srq, struct ur_recv_wqe *out);

/*
 * Executes a BIND_MW WQE (type 1 from ibv_bind_mw, type 2 from a BIND_MW
 * WR): wqe->bind.{mw,rkey,mr,addr,length,access}. Caller holds
 * dev->obj_lock for reading and qp->sq_lock. Checks the IBA rules (RC/UC
 * QP; PD of QP, MW and MR equal; MR valid with MW_BIND; window inside the
 * MR; remote write/atomic window needs MR LOCAL_WRITE; type 1 not
 * zero-based, length 0 unbinds it; type 2 must be free; a window with
 * length needs an MR; the window keeps its index and takes only the low
 * 8 bits of the WR's rkey). Returns 0, or -EINVAL/-EACCES: the caller
 * completes the WQE with IBV_WC_MW_BIND_ERR.
 */
int ur_mw_bind_wqe(struct ur_qp *qp, struct ur_send_wqe *wqe);

/*
 * LOCAL_INV / SEND_WITH_INV of rkey by QP qp_num of pd. Caller holds
 * dev->obj_lock for reading. Only bound type 2 windows of the same PD,
 * bound through that same QP (type 2B), are invalidated (freed); MRs (no
 * fast-reg MRs exist) and type 1 windows are refused. Returns 0 or
 * -EINVAL/-EACCES.
 */
int ur_mem_invalidate(struct ur_device *dev, struct ur_pd *pd,
		      uint32_t qp_num, uint32_t rkey);

#endif
