/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * obj/ functions that api/ (and obj/'s own files) call; engine/ uses only
 * what obj.h declares. One section per file that implements it.
 */
#ifndef UR_OBJ_OBJ_PRIV_H
#define UR_OBJ_OBJ_PRIV_H

#include <sys/types.h>

#include "obj/obj.h"
#include "obj/wr_opcode.h"

/*
 * Functions that can fail return 0 or -errno and never touch errno: api/
 * translates to each verb's convention. (The posting functions of post.c
 * return a positive errno, as ibv_post_send does.)
 */

static inline struct ur_device *ur_ctx_dev(struct ibv_context *ctx)
{
	return to_ur_context(ctx)->dev;
}

/* ------------------------------------------------------------------ */
/* handle.c: the live-object registry                                  */
/* ------------------------------------------------------------------ */

/*
 * Records obj (the ibv_* pointer given to the user) as live, created on
 * ctx with handle. Returns 0, -ENOMEM when dev already holds the limit of
 * this kind (limits.h) or memory is short, -EEXIST if already recorded.
 */
int ur_live_add(struct ur_device *dev, enum ur_obj_kind kind, const void *obj,
		struct ibv_context *ctx, uint32_t handle);
/*
 * 0 when obj is a live object of this kind with its context and handle as
 * created; -ENOENT when it is not (never ours, destroyed, being destroyed,
 * handle overwritten), -EINVAL for NULL or an overwritten context. Reads
 * through obj only after finding it.
 */
int ur_live_check(enum ur_obj_kind kind, const void *obj);
/* ur_live_check without the handle: for the posting verbs that name
 * objects (ibv_bind_mw), which on hardware never reach the kernel that
 * resolves handles, so a garbled handle does not stop them (mlx5). */
int ur_live_check_ptr(enum ur_obj_kind kind, const void *obj);
/* ur_live_check, and on success hides obj from later checks (a destroy
 * begins); end with ur_live_drop (destroyed) or ur_live_restore. */
int ur_live_take(enum ur_obj_kind kind, const void *obj);
void ur_live_restore(const void *obj);
void ur_live_drop(const void *obj);
unsigned int ur_live_count(const struct ur_device *dev, enum ur_obj_kind kind);

/* A non-zero handle for ibv_* objects (process-wide counter). */
uint32_t ur_obj_handle(void);
int ur_pd_alloc(struct ibv_context *ctx, struct ur_pd **out);
/* -EBUSY while something uses the PD (or parent domain). */
int ur_pd_free(struct ur_pd *pd);
/* ibv_alloc_td: comp_mask must be 0. */
int ur_td_alloc(struct ibv_context *ctx, const struct ibv_td_init_attr *attr,
		struct ur_td **out);
/* -EBUSY while a parent domain names it. */
int ur_td_free(struct ur_td *td);
/* ibv_alloc_parent_domain: attr->pd a PD (not a parent domain) of ctx,
 * attr->td NULL or a TD of ctx, known comp_mask bits. */
int ur_parent_domain_alloc(struct ibv_context *ctx,
			   const struct ibv_parent_domain_init_attr *attr,
			   struct ur_pd **out);
/*
 * A zeroed queue buffer for an object created on pd: from the parent
 * domain's alloc callback when it has one and that does not answer
 * IBV_ALLOCATOR_USE_DEFAULT (*custom = true), else from the heap. NULL
 * when either fails. Release with ur_pd_buf_free(pd, ..., *custom).
 */
void *ur_pd_buf_alloc(struct ur_pd *pd, size_t size, uint64_t type,
		      bool *custom);
void ur_pd_buf_free(struct ur_pd *pd, void *buf, uint64_t type, bool custom);

/* ------------------------------------------------------------------ */
/* mem.c */
/* ------------------------------------------------------------------ */

/* A device's key space, empty; fini frees what the keys took (the device
 * must have no MR or MW left). */
void ur_key_space_init(struct ur_key_space *ks);
void ur_key_space_fini(struct ur_key_space *ks);
/* Access bits an MR may carry; the rest are EINVAL (optional ones ignored).
 * FLUSH_PERSISTENT is not among them: host memory is not persistent
 * memory, and rxe refuses it (EINVAL) for pages that are not pmem. */
#define UR_MR_ACCESS_SUPPORTED                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |    \
	 IBV_ACCESS_ZERO_BASED | UR_ACCESS_FLUSH_GLOBAL)
