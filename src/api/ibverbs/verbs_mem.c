/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exported verbs of PDs, MRs, MWs, CQs, completion channels, SRQs, AHs
 * and async events, and the context ops that verbs.h's inline functions
 * jump through for them. obj/ checks and applies (0/-errno); this file
 * only translates to each verb's convention (man pages):
 *  - pointer verbs: NULL with errno set;
 *  - int verbs: 0 or a positive errno value;
 *  - ibv_get_cq_event/ibv_get_async_event/ibv_init_ah_from_wc: 0 or -1
 *    with errno set;
 *  - ibv_rereg_mr: 0 or an enum ibv_rereg_mr_err_code, errno set;
 *  - poll_cq: count or a negative value.
 * A poll that finds its CQ empty lets the engine process what has arrived
 * once (ur_engine_poll) and looks again, so an application that polls
 * drives progress itself without waiting for the progress thread.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

static inline void *ptr_or_errno(int err, void *p)
{
	if (err) {
		errno = -err;
		return NULL;
	}
	return p;
}

/* ------------------------------------------------------------------ */
/* PD                                                                   */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct ur_pd *pd = NULL;
	int err = ur_pd_alloc(context, &pd);

	if (!err) {
		err = ur_api_track(context, UR_OBJ_PD, &pd->ibpd,
				   pd->ibpd.handle);
		if (err)
			ur_pd_free(pd);
	}
	return ptr_or_errno(err, err ? NULL : &pd->ibpd);
}

UR_EXPORT int ibv_dealloc_pd(struct ibv_pd *pd)
{
	int err = ur_live_take(UR_OBJ_PD, pd);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(pd, ur_pd_free(to_ur_pd(pd)));
}

/* ------------------------------------------------------------------ */
/* MR                                                                   */
/* ------------------------------------------------------------------ */

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr,
					  size_t length, uint64_t iova,
					  unsigned int access)
{
	struct ur_mr *mr = NULL;
	int err;

	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_mr_reg(to_ur_pd(pd), addr, length, iova, access, &mr);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_MR, &mr->ibmr,
				   mr->ibmr.handle);
		if (err)
			ur_mr_dereg(mr);
	}
	return ptr_or_errno(err, err ? NULL : &mr->ibmr);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr,
				    size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr,
				(unsigned int)access);
}

UR_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr,
					 size_t length, uint64_t iova,
					 int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned int)access);
}

/*
 * rdma-core's split: what libibverbs itself checks before asking the
 * kernel (unknown or no flags, a translation without address or length, a
 * PD change without a PD) is IBV_REREG_MR_ERR_INPUT; everything the kernel
 * refuses, permissions included (remote write without local write), is
 * IBV_REREG_MR_ERR_CMD. errno is set either way; the MR is unchanged.
 */
UR_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd,
			   void *addr, size_t length, int access)
{
	int err;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED) ||
	    ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) && (!addr || !length)) ||
	    ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)) {
		errno = EINVAL;
		return IBV_REREG_MR_ERR_INPUT;
	}
	err = ur_live_check(UR_OBJ_MR, mr);
	if (!err && (flags & IBV_REREG_MR_CHANGE_PD))
		err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_mr_rereg(to_ur_mr(mr), flags,
				  pd ? to_ur_pd(pd) : NULL, addr, length,
				  (unsigned int)access);
	if (!err)
		return 0;
	errno = -err;
	return IBV_REREG_MR_ERR_CMD;
}

UR_EXPORT int ibv_dereg_mr(struct ibv_mr *mr)
{
	int err = ur_live_take(UR_OBJ_MR, mr);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(mr, ur_mr_dereg(to_ur_mr(mr)));
}

/* ------------------------------------------------------------------ */
/* MW (binding a window queues a BIND_MW WQE: verbs_post.c)            */
/* ------------------------------------------------------------------ */

struct ibv_mw *ur_op_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct ur_mw *mw = NULL;
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (!err)
		err = ur_mw_alloc(to_ur_pd(pd), type, &mw);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_MW, &mw->ibmw,
				   mw->ibmw.handle);
		if (err)
			ur_mw_dealloc(mw);
	}
	return ptr_or_errno(err, err ? NULL : &mw->ibmw);
}

