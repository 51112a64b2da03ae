/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * paramserver: shared parameters updated lock-free by remote atomics.
 *
 * The server registers an array of 64-bit parameters with
 * IBV_ACCESS_REMOTE_ATOMIC and then does nothing but wait: the workers
 * update it directly, with no lock and no message to the server.
 *
 *  - Additive updates are one FETCH_AND_ADD each: worker w adds w + 1 to
 *    parameter (i * 7 + w) % P at its step i. The NIC makes each one
 *    atomic against every other QP's atomics on the same word.
 *  - An update that is not an addition needs COMPARE_AND_SWAP in a loop:
 *    read the old value (the CAS returns it), compute the new one, swap it
 *    in only if the word still holds the old value, else try again with
 *    what it holds now. Here each worker multiplies the last word by its
 *    own odd factor 2w + 3 (mod 2^64), an update FETCH_AND_ADD cannot do.
 *
 * Both kinds commute, so the final values are exact whatever the order:
 * the server checks every word once all workers have gone, and each
 * worker checks that the values its FETCH_AND_ADDs returned for a word
 * only grow (its own atomics on one QP execute in order).
 *
 * The client forks -n worker processes, one connection each.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 64
#define WINDOW 8	/* FETCH_AND_ADDs in flight per worker */

struct hello {
	uint32_t worker;
	uint32_t nworkers;
	uint64_t iters;		/* FETCH_AND_ADDs this worker does */
	uint64_t cas;		/* CAS multiplications this worker does */
};

struct params_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t nparams;	/* FETCH_AND_ADD words; the CAS word follows */
};

struct opts {
	const char *host, *port;
	bool server;
	uint64_t workers, iters, nparams, cas;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: paramserver -s [-p PORT] [-n WORKERS] [-P PARAMS]\n"
"       paramserver -c HOST [-p PORT] [-n WORKERS] [-i ITERS] [-C CAS]\n"
"\n"
"The client forks WORKERS processes (default 4, at most %d; the server\n"
"waits for as many). Each does ITERS remote FETCH_AND_ADDs (default 5000)\n"
"over PARAMS parameters (default 16) and CAS read-modify-write loops\n"
"(default 500) on one more word; the server checks the exact final\n"
"values. Exit status 1 on any error. rdma_cm to HOST port PORT (7473).\n",
		MAX_WORKERS);
}

static uint64_t mul_pow(uint64_t m, uint64_t k)
{
	uint64_t r = 1;

	while (k--)
		r *= m;
	return r;
}

/* The server's check: each word against what the workers announced. */
static int check_params(const volatile uint64_t *p, uint32_t np,
			const struct hello *w, uint32_t nw)
{
	uint64_t want[256] = { 0 }, prod = 1, i;
	uint32_t k, bad = 0;

	for (k = 0; k < nw; k++) {
		for (i = 0; i < w[k].iters; i++)
			want[(i * 7 + k) % np] += k + 1;
		prod *= mul_pow(2 * k + 3, w[k].cas);
	}
	for (k = 0; k < np; k++)
		if (p[k] != want[k]) {
			ex_err("parameter %u is %llu, must be %llu", k,
			       (unsigned long long)p[k],
			       (unsigned long long)want[k]);
			bad++;
		}
	if (p[np] != prod) {
		ex_err("the CAS word is %#llx, must be %#llx",
		       (unsigned long long)p[np], (unsigned long long)prod);
		bad++;
	}
	return bad ? -1 : 0;
}

