/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * aggregate: many small updates carried by one larger RDMA WRITE.
 *
 * Every WR costs a doorbell, a WQE, a packet header, an ACK and (when
 * signalled) a completion, whatever its size, so 16-byte updates sent one
 * WRITE each spend nearly all of the NIC's work on overhead. Collecting B
 * of them in a local buffer and writing the B together divides that by B.
 * The price is latency: an update waits in the buffer until the batch is
 * full (a real program also flushes on a timer, so that a quiet stream
 * does not wait for ever).
 *
 * The client streams COUNT updates (seq, value) into an append-only log in
 * the server's memory, once for each batch size of -b, and prints the
 * update rate and the mean time from an update's creation to the
 * completion of the WRITE that carried it. The server checks every record
 * of every run once the client has gone. Exit status 1 on any error.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RUNS 8
#define DEPTH 16	/* batches in flight */

struct rec {
	uint64_t seq;	/* 1-based, so an unwritten record (0) shows */
	uint64_t val;
};

struct hello {
	uint64_t count;			/* updates per run */
	uint32_t nruns;
	uint32_t batch[MAX_RUNS];	/* the runs' batch sizes */
};

struct log_info {
	uint64_t addr;
	uint32_t rkey;
};

struct opts {
	const char *host, *port;
	bool server;
	uint64_t count, rate;
	uint32_t nruns, batch[MAX_RUNS];
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: aggregate -s [-p PORT]\n"
"       aggregate -c HOST [-p PORT] [-n COUNT] [-b B1,B2,...] [-r RATE]\n"
"\n"
"The client streams COUNT 16-byte updates (default 20000) into a log in\n"
"the server's memory, once per batch size (default 1,4,16,64; up to %d\n"
"sizes, each at most 1024): B updates per RDMA WRITE. It prints updates\n"
"per second and the latency aggregation adds; the server checks every\n"
"record. RATE: updates are made at most RATE per second (default 0: as\n"
"fast as the WRITEs go), so that the wait for a full batch shows.\n"
"Exit status 1 on any error. rdma_cm to HOST port PORT (7476).\n",
		MAX_RUNS);
}

static uint64_t value_of(uint32_t run, uint64_t seq)
{
	return seq * 0x9e3779b97f4a7c15ull ^ run;
}

static int run_server(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 1, .recv_wr = 1 };
	struct ex_conn l, c;
	struct ibv_mr *mr = NULL;
	struct log_info li;
	struct hello h;
	struct rec *r;
	uint64_t i;
	uint32_t run;
	int rc = 1;

	if (ex_listen(&l, NULL, o->port) ||
	    ex_get_request(&l, &c, &caps, NULL))
		return 1;
	if (c.peer_len < sizeof(h)) {
		ex_err("no hello from the client");
		goto out;
	}
	memcpy(&h, c.peer, sizeof(h));
	if (h.nruns > MAX_RUNS || h.count > (1u << 24)) {
		ex_err("too much asked");
		goto out;
	}
	mr = ex_reg(c.pd, h.nruns * h.count * sizeof(*r),
		    IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!mr)
		goto out;
	li = (struct log_info){ (uintptr_t)mr->addr, mr->rkey };
	if (ex_accept(&c, &li, sizeof(li)) || ex_wait_disconnect(&c))
		goto out;
	r = mr->addr;
	for (run = 0; run < h.nruns; run++)
		for (i = 0; i < h.count; i++, r++)
			if (r->seq != i + 1 || r->val != value_of(run, i + 1)) {
				ex_err("run %u (batch %u): record %llu is "
				       "wrong", run, h.batch[run],
				       (unsigned long long)i);
				goto out;
			}
	printf("aggregate: %u runs of %llu updates, every record in the log "
	       "exactly as sent\n", h.nruns, (unsigned long long)h.count);
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(mr);
	ex_close(&l);
	return rc;
}

/* The latency of the updates of the batches whose WRITE completed. */
struct run_state {
	uint64_t *born, lat, inflight, count;
	uint32_t b;
};

/* Take the completions there are (at least one when wait). */
static int reap(struct ex_conn *c, struct run_state *rs, bool wait)
{
	struct ibv_wc wc[DEPTH];
	uint64_t now, first, end, k;
	int n, i;

	if (wait) {
		if (ex_wait_wc(c, wc, 1))
			return -1;
		n = 1;
	} else {
		n = ibv_poll_cq(c->cq, DEPTH, wc);
		if (n < 0) {
			ex_err("ibv_poll_cq failed");
			return -1;
		}
		for (i = 0; i < n; i++)
			if (wc[i].status != IBV_WC_SUCCESS) {
				ex_err("WRITE: %s",
				       ibv_wc_status_str(wc[i].status));
				return -1;
			}
	}
	now = ex_now_ns();
	for (i = 0; i < n; i++) {
		first = wc[i].wr_id >> 8;
		end = first + rs->b < rs->count ? first + rs->b : rs->count;
		for (k = first; k < end; k++)
			rs->lat += now - rs->born[k];
		rs->inflight--;
	}
	return 0;
}