/* 0 or -EINVAL (unknown bit; remote write/atomic without local write). */
int ur_mr_access_ok(unsigned int access);
int ur_mr_reg(struct ur_pd *pd, void *addr, size_t length, uint64_t iova,
	      unsigned int access, struct ur_mr **out);
/* flags: IBV_REREG_MR_CHANGE_*. Keys stay the same. -EBUSY if MWs bound. */
int ur_mr_rereg(struct ur_mr *mr, int flags, struct ur_pd *pd, void *addr,
		size_t length, unsigned int access);
/* -EBUSY while windows are bound to it. */
int ur_mr_dereg(struct ur_mr *mr);
/* ibv_advise_mr: validates advice, flags and every SGE against its MR. */
int ur_mr_advise(struct ur_pd *pd, int advice, uint32_t flags,
		 const struct ibv_sge *sg, uint32_t num_sge);
int ur_mw_alloc(struct ur_pd *pd, enum ibv_mw_type type, struct ur_mw **out);
int ur_mw_dealloc(struct ur_mw *mw);
/* The MW's current rkey as the engine sees it. */
uint32_t ur_mw_rkey(struct ur_mw *mw);

/* ------------------------------------------------------------------ */
/* dm.c */
/* ------------------------------------------------------------------ */

/* attr: length 1..UR_MAX_DM_SIZE, log_align_req <= 12, comp_mask 0. */
int ur_dm_alloc(struct ibv_context *ctx, const struct ibv_alloc_dm_attr *attr,
		struct ur_dm **out);
/* -EBUSY while MRs cover it. */
int ur_dm_free(struct ur_dm *dm);
/* The memcpy verbs: 0, -EINVAL (offset or length not a multiple of 4)
 * or -EFAULT (the range leaves the DM). */
int ur_dm_copy_to(struct ur_dm *dm, uint64_t off, const void *src,
		  size_t len);
int ur_dm_copy_from(void *dst, struct ur_dm *dm, uint64_t off, size_t len);
/* ibv_reg_dm_mr: a zero-based MR over [off, off + len) of dm. access must
 * have IBV_ACCESS_ZERO_BASED (rdma-core's rule). */
int ur_dm_reg_mr(struct ur_pd *pd, struct ur_dm *dm, uint64_t off,
		 size_t len, unsigned int access, struct ur_mr **out);

/* ------------------------------------------------------------------ */
/* cq.c */
/* ------------------------------------------------------------------ */

int ur_cq_create(struct ibv_context *ctx, const struct ibv_cq_init_attr_ex *a,
		 struct ur_cq **out);
/* -EBUSY while QPs/SRQs use it; waits for delivered events to be acked. */
int ur_cq_destroy(struct ur_cq *cq);
int ur_cq_resize(struct ur_cq *cq, int cqe);
/* Copies up to n CQEs out; returns how many. */
int ur_cq_poll(struct ur_cq *cq, int n, struct ibv_wc *wc);
/*
 * Removes every CQE of qp_num still in the CQ (the others keep their
 * order); returns how many. Modify-to-RESET and destroy_qp call it for the
 * QP's send and receive CQs, as mlx4/mlx5 do, so stale (flush) CQEs of an
 * old incarnation never surface after a restart. Takes cq->lock.
 */
int ur_cq_clean(struct ur_cq *cq, uint32_t qp_num);
/* Pops the oldest CQE into cq->ex_cqe; 0 or -ENOENT. */
int ur_cq_pop_ex(struct ur_cq *cq);
int ur_cq_arm(struct ur_cq *cq, int solicited_only);
int ur_channel_create(struct ibv_context *ctx, struct ur_comp_channel **out);
/* -EBUSY while CQs use it. */
int ur_channel_destroy(struct ur_comp_channel *ch);
/* Blocks (unless the fd is O_NONBLOCK: -EAGAIN) for the next CQ event. */
int ur_channel_get_event(struct ur_comp_channel *ch, struct ur_cq **cq);
void ur_cq_ack_events(struct ur_cq *cq, unsigned int n);
/* Waits until every delivered async/comp event of the CQ is acked. */
void ur_cq_wait_acked(struct ur_cq *cq);

/* ------------------------------------------------------------------ */
/* srq.c */
/* ------------------------------------------------------------------ */

/* attr in: requested max_wr/max_sge; out: granted. */
int ur_srq_create(struct ur_pd *pd, void *srq_context,
		  struct ibv_srq_attr *attr, struct ur_srq **out);
