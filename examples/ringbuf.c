/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ringbuf: a circular buffer in the consumer's registered memory, filled
 * by the producer's RDMA WRITEs and polled by the consumer, with credits
 * so that nothing is overwritten.
 *
 * Neither side posts a receive or takes an interrupt: the producer WRITEs
 * entry n into slot n % N of the consumer's ring, the consumer spins on
 * the slot's last word until it holds n, and every N/4 entries WRITEs back
 * how many it has consumed into a word of the producer's memory (the
 * credits). The producer writes entry n only while n - consumed <= N.
 *
 * A slot is [seq, len, payload..., seq]: the consumer takes a slot when its
 * trailing seq is the one it waits for. That relies on the WRITE's bytes
 * landing in order, which the IBA does not promise within a message
 * (hardware does it for a one-packet WRITE, and uroce always does), so the
 * consumer checks the leading seq and every payload byte too and, should a
 * slot look torn, reads it again before it calls it an error.
 *
 * The producer signals one WRITE in 16 (selective signalling) and never
 * lets more unsignalled WRITEs pile up than its send queue holds.
 *
 * The consumer (server) checks that entries 1..COUNT arrive each exactly
 * once, in order, intact and never overwritten before it consumed them;
 * the producer that the credits never run ahead of what it wrote and end
 * at COUNT.
 */
#include "common.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* One WRITE in this many is signalled (fewer when the ring is small). */
#define SIGNAL_EVERY 16

/* What the producer says in its connect. */
struct hello {
	uint64_t credit_addr;	/* where the consumer writes its count */
	uint64_t count;		/* how many entries will come */
	uint32_t credit_rkey;
	uint32_t slot_size;
	uint32_t nslots;
};

/* What the consumer answers. */
struct ring_info {
	uint64_t addr;
	uint32_t rkey;
};

struct opts {
	const char *host, *port;
	bool server;
	uint64_t count, nslots, slot_size, pause_every;
};

static void usage(FILE *f)
{
	fprintf(f,
"usage: ringbuf -s [-p PORT] [-P EVERY]                       (consumer)\n"
"       ringbuf -c HOST [-p PORT] [-n COUNT] [-N SLOTS] [-S SIZE]  (producer)\n"
"\n"
"The producer RDMA-WRITEs COUNT entries (default 20000) into a ring of\n"
"SLOTS slots (default 64) of SIZE bytes (default 256, at least 32) in the\n"
"consumer's memory, which the consumer polls; credits written back by the\n"
"consumer keep the producer from overwriting an entry not yet consumed.\n"
"The consumer pauses 2 ms every EVERY entries (default 5000; 0: never) so\n"
"that the ring fills and the credits matter. Both check everything and\n"
"exit 1 on any error. rdma_cm to HOST (e.g. 127.0.0.1) port PORT (7472).\n");
}

/* Slot layout: the payload bytes are the stream of seed seq. */
static inline volatile uint64_t *slot_tail(uint8_t *slot, uint64_t size)
{
	return (volatile uint64_t *)(slot + size - 8);
}

static uint32_t entry_len(uint64_t seq, uint64_t size)
{
	return (uint32_t)(1 + seq % (size - 24));
}

static void fill_slot(uint8_t *s, uint64_t seq, uint64_t size)
{
	uint32_t len = entry_len(seq, size);

	memcpy(s, &seq, 8);
	memcpy(s + 8, &len, 4);
	ex_fill(s + 16, len, seq, 0);
	memcpy(s + size - 8, &seq, 8);
}

/* 0: slot holds entry seq intact; 1: not (yet) */
static int slot_ok(const uint8_t *s, uint64_t seq, uint64_t size)
{
	uint64_t head;
	uint32_t len;

	memcpy(&head, s, 8);
	memcpy(&len, s + 8, 4);
	if (head != seq || len != entry_len(seq, size))
		return 1;
	return ex_check(s + 16, len, seq, 0) >= 0;
}

