/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM agent of one device: QP1 and a thread. QP1 is an ordinary UD QP
 * of the application's own libibverbs, renumbered to 1 (uroce_gsi_claim),
 * so CM MADs travel exactly like any UD datagram: SEND only to QPN 1 with
 * Q_Key 0x80010000 over UDP 4791. Sends are inline (a MAD is 256 bytes),
 * so no send buffer outlives ibv_post_send. The thread sleeps on the CQ's
 * completion channel and an eventfd, with the earliest retransmission
 * deadline as its timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "api/ibverbs/uroce_gsi.h"
#include "api/rdmacm/rdmacm_priv.h"
#include "util/log.h"
#include "util/time.h"
#include "util/thread.h"

#define BUF_SIZE (UR_GRH_BYTES + UR_MAD_SIZE)

static int post_recv(struct cma_dev *d, unsigned int i)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(d->bufs + (size_t)i * BUF_SIZE),
		.length = BUF_SIZE,
		.lkey = d->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return ibv_post_recv(d->qp1, &wr, &bad);
}

static int qp1_ready(struct cma_dev *d)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = UR_GSI_QKEY,
	};
	int ret;

	ret = ibv_modify_qp(d->qp1, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				   IBV_QP_PORT | IBV_QP_QKEY);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = ibv_modify_qp(d->qp1, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return ibv_modify_qp(d->qp1, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

/* The sender's and the receiver's GIDs from the 40-byte GRH image of a
 * UD receive: which of our addresses the peer spoke to is the one we
 * answer from. */
static void grh_gids(const uint8_t *grh, uint8_t src[16], uint8_t dst[16])
{
	if ((grh[0] >> 4) == 6) {
		memcpy(src, grh + 8, 16);
		memcpy(dst, grh + 24, 16);
		return;
	}
	/* the IPv4 header's source and destination addresses */
	ur_gid_from_ipv4(grh + UR_GRH_IPV4_OFF + 12, src);
	ur_gid_from_ipv4(grh + UR_GRH_IPV4_OFF + 16, dst);
}

static void agent_drain(struct cma_dev *d)
{
	struct ibv_wc wc[16];
	int n, i;

	while ((n = ibv_poll_cq(d->cq, 16, wc)) > 0) {
		for (i = 0; i < n; i++) {
			uint8_t *b, gid[16], dgid[16];

			if (wc[i].opcode != IBV_WC_RECV) {
				/* a send: its AH may be reused */
				pthread_mutex_lock(&cma.lock);
				if (wc[i].wr_id < UR_ARRAY_SIZE(d->ahs))
					d->ahs[wc[i].wr_id].inflight--;
				pthread_mutex_unlock(&cma.lock);
				continue;
			}
			if (wc[i].status != IBV_WC_SUCCESS) {
				if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
					post_recv(d, (unsigned int)wc[i].wr_id);
				continue;
			}
			b = d->bufs + wc[i].wr_id * BUF_SIZE;
			grh_gids(b, gid, dgid);
			pthread_mutex_lock(&cma.lock);
			d->stats[CMA_STAT_RX]++;
			if (wc[i].byte_len >= BUF_SIZE)
				d->handlers->mad(d, gid, dgid, b + UR_GRH_BYTES,
						 wc[i].byte_len - UR_GRH_BYTES);
			else
				d->stats[CMA_STAT_DROP]++;
			pthread_mutex_unlock(&cma.lock);
			post_recv(d, (unsigned int)wc[i].wr_id);
		}
	}
}

static void *agent_main(void *arg)
{
	struct cma_dev *d = arg;
	struct pollfd pfd[2] = {
		{ .fd = d->cch->fd, .events = POLLIN },
		{ .fd = d->wake_fd, .events = POLLIN },
	};

	for (;;) {
		uint64_t now, next;
		int timeout = -1;
		struct ibv_cq *cq;
		void *cq_ctx;

		pthread_mutex_lock(&cma.lock);
		if (d->stop) {
			pthread_mutex_unlock(&cma.lock);
			break;
		}
		now = ur_now_ns();
		next = d->handlers->timers(d, now);
		pthread_mutex_unlock(&cma.lock);
		if (next) {
			now = ur_now_ns();
			timeout = next <= now ? 0 :
				  (int)((next - now + 999999) / 1000000);
		}
		if (poll(pfd, 2, timeout) < 0 && errno != EINTR)
			break;
		if (pfd[1].revents & POLLIN) {
			uint64_t v;

			if (read(d->wake_fd, &v, sizeof(v)) < 0)
				v = 0;
		}
		if (pfd[0].revents & POLLIN) {
			while (!ibv_get_cq_event(d->cch, &cq, &cq_ctx))
				ibv_ack_cq_events(cq, 1);
			ibv_req_notify_cq(d->cq, 0);
		}
		agent_drain(d);
	}
	return NULL;
}

int cma_agent_start(struct cma_dev *d, const struct cma_agent_handlers *h)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_UD,
		.cap = {
			.max_send_wr = UR_CM_AGENT_SEND_DEPTH,
			.max_recv_wr = UR_CM_RECV_BUFS,
			.max_send_sge = 1,
			.max_recv_sge = 1,
			.max_inline_data = UR_MAD_SIZE,
		},
		.sq_sig_all = 1,
	};
	unsigned int i;
	int ret = ENOMEM;

	d->handlers = h;
	d->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	d->agent_pd = ibv_alloc_pd(d->verbs);
	d->cch = ibv_create_comp_channel(d->verbs);
	d->bufs = calloc(UR_CM_RECV_BUFS, BUF_SIZE);
	if (d->wake_fd < 0 || !d->agent_pd || !d->cch || !d->bufs)
		goto err;
	/* never block in ibv_get_cq_event: poll() says when to look */
	if (fcntl(d->cch->fd, F_SETFL,
		  fcntl(d->cch->fd, F_GETFL) | O_NONBLOCK) < 0)
		goto err;
	d->cq = ibv_create_cq(d->verbs, UR_CM_AGENT_SEND_DEPTH + UR_CM_RECV_BUFS,
			      NULL, d->cch, 0);
	d->mr = ibv_reg_mr(d->agent_pd, d->bufs,
			   (size_t)UR_CM_RECV_BUFS * BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!d->cq || !d->mr) {
		ret = errno ? errno : ENOMEM;
		ur_err("rdmacm: QP1's %s: %s", d->cq ? "MR" : "CQ",
		       strerror(ret));
		goto err;
	}
	qa.send_cq = qa.recv_cq = d->cq;
	d->qp1 = ibv_create_qp(d->agent_pd, &qa);
	if (!d->qp1) {
		ret = errno ? errno : ENOMEM;
		ur_err("rdmacm: cannot create QP1: %s", strerror(ret));
		goto err;
	}
	ret = uroce_gsi_claim(d->qp1);
	if (ret) {
		ur_err("rdmacm: cannot take QP1 of %s: %s",
		       ibv_get_device_name(d->verbs->device), strerror(ret));
		goto err;
	}
	ret = qp1_ready(d);
	if (ret) {
		ur_err("rdmacm: QP1 to RTS: %s", strerror(ret));
		goto err;
	}
	for (i = 0; !ret && i < UR_CM_RECV_BUFS; i++)
		ret = post_recv(d, i);
	if (!ret)
		ret = ibv_req_notify_cq(d->cq, 0);
	if (ret) {
		ur_err("rdmacm: QP1 receive buffers: %s", strerror(ret));
		goto err;
	}
	ret = ur_thread_create(&d->thread, agent_main, d, "uroce-cm");
	if (ret)
		goto err;
	d->thread_started = true;
	return 0;
err:
	cma_agent_stop(d);
	return ret ? ret : ENOMEM;
}

