/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * claims: the optimisations the RDMA programming guides recommend, each
 * measured against its own baseline in the same run, on whatever device
 * rdma_cm resolves the server's address to (uroce, rxe, a RoCE NIC).
 *
 *   inline      latency of a signalled 8..256-byte WRITE, inline or not
 *   postlist    64-byte WRITE rate posting WR lists of 1, 4, 16, 64
 *   signal      64-byte WRITE rate and CPU signalling every 1, 16, 64 WRs
 *   align       64 KB WRITE bandwidth, buffers aligned or 1 byte off
 *   events      64-byte WRITE latency and CPU, busy polling or CQ events
 *   regmr       ibv_reg_mr + ibv_dereg_mr cost per MB, and a 1 MB WRITE
 *               that registers its buffer each time against a cached MR
 *   aggregate   16-byte updates per second and their latency, B per WRITE,
 *               flat out and paced at 20000 updates per second
 *   rendezvous  message round trip by size: eager SEND against RTS/CTS +
 *               RDMA WRITE (claims_plot.sh draws it)
 *
 * The client prints one tab-separated line per number,
 *   <claim> <variant> <x> <metric> <value>
 * (examples/claims.sh turns them into docs/patterns.md's table and the
 * plots). Latencies are medians. CPU is getrusage: "thread" is the
 * application's own thread, "process" adds what the device used in the
 * process (on uroce the NIC is threads of the process; on hardware it is
 * not there at all).
 *
 * The server only answers the rendezvous and eager messages; for all the
 * rest it just lends its memory.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* RUSAGE_THREAD */
#endif
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define REMOTE_LEN (4u << 20)	/* the server's landing zone */
#define LOCAL_LEN (4u << 20)
/* an eager receive buffer takes the largest message and its header */
#define EAGER_BUF ((1u << 20) + 64)
#define NRECV 4
#define SQ 256

enum { M_EAGER = 1, M_RTS, M_CTS, M_FIN, M_ACK, M_BYE };

struct msg {
	uint32_t type;
	uint32_t len;
	uint64_t addr;
	uint32_t rkey;
	uint32_t pad;
};

struct zone_info {
	uint64_t addr;
	uint32_t rkey;
};

struct opts {
	const char *host, *port, *only;
	bool server, quick;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: claims -s [-p PORT]\n"
"       claims -c HOST [-p PORT] [--short] [--only CLAIM]\n"
"\n"
"Measures each optimisation against its baseline in one run and prints\n"
"tab-separated lines: claim, variant, x, metric, value. CLAIM is one of\n"
"inline postlist signal align events regmr aggregate rendezvous. --short:\n"
"few iterations (a smoke test; the numbers mean little). examples/claims.sh\n"
"runs both ends and writes the table and plots. rdma_cm to HOST port PORT\n"
"(7477).\n");
}

/* ---- the server ---- */

static int srv_post(struct ex_conn *c, void *arg)
{
	struct ibv_mr *mr = arg;
	int i;

	for (i = 0; i < NRECV; i++)
		if (ex_post_recv(c, (uint8_t *)mr->addr + (size_t)i * EAGER_BUF,
				 EAGER_BUF, mr->lkey, (uint64_t)i))
			return -1;
	return 0;
}

