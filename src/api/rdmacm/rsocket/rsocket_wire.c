/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rsockets' wire (rsocket_priv.h has the protocol): the QP and its buffers,
 * the connect data, posting messages, completions and credits, and the
 * sleep on the socket's fds. Calls only rsocket_table.c.
 *
 * Flow control is two-fold, as rdma-core's: a data message needs one of
 * the peer's receives (credits: sseq_no may not reach sseq_comp, which the
 * peer raises by RSK_OP_SGL as it consumes) and room in the peer's offered
 * buffer half (target SGL). Control messages (credits, shutdown) use
 * RSK_CTRL_SLOTS send entries of their own and may arrive when the peer has
 * no receive posted: the RC RNR retry (7, endless) carries them through.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <byteswap.h>
#include <endian.h>
#include <rdma/rsocket.h>

#include "api/rdmacm/rsocket/rsocket_priv.h"
#include "util/compiler.h"

int rsk_iomap_scale(int value)
{
	return value <= 128 ? value : 128 | (value >> 8);
}

int rsk_iomap_unscale(int scale)
{
	return scale <= 128 ? scale : (scale & ~128) << 8;
}

static void free_maps(struct rsk *rs)
{
	uint32_t i;

	if (!rs->maps)
		return;
	for (i = 0; i < rs->remote_iomap.length; i++)
		if (rs->maps[i].mr)
			ibv_dereg_mr(rs->maps[i].mr);
	free(rs->maps);
	rs->maps = NULL;
}

static void *rsk_alloc_buf(size_t len)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, UR_ALIGN_UP(len, (size_t)4096)))
		return NULL;
	memset(p, 0, len);
	return p;
}

static int post_recv(struct rsk *rs)
{
	struct ibv_recv_wr wr = { .wr_id = RSK_WR_RECV }, *bad;

	return ibv_post_recv(rs->id->qp, &wr, &bad);
}

static void clamp_qp_size(uint16_t *v, uint32_t max)
{
	if (*v > max)
		*v = (uint16_t)max;
	if (*v < RSK_QP_MIN)
		*v = RSK_QP_MIN;
}

/* SOL_RDMA's queue sizes and inline size, for sockets of either type
 * (v >= 0, before the QP exists); false: not one of them. */
bool rsk_set_qp_opt(struct rsk *rs, int optname, int v)
{
	switch (optname) {
	case RDMA_SQSIZE:
		rs->sq_size = (uint16_t)UR_MIN(v, RSK_QP_MAX);
		return true;
	case RDMA_RQSIZE:
		rs->rq_size = (uint16_t)UR_MIN(v, RSK_QP_MAX);
		return true;
	case RDMA_INLINE:
		rs->sq_inline = (uint16_t)UR_MIN(v, RSK_QP_MAX);
		return true;
	}
	return false;
}

/*
 * The completion channel (non-blocking: rpoll reads it), one CQ for both
 * queues and the QP of a socket of either type, every send signalled;
 * sq_inline becomes what the QP grants.
 */
int rsk_create_qp(struct rsk *rs, struct rdma_cm_id *id,
		  enum ibv_qp_type type, uint32_t send_sge, uint32_t recv_sge)
{
	struct ibv_qp_init_attr qa;

	rs->cch = ibv_create_comp_channel(id->verbs);
	if (!rs->cch || fcntl(rs->cch->fd, F_SETFL, O_NONBLOCK))
		return -1;
	rs->cq = ibv_create_cq(id->verbs, rs->sq_size + rs->rq_size, rs,
			       rs->cch, 0);
	if (!rs->cq)
		return -1;
	memset(&qa, 0, sizeof(qa));
	qa.qp_context = rs;
	qa.send_cq = rs->cq;
	qa.recv_cq = rs->cq;
	qa.qp_type = type;
	qa.sq_sig_all = 1;
	qa.cap.max_send_wr = rs->sq_size;
	qa.cap.max_recv_wr = rs->rq_size;
	qa.cap.max_send_sge = send_sge;
	qa.cap.max_recv_sge = recv_sge;
	qa.cap.max_inline_data = rs->sq_inline;
	if (rdma_create_qp(id, NULL, &qa))
		return -1;
	rs->sq_inline = (uint16_t)UR_MIN(qa.cap.max_inline_data, 0xFFFFu);
	return 0;
}

