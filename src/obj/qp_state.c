/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The IBA QP state machine (IBA 1.x section 10.3.1, the table the Linux core
 * enforces in ib_modify_qp_is_ok) as data: for every (current, next) pair,
 * whether the transition exists and, per QP type, which attribute-mask bits
 * it requires and which it allows. ur_qp_modify() validates everything
 * first and only then applies, so a refused modify changes nothing.
 */
#include <errno.h>
#include <string.h>

#include "obj/obj_priv.h"
#include "util/addr.h"
#include "util/lock_assert.h"

#define S IBV_QP_STATE
#define CUR IBV_QP_CUR_STATE
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY
#define ACC IBV_QP_ACCESS_FLAGS
#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QKEY IBV_QP_QKEY
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define TMO IBV_QP_TIMEOUT
#define RCNT IBV_QP_RETRY_CNT
#define RNR IBV_QP_RNR_RETRY
#define RQPSN IBV_QP_RQ_PSN
#define RDA IBV_QP_MAX_QP_RD_ATOMIC
#define ALT IBV_QP_ALT_PATH
#define MRNR IBV_QP_MIN_RNR_TIMER
#define SQPSN IBV_QP_SQ_PSN
#define DRDA IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG IBV_QP_PATH_MIG_STATE
#define DQPN IBV_QP_DEST_QPN

/* Every mask bit libibverbs defines; anything else is not ours to judge. */
#define UR_QP_KNOWN_MASK                                                       \
	(S | CUR | SQDN | ACC | PKEY | PORT | QKEY | AV | MTU | TMO | RCNT |   \
	 RNR | RQPSN | RDA | ALT | MRNR | SQPSN | DRDA | MIG | IBV_QP_CAP |    \
	 DQPN | IBV_QP_RATE_LIMIT)

/* Access bits a QP accepts (relaxed ordering is a hint and ignored; a
 * FLUSH needs its placement type's flag on the QP as on the MR, as rxe:
 * rdma-core's later tests set both on every RC QP, and PERSISTENT on a QP
 * grants nothing while no MR has it). */
#define UR_QP_ACCESS_OK                                                        \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                   \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_RELAXED_ORDERING |                    \
	 IBV_ACCESS_ON_DEMAND | UR_ACCESS_FLUSH_GLOBAL |                       \
	 UR_ACCESS_FLUSH_PERSISTENT)

#define RTS_OPT_RC (CUR | ACC | ALT | MIG | MRNR)
#define RTS_OPT_UC (CUR | ACC | ALT | MIG)
#define RTS_OPT_UD (CUR | QKEY)
#define RTS_OPT_XRC_SEND (CUR | ACC | ALT | MIG)
#define RTS_OPT_XRC_RECV (CUR | ACC | ALT | MIG | MRNR)

/* [current][next]; masks per ur_qp_type_index() (RC, UC, UD, XRC_SEND,
 * XRC_RECV: the kernel's XRC_INI and XRC_TGT columns). */
static const struct ur_qp_trans ur_qp_table[UR_QPS_NUM][UR_QPS_NUM] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.req = { PKEY | PORT | ACC, PKEY | PORT | ACC,
				 PKEY | PORT | QKEY, PKEY | PORT | ACC,
				 PKEY | PORT | ACC },
		},
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.opt = { PKEY | PORT | ACC, PKEY | PORT | ACC,
				 PKEY | PORT | QKEY, PKEY | PORT | ACC,
				 PKEY | PORT | ACC },
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.req = { AV | MTU | DQPN | RQPSN | DRDA | MRNR,
				 AV | MTU | DQPN | RQPSN, 0,
				 AV | MTU | DQPN | RQPSN,
				 AV | MTU | DQPN | RQPSN | DRDA | MRNR },
			.opt = { ALT | ACC | PKEY, ALT | ACC | PKEY,
				 PKEY | QKEY, ALT | ACC | PKEY,
				 ALT | ACC | PKEY },
		},
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.req = { TMO | RCNT | RNR | SQPSN | RDA, SQPSN, SQPSN,
				 TMO | RCNT | RNR | SQPSN | RDA, TMO | SQPSN },
			.opt = { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD,
				 RTS_OPT_XRC_SEND, RTS_OPT_XRC_RECV },
		},
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD,
				 RTS_OPT_XRC_SEND, RTS_OPT_XRC_RECV },
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = { SQDN, SQDN, SQDN, SQDN, SQDN },
		},
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = { RTS_OPT_RC, RTS_OPT_UC, RTS_OPT_UD,
				 RTS_OPT_XRC_SEND, RTS_OPT_XRC_RECV },
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.opt = { PORT | AV | TMO | RCNT | RNR | RDA | DRDA |
				 ALT | ACC | PKEY | MRNR | MIG,
				 AV | ALT | ACC | PKEY | MIG,
				 PKEY | QKEY,
				 PORT | AV | TMO | RCNT | RNR | RDA | ALT | ACC |
				 PKEY | MIG,
				 PORT | AV | TMO | DRDA | ALT | ACC | PKEY |
				 MRNR | MIG },
		},
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		/* RC and XRC never enter SQE; their (empty) entries are
		 * harmless */
		[IBV_QPS_RTS] = {
			.valid = true,
			.opt = { 0, CUR | ACC, CUR | QKEY },
		},
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static const char *const ur_qps_names[UR_QPS_NUM] = {
	[IBV_QPS_RESET] = "RESET",
	[IBV_QPS_INIT] = "INIT",
	[IBV_QPS_RTR] = "RTR",
	[IBV_QPS_RTS] = "RTS",
	[IBV_QPS_SQD] = "SQD",
	[IBV_QPS_SQE] = "SQE",
	[IBV_QPS_ERR] = "ERR",
};

