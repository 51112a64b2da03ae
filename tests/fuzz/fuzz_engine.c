/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the engine with live QPs. The whole library (api,
 * obj, engine, wire, util) is compiled in, instrumented; the link is this
 * file's in-memory network, the clock is a fake one and the random source
 * (keys, QPNs) a fixed sequence, so a run depends on its input alone (and
 * on which keys the inputs before it in the process retired). One device
 * with a PD, four MRs (guard bytes around each), an RC, a UC and a UD pair
 * of QPs, each QP with its CQ; per input, two fresh MWs (types 1 and 2),
 * the MRs' contents reset and every QP reset and connected to its pair
 * with PSNs, path MTU, timeout and retry counts from the input's header
 * (and the random sequence restarted). Then the input is a sequence of
 * operations: post a send (any opcode, size, SGEs, flags, keys) or a
 * receive, inject a crafted packet with a valid ICRC (headers from the
 * input) for any QP, drop, duplicate, reorder or corrupt queued datagrams,
 * deliver some, advance the clock (timers), modify a QP, bind a MW, poll.
 * After every operation and at the end (every QP to ERR, CQs drained), it
 * aborts if:
 *   - a byte outside every MR changed (guards), or an MR that nothing may
 *     write (no LOCAL_WRITE) was written (its pages are read-only: a write
 *     is a fault memguard counts, or a SEGV; its bytes are compared with
 *     their pattern at the end);
 *   - a completion names a WQE that was not posted, or one already
 *     completed, or comes out of order, or on the wrong QP; a successful
 *     completion has the wrong opcode or length, or is for an unsignaled
 *     send;
 *   - a QP is in a state it cannot reach by itself from the one we set;
 *   - a READ or RC WRITE that ran alone (see w.rd) completed with success
 *     but its destination does not hold its source (a WRITE only while its
 *     responder's PSN is not in doubt, either only if its QP took no
 *     response it did not draw, below);
 *   - an RC operation posted after its MW key was invalidated succeeded
 *     (again only while its responder's PSN is not in doubt and its QP
 *     took no response it did not draw);
 *   - at the end, a signaled send or a receive never completed.
 * PSN doubt (fz_qp.psn_doubt): an RC responder ACKs a request below the
 * PSN it expects as a duplicate, without checking its key or executing
 * it (C9-105), and the requester completes it with success. A request of
 * the peer's present incarnation is below that PSN only if the responder
 * was given a PSN the peer does not start at, or took a request the
 * present incarnation did not send. The harness follows both as they
 * happen (psn_note_modify(), note_rx()); only these excuse a success:
 *   - the responder's RQ PSN is beyond the peer's SQ PSN;
 *   - a crafted request was handed to it since its last RESET;
 *   - it took a request of the peer's last incarnation (sent before the
 *     peer's last RESET), before that RESET or after it: a RESET does not
 *     empty the network, and a reconnect at the same PSNs makes a stale
 *     request the one expected. It is executed, and the new request at
 *     its PSN is then a duplicate (regress_dead_mw_key_forged_dup, and
 *     regress_dead_mw_key_stale_dup, the same without its two crafted
 *     packets, which the parser dropped anyway: a stale WRITE through a
 *     live key ran, the WRITE through the dead key at its PSN was ACKed
 *     and never ran).
 * A RESET of the responder clears its doubt: PSN state that outlived a
 * RESET in the engine is still caught.
 * Stale responses (note_stale_response()): the requester's side of the
 * same doubt. A response is tagged with the incarnation of the requester
 * it answers, or as doubtful when its responder was in doubt as it sent
 * it (sender_gen()). One sent before that requester's last RESET completes with
 * success whatever outstanding WQE its PSN covers once the requester is
 * reconnected at the same PSNs, and a crafted one whatever its PSN
 * covers, though that WQE's request never ran
 * (regress_dead_mw_key_stale_ack: QP 0 ACKed PSN 291 twice, the second
 * time for a duplicate; both QPs were reset, QP 1 reconnected at PSN 291,
 * its WRITE through the dead key posted at 291 was completed by that
 * second ACK and then dropped by QP 0, still in RESET). Every WQE
 * outstanding when such a response is taken is excused, and a tracked
 * READ or WRITE of that QP is no longer compared.
 * Built only with -DUROCE_FUZZ=ON and clang (tests/fuzz/run.sh engine).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <infiniband/verbs.h>

#include "api/ibverbs/devtree/devtree_priv.h"
#include "engine/engine.h"
#include "engine/engine_priv.h"
#include "link/link.h"
#include "obj/obj.h"
#include "util/compiler.h"
#include "util/memguard.h"
#include "util/random.h"
#include "wire/wire.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int clock_gettime(clockid_t clk, struct timespec *ts);

static void fz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void fz_fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "fuzz_engine: invariant broken: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	abort();
}

#define CHECK(x, ...)                                                          \
	do {                                                                   \
		if (!(x))                                                      \
			fz_fail(__VA_ARGS__);                                  \
	} while (0)

static pthread_t fz_main;
static bool fz_trace;		/* FZ_TRACE=1: print every completion */

/* ------------------------------------------------------------------ */
/* Clock: CLOCK_MONOTONIC on the fuzzing thread is ours                 */
/* ------------------------------------------------------------------ */

static uint64_t fz_now = 1000000000000ull;

int clock_gettime(clockid_t clk, struct timespec *ts)
{
	if (clk == CLOCK_MONOTONIC && pthread_equal(pthread_self(), fz_main)) {
		ts->tv_sec = (time_t)(fz_now / 1000000000ull);
		ts->tv_nsec = (long)(fz_now % 1000000000ull);
		return 0;
	}
	return (int)syscall(SYS_clock_gettime, clk, ts);
}

/* ------------------------------------------------------------------ */
/* Randomness: a fixed sequence, restarted by every input               */
/* ------------------------------------------------------------------ */

/*
 * util/random.c is left out of this target (CMakeLists.txt): getrandom()
 * gave every input's MWs other keys, so an input replayed alone did not
 * meet the keys it was found with. Keys need not be unpredictable here,
 * they must repeat: every input draws the same sequence (which keys it
 * gets still depends on what the device's key space has taken and
 * retired, i.e. on the inputs before it in the process).
 */
#define FZ_RAND_SEED 0x5eed0fd1ce5ull

static uint64_t fz_rand = FZ_RAND_SEED;

static uint64_t fz_rand_next(void)
{
	uint64_t z = (fz_rand += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int ur_random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < len; i++) {
		if (i % 8 == 0)
			v = fz_rand_next();
		p[i] = (uint8_t)(v >> (8 * (i % 8)));
	}
	return 0;
}

uint32_t ur_random_u32(void)
{
	return (uint32_t)(fz_rand_next() >> 32);
}

/* ------------------------------------------------------------------ */
/* Network: one device talking to itself through a queue we control     */
/* ------------------------------------------------------------------ */

#define FZ_QLEN 256
/*
 * More slots than the queue may hold: ur_link_recv() hands the engine the
 * slots it pops, in place, and a push (at most FZ_QLEN queued) cannot
 * reach the last UR_RX_BATCH slots popped, which the engine reads until
 * its next ur_link_recv() (a copy out of the ring was most of
 * ur_link_recv()'s 4% of the time).
 */
#define FZ_QSLOTS (FZ_QLEN + UR_RX_BATCH)
#define FZ_DGRAM_MAX 9216

/* The sender's incarnation (fz_qp.gen) when it left, or a crafted one. */
#define FZ_GEN_CRAFTED UINT32_MAX
/* A response its responder sent while its PSN was in doubt (psn_doubt):
 * it may answer a request of the requester's last incarnation, whatever
 * incarnation the requester has when it is sent or arrives. */
#define FZ_GEN_DOUBT (UINT32_MAX - 1)

struct fz_dgram {
	uint32_t len;
	uint32_t gen;
	uint8_t data[FZ_DGRAM_MAX];
};

struct ur_link {
	union ur_sockaddr addr;
	int efd;
	struct ur_link_stats st;
};

static struct {
	struct ur_link *link;
	struct fz_dgram q[FZ_QSLOTS];	/* ring */
	unsigned int head, n;
	unsigned int budget;		/* datagrams recv may hand out */
	uint8_t tmp[65536];
} net;

static struct fz_dgram *net_at(unsigned int i)
{
	return &net.q[(net.head + i) % FZ_QSLOTS];
}

/* A slot holds up to 9 KiB: copy what is used, not the whole slot. */
static void dgram_copy(struct fz_dgram *to, const struct fz_dgram *from)
{
	to->len = from->len;
	to->gen = from->gen;
	memcpy(to->data, from->data, from->len);
}

/* A slot for a datagram of len bytes sent by incarnation gen, queued;
 * NULL when it is dropped. */
static struct fz_dgram *net_slot(size_t len, uint32_t gen, bool front)
{
	struct fz_dgram *d;

	if (net.n == FZ_QLEN || len > FZ_DGRAM_MAX) {
		net.link->st.rx_truncated++;
		return NULL;
	}
	if (front) {
		net.head = (net.head + FZ_QSLOTS - 1) % FZ_QSLOTS;
		d = net_at(0);
	} else {
		d = net_at(net.n);
	}
	net.n++;
	d->len = (uint32_t)len;
	d->gen = gen;
	return d;
}