static int run_server(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = 4, .recv_wr = 1 };
	struct ex_conn l, c;
	struct ibv_mr *ring = NULL, *credit = NULL;
	struct ring_info ri;
	struct hello h;
	struct ibv_wc wc;
	uint64_t seq, size, n, t0, ret_every, returned = 0, tail;
	unsigned long spins = 0;
	int rc = 1, credit_busy = 0;

	if (ex_listen(&l, NULL, o->port) ||
	    ex_get_request(&l, &c, &caps, NULL))
		return 1;
	if (c.peer_len < sizeof(h)) {
		ex_err("short hello from the producer");
		goto out;
	}
	memcpy(&h, c.peer, sizeof(h));
	size = h.slot_size;
	n = h.nslots;
	if (size < 32 || size % 8 || n < 4 || n > 65536) {
		ex_err("bad ring geometry %llu x %llu", (unsigned long long)n,
		       (unsigned long long)size);
		goto out;
	}
	ring = ex_reg(c.pd, n * size, IBV_ACCESS_LOCAL_WRITE |
				      IBV_ACCESS_REMOTE_WRITE);
	credit = ex_reg(c.pd, 8, IBV_ACCESS_LOCAL_WRITE);
	if (!ring || !credit)
		goto out;
	ri.addr = (uintptr_t)ring->addr;
	ri.rkey = ring->rkey;
	if (ex_accept(&c, &ri, sizeof(ri)))
		goto out;
	ret_every = n / 4;
	t0 = ex_now_ns();
	for (seq = 1; seq <= h.count; seq++) {
		uint8_t *s = (uint8_t *)ring->addr + ((seq - 1) % n) * size;
		uint64_t deadline = ex_now_ns() + EX_WAIT_MS * 1000000ull;

		/* wait for the entry: its trailing word becomes seq */
		while ((tail = __atomic_load_n(slot_tail(s, size),
					       __ATOMIC_ACQUIRE)) != seq) {
			if (tail > seq) {
				ex_err("entry %llu overwrote entry %llu before "
				       "it was consumed",
				       (unsigned long long)tail,
				       (unsigned long long)seq);
				goto out;
			}
			if ((spins & 4095) == 0 && ex_now_ns() > deadline) {
				ex_err("entry %llu never came",
				       (unsigned long long)seq);
				goto out;
			}
			ex_relax(&spins);
		}
		while (slot_ok(s, seq, size)) {
			if (ex_now_ns() > deadline) {
				ex_err("entry %llu is corrupt",
				       (unsigned long long)seq);
				goto out;
			}
			ex_relax(&spins);
		}
		if (o->pause_every && seq % o->pause_every == 0)
			usleep(2000);
		/*
		 * Give the slots back in batches (one WRITE per N/4
		 * entries, and at the end); one credit WRITE in flight at a
		 * time, so its 8-byte source is not changed under it.
		 */
		if (seq - returned >= ret_every || seq == h.count) {
			if (credit_busy && ex_wait_wc(&c, &wc, 1))
				goto out;
			*(uint64_t *)credit->addr = seq;
			if (ex_post_send(&c, IBV_WR_RDMA_WRITE, credit->addr, 8,
					 credit->lkey, h.credit_addr,
					 h.credit_rkey, IBV_SEND_SIGNALED, seq))
				goto out;
			credit_busy = 1;
			returned = seq;
		}
	}
	if (credit_busy && ex_wait_wc(&c, &wc, 1))
		goto out;
	printf("ringbuf: consumed %llu entries in order through %llu slots of "
	       "%llu bytes in %.1f ms, none lost, torn or overwritten\n",
	       (unsigned long long)h.count, (unsigned long long)n,
	       (unsigned long long)size, (ex_now_ns() - t0) / 1e6);
	/*
	 * We disconnect, not the producer: it may see our last credit
	 * before the ACK of that WRITE reaches us (common.h, ex_close).
	 */
	rc = 0;
out:
	ex_close(&c);
	ex_dereg(ring);
	ex_dereg(credit);
	ex_close(&l);
	return rc;
}