int rsk_create_ep(struct rsk *rs)
{
	struct ibv_device_attr da;
	uint32_t max = RSK_QP_MAX;
	size_t slen, tlen;
	int i, ret;

	if (!ibv_query_device(rs->id->verbs, &da) && (uint32_t)da.max_qp_wr < max)
		max = (uint32_t)da.max_qp_wr;
	clamp_qp_size(&rs->sq_size, max);
	clamp_qp_size(&rs->rq_size, max);

	if (rsk_create_qp(rs, rs->id, IBV_QPT_RC, 2, 1))
		return -1;

	rs->rmsg = calloc(rs->rq_size + 1u, sizeof(*rs->rmsg));
	slen = rs->sbuf_size + sizeof(struct rsk_sge) * RSK_CTRL_SLOTS;
	rs->sbuf = rsk_alloc_buf(slen);
	rs->rbuf = rsk_alloc_buf(rs->rbuf_size);
	tlen = sizeof(struct rsk_sge) * RSK_SGL_SIZE +
	       sizeof(struct rsk_iomap) * rs->target_iomap_size;
	rs->target_sgl = rsk_alloc_buf(tlen);
	rs->tiomap = calloc(rs->target_iomap_size + 1u, sizeof(*rs->tiomap));
	if (!rs->rmsg || !rs->sbuf || !rs->rbuf || !rs->target_sgl ||
	    !rs->tiomap) {
		errno = ENOMEM;
		return -1;
	}
	rs->smr = ibv_reg_mr(rs->id->pd, rs->sbuf, slen, IBV_ACCESS_LOCAL_WRITE);
	rs->rmr = ibv_reg_mr(rs->id->pd, rs->rbuf, rs->rbuf_size,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->tmr = ibv_reg_mr(rs->id->pd, (void *)rs->target_sgl, tlen,
			     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rs->target_iomap = (volatile struct rsk_iomap *)
			   (rs->target_sgl + RSK_SGL_SIZE);
	if (!rs->smr || !rs->rmr || !rs->tmr)
		return -1;

	rs->sbuf_avail = rs->sbuf_size;
	rs->sbuf_head = 0;
	rs->rbuf_free = rs->rbuf_size >> 1;
	rs->rbuf_avail = rs->rbuf_size >> 1;
	rs->ctrl_max_seqno = RSK_CTRL_SLOTS;
	rs->sqe_avail = rs->sq_size - RSK_CTRL_SLOTS;
	rs->rseq_comp = rs->rq_size >> 1;
	for (i = 0; i < rs->rq_size; i++) {
		ret = post_recv(rs);
		if (ret) {
			errno = ret;
			return -1;
		}
	}
	return 0;
}

/* Frees what rsk_create_ep made; the id and its QP go with rdma_destroy_*. */
void rsk_free_ep(struct rsk *rs)
{
	free_maps(rs);
	if (rs->id && rs->id->qp)
		rdma_destroy_qp(rs->id);
	if (rs->smr)
		ibv_dereg_mr(rs->smr);
	if (rs->rmr)
		ibv_dereg_mr(rs->rmr);
	if (rs->tmr)
		ibv_dereg_mr(rs->tmr);
	if (rs->cq) {
		ibv_ack_cq_events(rs->cq, rs->unacked);
		ibv_destroy_cq(rs->cq);
	}
	if (rs->cch)
		ibv_destroy_comp_channel(rs->cch);
	free(rs->sbuf);
	free(rs->rbuf);
	free((void *)rs->target_sgl);
	free(rs->rmsg);
	rs->smr = rs->rmr = rs->tmr = NULL;
	rs->cq = NULL;
	rs->cch = NULL;
	rs->sbuf = rs->rbuf = NULL;
	rs->target_sgl = NULL;
	rs->target_iomap = NULL;
	free(rs->tiomap);
	rs->tiomap = NULL;
	rs->rmsg = NULL;
}

static void sge_to_be(struct rsk_sge *d, uint64_t addr, uint32_t key,
		      uint32_t len)
{
	d->addr = htobe64(addr);
	d->key = htobe32(key);
	d->length = htobe32(len);
}

void rsk_format_conn(struct rsk *rs, struct rsk_conn_data *c)
{
	memset(c, 0, sizeof(*c));
	c->version = RSK_CONN_VERSION;
	c->flags = RSK_CONN_FLAG_IOMAP |
		   (__BYTE_ORDER == __BIG_ENDIAN ? RSK_CONN_FLAG_NET : 0);
	c->credits = htobe16(rs->rq_size);
	c->target_iomap_size = (uint8_t)rsk_iomap_scale(rs->target_iomap_size);
	sge_to_be(&c->target_sgl, (uintptr_t)rs->target_sgl, rs->tmr->rkey,
		  RSK_SGL_SIZE);
	sge_to_be(&c->data_buf, (uintptr_t)rs->rbuf, rs->rmr->rkey,
		  rs->rbuf_size >> 1);
}

void rsk_save_conn(struct rsk *rs, const struct rsk_conn_data *c)
{
	bool net = c->flags & RSK_CONN_FLAG_NET;

	rs->remote_sgl.addr = be64toh(c->target_sgl.addr);
	rs->remote_sgl.key = be32toh(c->target_sgl.key);
	rs->remote_sgl.length = be32toh(c->target_sgl.length);
	rs->remote_sge = 1;	/* entry 0 is the data_buf below */
	rs->swap = net != (__BYTE_ORDER == __BIG_ENDIAN);
	memset(&rs->remote_iomap, 0, sizeof(rs->remote_iomap));
	if (c->flags & RSK_CONN_FLAG_IOMAP) {
		/* the peer's target iomap follows its target SGL */
		rs->remote_iomap.addr = rs->remote_sgl.addr +
			sizeof(struct rsk_sge) * rs->remote_sgl.length;
		rs->remote_iomap.length =
			(uint32_t)rsk_iomap_unscale(c->target_iomap_size);
		rs->remote_iomap.key = rs->remote_sgl.key;
	}
	memset(rs->tsge, 0, sizeof(rs->tsge));
	rs->tsge[0].addr = be64toh(c->data_buf.addr);
	rs->tsge[0].key = be32toh(c->data_buf.key);
	rs->tsge[0].length = be32toh(c->data_buf.length);
	rs->target_sge = 0;
	rs->tsgl_next = 1 % RSK_SGL_SIZE;
	rs->sseq_comp = be16toh(c->credits);
}

int rsk_post_write(struct rsk *rs, struct ibv_sge *sgl, int n, uint32_t msg,
		   unsigned int flags, uint64_t addr, uint32_t rkey, bool imm)
{
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = msg;
	wr.sg_list = sgl;
	wr.num_sge = n;
	wr.opcode = imm ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.send_flags = flags;
	if (imm)
		wr.imm_data = htobe32(msg);
	wr.wr.rdma.remote_addr = addr;
	wr.wr.rdma.rkey = rkey;
	rs->last_send_ms = rsk_now_ms();	/* keepalives wait for idleness */
	return ibv_post_send(rs->id->qp, &wr, &bad);
}

static int post_write_imm(struct rsk *rs, struct ibv_sge *sgl, int n,
			  uint32_t msg, unsigned int flags, uint64_t addr,
			  uint32_t rkey)
{
	return rsk_post_write(rs, sgl, n, msg, flags, addr, rkey, true);
}

static bool ctrl_avail(struct rsk *rs)
{
	return rs->ctrl_seqno != rs->ctrl_max_seqno;
}

bool rsk_ctrl_avail_or_closed(struct rsk *rs)
{
	return ctrl_avail(rs) || rs->state != RSK_CONNECTED;
}

int rsk_post_ctrl(struct rsk *rs, uint32_t ctrl)
{
	int ret;

	rs->ctrl_seqno++;
	ret = post_write_imm(rs, NULL, 0, RSK_MSG(RSK_OP_CTRL, ctrl), 0, 0, 0);
	if (ret) {
		rs->ctrl_seqno--;
		errno = ret;
		return -1;
	}
	return 0;
}

/* Grants credits, and the next half of the receive buffer if it is free. */
static void send_credits(struct rsk *rs)
{
	struct rsk_sge sge, *slot;
	struct ibv_sge isge;
	unsigned int flags = IBV_SEND_INLINE;
	uint32_t msg, half = rs->rbuf_size >> 1;
	uint64_t addr;

	rs->ctrl_seqno++;
	rs->rseq_comp = (uint16_t)(rs->rseq_no + (rs->rq_size >> 1));
	msg = RSK_MSG(RSK_OP_SGL, (uint16_t)(rs->rseq_no + rs->rq_size));
	if (rs->rbuf_avail < half) {
		if (post_write_imm(rs, NULL, 0, msg, 0, 0, 0))
			rs->ctrl_seqno--;
		return;
	}
	addr = (uintptr_t)rs->rbuf + rs->rbuf_free;
	if (rs->swap) {
		sge.addr = bswap_64(addr);
		sge.key = bswap_32(rs->rmr->rkey);
		sge.length = bswap_32(half);
	} else {
		sge.addr = addr;
		sge.key = rs->rmr->rkey;
		sge.length = half;
	}
	isge.addr = (uintptr_t)&sge;
	isge.length = sizeof(sge);
	isge.lkey = 0;
	if (rs->sq_inline < sizeof(sge)) {
		slot = (struct rsk_sge *)(rs->sbuf + rs->sbuf_size) +
		       (rs->ctrl_seqno & (RSK_CTRL_SLOTS - 1));
		*slot = sge;
		isge.addr = (uintptr_t)slot;
		isge.lkey = rs->smr->lkey;
		flags = 0;
	}
	if (post_write_imm(rs, &isge, 1, msg, flags,
			   rs->remote_sgl.addr +
			   (uint64_t)rs->remote_sge * sizeof(struct rsk_sge),
			   rs->remote_sgl.key)) {
		rs->ctrl_seqno--;
		return;
	}
	rs->rbuf_avail -= half;
	rs->rbuf_free += half;
	if (rs->rbuf_free >= rs->rbuf_size)
		rs->rbuf_free = 0;
	if (++rs->remote_sge == (int)rs->remote_sgl.length)
		rs->remote_sge = 0;
}

void rsk_update_credits(struct rsk *rs)
{
	if (rs->state != RSK_CONNECTED || !ctrl_avail(rs))
		return;
	if (rs->rbuf_avail >= (rs->rbuf_size >> 1) ||
	    (int16_t)(rs->rseq_no - rs->rseq_comp) >= 0)
		send_credits(rs);
}

/*
 * The half the peer offered with this credit message, if it carried one
 * (an RDMA WRITE of one SGE, in entry order from 1: entry 0 is the
 * connect data's buffer). Only that entry is read: the peer may already
 * be writing the next one, whose message has not completed yet.
 */
static void take_sge(struct rsk *rs, const struct ibv_wc *wc)
{
	int i = rs->tsgl_next;

	if (wc->byte_len != sizeof(struct rsk_sge))
		return;		/* credits only */
	rs->tsge[i].addr = rs->target_sgl[i].addr;
	rs->tsge[i].key = rs->target_sgl[i].key;
	rs->tsge[i].length = rs->target_sgl[i].length;
	rs->target_sgl[i].length = 0;
	rs->tsgl_next = (i + 1) % RSK_SGL_SIZE;
}

static void handle_recv(struct rsk *rs, const struct ibv_wc *wc)
{
	uint32_t msg;

	if (wc->status != IBV_WC_SUCCESS || !(wc->wc_flags & IBV_WC_WITH_IMM))
		return;
	msg = be32toh(wc->imm_data);
	switch (RSK_MSG_OP(msg)) {
	case RSK_OP_SGL:
		rs->sseq_comp = (uint16_t)RSK_MSG_ARG(msg);
		take_sge(rs, wc);
		break;
	case RSK_OP_CTRL:
		if (RSK_MSG_ARG(msg) == RSK_CTRL_DISCONNECT) {
			rs->state = RSK_DISCONNECTED;
			rs->readable = rs->writable = false;
		} else if (RSK_MSG_ARG(msg) == RSK_CTRL_SHUTDOWN) {
			rs->readable = false;
			if (!rs->writable)
				rs->state = RSK_DISCONNECTED;
		}
		break;
	case RSK_OP_DATA:
		rs->rmsg[rs->rmsg_tail] = RSK_MSG_ARG(msg);
		if (++rs->rmsg_tail == rs->rq_size + 1)
			rs->rmsg_tail = 0;
		break;
	case RSK_OP_IOMAP_SGL:
		if (RSK_MSG_ARG(msg) < rs->target_iomap_size) {
			volatile struct rsk_iomap *e =
				&rs->target_iomap[RSK_MSG_ARG(msg)];

			rs->tiomap[RSK_MSG_ARG(msg)].offset = e->offset;
			rs->tiomap[RSK_MSG_ARG(msg)].sge.addr = e->sge.addr;
			rs->tiomap[RSK_MSG_ARG(msg)].sge.key = e->sge.key;
			rs->tiomap[RSK_MSG_ARG(msg)].sge.length = e->sge.length;
		}
		/* the entry is in our target iomap already; this message's
		 * receive is posted again, so its credit goes back (rdma-core
		 * keeps it, which is only more cautious) */
		rs->rseq_no++;
		break;
	default:
		break;
	}
}

static void handle_send(struct rsk *rs, const struct ibv_wc *wc)
{
	uint32_t msg = (uint32_t)wc->wr_id;

	switch (RSK_MSG_OP(msg)) {
	case RSK_OP_SGL:
	case RSK_OP_CTRL:
		rs->ctrl_max_seqno++;
		if (msg == RSK_MSG(RSK_OP_CTRL, RSK_CTRL_DISCONNECT) &&
		    rs->state == RSK_CONNECTED)
			rs->state = RSK_DISCONNECTED;
		break;
	case RSK_OP_IOMAP_SGL:		/* the argument is the entry's index */
		rs->sqe_avail++;
		rs->sbuf_avail += sizeof(struct rsk_iomap);
		break;
	default:
		rs->sqe_avail++;
		rs->sbuf_avail += RSK_MSG_ARG(msg);
		break;
	}
	if (wc->status != IBV_WC_SUCCESS && rs->state == RSK_CONNECTED) {
		rs->state = RSK_ERROR;
		rs->err = EIO;
		rs->readable = rs->writable = false;
	}
}

int rsk_poll_cq(struct rsk *rs)
{
	struct ibv_wc wc[16];
	int n, i, rcnt = 0, ret = 0;

	if (!rs->cq)
		return 0;
	rsk_update_credits(rs);
	while ((n = ibv_poll_cq(rs->cq, UR_ARRAY_SIZE(wc), wc)) > 0) {
		for (i = 0; i < n; i++) {
			if (wc[i].wr_id & RSK_WR_RECV) {
				rcnt++;
				handle_recv(rs, &wc[i]);
			} else {
				handle_send(rs, &wc[i]);
			}
		}
	}
	/* the passive side receives before its RTU: replenish there too */
	if (rs->state == RSK_CONNECTED || rs->state == RSK_ACCEPTING) {
		while (!ret && rcnt--)
			ret = post_recv(rs);
		if (ret) {
			rs->state = RSK_ERROR;
			rs->err = ret;
			errno = ret;
			return -1;
		}
	}
	rsk_update_credits(rs);
	return 0;
}

bool rsk_can_send(struct rsk *rs)
{
	return rs->state == RSK_CONNECTED && rs->sqe_avail &&
	       rs->sbuf_avail >= RSK_SNDLOWAT && rs->sseq_no != rs->sseq_comp &&
	       rs->tsge[rs->target_sge].length != 0;
}

bool rsk_have_rdata(struct rsk *rs)
{
	return rs->rmsg && rs->rmsg_head != rs->rmsg_tail;
}

bool rsk_sends_done(struct rsk *rs)
{
	return rs->state != RSK_CONNECTED ||
	       (int)(rs->ctrl_max_seqno - rs->ctrl_seqno) + rs->sqe_avail ==
	       rs->sq_size;
}

bool rsk_arm(struct rsk *rs)
{
	if (!rs->cq || rs->cq_armed)
		return false;
	ibv_req_notify_cq(rs->cq, 0);
	rs->cq_armed = true;
	return true;
}

void rsk_cq_event(struct rsk *rs)
{
	struct ibv_cq *cq;
	void *ctx;

	if (!rs->cch || ibv_get_cq_event(rs->cch, &cq, &ctx))
		return;
	rs->cq_armed = false;
	if (++rs->unacked >= 256) {
		ibv_ack_cq_events(rs->cq, rs->unacked);
		rs->unacked = 0;
	}
}

int rsk_wait(struct rsk *rs, int ms)
{
	struct pollfd p[2];
	int n = 0, ret;

	p[n++] = (struct pollfd){ .fd = rs->chan->fd, .events = POLLIN };
	if (rs->cch)
		p[n++] = (struct pollfd){ .fd = rs->cch->fd, .events = POLLIN };
	if (ms < 0 || ms > UR_RSK_WAKE_MS)
		ms = UR_RSK_WAKE_MS;
	pthread_mutex_unlock(&rs->lock);
	ret = poll(p, (nfds_t)n, ms);
	pthread_mutex_lock(&rs->lock);
	if (ret < 0 && errno != EINTR)
		return -1;
	rsk_cq_event(rs);
	return 0;
}

/* Copies one gathered piece of at most len from iov at *off into dst. */
static void gather(uint8_t *dst, const struct iovec **iov, size_t *off,
		   size_t len)
{
	size_t n;

	while (len) {
		n = UR_MIN(len, (*iov)->iov_len - *off);
		memcpy(dst, (uint8_t *)(*iov)->iov_base + *off, n);
		dst += n;
		len -= n;
		*off += n;
		if (*off == (*iov)->iov_len) {
			(*iov)++;
			*off = 0;
		}
	}
}

int rsk_stage(struct rsk *rs, const struct iovec **cur, size_t *off,
	      size_t len, struct ibv_sge sg[2])
{
	size_t first = UR_MIN(len, (size_t)(rs->sbuf_size - rs->sbuf_head));
	int n = 1;

	gather(rs->sbuf + rs->sbuf_head, cur, off, first);
	sg[0].addr = (uintptr_t)rs->sbuf + rs->sbuf_head;
	sg[0].length = (uint32_t)first;
	sg[0].lkey = rs->smr->lkey;
	if (len > first) {
		gather(rs->sbuf, cur, off, len - first);
		sg[1].addr = (uintptr_t)rs->sbuf;
		sg[1].length = (uint32_t)(len - first);
		sg[1].lkey = rs->smr->lkey;
		n = 2;
	}
	rs->sbuf_head = (uint32_t)((rs->sbuf_head + len) % rs->sbuf_size);
	rs->sqe_avail--;
	rs->sbuf_avail -= (uint32_t)len;
	return n;
}

size_t rsk_next_xfer(uint32_t *olen, size_t left)
{
	size_t xfer = left;

	if (*olen < left) {
		xfer = *olen;
		if (*olen < RSK_MAX_XFER)
			*olen <<= 1;
	}
	return xfer;
}

void rsk_destroy(struct rsk *rs)
{
	rsk_free_ep(rs);
	if (rs->id)
		rdma_destroy_id(rs->id);
	if (rs->chan)
		rdma_destroy_event_channel(rs->chan);
	pthread_mutex_destroy(&rs->lock);
	free(rs);
}