static void net_push(const uint8_t *data, size_t len, uint32_t gen, bool front)
{
	struct fz_dgram *d = net_slot(len, gen, front);

	if (d)
		memcpy(d->data, data, len);
}

/* (they read the QPs, declared further down) */
static uint32_t sender_gen(const uint8_t *bth, size_t len);
static void note_rx(const struct fz_dgram *d);

static void net_pop(void)
{
	net.head = (net.head + 1) % FZ_QSLOTS;
	net.n--;
}

int ur_link_open(const struct ur_link_config *cfg, struct ur_link **out)
{
	struct ur_link *l;

	if (net.link)
		return -EADDRINUSE;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->addr = cfg->bind;
	l->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	net.link = l;
	*out = l;
	return 0;
}

void ur_link_close(struct ur_link *l)
{
	close(l->efd);
	if (net.link == l)
		net.link = NULL;
	free(l);
}

/*
 * The progress thread asks for this fd before its first wait: it stays
 * there, so the engine runs only when the fuzzing thread calls it and every
 * run is deterministic.
 */
int ur_link_fd(const struct ur_link *l)
{
	if (!pthread_equal(pthread_self(), fz_main))
		for (;;)
			pause();
	return l->efd;
}

/* poll_cq always looks, as it did before it asked the link first */
bool ur_link_rx_maybe(struct ur_link *l)
{
	return true;
}

/* one receive queue (link.h): a device's further receive shards, if
 * UROCE_RX_SHARDS asks for any, get what shard 0 forwards */
unsigned int ur_link_rx_queues(const struct ur_link *l)
{
	return 1;
}

int ur_link_fd_q(const struct ur_link *l, unsigned int q)
{
	return q ? -1 : ur_link_fd(l);
}

bool ur_link_rx_maybe_q(struct ur_link *l, unsigned int q)
{
	return q ? false : ur_link_rx_maybe(l);
}

int ur_link_recv_q(struct ur_link *l, unsigned int q, struct ur_rxd *d,
		   unsigned int max)
{
	return q ? 0 : ur_link_recv(l, d, max);
}

/* never reached: the progress thread parks in ur_link_fd() above */
bool ur_link_wait_arm(struct ur_link *l)
{
	return false;
}

void ur_link_wait_disarm(struct ur_link *l)
{
}

/* no same-host peers: every operation goes as packets */
void *ur_link_own_area(struct ur_link *l)
{
	return NULL;
}

void *ur_link_peer_area_get(struct ur_link *l, const union ur_sockaddr *dst,
			    int32_t *owner)
{
	return NULL;
}

void ur_link_peer_area_put(struct ur_link *l)
{
}

/* the fake link has no rings: every packet carries its ICRC */
bool ur_link_is_ring(struct ur_link *l, const union ur_sockaddr *dst)
{
	(void)l;
	(void)dst;
	return false;
}

uint32_t ur_link_ring_gen(const struct ur_link *l)
{
	(void)l;
	return 0;
}

bool ur_link_faulty(const struct ur_link *l)
{
	return false;
}

/* The fuzzer's link never finds its queue full. */
uint64_t ur_link_tx_blocked(const struct ur_link *l)
{
	return 0;
}

uint32_t ur_link_max_payload(const struct ur_link *l)
{
	return 9000;
}

/* One address: the fuzzer's devices have GID 0 only. */
int ur_link_local_addr(const struct ur_link *l, unsigned int i,
		       union ur_sockaddr *out)
{
	if (i)
		return -ENOENT;
	*out = l->addr;
	return 0;
}

/* No multicast groups on the fuzzer's link (attach then fails, as on a
 * link that cannot join). */
int ur_link_join(struct ur_link *l, const union ur_sockaddr *group)
{
	return -EOPNOTSUPP;
}

int ur_link_leave(struct ur_link *l, const union ur_sockaddr *group)
{
	return -ENOENT;
}

/* Bytes [off, off + len) of what iov holds, copied to "to". */
static void iov_gather(uint8_t *to, const struct iovec *iov, size_t off,
		       size_t len)
{
	size_t c;

	for (; len; iov++) {
		if (off >= iov->iov_len) {
			off -= iov->iov_len;
			continue;
		}
		c = iov->iov_len - off < len ? iov->iov_len - off : len;
		memcpy(to, (const uint8_t *)iov->iov_base + off, c);
		to += c;
		len -= c;
		off = 0;
	}
}

/* Each segment of a train is gathered from the iovecs into its slot (a
 * copy of the train first cost as much again). */
int ur_link_send(struct ur_link *l, const struct ur_txd *d, unsigned int n)
{
	unsigned int i, k;
	size_t len, off, seg;
	struct fz_dgram *slot;

	for (i = 0; i < n; i++) {
		len = 0;
		for (k = 0; k < d[i].iovcnt; k++) {
			CHECK(len + d[i].iov[k].iov_len <= 65536,
			      "datagram train over 64 KiB");
			len += d[i].iov[k].iov_len;
		}
		if (!ur_sockaddr_same_host(d[i].dst, &l->addr)) {
			l->st.tx_errors++;
			continue;
		}
		seg = d[i].gso_size ? d[i].gso_size : len;
		for (off = 0; off < len; off += seg) {
			size_t s = len - off < seg ? len - off : seg;

			slot = net_slot(s, 0, false);
			if (slot) {
				iov_gather(slot->data, d[i].iov, off, s);
				slot->gen = sender_gen(slot->data, s);
			}
			l->st.tx_pkts++;
		}
	}
	return (int)n;
}

int ur_link_recv(struct ur_link *l, struct ur_rxd *d, unsigned int max)
{
	unsigned int n = 0;
	struct fz_dgram *g;

	while (n < max && n < UR_RX_BATCH && net.budget && net.n) {
		g = net_at(0);
		net_pop();
		if (fz_trace && g->len >= 12)
			fprintf(stderr, "fz: rx opcode %#x psn %u (%u left)\n",
				g->data[0],
				(unsigned int)(g->data[9] << 16 |
					       g->data[10] << 8 |
					       g->data[11]), net.n);
		net.budget--;
		note_rx(g);
		d[n].data = g->data;
		d[n].len = g->len;
		d[n].src = l->addr;
		d[n].dst = l->addr;
		d[n].tos = 0;
		d[n].ttl = 64;
		n++;
	}
	l->st.rx_pkts += n;
	return (int)n;
}

void ur_link_get_stats(const struct ur_link *l, struct ur_link_stats *st)
{
	*st = l->st;
}

int ur_link_set_fault(struct ur_link *l, const char *spec)
{
	return spec && *spec ? -EINVAL : 0;
}

/* ------------------------------------------------------------------ */
/* The world of one input                                              */
/* ------------------------------------------------------------------ */

#define FZ_NMR 4
#define FZ_NQP 6
#define FZ_GUARD 64
#define FZ_PAGE 4096		/* an MR's memory starts a page */
#define FZ_MR_MAX 65536
#define FZ_DEPTH 32		/* SQ and RQ depth of every QP */
#define FZ_MAX_POSTS 1024	/* per queue per input */
#define FZ_MAX_OPS 400
#define FZ_GUARD_BYTE 0xa5
#define FZ_QKEY 0x11111111u

/* MR 0 holds a READ of several request chunks at a small path MTU */
static const size_t fz_mr_len[FZ_NMR] = { 65536, 8192, 4096, 4096 };
static const unsigned int fz_mr_access[FZ_NMR] = {
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		IBV_ACCESS_MW_BIND | UR_ACCESS_FLUSH_GLOBAL,
	IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND,
	IBV_ACCESS_REMOTE_READ,	/* nothing may write these two */
	0,
};
static const enum ibv_qp_type fz_qp_type[FZ_NQP] = {
	IBV_QPT_RC, IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_UD,
};

struct fz_mr {
	uint8_t *area;			/* guard | region | guard */
	uint8_t *mem;
	/* nothing may write it: its pages are read-only, a write through
	 * memguard is a counted fault and any other a SEGV */
	bool readonly;
	struct ibv_mr *mr;
};

struct fz_queue {
	uint32_t posted, next;		/* accepted; oldest not done */
	uint8_t signaled[FZ_MAX_POSTS];
	uint8_t op[FZ_MAX_POSTS];	/* expected ibv_wc_opcode */
	uint32_t len[FZ_MAX_POSTS];	/* receive: bytes posted */
	uint32_t inv_rkey[FZ_MAX_POSTS];	/* send: LOCAL_INV's key */
	uint8_t must_fail[FZ_MAX_POSTS];	/* send: uses a dead rkey */
	/* send: its responder's PSN may have been ahead of it (psn_doubt)
	 * while it was outstanding, or a response it did not draw reached
	 * its QP meanwhile (note_stale_response) */
	uint8_t dup_ok[FZ_MAX_POSTS];
};

struct fz_qp {
	struct ibv_qp *qp;
	struct ibv_cq *cq;
	enum ibv_qp_state state;	/* what we set, or saw it move to */
	struct fz_queue sq, rq;
	uint32_t init_psn;
	/*
	 * The PSNs this QP took since its last RESET, to tell whether its
	 * responder expects what its peer's requester sends (psn_doubt).
	 * gen counts its RESETs: a datagram it sent carries the gen it was
	 * sent in, so one from before a RESET is told from its successors.
	 * took: its responder took a request of its peer's present
	 * incarnation since its own last RESET.
	 */
	uint32_t gen;
	bool rq_set, sq_set, took;
	uint32_t rq_psn, sq_psn;
	/* its responder may expect a PSN beyond the next request of its
	 * peer: that request is then a duplicate, ACKed without its key
	 * checked or anything executed (C9-105) */
	bool psn_doubt;
};

