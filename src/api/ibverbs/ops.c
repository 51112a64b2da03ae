/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The context ops: every slot of ibv_context_ops and verbs_context that
 * verbs.h's inline functions (and old binaries) jump through, filled at
 * ibv_open_device from two constant tables, the way rdma-core's providers
 * fill theirs with verbs_set_ops() (its header, driver.h, is not
 * installed, so this is our own equivalent):
 *  - unsupported_ops: a function in every slot that fails with EOPNOTSUPP
 *    (rdma-core's dummy ops do the same), so no slot is ever NULL;
 *  - uroce_ops: what uroce implements, one line per verb, pointing into
 *    the file that implements it (declared in api_priv.h).
 * The exported ibv_* functions are not ops: they are defined directly.
 */
#include <errno.h>

#include "api/ibverbs/api_priv.h"

#define UR_CTX_SLOT(name) __typeof__(((struct ibv_context_ops *)0)->name) name
#define UR_VCTX_SLOT(name) __typeof__(((struct verbs_context *)0)->name) name

/* One member per slot, typed as the slot; NULL: leave the slot alone. */
struct ur_verbs_ops {
	/* struct ibv_context_ops: the data path */
	UR_CTX_SLOT(alloc_mw);
	UR_CTX_SLOT(bind_mw);
	UR_CTX_SLOT(dealloc_mw);
	UR_CTX_SLOT(poll_cq);
	UR_CTX_SLOT(req_notify_cq);
	UR_CTX_SLOT(post_srq_recv);
	UR_CTX_SLOT(post_send);
	UR_CTX_SLOT(post_recv);
	/* struct ibv_context_ops: what binaries of libibverbs 1.0 call */
	UR_CTX_SLOT(_compat_query_device);
	UR_CTX_SLOT(_compat_query_port);
	/* the other _compat_* slots, all of type void *(*)(void) */
	void *(*_compat_other)(void);
	/* struct verbs_context */
	UR_VCTX_SLOT(query_port);
	UR_VCTX_SLOT(advise_mr);
	UR_VCTX_SLOT(alloc_null_mr);
	UR_VCTX_SLOT(read_counters);
	UR_VCTX_SLOT(attach_counters_point_flow);
	UR_VCTX_SLOT(create_counters);
	UR_VCTX_SLOT(destroy_counters);
	UR_VCTX_SLOT(reg_dm_mr);
	UR_VCTX_SLOT(alloc_dm);
	UR_VCTX_SLOT(free_dm);
	UR_VCTX_SLOT(modify_flow_action_esp);
	UR_VCTX_SLOT(destroy_flow_action);
	UR_VCTX_SLOT(create_flow_action_esp);
	UR_VCTX_SLOT(modify_qp_rate_limit);
	UR_VCTX_SLOT(alloc_parent_domain);
	UR_VCTX_SLOT(dealloc_td);
	UR_VCTX_SLOT(alloc_td);
	UR_VCTX_SLOT(modify_cq);
	UR_VCTX_SLOT(post_srq_ops);
	UR_VCTX_SLOT(destroy_rwq_ind_table);
	UR_VCTX_SLOT(create_rwq_ind_table);
	UR_VCTX_SLOT(destroy_wq);
	UR_VCTX_SLOT(modify_wq);
	UR_VCTX_SLOT(create_wq);
	UR_VCTX_SLOT(query_rt_values);
	UR_VCTX_SLOT(create_cq_ex);
	UR_VCTX_SLOT(query_device_ex);
	UR_VCTX_SLOT(ibv_destroy_flow);
	UR_VCTX_SLOT(ibv_create_flow);
	UR_VCTX_SLOT(open_qp);
	UR_VCTX_SLOT(create_qp_ex);
	UR_VCTX_SLOT(get_srq_num);
	UR_VCTX_SLOT(create_srq_ex);
	UR_VCTX_SLOT(open_xrcd);
	UR_VCTX_SLOT(close_xrcd);
};

static const struct ur_verbs_ops uroce_ops = {
	/* device.c */
	._compat_query_device = ibv_query_device,
	._compat_query_port = ur_op_compat_query_port,
	.query_port = ur_op_query_port,
	.query_device_ex = ur_op_query_device_ex,
	/* verbs_pd_mr.c */
	.advise_mr = ur_op_advise_mr,
	/* verbs_mw.c */
	.alloc_mw = ur_op_alloc_mw,
	.dealloc_mw = ur_op_dealloc_mw,
	/* verbs_cq.c */
	.poll_cq = ur_op_poll_cq,
	.req_notify_cq = ur_op_req_notify_cq,
	.create_cq_ex = ur_op_create_cq_ex,
	/* verbs_srq.c */
	.create_srq_ex = ur_op_create_srq_ex,
	.post_srq_recv = ur_op_post_srq_recv,
	/* verbs_dm.c */
	.alloc_dm = ur_op_alloc_dm,
	.free_dm = ur_op_free_dm,
	.reg_dm_mr = ur_op_reg_dm_mr,
	/* verbs_domain.c */
	.alloc_td = ur_op_alloc_td,
	.dealloc_td = ur_op_dealloc_td,
	.alloc_parent_domain = ur_op_alloc_parent_domain,
	/* verbs_clock.c */
	.query_rt_values = ur_op_query_rt_values,
	/* verbs_xrc.c */
	.open_xrcd = ur_op_open_xrcd,
	.close_xrcd = ur_op_close_xrcd,
	.get_srq_num = ur_op_get_srq_num,
	/* verbs_qp.c */
	.create_qp_ex = ur_op_create_qp_ex,
	.open_qp = ur_op_open_qp,
	/* verbs_post.c */
	.post_send = ur_op_post_send,
	.post_recv = ur_op_post_recv,
	.bind_mw = ur_op_bind_mw,
};

/* ------------------------------------------------------------------ */
/* The defaults: EOPNOTSUPP, the verb's way                             */
/* ------------------------------------------------------------------ */

/* pointer verbs: NULL with errno */
#define UR_NO_PTR(ret, name, ...)                                              \
	static ret *no_##name(__VA_ARGS__)                                     \
	{                                                                      \
		errno = EOPNOTSUPP;                                            \
		return NULL;                                                   \
	}
/* int verbs: the errno value */
#define UR_NO_INT(name, ...)                                                   \
	static int no_##name(__VA_ARGS__)                                      \
	{                                                                      \
		return EOPNOTSUPP;                                             \
	}

UR_NO_PTR(struct ibv_mw, alloc_mw, struct ibv_pd *pd, enum ibv_mw_type type)
UR_NO_INT(bind_mw, struct ibv_qp *qp, struct ibv_mw *mw,
	  struct ibv_mw_bind *bind)
UR_NO_INT(dealloc_mw, struct ibv_mw *mw)
UR_NO_INT(req_notify_cq, struct ibv_cq *cq, int solicited_only)
UR_NO_INT(query_device, struct ibv_context *ctx, struct ibv_device_attr *a)
UR_NO_INT(compat_query_port, struct ibv_context *ctx, uint8_t port,
	  struct _compat_ibv_port_attr *a)
UR_NO_INT(query_port, struct ibv_context *ctx, uint8_t port,
	  struct ibv_port_attr *a, size_t len)
UR_NO_INT(advise_mr, struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
	  uint32_t flags, struct ibv_sge *sg, uint32_t num_sge)
UR_NO_PTR(struct ibv_mr, alloc_null_mr, struct ibv_pd *pd)
UR_NO_INT(read_counters, struct ibv_counters *c, uint64_t *values,
	  uint32_t n, uint32_t flags)
UR_NO_INT(attach_counters_point_flow, struct ibv_counters *c,
	  struct ibv_counter_attach_attr *a, struct ibv_flow *flow)
UR_NO_PTR(struct ibv_counters, create_counters, struct ibv_context *ctx,
	  struct ibv_counters_init_attr *a)
UR_NO_INT(destroy_counters, struct ibv_counters *c)
UR_NO_PTR(struct ibv_mr, reg_dm_mr, struct ibv_pd *pd, struct ibv_dm *dm,
	  uint64_t off, size_t len, unsigned int access)
UR_NO_PTR(struct ibv_dm, alloc_dm, struct ibv_context *ctx,
	  struct ibv_alloc_dm_attr *a)
UR_NO_INT(free_dm, struct ibv_dm *dm)
UR_NO_INT(modify_flow_action_esp, struct ibv_flow_action *action,
	  struct ibv_flow_action_esp_attr *a)
UR_NO_INT(destroy_flow_action, struct ibv_flow_action *action)
UR_NO_PTR(struct ibv_flow_action, create_flow_action_esp,
	  struct ibv_context *ctx, struct ibv_flow_action_esp_attr *a)
UR_NO_INT(modify_qp_rate_limit, struct ibv_qp *qp,
	  struct ibv_qp_rate_limit_attr *a)
UR_NO_PTR(struct ibv_pd, alloc_parent_domain, struct ibv_context *ctx,
	  struct ibv_parent_domain_init_attr *a)
UR_NO_INT(dealloc_td, struct ibv_td *td)
UR_NO_PTR(struct ibv_td, alloc_td, struct ibv_context *ctx,
	  struct ibv_td_init_attr *a)
UR_NO_INT(modify_cq, struct ibv_cq *cq, struct ibv_modify_cq_attr *a)
UR_NO_INT(destroy_rwq_ind_table, struct ibv_rwq_ind_table *t)
UR_NO_PTR(struct ibv_rwq_ind_table, create_rwq_ind_table,
	  struct ibv_context *ctx, struct ibv_rwq_ind_table_init_attr *a)
UR_NO_INT(destroy_wq, struct ibv_wq *wq)
UR_NO_INT(modify_wq, struct ibv_wq *wq, struct ibv_wq_attr *a)
UR_NO_PTR(struct ibv_wq, create_wq, struct ibv_context *ctx,
	  struct ibv_wq_init_attr *a)
UR_NO_INT(query_rt_values, struct ibv_context *ctx, struct ibv_values_ex *v)
UR_NO_PTR(struct ibv_cq_ex, create_cq_ex, struct ibv_context *ctx,
	  struct ibv_cq_init_attr_ex *a)
UR_NO_INT(query_device_ex, struct ibv_context *ctx,
	  const struct ibv_query_device_ex_input *in,
	  struct ibv_device_attr_ex *a, size_t len)
UR_NO_INT(destroy_flow, struct ibv_flow *flow)
UR_NO_PTR(struct ibv_flow, create_flow, struct ibv_qp *qp,
	  struct ibv_flow_attr *a)
UR_NO_PTR(struct ibv_qp, open_qp, struct ibv_context *ctx,
	  struct ibv_qp_open_attr *a)
UR_NO_PTR(struct ibv_qp, create_qp_ex, struct ibv_context *ctx,
	  struct ibv_qp_init_attr_ex *a)
UR_NO_INT(get_srq_num, struct ibv_srq *srq, uint32_t *srq_num)
UR_NO_PTR(struct ibv_srq, create_srq_ex, struct ibv_context *ctx,
	  struct ibv_srq_init_attr_ex *a)
UR_NO_PTR(struct ibv_xrcd, open_xrcd, struct ibv_context *ctx,
	  struct ibv_xrcd_init_attr *a)
UR_NO_INT(close_xrcd, struct ibv_xrcd *xrcd)

/* poll_cq reports errors as negative values (a positive one is a count) */
static int no_poll_cq(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc)
{
	return -EOPNOTSUPP;
}

/* the post verbs name the first WR that was not posted */
static int no_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
			struct ibv_send_wr **bad)
{
	*bad = wr;
	return EOPNOTSUPP;
}