void cma_agent_stop(struct cma_dev *d)
{
	unsigned int i;

	if (d->thread_started) {
		cma_agent_kick(d);
		pthread_join(d->thread, NULL);
		d->thread_started = false;
	}
	if (d->qp1)
		ibv_destroy_qp(d->qp1);
	for (i = 0; i < UR_ARRAY_SIZE(d->ahs); i++) {
		if (d->ahs[i].ah)
			ibv_destroy_ah(d->ahs[i].ah);
		d->ahs[i].ah = NULL;
		d->ahs[i].inflight = 0;
	}
	if (d->mr)
		ibv_dereg_mr(d->mr);
	if (d->cq)
		ibv_destroy_cq(d->cq);
	if (d->cch)
		ibv_destroy_comp_channel(d->cch);
	if (d->agent_pd)
		ibv_dealloc_pd(d->agent_pd);
	if (d->wake_fd >= 0)
		close(d->wake_fd);
	free(d->bufs);
	d->qp1 = NULL;
	d->mr = NULL;
	d->cq = NULL;
	d->cch = NULL;
	d->agent_pd = NULL;
	d->wake_fd = -1;
	d->bufs = NULL;
}

void cma_agent_kick(struct cma_dev *d)
{
	uint64_t one = 1;

	if (d->wake_fd >= 0 && write(d->wake_fd, &one, sizeof(one)) < 0)
		return;	/* already signalled: the counter is non-zero */
}