static int run_server(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 16, .recv_wr = NRECV,
				.inline_data = 64 };
	struct ibv_mr *zone = NULL, *rx = NULL, *tx = NULL;
	struct ex_conn l, c;
	struct zone_info zi;
	struct ibv_wc wc;
	uint64_t sent = 0;
	struct msg *m, *out;
	int rc = 1;

	if (ex_listen(&l, NULL, o->port) ||
	    ex_get_request(&l, &c, &caps, NULL))
		return 1;
	zone = ex_reg(c.pd, REMOTE_LEN + 4096, IBV_ACCESS_LOCAL_WRITE |
		      IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	rx = ex_reg(c.pd, (size_t)NRECV * EAGER_BUF, IBV_ACCESS_LOCAL_WRITE);
	tx = ex_reg(c.pd, sizeof(struct msg), IBV_ACCESS_LOCAL_WRITE);
	if (!zone || !rx || !tx)
		goto out;
	c.caps.on_qp = srv_post;
	c.caps.arg = rx;
	zi = (struct zone_info){ (uintptr_t)zone->addr, zone->rkey };
	if (ex_accept(&c, &zi, sizeof(zi)))
		goto out;
	out = tx->addr;
	for (;;) {
		if (ex_wait_recv(&c, &wc))
			goto out;
		m = (struct msg *)((uint8_t *)rx->addr + wc.wr_id * EAGER_BUF);
		if (m->type == M_BYE)
			break;
		*out = (struct msg){ .type = M_ACK, .len = m->len };
		if (m->type == M_RTS) {
			out->type = M_CTS;
			out->addr = (uintptr_t)zone->addr;
			out->rkey = zone->rkey;
		} else if (m->type == M_EAGER) {
			/*
			 * An eager receiver copies the payload out of its
			 * bounce buffer to where it belongs; rendezvous WRITEs
			 * it there directly.
			 */
			if (m->len > wc.byte_len - sizeof(*m)) {
				ex_err("eager message shorter than announced");
				goto out;
			}
			memcpy(zone->addr, m + 1, m->len);
		} else if (m->type != M_FIN) {
			ex_err("unexpected message %u", m->type);
			goto out;
		}
		if (ex_post_recv(&c, m, EAGER_BUF, rx->lkey, wc.wr_id) ||
		    ex_post_send(&c, IBV_WR_SEND, out, sizeof(*out), tx->lkey,
				 0, 0, IBV_SEND_SIGNALED | IBV_SEND_INLINE, 0) ||
		    ex_wait_sends(&c, ++sent))
			goto out;
	}
	rc = ex_wait_disconnect(&c) ? 1 : 0;
out:
	ex_close(&c);
	ex_dereg(zone);
	ex_dereg(rx);
	ex_dereg(tx);
	ex_close(&l);
	return rc;
}

/* ---- the client ---- */

struct bench {
	struct ex_conn c;
	struct ibv_mr *buf;	/* LOCAL_LEN + 4096, for every local source */
	struct ibv_mr *msgs;	/* NRECV receive slots + one send slot */
	struct zone_info zone;
	uint64_t sent;
	int quick;
};

