/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "te_util.h"

static struct ibv_context *te_ctx[2];

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int open_devices(void)
{
	struct ibv_device **list;
	int n = 0, i;

	if (te_ctx[0])
		return 0;
	setenv("UROCE_NUM_DEVICES", "2", 0);
	list = ibv_get_device_list(&n);
	if (!list || n < 2)
		return -ENODEV;
	for (i = 0; i < 2; i++) {
		te_ctx[i] = ibv_open_device(list[i]);
		if (!te_ctx[i])
			return -errno;
	}
	ibv_free_device_list(list);
	return 0;
}

void te_close_devices(void)
{
	int i;

	for (i = 0; i < 2; i++) {
		if (te_ctx[i])
			ibv_close_device(te_ctx[i]);
		te_ctx[i] = NULL;
	}
}

static int side_open(struct te_side *s, struct ibv_context *ctx,
		     uint64_t send_ops,
		     enum ibv_qp_type t)
{
	struct ibv_qp_init_attr ia;

	memset(s, 0, sizeof(*s));
	s->ctx = ctx;
	if (ibv_query_gid(ctx, 1, 0, &s->gid))
		return -1;
	s->pd = ibv_alloc_pd(ctx);
	s->scq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	s->rcq = ibv_create_cq(ctx, 512, NULL, NULL, 0);
	s->buf = aligned_alloc(4096, TE_BUF);
	if (!s->pd || !s->scq || !s->rcq || !s->buf)
		return -1;
	memset(s->buf, 0, TE_BUF);
	s->mr = ibv_reg_mr(s->pd, s->buf, TE_BUF,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC);
	if (!s->mr)
		return -1;
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = s->scq;
	ia.recv_cq = s->rcq;
	ia.qp_type = t;
	ia.cap.max_send_wr = 256;
	ia.cap.max_recv_wr = 256;
	ia.cap.max_send_sge = 4;
	ia.cap.max_recv_sge = 4;
	ia.cap.max_inline_data = 256;
	if (send_ops) {
		struct ibv_qp_init_attr_ex iax;

		memset(&iax, 0, sizeof(iax));
		memcpy(&iax, &ia, sizeof(ia));
		iax.pd = s->pd;
		iax.comp_mask = IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		iax.send_ops_flags = send_ops;
		s->qp = ibv_create_qp_ex(ctx, &iax);
	} else {
		s->qp = ibv_create_qp(s->pd, &ia);
	}
	return s->qp ? 0 : -1;
}

struct ibv_qp *te_rc_qp(struct ibv_pd *pd, struct ibv_cq *scq,
			struct ibv_cq *rcq, uint32_t depth)
{
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq;
	ia.recv_cq = rcq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = depth;
	ia.cap.max_recv_wr = depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	return ibv_create_qp(pd, &ia);
}

int te_pair_open(struct te_pair *p, enum ibv_qp_type t)
{
	return te_pair_open_ex(p, t, 0);
}

int te_pair_open_ex(struct te_pair *p, enum ibv_qp_type t, uint64_t send_ops)
{
	int i;

	memset(p, 0, sizeof(*p));
	p->type = t;
	if (open_devices())
		return -1;
	for (i = 0; i < 2; i++)
		if (side_open(&p->s[i], te_ctx[i], send_ops, t))
			return -1;
	return 0;
}

void te_pair_close(struct te_pair *p)
{
	int i;

	for (i = 0; i < 2; i++) {
		struct te_side *s = &p->s[i];

		if (s->qp)
			ibv_destroy_qp(s->qp);
		if (s->mr)
			ibv_dereg_mr(s->mr);
		if (s->scq)
			ibv_destroy_cq(s->scq);
		if (s->rcq)
			ibv_destroy_cq(s->rcq);
		if (s->pd)
			ibv_dealloc_pd(s->pd);
		free(s->buf);
	}
	memset(p, 0, sizeof(*p));
}

int te_pair_teardown(void **state)
{
	struct te_pair *p = *state;

	te_pair_close(p);
	free(p);
	return 0;
}