const char *ur_qp_state_name(enum ibv_qp_state s)
{
	if ((unsigned int)s >= UR_QPS_NUM)
		return "UNKNOWN";
	return ur_qps_names[s];
}

int ur_qp_type_index(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return 0;
	case IBV_QPT_UC:
		return 1;
	case IBV_QPT_UD:
		return 2;
	case IBV_QPT_XRC_SEND:
		return 3;
	case IBV_QPT_XRC_RECV:
		return 4;
	default:
		return -1;
	}
}

const struct ur_qp_trans *ur_qp_transition(enum ibv_qp_state cur,
					   enum ibv_qp_state next)
{
	if ((unsigned int)cur >= UR_QPS_NUM || (unsigned int)next >= UR_QPS_NUM)
		return NULL;
	if (!ur_qp_table[cur][next].valid)
		return NULL;
	return &ur_qp_table[cur][next];
}

/*
 * Table check only: is (cur -> next) with this mask allowed for the type?
 * Returns 0, -EINVAL, or -EOPNOTSUPP for mask bits libibverbs doesn't know.
 */
int ur_qp_mask_check(enum ibv_qp_type type, enum ibv_qp_state cur,
		     enum ibv_qp_state next, int mask)
{
	const struct ur_qp_trans *t;
	uint32_t m = (uint32_t)mask;
	int ti = ur_qp_type_index(type);

	if (m & ~(uint32_t)UR_QP_KNOWN_MASK)
		return -EOPNOTSUPP;
	if (ti < 0)
		return -EINVAL;
	if ((m & CUR) && cur != IBV_QPS_RTR && cur != IBV_QPS_RTS &&
	    cur != IBV_QPS_SQD && cur != IBV_QPS_SQE)
		return -EINVAL;
	t = ur_qp_transition(cur, next);
	if (!t)
		return -EINVAL;
	if ((m & t->req[ti]) != t->req[ti])
		return -EINVAL;
	if (m & ~(t->req[ti] | t->opt[ti] | S))
		return -EINVAL;
	return 0;
}

static bool mtu_ok(enum ibv_mtu mtu)
{
	return mtu >= IBV_MTU_256 && mtu <= UR_MAX_MTU;
}

/* An address vector we can send to: RoCEv2 needs the GRH (GIDs). */
static int av_check(const struct ur_device *dev, const struct ibv_ah_attr *ah)
{
	const struct ur_gid_entry *sg;

	if (!ah->is_global || ah->port_num != 1)
		return -EINVAL;
	if (ah->grh.sgid_index >= dev->num_gids ||
	    ah->grh.sgid_index >= UR_MAX_GID)
		return -EINVAL;
	sg = &dev->gids[ah->grh.sgid_index];
	if (!sg->valid)
		return -EINVAL;
	if (ur_gid_is_zero(ah->grh.dgid.raw))
		return -EINVAL;
	/* IPv4 GIDs talk to IPv4 GIDs, IPv6 to IPv6 */
	if (ur_gid_is_v4mapped(ah->grh.dgid.raw) !=
	    ur_gid_is_v4mapped(sg->gid.raw))
		return -EINVAL;
	/*
	 * flow_label is not checked: only its low 20 bits exist on the wire
	 * and rdma-core's providers take the rest as don't-care (UCX passes
	 * 0xFFFFFFFF); the copies below keep the 20 bits, as ibv_create_ah.
	 */
	return 0;
}