/* -EBUSY while QPs use it; waits for delivered events to be acked. */
int ur_srq_destroy(struct ur_srq *srq);
int ur_srq_modify(struct ur_srq *srq, struct ibv_srq_attr *attr, int mask);
void ur_srq_query(struct ur_srq *srq, struct ibv_srq_attr *attr);
int ur_srq_post(struct ur_srq *srq, struct ibv_recv_wr *wr,
		struct ibv_recv_wr **bad);

/* ------------------------------------------------------------------ */
/* xrcd.c: XRC domains and XRC SRQs (what the engine looks up is in
 * obj.h) */
/* ------------------------------------------------------------------ */

/*
 * ibv_open_xrcd as the kernel answers it: comp_mask must hold FD and
 * OFLAGS (EINVAL), oflags only O_CREAT/O_EXCL; fd -1 opens a new private
 * domain; otherwise the domain of fd's inode on this device, opened by
 * any process of the host: EBADF for a bad fd, EAGAIN without O_CREAT
 * when none exists, EINVAL with O_EXCL when one does.
 */
int ur_xrcd_open(struct ibv_context *ctx, const struct ibv_xrcd_init_attr *a,
		 struct ur_xrcd **out);
/* -EBUSY while XRC SRQs or QPs use it. */
int ur_xrcd_close(struct ur_xrcd *xrcd);
/*
 * An XRC SRQ (ibv_create_srq_ex, IBV_SRQT_XRC): a basic SRQ on pd plus
 * its XRCD and CQ (same context), findable by its srq_num once created.
 */
int ur_srq_create_xrc(struct ur_pd *pd, struct ur_xrcd *xrcd, struct ur_cq *cq,
		      void *srq_context, struct ibv_srq_attr *attr,
		      struct ur_srq **out);

/* An ibv_open_qp handle: an ibv_qp standing for an XRC_RECV QP. */
struct ur_qp_open {
	struct ibv_qp ibqp;
	struct ur_qp *qp;
	struct ur_xrcd *xrcd;		/* opened through; held, as uverbs does */
};

static inline struct ur_qp_open *to_ur_qp_open(struct ibv_qp *ibqp)
{
	return container_of(ibqp, struct ur_qp_open, ibqp);
}

/*
 * ibv_open_qp: the XRC_RECV QP numbered qpn in xrcd's domain, counted as
 * opened once more; -EINVAL when there is none (the kernel's answer).
 */
int ur_xrc_qp_open(struct ur_xrcd *xrcd, uint32_t qpn, struct ur_qp **out);
/*
 * A handle of an XRC_RECV QP goes (opened = an ibv_open_qp one, else the
 * creator's). true: it was the last, the QP is unpublished and the caller
 * tears it down; false: other handles keep it.
 */
bool ur_xrc_qp_release(struct ur_qp *qp, bool opened);

/* ------------------------------------------------------------------ */
/* xrc_host.c: a file-backed XRC domain's host-wide registry */
/* ------------------------------------------------------------------ */

struct ur_xrc_host;
/*
 * This process joins the domain of (device, file) on the host: -EINVAL
 * with O_EXCL when a live member exists, -EAGAIN without O_CREAT when
 * none does (the kernel's answers); else -errno of the registry file.
 */
int ur_xrc_host_join(unsigned int dev_index, dev_t st_dev, ino_t st_ino,
		     int oflags, struct ur_xrc_host **out);
void ur_xrc_host_leave(struct ur_xrc_host *h);
/* Takes srqn for this process (its record in *slot): -EEXIST when a live
 * member holds it, -ENOSPC when the registry is full. */
int ur_xrc_host_srq_claim(struct ur_xrc_host *h, uint32_t srqn,
			  uint32_t *slot);
void ur_xrc_host_srq_release(struct ur_xrc_host *h, uint32_t slot);
/* Whether any live member (this process included) holds srqn; false
 * also when the registry is busy (it never waits). */
bool ur_xrc_host_srq_exists(struct ur_xrc_host *h, uint32_t srqn);
/* The path prefix of the domain's shared SRQ files (xrc_ring.c). */
const char *ur_xrc_host_ring_prefix(const struct ur_xrc_host *h);

/* ------------------------------------------------------------------ */
/* xrc_ring.c: an XRC SRQ shared with the domain's other processes */
/* ------------------------------------------------------------------ */

/* srq->lock held: the SRQ holds left WQEs now. Below an armed limit the
 * limit is disarmed and true returned: the caller then raises the event
 * with ur_srq_limit_reached() once it has let go of the lock. */
static inline bool ur_srq_limit_crossed(struct ur_srq *srq, uint64_t left)
{
	if (!srq->limit || left >= srq->limit)
		return false;
	srq->limit = 0;
	return true;
}

