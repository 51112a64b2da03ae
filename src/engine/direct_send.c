/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Same-host SENDs by one copy: the requester takes the oldest receive
 * WQE of the target QP from the ring the target shares it in
 * (obj/rq_ring.c), writes the payload straight into its buffers with
 * process_vm_writev and hands the receive's completion back through the
 * ring, which the target's poll_cq moves into its CQ. No packet, no ACK,
 * no PSN. docs/design.md, "SENDs by a single copy", says why this is the
 * IBA's SEND; in short:
 *
 * - Only when the QP has nothing in flight (direct.c's ordering rule):
 *   every earlier request was executed and acknowledged, and the copy is
 *   finished (its completion written) when the call returns, before
 *   anything later is sent.
 * - Anything not certainly right goes as packets, whose responder gives
 *   the IBA's answer: no WQE posted (RNR), one whose SGEs did not
 *   resolve at post or too short (the responder's errors), the ring
 *   closed (the QP left RTR/RTS), a deregistration in progress, the
 *   peer's table not naming the ring.
 */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include "engine/direct_priv.h"
#include "link/link.h"
#include "util/lock_assert.h"
#include "util/time.h"

/* The ring tq names, mapped (kept while the peer's table names it). */
static struct ur_xring *send_ring(struct ur_qp *qp, int32_t pid,
				  const struct dx_qp *tq)
{
	struct ur_dx_info *d = &qp->xp->dx;
	int rc;

	if (d->rq && d->rq_pid == pid && d->rq_fd == tq->rq_fd &&
	    d->rq_id == tq->rq_id)
		return d->rq;
	ur_dx_send_fini(qp);
	rc = ur_xring_open_fd(pid, tq->rq_fd, tq->rq_id, &d->rq);
	if (rc) {
		d->rq = NULL;
		return NULL;
	}
	d->rq_pid = pid;
	d->rq_fd = tq->rq_fd;
	d->rq_id = tq->rq_id;
	return d->rq;
}

/* The WQE's payload as local iovecs (room for max), checked as the
 * packets' would be. */
static int send_local(struct ur_qp *qp, struct ur_send_wqe *wqe,
		      struct iovec *l, unsigned int max, unsigned int *n)
{
	*n = 0;
	if (!wqe->length)
		return 0;
	if (!max)
		return -EMSGSIZE;
	if (wqe->send_flags & IBV_SEND_INLINE) {
		l->iov_base = wqe->inline_data;
		l->iov_len = wqe->length;
		*n = 1;
		return 0;
	}
	return ur_sgl_map(qp, wqe->sge, wqe->num_sge, 0, wqe->length, 0, l,
			  max, n);
}

unsigned int ur_direct_send(struct ur_qp *qp, struct ur_send_wqe **w,
			    unsigned int n)
{
	struct ur_qp_xport *xp = qp->xp;
	struct ur_nic *nic = xp->nic;
	struct iovec local[UR_XSEND_IOV];
	struct ur_xsend m[UR_DX_BATCH];
	unsigned int i, k = 0, nl = 0, cnt;
	uint64_t bytes = 0;
	struct ur_xring *x;
	struct dx_table *t;
	struct dx_qp tq;
	uint8_t me[16];
	int32_t pid;
	int rc;

	UR_ASSERT_HELD(&qp->sq_lock);
	if (!nic->dx_on || xp->dx.refused || qp->type != IBV_QPT_RC ||
	    !ur_dx_idle(xp) || ur_link_faulty(nic->link))
		return 0;
	/* a peer QP on an SRQ (or with faults on) shares no RQ: asked
	 * again after UR_DX_REVERIFY_NS, not at every SEND */
	if (xp->dx.rq_none && ur_now_ns() - xp->dx.rq_none < UR_DX_REVERIFY_NS)
		return 0;
	xp->dx.rq_none = 0;
	t = ur_dx_peer_get(qp, &pid);
	if (!t)
		return 0;
	ur_sockaddr_to_gid(&qp->av.src, me);
	if (!ur_dx_qp_find(t, qp->attr.dest_qp_num, &tq) ||
	    tq.dest_qpn != ur_qp_num(qp) || memcmp(tq.peer, me, 16) ||
	    !tq.rq_id) {
		ur_link_peer_area_put(nic->link);
		xp->dx.rq_none = ur_now_ns();
		return 0;
	}
	x = send_ring(qp, pid, &tq);
	/* a local SGE that fails, fails as packets: the packet path
	 * reports it */
	for (i = 0; x && i < n && nl < UR_XSEND_IOV; i++) {
		if (send_local(qp, w[i], local + nl, UR_XSEND_IOV - nl, &cnt))
			break;
		memset(&m[i], 0, sizeof(m[i]));
		m[i].local = local + nl;
		m[i].nlocal = cnt;
		m[i].len = w[i]->length;
		m[i].solicited = w[i]->send_flags & IBV_SEND_SOLICITED;
		m[i].wc.status = IBV_WC_SUCCESS;
		m[i].wc.opcode = IBV_WC_RECV;
		m[i].wc.qp_num = tq.qpn;
		m[i].wc.src_qp = ur_qp_num(qp);
		if (w[i]->opcode == IBV_WR_SEND_WITH_IMM) {
			m[i].wc.imm_data = w[i]->imm_data;
			m[i].wc.wc_flags = IBV_WC_WITH_IMM;
		}
		nl += cnt;
	}
	rc = i ? ur_xring_send(x, nic->dx_self, m, i, &k) : -EINVAL;
	ur_link_peer_area_put(nic->link);
	for (i = 0; i < k; i++) {
		bytes += w[i]->length;
		ur_direct_done(qp, w[i]);
	}
	if (k) {
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_SENDS, k);
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_BYTES, bytes);
		ur_qcnt_tx(xp->qcnt.req, (uint32_t)bytes);
	}
	if (rc == -EFAULT) {
		/* the target's WQE completed in error: as its responder
		 * would NAK a receive it cannot write */
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_FALLBACKS, 1);
		ur_wqe_fail(qp, qp->sq.cursor, w[k], IBV_WC_REM_OP_ERR);
		return k + 1;
	}
	if (rc == -EIO) {
		/* the packets redo it, and the responder answers the fault */
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_FALLBACKS, 1);
		return k;
	}
	if (!k) {
		ur_cnt_stat(&nic->cnt, UR_STAT_DIRECT_SEND_PACKETS, 1);
		if (rc == -ENODEV)
			ur_dx_send_fini(qp);
	}
	return k;
}

void ur_direct_done(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_qp_xport *xp = qp->xp;

	wqe->npkts = 0;
	wqe->first_psn = wqe->last_psn = ur_psn_add(xp->req.psn, -1);
	wqe->sent = wqe->length;
	wqe->state = UR_WQE_DONE;
	ur_sq_advance(qp);
}

void ur_engine_rq_overrun(struct ur_qp *qp)
{
	struct ibv_async_event ev = {
		.element.qp = &qp->ibqp_ex.qp_base,
		.event_type = IBV_EVENT_QP_FATAL,
	};
	bool fail;

	pthread_mutex_lock(&qp->sq_lock);
	fail = qp->state != IBV_QPS_ERR;
	if (fail)
		ur_qp_error_locked(qp);
	pthread_mutex_unlock(&qp->sq_lock);
	if (!fail)
		return;
	ur_flush_rq(qp, false);
	ur_async_event_post(qp->ibqp_ex.qp_base.context, &ev);
}