static struct {
	struct ibv_context *ctx;
	struct ur_device *dev;
	union ibv_gid gid;
	uint8_t *arena;
	uint8_t guard[FZ_GUARD];
	uint64_t faults;		/* ur_memguard_faults() at the start */
	uint8_t pattern[FZ_NMR][FZ_MR_MAX];	/* initial MR contents */
	struct ibv_pd *pd;
	struct fz_mr mr[FZ_NMR];
	struct ibv_mw *mw[2];		/* type 1, type 2 */
	uint32_t mw2_next_rkey;
	/* the type 2 MW's key after an invalidation completed: an RC
	 * operation posted later with it must not succeed */
	bool dead;
	uint32_t dead_rkey;
	struct ibv_ah *ah;
	struct fz_qp q[FZ_NQP];
	/* from the input's header */
	enum ibv_mtu mtu;
	uint8_t timeout, retry, rnr_retry, min_rnr;
	/* input cursor */
	const uint8_t *in;
	size_t left;
	/* receive buffers of every posted receive WQE */
	struct ibv_sge rsge[FZ_NQP][FZ_MAX_POSTS][4];
	uint8_t rnsge[FZ_NQP][FZ_MAX_POSTS];
	/* A READ (or an RC WRITE) posted while nothing was in flight and no
	 * receive buffer overlapped its local or remote range, checked byte
	 * for byte at its successful completion unless something that may
	 * write either range happened meanwhile (a crafted data packet, a QP
	 * change, a post or receive buffer overlapping either range). */
	struct {
		bool on, valid, write;
		int qi;
		uint32_t seq;
		unsigned int nsge;
		struct ibv_sge sge[4];
		uint64_t remote;	/* READ's source, WRITE's destination */
		uint32_t len;
		uint8_t want[FZ_MR_MAX];
	} rd;
} w;

static uint8_t in_u8(void)
{
	if (!w.left)
		return 0;
	w.left--;
	return *w.in++;
}

static uint16_t in_u16(void)
{
	uint16_t v = in_u8();

	return (uint16_t)(v | in_u8() << 8);
}

static uint32_t in_u32(void)
{
	uint32_t v = in_u16();

	return v | (uint32_t)in_u16() << 16;
}

static uint64_t wr_id_of(unsigned int qi, bool recv, uint32_t seq)
{
	return (uint64_t)qi << 40 | (uint64_t)recv << 32 | seq;
}

/* ------------------------------------------------------------------ */
/* Invariants                                                          */
/* ------------------------------------------------------------------ */

/*
 * memcmp() for the checks after every operation: ASan's and libFuzzer's
 * memcmp interceptors (shadow checks of both ranges, compare tracing)
 * cost more than the compare. The buffers are this file's own, in bounds
 * by construction.
 */
__attribute__((no_sanitize("address", "undefined", "coverage")))
static bool same_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t x, y, diff = 0;
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		__builtin_memcpy(&x, a + i, 8);
		__builtin_memcpy(&y, b + i, 8);
		diff |= x ^ y;
	}
	for (; i < n; i++)
		diff |= (uint64_t)(a[i] ^ b[i]);
	return !diff;
}

static void check_memory(void)
{
	int i;

	for (i = 0; i < FZ_NMR; i++) {
		struct fz_mr *m = &w.mr[i];

		CHECK(same_bytes(m->area, w.guard, FZ_GUARD),
		      "bytes before MR %d written", i);
		CHECK(same_bytes(m->mem + fz_mr_len[i], w.guard, FZ_GUARD),
		      "bytes after MR %d written", i);
	}
	/* the fuzzer's memory is all mapped, the MRs' with them: a fault is
	 * a write into a read-only MR (or an access far outside any) */
	CHECK(ur_memguard_faults() == w.faults,
	      "a peer access faulted: an MR without write access was "
	      "written");
}

/* What the read-only pages hold, once per input (they are never
 * rewritten: a change would stay). */
static void check_readonly(void)
{
	int i;

	for (i = 0; i < FZ_NMR; i++)
		if (w.mr[i].readonly)
			CHECK(same_bytes(w.mr[i].mem, w.pattern[i],
					 fz_mr_len[i]),
			      "MR %d without write access was written", i);
}

static bool state_reachable(enum ibv_qp_type t, enum ibv_qp_state from,
			    enum ibv_qp_state to)
{
	if (from == to)
		return true;
	switch (from) {
	case IBV_QPS_RTR:
		return to == IBV_QPS_ERR;
	case IBV_QPS_RTS:
	case IBV_QPS_SQD:
		/* a send error: ERR on RC, SQE on UC and UD */
		return to == IBV_QPS_ERR ||
		       (to == IBV_QPS_SQE && t != IBV_QPT_RC);
	case IBV_QPS_SQE:
		return to == IBV_QPS_ERR;
	default:
		return false;
	}
}

static void check_states(void)
{
	int i;

	for (i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &w.q[i];
		enum ibv_qp_state s = to_ur_qp(q->qp)->state;

		CHECK(s <= IBV_QPS_ERR, "QP %d in state %d", i, s);
		CHECK(state_reachable(fz_qp_type[i], q->state, s),
		      "QP %d moved by itself from state %d to %d", i,
		      q->state, s);
		q->state = s;
	}
}

static enum ibv_wc_opcode wc_opcode_of(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	case IBV_WR_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case IBV_WR_BIND_MW:
		return IBV_WC_BIND_MW;
	case IBV_WR_ATOMIC_WRITE:
		return IBV_WC_ATOMIC_WRITE;
	default:
		return IBV_WC_SEND;
	}
}

static void read_check(int qi, const struct ibv_wc *wc);

static void check_wc(int qi, const struct ibv_wc *wc)
{
	struct fz_qp *q = &w.q[qi];
	unsigned int wqi = (unsigned int)(wc->wr_id >> 40);
	bool recv = (wc->wr_id >> 32) & 1;
	uint32_t seq = (uint32_t)wc->wr_id;
	struct fz_queue *qu = recv ? &q->rq : &q->sq;
	uint32_t s;

	if (fz_trace)
		fprintf(stderr, "fz: QP %d %s WQE %u: %s opcode %d len %u\n",
			qi, recv ? "recv" : "send", seq,
			ibv_wc_status_str(wc->status), wc->opcode,
			wc->byte_len);

	CHECK(wqi == (unsigned int)qi, "QP %d's CQ has a completion of QP %u",
	      qi, wqi);
	CHECK(wc->qp_num == q->qp->qp_num,
	      "completion's qp_num %#x is not QP %d's", wc->qp_num, qi);
	CHECK(wc->status <= IBV_WC_TM_RNDV_INCOMPLETE, "status %d", wc->status);
	CHECK(seq < qu->posted, "QP %d: completion for %s WQE %u never posted",
	      qi, recv ? "receive" : "send", seq);
	CHECK(seq >= qu->next,
	      "QP %d: second completion for %s WQE %u (status %s)", qi,
	      recv ? "receive" : "send", seq, ibv_wc_status_str(wc->status));
	if (recv) {
		CHECK(seq == qu->next,
		      "QP %d: receive WQE %u completed before WQE %u", qi, seq,
		      qu->next);
		if (wc->status == IBV_WC_SUCCESS) {
			CHECK(wc->opcode == IBV_WC_RECV ||
				      wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM,
			      "QP %d: receive completion opcode %d", qi,
			      wc->opcode);
			/* (a WRITE with immediate reports the WRITE's
			 * length, which the receive WQE does not hold) */
			CHECK(wc->opcode != IBV_WC_RECV ||
				      (wc->byte_len <= qu->len[seq] &&
				       (fz_qp_type[qi] != IBV_QPT_UD ||
					wc->byte_len >= 40)),
			      "QP %d: receive of %u bytes into %u", qi,
			      wc->byte_len, qu->len[seq]);
		}
	} else {
		/* in order: no signaled WQE may be skipped */
		for (s = qu->next; s < seq; s++)
			CHECK(!qu->signaled[s],
			      "QP %d: send WQE %u completed before signaled "
			      "WQE %u", qi, seq, s);
		if (wc->status == IBV_WC_SUCCESS) {
			CHECK(qu->signaled[seq],
			      "QP %d: success completion for unsignaled WQE %u",
			      qi, seq);
			CHECK(wc->opcode == qu->op[seq],
			      "QP %d: send WQE %u completed as opcode %d, "
			      "not %d", qi, seq, wc->opcode, qu->op[seq]);
			/* unless its responder may have been ahead of it:
			 * it was then ACKed as a duplicate, without its key
			 * checked or anything executed (psn_doubt); or a
			 * crafted or stale response may have completed it
			 * (note_stale_response) */
			CHECK(!qu->must_fail[seq] || qu->dup_ok[seq],
			      "QP %d: send WQE %u succeeded with rkey %#x, "
			      "invalidated before it was posted", qi, seq,
			      w.dead_rkey);
			if (wc->opcode == IBV_WC_LOCAL_INV &&
			    qu->inv_rkey[seq] == w.mw2_next_rkey) {
				w.dead = true;
				w.dead_rkey = qu->inv_rkey[seq];
				if (fz_trace)
					fprintf(stderr, "fz: key %#x dead "
						"(local invalidate)\n",
						w.dead_rkey);
			}
		}
	}
	if (recv && wc->status == IBV_WC_SUCCESS &&
	    (wc->wc_flags & IBV_WC_WITH_INV) &&
	    wc->invalidated_rkey == w.mw2_next_rkey) {
		w.dead = true;
		w.dead_rkey = wc->invalidated_rkey;
		if (fz_trace)
			fprintf(stderr, "fz: key %#x dead (remote invalidate)\n",
				w.dead_rkey);
	}
	qu->next = seq + 1;
	read_check(qi, wc);
}

