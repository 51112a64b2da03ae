/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A device, context, PDs, CQs and an AH built by hand (no NIC, no engine)
 * for the QP unit tests, and the send-side calls with qp->sq_lock held as
 * api/ holds it (api/ also rings the engine's doorbell; here nobody does).
 */
#ifndef UR_TEST_QP_FIXTURE_H
#define UR_TEST_QP_FIXTURE_H

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "obj/obj_priv.h"

struct qp_fx {
	struct ur_device dev;
	struct ur_context uctx, uctx2;
	struct ur_pd pd, pd2;
	struct ur_cq cq, cq2;
	struct ur_ah ah, ah2;
	struct ur_srq srq;
};

static inline int qp_fx_post_send(struct ur_qp *qp, struct ibv_send_wr *wr,
				  struct ibv_send_wr **bad)
{
	int ret;

	pthread_mutex_lock(&qp->sq_lock);
	ret = ur_qp_post_send(qp, wr, bad);
	pthread_mutex_unlock(&qp->sq_lock);
	return ret;
}

/* ibv_modify_qp's obj/ part, under qp->sq_lock as the engine holds it */
static inline int qp_fx_modify(struct ur_qp *qp, const struct ibv_qp_attr *at,
			       int mask, enum ibv_qp_state *old)
{
	int ret;

	pthread_mutex_lock(&qp->sq_lock);
	ret = ur_qp_modify(qp, at, mask, old);
	pthread_mutex_unlock(&qp->sq_lock);
	return ret;
}

static inline int qp_fx_bind_mw(struct ur_qp *qp, struct ibv_mw *mw,
				const struct ibv_mw_bind *bind)
{
	int ret;

	pthread_mutex_lock(&qp->sq_lock);
	ret = ur_qp_bind_mw(qp, mw, bind);
	pthread_mutex_unlock(&qp->sq_lock);
	return ret;
}

static void qp_fx_wr_start(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);

	pthread_mutex_lock(&qp->sq_lock);
	ur_qp_wr_begin(qp);
}

static int qp_fx_wr_complete(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);
	int ret = ur_qp_wr_end(qp);

	pthread_mutex_unlock(&qp->sq_lock);
	return ret;
}

static void qp_fx_wr_abort(struct ibv_qp_ex *qpx)
{
	struct ur_qp *qp = to_ur_qp_ex(qpx);

	ur_qp_wr_rewind(qp);
	pthread_mutex_unlock(&qp->sq_lock);
}

static void qp_fx_set_gid(struct ur_device *dev, unsigned int i,
			  const char *ip)
{
	struct ur_gid_entry *g = &dev->gids[i];

	g->addr.in.sin_family = AF_INET;
	inet_pton(AF_INET, ip, &g->addr.in.sin_addr);
	ur_sockaddr_to_gid(&g->addr, g->gid.raw);
	g->valid = true;
}

static struct qp_fx *qp_fx_new(void)
{
	struct qp_fx *f = calloc(1, sizeof(*f));

	pthread_rwlock_init(&f->dev.obj_lock, NULL);
	ur_u32_map_init(&f->dev.qpns);
	qp_fx_set_gid(&f->dev, 0, "127.0.0.1");
	f->dev.num_gids = 1;
	f->dev.active_mtu = IBV_MTU_1024;
	f->uctx.dev = &f->dev;
	f->uctx.vctx.context.device = &f->dev.ibdev;
	f->uctx2.dev = &f->dev;
	f->uctx2.vctx.context.device = &f->dev.ibdev;
	f->pd.ibpd.context = &f->uctx.vctx.context;
	f->pd2.ibpd.context = &f->uctx.vctx.context;
	f->cq.ibcq.context = &f->uctx.vctx.context;
	f->cq2.ibcq.context = &f->uctx2.vctx.context;
	f->ah.pd = &f->pd;
	f->ah.ibah.pd = &f->pd.ibpd;
	f->ah.ibah.context = &f->uctx.vctx.context;
	f->ah2.pd = &f->pd2;
	f->ah2.ibah.pd = &f->pd2.ibpd;
	f->ah2.ibah.context = &f->uctx.vctx.context;
	f->srq.ibsrq.context = &f->uctx.vctx.context;
	f->srq.pd = &f->pd;
	return f;
}

static void qp_fx_free(struct qp_fx *f)
{
	ur_u32_map_fini(&f->dev.qpns);
	pthread_rwlock_destroy(&f->dev.obj_lock);
	free(f);
}

