/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rendezvous: large messages without large receive buffers.
 *
 * A SEND lands in whatever receive buffer the receiver posted next, so a
 * receiver that must take messages of any size would have to post
 * buffers of the largest size. The rendezvous protocol keeps receive
 * buffers small and moves a large payload by RDMA WRITE instead:
 *
 *   sender                               receiver
 *   SEND  RTS {id, len}        ------>   picks a landing zone
 *                              <------   SEND  CTS {id, addr, rkey}
 *   RDMA WRITE payload         ------>   (no receive consumed, no CPU)
 *   SEND  FIN {id}             ------>   the payload is there: RC delivers
 *                                        the SEND after the WRITE before it
 *                              <------   SEND  ACK {id}
 *
 * Small messages go "eager": the payload rides in the SEND itself (inline
 * where the QP allows), which saves the extra round trip.
 *
 * The client (sender) sends -n messages of sizes from 1 byte to -m bytes;
 * the server (receiver) checks every byte of each and answers ACK; both
 * exit non-zero on any error.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EAGER_MAX 1024	/* the most payload a receive buffer takes */

enum { M_EAGER = 1, M_RTS, M_CTS, M_FIN, M_ACK, M_BYE };

/* Every SEND of this program is one of these (header + eager payload). */
struct msg {
	uint32_t type;
	uint32_t id;
	uint64_t len;
	uint64_t addr;		/* CTS: where to write */
	uint32_t rkey;		/* CTS: the landing zone's rkey */
	uint32_t pad;
	uint8_t data[EAGER_MAX];	/* EAGER: the payload */
};
#define MSG_HDR offsetof(struct msg, data)

/* Receive buffers posted at each end; one message is in flight at a time. */
#define NRECV 4

struct opts {
	const char *host, *port;
	bool server;
	uint64_t count, max, eager;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: rendezvous -s [-p PORT]                       (receiver)\n"
"       rendezvous -c HOST [-p PORT] [-n COUNT] [-m MAX] [-e EAGER]  (sender)\n"
"\n"
"Sends COUNT messages (default 200) of sizes from 1 byte to MAX (default\n"
"1M): up to EAGER bytes (default 256, at most %d) in the SEND itself,\n"
"larger ones by the rendezvous protocol (RTS, CTS with addr+rkey, RDMA\n"
"WRITE, FIN). The receiver checks every byte; both exit 1 on any error.\n"
"Connection set-up by rdma_cm to HOST (e.g. 127.0.0.1) port PORT (7471).\n",
		EAGER_MAX);
}

/* The message sizes: a spread from 1 byte to max, each used in turn. */
static uint64_t msg_len(uint64_t i, uint64_t max)
{
	static const uint64_t base[] = { 1, 7, 64, 255, 256, 257, 1000,
					 4096, 4097, 65536, 100000,
					 1 << 20, 3 << 20 };
	uint64_t n = base[i % (sizeof(base) / sizeof(base[0]))];

	return n < max ? n : max;
}

/* The receive buffers, posted once and each posted again when used. */
struct msgq {
	struct ibv_mr *mr;	/* NRECV receive slots, then one send slot */
	struct msg *slot;
};

static int msgq_init(struct ex_conn *c, struct msgq *q)
{
	q->mr = ex_reg(c->pd, (NRECV + 1) * sizeof(struct msg),
		       IBV_ACCESS_LOCAL_WRITE);
	if (!q->mr)
		return -1;
	q->slot = q->mr->addr;
	return 0;
}

/* ex_caps.on_qp: the first receives of a new QP, before it connects. */
static int msgq_post(struct ex_conn *c, void *arg)
{
	struct msgq *q = arg;
	int i;

	for (i = 0; i < NRECV; i++)
		if (ex_post_recv(c, &q->slot[i], sizeof(struct msg),
				 q->mr->lkey, (uint64_t)i))
			return -1;
	return 0;
}

/* The next message received; its slot is posted again by msgq_done(). */
static struct msg *msgq_next(struct ex_conn *c, struct msgq *q, uint32_t *len)
{
	struct ibv_wc wc;

	if (ex_wait_recv(c, &wc))
		return NULL;
	*len = wc.byte_len;
	if (wc.byte_len < MSG_HDR) {
		ex_err("short message (%u bytes)", wc.byte_len);
		return NULL;
	}
	return &q->slot[wc.wr_id];
}

static int msgq_done(struct ex_conn *c, struct msgq *q, struct msg *m)
{
	return ex_post_recv(c, m, sizeof(*m), q->mr->lkey,
			    (uint64_t)(m - q->slot));
}

/* Send m's first len bytes (inline when it fits); wait: and wait for the
 * send (else the caller waits before it writes the buffer again). */