/* Nothing in flight: no datagram queued, every send WQE retired. */
static bool world_quiet(void)
{
	int i;

	if (net.n)
		return false;
	for (i = 0; i < FZ_NQP; i++)
		if (w.q[i].sq.next != w.q[i].sq.posted)
			return false;
	return true;
}

static bool ranges_overlap(uint64_t a, uint64_t alen, uint64_t b,
			   uint64_t blen)
{
	return a < b + blen && b < a + alen;
}

/* Inside one MR's memory (a READ's source must be, to be compared). */
static bool in_some_mr(uint64_t addr, uint64_t len)
{
	int i;

	for (i = 0; i < FZ_NMR; i++) {
		uint64_t base = (uintptr_t)w.mr[i].mem;

		if (addr >= base && addr + len <= base + fz_mr_len[i])
			return true;
	}
	return false;
}

/* May a write to [addr, addr + len) change the tracked READ's result? */
static bool read_touched(uint64_t addr, uint64_t len)
{
	unsigned int k;

	if (!w.rd.on)
		return false;
	if (ranges_overlap(addr, len, w.rd.remote, w.rd.len))
		return true;
	for (k = 0; k < w.rd.nsge; k++)
		if (ranges_overlap(addr, len, w.rd.sge[k].addr,
				   w.rd.sge[k].length))
			return true;
	return false;
}

static bool sges_touch_read(const struct ibv_sge *sge, int n)
{
	int k;

	for (k = 0; k < n; k++)
		if (read_touched(sge[k].addr, sge[k].length))
			return true;
	return false;
}

/* A post while a READ is tracked: does it write where the READ reads or
 * writes? (SENDs land in receive buffers, which never overlap.) */
static void read_note_post(const struct ibv_send_wr *wr)
{
	switch (wr->opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_ATOMIC_WRITE:
		if (read_touched(wr->wr.rdma.remote_addr, 65536))
			w.rd.valid = false;
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		if (read_touched(wr->wr.atomic.remote_addr, 8) ||
		    sges_touch_read(wr->sg_list, wr->num_sge))
			w.rd.valid = false;
		break;
	case IBV_WR_RDMA_READ:
		if (sges_touch_read(wr->sg_list, wr->num_sge))
			w.rd.valid = false;
		break;
	default:
		break;
	}
}

static void read_track(int qi, uint32_t seq, const struct ibv_send_wr *wr)
{
	uint64_t src = wr->wr.rdma.remote_addr;
	bool write = wr->opcode != IBV_WR_RDMA_READ;
	uint32_t len = 0, s;
	int k, i;

	for (k = 0; k < wr->num_sge; k++) {
		if (!in_some_mr(wr->sg_list[k].addr, wr->sg_list[k].length))
			return;
		len += wr->sg_list[k].length;
	}
	if (!in_some_mr(src, len) || len > sizeof(w.rd.want))
		return;
	for (k = 0; k < wr->num_sge; k++)
		if (ranges_overlap(wr->sg_list[k].addr, wr->sg_list[k].length,
				   src, len))
			return;
	w.rd.on = true;
	/* a WRITE to a responder ahead of it is ACKed as a duplicate and
	 * never executed (psn_doubt) */
	w.rd.valid = !(write && w.q[qi ^ 1].psn_doubt);
	w.rd.write = write;
	w.rd.qi = qi;
	w.rd.seq = seq;
	w.rd.nsge = (unsigned int)wr->num_sge;
	memcpy(w.rd.sge, wr->sg_list, w.rd.nsge * sizeof(w.rd.sge[0]));
	w.rd.remote = src;
	w.rd.len = len;
	if (write) {
		uint32_t off = 0;

		for (k = 0; k < wr->num_sge; k++) {
			memcpy(w.rd.want + off,
			       (const void *)(uintptr_t)wr->sg_list[k].addr,
			       wr->sg_list[k].length);
			off += wr->sg_list[k].length;
		}
	} else {
		memcpy(w.rd.want, (const void *)(uintptr_t)src, len);
	}
	for (i = 0; i < FZ_NQP; i++)
		for (s = w.q[i].rq.next; s < w.q[i].rq.posted; s++)
			if (sges_touch_read(w.rsge[i][s], w.rnsge[i][s]))
				w.rd.on = false;
}

/* A successful READ that ran alone: its destination holds the source. */
static void read_check(int qi, const struct ibv_wc *wc)
{
	uint32_t off = 0;
	unsigned int k;

	if (!w.rd.on || qi != w.rd.qi || (uint32_t)wc->wr_id != w.rd.seq ||
	    (wc->wr_id >> 32) & 1)
		return;
	w.rd.on = false;
	if (!w.rd.valid || wc->status != IBV_WC_SUCCESS)
		return;
	if (w.rd.write) {
		const uint8_t *dst = (const uint8_t *)(uintptr_t)w.rd.remote;
		uint32_t i;

		if (memcmp(dst, w.rd.want, w.rd.len))
			for (i = 0; i < w.rd.len; i++)
				CHECK(dst[i] == w.rd.want[i],
				      "QP %d: WRITE WQE %u of %u bytes "
				      "completed with success, remote byte "
				      "%u is %#x, not %#x", qi, w.rd.seq,
				      w.rd.len, i, dst[i], w.rd.want[i]);
		return;
	}
	for (k = 0; k < w.rd.nsge; k++) {
		const uint8_t *dst =
			(const uint8_t *)(uintptr_t)w.rd.sge[k].addr;
		uint32_t i, n = w.rd.sge[k].length;

		if (memcmp(dst, w.rd.want + off, n))
			for (i = 0; i < n; i++)
				CHECK(dst[i] == w.rd.want[off + i],
				      "QP %d: READ WQE %u of %u bytes "
				      "completed with success, byte %u is "
				      "%#x, not %#x", qi, w.rd.seq, w.rd.len,
				      off + i, dst[i], w.rd.want[off + i]);
		off += n;
	}
}

static int poll_qp(int qi, int max)
{
	struct ibv_wc wc[16];
	int n, i, total = 0;

	while (total < max) {
		n = ibv_poll_cq(w.q[qi].cq, 16, wc);
		CHECK(n >= 0, "poll_cq: %d", n);
		for (i = 0; i < n; i++)
			check_wc(qi, &wc[i]);
		total += n;
		if (n < 16)
			break;
	}
	return total;
}

/* ------------------------------------------------------------------ */
/* PSN doubt: may a responder ACK a request it never ran?               */
/* ------------------------------------------------------------------ */

/*
 * An RC responder ACKs a request below the PSN it expects as a duplicate
 * and neither checks its key nor executes it (C9-105). A request of its
 * peer's present incarnation can be below that PSN only if something else
 * moved it there: a crafted request, a request its peer sent before a
 * RESET (still queued here, as one can be in a real network), or PSNs the
 * two sides took that do not meet. Each is told apart below, as it
 * happens, so that no other success of a request through a dead key or
 * of a WRITE that left no data is excused.
 */
static void psn_doubt_set(int ri)
{
	struct fz_queue *sq = &w.q[ri ^ 1].sq;
	uint32_t s;

	w.q[ri].psn_doubt = true;
	/* what is outstanding may be ACKed without running */
	for (s = sq->next; s < sq->posted; s++)
		sq->dup_ok[s] = 1;
	if (w.rd.on && w.rd.write && w.rd.qi == (ri ^ 1))
		w.rd.valid = false;
}

/* Responder ri expects a PSN beyond the one its peer's requester starts
 * at. (One short of it only NAKs what comes: nothing is ACKed unrun.) */
static void psn_check_pair(int ri)
{
	const struct fz_qp *r = &w.q[ri], *s = &w.q[ri ^ 1];

	if (r->rq_set && s->sq_set && ur_psn_diff(s->sq_psn, r->rq_psn) < 0)
		psn_doubt_set(ri);
}

static void psn_note_modify(int qi, enum ibv_qp_state st, int mask,
			    uint32_t psn)
{
	struct fz_qp *q = &w.q[qi], *peer = &w.q[qi ^ 1];

	if (st == IBV_QPS_RESET) {
		/* the responder forgets every PSN; the requester's next
		 * incarnation begins, which the peer's responder may have
		 * taken requests of the last one beyond */
		q->gen++;
		q->rq_set = q->sq_set = q->took = q->psn_doubt = false;
		if (peer->took)
			psn_doubt_set(qi ^ 1);
		peer->took = false;
	}
	if (mask & IBV_QP_RQ_PSN) {
		q->rq_set = true;
		q->rq_psn = psn & 0xffffff;
		psn_check_pair(qi);
	}
	if (mask & IBV_QP_SQ_PSN) {
		q->sq_set = true;
		q->sq_psn = psn & 0xffffff;
		psn_check_pair(qi ^ 1);
	}
}