int ur_op_dealloc_mw(struct ibv_mw *mw)
{
	int err = ur_live_take(UR_OBJ_MW, mw);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(mw, ur_mw_dealloc(to_ur_mw(mw)));
}

int ur_op_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
		    uint32_t flags, struct ibv_sge *sg, uint32_t num_sge)
{
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (!err)
		err = ur_mr_advise(to_ur_pd(pd), (int)advice, flags, sg,
				   num_sge);
	return ur_api_ret(err);
}

/* ------------------------------------------------------------------ */
/* CQ                                                                   */
/* ------------------------------------------------------------------ */

/* A successful WRITE, READ or atomic of ours (ur_engine_poll_done()). */
static bool wc_one_sided(const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_SUCCESS)
		return false;
	switch (wc->opcode) {
	case IBV_WC_RDMA_WRITE:
	case IBV_WC_RDMA_READ:
	case IBV_WC_COMP_SWAP:
	case IBV_WC_FETCH_ADD:
	case IBV_WC_ATOMIC_WRITE:
		return true;
	default:
		return false;
	}
}

int ur_op_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct ur_cq *cq = to_ur_cq(ibcq);
	int got;

	if (n < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	got = ur_cq_poll(cq, n, wc);
	if (!got && n) {
		ur_engine_poll(ur_ctx_dev(ibcq->context));
		got = ur_cq_poll(cq, n, wc);
	}
	if (got > 0) {
		bool one_sided = false;

		for (int i = 0; i < got && !one_sided; i++)
			one_sided = wc_one_sided(&wc[i]);
		ur_engine_poll_done(ur_ctx_dev(ibcq->context), one_sided);
	}
	return got;
}

int ur_op_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	return ur_api_ret(ur_cq_arm(to_ur_cq(ibcq), solicited_only));
}

static struct ur_cq *ex_cq(struct ibv_cq_ex *c)
{
	return to_ur_cq_ex(c);
}

static int ex_fill(struct ur_cq *cq)
{
	cq->ibcq_ex.status = cq->ex_cqe.wc.status;
	cq->ibcq_ex.wr_id = cq->ex_cqe.wc.wr_id;
	return 0;
}

static int ex_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct ur_cq *cq = ex_cq(c);

	if (attr && attr->comp_mask)
		return ur_api_ret(-EINVAL);
	if (ur_cq_pop_ex(cq)) {
		ur_engine_poll(ur_ctx_dev(c->context));
		if (ur_cq_pop_ex(cq))
			return ENOENT;
	}
	ur_engine_poll_done(ur_ctx_dev(c->context),
			    wc_one_sided(&cq->ex_cqe.wc));
	return ex_fill(cq);
}

static int ex_next_poll(struct ibv_cq_ex *c)
{
	struct ur_cq *cq = ex_cq(c);

	if (ur_cq_pop_ex(cq))
		return ENOENT;
	return ex_fill(cq);
}

static void ex_end_poll(struct ibv_cq_ex *c)
{
	/* every entry was consumed when it was read */
}

static enum ibv_wc_opcode ex_read_opcode(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.opcode;
}

static uint32_t ex_read_vendor_err(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.vendor_err;
}

static uint32_t ex_read_byte_len(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.byte_len;
}

static __be32 ex_read_imm_data(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.imm_data;	/* or invalidated_rkey */
}

static uint32_t ex_read_qp_num(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.qp_num;
}

static uint32_t ex_read_src_qp(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.src_qp;
}

static unsigned int ex_read_wc_flags(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.wc_flags;
}

static uint32_t ex_read_slid(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.slid;
}

static uint8_t ex_read_sl(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.sl;
}

static uint8_t ex_read_dlid_path_bits(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wc.dlid_path_bits;
}

static uint64_t ex_read_completion_ts(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.ts_ns;
}

static uint16_t ex_read_cvlan(struct ibv_cq_ex *c)
{
	return 0;
}

static uint32_t ex_read_flow_tag(struct ibv_cq_ex *c)
{
	return 0;
}

static void ex_read_tm_info(struct ibv_cq_ex *c, struct ibv_wc_tm_info *tm)
{
	memset(tm, 0, sizeof(*tm));
}

static uint64_t ex_read_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	return ex_cq(c)->ex_cqe.wall_ns;
}