static int run_server(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 1, .recv_wr = 1, .cqe = 4 };
	struct ex_conn l, conn[MAX_WORKERS];
	struct hello w[MAX_WORKERS];
	bool seen[MAX_WORKERS] = { 0 };
	struct params_info pi;
	struct ibv_pd *pd = NULL;
	struct ibv_mr *mr = NULL;
	struct rdma_cm_event *ev;
	uint32_t np = (uint32_t)o->nparams, nw = (uint32_t)o->workers;
	uint32_t up = 0, gone = 0, i;
	volatile uint64_t *p = NULL;
	int rc = 1;

	memset(conn, 0, sizeof(conn));
	if (ex_listen(&l, NULL, o->port))
		return 1;
	while (gone < nw) {
		ev = ex_next_event(l.ec, 120000);
		if (!ev)
			goto out;
		if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
			struct hello h;

			if (!pd) {
				/* all workers share one PD and one MR */
				pd = ibv_alloc_pd(ev->id->verbs);
				mr = pd ? ex_reg(pd, (np + 1) * 8,
						 IBV_ACCESS_LOCAL_WRITE |
						 IBV_ACCESS_REMOTE_READ |
						 IBV_ACCESS_REMOTE_ATOMIC) : NULL;
				if (!mr) {
					ex_err("cannot register the parameters");
					goto out;
				}
				p = mr->addr;
				p[np] = 1;	/* the CAS word multiplies */
				pi = (struct params_info){ (uintptr_t)mr->addr,
							   mr->rkey, np };
			}
			memcpy(&h, ev->param.conn.private_data, sizeof(h));
			if (ev->param.conn.private_data_len < sizeof(h) ||
			    h.worker >= nw || seen[h.worker] ||
			    h.nworkers != nw) {
				ex_err("bad or unexpected worker %u of %u",
				       h.worker, h.nworkers);
				rdma_reject(ev->id, NULL, 0);
				rdma_ack_cm_event(ev);
				goto out;
			}
			seen[h.worker] = true;
			w[h.worker] = h;
			/* (ex_from_request acknowledges the event) */
			if (ex_from_request(&l, &conn[h.worker], ev, &caps, pd) ||
			    ex_accept_nowait(&conn[h.worker], &pi, sizeof(pi)))
				goto out;
			/* the id stays ours: remember it for its events */
			conn[h.worker].id->context = &conn[h.worker];
			continue;
		} else if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
			up++;
		} else if (ev->event == RDMA_CM_EVENT_DISCONNECTED) {
			struct ex_conn *c = ev->id->context;

			if (c)
				c->connected = false;
			gone++;
		} else {
			ex_err("unexpected %s (status %d)",
			       rdma_event_str(ev->event), ev->status);
			rdma_ack_cm_event(ev);
			goto out;
		}
		rdma_ack_cm_event(ev);
	}
	/* every worker waited for its last atomic before disconnecting */
	if (up != nw) {
		ex_err("%u workers connected, %u disconnected", up, gone);
		goto out;
	}
	if (check_params(p, np, w, nw))
		goto out;
	printf("paramserver: %u workers done, all %u parameters and the CAS "
	       "word exact (%#llx)\n", nw, np, (unsigned long long)p[np]);
	rc = 0;
out:
	for (i = 0; i < MAX_WORKERS; i++)
		if (conn[i].id)
			ex_close(&conn[i]);
	ex_dereg(mr);
	if (pd)
		ibv_dealloc_pd(pd);
	ex_close(&l);
	return rc;
}

static int post_atomic(struct ex_conn *c, enum ibv_wr_opcode op, void *res,
		       uint32_t lkey, uint64_t raddr, uint32_t rkey,
		       uint64_t add_or_cmp, uint64_t swap, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)res, 8, lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	int r;

	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = add_or_cmp;
	wr.wr.atomic.swap = swap;
	r = ibv_post_send(c->qp, &wr, &bad);
	if (r)
		ex_err("ibv_post_send (atomic): %s", strerror(r));
	return r ? -1 : 0;
}