static int run_client(const struct opts *o)
{
	struct ex_caps caps = { .send_wr = (uint32_t)o->nslots,
				.recv_wr = 1 };
	struct ex_conn c;
	struct ibv_mr *stage = NULL, *credit = NULL;
	struct ring_info ri;
	struct hello h;
	struct ibv_wc wc;
	uint64_t seq, done = 0, waits = 0, t0, consumed = 0;
	uint64_t n = o->nslots, size = o->slot_size;
	uint64_t sig = n / 2 < SIGNAL_EVERY ? n / 2 : SIGNAL_EVERY;
	volatile uint64_t *cw;
	unsigned long spins = 0;
	int rc = 1;

	if (ex_resolve(&c, o->host, o->port, &caps))
		return 1;
	/*
	 * The staging slots the WRITEs are sent from: twice the send queue,
	 * so that a slot is used again only after a later signalled WRITE
	 * completed, which says the WRITE from it is done too.
	 */
	stage = ex_reg(c.pd, 2 * n * size, IBV_ACCESS_LOCAL_WRITE);
	credit = ex_reg(c.pd, 8, IBV_ACCESS_LOCAL_WRITE |
				 IBV_ACCESS_REMOTE_WRITE);
	if (!stage || !credit)
		goto out;
	cw = credit->addr;
	h = (struct hello){ .credit_addr = (uintptr_t)credit->addr,
			    .credit_rkey = credit->rkey, .count = o->count,
			    .slot_size = (uint32_t)size,
			    .nslots = (uint32_t)n };
	if (ex_connect(&c, &h, sizeof(h)))
		goto out;
	if (c.peer_len < sizeof(ri)) {
		ex_err("no ring address from the consumer");
		goto out;
	}
	memcpy(&ri, c.peer, sizeof(ri));
	t0 = ex_now_ns();
	for (seq = 1; seq <= o->count; seq++) {
		uint8_t *s = (uint8_t *)stage->addr + (seq % (2 * n)) * size;
		uint64_t deadline = 0;
		unsigned int fl = 0;

		/* wait for a credit: the slot's previous entry consumed */
		while (seq - (consumed = __atomic_load_n(cw, __ATOMIC_ACQUIRE))
		       > n) {
			if (!deadline) {
				waits++;
				deadline = ex_now_ns() +
					   EX_WAIT_MS * 1000000ull;
			}
			if ((spins & 4095) == 0 && ex_now_ns() > deadline) {
				ex_err("no credit for entry %llu",
				       (unsigned long long)seq);
				goto out;
			}
			ex_relax(&spins);
		}
		if (consumed >= seq) {
			ex_err("credits (%llu) ran ahead of the entries written "
			       "(%llu)", (unsigned long long)consumed,
			       (unsigned long long)(seq - 1));
			goto out;
		}
		/* keep the send queue from filling with unsignalled WRs */
		if (seq - 1 - done >= n - 1) {
			if (ex_wait_wc(&c, &wc, 1))
				goto out;
			done = wc.wr_id;
		}
		fill_slot(s, seq, size);
		if (seq % sig == 0 || seq == o->count)
			fl = IBV_SEND_SIGNALED;
		if (ex_post_send(&c, IBV_WR_RDMA_WRITE, s, (uint32_t)size,
				 stage->lkey, ri.addr + ((seq - 1) % n) * size,
				 ri.rkey, fl, seq))
			goto out;
	}
	/*
	 * The consumer's last credit says it has taken them all, which
	 * proves our last WRITEs arrived: their completions are not waited
	 * for, since the consumer disconnects once its credit is out, and a
	 * WRITE whose ACK was lost then ends flushed (common.h, ex_close).
	 */
	{
		uint64_t deadline = ex_now_ns() + EX_WAIT_MS * 1000000ull;

		while (__atomic_load_n(cw, __ATOMIC_ACQUIRE) != o->count) {
			if ((spins & 4095) == 0 && ex_now_ns() > deadline) {
				ex_err("the consumer took %llu of %llu",
				       (unsigned long long)*cw,
				       (unsigned long long)o->count);
				goto out;
			}
			ex_relax(&spins);
		}
	}
	printf("ringbuf: produced %llu entries in %.1f ms, waited for credits "
	       "%llu times, all consumed\n", (unsigned long long)o->count,
	       (ex_now_ns() - t0) / 1e6, (unsigned long long)waits);
	/* the consumer ends the connection once its last credit is out */
	rc = ex_wait_disconnect(&c) ? 1 : 0;
out:
	ex_close(&c);
	ex_dereg(stage);
	ex_dereg(credit);
	return rc;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "help", no_argument, NULL, 'h' }, { 0 } };
	struct opts o = { .port = "7472", .count = 20000, .nslots = 64,
			  .slot_size = 256, .pause_every = 5000 };
	int ch;

	while ((ch = getopt_long(argc, argv, "sc:p:n:N:S:P:h", lo, NULL)) != -1) {
		switch (ch) {
		case 's': o.server = true; break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = optarg; break;
		case 'n':
			if (ex_parse_size(optarg, &o.count) || !o.count)
				goto bad;
			break;
		case 'N':
			if (ex_parse_size(optarg, &o.nslots) || o.nslots < 4 ||
			    o.nslots > 4096)
				goto bad;
			break;
		case 'S':
			if (ex_parse_size(optarg, &o.slot_size) ||
			    o.slot_size < 32 || o.slot_size % 8 ||
			    o.slot_size > 65536)
				goto bad;
			break;
		case 'P':
			if (ex_parse_size(optarg, &o.pause_every))
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
