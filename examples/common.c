/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connection set-up through rdma_cm and the small helpers every example
 * shares (common.h says what each one is for).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* program_invocation_short_name, RUSAGE_THREAD */
#endif
#include "common.h"

#include <errno.h>
#include <stdint.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>


void ex_err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program_invocation_short_name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

uint64_t ex_now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * A process that spins on memory the peer writes must let the peer (and,
 * on uroce, its own progress thread) run when cores are few: yield every
 * 256 spins. On a NIC with cores to spare this costs next to nothing.
 */
void ex_relax(unsigned long *spins)
{
	if ((++*spins & 255) == 0)
		sched_yield();
#if defined(__x86_64__) || defined(__i386__)
	else
		__builtin_ia32_pause();
#endif
}

int ex_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	default: break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

/* A cheap stream of bytes that depends on the seed and the position. */
static uint8_t pattern_byte(uint64_t seed, uint64_t pos)
{
	uint64_t x = (seed + 1) * 0x9e3779b97f4a7c15ull + (pos >> 3);

	x ^= x >> 29;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 32;
	return (uint8_t)(x >> ((pos & 7) * 8));
}

void ex_fill(void *buf, size_t len, uint64_t seed, uint64_t off)
{
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pattern_byte(seed, off + i);
}

long ex_check(const void *buf, size_t len, uint64_t seed, uint64_t off)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i] != pattern_byte(seed, off + i))
			return (long)i;
	return -1;
}

struct ibv_mr *ex_reg(struct ibv_pd *pd, size_t len, int access)
{
	struct ibv_mr *mr;
	void *buf;
	long pg = sysconf(_SC_PAGESIZE);

	if (posix_memalign(&buf, (size_t)pg, len ? len : 1)) {
		ex_err("out of memory (%zu bytes)", len);
		return NULL;
	}
	memset(buf, 0, len);
	mr = ibv_reg_mr(pd, buf, len, access);
	if (!mr) {
		ex_err("ibv_reg_mr(%zu bytes): %s", len, strerror(errno));
		free(buf);
	}
	return mr;
}

void ex_dereg(struct ibv_mr *mr)
{
	void *buf;

	if (!mr)
		return;
	buf = mr->addr;
	ibv_dereg_mr(mr);
	free(buf);
}

/* NULL (said) on a timeout or an error. */
struct rdma_cm_event *ex_next_event(struct rdma_event_channel *ec, int ms)
{
	struct pollfd p = { .fd = ec->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int r;

	do
		r = poll(&p, 1, ms);
	while (r < 0 && errno == EINTR);
	if (r <= 0) {
		ex_err("no rdma_cm event within %d ms", ms);
		return NULL;
	}
	if (rdma_get_cm_event(ec, &ev)) {
		ex_err("rdma_get_cm_event: %s", strerror(errno));
		return NULL;
	}
	return ev;
}

/* The next event, which must be of type want (else said, and NULL). */
static struct rdma_cm_event *expect_event(struct rdma_event_channel *ec,
					  enum rdma_cm_event_type want, int ms)
{
	struct rdma_cm_event *ev = ex_next_event(ec, ms);