static int no_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	*bad = wr;
	return EOPNOTSUPP;
}

static int no_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			    struct ibv_recv_wr **bad)
{
	*bad = wr;
	return EOPNOTSUPP;
}

static int no_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
			   struct ibv_ops_wr **bad)
{
	*bad = op;
	return EOPNOTSUPP;
}

static void *no_compat_other(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static const struct ur_verbs_ops unsupported_ops = {
	.alloc_mw = no_alloc_mw,
	.bind_mw = no_bind_mw,
	.dealloc_mw = no_dealloc_mw,
	.poll_cq = no_poll_cq,
	.req_notify_cq = no_req_notify_cq,
	.post_srq_recv = no_post_srq_recv,
	.post_send = no_post_send,
	.post_recv = no_post_recv,
	._compat_query_device = no_query_device,
	._compat_query_port = no_compat_query_port,
	._compat_other = no_compat_other,
	.query_port = no_query_port,
	.advise_mr = no_advise_mr,
	.alloc_null_mr = no_alloc_null_mr,
	.read_counters = no_read_counters,
	.attach_counters_point_flow = no_attach_counters_point_flow,
	.create_counters = no_create_counters,
	.destroy_counters = no_destroy_counters,
	.reg_dm_mr = no_reg_dm_mr,
	.alloc_dm = no_alloc_dm,
	.free_dm = no_free_dm,
	.modify_flow_action_esp = no_modify_flow_action_esp,
	.destroy_flow_action = no_destroy_flow_action,
	.create_flow_action_esp = no_create_flow_action_esp,
	.modify_qp_rate_limit = no_modify_qp_rate_limit,
	.alloc_parent_domain = no_alloc_parent_domain,
	.dealloc_td = no_dealloc_td,
	.alloc_td = no_alloc_td,
	.modify_cq = no_modify_cq,
	.post_srq_ops = no_post_srq_ops,
	.destroy_rwq_ind_table = no_destroy_rwq_ind_table,
	.create_rwq_ind_table = no_create_rwq_ind_table,
	.destroy_wq = no_destroy_wq,
	.modify_wq = no_modify_wq,
	.create_wq = no_create_wq,
	.query_rt_values = no_query_rt_values,
	.create_cq_ex = no_create_cq_ex,
	.query_device_ex = no_query_device_ex,
	.ibv_destroy_flow = no_destroy_flow,
	.ibv_create_flow = no_create_flow,
	.open_qp = no_open_qp,
	.create_qp_ex = no_create_qp_ex,
	.get_srq_num = no_get_srq_num,
	.create_srq_ex = no_create_srq_ex,
	.open_xrcd = no_open_xrcd,
	.close_xrcd = no_close_xrcd,
};

/* ------------------------------------------------------------------ */

#define UR_SET(dst, name)                                                      \
	do {                                                                   \
		if (ops->name)                                                 \
			(dst)->name = ops->name;                               \
	} while (0)

static void set_compat_others(struct ibv_context_ops *c,
			      void *(*fn)(void))
{
	c->_compat_alloc_pd = fn;
	c->_compat_dealloc_pd = fn;
	c->_compat_reg_mr = fn;
	c->_compat_rereg_mr = fn;
	c->_compat_dereg_mr = fn;
	c->_compat_create_cq = fn;
	c->_compat_cq_event = fn;
	c->_compat_resize_cq = fn;
	c->_compat_destroy_cq = fn;
	c->_compat_create_srq = fn;
	c->_compat_modify_srq = fn;
	c->_compat_query_srq = fn;
	c->_compat_destroy_srq = fn;
	c->_compat_create_qp = fn;
	c->_compat_query_qp = fn;
	c->_compat_modify_qp = fn;
	c->_compat_destroy_qp = fn;
	c->_compat_create_ah = fn;
	c->_compat_destroy_ah = fn;
	c->_compat_attach_mcast = fn;
	c->_compat_detach_mcast = fn;
	c->_compat_async_event = fn;
}

/* Copies every non-NULL entry of ops into its slot (verbs_set_ops()). */
static void set_ops(struct verbs_context *vctx, const struct ur_verbs_ops *ops)
{
	struct ibv_context_ops *c = &vctx->context.ops;

	UR_SET(c, alloc_mw);
	UR_SET(c, bind_mw);
	UR_SET(c, dealloc_mw);
	UR_SET(c, poll_cq);
	UR_SET(c, req_notify_cq);
	UR_SET(c, post_srq_recv);
	UR_SET(c, post_send);
	UR_SET(c, post_recv);
	UR_SET(c, _compat_query_device);
	UR_SET(c, _compat_query_port);
	if (ops->_compat_other)
		set_compat_others(c, ops->_compat_other);
	UR_SET(vctx, query_port);
	UR_SET(vctx, advise_mr);
	UR_SET(vctx, alloc_null_mr);
	UR_SET(vctx, read_counters);
	UR_SET(vctx, attach_counters_point_flow);
	UR_SET(vctx, create_counters);
	UR_SET(vctx, destroy_counters);
	UR_SET(vctx, reg_dm_mr);
	UR_SET(vctx, alloc_dm);
	UR_SET(vctx, free_dm);
	UR_SET(vctx, modify_flow_action_esp);
	UR_SET(vctx, destroy_flow_action);
	UR_SET(vctx, create_flow_action_esp);
	UR_SET(vctx, modify_qp_rate_limit);
	UR_SET(vctx, alloc_parent_domain);
	UR_SET(vctx, dealloc_td);
	UR_SET(vctx, alloc_td);
	UR_SET(vctx, modify_cq);
	UR_SET(vctx, post_srq_ops);
	UR_SET(vctx, destroy_rwq_ind_table);
	UR_SET(vctx, create_rwq_ind_table);
	UR_SET(vctx, destroy_wq);
	UR_SET(vctx, modify_wq);
	UR_SET(vctx, create_wq);
	UR_SET(vctx, query_rt_values);
	UR_SET(vctx, create_cq_ex);
	UR_SET(vctx, query_device_ex);
	UR_SET(vctx, ibv_destroy_flow);
	UR_SET(vctx, ibv_create_flow);
	UR_SET(vctx, open_qp);
	UR_SET(vctx, create_qp_ex);
	UR_SET(vctx, get_srq_num);
	UR_SET(vctx, create_srq_ex);
	UR_SET(vctx, open_xrcd);
	UR_SET(vctx, close_xrcd);
}

void ur_api_install_ops(struct verbs_context *vctx)
{
	set_ops(vctx, &unsupported_ops);
	set_ops(vctx, &uroce_ops);
}
