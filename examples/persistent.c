/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * persistent: set a connection up once and reuse it for thousands of
 * operations, because setting one up costs far more than using it.
 *
 * A connection needs an rdma_cm exchange (address and route resolution,
 * REQ, REP, RTU), a QP taken through RESET -> INIT -> RTR -> RTS, and
 * memory registered, before the first byte moves; tearing it down costs a
 * DREQ/DREP. An operation on an established connection is one round trip.
 *
 * The client first opens ONE connection and does -n echo round trips on
 * it (a SEND the server answers with a SEND of the same bytes), then opens
 * -C connections that each do a single round trip, and prints what a
 * round trip and a connection cost. The server answers any number of
 * connections in turn; it stops after the one the client marks last.
 * Every echo is checked byte for byte; exit status 1 on any error.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG 64

struct hello {
	uint64_t ops;		/* round trips on this connection */
	uint32_t last;		/* the server stops after this one */
};

struct opts {
	const char *host, *port;
	bool server;
	uint64_t ops, conns;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: persistent -s [-p PORT]\n"
"       persistent -c HOST [-p PORT] [-n OPS] [-C CONNS]\n"
"\n"
"The client does OPS (default 5000) %d-byte echo round trips over one\n"
"connection, then CONNS (default 20) connections of one round trip each,\n"
"and prints the cost of a round trip against that of a connection. The\n"
"server echoes every connection until the client's last. Every byte is\n"
"checked; exit status 1 on any error. rdma_cm to HOST port PORT (7475).\n",
		MSG);
}

/* ex_caps.on_qp: the one receive buffer (the first half of the MR). */
static int post_first(struct ex_conn *c, void *arg)
{
	struct ibv_mr *mr = *(struct ibv_mr **)arg;

	return ex_post_recv(c, mr->addr, MSG, mr->lkey, 0);
}

static int serve_one(struct ex_conn *l, struct ibv_mr **mrp, int *last)
{
	struct ex_caps caps = { .send_wr = 2, .recv_wr = 1, .inline_data = MSG,
				.on_qp = post_first, .arg = mrp };
	struct ex_conn c;
	struct hello h;
	struct ibv_wc wc;
	uint8_t *rx, *tx;
	uint64_t i;
	int rc = -1;

	if (ex_get_request(l, &c, &caps, NULL))
		return -1;
	if (c.peer_len < sizeof(h)) {
		ex_err("no hello from the client");
		goto out;
	}
	memcpy(&h, c.peer, sizeof(h));
	*last = (int)h.last;
	/* one MR per connection: its PD is the connection's */
	*mrp = ex_reg(c.pd, 2 * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!*mrp || ex_accept(&c, NULL, 0))
		goto out;
	rx = (*mrp)->addr;
	tx = rx + MSG;
	for (i = 0; i < h.ops; i++) {
		if (ex_wait_recv(&c, &wc))
			goto out;
		if (wc.byte_len != MSG) {
			ex_err("message of %u bytes", wc.byte_len);
			goto out;
		}
		memcpy(tx, rx, MSG);
		/* the next ping may come as soon as the pong leaves */
		if (ex_post_recv(&c, rx, MSG, (*mrp)->lkey, 0) ||
		    ex_post_send(&c, IBV_WR_SEND, tx, MSG, (*mrp)->lkey, 0, 0,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, i) ||
		    ex_wait_sends(&c, i + 1))
			goto out;
	}
	/*
	 * We disconnect, not the client: our last echo completes only when
	 * the client's ACK of it has come, and the client has all it needs
	 * before that (common.h, ex_close).
	 */
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(*mrp);
	*mrp = NULL;
	return rc;
}

static int run_server(const struct opts *o)
{
	struct ex_conn l;
	struct ibv_mr *mr = NULL;
	uint64_t n = 0, rc = 0;
	int last = 0;

	if (ex_listen(&l, NULL, o->port))
		return 1;
	while (!last) {
		if (serve_one(&l, &mr, &last)) {
			rc = 1;
			break;
		}
		n++;
	}
	if (!rc)
		printf("persistent: served %llu connections\n",
		       (unsigned long long)n);
	ex_close(&l);
	return (int)rc;
}