/* The value checks of rxe/IBA on every attribute present in the mask. */
static int attr_check(const struct ur_qp *qp, const struct ibv_qp_attr *attr,
		      int mask)
{
	if ((mask & CUR) && attr->cur_qp_state != qp->state)
		return -EINVAL;
	if ((mask & PORT) && attr->port_num != 1)
		return -EINVAL;
	if ((mask & PKEY) && attr->pkey_index >= UR_PKEY_TBL_LEN)
		return -EINVAL;
	if ((mask & MTU) && !mtu_ok(attr->path_mtu))
		return -EINVAL;
	if ((mask & RDA) && attr->max_rd_atomic > UR_MAX_QP_INIT_RD_ATOM)
		return -EINVAL;
	if ((mask & DRDA) && attr->max_dest_rd_atomic > UR_MAX_QP_RD_ATOM)
		return -EINVAL;
	if ((mask & TMO) && attr->timeout > 31)
		return -EINVAL;
	if ((mask & RCNT) && attr->retry_cnt > 7)
		return -EINVAL;
	if ((mask & RNR) && attr->rnr_retry > 7)
		return -EINVAL;
	if ((mask & MRNR) && attr->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & DQPN) && attr->dest_qp_num > UR_QPN_MASK)
		return -EINVAL;
	if ((mask & ACC) && (attr->qp_access_flags & ~UR_QP_ACCESS_OK))
		return -EINVAL;
	if ((mask & AV) && av_check(qp->dev, &attr->ah_attr))
		return -EINVAL;
	if ((mask & MIG) && attr->path_mig_state != IBV_MIG_MIGRATED &&
	    attr->path_mig_state != IBV_MIG_REARM &&
	    attr->path_mig_state != IBV_MIG_ARMED)
		return -EINVAL;
	if (mask & ALT) {
		if (attr->alt_port_num != 1 ||
		    attr->alt_pkey_index >= UR_PKEY_TBL_LEN ||
		    attr->alt_timeout > 31 ||
		    av_check(qp->dev, &attr->alt_ah_attr))
			return -EINVAL;
	}
	return 0;
}

/*
 * The attributes one half of XRC has no use for, which the kernel's
 * ibv_modify_qp drops before the table check (uverbs' modify_qp_mask):
 * an initiator has no responder resources or RNR timer, a target no
 * requester's retries or initiator depth. Programs rely on it (perftest
 * moves its XRC_SEND QPs to RTR with MAX_DEST_RD_ATOMIC|MIN_RNR_TIMER).
 */
static int mask_effective(enum ibv_qp_type type, int mask)
{
	switch (type) {
	case IBV_QPT_XRC_SEND:
		return mask & ~(DRDA | MRNR);
	case IBV_QPT_XRC_RECV:
		return mask & ~(RDA | RCNT | RNR);
	default:
		return mask;
	}
}

int ur_qp_modify_check(const struct ur_qp *qp, const struct ibv_qp_attr *attr,
		       int mask)
{
	enum ibv_qp_state next = qp->state;
	int ret;

	mask = mask_effective(qp->type, mask);
	if (mask & S) {
		if ((unsigned int)attr->qp_state >= UR_QPS_NUM)
			return -EINVAL;
		next = attr->qp_state;
	}
	ret = ur_qp_mask_check(qp->type, qp->state, next, mask);
	if (ret)
		return ret;
	return attr_check(qp, attr, mask);
}

/* Fills av from an already checked ah_attr. */
void ur_av_from_attr(const struct ur_device *dev, const struct ibv_ah_attr *ah,
		     struct ur_av *av)
{
	const struct ur_gid_entry *sg = &dev->gids[ah->grh.sgid_index];

	memset(av, 0, sizeof(*av));
	av->attr = *ah;
	ur_gid_to_sockaddr(ah->grh.dgid.raw, UR_ROCEV2_PORT, &av->dest);
	av->src = sg->addr;
	av->sgid_index = ah->grh.sgid_index;
	av->traffic_class = ah->grh.traffic_class;
	av->hop_limit = ah->grh.hop_limit ? ah->grh.hop_limit :
					    UR_DEFAULT_HOP_LIMIT;
	av->flow_label = ah->grh.flow_label & UR_FLOW_LABEL_MASK;
	av->attr.grh.flow_label = av->flow_label;
}