/*
 * A UD WQE points at its AH until the send completes, so AHs are cached per
 * peer GID and source GID index, and a slot is reused only when none of its
 * sends is in flight.
 */
static int agent_ah(struct cma_dev *d, uint8_t sgid, const uint8_t gid[16])
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .sgid_index = sgid,
			 .hop_limit = UR_DEFAULT_HOP_LIMIT },
	};
	unsigned int i;
	int victim = -1;

	for (i = 0; i < UR_ARRAY_SIZE(d->ahs); i++) {
		struct cma_ah *a = &d->ahs[i];

		if (a->ah && a->sgid == sgid && !memcmp(a->gid, gid, 16)) {
			a->used = ++d->ah_clock;
			return (int)i;
		}
		if (!a->inflight &&
		    (victim < 0 || !a->ah ||
		     (d->ahs[victim].ah && a->used < d->ahs[victim].used)))
			victim = (int)i;
	}
	if (victim < 0)
		return -EAGAIN;
	if (d->ahs[victim].ah)
		ibv_destroy_ah(d->ahs[victim].ah);
	memcpy(aa.grh.dgid.raw, gid, 16);
	d->ahs[victim].ah = ibv_create_ah(d->agent_pd, &aa);
	if (!d->ahs[victim].ah)
		return -(errno ? errno : ENOMEM);
	memcpy(d->ahs[victim].gid, gid, 16);
	d->ahs[victim].sgid = sgid;
	d->ahs[victim].used = ++d->ah_clock;
	return victim;
}

int cma_agent_send(struct cma_dev *d, uint8_t sgid, const uint8_t gid[16],
		   const uint8_t mad[UR_MAD_SIZE])
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)mad,
		.length = UR_MAD_SIZE,
	};
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_INLINE | IBV_SEND_SIGNALED,
	};
	struct ibv_send_wr *bad;
	int slot, ret;

	slot = agent_ah(d, sgid, gid);
	if (slot < 0)
		return -slot;
	wr.wr_id = (uint64_t)slot;
	wr.wr.ud.ah = d->ahs[slot].ah;
	wr.wr.ud.remote_qpn = 1;
	wr.wr.ud.remote_qkey = UR_GSI_QKEY;
	ret = ibv_post_send(d->qp1, &wr, &bad);
	if (!ret) {
		d->ahs[slot].inflight++;
		d->stats[CMA_STAT_TX]++;
	}
	return ret;
}