/* One connection doing ops round trips; its set-up and ops times. */
static int client_conn(const struct opts *o, uint64_t ops, uint32_t last,
		       uint64_t *setup_ns, uint64_t *ops_ns)
{
	struct ibv_mr *mr = NULL;
	struct ex_caps caps = { .send_wr = 2, .recv_wr = 1, .inline_data = MSG,
				.on_qp = post_first, .arg = &mr };
	struct hello h = { ops, last };
	struct ex_conn c;
	struct ibv_wc wc;
	uint64_t t0 = ex_now_ns(), t1, i, seed;
	uint8_t *rx, *tx;
	int rc = -1;

	if (ex_resolve(&c, o->host, o->port, &caps))
		return -1;
	mr = ex_reg(c.pd, 2 * MSG, IBV_ACCESS_LOCAL_WRITE);
	if (!mr || ex_connect(&c, &h, sizeof(h)))
		goto out;
	t1 = ex_now_ns();
	*setup_ns = t1 - t0;
	rx = mr->addr;
	tx = rx + MSG;
	for (i = 0; i < ops; i++) {
		seed = (uint64_t)last << 40 | i;
		ex_fill(tx, MSG, seed, 0);
		if (ex_post_send(&c, IBV_WR_SEND, tx, MSG, mr->lkey, 0, 0,
				 IBV_SEND_SIGNALED | IBV_SEND_INLINE, i) ||
		    ex_wait_recv(&c, &wc))
			goto out;
		if (wc.byte_len != MSG || ex_check(rx, MSG, seed, 0) >= 0) {
			ex_err("echo %llu came back wrong",
			       (unsigned long long)i);
			goto out;
		}
		/*
		 * The echo proves the server had the ping. The last ping's
		 * own completion is not waited for: the server disconnects
		 * once its echo completed, and if its ACK of the ping was
		 * lost the ping ends flushed (common.h, ex_close).
		 */
		if (i + 1 == ops)
			break;
		if (ex_wait_sends(&c, i + 1) ||
		    ex_post_recv(&c, rx, MSG, mr->lkey, 0))
			goto out;
	}
	*ops_ns = ex_now_ns() - t1;
	/* the server ends the connection once its last echo completed */
	rc = ex_wait_disconnect(&c);
out:
	ex_close(&c);
	ex_dereg(mr);
	return rc;
}

static int run_client(const struct opts *o)
{
	uint64_t setup, ops, total_setup = 0, first_setup, i, dummy;

	if (client_conn(o, o->ops, o->conns == 0, &first_setup, &ops))
		return 1;
	for (i = 0; i < o->conns; i++) {
		if (client_conn(o, 1, i + 1 == o->conns, &setup, &dummy))
			return 1;
		total_setup += setup;
	}
	printf("persistent: %llu round trips on one connection: %.1f us each "
	       "(its set-up %.2f ms, with opening the device)\n",
	       (unsigned long long)o->ops,
	       o->ops ? ops / 1e3 / (double)o->ops : 0.0, first_setup / 1e6);
	if (o->conns && o->ops)
		printf("persistent: %llu fresh connections: set-up %.2f ms "
		       "each, the time of %.0f round trips\n",
		       (unsigned long long)o->conns,
		       total_setup / 1e6 / (double)o->conns,
		       (double)total_setup / (double)o->conns /
		       ((double)ops / (double)o->ops));
	printf("persistent: every echo checked\n");
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7475", .ops = 5000, .conns = 20 };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:n:C:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'n':
			if (ex_parse_size(optarg, &o.ops))
				goto bad;
			break;
		case 'C':
			if (ex_parse_size(optarg, &o.conns) || o.conns > 10000)
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