static void put(const char *claim, const char *variant, double x,
		const char *metric, double v)
{
	printf("%s\t%s\t%.10g\t%s\t%.4g\n", claim, variant, x, metric, v);
	fflush(stdout);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double median_us(uint64_t *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return v[n / 2] / 1e3;
}

/* CPU seconds used so far by this thread (who 0) or the process (1). */
static double cpu_s(int who)
{
	struct rusage ru;

	getrusage(who ? RUSAGE_SELF : RUSAGE_THREAD, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/*
 * Median latency of one signalled WRITE of len bytes (post to CQE), with
 * flags, waiting by busy poll or by CQ event; CPU per WRITE to *cpu.
 */
static int write_lat(struct bench *b, uint32_t len, unsigned int flags,
		     bool events, int iters, double *lat, double cpu[2])
{
	uint64_t *t = calloc((size_t)iters, sizeof(*t)), t0;
	double c0 = cpu_s(0), p0 = cpu_s(1);
	struct ibv_wc wc;
	int i, r;

	if (!t)
		return -1;
	for (i = 0; i < iters; i++) {
		t0 = ex_now_ns();
		r = ex_post_send(&b->c, IBV_WR_RDMA_WRITE, b->buf->addr, len,
				 b->buf->lkey, b->zone.addr, b->zone.rkey,
				 flags | IBV_SEND_SIGNALED, (uint64_t)i);
		if (!r)
			r = events ? ex_wait_wc_event(&b->c, &wc, 1) :
				     ex_wait_wc(&b->c, &wc, 1);
		if (r) {
			free(t);
			return -1;
		}
		t[i] = ex_now_ns() - t0;
	}
	if (cpu) {
		cpu[0] = (cpu_s(0) - c0) / iters * 1e6;
		cpu[1] = (cpu_s(1) - p0) / iters * 1e6;
	}
	*lat = median_us(t, iters);
	free(t);
	return 0;
}

/*
 * total WRITEs of len bytes from local offset loff to remote offset roff,
 * posted list at a time, one in sig signalled; the rate in WRs per
 * second, and the CPU microseconds per WR (thread, process).
 */
static int stream(struct bench *b, uint32_t len, uint64_t total, int list,
		  int sig, uint32_t loff, uint32_t roff, double *rate,
		  double cpu[2])
{
	struct ibv_send_wr wr[64], *bad;
	struct ibv_sge sge[64];
	struct ibv_wc wc[16];
	uint64_t posted = 0, done = 0, t0;
	double c0 = cpu_s(0), p0 = cpu_s(1);
	unsigned long spins = 0;
	int i, n, r;

	t0 = ex_now_ns();
	while (done < total) {
		while (posted < total && posted + (uint64_t)list - done <= SQ) {
			n = (int)(total - posted < (uint64_t)list ?
				  total - posted : (uint64_t)list);
			for (i = 0; i < n; i++) {
				uint64_t k = posted + (uint64_t)i;

				sge[i] = (struct ibv_sge){
					(uintptr_t)b->buf->addr + loff, len,
					b->buf->lkey };
				memset(&wr[i], 0, sizeof(wr[i]));
				wr[i].wr_id = k + 1;
				wr[i].sg_list = &sge[i];
				wr[i].num_sge = 1;
				wr[i].opcode = IBV_WR_RDMA_WRITE;
				wr[i].wr.rdma.remote_addr = b->zone.addr + roff;
				wr[i].wr.rdma.rkey = b->zone.rkey;
				if ((k + 1) % (uint64_t)sig == 0 ||
				    k + 1 == total)
					wr[i].send_flags = IBV_SEND_SIGNALED;
				if (len <= b->c.max_inline && len <= 64)
					wr[i].send_flags |= IBV_SEND_INLINE;
				wr[i].next = i + 1 < n ? &wr[i + 1] : NULL;
			}
			r = ibv_post_send(b->c.qp, wr, &bad);
			if (r) {
				ex_err("ibv_post_send: %s", strerror(r));
				return -1;
			}
			posted += (uint64_t)n;
		}
		/* a signalled completion retires every WR up to it */
		n = ibv_poll_cq(b->c.cq, 16, wc);
		if (n == 0)
			ex_relax(&spins);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				ex_err("WRITE: %s",
				       ibv_wc_status_str(wc[i].status));
				return -1;
			}
			done = wc[i].wr_id;
		}
		if (n < 0)
			return -1;
	}
	*rate = (double)total / ((ex_now_ns() - t0) / 1e9);
	if (cpu) {
		cpu[0] = (cpu_s(0) - c0) / (double)total * 1e6;
		cpu[1] = (cpu_s(1) - p0) / (double)total * 1e6;
	}
	return 0;
}

static int claim_inline(struct bench *b)
{
	static const uint32_t sizes[] = { 8, 64, 128, 256 };
	int iters = b->quick ? 100 : 2000;
	double lat;
	size_t i;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		if (sizes[i] <= b->c.max_inline) {
			if (write_lat(b, sizes[i], IBV_SEND_INLINE, false,
				      iters, &lat, NULL))
				return -1;
			put("inline", "inline", sizes[i], "lat_us", lat);
		}
		if (write_lat(b, sizes[i], 0, false, iters, &lat, NULL))
			return -1;
		put("inline", "not_inline", sizes[i], "lat_us", lat);
	}
	return 0;
}

static int claim_postlist(struct bench *b)
{
	static const int lists[] = { 1, 4, 16, 64 };
	uint64_t total = b->quick ? 2000 : 50000;
	double rate;
	size_t i;

	for (i = 0; i < sizeof(lists) / sizeof(lists[0]); i++) {
		if (stream(b, 64, total, lists[i], 64, 0, 0, &rate, NULL))
			return -1;
		put("postlist", "list", lists[i], "msg_per_s", rate);
	}
	return 0;
}

static int claim_signal(struct bench *b)
{
	static const int sig[] = { 1, 16, 64 };
	uint64_t total = b->quick ? 2000 : 50000;
	double rate, cpu[2];
	size_t i;

	for (i = 0; i < sizeof(sig) / sizeof(sig[0]); i++) {
		if (stream(b, 64, total, 1, sig[i], 0, 0, &rate, cpu))
			return -1;
		put("signal", "every", sig[i], "msg_per_s", rate);
		put("signal", "every", sig[i], "cpu_thread_us", cpu[0]);
		put("signal", "every", sig[i], "cpu_process_us", cpu[1]);
	}
	return 0;
}

static int claim_align(struct bench *b)
{
	static const uint32_t sizes[] = { 4096, 65536 };
	static const uint32_t offs[] = { 0, 1, 8 };
	static const char *const name[] = { "aligned", "off_by_1",
					    "off_by_8" };
	uint64_t bytes = b->quick ? (8u << 20) : (256u << 20);
	double rate;
	size_t i, k;

	for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			if (stream(b, sizes[i], bytes / sizes[i], 16, 16,
				   offs[k], offs[k], &rate, NULL))
				return -1;
			put("align", name[k], sizes[i], "MB_per_s",
			    rate * sizes[i] / 1e6);
		}
	return 0;
}