static void qp_fx_init_attr(struct qp_fx *f, struct ibv_qp_init_attr_ex *a,
			    enum ibv_qp_type type)
{
	memset(a, 0, sizeof(*a));
	a->comp_mask = IBV_QP_INIT_ATTR_PD;
	a->pd = &f->pd.ibpd;
	a->send_cq = &f->cq.ibcq;
	a->recv_cq = &f->cq.ibcq;
	a->qp_type = type;
	a->cap.max_send_wr = 16;
	a->cap.max_recv_wr = 16;
	a->cap.max_send_sge = 4;
	a->cap.max_recv_sge = 4;
	a->cap.max_inline_data = 64;
}

/* create + publish; NULL (and *err) on failure */
static struct ur_qp *qp_fx_create(struct qp_fx *f,
				  struct ibv_qp_init_attr_ex *a, int *err)
{
	struct ibv_qp_cap cap;
	struct ur_qp *qp = NULL;
	int ret;

	ret = ur_qp_create(&f->uctx.vctx.context, a, &cap, &qp);
	if (!ret) {
		ret = ur_qp_publish(qp);
		if (ret) {
			ur_qp_free(qp);
			qp = NULL;
		} else {
			a->cap = cap;
		}
		if (qp && qp->ibqp_ex.wr_send) {
			qp->ibqp_ex.wr_start = qp_fx_wr_start;
			qp->ibqp_ex.wr_complete = qp_fx_wr_complete;
			qp->ibqp_ex.wr_abort = qp_fx_wr_abort;
		}
	}
	if (err)
		*err = ret;
	return ret ? NULL : qp;
}

static struct ur_qp *qp_fx_qp(struct qp_fx *f, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr_ex a;

	qp_fx_init_attr(f, &a, type);
	return qp_fx_create(f, &a, NULL);
}

static void qp_fx_destroy(struct ur_qp *qp)
{
	ur_qp_unpublish(qp);
	ur_qp_free(qp);
}

/* Every attribute valid for every transition. */
static void qp_fx_good_attr(struct ibv_qp_attr *at, enum ibv_qp_state cur,
			    enum ibv_qp_state next)
{
	struct ibv_ah_attr *ah;
	int i;

	memset(at, 0, sizeof(*at));
	at->qp_state = next;
	at->cur_qp_state = cur;
	at->en_sqd_async_notify = 1;
	at->qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	at->pkey_index = 0;
	at->port_num = 1;
	at->qkey = 0x11111111;
	at->path_mtu = IBV_MTU_1024;
	at->timeout = 14;
	at->retry_cnt = 7;
	at->rnr_retry = 7;
	at->rq_psn = 0x123456;
	at->sq_psn = 0x654321;
	at->max_rd_atomic = 16;
	at->max_dest_rd_atomic = 16;
	at->min_rnr_timer = 12;
	at->dest_qp_num = 0xABCDE;
	at->path_mig_state = IBV_MIG_MIGRATED;
	at->alt_port_num = 1;
	at->alt_timeout = 14;
	for (i = 0; i < 2; i++) {
		ah = i ? &at->alt_ah_attr : &at->ah_attr;
		ah->is_global = 1;
		ah->port_num = 1;
		ah->grh.sgid_index = 0;
		ah->grh.hop_limit = 1;
		ah->grh.dgid.raw[10] = 0xff;
		ah->grh.dgid.raw[11] = 0xff;
		ah->grh.dgid.raw[12] = 127;
		ah->grh.dgid.raw[15] = 2;
	}
}

/* RESET -> INIT -> RTR -> RTS through the real checks. */
static int qp_fx_to_rts(struct ur_qp *qp)
{
	static const int rc[] = {
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
		IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
	};
	static const int uc[] = {
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
		IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN,
		IBV_QP_SQ_PSN,
	};
	static const int ud[] = {
		IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		0,
		IBV_QP_SQ_PSN,
	};
	static const enum ibv_qp_state st[] = {
		IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS,
	};
	const int *m = qp->type == IBV_QPT_RC ? rc :
		       qp->type == IBV_QPT_UC ? uc : ud;
	struct ibv_qp_attr at;
	enum ibv_qp_state old;
	int i, ret;

	for (i = 0; i < 3; i++) {
		qp_fx_good_attr(&at, st[i], st[i + 1]);
		ret = qp_fx_modify(qp, &at, IBV_QP_STATE | m[i], &old);
		if (ret)
			return ret;
	}
	return 0;
}

#endif