/* Attributes of a QP just created or just reset. */
void ur_qp_attr_defaults(struct ur_qp *qp)
{
	memset(&qp->attr, 0, sizeof(qp->attr));
	memset(&qp->av, 0, sizeof(qp->av));
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.cur_qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_256;
	qp->attr.path_mig_state = IBV_MIG_MIGRATED;
	qp->attr.port_num = 1;
	qp->attr.alt_port_num = 1;
	qp->attr.sq_draining = 0;
	qp->path_mtu_bytes = 256;
}

static void ring_reset(struct ur_wq *wq)
{
	wq->producer = 0;
	wq->consumer = 0;
	wq->cursor = 0;
}

/* Caller holds qp->sq_lock; attr/mask have passed ur_qp_modify_check(). */
static void modify_apply(struct ur_qp *qp, const struct ibv_qp_attr *attr,
			 int mask)
{
	struct ibv_qp_attr *a = &qp->attr;
	enum ibv_qp_state next = (mask & S) ? attr->qp_state : qp->state;

	if (next == IBV_QPS_RESET && qp->state != IBV_QPS_RESET) {
		/* IBA 10.3.1: RESET empties both work queues, no completions */
		ur_qp_attr_defaults(qp);
		ring_reset(&qp->sq);
		if (!qp->srq) {
			pthread_spin_lock(&qp->rq_lock);
			ring_reset(&qp->rq);
			pthread_spin_unlock(&qp->rq_lock);
		}
	}
	if (mask & ACC)
		a->qp_access_flags = attr->qp_access_flags;
	if (mask & PKEY)
		a->pkey_index = attr->pkey_index;
	if (mask & PORT)
		a->port_num = attr->port_num;
	if (mask & QKEY)
		a->qkey = attr->qkey;
	if (mask & AV) {
		a->ah_attr = attr->ah_attr;
		a->ah_attr.grh.flow_label &= UR_FLOW_LABEL_MASK;
		ur_av_from_attr(qp->dev, &attr->ah_attr, &qp->av);
	}
	if (mask & MTU) {
		a->path_mtu = attr->path_mtu;
		qp->path_mtu_bytes = ur_mtu_bytes(attr->path_mtu);
	}
	if (mask & TMO)
		a->timeout = attr->timeout;
	if (mask & RCNT)
		a->retry_cnt = attr->retry_cnt;
	if (mask & RNR)
		a->rnr_retry = attr->rnr_retry;
	if (mask & RQPSN)
		a->rq_psn = attr->rq_psn & UR_PSN_MASK;
	if (mask & SQPSN)
		a->sq_psn = attr->sq_psn & UR_PSN_MASK;
	if (mask & RDA)
		a->max_rd_atomic = attr->max_rd_atomic;
	if (mask & DRDA)
		a->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	if (mask & MRNR)
		a->min_rnr_timer = attr->min_rnr_timer;
	if (mask & DQPN)
		a->dest_qp_num = attr->dest_qp_num;
	if (mask & MIG)
		a->path_mig_state = attr->path_mig_state;
	if (mask & ALT) {
		a->alt_ah_attr = attr->alt_ah_attr;
		a->alt_ah_attr.grh.flow_label &= UR_FLOW_LABEL_MASK;
		a->alt_pkey_index = attr->alt_pkey_index;
		a->alt_port_num = attr->alt_port_num;
		a->alt_timeout = attr->alt_timeout;
	}
	if (mask & SQDN)
		a->en_sqd_async_notify = attr->en_sqd_async_notify;
	qp->state = next;
	a->qp_state = next;
	a->cur_qp_state = next;
	qp->ibqp_ex.qp_base.state = next;
}

int ur_qp_modify(struct ur_qp *qp, const struct ibv_qp_attr *attr, int mask,
		 enum ibv_qp_state *old_state)
{
	int ret;

	UR_ASSERT_HELD(&qp->sq_lock);
	ret = ur_qp_modify_check(qp, attr, mask);
	if (!ret) {
		*old_state = qp->state;
		modify_apply(qp, attr, mask_effective(qp->type, mask));
	}
	return ret;
}