static int claim_events(struct bench *b)
{
	int iters = b->quick ? 100 : 2000, ev;
	double lat, cpu[2];

	for (ev = 0; ev < 2; ev++) {
		const char *v = ev ? "events" : "polling";

		if (write_lat(b, 64, 0, ev, iters, &lat, cpu))
			return -1;
		put("events", v, 64, "lat_us", lat);
		put("events", v, 64, "cpu_thread_us", cpu[0]);
		put("events", v, 64, "cpu_process_us", cpu[1]);
	}
	return 0;
}

static int claim_regmr(struct bench *b)
{
	static const size_t mb[] = { 1, 16, 64 };
	int reps = b->quick ? 2 : 10, i, iters = b->quick ? 20 : 200;
	struct ibv_wc wc;
	size_t k;

	for (k = 0; k < sizeof(mb) / sizeof(mb[0]); k++) {
		size_t len = mb[k] << 20;
		uint64_t treg = 0, tdereg = 0, t0;
		uint8_t *p;

		if (b->quick && mb[k] > 16)
			break;
		p = malloc(len);
		if (!p)
			return -1;
		memset(p, 1, len);	/* pages present, as a real buffer's */
		for (i = 0; i < reps; i++) {
			struct ibv_mr *mr;

			t0 = ex_now_ns();
			mr = ibv_reg_mr(b->c.pd, p, len, IBV_ACCESS_LOCAL_WRITE);
			treg += ex_now_ns() - t0;
			if (!mr) {
				free(p);
				return -1;
			}
			t0 = ex_now_ns();
			ibv_dereg_mr(mr);
			tdereg += ex_now_ns() - t0;
		}
		free(p);
		put("regmr", "reg", (double)mb[k], "us_per_MB",
		    treg / 1e3 / reps / (double)mb[k]);
		put("regmr", "dereg", (double)mb[k], "us_per_MB",
		    tdereg / 1e3 / reps / (double)mb[k]);
	}
	/* a 1 MB WRITE: registering its buffer each time, or cached */
	for (k = 0; k < 2; k++) {
		uint64_t *t = calloc((size_t)iters, sizeof(*t)), t0;

		if (!t)
			return -1;
		for (i = 0; i < iters; i++) {
			struct ibv_mr *mr = b->buf;

			t0 = ex_now_ns();
			if (k == 0) {
				mr = ibv_reg_mr(b->c.pd, b->buf->addr, 1 << 20,
						IBV_ACCESS_LOCAL_WRITE);
				if (!mr) {
					free(t);
					return -1;
				}
			}
			if (ex_post_send(&b->c, IBV_WR_RDMA_WRITE, mr->addr,
					 1 << 20, mr->lkey, b->zone.addr,
					 b->zone.rkey, IBV_SEND_SIGNALED, 0) ||
			    ex_wait_wc(&b->c, &wc, 1)) {
				free(t);
				return -1;
			}
			if (k == 0)
				ibv_dereg_mr(mr);
			t[i] = ex_now_ns() - t0;
		}
		put("regmr", k ? "cached_mr" : "reg_each_time", 1,
		    "write_1MB_us", median_us(t, iters));
		free(t);
	}
	return 0;
}

/* Take the WRITE completions there are; each adds its updates' latency. */
static int agg_reap(struct bench *b, const uint64_t *born, uint64_t *inflight,
		    uint64_t *lat)
{
	struct ibv_wc wc[16];
	uint64_t now, f, e;
	int n, i;

	n = ibv_poll_cq(b->c.cq, 16, wc);
	if (n < 0)
		return -1;
	now = ex_now_ns();
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS)
			return -1;
		f = wc[i].wr_id >> 8;
		for (e = f + (wc[i].wr_id & 255); f < e; f++)
			*lat += now - born[f];
		(*inflight)--;
	}
	return n;
}

/*
 * count 16-byte updates, bs per WRITE, 16 WRITEs in flight at most; with
 * rate, update i is made at t0 + i / rate (else as fast as they go). The
 * updates per second and their mean latency from creation to the
 * completion of the WRITE that carried them.
 */