static int msgq_send(struct ex_conn *c, struct msgq *q, uint32_t len,
		     uint64_t *sent, bool wait)
{
	unsigned int fl = IBV_SEND_SIGNALED;

	if (len <= c->max_inline)
		fl |= IBV_SEND_INLINE;
	if (ex_post_send(c, IBV_WR_SEND, &q->slot[NRECV], len, q->mr->lkey,
			 0, 0, fl, 1000))
		return -1;
	++*sent;
	return wait ? ex_wait_sends(c, *sent) : 0;
}

static int run_server(const struct opts *o)
{
	struct msgq q = { 0 };
	struct ex_caps caps = { .send_wr = 8, .recv_wr = NRECV,
				.inline_data = 64, .on_qp = msgq_post,
				.arg = &q };
	struct ex_conn l, c;
	struct ibv_mr *zone = NULL;
	struct msg *m, *out;
	uint64_t sent = 0, eager = 0, rdv = 0, bytes = 0, expect_len = 0;
	uint32_t len, expect_id = 0;
	long bad;
	int rc = 1;

	if (ex_listen(&l, NULL, o->port) ||
	    ex_get_request(&l, &c, &caps, NULL))
		return 1;
	/*
	 * The landing zone: registered once, big enough for the largest
	 * message the sender announced in its connect's private data.
	 */
	if (c.peer_len < sizeof(uint64_t)) {
		ex_err("the sender did not say its largest message");
		return 1;
	}
	memcpy(&expect_len, c.peer, sizeof(uint64_t));
	zone = ex_reg(c.pd, expect_len, IBV_ACCESS_LOCAL_WRITE |
					IBV_ACCESS_REMOTE_WRITE);
	if (!zone || msgq_init(&c, &q) || ex_accept(&c, NULL, 0))
		return 1;
	out = &q.slot[NRECV];
	printf("rendezvous: receiver ready, landing zone %llu bytes\n",
	       (unsigned long long)expect_len);
	for (;;) {
		m = msgq_next(&c, &q, &len);
		if (!m)
			goto out;
		if (m->type == M_BYE) {
			if (m->id != expect_id) {
				ex_err("BYE after %u messages, %u received",
				       m->id, expect_id);
				goto out;
			}
			break;
		}
		if (m->id != expect_id) {
			ex_err("message %u out of order (wanted %u)", m->id,
			       expect_id);
			goto out;
		}
		if (m->type == M_EAGER) {
			/* the payload is in the receive buffer itself */
			if (m->len != len - MSG_HDR) {
				ex_err("eager %u: %llu bytes announced, %u came",
				       m->id, (unsigned long long)m->len,
				       len - (uint32_t)MSG_HDR);
				goto out;
			}
			bad = ex_check(m->data, m->len, m->id, 0);
			eager++;
		} else if (m->type == M_RTS) {
			uint64_t n = m->len;

			if (n > zone->length) {
				ex_err("RTS %u of %llu bytes: too large", m->id,
				       (unsigned long long)n);
				goto out;
			}
			/* clear the zone so that stale bytes cannot pass */
			memset(zone->addr, 0, n);
			if (msgq_done(&c, &q, m) || ex_wait_sends(&c, sent))
				goto out;
			*out = (struct msg){ .type = M_CTS, .id = expect_id,
					     .len = n,
					     .addr = (uintptr_t)zone->addr,
					     .rkey = zone->rkey };
			if (msgq_send(&c, &q, MSG_HDR, &sent, true))
				goto out;
			m = msgq_next(&c, &q, &len);
			if (!m)
				goto out;
			if (m->type != M_FIN || m->id != expect_id) {
				ex_err("wanted FIN %u, got type %u id %u",
				       expect_id, m->type, m->id);
				goto out;
			}
			bad = ex_check(zone->addr, n, expect_id, 0);
			rdv++;
		} else {
			ex_err("unexpected message type %u", m->type);
			goto out;
		}
		if (bad >= 0) {
			ex_err("message %u: byte %ld of %llu is wrong",
			       expect_id, bad, (unsigned long long)m->len);
			goto out;
		}
		bytes += m->type == M_FIN ? m->len : len - MSG_HDR;
		if (msgq_done(&c, &q, m) || ex_wait_sends(&c, sent))
			goto out;
		/*
		 * Not waited for here: the sender's next message proves it
		 * arrived, and after the last one the sender says BYE and may
		 * disconnect before this SEND's own ACK reaches us (a lost
		 * ACK is resent later), which would flush it (common.h,
		 * ex_close).
		 */
		*out = (struct msg){ .type = M_ACK, .id = expect_id };
		if (msgq_send(&c, &q, MSG_HDR, &sent, false))
			goto out;
		expect_id++;
	}
	printf("rendezvous: received %u messages (%llu eager, %llu by "
	       "rendezvous), %llu bytes, every byte checked\n", expect_id,
	       (unsigned long long)eager, (unsigned long long)rdv,
	       (unsigned long long)bytes);
	rc = 0;
	ex_wait_disconnect(&c);
out:
	ex_close(&c);
	ex_dereg(zone);
	ex_dereg(q.mr);
	ex_close(&l);
	return rc;
}