/* Which of our QPs a BTH's destination QPN names, or -1. */
static int bth_dest_qp(const uint8_t *bth, size_t len)
{
	uint32_t qpn;
	int i;

	if (len < 12)
		return -1;
	qpn = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
	for (i = 0; i < FZ_NQP; i++)
		if (w.q[i].qp && w.q[i].qp->qp_num == qpn)
			return i;
	return -1;
}

/* The QP a request with this BTH is for, if an RC or UC one of ours. */
static int request_target(const uint8_t *bth, size_t len)
{
	int i = bth_dest_qp(bth, len);

	return i >= 0 && ur_op_is_request(bth[0]) &&
	       fz_qp_type[i] != IBV_QPT_UD ? i : -1;
}

/* The RC QP a response with this BTH is for, if one of ours. */
static int response_target(const uint8_t *bth, size_t len)
{
	int i = bth_dest_qp(bth, len);

	return i >= 0 && ur_op_is_response(bth[0]) &&
	       fz_qp_type[i] == IBV_QPT_RC ? i : -1;
}

/*
 * A datagram the engine sends: a request is its target's peer's; a
 * response is tagged with its target's incarnation, the requester whose
 * requests it answers (a RESET of the requester makes it stale), unless
 * its responder is in doubt: it may then answer a request the requester
 * sent before its last RESET, which the responder took as the one it
 * expected, and the requester's present incarnation may have a request
 * of its own outstanding at that PSN (regress_dead_mw_key_doubt_ack: QP
 * 0, reconnected at PSN 291, took QP 1's stale WRITE at 291 and ACKed it;
 * QP 0 was reset, which ended its doubt; QP 1's WRITE through a dead key,
 * posted at 291 afterwards, was completed by that ACK).
 */
static uint32_t sender_gen(const uint8_t *bth, size_t len)
{
	int ri = request_target(bth, len), qi;

	if (ri >= 0)
		return w.q[ri ^ 1].gen;
	qi = response_target(bth, len);
	if (qi < 0)
		return 0;
	return w.q[qi ^ 1].psn_doubt ? FZ_GEN_DOUBT : w.q[qi].gen;
}

/*
 * A response its requester's present incarnation did not draw: one
 * crafted, or one its peer's responder sent before the requester's last
 * RESET. With the requester reconnected at the same PSNs, an ACK at a
 * PSN it has outstanding completes those WQEs with success though the
 * request never ran (regress_dead_mw_key_stale_ack); a READ response
 * places old data. Whatever is outstanding may so complete.
 */
static void note_stale_response(int qi)
{
	struct fz_queue *sq = &w.q[qi].sq;
	uint32_t s;

	if (fz_trace)
		fprintf(stderr,
			"fz: QP %d takes a response it did not draw: "
			"%u send WQEs from %u excused\n",
			qi, sq->posted - sq->next, sq->next);
	for (s = sq->next; s < sq->posted; s++)
		sq->dup_ok[s] = 1;
	if (w.rd.on && w.rd.qi == qi)
		w.rd.valid = false;
}

/* A datagram handed to the engine: a request its target takes that its
 * peer's present incarnation did not send moves its expected PSN; a
 * response its requester's present incarnation did not draw may complete
 * what it has outstanding. */
static void note_rx(const struct fz_dgram *d)
{
	int ri = request_target(d->data, d->len), qi;
	struct fz_qp *r;

	if (ri < 0) {
		qi = response_target(d->data, d->len);
		if (qi >= 0 &&
		    (d->gen == FZ_GEN_CRAFTED || d->gen == FZ_GEN_DOUBT ||
		     d->gen != w.q[qi].gen))
			note_stale_response(qi);
		return;
	}
	r = &w.q[ri];
	if (r->state == IBV_QPS_RESET || r->state == IBV_QPS_INIT)
		return;		/* dropped: nothing is taken */
	if (d->gen == FZ_GEN_CRAFTED || d->gen != w.q[ri ^ 1].gen)
		psn_doubt_set(ri);
	else
		r->took = true;
}

/* ------------------------------------------------------------------ */
/* Setup and teardown                                                  */
/* ------------------------------------------------------------------ */

static void qp_modify(int qi, enum ibv_qp_state st, uint32_t psn)
{
	struct fz_qp *q = &w.q[qi];
	struct ibv_qp_attr a;
	int mask = IBV_QP_STATE, rc;
	enum ibv_qp_type t = fz_qp_type[qi];

	memset(&a, 0, sizeof(a));
	a.qp_state = st;
	switch (st) {
	case IBV_QPS_INIT:
		a.pkey_index = 0;
		a.port_num = 1;
		mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (t == IBV_QPT_UD) {
			a.qkey = FZ_QKEY;
			mask |= IBV_QP_QKEY;
		} else {
			a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					    (t == IBV_QPT_RC ?
						     IBV_ACCESS_REMOTE_READ |
						     IBV_ACCESS_REMOTE_ATOMIC |
						     UR_ACCESS_FLUSH_GLOBAL :
						     0);
			mask |= IBV_QP_ACCESS_FLAGS;
		}
		break;
	case IBV_QPS_RTR:
		if (t == IBV_QPT_UD)
			break;
		a.path_mtu = w.mtu;
		a.dest_qp_num = w.q[qi ^ 1].qp->qp_num;
		a.rq_psn = psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = w.gid;
		a.ah_attr.grh.hop_limit = 64;
		a.ah_attr.port_num = 1;
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 4;
			a.min_rnr_timer = w.min_rnr;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC |
				IBV_QP_MIN_RNR_TIMER;
		}
		break;
	case IBV_QPS_RTS:
		if (q->state != IBV_QPS_RTR)
			break;	/* SQD/SQE -> RTS takes no PSN */
		a.sq_psn = psn;
		mask |= IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC) {
			a.timeout = w.timeout;
			a.retry_cnt = w.retry;
			a.rnr_retry = w.rnr_retry;
			a.max_rd_atomic = 4;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		break;
	default:
		break;
	}
	if (st == IBV_QPS_RESET) {
		/* what the CQ holds is still ours to check; what was not
		 * completed is gone with the queues */
		poll_qp(qi, 1 << 20);
	}
	rc = ibv_modify_qp(q->qp, &a, mask);
	if (fz_trace)
		fprintf(stderr, "fz: QP %d modify to %d: %d\n", qi, st, rc);
	if (!rc) {
		psn_note_modify(qi, st, mask, psn);
		q->state = st;
		if (st == IBV_QPS_RESET) {
			q->sq.next = q->sq.posted;
			q->rq.next = q->rq.posted;
		}
	}
}

/* RESET -> INIT -> RTR -> RTS, connected to its pair. */
static void qp_connect(int qi, uint32_t sq_psn, uint32_t rq_psn)
{
	qp_modify(qi, IBV_QPS_RESET, 0);
	qp_modify(qi, IBV_QPS_INIT, 0);
	qp_modify(qi, IBV_QPS_RTR, rq_psn & 0xffffff);
	qp_modify(qi, IBV_QPS_RTS, sq_psn & 0xffffff);
	w.q[qi].init_psn = sq_psn & 0xffffff;
}

/*
 * Created once: a fresh PD, MRs, CQs and QPs per input would cost more than
 * the input (large zeroed allocations); per input the QPs go through RESET,
 * which is itself under test.
 */
static void world_create(void)
{
	struct ibv_qp_init_attr ia;
	struct ibv_ah_attr aa;
	int i;

	w.pd = ibv_alloc_pd(w.ctx);
	CHECK(w.pd, "alloc_pd");
	for (i = 0; i < FZ_NMR; i++) {
		w.mr[i].mr = ibv_reg_mr(w.pd, w.mr[i].mem, fz_mr_len[i],
					(int)fz_mr_access[i]);
		CHECK(w.mr[i].mr, "reg_mr %d: %d", i, errno);
	}
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.grh.dgid = w.gid;
	aa.grh.hop_limit = 64;
	aa.port_num = 1;
	w.ah = ibv_create_ah(w.pd, &aa);
	CHECK(w.ah, "create_ah: %d", errno);
	for (i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &w.q[i];

		q->cq = ibv_create_cq(w.ctx, 4 * FZ_DEPTH, NULL, NULL, 0);
		CHECK(q->cq, "create_cq: %d", errno);
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = q->cq;
		ia.recv_cq = q->cq;
		ia.qp_type = fz_qp_type[i];
		ia.cap.max_send_wr = FZ_DEPTH;
		ia.cap.max_recv_wr = FZ_DEPTH;
		ia.cap.max_send_sge = 4;
		ia.cap.max_recv_sge = 4;
		ia.cap.max_inline_data = 64;
		q->qp = ibv_create_qp(w.pd, &ia);
		CHECK(q->qp, "create_qp %d: %d", i, errno);
		q->state = IBV_QPS_RESET;
	}
}

/*
 * Zeroes what the last input used of a queue: entries from posted on were
 * never written since they were last cleared, and 11 KiB per queue, a
 * dozen queues, per input was most of a short input's own work.
 */
static void queue_clear(struct fz_queue *qu)
{
	uint32_t n = qu->posted;

	memset(qu->signaled, 0, n * sizeof(qu->signaled[0]));
	memset(qu->op, 0, n * sizeof(qu->op[0]));
	memset(qu->len, 0, n * sizeof(qu->len[0]));
	memset(qu->inv_rkey, 0, n * sizeof(qu->inv_rkey[0]));
	memset(qu->must_fail, 0, n * sizeof(qu->must_fail[0]));
	memset(qu->dup_ok, 0, n * sizeof(qu->dup_ok[0]));
	qu->posted = qu->next = 0;
}