static int agg_run(struct bench *b, uint32_t bs, uint64_t count,
		   uint64_t rate, uint64_t *born, double *ups, double *lat_us)
{
	uint64_t seq = 0, inflight = 0, slot = 0, lat = 0, t0 = ex_now_ns();
	uint64_t *st = b->buf->addr;	/* records of 2 words */
	unsigned long spins = 0;
	int n;

	while (seq < count || inflight) {
		if (seq < count && inflight < 16) {
			uint64_t *rec = st + slot * bs * 2, first = seq;
			uint32_t j;

			for (j = 0; j < bs && seq < count; j++, seq++) {
				while (rate && ex_now_ns() < t0 + seq *
				       1000000000ull / rate)
					if (agg_reap(b, born, &inflight,
						     &lat) < 0)
						return -1;
				born[seq] = ex_now_ns();
				rec[2 * j] = seq;
				rec[2 * j + 1] = ~seq;
			}
			if (ex_post_send(&b->c, IBV_WR_RDMA_WRITE, rec, j * 16,
					 b->buf->lkey,
					 b->zone.addr + first * 16 % REMOTE_LEN,
					 b->zone.rkey, IBV_SEND_SIGNALED,
					 first << 8 | j))
				return -1;
			inflight++;
			slot = (slot + 1) % 16;
		}
		n = agg_reap(b, born, &inflight, &lat);
		if (n < 0)
			return -1;
		if (n == 0 && inflight == 16)
			ex_relax(&spins);
	}
	*ups = (double)count / ((ex_now_ns() - t0) / 1e9);
	*lat_us = lat / 1e3 / (double)count;
	return 0;
}

static int claim_aggregate(struct bench *b)
{
	static const uint32_t batch[] = { 1, 4, 16, 64 };
	uint64_t count = b->quick ? 2000 : 40000;
	/* paced: a stream that the WRITEs keep up with even one per WRITE */
	uint64_t paced = b->quick ? 500 : 4000, rate = 20000;
	uint64_t *born = calloc(count, sizeof(*born));
	double ups, lat;
	size_t k;

	if (!born)
		return -1;
	for (k = 0; k < sizeof(batch) / sizeof(batch[0]); k++) {
		if (agg_run(b, batch[k], count, 0, born, &ups, &lat))
			goto fail;
		put("aggregate", "batch", batch[k], "updates_per_s", ups);
		put("aggregate", "batch", batch[k], "lat_us", lat);
		if (agg_run(b, batch[k], paced, rate, born, &ups, &lat))
			goto fail;
		put("aggregate", "paced_20k", batch[k], "lat_us", lat);
	}
	free(born);
	return 0;
fail:
	ex_err("aggregate failed");
	free(born);
	return -1;
}

/* Send a message header (with extra payload bytes from buf for eager). */
static int send_msg(struct bench *b, uint32_t type, uint32_t len)
{
	struct msg *out = (struct msg *)((uint8_t *)b->msgs->addr +
					 NRECV * sizeof(struct msg));
	struct ibv_sge sge[2] = {
		{ (uintptr_t)out, sizeof(*out), b->msgs->lkey },
		{ (uintptr_t)b->buf->addr, len, b->buf->lkey } };
	struct ibv_send_wr wr = { 0 }, *bad;
	int r;

	*out = (struct msg){ .type = type, .len = len };
	wr.sg_list = sge;
	wr.num_sge = type == M_EAGER && len ? 2 : 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	r = ibv_post_send(b->c.qp, &wr, &bad);
	if (r) {
		ex_err("ibv_post_send: %s", strerror(r));
		return -1;
	}
	return ex_wait_sends(&b->c, ++b->sent);
}

static struct msg *get_msg(struct bench *b, uint32_t type)
{
	struct ibv_wc wc;
	struct msg *m;

	if (ex_wait_recv(&b->c, &wc))
		return NULL;
	m = (struct msg *)b->msgs->addr + wc.wr_id;
	if (m->type != type) {
		ex_err("wanted message %u, got %u", type, m->type);
		return NULL;
	}
	/* the slot is free again: this benchmark reads it at once */
	if (ex_post_recv(&b->c, m, sizeof(*m), b->msgs->lkey, wc.wr_id))
		return NULL;
	return m;
}