/* Wait for the receiver's answer of type t to message id. */
static struct msg *await(struct ex_conn *c, struct msgq *q, uint32_t t,
			 uint32_t id)
{
	struct msg *m;
	uint32_t len;

	m = msgq_next(c, q, &len);
	if (m && (m->type != t || m->id != id)) {
		ex_err("wanted type %u for %u, got type %u for %u", t, id,
		       m->type, m->id);
		return NULL;
	}
	return m;
}

static int run_client(const struct opts *o)
{
	struct msgq q = { 0 };
	struct ex_caps caps = { .send_wr = 8, .recv_wr = NRECV,
				.inline_data = 64, .on_qp = msgq_post,
				.arg = &q };
	struct ex_conn c;
	struct ibv_mr *src = NULL;
	struct msg *m, *out;
	uint64_t i, len, sent = 0, bytes = 0, t0;
	uint32_t id;
	int rc = 1;

	if (ex_resolve(&c, o->host, o->port, &caps))
		return 1;
	src = ex_reg(c.pd, o->max, IBV_ACCESS_LOCAL_WRITE);
	if (!src || msgq_init(&c, &q) ||
	    ex_connect(&c, &o->max, sizeof(o->max)))
		goto out;
	out = &q.slot[NRECV];
	t0 = ex_now_ns();
	for (i = 0; i < o->count; i++) {
		id = (uint32_t)i;
		len = msg_len(i, o->max);
		if (len <= o->eager) {
			*out = (struct msg){ .type = M_EAGER, .id = id,
					     .len = len };
			ex_fill(out->data, len, id, 0);
			if (msgq_send(&c, &q, (uint32_t)(MSG_HDR + len),
				      &sent, true))
				goto out;
		} else {
			struct ibv_sge sge = { (uintptr_t)src->addr,
					       (uint32_t)len, src->lkey };
			struct ibv_sge fsge = { (uintptr_t)out, MSG_HDR,
						q.mr->lkey };
			struct ibv_send_wr wr[2], *bad;
			int r;

			ex_fill(src->addr, len, id, 0);
			*out = (struct msg){ .type = M_RTS, .id = id,
					     .len = len };
			if (msgq_send(&c, &q, MSG_HDR, &sent, true))
				goto out;
			m = await(&c, &q, M_CTS, id);
			if (!m || m->len != len)
				goto out;
			/*
			 * The payload and the FIN as one WR list: the WRITE
			 * unsignalled (the FIN's completion says both are
			 * done), the FIN behind it on the same QP.
			 */
			memset(wr, 0, sizeof(wr));
			wr[0].opcode = IBV_WR_RDMA_WRITE;
			wr[0].sg_list = &sge;
			wr[0].num_sge = 1;
			wr[0].wr.rdma.remote_addr = m->addr;
			wr[0].wr.rdma.rkey = m->rkey;
			wr[0].next = &wr[1];
			wr[1].opcode = IBV_WR_SEND;
			wr[1].sg_list = &fsge;
			wr[1].num_sge = 1;
			wr[1].send_flags = IBV_SEND_SIGNALED;
			if (msgq_done(&c, &q, m))
				goto out;
			*out = (struct msg){ .type = M_FIN, .id = id,
					     .len = len };
			r = ibv_post_send(c.qp, wr, &bad);
			if (r) {
				ex_err("ibv_post_send: %s", strerror(r));
				goto out;
			}
			if (ex_wait_sends(&c, ++sent))
				goto out;
		}
		m = await(&c, &q, M_ACK, id);
		if (!m || msgq_done(&c, &q, m))
			goto out;
		bytes += len;
	}
	*out = (struct msg){ .type = M_BYE, .id = (uint32_t)o->count };
	if (msgq_send(&c, &q, MSG_HDR, &sent, true))
		goto out;
	printf("rendezvous: sent %llu messages, %llu bytes in %.1f ms, all "
	       "acknowledged\n", (unsigned long long)o->count,
	       (unsigned long long)bytes, (ex_now_ns() - t0) / 1e6);
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(src);
	ex_dereg(q.mr);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7471", .count = 200, .max = 1 << 20,
			  .eager = 256 };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:n:m:e:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'n':
			if (ex_parse_size(optarg, &o.count))
				goto bad;
			break;
		case 'm':
			if (ex_parse_size(optarg, &o.max) || !o.max ||
			    o.max > (1u << 30))
				goto bad;
			break;
		case 'e':
			if (ex_parse_size(optarg, &o.eager) ||
			    o.eager > EAGER_MAX)
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