static int worker(const struct opts *o, uint32_t me)
{
	struct ex_caps caps = { .send_wr = WINDOW, .recv_wr = 1 };
	struct hello h = { me, (uint32_t)o->workers, o->iters, o->cas };
	uint64_t last[256] = { 0 }, posted = 0, done = 0, k, retries = 0;
	uint64_t mul = 2 * me + 3, guess = 1, t0;
	struct params_info pi;
	struct ibv_mr *res = NULL;
	struct ibv_wc wc[WINDOW];
	struct ex_conn c;
	uint64_t *r;
	int rc = 1, n, i;

	if (ex_resolve(&c, o->host, o->port, &caps))
		return 1;
	res = ex_reg(c.pd, (WINDOW + 1) * 8, IBV_ACCESS_LOCAL_WRITE);
	if (!res || ex_connect(&c, &h, sizeof(h)))
		goto out;
	if (c.peer_len < sizeof(pi)) {
		ex_err("no parameter address from the server");
		goto out;
	}
	memcpy(&pi, c.peer, sizeof(pi));
	r = res->addr;
	t0 = ex_now_ns();
	/* FETCH_AND_ADD, WINDOW in flight; wr_id is the step */
	while (done < o->iters) {
		while (posted < o->iters && posted - done < WINDOW) {
			k = (posted * 7 + me) % pi.nparams;
			if (post_atomic(&c, IBV_WR_ATOMIC_FETCH_AND_ADD,
					&r[posted % WINDOW], res->lkey,
					pi.addr + k * 8, pi.rkey, me + 1, 0,
					posted))
				goto out;
			posted++;
		}
		n = ibv_poll_cq(c.cq, WINDOW, wc);
		for (i = 0; i < n; i++) {
			uint64_t step = wc[i].wr_id, old;

			if (wc[i].status != IBV_WC_SUCCESS) {
				ex_err("atomic %llu: %s",
				       (unsigned long long)step,
				       ibv_wc_status_str(wc[i].status));
				goto out;
			}
			/* the value the word had before our add */
			old = r[step % WINDOW];
			k = (step * 7 + me) % pi.nparams;
			if (last[k] && old < last[k]) {
				ex_err("parameter %llu went back: %llu after "
				       "%llu", (unsigned long long)k,
				       (unsigned long long)old,
				       (unsigned long long)last[k]);
				goto out;
			}
			/* where our next add to k must find it at least */
			last[k] = old + me + 1;
			done++;
		}
		if (n < 0) {
			ex_err("ibv_poll_cq failed");
			goto out;
		}
	}
	/* the CAS loop: multiply the word by mul, o->cas times */
	for (k = 0; k < o->cas; k++) {
		for (;;) {
			if (post_atomic(&c, IBV_WR_ATOMIC_CMP_AND_SWP, &r[WINDOW],
					res->lkey, pi.addr + pi.nparams * 8,
					pi.rkey, guess, guess * mul, k) ||
			    ex_wait_wc(&c, wc, 1))
				goto out;
			if (r[WINDOW] == guess)
				break;
			/* someone else changed it: try on its value */
			guess = r[WINDOW];
			retries++;
		}
		guess *= mul;
	}
	printf("paramserver: worker %u: %llu FETCH_AND_ADDs, %llu CAS updates "
	       "(%llu retried) in %.1f ms\n", me, (unsigned long long)o->iters,
	       (unsigned long long)o->cas, (unsigned long long)retries,
	       (ex_now_ns() - t0) / 1e6);
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(res);
	return rc;
}

static int run_client(const struct opts *o)
{
	pid_t pid[MAX_WORKERS];
	uint32_t i, failed = 0;
	int st;

	fflush(stdout);
	for (i = 0; i < o->workers; i++) {
		pid[i] = fork();
		if (pid[i] < 0) {
			ex_err("fork failed");
			return 1;
		}
		if (pid[i] == 0) {
			st = worker(o, i);
			fflush(stdout);
			_exit(st);
		}
	}
	for (i = 0; i < o->workers; i++)
		if (waitpid(pid[i], &st, 0) < 0 || !WIFEXITED(st) ||
		    WEXITSTATUS(st)) {
			ex_err("worker %u failed", i);
			failed++;
		}
	if (!failed)
		printf("paramserver: all %llu workers done\n",
		       (unsigned long long)o->workers);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7473", .workers = 4, .iters = 5000,
			  .nparams = 16, .cas = 500 };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:n:i:P:C:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'n':
			if (ex_parse_size(optarg, &o.workers) || !o.workers ||
			    o.workers > MAX_WORKERS)
				goto bad;
			break;
		case 'i':
			if (ex_parse_size(optarg, &o.iters))
				goto bad;
			break;
		case 'P':
			if (ex_parse_size(optarg, &o.nparams) || !o.nparams ||
			    o.nparams > 256)
				goto bad;
			break;
		case 'C':
			if (ex_parse_size(optarg, &o.cas))
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