/* IBV_EVENT_SRQ_LIMIT_REACHED on srq (async.c). */
void ur_srq_limit_reached(struct ur_srq *srq);

/* The owner's side: the file of srq (srq->xrc_host, srq->srq_num, its
 * CQ set), published; srq->xring. -errno: the SRQ stays private. */
int ur_xring_create(struct ur_srq *srq);
/* Moves the completions waiting, withdraws the file: no copy is inside
 * after it returns. */
void ur_xring_destroy(struct ur_srq *srq);
int ur_xring_post(struct ur_srq *srq, struct ibv_recv_wr *wr,
		  struct ibv_recv_wr **bad);
int ur_xring_take_local(struct ur_srq *srq, struct ur_recv_wqe *out);
/* Moves the other processes' completions into the SRQ's CQ: how many. */
unsigned int ur_xring_drain(struct ur_srq *srq);
/* Every shared SRQ completing into cq (poll_cq; cq->lock not held). */
void ur_xring_drain_cq(struct ur_cq *cq);
/* A QP whose shared RQ's completions overran cq in a drain (once), or
 * NULL: it must fail as a responder's overrun fails it. */
struct ur_qp *ur_xring_overran(struct ur_cq *cq);
/* lkey of dev is being deregistered: the WQEs naming it fail from now
 * on, and no copy into it is inside when this returns. */
void ur_xring_mr_gone(struct ur_device *dev, uint32_t lkey);
/* The other processes' side: a domain's cache of their SRQs. */
int ur_xring_attach(struct ur_xrc_host *host, struct ur_xring **cache,
		    uint32_t srqn, struct ur_xring **out);
void ur_xring_cache_free(struct ur_xring **cache);
/* rq_ring.c: the ways of ur_qp_post_recv and ur_qp_take_recv while a
 * QP's RQ is shared (rq_lock held). */
int ur_rq_ring_post(struct ur_qp *qp, struct ibv_recv_wr **wrp,
		    struct ibv_recv_wr **bad, int *err);
int ur_rq_ring_take(struct ur_qp *qp, struct ur_recv_wqe *out);

/* ------------------------------------------------------------------ */
/* ah.c */
/* ------------------------------------------------------------------ */

int ur_ah_create(struct ur_pd *pd, const struct ibv_ah_attr *attr,
		 struct ur_ah **out);
void ur_ah_destroy(struct ur_ah *ah);
/* Fills attr from a received wc and the 40 bytes before its payload. */
int ur_ah_attr_from_grh(struct ur_device *dev, uint8_t port_num,
			const struct ibv_wc *wc, const void *grh,
			struct ibv_ah_attr *attr);

/* ------------------------------------------------------------------ */
/* async.c */
/* ------------------------------------------------------------------ */

/* Blocks (unless the fd is O_NONBLOCK: -EAGAIN) for the next event. */
int ur_async_event_get(struct ur_context *uctx, struct ibv_async_event *ev);
void ur_async_event_ack(struct ibv_async_event *ev);
/* Frees the events still queued (close_device calls it before freeing). */
void ur_async_events_drain(struct ur_context *uctx);
/*
 * Drops the not yet fetched events that name obj (an ibv_cq/qp/srq/wq
 * pointer): destroy calls it so no later ibv_get_async_event returns a
 * freed object. The eventfd keeps stale counts, which the reader skips.
 */
void ur_async_events_purge(struct ibv_context *ctx, const void *obj);
void ur_srq_wait_acked(struct ur_srq *srq);
void ur_qp_wait_acked(struct ur_qp *qp);

/* ------------------------------------------------------------------ */
/* qp.c */
/* ------------------------------------------------------------------ */

/*
 * Checks attr (comp_mask, type, caps, CQs/SRQ/PD of the same context) and
 * builds a QP in RESET with its rings. cap gets the granted capabilities.
 * The QP has no number and is not findable until ur_qp_publish().
 * Returns 0, -EINVAL, -EOPNOTSUPP or -ENOMEM.
 */
int ur_qp_create(struct ibv_context *ctx,
		 const struct ibv_qp_init_attr_ex *attr, struct ibv_qp_cap *cap,
		 struct ur_qp **out);