static void cq_set_ex_ops(struct ibv_cq_ex *c)
{
	c->start_poll = ex_start_poll;
	c->next_poll = ex_next_poll;
	c->end_poll = ex_end_poll;
	c->read_opcode = ex_read_opcode;
	c->read_vendor_err = ex_read_vendor_err;
	c->read_byte_len = ex_read_byte_len;
	c->read_imm_data = ex_read_imm_data;
	c->read_qp_num = ex_read_qp_num;
	c->read_src_qp = ex_read_src_qp;
	c->read_wc_flags = ex_read_wc_flags;
	c->read_slid = ex_read_slid;
	c->read_sl = ex_read_sl;
	c->read_dlid_path_bits = ex_read_dlid_path_bits;
	c->read_completion_ts = ex_read_completion_ts;
	c->read_cvlan = ex_read_cvlan;
	c->read_flow_tag = ex_read_flow_tag;
	c->read_tm_info = ex_read_tm_info;
	c->read_completion_wallclock_ns = ex_read_completion_wallclock_ns;
}

struct ibv_cq_ex *ur_op_create_cq_ex(struct ibv_context *context,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct ur_cq *cq = NULL;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = attr->channel ? ur_live_check(UR_OBJ_CHANNEL, attr->channel) : 0;
	if (!err && (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD))
		err = ur_live_check(UR_OBJ_PD, attr->parent_domain);
	if (!err)
		err = ur_cq_create(context, attr, &cq);
	if (!err) {
		err = ur_api_track(context, UR_OBJ_CQ, &cq->ibcq,
				   cq->ibcq.handle);
		if (err)
			ur_cq_destroy(cq);
	}
	if (err) {
		errno = -err;
		return NULL;
	}
	cq_set_ex_ops(&cq->ibcq_ex);
	return &cq->ibcq_ex;
}

UR_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
				       void *cq_context,
				       struct ibv_comp_channel *channel,
				       int comp_vector)
{
	struct ibv_cq_init_attr_ex attr = {
		.cqe = cqe > 0 ? (uint32_t)cqe : 0,
		.cq_context = cq_context,
		.channel = channel,
		.comp_vector = comp_vector >= 0 ? (uint32_t)comp_vector :
						  UINT32_MAX,
	};
	struct ibv_cq_ex *c = ur_op_create_cq_ex(context, &attr);

	return c ? ibv_cq_ex_to_cq(c) : NULL;
}

UR_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	int err = ur_live_check(UR_OBJ_CQ, cq);

	if (!err)
		err = ur_cq_resize(to_ur_cq(cq), cqe);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_destroy_cq(struct ibv_cq *cq)
{
	int err = ur_live_take(UR_OBJ_CQ, cq);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(cq, ur_cq_destroy(to_ur_cq(cq)));
}

/* ------------------------------------------------------------------ */
/* Completion channels                                                  */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_comp_channel *
ibv_create_comp_channel(struct ibv_context *context)
{
	struct ur_comp_channel *ch = NULL;
	int err = ur_channel_create(context, &ch);

	if (!err) {
		err = ur_api_track(context, UR_OBJ_CHANNEL, &ch->ibch, 0);
		if (err)
			ur_channel_destroy(ch);
	}
	return ptr_or_errno(err, err ? NULL : &ch->ibch);
}

UR_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	int err = ur_live_take(UR_OBJ_CHANNEL, channel);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(channel,
				ur_channel_destroy(to_ur_channel(channel)));
}

UR_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel,
			       struct ibv_cq **cq, void **cq_context)
{
	struct ur_cq *ucq;
	int err = ur_live_check(UR_OBJ_CHANNEL, channel);

	if (!err)
		err = ur_channel_get_event(to_ur_channel(channel), &ucq);

	if (err) {
		errno = -err;
		return -1;
	}
	*cq = &ucq->ibcq;
	if (cq_context)
		*cq_context = ucq->ibcq.cq_context;
	return 0;
}

UR_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (ur_live_check(UR_OBJ_CQ, cq))
		return;		/* no error to report: nothing acked */
	ur_cq_ack_events(to_ur_cq(cq), nevents);
}