static int claim_rendezvous(struct bench *b)
{
	static const uint32_t sizes[] = { 64, 1024, 4096, 16384, 65536,
					  262144, 1048576 };
	size_t k;
	int i, v, iters;

	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		uint32_t len = sizes[k];

		if (b->quick && len > 65536)
			break;
		iters = b->quick ? 20 : (len >= 262144 ? 100 : 400);
		for (v = 0; v < 2; v++) {
			uint64_t *t = calloc((size_t)iters, sizeof(*t)), t0;
			struct msg *m;

			if (!t)
				return -1;
			for (i = 0; i < iters; i++) {
				t0 = ex_now_ns();
				if (v == 0) {
					if (send_msg(b, M_EAGER, len) ||
					    !get_msg(b, M_ACK))
						goto fail;
				} else {
					if (send_msg(b, M_RTS, len) ||
					    !(m = get_msg(b, M_CTS)) ||
					    ex_post_send(&b->c, IBV_WR_RDMA_WRITE,
							 b->buf->addr, len,
							 b->buf->lkey, m->addr,
							 m->rkey, 0, 0) ||
					    send_msg(b, M_FIN, len) ||
					    !get_msg(b, M_ACK))
						goto fail;
				}
				t[i] = ex_now_ns() - t0;
			}
			put("rendezvous", v ? "rendezvous" : "eager", len,
			    "lat_us", median_us(t, iters));
			free(t);
			continue;
fail:
			free(t);
			return -1;
		}
	}
	return 0;
}

static int cli_post(struct ex_conn *c, void *arg)
{
	struct ibv_mr *mr = arg;
	int i;

	for (i = 0; i < NRECV; i++)
		if (ex_post_recv(c, (struct msg *)mr->addr + i,
				 sizeof(struct msg), mr->lkey, (uint64_t)i))
			return -1;
	return 0;
}

static const struct {
	const char *name;
	int (*run)(struct bench *b);
} claims[] = {
	{ "inline", claim_inline }, { "postlist", claim_postlist },
	{ "signal", claim_signal }, { "align", claim_align },
	{ "events", claim_events }, { "regmr", claim_regmr },
	{ "aggregate", claim_aggregate }, { "rendezvous", claim_rendezvous },
};

static int run_client(const struct opts *o)
{
	struct bench b = { .quick = o->quick };
	struct ex_caps caps = { .send_wr = SQ, .recv_wr = NRECV,
				.inline_data = 256, .cqe = SQ + NRECV + 16,
				.send_sge = 2,
				.events = true, .on_qp = cli_post };
	struct ibv_mr *msgs;
	size_t i;
	int rc = 1;

	if (ex_resolve(&b.c, o->host, o->port, &caps))
		return 1;
	b.buf = ex_reg(b.c.pd, LOCAL_LEN + 4096, IBV_ACCESS_LOCAL_WRITE);
	msgs = ex_reg(b.c.pd, (NRECV + 1) * sizeof(struct msg),
		      IBV_ACCESS_LOCAL_WRITE);
	b.msgs = msgs;
	if (!b.buf || !msgs)
		goto out;
	b.c.caps.arg = msgs;
	if (ex_connect(&b.c, NULL, 0))
		goto out;
	if (b.c.peer_len < sizeof(b.zone)) {
		ex_err("no landing zone from the server");
		goto out;
	}
	memcpy(&b.zone, b.c.peer, sizeof(b.zone));
	printf("# claims on %s, max_inline %u%s\n",
	       ibv_get_device_name(b.c.id->verbs->device), b.c.max_inline,
	       o->quick ? ", short run" : "");
	for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
		if (o->only && strcmp(o->only, claims[i].name))
			continue;
		if (claims[i].run(&b)) {
			ex_err("claim %s failed", claims[i].name);
			goto out;
		}
	}
	if (send_msg(&b, M_BYE, 0))
		goto out;
	rc = 0;
out:
	ex_close(&b.c);
	ex_dereg(b.buf);
	ex_dereg(b.msgs);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "short", no_argument, NULL, 'q' },
		{ "only", required_argument, NULL, 'o' }, { 0 } };
	struct opts o = { .port = "7477" };
	size_t i;
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'q': o.quick = true; break;
		case 'o':
			o.only = optarg;
			for (i = 0; i < sizeof(claims) / sizeof(claims[0]); i++)
				if (!strcmp(optarg, claims[i].name))
					break;
			if (i == sizeof(claims) / sizeof(claims[0]))
				goto bad;
			break;
		case 'h': usage(stdout); return 0;
		default: goto bad;
		}
	}
	if (o.server == !!o.host || optind != argc)
		goto bad;
	return o.server ? run_server(&o) : run_client(&o);
bad:
	usage(stderr);
	return 2;
}
