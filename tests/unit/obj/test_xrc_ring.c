/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An XRC SRQ shared by the processes of its domain (obj/xrc_ring.c): a
 * forked child creates the SRQ and posts its receive WQEs, this process
 * (another member of the domain, as an XRC_RECV QP's process would) takes
 * them, writes the payloads into the child and hands back completions.
 * The child checks every byte of its buffers (what was written, and that
 * nothing past it was) and that each WQE completes exactly once with the
 * byte count, immediate and source QP given. An empty SRQ answers -EAGAIN
 * (an RNR NAK for the responder). Also: a WQE whose MR the owner
 * deregistered (after or before it was taken) fails with -EACCES and
 * writes nothing; an owner that died is gone for a taker that attached
 * before (its next copy) and after (no attach); a WQE whose taker died
 * before completing it is flushed when the ring comes round to it.
 *
 * The child is the owner so that the writes go to a descendant, which
 * Yama's ptrace_scope 1 allows; where process_vm_writev is refused all
 * the same, the test is skipped.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "to_util.h"
#include "util/rundir.h"

#define BOTH (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)
#define NWQE 40
#define CHUNK 1000u		/* each WQE: two SGEs of CHUNK bytes */
#define SLOT (2 * CHUNK + 64)	/* a WQE's share of the buffer, with a gap */
#define FILL 0xee

static char rundir[64];
static bool refused;		/* process_vm_writev refused here: skip */

enum cmd { CMD_DRAIN = 1, CMD_DEREG, CMD_EXIT };

struct owner {
	struct ibv_context *ctx;
	struct ur_pd *pd;
	struct ur_cq *cq;
	struct ur_xrcd *x;
	struct ur_srq *srq;
	struct ur_mr *mr;
	uint8_t *buf;
};

static int open_xrcd(struct ibv_context *ctx, int fd, int oflags,
		     struct ur_xrcd **x)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = BOTH, .fd = fd,
					.oflags = oflags };

	return ur_xrcd_open(ctx, &a, x);
}

/* The payload byte i of WQE n: differs between WQEs and positions. */
static uint8_t pattern(unsigned int n, unsigned int i)
{
	return (uint8_t)(n * 31 + i * 7 + 1);
}

/* How many bytes message n carries: some fill one SGE, some both, one
 * is empty. */
static uint32_t msg_len(unsigned int n)
{
	return n == 3 ? 0 : (n * 97) % (2 * CHUNK) + 1;
}

static int owner_setup(struct owner *o, int fd, unsigned int nwqe)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 2 * NWQE };
	struct ibv_srq_attr sa = { .max_wr = NWQE, .max_sge = 2 };
	unsigned int n;

	o->ctx = ut_ctx_new();
	o->pd = ut_pd(o->ctx);
	o->buf = malloc((size_t)NWQE * SLOT);
	if (!o->buf)
		return -ENOMEM;
	memset(o->buf, FILL, (size_t)NWQE * SLOT);
	if (open_xrcd(o->ctx, fd, O_CREAT, &o->x) ||
	    ur_cq_create(o->ctx, &ca, &o->cq) ||
	    ur_srq_create_xrc(o->pd, o->x, o->cq, NULL, &sa, &o->srq) ||
	    ur_mr_reg(o->pd, o->buf, (size_t)NWQE * SLOT,
		      (uintptr_t)o->buf, IBV_ACCESS_LOCAL_WRITE, &o->mr))
		return -EINVAL;
	if (!o->srq->xring)
		return -ENODEV;
	for (n = 0; n < nwqe; n++) {
		struct ibv_sge sg[2] = {
			{ (uintptr_t)o->buf + n * SLOT, CHUNK, o->mr->ibmr.lkey },
			{ (uintptr_t)o->buf + n * SLOT + CHUNK + 32, CHUNK,
			  o->mr->ibmr.lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = 1000 + n, .sg_list = sg,
					  .num_sge = 2 }, *bad;

		if (ur_srq_post(o->srq, &wr, &bad))
			return -ENOSPC;
	}
	return 0;
}

/* Whether WQE n's bytes are its message (written) or untouched. */
static bool slot_ok(const uint8_t *b, unsigned int n, bool written)
{
	uint32_t len = written ? msg_len(n) : 0, i;

	for (i = 0; i < SLOT; i++) {
		uint32_t pos = i < CHUNK ? i :
			       i >= CHUNK + 32 && i < 2 * CHUNK + 32 ?
			       i - 32 : UINT32_MAX;
		uint8_t want = pos < len ? pattern(n, pos) : FILL;

		if (b[i] != want)
			return false;
	}
	return true;
}