/*
 * The MRs nothing may write get their pattern once and read-only pages:
 * a stray write is caught when it happens rather than by comparing their
 * pages after every operation (which took more than the operation).
 */
static void readonly_seal(void)
{
	int i;

	for (i = 0; i < FZ_NMR; i++) {
		struct fz_mr *m = &w.mr[i];

		if (!m->readonly)
			continue;
		CHECK(fz_mr_len[i] % FZ_PAGE == 0, "MR %d: not pages", i);
		memcpy(m->mem, w.pattern[i], fz_mr_len[i]);
		CHECK(!mprotect(m->mem, fz_mr_len[i], PROT_READ),
		      "mprotect: %d", errno);
	}
	w.faults = ur_memguard_faults();
}

/* Per input: memory patterns, fresh MWs, every QP reset and connected
 * with PSNs from the input. */
static void world_begin(void)
{
	uint32_t psn[FZ_NQP];
	int i;

	for (i = 0; i < FZ_NMR; i++) {
		struct fz_mr *m = &w.mr[i];

		memcpy(m->area, w.guard, FZ_GUARD);
		memcpy(m->mem + fz_mr_len[i], w.guard, FZ_GUARD);
		if (!m->readonly)
			memcpy(m->mem, w.pattern[i], fz_mr_len[i]);
	}
	fz_rand = FZ_RAND_SEED;
	w.mw[0] = ibv_alloc_mw(w.pd, IBV_MW_TYPE_1);
	w.mw[1] = ibv_alloc_mw(w.pd, IBV_MW_TYPE_2);
	CHECK(w.mw[0] && w.mw[1], "alloc_mw: %d", errno);
	w.mw2_next_rkey = w.mw[1]->rkey;
	w.dead = false;
	w.rd.on = false;
	for (i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &w.q[i];

		queue_clear(&q->sq);
		queue_clear(&q->rq);
		/* the last input's PSNs: nothing of it is left in flight */
		q->rq_set = q->sq_set = q->took = q->psn_doubt = false;
		psn[i] = in_u32();
	}
	for (i = 0; i < FZ_NQP; i++)
		qp_connect(i, psn[i], psn[i ^ 1]);
}

/*
 * The engine's counter and per-QP dumps (the device tree's qp/<dev> and
 * hw_counters files) read the state an input left, as the refresher
 * thread did at random moments before devtree_quiet(). For inputs whose
 * length is a multiple of 8 only: at every input they cost 5% of it.
 */
static void dump_engine(void)
{
	static FILE *sink;
	int i;

	if (!sink)
		sink = fopen("/dev/null", "w");
	CHECK(sink, "/dev/null: %d", errno);
	ur_engine_dump_counters(w.dev, sink);
	for (i = 0; i < FZ_NQP; i++) {
		struct ur_qp *qp = to_ur_qp(w.q[i].qp);

		pthread_mutex_lock(&qp->sq_lock);
		ur_engine_dump_qp(qp, sink);
		pthread_mutex_unlock(&qp->sq_lock);
	}
}

/* Every QP to ERR, everything flushed and checked. */
static void world_end(size_t size)
{
	struct ibv_async_event ev;
	int i, round;
	uint32_t s;

	if (size % 8 == 0)
		dump_engine();
	for (i = 0; i < FZ_NQP; i++)
		if (w.q[i].state != IBV_QPS_RESET)
			qp_modify(i, IBV_QPS_ERR, 0);
	for (round = 0; round < 4; round++) {
		ur_engine_poll(w.dev);
		for (i = 0; i < FZ_NQP; i++)
			poll_qp(i, 1 << 20);
	}
	check_states();
	for (i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &w.q[i];

		CHECK(q->rq.next == q->rq.posted,
		      "QP %d: receive WQE %u never completed", i, q->rq.next);
		for (s = q->sq.next; s < q->sq.posted; s++)
			CHECK(!q->sq.signaled[s],
			      "QP %d: signaled send WQE %u never completed", i,
			      s);
	}
	CHECK(!ibv_dealloc_mw(w.mw[0]) && !ibv_dealloc_mw(w.mw[1]),
	      "dealloc_mw");
	check_memory();
	check_readonly();
	while (!ibv_get_async_event(w.ctx, &ev))
		ibv_ack_async_event(&ev);
	net.n = 0;
	net.budget = 0;
}

/* ------------------------------------------------------------------ */
/* Operations                                                          */
/* ------------------------------------------------------------------ */

static const enum ibv_wr_opcode fz_wr_ops[] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
};
/* opsel values whose low 7 bits are at least this post an ATOMIC_WRITE
 * (a range no seed uses, so fz_wr_ops' mapping of older inputs stays) */
#define FZ_OPSEL_ATOMIC_WRITE 0x78

/* An rkey for a peer to use: an MR's, a MW's, or anything. */
static uint32_t pick_rkey(uint8_t sel)
{
	switch (sel & 7) {
	case 0:
	case 1:
	case 2:
	case 3:
		return w.mr[sel & 3].mr->rkey;
	case 4:
		return w.mw[0]->rkey;
	case 5:
		return w.mw[1]->rkey;
	case 6:
		return w.mw2_next_rkey;
	default:
		return (uint32_t)sel << 20 | sel;
	}
}

/* An address in (or near) MR sel & 3. */
static uint64_t pick_addr(uint8_t sel, uint16_t off)
{
	const struct fz_mr *m = &w.mr[sel & 3];

	if (sel & 0x80)	/* a little outside */
		return (uintptr_t)m->mem + fz_mr_len[sel & 3] - 64 +
		       (off & 127);
	return (uintptr_t)m->mem + off % fz_mr_len[sel & 3];
}

static uint32_t fill_sges(struct ibv_sge *sge, unsigned int nsge, uint8_t mr,
			  uint16_t off, uint32_t len)
{
	uint32_t total = 0;
	unsigned int k;

	for (k = 0; k < nsge; k++) {
		uint8_t msel = (uint8_t)(mr + k);
		uint32_t l = len / nsge;

		sge[k].addr = pick_addr(msel & 0x83, (uint16_t)(off + k * 977));
		sge[k].length = l;
		sge[k].lkey = w.mr[msel & 3].mr->lkey;
		if ((mr & 0x40) && k == 0)
			sge[k].lkey ^= 0x100;	/* a wrong key */
		total += l;
	}
	return total;
}