/* ------------------------------------------------------------------ */
/* SRQ                                                                  */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
					 struct ibv_srq_init_attr *attr)
{
	struct ur_srq *srq = NULL;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_srq_create(to_ur_pd(pd), attr->srq_context,
				    &attr->attr, &srq);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_SRQ, &srq->ibsrq,
				   srq->ibsrq.handle);
		if (err)
			ur_srq_destroy(srq);
	}
	return ptr_or_errno(err, err ? NULL : &srq->ibsrq);
}

struct ibv_srq *ur_op_create_srq_ex(struct ibv_context *context,
				    struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t basic = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE;

	if (attr->comp_mask & ~(uint32_t)(basic | IBV_SRQ_INIT_ATTR_XRCD |
					  IBV_SRQ_INIT_ATTR_CQ |
					  IBV_SRQ_INIT_ATTR_TM)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	    attr->srq_type == IBV_SRQT_XRC)
		return ur_api_create_xrc_srq(context, attr);
	if ((attr->comp_mask & ~basic) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     attr->srq_type != IBV_SRQT_BASIC)) {
		errno = EOPNOTSUPP;	/* tag matching; XRC fields on a basic */
		return NULL;
	}
	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    ur_live_check(UR_OBJ_PD, attr->pd) ||
	    attr->pd->context != context) {
		errno = EINVAL;
		return NULL;
	}
	return ibv_create_srq(attr->pd, (struct ibv_srq_init_attr *)attr);
}

UR_EXPORT int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			     int mask)
{
	int err = ur_live_check(UR_OBJ_SRQ, srq);

	if (!err && !attr)
		err = -EINVAL;
	if (!err)
		err = ur_srq_modify(to_ur_srq(srq), attr, mask);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	int err = ur_live_check(UR_OBJ_SRQ, srq);

	if (!err && !attr)
		err = -EINVAL;
	if (!err)
		ur_srq_query(to_ur_srq(srq), attr);
	return ur_api_ret(err);
}

UR_EXPORT int ibv_destroy_srq(struct ibv_srq *srq)
{
	int err = ur_live_take(UR_OBJ_SRQ, srq);

	if (err)
		return ur_api_ret(err);
	return ur_api_destroyed(srq, ur_srq_destroy(to_ur_srq(srq)));
}

int ur_op_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad)
{
	return ur_api_ret(ur_srq_post(to_ur_srq(srq), wr, bad));
}

/* ------------------------------------------------------------------ */
/* AH                                                                   */
/* ------------------------------------------------------------------ */

UR_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd,
				       struct ibv_ah_attr *attr)
{
	struct ur_ah *ah = NULL;
	int err;

	if (!attr) {
		errno = EINVAL;
		return NULL;
	}
	err = ur_live_check(UR_OBJ_PD, pd);
	if (!err)
		err = ur_ah_create(to_ur_pd(pd), attr, &ah);
	if (!err) {
		err = ur_api_track(pd->context, UR_OBJ_AH, &ah->ibah,
				   ah->ibah.handle);
		if (err)
			ur_ah_destroy(ah);
	}
	return ptr_or_errno(err, err ? NULL : &ah->ibah);
}

UR_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	int err = ur_live_take(UR_OBJ_AH, ah);

	if (err)
		return ur_api_ret(err);
	ur_ah_destroy(to_ur_ah(ah));
	return ur_api_destroyed(ah, 0);
}

UR_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context,
				  uint8_t port_num, struct ibv_wc *wc,
				  struct ibv_grh *grh,
				  struct ibv_ah_attr *ah_attr)
{
	int err = ur_ah_attr_from_grh(ur_ctx_dev(context), port_num, wc, grh,
				      ah_attr);

	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

UR_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd,
					       struct ibv_wc *wc,
					       struct ibv_grh *grh,
					       uint8_t port_num)
{
	struct ibv_ah_attr attr;
	int err = ur_live_check(UR_OBJ_PD, pd);

	if (err) {
		errno = -err;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &attr))
		return NULL;
	return ibv_create_ah(pd, &attr);
}

/* ------------------------------------------------------------------ */
/* Async events                                                         */
/* ------------------------------------------------------------------ */

UR_EXPORT int ibv_get_async_event(struct ibv_context *context,
				  struct ibv_async_event *event)
{
	int err = ur_async_event_get(to_ur_context(context), event);

	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}

UR_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	ur_async_event_ack(event);
}

/* ------------------------------------------------------------------ */