	if (ev && ev->event != want) {
		ex_err("got %s (status %d) instead of %s",
		       rdma_event_str(ev->event), ev->status,
		       rdma_event_str(want));
		rdma_ack_cm_event(ev);
		return NULL;
	}
	return ev;
}

static void save_pdata(struct ex_conn *c, const struct rdma_conn_param *p)
{
	c->peer_len = 0;
	if (p->private_data && p->private_data_len) {
		c->peer_len = p->private_data_len < sizeof(c->peer) ?
			      p->private_data_len : sizeof(c->peer);
		memcpy(c->peer, p->private_data, c->peer_len);
	}
}

/* The READ/atomic depths this device can take, at most 16. */
static void rd_depths(struct ibv_context *verbs, uint8_t *init, uint8_t *resp)
{
	struct ibv_device_attr a;

	*init = *resp = 1;
	if (ibv_query_device(verbs, &a))
		return;
	*init = (uint8_t)(a.max_qp_init_rd_atom < 16 ? a.max_qp_init_rd_atom : 16);
	*resp = (uint8_t)(a.max_qp_rd_atom < 16 ? a.max_qp_rd_atom : 16);
}

/* PD (unless given), CQ and RC QP for c->id, on the id's device. */
static int build_qp(struct ex_conn *c, struct ibv_pd *pd)
{
	struct ibv_qp_init_attr qa = { 0 };
	int cqe = c->caps.cqe ? c->caps.cqe :
		  (int)(c->caps.send_wr + c->caps.recv_wr);

	if (!c->pd) {
		c->pd = pd ? pd : ibv_alloc_pd(c->id->verbs);
		c->own_pd = !pd;
		if (!c->pd) {
			ex_err("ibv_alloc_pd: %s", strerror(errno));
			return -1;
		}
	}
	if (c->pd->context != c->id->verbs) {
		ex_err("the peer is reached through another device than before");
		return -1;
	}
	if (!c->cq) {
		if (c->caps.events) {
			c->chan = ibv_create_comp_channel(c->id->verbs);
			if (!c->chan) {
				ex_err("ibv_create_comp_channel: %s",
				       strerror(errno));
				return -1;
			}
		}
		c->cq = ibv_create_cq(c->id->verbs, cqe, NULL, c->chan, 0);
		if (!c->cq) {
			ex_err("ibv_create_cq(%d): %s", cqe, strerror(errno));
			return -1;
		}
	}
	qa.send_cq = c->cq;
	qa.recv_cq = c->cq;
	qa.qp_type = IBV_QPT_RC;
	qa.cap.max_send_wr = c->caps.send_wr ? c->caps.send_wr : 1;
	qa.cap.max_recv_wr = c->caps.recv_wr ? c->caps.recv_wr : 1;
	qa.cap.max_send_sge = c->caps.send_sge ? c->caps.send_sge : 1;
	qa.cap.max_recv_sge = 1;
	qa.cap.max_inline_data = c->caps.inline_data;
	/* WRs are signalled only where the example asks (IBV_SEND_SIGNALED) */
	qa.sq_sig_all = 0;
	if (rdma_create_qp(c->id, c->pd, &qa)) {
		ex_err("rdma_create_qp: %s", strerror(errno));
		return -1;
	}
	c->qp = c->id->qp;
	c->max_inline = qa.cap.max_inline_data;
	return 0;
}

int ex_listen(struct ex_conn *l, const char *host, const char *port)
{
	struct rdma_addrinfo hints = { 0 }, *ai = NULL;
	int r;

	memset(l, 0, sizeof(*l));
	l->ec = rdma_create_event_channel();
	if (!l->ec) {
		ex_err("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	l->own_ec = true;
	hints.ai_flags = RAI_PASSIVE;
	hints.ai_port_space = RDMA_PS_TCP;
	r = rdma_getaddrinfo(host, port, &hints, &ai);
	if (r) {
		ex_err("rdma_getaddrinfo(%s, %s): %s", host ? host : "*", port,
		       strerror(errno));
		return -1;
	}
	if (rdma_create_id(l->ec, &l->listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(l->listen, ai->ai_src_addr) ||
	    rdma_listen(l->listen, 8)) {
		ex_err("listening on %s port %s: %s", host ? host : "*", port,
		       strerror(errno));
		rdma_freeaddrinfo(ai);
		return -1;
	}
	rdma_freeaddrinfo(ai);
	return 0;
}

int ex_get_request(struct ex_conn *l, struct ex_conn *c,
		   const struct ex_caps *caps, struct ibv_pd *pd)
{
	struct rdma_cm_event *ev;

	ev = expect_event(l->ec, RDMA_CM_EVENT_CONNECT_REQUEST, 120000);
	if (!ev)
		return -1;
	return ex_from_request(l, c, ev, caps, pd);
}

int ex_from_request(struct ex_conn *l, struct ex_conn *c,
		    struct rdma_cm_event *ev, const struct ex_caps *caps,
		    struct ibv_pd *pd)
{
	uint8_t init, resp;

	memset(c, 0, sizeof(*c));
	c->ec = l->ec;
	c->caps = *caps;
	c->id = ev->id;
	save_pdata(c, &ev->param.conn);
	/* answer the depths the client offered with what we can do */
	rd_depths(c->id->verbs, &init, &resp);
	c->rd_resp = ev->param.conn.initiator_depth < resp ?
		     ev->param.conn.initiator_depth : resp;
	c->rd_init = ev->param.conn.responder_resources < init ?
		     ev->param.conn.responder_resources : init;
	rdma_ack_cm_event(ev);
	if (build_qp(c, pd)) {
		rdma_reject(c->id, NULL, 0);
		return -1;
	}
	return 0;
}

int ex_accept(struct ex_conn *c, const void *pdata, uint8_t len)
{
	struct rdma_cm_event *ev;

	if (ex_accept_nowait(c, pdata, len))
		return -1;
	ev = expect_event(c->ec, RDMA_CM_EVENT_ESTABLISHED, EX_WAIT_MS);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	c->connected = true;
	return 0;
}

int ex_accept_nowait(struct ex_conn *c, const void *pdata, uint8_t len)
{
	struct rdma_conn_param p = { 0 };

	p.private_data = pdata;
	p.private_data_len = len;
	p.responder_resources = c->rd_resp;
	p.initiator_depth = c->rd_init;
	p.rnr_retry_count = 7;
	if (c->caps.on_qp && c->caps.on_qp(c, c->caps.arg))
		return -1;
	if (rdma_accept(c->id, &p)) {
		ex_err("rdma_accept: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* One try at resolving c->host: a fresh id, then its route and QP. */
static int resolve_once(struct ex_conn *c, struct rdma_addrinfo *ai)
{
	struct rdma_cm_event *ev;

	if (rdma_create_id(c->ec, &c->id, NULL, RDMA_PS_TCP)) {
		ex_err("rdma_create_id: %s", strerror(errno));
		return -1;
	}
	if (rdma_resolve_addr(c->id, NULL, ai->ai_dst_addr, 2000))
		return 1;
	ev = ex_next_event(c->ec, EX_WAIT_MS);
	if (!ev)
		return -1;
	if (ev->event != RDMA_CM_EVENT_ADDR_RESOLVED) {
		rdma_ack_cm_event(ev);
		return 1;
	}
	rdma_ack_cm_event(ev);
	if (rdma_resolve_route(c->id, 2000))
		return 1;
	ev = ex_next_event(c->ec, EX_WAIT_MS);
	if (!ev)
		return -1;
	if (ev->event != RDMA_CM_EVENT_ROUTE_RESOLVED) {
		rdma_ack_cm_event(ev);
		return 1;
	}
	rdma_ack_cm_event(ev);
	return build_qp(c, NULL);
}

static void drop_id(struct ex_conn *c)
{
	if (c->qp)
		rdma_destroy_qp(c->id);
	c->qp = NULL;
	if (c->id)
		rdma_destroy_id(c->id);
	c->id = NULL;
}

/* Resolve again until it works or EX_CONNECT_TRY_MS has passed. */
static int resolve_retry(struct ex_conn *c, uint64_t deadline)
{
	struct rdma_addrinfo hints = { 0 }, *ai = NULL;
	int r;

	hints.ai_port_space = RDMA_PS_TCP;
	if (rdma_getaddrinfo(c->host, c->port, &hints, &ai)) {
		ex_err("rdma_getaddrinfo(%s, %s): %s", c->host, c->port,
		       strerror(errno));
		return -1;
	}
	for (;;) {
		r = resolve_once(c, ai);
		if (r <= 0)
			break;
		drop_id(c);
		if (ex_now_ns() > deadline) {
			ex_err("cannot resolve %s", c->host);
			r = -1;
			break;
		}
		usleep(100000);
	}
	rdma_freeaddrinfo(ai);
	return r;
}

int ex_resolve(struct ex_conn *c, const char *host, const char *port,
	       const struct ex_caps *caps)
{
	memset(c, 0, sizeof(*c));
	c->caps = *caps;
	c->host = host;
	c->port = port;
	c->ec = rdma_create_event_channel();
	if (!c->ec) {
		ex_err("rdma_create_event_channel: %s", strerror(errno));
		return -1;
	}
	c->own_ec = true;
	return resolve_retry(c, ex_now_ns() + EX_CONNECT_TRY_MS * 1000000ull);
}

int ex_connect(struct ex_conn *c, const void *pdata, uint8_t len)
{
	uint64_t deadline = ex_now_ns() + EX_CONNECT_TRY_MS * 1000000ull;
	struct rdma_conn_param p = { 0 };
	struct rdma_cm_event *ev;
	int type, status;

	rd_depths(c->id->verbs, &p.initiator_depth, &p.responder_resources);
	p.private_data = pdata;
	p.private_data_len = len;
	p.retry_count = 7;
	p.rnr_retry_count = 7;
	for (;;) {
		if (c->caps.on_qp && c->caps.on_qp(c, c->caps.arg))
			return -1;
		if (rdma_connect(c->id, &p)) {
			ex_err("rdma_connect: %s", strerror(errno));
			return -1;
		}
		ev = ex_next_event(c->ec, EX_WAIT_MS);
		if (!ev)
			return -1;
		type = ev->event;
		status = ev->status;
		if (type == RDMA_CM_EVENT_ESTABLISHED) {
			save_pdata(c, &ev->param.conn);
			rdma_ack_cm_event(ev);
			c->connected = true;
			return 0;
		}
		rdma_ack_cm_event(ev);
		/* no listener yet (or not yet published): try again */
		if ((type != RDMA_CM_EVENT_REJECTED &&
		     type != RDMA_CM_EVENT_UNREACHABLE &&
		     type != RDMA_CM_EVENT_CONNECT_ERROR) ||
		    ex_now_ns() > deadline) {
			ex_err("connecting to %s port %s: %s (status %d)",
			       c->host, c->port, rdma_event_str(type), status);
			return -1;
		}
		/*
		 * A fresh QP and CQ: librdmacm moves a rejected id's QP to
		 * ERR, which flushes its receives into the CQ, and not every
		 * provider takes a destroyed QP's completions out of its CQ
		 * again: they must not meet the next QP's.
		 */
		drop_id(c);
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
		usleep(100000);
		if (resolve_retry(c, deadline))
			return -1;
	}
}

int ex_wait_disconnect(struct ex_conn *c)
{
	struct rdma_cm_event *ev;

	ev = expect_event(c->ec, RDMA_CM_EVENT_DISCONNECTED, 120000);
	if (!ev)
		return -1;
	rdma_ack_cm_event(ev);
	c->connected = false;
	return 0;
}

void ex_close(struct ex_conn *c)
{
	struct rdma_cm_event *ev;

	/*
	 * A client waits for its DISCONNECTED. A server's connection shares
	 * the listener's channel, where the next event may be the next
	 * client's connect request, so it does not: destroying the id
	 * drops its own events still to come.
	 */
	if (c->connected && c->id && !rdma_disconnect(c->id) && c->own_ec) {
		ev = ex_next_event(c->ec, 2000);
		if (ev)
			rdma_ack_cm_event(ev);
	}
	c->connected = false;
	drop_id(c);
	if (c->listen)
		rdma_destroy_id(c->listen);
	if (c->cq)
		ibv_destroy_cq(c->cq);
	if (c->chan)
		ibv_destroy_comp_channel(c->chan);
	if (c->pd && c->own_pd)
		ibv_dealloc_pd(c->pd);
	if (c->ec && c->own_ec)
		rdma_destroy_event_channel(c->ec);
	memset(c, 0, sizeof(*c));
}

int ex_post_recv(struct ex_conn *c, void *addr, uint32_t len, uint32_t lkey,
		 uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;
	int r = ibv_post_recv(c->qp, &wr, &bad);

	if (r)
		ex_err("ibv_post_recv: %s", strerror(r));
	return r ? -1 : 0;
}

int ex_post_send(struct ex_conn *c, enum ibv_wr_opcode op, void *addr,
		 uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		 unsigned int flags, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)addr, len, lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int r;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	r = ibv_post_send(c->qp, &wr, &bad);
	if (r)
		ex_err("ibv_post_send: %s", strerror(r));
	return r ? -1 : 0;
}

static int check_wcs(const struct ibv_wc *wc, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS) {
			ex_err("completion of wr_id %llu: %s (vendor error %u)",
			       (unsigned long long)wc[i].wr_id,
			       ibv_wc_status_str(wc[i].status),
			       wc[i].vendor_err);
			return -1;
		}
	return 0;
}

int ex_wait_wc(struct ex_conn *c, struct ibv_wc *wc, int n)
{
	uint64_t deadline = ex_now_ns() + EX_WAIT_MS * 1000000ull;
	unsigned long spins = 0;
	int got = 0, r;

	while (got < n) {
		r = ibv_poll_cq(c->cq, n - got, wc + got);
		if (r < 0) {
			ex_err("ibv_poll_cq failed");
			return -1;
		}
		if (r) {
			if (check_wcs(wc + got, r))
				return -1;
			got += r;
			continue;
		}
		if ((spins & 4095) == 4095 && ex_now_ns() > deadline) {
			ex_err("no completion within %d ms (%d of %d)",
			       EX_WAIT_MS, got, n);
			return -1;
		}
		ex_relax(&spins);
	}
	return 0;
}

int ex_wait_wc_event(struct ex_conn *c, struct ibv_wc *wc, int n)
{
	struct pollfd p = { .fd = c->chan->fd, .events = POLLIN };
	struct ibv_cq *cq;
	void *ctx;
	int got = 0, r;

	while (got < n) {
		/*
		 * Arm, then poll once more: a completion that came between
		 * the last poll and the arming raises no event.
		 */
		if (ibv_req_notify_cq(c->cq, 0)) {
			ex_err("ibv_req_notify_cq failed");
			return -1;
		}
		r = ibv_poll_cq(c->cq, n - got, wc + got);
		if (r < 0) {
			ex_err("ibv_poll_cq failed");
			return -1;
		}
		if (r) {
			if (check_wcs(wc + got, r))
				return -1;
			got += r;
			continue;
		}
		do
			r = poll(&p, 1, EX_WAIT_MS);
		while (r < 0 && errno == EINTR);
		if (r <= 0) {
			ex_err("no completion event within %d ms", EX_WAIT_MS);
			return -1;
		}
		if (ibv_get_cq_event(c->chan, &cq, &ctx)) {
			ex_err("ibv_get_cq_event failed");
			return -1;
		}
		ibv_ack_cq_events(cq, 1);
	}
	return 0;
}

int ex_wait_recv(struct ex_conn *c, struct ibv_wc *wc)
{
	if (c->nstash) {
		*wc = c->stash[0];
		memmove(c->stash, c->stash + 1, --c->nstash * sizeof(*wc));
		return 0;
	}
	for (;;) {
		if (ex_wait_wc(c, wc, 1))
			return -1;
		if (wc->opcode & IBV_WC_RECV)
			return 0;
		c->sends_done++;
	}
}

int ex_wait_sends(struct ex_conn *c, uint64_t n)
{
	struct ibv_wc wc;

	while (c->sends_done < n) {
		if (ex_wait_wc(c, &wc, 1))
			return -1;
		if (!(wc.opcode & IBV_WC_RECV)) {
			c->sends_done++;
			continue;
		}
		if (c->nstash == (int)(sizeof(c->stash) / sizeof(wc))) {
			ex_err("more than %d receives while waiting for a send",
			       c->nstash);
			return -1;
		}
		c->stash[c->nstash++] = wc;
	}
	return 0;
}