static void op_post_send(void)
{
	uint8_t qi = in_u8() % FZ_NQP, opsel = in_u8(), flags = in_u8();
	uint16_t len = in_u16(), loff = in_u16(), roff = in_u16();
	uint8_t lmr = in_u8(), rsel = in_u8(), rmr = in_u8();
	uint64_t arg = in_u8();
	struct fz_qp *q = &w.q[qi];
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[4];
	unsigned int nsge = 1 + (flags >> 5) % 4;
	uint32_t seq = q->sq.posted, total;
	bool track;
	int rc;

	if (seq >= FZ_MAX_POSTS)
		return;
	if (seq - q->sq.next >= FZ_DEPTH)
		poll_qp(qi, 1 << 20);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id_of(qi, false, seq);
	wr.opcode = fz_wr_ops[opsel % UR_ARRAY_SIZE(fz_wr_ops)];
	if ((opsel & 0x7f) >= FZ_OPSEL_ATOMIC_WRITE)
		wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.send_flags = (flags & 1 ? IBV_SEND_SIGNALED : 0) |
			(flags & 2 ? IBV_SEND_INLINE : 0) |
			(flags & 4 ? IBV_SEND_SOLICITED : 0) |
			(flags & 8 ? IBV_SEND_FENCE : 0);
	wr.imm_data = htonl(0xabc00000u | seq);
	if (!(opsel & 0x80))
		len %= 2100;
	if (wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
	    wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	    wr.opcode == IBV_WR_ATOMIC_WRITE)
		len = (flags & 0x10) ? len % 16 : 8;
	wr.num_sge = (int)nsge;
	wr.sg_list = sge;
	total = fill_sges(sge, nsge, lmr, loff, len);
	switch (wr.opcode) {
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		wr.wr.rdma.remote_addr = pick_addr(rmr, roff);
		wr.wr.rdma.rkey = pick_rkey(rsel);
		break;
	case IBV_WR_ATOMIC_WRITE:
		wr.wr.rdma.remote_addr = pick_addr(rmr, roff) & ~7ull;
		if (flags & 0x10)
			wr.wr.rdma.remote_addr |= roff & 7;
		wr.wr.rdma.rkey = pick_rkey(rsel);
		break;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		wr.wr.atomic.remote_addr = pick_addr(rmr, roff) & ~7ull;
		if (flags & 0x10)
			wr.wr.atomic.remote_addr |= roff & 7;
		wr.wr.atomic.rkey = pick_rkey(rsel);
		wr.wr.atomic.compare_add = arg;
		wr.wr.atomic.swap = arg * 3;
		break;
	case IBV_WR_LOCAL_INV:
		wr.invalidate_rkey = pick_rkey(rsel);
		break;
	case IBV_WR_SEND_WITH_INV:
		wr.invalidate_rkey = pick_rkey(rsel);
		break;
	case IBV_WR_BIND_MW:
		wr.bind_mw.mw = w.mw[1];
		wr.bind_mw.rkey = ibv_inc_rkey(w.mw2_next_rkey);
		wr.bind_mw.bind_info.mr = w.mr[rmr & 1].mr;
		wr.bind_mw.bind_info.addr = pick_addr(rmr & 0x81, roff);
		wr.bind_mw.bind_info.length = len;
		wr.bind_mw.bind_info.mw_access_flags =
			(rsel & 1 ? IBV_ACCESS_REMOTE_WRITE : 0) |
			(rsel & 2 ? IBV_ACCESS_REMOTE_READ : 0) |
			(rsel & 4 ? IBV_ACCESS_REMOTE_ATOMIC : 0);
		wr.num_sge = 0;
		break;
	default:
		break;
	}
	if (fz_qp_type[qi] == IBV_QPT_UD) {
		wr.wr.ud.ah = w.ah;
		wr.wr.ud.remote_qpn = rsel & 0x80 ? (uint32_t)roff << 8 :
				      w.q[qi ^ 1].qp->qp_num;
		wr.wr.ud.remote_qkey = rsel & 0x40 ? FZ_QKEY + 1 : FZ_QKEY;
	}
	/* (an RC WRITE's success means the responder has it; a UC one's
	 * does not) */
	track = (wr.opcode == IBV_WR_RDMA_READ ||
		 (fz_qp_type[qi] == IBV_QPT_RC &&
		  (wr.opcode == IBV_WR_RDMA_WRITE ||
		   wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM))) &&
		(wr.send_flags & IBV_SEND_SIGNALED) && !w.rd.on &&
		world_quiet();
	rc = ibv_post_send(q->qp, &wr, &bad);
	if (fz_trace)
		fprintf(stderr,
			"fz: QP %d post_send %d len %u rkey %#x inv %#x bind %#x: %d\n",
			qi, wr.opcode, len,
			wr.opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
					wr.opcode == IBV_WR_ATOMIC_FETCH_AND_ADD ?
				wr.wr.atomic.rkey : wr.wr.rdma.rkey,
			wr.invalidate_rkey,
			wr.opcode == IBV_WR_BIND_MW ? wr.bind_mw.rkey : 0, rc);
	if (rc)
		return;
	if (wr.opcode == IBV_WR_BIND_MW) {
		w.mw2_next_rkey = wr.bind_mw.rkey;
		if (w.dead && wr.bind_mw.rkey == w.dead_rkey)
			w.dead = false;	/* the key came round again */
	}
	q->sq.inv_rkey[seq] = wr.invalidate_rkey;
	q->sq.must_fail[seq] = 0;
	q->sq.dup_ok[seq] = w.q[qi ^ 1].psn_doubt;
	if (w.dead && fz_qp_type[qi] == IBV_QPT_RC) {
		switch (wr.opcode) {
		case IBV_WR_RDMA_WRITE:
		case IBV_WR_RDMA_WRITE_WITH_IMM:
		case IBV_WR_RDMA_READ:
			/* a zero-length one checks no key (IBA, as rxe) */
			q->sq.must_fail[seq] = total &&
					       wr.wr.rdma.rkey == w.dead_rkey;
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			q->sq.must_fail[seq] = wr.wr.atomic.rkey == w.dead_rkey;
			break;
		case IBV_WR_ATOMIC_WRITE:
			q->sq.must_fail[seq] = wr.wr.rdma.rkey == w.dead_rkey;
			break;
		default:
			break;
		}
	}
	if (track)
		read_track(qi, seq, &wr);
	else if (w.rd.on)
		read_note_post(&wr);
	q->sq.signaled[seq] = !!(wr.send_flags & IBV_SEND_SIGNALED);
	q->sq.op[seq] = (uint8_t)wc_opcode_of(wr.opcode);
	q->sq.posted++;
}

static void op_post_recv(void)
{
	uint8_t qi = in_u8() % FZ_NQP, mr = in_u8(), n = in_u8();
	uint16_t off = in_u16(), len = in_u16();
	struct fz_qp *q = &w.q[qi];
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge[4];
	uint32_t seq = q->rq.posted, total;

	if (seq >= FZ_MAX_POSTS)
		return;
	if (seq - q->rq.next >= FZ_DEPTH)
		poll_qp(qi, 1 << 20);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id_of(qi, true, seq);
	wr.num_sge = 1 + n % 4;
	wr.sg_list = sge;
	total = fill_sges(sge, (unsigned int)wr.num_sge, mr, off,
			  len % ((n & 0x80) ? 16384 : 4200));
	if (ibv_post_recv(q->qp, &wr, &bad))
		return;
	if (sges_touch_read(sge, wr.num_sge))
		w.rd.valid = false;
	memcpy(w.rsge[qi][seq], sge, sizeof(sge));
	w.rnsge[qi][seq] = (uint8_t)wr.num_sge;
	q->rq.len[seq] = total;
	q->rq.posted++;
}

static void bind_mw1(void)
{
	uint8_t qi = in_u8() % 4, mr = in_u8(), acc = in_u8(), flags = in_u8();
	uint16_t off = in_u16(), len = in_u16();
	struct fz_qp *q = &w.q[qi];
	struct ibv_mw_bind b;
	uint32_t seq = q->sq.posted;
	int rc;

	if (seq >= FZ_MAX_POSTS)
		return;
	if (seq - q->sq.next >= FZ_DEPTH)
		poll_qp(qi, 1 << 20);
	memset(&b, 0, sizeof(b));
	b.wr_id = wr_id_of(qi, false, seq);
	b.send_flags = flags & 1 ? IBV_SEND_SIGNALED : 0;
	b.bind_info.mr = w.mr[mr & 1].mr;
	b.bind_info.addr = pick_addr(mr & 0x81, off);
	b.bind_info.length = len % 8192;
	b.bind_info.mw_access_flags = (acc & 1 ? IBV_ACCESS_REMOTE_WRITE : 0) |
				      (acc & 2 ? IBV_ACCESS_REMOTE_READ : 0) |
				      (acc & 4 ? IBV_ACCESS_REMOTE_ATOMIC : 0);
	rc = ibv_bind_mw(q->qp, w.mw[0], &b);
	if (fz_trace)
		fprintf(stderr, "fz: QP %d bind_mw: %d\n", qi, rc);
	if (rc)
		return;
	q->sq.signaled[seq] = !!(b.send_flags & IBV_SEND_SIGNALED);
	q->sq.op[seq] = IBV_WC_BIND_MW;
	q->sq.posted++;
}

/* A packet the peer could have sent, headers from the input, valid ICRC. */
static void op_inject(void)
{
	static const uint8_t ops[] = {
		UR_OPC_RC_SEND_FIRST, UR_OPC_RC_SEND_MIDDLE,
		UR_OPC_RC_SEND_LAST, UR_OPC_RC_SEND_LAST_IMM,
		UR_OPC_RC_SEND_ONLY, UR_OPC_RC_SEND_ONLY_IMM,
		UR_OPC_RC_WRITE_FIRST, UR_OPC_RC_WRITE_MIDDLE,
		UR_OPC_RC_WRITE_LAST, UR_OPC_RC_WRITE_LAST_IMM,
		UR_OPC_RC_WRITE_ONLY, UR_OPC_RC_WRITE_ONLY_IMM,
		UR_OPC_RC_READ_REQ, UR_OPC_RC_READ_RESP_FIRST,
		UR_OPC_RC_READ_RESP_MIDDLE, UR_OPC_RC_READ_RESP_LAST,
		UR_OPC_RC_READ_RESP_ONLY, UR_OPC_RC_ACK,
		UR_OPC_RC_ATOMIC_ACK, UR_OPC_RC_CMP_SWAP,
		UR_OPC_RC_FETCH_ADD, UR_OPC_RC_SEND_LAST_INV,
		UR_OPC_RC_SEND_ONLY_INV, UR_OPC_RC_FLUSH,
		UR_OPC_RC_ATOMIC_WRITE,
	};
	uint8_t qi = in_u8() % FZ_NQP, opsel = in_u8(), flags = in_u8();
	int8_t dpsn = (int8_t)in_u8();
	uint8_t rsel = in_u8(), asel = in_u8(), syn = in_u8();
	uint16_t off = in_u16(), rlen = in_u16(), plen = in_u16();
	uint64_t arg = in_u8();
	struct ur_qp_xport *xp = to_ur_qp(w.q[qi].qp)->xp;
	static uint8_t buf[FZ_DGRAM_MAX];
	struct ur_hdr_fields f;
	struct ur_ip_flow flow;
	uint32_t base, total, k;
	uint8_t op;
	int n;

	op = ops[opsel % UR_ARRAY_SIZE(ops)];
	/* UC and UD opcodes are the RC ones plus the class */
	if (fz_qp_type[qi] == IBV_QPT_UC)
		op = (uint8_t)(UR_TCLASS_UC << 5 | (op & 0x1f));
	else if (fz_qp_type[qi] == IBV_QPT_UD)
		op = opsel & 1 ? UR_OPC_UD_SEND_ONLY_IMM : UR_OPC_UD_SEND_ONLY;
	if (opsel & 0x80)
		op = (uint8_t)(op ^ (flags & 0x60));	/* an odd class */
	if (!ur_op_valid(op))
		return;
	/* an ACK/NAK writes no memory: anything else may write where a
	 * tracked READ reads or writes */
	if (op != UR_OPC_RC_ACK)
		w.rd.valid = false;
	base = ur_op_is_request(op) ? xp->resp.epsn : xp->comp.psn;
	memset(&f, 0, sizeof(f));
	f.opcode = op;
	f.se = flags & 1;
	f.ackreq = flags & 2;
	f.pkey = (flags & 0x80) ? 0x1234 : 0xffff;
	f.qpn = w.q[qi].qp->qp_num;
	f.psn = (base + (uint32_t)(int32_t)dpsn) & 0xffffff;
	f.reth.va = pick_addr(asel, off);
	f.reth.rkey = pick_rkey(rsel);
	f.reth.len = rlen % ((flags & 4) ? 65536 : 9000);
	f.aeth.syn = syn;
	f.aeth.msn = (to_ur_qp(w.q[qi].qp)->sq.consumer + (flags >> 3)) &
		     0xffffff;
	f.atmeth.va = pick_addr(asel, off) & ~((flags & 8) ? 0ull : 7ull);
	f.atmeth.rkey = f.reth.rkey;
	f.atmeth.swap_add = arg;
	f.atmeth.compare = arg * 5;
	f.atmack_orig = arg << 32;
	f.imm_be = htonl(0xfeed0000u | plen);
	f.ieth_rkey = pick_rkey(rsel >> 3);
	f.deth.qkey = (flags & 0x10) ? FZ_QKEY + 1 : FZ_QKEY;
	f.feth.sel = asel >> 6;		/* 2, 3: reserved */
	f.feth.plt = syn & 0xf;
	f.deth.sqp = w.q[qi ^ 1].qp->qp_num;
	if (!ur_op_has_payload(op))
		plen = 0;
	plen %= 4200;
	if (op == UR_OPC_RC_ATOMIC_WRITE && !(flags & 0x40))
		plen = 8;	/* else the parser's fixed size drops it */
	f.pad = ur_pad_len(plen);
	n = ur_hdr_build(buf, sizeof(buf), &f);
	if (n < 0)
		return;
	total = (uint32_t)n + plen + f.pad + UR_ICRC_BYTES;
	if (total > sizeof(buf))
		return;
	for (k = 0; k < plen; k++)
		buf[n + k] = (uint8_t)(k ^ opsel);
	memset(buf + n + plen, 0, f.pad);
	CHECK(!ur_ip_flow_from_sockaddr(&flow, &net.link->addr,
					&net.link->addr), "flow");
	ur_icrc_store(buf + total - UR_ICRC_BYTES,
		      ur_icrc_compute(&flow, buf, total));
	net_push(buf, total, FZ_GEN_CRAFTED, flags & 0x20);
}