int te_qp_to_reset(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

static const struct te_conn_opts te_def_opts = {
	.retry_cnt = 7, .rnr_retry = 7, .psn = { 0x123456, 0xfffff0 }
};

static int side_init(struct te_pair *p, struct te_side *s,
		     const struct te_conn_opts *o)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
	if (p->type == IBV_QPT_UD) {
		a.qkey = 0x11111111;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ |
				    IBV_ACCESS_REMOTE_ATOMIC | o->access;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	return ibv_modify_qp(s->qp, &a, mask) ? -1 : 0;
}

static int side_rtr(struct te_pair *p, int me, const struct te_conn_opts *o)
{
	struct te_side *s = &p->s[me], *peer = &p->s[!me];
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (p->type != IBV_QPT_UD) {
		a.path_mtu = TE_MTU;
		a.dest_qp_num = peer->qp->qp_num;
		a.rq_psn = o->psn[!me];
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = peer->gid;
		a.ah_attr.grh.sgid_index = 0;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (p->type == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = o->min_rnr_timer ? o->min_rnr_timer :
							     1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
	}
	return ibv_modify_qp(s->qp, &a, mask) ? -1 : 0;
}

static int side_rts(struct te_pair *p, int me, const struct te_conn_opts *o)
{
	struct ibv_qp_attr a;
	int mask;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = o->psn[me];
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (p->type == IBV_QPT_RC) {
		a.timeout = o->timeout ? o->timeout : 12;
		a.retry_cnt = o->retry_cnt;
		a.rnr_retry = o->rnr_retry;
		a.max_rd_atomic = 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	return ibv_modify_qp(p->s[me].qp, &a, mask) ? -1 : 0;
}

int te_side_to(struct te_pair *p, int me, const struct te_conn_opts *o,
	       enum ibv_qp_state to)
{
	if (!o)
		o = &te_def_opts;
	switch (to) {
	case IBV_QPS_INIT:
		return side_init(p, &p->s[me], o);
	case IBV_QPS_RTR:
		return side_rtr(p, me, o);
	case IBV_QPS_RTS:
		return side_rts(p, me, o);
	default:
		return -1;
	}
}

int te_pair_connect(struct te_pair *p, const struct te_conn_opts *o)
{
	static const enum ibv_qp_state steps[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS
	};
	int me, i;

	for (me = 0; me < 2; me++)
		for (i = 0; i < 3; i++)
			if (te_side_to(p, me, o, steps[i]))
				return -1;
	return 0;
}

int te_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	int n;

	do {
		n = ibv_poll_cq(cq, 1, wc);
		if (n)
			return n;
	} while (now_ms() < end);
	return 0;
}

int te_poll_none(struct ibv_cq *cq, int ms)
{
	struct ibv_wc wc;
	uint64_t end = now_ms() + (uint64_t)ms;
	int seen = 0;

	do {
		seen += ibv_poll_cq(cq, 1, &wc) > 0;
	} while (now_ms() < end);
	return seen;
}

int te_post_recv(struct te_side *s, uint64_t wr_id, uint32_t off,
		 uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	return ibv_post_recv(s->qp, &wr, &bad);
}

int te_post_send(struct te_side *s, enum ibv_wr_opcode op, uint64_t wr_id,
		 uint32_t off, uint32_t len, uint64_t raddr, uint32_t rkey,
		 unsigned int flags)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_send_wr wr, *bad;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.opcode = op;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = flags | IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(s->qp, &wr, &bad);
}

size_t te_nonzero_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	size_t i, nz = 0;

	for (i = 0; i < n; i++)
		nz += b[i] != 0;
	return nz;
}

uint64_t te_counter(struct te_side *s, const char *name)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char path[512];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path),
		 "%s/uroce-%u/%d/sys/class/infiniband/%s/ports/1/"
		 "hw_counters/%s",
		 xdg && *xdg ? xdg : "/tmp", (unsigned int)getuid(),
		 (int)getpid(), ibv_get_device_name(s->ctx->device), name);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &v) != 1)
		v = 0;
	fclose(f);
	return v;
}

uint64_t te_counter_reaches(struct te_side *s, const char *name,
			    uint64_t want)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 200; i++) {
		v = te_counter(s, name);
		if (v >= want)
			break;
		usleep(10000);
	}
	return v;
}

uint64_t te_counter_settled(struct te_side *s, const char *name)
{
	usleep(150000);
	return te_counter(s, name);
}

struct te_race {
	struct te_side *a;
	uint32_t len;
	int poll_ms;
	atomic_bool stop;
};

static void *te_race_sender(void *arg)
{
	struct te_race *r = arg;
	struct te_side *a = r->a;
	struct ibv_sge sge = { (uintptr_t)a->buf, r->len, a->mr->lkey };
	struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	while (!atomic_load(&r->stop)) {
		if (ibv_post_send(a->qp, &wr, &bad))
			break;
		/* the receives run out: RNR, retried until the QP goes */
		if (te_poll(a->scq, &wc, r->poll_ms) != 1 ||
		    wc.status != IBV_WC_SUCCESS)
			break;
		wr.wr_id++;
	}
	return NULL;
}

/* n receives of len bytes each over m, lkey's, to srq or else qp. */
static int te_race_recvs(struct ibv_qp *qp, struct ibv_srq *srq,
			 uint8_t *m, uint32_t lkey, uint32_t len, uint32_t n)
{
	struct ibv_recv_wr wr, *bad;
	struct ibv_sge sge;
	uint32_t i;

	for (i = 0; i < n; i++) {
		sge = (struct ibv_sge){ (uintptr_t)m + (size_t)i * len, len,
					lkey };
		wr = (struct ibv_recv_wr){ .wr_id = i, .sg_list = &sge,
					   .num_sge = 1 };
		if (srq ? ibv_post_srq_recv(srq, &wr, &bad) :
			  ibv_post_recv(qp, &wr, &bad))
			return -1;
	}
	return 0;
}

size_t te_dereg_during_sends(struct te_side *a, struct ibv_pd *pd,
			     struct ibv_qp *qp, struct ibv_srq *srq,
			     uint32_t len, uint32_t n, int poll_ms)
{
	struct te_race r = { .a = a, .len = len, .poll_ms = poll_ms };
	size_t blen = (size_t)len * n, nz = SIZE_MAX;
	uint8_t *m = calloc(1, blen);
	struct ibv_mr *mr = m ? ibv_reg_mr(pd, m, blen,
					   IBV_ACCESS_LOCAL_WRITE) : NULL;
	pthread_t th;
	int rc;

	atomic_init(&r.stop, false);
	if (!mr || te_race_recvs(qp, srq, m, mr->lkey, len, n) ||
	    pthread_create(&th, NULL, te_race_sender, &r)) {
		if (mr)
			ibv_dereg_mr(mr);
		free(m);
		return SIZE_MAX;	/* no race run: never a pass */
	}
	usleep((useconds_t)(rand() % 300));
	rc = ibv_dereg_mr(mr);
	memset(m, 0, blen);
	usleep(20000);
	if (!rc)
		nz = te_nonzero_bytes(m, blen);
	atomic_store(&r.stop, true);
	pthread_join(th, NULL);
	free(m);
	return nz;
}