/* The owner of test_delivery: its completions and bytes, checked. */
static int owner_delivery(int fd, int up, int down)
{
	struct ibv_wc wc[2 * NWQE];
	bool seen[NWQE] = { false };
	struct owner o;
	uint8_t c;
	int got = 0, i;

	alarm(30);
	if (owner_setup(&o, fd, NWQE))
		return 2;
	if (write(up, &o.srq->srq_num, 4) != 4 || read(down, &c, 1) != 1)
		return 3;
	ur_xring_drain_cq(o.cq);
	got = ur_cq_poll(o.cq, 2 * NWQE, wc);
	if (got != NWQE)
		return 4;
	for (i = 0; i < got; i++) {
		unsigned int n = (unsigned int)(wc[i].wr_id - 1000);

		if (n >= NWQE || seen[n] || wc[i].status != IBV_WC_SUCCESS ||
		    wc[i].opcode != IBV_WC_RECV ||
		    wc[i].byte_len != msg_len(n) ||
		    wc[i].imm_data != htonl(n) ||
		    wc[i].wc_flags != IBV_WC_WITH_IMM ||
		    wc[i].src_qp != 0x123 || wc[i].qp_num != 0x456)
			return 5;
		seen[n] = true;
		if (!slot_ok(o.buf + n * SLOT, n, true))
			return 6;
	}
	/* nothing more, and the slots are free again: a full ring posts */
	ur_xring_drain_cq(o.cq);
	if (ur_cq_poll(o.cq, 1, wc) != 0)
		return 7;
	return 0;
}

static pid_t spawn(int fd, int (*fn)(int, int, int), int *up, int *down)
{
	int u[2], d[2];
	pid_t pid;

	assert_int_equal(pipe(u), 0);
	assert_int_equal(pipe(d), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(u[0]);
		close(d[1]);
		_exit(fn(fd, u[1], d[0]));
	}
	close(u[1]);
	close(d[0]);
	*up = u[0];
	*down = d[1];
	return pid;
}