/* Picks a random unused QPN and inserts it in dev->qpns (obj_lock write). */
int ur_qp_publish(struct ur_qp *qp);
/* Removes it from dev->qpns (obj_lock write): no packet can reach it after. */
void ur_qp_unpublish(struct ur_qp *qp);
/* Renumbers a UD QP in RESET to QPN 1 (GSI): 0, -EINVAL or -EBUSY (gsi.c). */
int ur_qp_claim_gsi(struct ur_qp *qp);
/* Drops the PD/CQ/SRQ use counts and frees (after unpublish/engine fini). */
void ur_qp_free(struct ur_qp *qp);
/* Everything query_qp reports, whatever the mask. */
void ur_qp_query(struct ur_qp *qp, struct ibv_qp_attr *attr,
		 struct ibv_qp_init_attr *init);
/* The granted capabilities. */
void ur_qp_caps(const struct ur_qp *qp, struct ibv_qp_cap *cap);

/* ------------------------------------------------------------------ */
/* qp_state.c */
/* ------------------------------------------------------------------ */

#define UR_QPS_NUM (IBV_QPS_ERR + 1)

/* One cell of the IBA transition table; masks indexed RC, UC, UD,
 * XRC_SEND, XRC_RECV (ur_qp_type_index). */
struct ur_qp_trans {
	bool valid;
	uint32_t req[5];
	uint32_t opt[5];
};

const char *ur_qp_state_name(enum ibv_qp_state s);
/* 0 RC, 1 UC, 2 UD, -1 otherwise. */
int ur_qp_type_index(enum ibv_qp_type type);
/* The table cell, or NULL when the transition does not exist. */
const struct ur_qp_trans *ur_qp_transition(enum ibv_qp_state cur,
					   enum ibv_qp_state next);
/* Table rules only (transition, required, allowed). 0/-EINVAL/-EOPNOTSUPP. */
int ur_qp_mask_check(enum ibv_qp_type type, enum ibv_qp_state cur,
		     enum ibv_qp_state next, int mask);
/* Table rules plus every attribute value. 0/-EINVAL/-EOPNOTSUPP. */
int ur_qp_modify_check(const struct ur_qp *qp, const struct ibv_qp_attr *attr,
		       int mask);
/*
 * Validates, then applies (all or nothing); the caller holds qp->sq_lock
 * (ibv_modify_qp: ur_engine_qp_lock). On success *old_state is the state
 * before; the caller then tells the engine under the same hold.
 */
int ur_qp_modify(struct ur_qp *qp, const struct ibv_qp_attr *attr, int mask,
		 enum ibv_qp_state *old_state);
void ur_qp_attr_defaults(struct ur_qp *qp);
void ur_av_from_attr(const struct ur_device *dev, const struct ibv_ah_attr *ah,
		     struct ur_av *av);
/* wr_opcode.c: obj/wr_opcode.h (the engine reads the same table) */

/* ------------------------------------------------------------------ */
/* post.c */
/* ------------------------------------------------------------------ */

/*
 * ibv_post_send/ibv_post_recv semantics: WRs before a bad one stay posted,
 * *bad names the bad one, and the return is a positive errno or 0.
 *
 * The send side (post_send, bind_mw, the wr_* batch) runs with qp->sq_lock
 * held by the caller (asserted in debug builds), and publishes by advancing qp->sq.producer; the
 * caller rings the engine's doorbell (ur_engine_sq_kick) when it moved,
 * still holding the lock. post_recv takes qp->rq_lock itself; the caller
 * rings ur_engine_rq_kick after it when a WR was posted.
 */
int ur_qp_post_send(struct ur_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);
int ur_qp_post_recv(struct ur_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad);
/* ibv_bind_mw (type 1): queues a BIND_MW WQE; mw->rkey gets the new rkey. */
int ur_qp_bind_mw(struct ur_qp *qp, struct ibv_mw *mw,
		  const struct ibv_mw_bind *bind);
/* The post-time rules of one built WQE, whatever API built it. */
int ur_send_wqe_check(const struct ur_qp *qp, const struct ur_send_wqe *wqe);
/*
 * ibv_wr_start/complete/abort without the lock (qp->sq_lock held): begin
 * records where the batch starts; end checks every WQE of it and publishes
 * all (0) or rewinds and returns the first error (a positive errno);
 * rewind drops the batch.
 */
void ur_qp_wr_begin(struct ur_qp *qp);
int ur_qp_wr_end(struct ur_qp *qp);
void ur_qp_wr_rewind(struct ur_qp *qp);
/* Sets the ibv_qp_ex builders (wr_send .. wr_set_*); wr_start, wr_complete
 * and wr_abort are api/'s, which owns the lock and the doorbell. */
void ur_qp_init_wr_ops(struct ur_qp *qp);

#endif
