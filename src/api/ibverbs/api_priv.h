/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of libibverbs.so.1 shared between the files of api/ibverbs.
 * The exported ibv_* functions are defined across device.c (devices,
 * contexts, queries), one file per kind of object: verbs_pd_mr.c (PD, MR),
 * verbs_mw.c (MW), verbs_cq.c (CQ, ibv_cq_ex polling, completion
 * channels), verbs_srq.c (SRQ), verbs_ah.c (AH), verbs_async.c (async
 * events), verbs_dm.c (device memory), verbs_domain.c (thread and parent
 * domains), verbs_clock.c (device clock), verbs_qp.c (QP life cycle, ECE),
 * verbs_xrc.c (XRC domains and SRQs), verbs_mcast.c (multicast),
 * verbs_post.c (posting, ibv_wr_*), misc.c and compat.c (helpers,
 * IBVERBS_1.0 versions) and stubs.c (symbols that exist so binaries load
 * and that return EOPNOTSUPP); ops.c installs the context ops.
 *
 * obj/ checks and applies (0/-errno); these files translate to each verb's
 * convention (man pages):
 *  - pointer verbs: NULL with errno set (ur_api_ptr);
 *  - int verbs: 0 or a positive errno value (ur_api_ret);
 *  - ibv_get_cq_event/ibv_get_async_event/ibv_init_ah_from_wc: 0 or -1
 *    with errno set;
 *  - ibv_rereg_mr: 0 or an enum ibv_rereg_mr_err_code, errno set;
 *  - poll_cq: count or a negative value.
 */
#ifndef UR_API_IBVERBS_PRIV_H
#define UR_API_IBVERBS_PRIV_H

#include <errno.h>
#include <infiniband/verbs.h>

#include "obj/obj_priv.h"

/*
 * ops.c: fills every slot of ibv_context_ops and verbs_context that the
 * inline verbs of verbs.h jump through (open_device calls it once).
 */
void ur_api_install_ops(struct verbs_context *vctx);

/*
 * The ops uroce implements, each in the file of its objects; ops.c's
 * table points the slots at them. Each follows its verb's convention.
 */
/* device.c */
int ur_op_query_device_ex(struct ibv_context *context,
			  const struct ibv_query_device_ex_input *input,
			  struct ibv_device_attr_ex *attr, size_t attr_size);
int ur_op_query_port(struct ibv_context *context, uint8_t port_num,
		     struct ibv_port_attr *port_attr, size_t port_attr_len);
int ur_op_compat_query_port(struct ibv_context *context, uint8_t port_num,
			    struct _compat_ibv_port_attr *port_attr);
/* verbs_pd_mr.c */
int ur_op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg, uint32_t num_sge);
/* verbs_mw.c */
struct ibv_mw *ur_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int ur_op_dealloc_mw(struct ibv_mw *mw);
/* verbs_cq.c */
int ur_op_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc);
int ur_op_req_notify_cq(struct ibv_cq *ibcq, int solicited_only);
struct ibv_cq_ex *ur_op_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr);
/* verbs_srq.c */
struct ibv_srq *ur_op_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr);
int ur_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad);
/* verbs_dm.c */
struct ibv_dm *ur_op_alloc_dm(struct ibv_context *ctx,
			      struct ibv_alloc_dm_attr *attr);
int ur_op_free_dm(struct ibv_dm *dm);
struct ibv_mr *ur_op_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
			       uint64_t off, size_t len, unsigned int access);
/* verbs_domain.c */
struct ibv_td *ur_op_alloc_td(struct ibv_context *ctx,
			      struct ibv_td_init_attr *attr);
int ur_op_dealloc_td(struct ibv_td *td);
struct ibv_pd *
ur_op_alloc_parent_domain(struct ibv_context *ctx,
			  struct ibv_parent_domain_init_attr *attr);
/* verbs_clock.c */
int ur_op_query_rt_values(struct ibv_context *ctx,
			  struct ibv_values_ex *values);
/* verbs_qp.c */
/* verbs_xrc.c */
struct ibv_xrcd *ur_op_open_xrcd(struct ibv_context *ctx,
				 struct ibv_xrcd_init_attr *attr);
int ur_op_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_srq *ur_api_create_xrc_srq(struct ibv_context *ctx,
				      struct ibv_srq_init_attr_ex *attr);
int ur_op_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_qp *ur_op_open_qp(struct ibv_context *ctx,
			     struct ibv_qp_open_attr *attr);
struct ibv_qp *ur_op_create_qp_ex(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr);
/* verbs_post.c */
int ur_op_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad);
int ur_op_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad);
int ur_op_bind_mw(struct ibv_qp *ibqp, struct ibv_mw *mw,
		  struct ibv_mw_bind *bind);
/* ibv_wr_start/complete/abort for a QP created with send_ops_flags (obj/
 * sets the builders; these hold the lock and ring the doorbell). */
void ur_api_init_wr_batch_ops(struct ur_qp *qp);

/* A pointer verb's return from obj/'s 0/-errno: p, or NULL with errno set. */
static inline void *ur_api_ptr(int err, void *p)
{
	if (err) {
		errno = -err;
		return NULL;
	}
	return p;
}

/*
 * An int verb's return from obj/'s 0/-errno: 0, or the positive errno
 * value with errno set to it as well (rdma-core sets both).
 */
static inline int ur_api_ret(int err)
{
	if (!err)
		return 0;
	errno = -err;
	return -err;
}

/*
 * Ends a destroy begun with ur_live_take(): the object is forgotten when
 * err is 0, visible again when the destroy refused (e.g. -EBUSY).
 */
static inline int ur_api_destroyed(const void *obj, int err)
{
	if (err)
		ur_live_restore(obj);
	else
		ur_live_drop(obj);
	return ur_api_ret(err);
}

/* Records a new object in the live registry (limits, handle checks). */
static inline int ur_api_track(struct ibv_context *ctx, enum ur_obj_kind kind,
			       const void *obj, uint32_t handle)
{
	return ur_live_add(ur_ctx_dev(ctx), kind, obj, ctx, handle);
}

#endif