static int child_status(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int domain_file(void)
{
	char path[64] = "/tmp/ur-xrcr-XXXXXX";
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	unlink(path);
	return fd;
}

/* Joins the domain the child made and finds its SRQ. */
static struct ur_xring *taker_attach(struct ibv_context *ctx, int fd,
				     uint32_t srqn, struct ur_xrcd **x)
{
	struct ur_xring *r = NULL;
	int err;

	assert_int_equal(open_xrcd(ctx, fd, 0, x), 0);
	err = ur_xrcd_ring(*x, srqn, &r);
	if (err == -EPERM) {
		refused = true;
		return NULL;
	}
	assert_int_equal(err, 0);
	return r;
}

/* A receive WQE with room for its SGEs, as ur_xring_take() fills it. */
union rwqe {
	struct ur_recv_wqe w;
	uint8_t b[sizeof(struct ur_recv_wqe) +
		  UR_MAX_SGE * sizeof(struct ur_sge)];
};

/* The taking side of a two-process test: its context and domain file,
 * the owner forked and its SRQ found (r NULL when this host refuses
 * cross-memory writes: the owner is killed, taker_end() skips). */
struct taker {
	struct ibv_context *ctx;
	struct ur_xrcd *x;
	struct ur_xring *r;
	uint32_t srqn;
	int fd, up, down;
	pid_t pid;
};

static bool taker_begin(struct taker *t, int (*owner)(int, int, int))
{
	t->ctx = ut_ctx_new();
	t->fd = domain_file();
	t->pid = spawn(t->fd, owner, &t->up, &t->down);
	assert_int_equal(read(t->up, &t->srqn, 4), 4);
	t->r = taker_attach(t->ctx, t->fd, t->srqn, &t->x);
	if (t->r)
		return true;
	kill(t->pid, SIGKILL);
	child_status(t->pid);
	return false;
}

static void taker_end(struct taker *t)
{
	close(t->up);
	close(t->down);
	assert_int_equal(ur_xrcd_close(t->x), 0);
	ut_ctx_free(t->ctx);
	close(t->fd);
	if (refused)
		skip();
}

static void test_delivery(void **state)
{
	union rwqe u;
	uint8_t msg[2 * CHUNK];
	struct taker t;
	int n;

	(void)state;
	if (!taker_begin(&t, owner_delivery))
		goto out;
	for (n = 0; n < NWQE; n++) {
		struct ibv_wc wc = {
			.status = IBV_WC_SUCCESS, .opcode = IBV_WC_RECV,
			.byte_len = msg_len(n), .imm_data = htonl(n),
			.wc_flags = IBV_WC_WITH_IMM, .src_qp = 0x123,
			.qp_num = 0x456,
		};
		uint32_t len = msg_len(n), i, off;

		assert_int_equal(ur_xring_take(t.r, &u.w), 0);
		assert_int_equal(u.w.length, 2 * CHUNK);
		for (i = 0; i < len; i++)
			msg[i] = pattern(n, i);
		/* in packets of 256 bytes, as a responder places them */
		for (off = 0; off < len; off += 256)
			assert_int_equal(ur_xring_copy(t.r, &u.w, off,
						       msg + off,
						       len - off < 256 ?
							       len - off : 256),
					 0);
		/* past the WQE's end: the responder's length error */
		assert_int_equal(ur_xring_copy(t.r, &u.w, 2 * CHUNK - 1, msg,
					       2),
				 -EMSGSIZE);
		ur_xring_complete(t.r, u.w.wr_id, &wc);
	}
	/* empty: the responder's RNR NAK */
	assert_int_equal(ur_xring_take(t.r, &u.w), -EAGAIN);
	assert_int_equal(write(t.down, "g", 1), 1);
	assert_int_equal(child_status(t.pid), 0);
out:
	taker_end(&t);
}

/* The owner of test_dereg: two WQEs; deregisters their MR on command,
 * then checks that no byte was written. */
static int owner_dereg(int fd, int up, int down)
{
	struct owner o;
	uint32_t lkey;
	uint8_t c;

	alarm(30);
	if (owner_setup(&o, fd, 2))
		return 2;
	if (write(up, &o.srq->srq_num, 4) != 4 || read(down, &c, 1) != 1)
		return 3;
	lkey = o.mr->ibmr.lkey;
	if (ur_mr_dereg(o.mr))
		return 4;
	ur_xring_mr_gone(ut_dev(o.ctx), lkey);
	if (write(up, "d", 1) != 1 || read(down, &c, 1) != 1)
		return 5;
	/* the buffer is still ours: nothing may have landed in it */
	return slot_ok(o.buf, 0, false) && slot_ok(o.buf + SLOT, 1, false) ?
		       0 : 6;
}

static void test_dereg(void **state)
{
	union rwqe u1, u2;
	uint8_t msg[64];
	struct taker t;
	uint8_t c;

	(void)state;
	memset(msg, 0x5a, sizeof(msg));
	if (!taker_begin(&t, owner_dereg))
		goto out;
	/* one taken before the deregistration, one after */
	assert_int_equal(ur_xring_take(t.r, &u1.w), 0);
	assert_int_equal(write(t.down, "g", 1), 1);
	assert_int_equal(read(t.up, &c, 1), 1);
	assert_int_equal(ur_xring_copy(t.r, &u1.w, 0, msg, sizeof(msg)),
			 -EACCES);
	assert_int_equal(ur_xring_take(t.r, &u2.w), 0);
	assert_int_equal(ur_xring_copy(t.r, &u2.w, 0, msg, sizeof(msg)),
			 -EACCES);
	assert_int_equal(write(t.down, "g", 1), 1);
	assert_int_equal(child_status(t.pid), 0);
out:
	taker_end(&t);
}

/* The owner of test_dead_owner: posts, then dies (a crash: nothing
 * closed) when told to. */
static int owner_dies(int fd, int up, int down)
{
	struct owner o;
	uint8_t c;

	alarm(30);
	if (owner_setup(&o, fd, 4))
		return 2;
	if (write(up, &o.srq->srq_num, 4) != 4 || read(down, &c, 1) != 1)
		return 3;
	return 0;
}

static void test_dead_owner(void **state)
{
	union rwqe u;
	uint8_t msg[64] = { 0 };
	struct ur_xring *again = NULL;
	struct taker t;

	(void)state;
	if (!taker_begin(&t, owner_dies))
		goto out;
	assert_int_equal(ur_xring_take(t.r, &u.w), 0);
	assert_int_equal(write(t.down, "g", 1), 1);
	assert_int_equal(child_status(t.pid), 0);
	/* its lock went with it: a copy now is refused, nothing written to
	 * whatever process has that pid next */
	assert_int_equal(ur_xring_copy(t.r, &u.w, 0, msg, sizeof(msg)),
			 -ENODEV);
	assert_int_equal(ur_xrcd_ring(t.x, t.srqn, &again), -ENODEV);
	assert_null(again);
out:
	taker_end(&t);
}

/* The taker of test_dead_taker: takes the oldest WQE and dies with it. */
static int taker_dies(int fd, int up, int down)
{
	union rwqe u;
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_xring *r;
	struct ur_xrcd *x;
	uint32_t srqn;
	int err;

	alarm(30);
	if (read(down, &srqn, 4) != 4 || open_xrcd(ctx, fd, 0, &x))
		return 2;
	err = ur_xrcd_ring(x, srqn, &r);
	if (err == -EPERM)
		return 77;	/* the parent's memory is not ours to read */
	if (err || ur_xring_take(r, &u.w) || u.w.wr_id != 0)
		return 3;
	return 0;	/* a crash: its WQE taken, no completion */
}

/*
 * A WQE taken by a process that died before completing it: when the ring
 * comes round to its slot the owner flushes it (IBV_WC_WR_FLUSH_ERR, once)
 * and posts there, instead of finding the SRQ full for ever.
 */
static void test_dead_taker(void **state)
{
	union rwqe u;
	int fd = domain_file(), up, down, st;
	struct ibv_srq_attr sa;
	struct ibv_wc wc[4];
	struct owner o;
	uint32_t depth, k;
	pid_t pid;

	(void)state;
	pid = spawn(fd, taker_dies, &up, &down);
	assert_int_equal(owner_setup(&o, fd, 2), 0);
	assert_int_equal(write(down, &o.srq->srq_num, 4), 4);
	st = child_status(pid);
	if (st == 77)
		goto out;
	assert_int_equal(st, 0);
	/* the ring's slots: a power of two above max_wr, as granted */
	ur_srq_query(o.srq, &sa);
	depth = 1;
	while (depth < sa.max_wr + 1)
		depth <<= 1;
	/* the owner's own target takes the others, and it reposts, until
	 * the ring is back at the dead taker's slot */
	for (k = 2; k <= depth; k++) {
		struct ibv_sge sg = { (uintptr_t)o.buf, 8, o.mr->ibmr.lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + k, .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		assert_int_equal(ur_srq_take(o.srq, &u.w), 0);
		assert_int_equal(u.w.wr_id, 1000 + k - 1);
		assert_int_equal(ur_srq_post(o.srq, &wr, &bad), 0);
		assert_int_equal(ur_cq_poll(o.cq, 4, wc), k == depth ? 1 : 0);
	}
	assert_int_equal(wc[0].wr_id, 1000);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[0].opcode, IBV_WC_RECV);
	/* the WQE posted into that slot is the next one taken */
	assert_int_equal(ur_srq_take(o.srq, &u.w), 0);
	assert_int_equal(u.w.wr_id, 1000 + depth);
	assert_int_equal(ur_srq_take(o.srq, &u.w), -EAGAIN);
	ur_xring_drain_cq(o.cq);
	assert_int_equal(ur_cq_poll(o.cq, 4, wc), 0);
out:
	close(up);
	close(down);
	assert_int_equal(ur_srq_destroy(o.srq), 0);
	assert_int_equal(ur_mr_dereg(o.mr), 0);
	assert_int_equal(ur_cq_destroy(o.cq), 0);
	assert_int_equal(ur_xrcd_close(o.x), 0);
	assert_int_equal(ur_pd_free(o.pd), 0);
	free(o.buf);
	ut_ctx_free(o.ctx);
	close(fd);
	if (st == 77)
		skip();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_delivery),
		cmocka_unit_test(test_dereg),
		cmocka_unit_test(test_dead_owner),
		cmocka_unit_test(test_dead_taker),
	};
	int rc;

	snprintf(rundir, sizeof(rundir), "/tmp/ur-xrcr-run-XXXXXX");
	if (!mkdtemp(rundir))
		return 1;
	setenv("XDG_RUNTIME_DIR", rundir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (ur_rundir_rm_tree(rundir))
		rc = rc ? rc : 1;
	return rc;
}