/* One run: count updates in batches of b into the log at raddr. */
static int one_run(struct ex_conn *c, struct ibv_mr *stage, uint64_t *born,
		   uint32_t run, uint32_t b, uint64_t count, uint64_t rate,
		   uint64_t raddr, uint32_t rkey)
{
	struct run_state rs = { .born = born, .count = count, .b = b };
	struct rec *st = stage->addr;
	uint64_t seq = 0, writes = 0, t0 = ex_now_ns(), dt, slot = 0;

	while (seq < count || rs.inflight) {
		if (seq < count && rs.inflight < DEPTH) {
			/* a batch: b updates made (and timestamped) one by one */
			struct rec *batch = st + slot * b;
			uint64_t first = seq, n = 0;

			while (n < b && seq < count) {
				/*
				 * Paced: update seq is due at t0 + seq / rate;
				 * completions are taken while we wait, so
				 * that their time is right.
				 */
				while (rate && ex_now_ns() < t0 + seq *
				       1000000000ull / rate)
					if (reap(c, &rs, false))
						return -1;
				born[seq] = ex_now_ns();
				batch[n].seq = seq + 1;
				batch[n].val = value_of(run, seq + 1);
				n++;
				seq++;
			}
			/* wr_id: the first update and the batch's slot */
			if (ex_post_send(c, IBV_WR_RDMA_WRITE, batch,
					 (uint32_t)(n * sizeof(*batch)),
					 stage->lkey,
					 raddr + first * sizeof(*batch), rkey,
					 IBV_SEND_SIGNALED, first << 8 | slot))
				return -1;
			writes++;
			rs.inflight++;
			slot = (slot + 1) % DEPTH;
			if (reap(c, &rs, false))
				return -1;
			continue;
		}
		if (reap(c, &rs, true))
			return -1;
	}
	dt = ex_now_ns() - t0;
	printf("aggregate: batch %4u: %6llu WRITEs, %8.0f updates/s, mean "
	       "latency %8.1f us\n", b, (unsigned long long)writes,
	       (double)count / (dt / 1e9), rs.lat / 1e3 / (double)count);
	return 0;
}

static int run_client(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = DEPTH, .recv_wr = 1 };
	struct hello h = { .count = o->count, .nruns = o->nruns };
	struct ibv_mr *stage = NULL;
	struct log_info li;
	struct ex_conn c;
	uint64_t *born = NULL;
	uint32_t i, bmax = 1;
	int rc = 1;

	for (i = 0; i < o->nruns; i++) {
		h.batch[i] = o->batch[i];
		if (o->batch[i] > bmax)
			bmax = o->batch[i];
	}
	born = calloc(o->count, sizeof(*born));
	if (!born || ex_resolve(&c, o->host, o->port, &caps))
		return 1;
	stage = ex_reg(c.pd, (size_t)DEPTH * bmax * sizeof(struct rec),
		       IBV_ACCESS_LOCAL_WRITE);
	if (!stage || ex_connect(&c, &h, sizeof(h)))
		goto out;
	if (c.peer_len < sizeof(li)) {
		ex_err("no log address from the server");
		goto out;
	}
	memcpy(&li, c.peer, sizeof(li));
	for (i = 0; i < o->nruns; i++)
		if (one_run(&c, stage, born, i, o->batch[i], o->count, o->rate,
			    li.addr + i * o->count * sizeof(struct rec),
			    li.rkey))
			goto out;
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(stage);
	free(born);
	return rc;
}

static int parse_batches(char *s, struct opts *o)
{
	char *tok, *save = NULL;
	uint64_t v;

	o->nruns = 0;
	for (tok = strtok_r(s, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->nruns == MAX_RUNS || ex_parse_size(tok, &v) || !v ||
		    v > 1024)
			return -1;
		o->batch[o->nruns++] = (uint32_t)v;
	}
	return o->nruns ? 0 : -1;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7476", .count = 20000, .nruns = 4,
			  .batch = { 1, 4, 16, 64 } };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:n:b:r:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'n':
			if (ex_parse_size(optarg, &o.count) || !o.count ||
			    o.count > (1u << 24))
				goto bad;
			break;
		case 'b':
			if (parse_batches(optarg, &o))
				goto bad;
			break;
		case 'r':
			if (ex_parse_size(optarg, &o.rate))
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
