/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * CQs and completion channels: the exported verbs and the ops that
 * verbs.h's inline functions jump through (poll_cq, req_notify_cq,
 * create_cq_ex and the ibv_cq_ex polling functions it installs). poll_cq
 * returns a count or a negative value; ibv_get_cq_event 0 or -1 with errno
 * set. A poll that finds its CQ empty lets the engine process what has
 * arrived once (ur_engine_poll) and looks again, so an application that
 * polls drives progress itself without waiting for the progress thread.
 */
#include <errno.h>
#include <string.h>

#include "api/ibverbs/api_priv.h"
#include "engine/engine.h"
#include "obj/obj_priv.h"
#include "util/compiler.h"

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

/* Moves other processes' completions in (shared XRC SRQs and RQs:
 * obj/xrc_ring.c); a QP whose CQ they overran fails, as a responder's. */
static void cq_rings(struct ur_cq *cq)
{
	struct ur_qp *qp;

	ur_xring_drain_cq(cq);
	while ((qp = ur_xring_overran(cq)))
		ur_engine_rq_overrun(qp);
}

int ur_op_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct ur_cq *cq = to_ur_cq(ibcq);
	int got;

	if (n < 0) {
		errno = EINVAL;
		return -EINVAL;
	}
	/* completions other processes made for our shared XRC SRQs, and
	 * same-host peers' SENDs into our shared RQs (obj/rq_ring.c) */
	if (atomic_load_explicit(&cq->xrings, memory_order_relaxed))
		cq_rings(cq);
	got = ur_cq_poll(cq, n, wc);
	if (!got && n) {
		ur_engine_poll_cq(ur_ctx_dev(ibcq->context), cq);
		/* a peer's copy may have landed meanwhile */
		if (atomic_load_explicit(&cq->xrings, memory_order_relaxed))
			cq_rings(cq);
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
	int err = ur_cq_arm(to_ur_cq(ibcq), solicited_only);

	/* an armed CQ is waited on next (rsockets poll()s the channel's fd
	 * without calling ibv_get_cq_event first) */
	if (!err)
		ur_engine_event_wait(ur_ctx_dev(ibcq->context));
	return ur_api_ret(err);
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
	if (atomic_load_explicit(&cq->xrings, memory_order_relaxed))
		cq_rings(cq);
	if (ur_cq_pop_ex(cq)) {
		ur_engine_poll_cq(ur_ctx_dev(c->context), cq);
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
	return ur_api_ptr(err, err ? NULL : &ch->ibch);
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

	if (!err) {
		/* a CQ armed before a spin on it is waited on only now */
		ur_engine_event_wait(ur_ctx_dev(channel->context));
		err = ur_channel_get_event(to_ur_channel(channel), &ucq);
	}

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