/* Drop, duplicate, reorder or corrupt what is queued. */
static void op_net(void)
{
	uint8_t act = in_u8(), arg = in_u8();
	struct fz_dgram *d;

	if (!net.n)
		return;
	switch (act % 5) {
	case 0:
		/* drop the head, or with the top bit the datagram at arg */
		if (act & 0x80) {
			unsigned int j = arg % net.n, k;

			for (k = j; k + 1 < net.n; k++)
				dgram_copy(net_at(k), net_at(k + 1));
			net.n--;
		} else {
			net_pop();
		}
		break;
	case 1:
		d = net_at(0);
		net_push(d->data, d->len, d->gen, true);
		break;
	case 2:
		if (net.n >= 2) {
			static struct fz_dgram tmp;
			unsigned int j = 1 + arg % (net.n - 1);

			dgram_copy(&tmp, net_at(0));
			dgram_copy(net_at(0), net_at(j));
			dgram_copy(net_at(j), &tmp);
		}
		break;
	case 3:
		d = net_at(0);
		d->data[arg % d->len] ^= (uint8_t)(1 << (act >> 5));
		break;
	default: {
		/* the head goes last */
		uint32_t len = net_at(0)->len, gen = net_at(0)->gen;

		memcpy(net.tmp, net_at(0)->data, len);
		net_pop();
		net_push(net.tmp, len, gen, false);
		break;
	}
	}
}

static void deliver(unsigned int n)
{
	int guard;

	net.budget = n;
	for (guard = 0; guard < 64 && net.budget && net.n; guard++)
		ur_engine_poll(w.dev);
	net.budget = 0;
}

static void op_modify(void)
{
	uint8_t qi = in_u8() % FZ_NQP, sel = in_u8();
	uint32_t psn = in_u32();

	switch (sel % 6) {
	case 0:
		qp_modify(qi, IBV_QPS_ERR, 0);
		break;
	case 1:
		qp_modify(qi, IBV_QPS_SQD, 0);
		break;
	case 2:
		qp_modify(qi, IBV_QPS_RTS, psn);
		break;
	case 3:
		qp_modify(qi, IBV_QPS_RESET, 0);
		break;
	case 4:
		qp_modify(qi, (enum ibv_qp_state)(sel >> 3) % 7, psn);
		break;
	default:
		qp_connect(qi, psn, w.q[qi ^ 1].init_psn);
		break;
	}
}

static void run_op(void)
{
	uint8_t kind = in_u8();

	/* QP changes and MW binds void a tracked READ's check; posts and
	 * crafted packets are looked at one by one */
	switch (kind % 11) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 4:
	case 5:
	case 6:
	case 7:
	case 10:
		break;
	default:
		w.rd.valid = false;
		break;
	}
	switch (kind % 11) {
	case 0:
	case 1:
		op_post_send();
		break;
	case 2:
		op_post_recv();
		break;
	case 3:
		op_inject();
		break;
	case 4:
		deliver(1 + in_u8() % 16);
		break;
	case 5:
		op_net();
		break;
	case 6:
		/* time passes: up to hours, the longest IBA timeout */
		fz_now += 1000ull << (in_u8() % 34);
		deliver(0);
		ur_engine_poll(w.dev);
		break;
	case 7:
		poll_qp(in_u8() % FZ_NQP, 64);
		break;
	case 8:
		op_modify();
		break;
	case 9:
		bind_mw1();
		break;
	default:
		deliver(1000);
		break;
	}
}

/* ------------------------------------------------------------------ */
/* libFuzzer entry points                                              */
/* ------------------------------------------------------------------ */

/*
 * The device tree's refresher thread rewrites the counter and QP files
 * every 50 ms while the device is open. Here they change with every
 * input, so it spent a fifth of the CPU on renames and disk writes, took
 * the device's locks under the fuzzing thread and ran instrumented code
 * whose coverage libFuzzer charged to whatever input was running. Nothing
 * here reads the tree: stop it once the device is open (nothing restarts
 * it, as the device is opened once).
 */
static void devtree_quiet(void)
{
	pthread_mutex_lock(&devtree.lock);
	refresher_stop();
	pthread_mutex_unlock(&devtree.lock);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ibv_device **list;
	int i, n;

	fz_main = pthread_self();
	fz_trace = getenv("FZ_TRACE") != NULL;
	setenv("UROCE_ADDRS", "127.0.0.1", 1);
	unsetenv("UROCE_FAULT");
	unsetenv("UROCE_PCAP");
	list = ibv_get_device_list(&n);
	CHECK(list && n > 0, "no device");
	w.ctx = ibv_open_device(list[0]);
	CHECK(w.ctx, "open_device");
	devtree_quiet();
	ibv_free_device_list(list);
	w.dev = to_ur_context(w.ctx)->dev;
	CHECK(!ibv_query_gid(w.ctx, 1, 0, &w.gid), "query_gid");
	w.arena = aligned_alloc(FZ_PAGE,
				FZ_NMR * (FZ_MR_MAX + 2 * FZ_PAGE));
	CHECK(w.arena, "arena");
	for (i = 0; i < FZ_NMR; i++) {
		w.mr[i].mem = w.arena + (size_t)i * (FZ_MR_MAX + 2 * FZ_PAGE) +
			      FZ_PAGE;
		w.mr[i].area = w.mr[i].mem - FZ_GUARD;
		w.mr[i].readonly = !(fz_mr_access[i] & IBV_ACCESS_LOCAL_WRITE);
	}
	memset(w.guard, FZ_GUARD_BYTE, FZ_GUARD);
	for (i = 0; i < FZ_NMR; i++)
		for (n = 0; n < FZ_MR_MAX; n++)
			w.pattern[i][n] = (uint8_t)(n * 131 + i);
	/* async events (SQ drained, QP errors) are read per input */
	CHECK(!fcntl(w.ctx->async_fd, F_SETFL,
		     fcntl(w.ctx->async_fd, F_GETFL) | O_NONBLOCK),
	      "async fd");
	world_create();
	readonly_seal();
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const enum ibv_mtu mtus[] = { IBV_MTU_256, IBV_MTU_1024,
					     IBV_MTU_1024, IBV_MTU_4096 };
	uint8_t h;
	int ops;

	w.in = data;
	w.left = size;
	/* header: path MTU, RC timeout and retry counts */
	h = in_u8();
	w.mtu = mtus[h & 3];
	w.retry = (h >> 2) & 7;
	w.rnr_retry = (h >> 5) & 7;
	h = in_u8();
	w.timeout = h % 32;
	w.min_rnr = h >> 3;
	fz_now += 1000000000000ull;
	world_begin();
	check_states();
	for (ops = 0; ops < FZ_MAX_OPS && w.left; ops++) {
		run_op();
		check_states();
		check_memory();
	}
	world_end(size);
	if (fz_trace)
		ur_engine_dump_counters(w.dev, stderr);
	return 0;
}
