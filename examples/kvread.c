/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * kvread: key-value lookups by one-sided RDMA READs.
 *
 * The server builds an open-addressing hash table (linear probing) in
 * registered memory, gives the client its address and rkey in the
 * connect reply, and then never looks at it again: it posts no receive
 * and polls no completion. The client finds a key by READing the window
 * of buckets where the key's hash points, and the next window while the
 * window is full of other keys; an empty bucket ends the search.
 *
 * On a RoCE NIC the server's CPU does not see a lookup at all. On uroce
 * the NIC is a thread of the server process, so a core still does the
 * work, but the application code does none of it, which is the point.
 *
 * The client checks that every stored key returns its value byte for
 * byte and that keys never stored are not found; the server that its CQ
 * stayed empty.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VAL_MAX 40
#define WINDOW 4	/* buckets one READ fetches */

/* One bucket, 64 bytes: a key of 0 is an empty bucket. */
struct bucket {
	uint64_t key;
	uint32_t vlen;
	uint32_t pad;
	uint8_t val[VAL_MAX];
	uint64_t spare;
};

struct table_info {
	uint64_t addr;
	uint32_t rkey;
	uint32_t nbuckets;	/* a power of two */
	uint64_t nkeys;
};

struct opts {
	const char *host, *port;
	bool server;
	uint64_t nkeys, lookups;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: kvread -s [-p PORT] [-k KEYS]\n"
"       kvread -c HOST [-p PORT] [-l LOOKUPS]\n"
"\n"
"The server stores KEYS keys (default 3000) in a hash table in registered\n"
"memory (at most half full); the client does LOOKUPS lookups (default\n"
"10000; one in four of a key never stored) by RDMA READs of %d buckets,\n"
"checks every value and that absent keys are absent. Exit status 1 on\n"
"any error. rdma_cm to HOST (e.g. 127.0.0.1) port PORT (7474).\n",
		WINDOW);
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* The i-th stored key (top bit clear) and a key never stored (set). */
static uint64_t key_of(uint64_t i)
{
	return (mix(i) >> 1) | 1;
}

static uint64_t absent_key(uint64_t i)
{
	return key_of(i) | (1ull << 63);
}

static uint32_t val_len(uint64_t key)
{
	return (uint32_t)(1 + key % VAL_MAX);
}

static int run_server(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 1, .recv_wr = 1 };
	struct ex_conn l, c;
	struct ibv_mr *mr = NULL;
	struct table_info ti;
	struct bucket *t;
	struct ibv_wc wc;
	uint64_t i, nb = 16;
	int rc = 1;

	while (nb < 2 * o->nkeys)
		nb <<= 1;
	if (ex_listen(&l, NULL, o->port) ||
	    ex_get_request(&l, &c, &caps, NULL))
		return 1;
	/* remote READ only: the client cannot change the table */
	mr = ex_reg(c.pd, nb * sizeof(*t), IBV_ACCESS_REMOTE_READ);
	if (!mr)
		goto out;
	t = mr->addr;
	for (i = 0; i < o->nkeys; i++) {
		uint64_t k = key_of(i), b = mix(k) & (nb - 1);

		while (t[b].key)
			b = (b + 1) & (nb - 1);
		t[b].key = k;
		t[b].vlen = val_len(k);
		ex_fill(t[b].val, t[b].vlen, k, 0);
	}
	ti = (struct table_info){ (uintptr_t)t, mr->rkey, (uint32_t)nb,
				  o->nkeys };
	if (ex_accept(&c, &ti, sizeof(ti)))
		goto out;
	printf("kvread: %llu keys in %llu buckets, serving by READ only\n",
	       (unsigned long long)o->nkeys, (unsigned long long)nb);
	fflush(stdout);
	if (ex_wait_disconnect(&c))
		goto out;
	if (ibv_poll_cq(c.cq, 1, &wc) != 0) {
		ex_err("the server's CQ saw a completion");
		goto out;
	}
	printf("kvread: client gone; the server application handled no "
	       "completion and no message\n");
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(mr);
	ex_close(&l);
	return rc;
}

static int run_client(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 4, .recv_wr = 1 };
	struct ex_conn c;
	struct ibv_mr *mr = NULL;
	struct table_info ti;
	struct bucket *w;
	struct ibv_wc wc;
	uint64_t i, reads = 0, found = 0, missed = 0, t0;
	int rc = 1;

	if (ex_resolve(&c, o->host, o->port, &caps))
		return 1;
	mr = ex_reg(c.pd, WINDOW * sizeof(*w), IBV_ACCESS_LOCAL_WRITE);
	if (!mr || ex_connect(&c, NULL, 0))
		goto out;
	if (c.peer_len < sizeof(ti)) {
		ex_err("no table address from the server");
		goto out;
	}
	memcpy(&ti, c.peer, sizeof(ti));
	w = mr->addr;
	t0 = ex_now_ns();
	for (i = 0; i < o->lookups; i++) {
		bool absent = i % 4 == 3;
		uint64_t key = absent ? absent_key(i) : key_of(i % ti.nkeys);
		uint64_t b = mix(key) & (ti.nbuckets - 1), probed = 0;
		int j, n, hit = -1;

		while (hit < 0 && probed < ti.nbuckets) {
			/* a window, cut short at the end of the table */
			n = WINDOW;
			if (b + (uint64_t)n > ti.nbuckets)
				n = (int)(ti.nbuckets - b);
			if (ex_post_send(&c, IBV_WR_RDMA_READ, w,
					 (uint32_t)(n * sizeof(*w)), mr->lkey,
					 ti.addr + b * sizeof(*w), ti.rkey,
					 IBV_SEND_SIGNALED, i) ||
			    ex_wait_wc(&c, &wc, 1))
				goto out;
			reads++;
			for (j = 0; j < n; j++) {
				if (w[j].key == key || !w[j].key) {
					hit = j;
					break;
				}
			}
			probed += (uint64_t)n;
			b = (b + (uint64_t)n) & (ti.nbuckets - 1);
		}
		if (hit < 0 || !w[hit].key) {
			if (!absent) {
				ex_err("key %#llx not found",
				       (unsigned long long)key);
				goto out;
			}
			missed++;
			continue;
		}
		if (absent) {
			ex_err("key %#llx was never stored but is there",
			       (unsigned long long)key);
			goto out;
		}
		if (w[hit].vlen != val_len(key) ||
		    ex_check(w[hit].val, w[hit].vlen, key, 0) >= 0) {
			ex_err("key %#llx: wrong value", (unsigned long long)key);
			goto out;
		}
		found++;
	}
	printf("kvread: %llu lookups (%llu found with the right value, %llu "
	       "absent as they should be), %.2f READs each, %.1f us per "
	       "lookup\n", (unsigned long long)o->lookups,
	       (unsigned long long)found, (unsigned long long)missed,
	       (double)reads / (double)(o->lookups ? o->lookups : 1),
	       (ex_now_ns() - t0) / 1e3 / (double)(o->lookups ? o->lookups : 1));
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(mr);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7474", .nkeys = 3000, .lookups = 10000 };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:k:l:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'k':
			if (ex_parse_size(optarg, &o.nkeys) || !o.nkeys ||
			    o.nkeys > (1u << 24))
				goto bad;
			break;
		case 'l':
			if (ex_parse_size(optarg, &o.lookups))
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
