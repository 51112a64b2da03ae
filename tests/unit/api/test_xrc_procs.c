/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC across two processes of one host, through the public verbs: a
 * forked child (A) opens a domain file, creates an XRC SRQ and posts its
 * receive WQEs (two SGEs each); this process (B) opens the same file,
 * and its XRC_SEND QP sends, through its own XRC_RECV QP, messages for
 * A's SRQ: one to several packets long, one empty, half with an
 * immediate. A polls its CQ (no thread of A's is woken: its poll_cq
 * picks the completions up), or in a second child waits on the CQ's
 * completion channel (its waker thread moves the completions and fires
 * the event), and checks that each WQE completes exactly
 * once, with B's target QP and sender QP, the length and immediate sent,
 * and every byte of its buffers (the message, and nothing past it).
 * Then A exits, and a SEND for its SRQ gets a remote access error: a
 * dead owner is an SRQ gone.
 *
 * A receive WQE that B's target QP holds mid-message (a peer the test
 * forges, forge_peer.h, sends the first packet of a SEND and no more)
 * completes with IBV_WC_WR_FLUSH_ERR where it came from when B moves
 * that QP to ERR: in A's CQ, exactly once, for A's SRQ, and in B's own
 * SRQ's CQ for one of B's (also when the QP is moved to RESET, or
 * destroyed, and with the error's status when the message's next packet
 * names another SRQ); and A's ring goes on working past that slot.
 *
 * B's RDMA WRITE, WRITE with immediate and READ naming A's SRQ work on
 * A's memory under A's keys (every byte checked by both, A polls the
 * immediate); a wrong key, a range past the MR, an atomic (not done
 * across processes) and a key A deregistered get IBV_WC_REM_ACCESS_ERR
 * and change none of A's bytes.
 *
 * A is the child so that B writes into a descendant (Yama's ptrace_scope
 * 1 allows it); ptrace_scope 2 or more refuses it: skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "forge_peer.h"
#include "rc_pair.h"

#define NMSG 24
#define CHUNK 1500u		/* two per WQE: up to three packets */
#define GAP 32u
#define SLOT (2 * CHUNK + 2 * GAP)
#define FILL 0xee

static char rundir[64];
static int domain_fd;

static uint32_t msg_len(unsigned int n)
{
	return n == 5 ? 0 : (n * 211) % (2 * CHUNK) + 1;
}

static uint8_t pattern(unsigned int n, unsigned int i)
{
	return (uint8_t)(n * 13 + i * 5 + 3);
}

static struct ibv_xrcd *xrcd_open(struct ibv_context *c, int oflags)
{
	struct ibv_xrcd_init_attr a = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS,
		.fd = domain_fd,
		.oflags = oflags,
	};

	return ibv_open_xrcd(c, &a);
}

/* Whether slot n of A's buffer holds message n and nothing else. */
static bool slot_ok(const uint8_t *b, unsigned int n)
{
	uint32_t len = msg_len(n), i;

	for (i = 0; i < SLOT; i++) {
		uint32_t pos = i < CHUNK ? i :
			       i >= CHUNK + GAP && i < 2 * CHUNK + GAP ?
			       i - GAP : UINT32_MAX;

		if (b[i] != (pos < len ? pattern(n, pos) : FILL))
			return false;
	}
	return true;
}

/* The next completion of q: by polling, or (ch) by waiting on its
 * channel, armed before each poll so that none is missed. */
static int next_wc(struct ibv_cq *q, struct ibv_comp_channel *ch,
		   struct ibv_wc *wc)
{
	struct pollfd pfd;
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (!ch)
		return ibv_poll_cq(q, 1, wc);
	if (ibv_req_notify_cq(q, 0))
		return -1;
	if (ibv_poll_cq(q, 1, wc) == 1)
		return 1;
	pfd = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	if (poll(&pfd, 1, 1000) != 1 || ibv_get_cq_event(ch, &ev_cq, &ev_ctx))
		return 0;
	ibv_ack_cq_events(ev_cq, 1);
	return ibv_poll_cq(q, 1, wc);
}

/* A: the SRQ's owner. Exit status 0 when every check passed. */
static int owner(int up, int down, bool channel)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = l && l[0] ? ibv_open_device(l[0]) : NULL;
	struct ibv_comp_channel *ch = c && channel ?
					      ibv_create_comp_channel(c) : NULL;
	struct ibv_pd *p = c ? ibv_alloc_pd(c) : NULL;
	struct ibv_cq *q = p && (ch || !channel) ?
				   ibv_create_cq(c, 64, NULL, ch, 0) : NULL;
	struct ibv_xrcd *x = q ? xrcd_open(c, O_CREAT) : NULL;
	uint8_t *buf = malloc((size_t)NMSG * SLOT);
	bool seen[NMSG] = { false };
	struct ibv_srq *srq = NULL;
	struct ibv_mr *mr = NULL;
	uint32_t srqn, qpns[2];
	unsigned int n, got = 0;
	uint64_t end;

	alarm(30);
	if (x && buf) {
		struct ibv_srq_init_attr_ex a = {
			.attr = { .max_wr = NMSG, .max_sge = 2 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC,
			.pd = p, .xrcd = x, .cq = q,
		};

		srq = ibv_create_srq_ex(c, &a);
		memset(buf, FILL, (size_t)NMSG * SLOT);
		mr = ibv_reg_mr(p, buf, (size_t)NMSG * SLOT,
				IBV_ACCESS_LOCAL_WRITE);
	}
	if (!srq || !mr || ibv_get_srq_num(srq, &srqn))
		return 2;
	for (n = 0; n < NMSG; n++) {
		struct ibv_sge sg[2] = {
			{ (uintptr_t)buf + n * SLOT, CHUNK, mr->lkey },
			{ (uintptr_t)buf + n * SLOT + CHUNK + GAP, CHUNK,
			  mr->lkey },
		};
		struct ibv_recv_wr wr = { .wr_id = 500 + n, .sg_list = sg,
					  .num_sge = 2 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			return 3;
	}
	if (write(up, &srqn, 4) != 4 || read(down, qpns, 8) != 8)
		return 4;
	end = now_ms() + 20000;
	while (got < NMSG && now_ms() < end) {
		struct ibv_wc wc;

		if (next_wc(q, ch, &wc) != 1)
			continue;
		n = (unsigned int)(wc.wr_id - 500);
		if (n >= NMSG || seen[n] || wc.status != IBV_WC_SUCCESS ||
		    wc.opcode != IBV_WC_RECV || wc.byte_len != msg_len(n) ||
		    wc.qp_num != qpns[0] || wc.src_qp != qpns[1] ||
		    !(wc.wc_flags & IBV_WC_WITH_IMM) != !(n & 1) ||
		    ((n & 1) && wc.imm_data != htonl(0xabc0 + n)))
			return 10;
		seen[n] = true;
		got++;
		if (!slot_ok(buf + n * SLOT, n))
			return 11;
	}
	if (got != NMSG)
		return 12;
	/* exactly once: nothing more comes */
	usleep(100000);
	{
		struct ibv_wc wc;

		if (ibv_poll_cq(q, 1, &wc) != 0)
			return 13;
	}
	return 0;	/* a crash as far as the domain knows: nothing closed */
}

static int ptrace_scope(void)
{
	FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
	int v = 0;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static void send_msg(struct ibv_qp *qp, struct ibv_mr *mr, uint8_t *src,
		     unsigned int n, uint32_t srqn)
{
	struct ibv_sge sge = { (uintptr_t)src, msg_len(n), mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = n, .sg_list = &sge, .num_sge = 1,
		.opcode = (n & 1) ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(0xabc0 + n),
	}, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
}

static void other_process_srq(void **state)
{
	struct ibv_qp_init_attr_ex ra = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
	};
	struct ibv_qp_init_attr_ex sa = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.send_cq = cq,
		.cap = { .max_send_wr = NMSG + 1, .max_send_sge = 1 },
	};
	uint8_t *src = malloc((size_t)NMSG * 2 * CHUNK);
	struct ibv_qp *recv, *send;
	struct ibv_xrcd *x;
	struct ibv_mr *mr;
	uint32_t srqn, qpns[2];
	const int *arg = *state;
	pid_t pid = arg[0];
	int up = arg[1], down = arg[2], st;
	unsigned int n, i;

	assert_non_null(src);
	assert_int_equal(read(up, &srqn, 4), 4);
	x = xrcd_open(ctx, 0);	/* A's domain: it exists on the host */
	assert_non_null(x);
	ra.xrcd = x;
	sa.pd = pd;
	recv = ibv_create_qp_ex(ctx, &ra);
	send = ibv_create_qp_ex(ctx, &sa);
	assert_non_null(recv);
	assert_non_null(send);
	rc_to_rts(recv, send->qp_num, &gid, &rc_conn_default);
	rc_to_rts(send, recv->qp_num, &gid, &rc_conn_default);
	qpns[0] = recv->qp_num;
	qpns[1] = send->qp_num;
	assert_int_equal(write(down, qpns, 8), 8);
	mr = ibv_reg_mr(pd, src, (size_t)NMSG * 2 * CHUNK,
			IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (n = 0; n < NMSG; n++) {
		uint8_t *m = src + (size_t)n * 2 * CHUNK;

		for (i = 0; i < msg_len(n); i++)
			m[i] = pattern(n, i);
		send_msg(send, mr, m, n, srqn);
	}
	for (n = 0; n < NMSG; n++)
		assert_int_equal(wait_wr(n).status, IBV_WC_SUCCESS);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	/* the owner is gone, and so is its SRQ */
	send_msg(send, mr, src, 0, srqn);
	assert_int_equal(wait_wr(0).status, IBV_WC_REM_ACCESS_ERR);

	assert_int_equal(ibv_destroy_qp(send), 0);
	assert_int_equal(ibv_destroy_qp(recv), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	free(src);
	nstash = 0;
}

/* ---- a WQE held mid-message when the target QP goes to ERR ---- */

#define HELD_ROUNDS 4		/* of HELD_DEPTH WQEs: past every slot twice */
#define HELD_DEPTH 4		/* max_wr: a ring of 8 slots */
#define HELD_LEN 100u
#define PEER_QPN 0x5151a0u

static uint8_t held_pattern(unsigned int n, unsigned int i)
{
	return (uint8_t)(n * 7 + i * 3 + 1);
}

/* The only completion of q within ms (false: none, or a second one). */
static bool only_wc(struct ibv_cq *q, struct ibv_wc *wc, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	struct ibv_wc more;

	while (ibv_poll_cq(q, 1, wc) == 0)
		if (now_ms() > end)
			return false;
	usleep(100000);
	return ibv_poll_cq(q, 1, &more) == 0;
}

/* A for test_held_wqe_flushed: one WQE, which B's QP takes and holds
 * until B moves the QP to ERR; then rounds of WQEs that must complete. */
static int held_owner(int up, int down)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *c = l && l[0] ? ibv_open_device(l[0]) : NULL;
	struct ibv_pd *p = c ? ibv_alloc_pd(c) : NULL;
	struct ibv_cq *q = p ? ibv_create_cq(c, 64, NULL, NULL, 0) : NULL;
	struct ibv_xrcd *x = q ? xrcd_open(c, O_CREAT) : NULL;
	uint8_t *buf = malloc(HELD_DEPTH * 2048);
	struct ibv_srq *srq = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_wc wc;
	unsigned int r, i, n;
	uint32_t srqn;
	char go;

	alarm(30);
	if (x && buf) {
		struct ibv_srq_init_attr_ex a = {
			.attr = { .max_wr = HELD_DEPTH, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC,
			.pd = p, .xrcd = x, .cq = q,
		};

		srq = ibv_create_srq_ex(c, &a);
		mr = ibv_reg_mr(p, buf, HELD_DEPTH * 2048,
				IBV_ACCESS_LOCAL_WRITE);
	}
	if (!srq || !mr || ibv_get_srq_num(srq, &srqn))
		return 2;
	{
		struct ibv_sge sg = { (uintptr_t)buf, 2048, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 700, .sg_list = &sg,
					  .num_sge = 1 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			return 3;
	}
	if (write(up, &srqn, 4) != 4 || read(down, &go, 1) != 1)
		return 4;
	/* B's QP went to ERR holding it: flushed, here, once */
	if (!only_wc(q, &wc, 3000))
		return 20;
	if (wc.wr_id != 700 || wc.status != IBV_WC_WR_FLUSH_ERR)
		return 21;
	for (r = 0, n = 0; r < HELD_ROUNDS; r++) {
		for (i = 0; i < HELD_DEPTH; i++) {
			struct ibv_sge sg = { (uintptr_t)buf + i * 2048, 2048,
					      mr->lkey };
			struct ibv_recv_wr wr = { .wr_id = 800 + n + i,
						  .sg_list = &sg,
						  .num_sge = 1 }, *bad;

			memset(buf + i * 2048, FILL, 2048);
			/* its slot free again: never ENOMEM */
			if (ibv_post_srq_recv(srq, &wr, &bad))
				return 30;
		}
		if (write(up, &go, 1) != 1)
			return 31;
		for (i = 0; i < HELD_DEPTH; i++, n++) {
			uint64_t end = now_ms() + 3000;
			unsigned int k, slot;

			while (ibv_poll_cq(q, 1, &wc) == 0)
				if (now_ms() > end)
					return 32;
			if (wc.wr_id != 800 + n || wc.status != IBV_WC_SUCCESS ||
			    wc.byte_len != HELD_LEN)
				return 33;
			slot = (unsigned int)(n % HELD_DEPTH);
			for (k = 0; k < 2048; k++)
				if (buf[slot * 2048 + k] !=
				    (k < HELD_LEN ? held_pattern(n, k) : FILL))
					return 34;
		}
	}
	return ibv_poll_cq(q, 1, &wc) == 0 ? 0 : 35;
}

/* An XRC_RECV QP of E's device in RTS, its peer the forged one. */
static struct ibv_qp *held_recv_qp(struct fp_env *e, struct ibv_xrcd *x,
				   uint32_t rq_psn)
{
	struct ibv_qp_init_attr_ex ia = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &ia);
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};

	assert_non_null(qp);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
				       IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = PEER_QPN;
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	ur_sockaddr_to_gid(&e->peer_addr, a.ah_attr.grh.dgid.raw);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.min_rnr_timer = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
				       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN |
				       IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT |
				       IBV_QP_SQ_PSN), 0);
	return qp;
}

/* The forged peer sends an XRC SEND packet (an RC opcode) for srqn and
 * waits for the ACK of its PSN. */
static void held_send_syn(struct fp_env *e, struct ibv_qp *qp, uint8_t rc_op,
			  uint32_t psn, uint32_t srqn, const uint8_t *pay,
			  uint32_t len, uint8_t syn)
{
	struct ur_hdr_fields f;
	uint64_t end = now_ms() + 3000;
	uint8_t b[4096];
	struct ur_pkt pkt;

	memset(&f, 0, sizeof(f));
	f.opcode = ur_op_rc_to_xrc(rc_op);
	f.qpn = qp->qp_num;
	f.psn = psn;
	f.ackreq = true;
	f.pkey = 0xffff;
	f.xrc_srqn = srqn;
	f.pad = ur_pad_len(len);
	fp_forge(e, e->peer, &e->peer_addr, &f, pay, len);
	while (now_ms() < end) {
		if (!fp_recv(e->peer, &pkt, b, sizeof(b), 100))
			continue;
		if (ur_op_xrc_to_rc(pkt.opcode) == UR_OPC_RC_ACK &&
		    pkt.psn == psn) {
			assert_int_equal(ur_aeth_syn(pkt.aeth), syn);
			return;
		}
	}
	fail_msg("no ACK for PSN %u", psn);
}

static void held_send(struct fp_env *e, struct ibv_qp *qp, uint8_t rc_op,
		      uint32_t psn, uint32_t srqn, const uint8_t *pay,
		      uint32_t len)
{
	held_send_syn(e, qp, rc_op, psn, srqn, pay, len,
		      UR_AETH_ACK_UNLIMITED);
}

static void to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
}

static void test_held_wqe_flushed(void **state)
{
	const int *arg = *state;
	int up = arg[1], down = arg[2], st;
	uint8_t pay[1024], lbuf[2048];
	struct ibv_qp *q1, *q2, *q3;
	struct ibv_srq *lsrq;
	struct ibv_xrcd *x;
	struct ibv_mr *lmr;
	struct ibv_cq *lcq;
	struct fp_env e;
	struct ibv_wc wc;
	uint32_t srqn, lsrqn, psn = 100;
	unsigned int r, i, n;
	char go = 1;

	assert_int_equal(read(up, &srqn, 4), 4);
	assert_int_equal(fp_open(&e, 4096, IBV_ACCESS_LOCAL_WRITE), 0);
	x = xrcd_open(e.ctx, 0);
	assert_non_null(x);
	lcq = ibv_create_cq(e.ctx, 16, NULL, NULL, 0);
	assert_non_null(lcq);
	{
		struct ibv_srq_init_attr_ex a = {
			.attr = { .max_wr = 4, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC,
			.pd = e.pd, .xrcd = x, .cq = lcq,
		};
		struct ibv_sge sg;
		struct ibv_recv_wr wr = { .num_sge = 1 }, *bad;

		lsrq = ibv_create_srq_ex(e.ctx, &a);
		assert_non_null(lsrq);
		assert_int_equal(ibv_get_srq_num(lsrq, &lsrqn), 0);
		lmr = ibv_reg_mr(e.pd, lbuf, sizeof(lbuf),
				 IBV_ACCESS_LOCAL_WRITE);
		assert_non_null(lmr);
		sg = (struct ibv_sge){ (uintptr_t)lbuf, sizeof(lbuf),
				       lmr->lkey };
		wr.sg_list = &sg;
		for (i = 0; i < 4; i++) {
			wr.wr_id = 900 + i;
			assert_int_equal(ibv_post_srq_recv(lsrq, &wr, &bad),
					 0);
		}
	}
	for (i = 0; i < sizeof(pay); i++)
		pay[i] = (uint8_t)i;

	/* a first packet for A's SRQ, one for ours: each QP holds a WQE */
	q1 = held_recv_qp(&e, x, psn);
	q2 = held_recv_qp(&e, x, psn);
	held_send(&e, q1, UR_OPC_RC_SEND_FIRST, psn, srqn, pay, sizeof(pay));
	held_send(&e, q2, UR_OPC_RC_SEND_FIRST, psn, lsrqn, pay, sizeof(pay));
	assert_int_equal(ibv_poll_cq(lcq, 1, &wc), 0);
	to_err(q1);
	to_err(q2);
	assert_int_equal(write(down, &go, 1), 1);
	/* ours: on our SRQ's CQ, once */
	assert_true(only_wc(lcq, &wc, 3000));
	assert_int_equal(wc.wr_id, 900);
	assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	/* the same when the QP is moved to RESET, or destroyed */
	for (i = 1; i < 3; i++) {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

		q3 = held_recv_qp(&e, x, psn);
		held_send(&e, q3, UR_OPC_RC_SEND_FIRST, psn, lsrqn, pay,
			  sizeof(pay));
		if (i == 1)
			assert_int_equal(ibv_modify_qp(q3, &a, IBV_QP_STATE),
					 0);
		assert_int_equal(ibv_destroy_qp(q3), 0);
		assert_true(only_wc(lcq, &wc, 3000));
		assert_int_equal(wc.wr_id, 900 + i);
		assert_int_equal(wc.status, IBV_WC_WR_FLUSH_ERR);
	}
	/* the next packet of the message names another SRQ (A's): not
	 * written into the held WQE's buffer through A, but a remote access
	 * error, and the held WQE completes with its error, here */
	memset(lbuf, 0, sizeof(lbuf));
	q3 = held_recv_qp(&e, x, psn);
	held_send(&e, q3, UR_OPC_RC_SEND_FIRST, psn, lsrqn, pay, sizeof(pay));
	held_send_syn(&e, q3, UR_OPC_RC_SEND_LAST, psn + 1, srqn, pay, 16,
		      UR_AETH_NAK_REM_ACC);
	assert_true(only_wc(lcq, &wc, 3000));
	assert_int_equal(wc.wr_id, 903);
	assert_int_equal(wc.status, IBV_WC_LOC_ACCESS_ERR);
	for (i = 0; i < sizeof(lbuf); i++)
		assert_int_equal(lbuf[i], i < sizeof(pay) ? pay[i] : 0);
	assert_int_equal(ibv_destroy_qp(q3), 0);

	/* A's ring goes on, past the slot the flushed WQE had */
	q3 = held_recv_qp(&e, x, psn);
	for (r = 0, n = 0; r < HELD_ROUNDS; r++) {
		assert_int_equal(read(up, &go, 1), 1);
		for (i = 0; i < HELD_DEPTH; i++, n++) {
			uint8_t m[HELD_LEN];
			unsigned int k;

			for (k = 0; k < HELD_LEN; k++)
				m[k] = held_pattern(n, k);
			held_send(&e, q3, UR_OPC_RC_SEND_ONLY, psn++, srqn, m,
				  HELD_LEN);
		}
	}
	assert_int_equal(waitpid(arg[0], &st, 0), arg[0]);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);

	assert_int_equal(ibv_destroy_qp(q3), 0);
	assert_int_equal(ibv_destroy_qp(q2), 0);
	assert_int_equal(ibv_destroy_qp(q1), 0);
	assert_int_equal(ibv_destroy_srq(lsrq), 0);
	assert_int_equal(ibv_dereg_mr(lmr), 0);
	assert_int_equal(ibv_destroy_cq(lcq), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);
	fp_close(&e);
}

/* ---- RDMA WRITE, WRITE with immediate and READ into A's memory ---- */

#define RD_BUF 16384u
#define RD_WRITE_OFF 0u
#define RD_WRITE_LEN 3000u	/* three packets */
#define RD_IMM_OFF 4096u
#define RD_IMM_LEN 1500u
#define RD_READ_OFF 8192u
#define RD_READ_LEN 5000u
#define RD_IMM 0x1234abcdu

struct rd_keys {
	uint32_t srqn, rkey;
	uint64_t base;
};

static uint8_t rd_pattern(unsigned int which, unsigned int i)
{
	return (uint8_t)(which * 29 + i * 11 + 7);
}

/* A for test_rdma_into_owner: an SRQ (the requests name it), a buffer
 * registered for remote writes and reads, a WQE for the WRITE with
 * immediate. Checks every byte B wrote, and that READ's region stayed;
 * then deregisters the buffer, after which B's WRITE must not land. */
static int rdma_owner(int up, int down)
{
	struct ibv_device **l = NULL;
	struct ibv_context *c = NULL;
	struct ibv_pd *p = NULL;
	struct ibv_cq *q = NULL;
	struct ibv_xrcd *x = NULL;
	uint8_t *buf = aligned_alloc(4096, RD_BUF);
	struct ibv_srq *srq = NULL;
	struct ibv_mr *mr = NULL;
	struct rd_keys k;
	struct ibv_wc wc;
	unsigned int i;
	char go;

	/* B's WRITEs and READs find this process's keys through its
	 * same-host ring, which a process starting at the same instant may
	 * remove as a dead one's while it is being created: start once the
	 * others have */
	if (read(down, &go, 1) != 1)
		return 1;
	alarm(30);
	l = ibv_get_device_list(NULL);
	c = l && l[0] ? ibv_open_device(l[0]) : NULL;
	p = c ? ibv_alloc_pd(c) : NULL;
	q = p ? ibv_create_cq(c, 16, NULL, NULL, 0) : NULL;
	x = q ? xrcd_open(c, O_CREAT) : NULL;
	if (x && buf) {
		struct ibv_srq_init_attr_ex a = {
			.attr = { .max_wr = 4, .max_sge = 1 },
			.comp_mask = IBV_SRQ_INIT_ATTR_TYPE |
				     IBV_SRQ_INIT_ATTR_PD |
				     IBV_SRQ_INIT_ATTR_XRCD |
				     IBV_SRQ_INIT_ATTR_CQ,
			.srq_type = IBV_SRQT_XRC,
			.pd = p, .xrcd = x, .cq = q,
		};

		srq = ibv_create_srq_ex(c, &a);
		memset(buf, FILL, RD_BUF);
		for (i = 0; i < RD_READ_LEN; i++)
			buf[RD_READ_OFF + i] = rd_pattern(2, i);
		mr = ibv_reg_mr(p, buf, RD_BUF, IBV_ACCESS_LOCAL_WRITE |
						 IBV_ACCESS_REMOTE_WRITE |
						 IBV_ACCESS_REMOTE_READ);
	}
	if (!srq || !mr || ibv_get_srq_num(srq, &k.srqn))
		return 2;
	{
		struct ibv_recv_wr wr = { .wr_id = 600 }, *bad;

		if (ibv_post_srq_recv(srq, &wr, &bad))
			return 3;
	}
	k.rkey = mr->rkey;
	k.base = (uintptr_t)buf;
	if (write(up, &k, sizeof(k)) != sizeof(k) || read(down, &go, 1) != 1)
		return 4;
	/* the WRITE with immediate consumed the WQE */
	if (!only_wc(q, &wc, 3000))
		return 40;
	if (wc.wr_id != 600 || wc.status != IBV_WC_SUCCESS ||
	    wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    wc.byte_len != RD_IMM_LEN || !(wc.wc_flags & IBV_WC_WITH_IMM) ||
	    wc.imm_data != htonl(RD_IMM))
		return 41;
	for (i = 0; i < RD_BUF; i++) {
		uint8_t want = FILL;

		if (i - RD_WRITE_OFF < RD_WRITE_LEN)
			want = rd_pattern(0, i - RD_WRITE_OFF);
		else if (i - RD_IMM_OFF < RD_IMM_LEN)
			want = rd_pattern(1, i - RD_IMM_OFF);
		else if (i - RD_READ_OFF < RD_READ_LEN)
			want = rd_pattern(2, i - RD_READ_OFF);
		if (buf[i] != want)
			return 42;
	}
	/* deregistered: B's WRITE with the old key is refused, lands nowhere */
	if (ibv_dereg_mr(mr) || write(up, &go, 1) != 1 ||
	    read(down, &go, 1) != 1)
		return 43;
	for (i = 0; i < RD_WRITE_LEN; i++)
		if (buf[RD_WRITE_OFF + i] != rd_pattern(0, i))
			return 44;
	return 0;
}

/* An XRC_SEND and an XRC_RECV QP of B's, connected to each other. */
static void rd_pair(struct ibv_xrcd *x, struct ibv_qp **send,
		    struct ibv_qp **recv)
{
	struct ibv_qp_init_attr_ex ra = {
		.qp_type = IBV_QPT_XRC_RECV,
		.comp_mask = IBV_QP_INIT_ATTR_XRCD,
		.xrcd = x,
	};
	struct ibv_qp_init_attr_ex sa = {
		.qp_type = IBV_QPT_XRC_SEND,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.send_cq = cq,
		.pd = pd,
		.cap = { .max_send_wr = 8, .max_send_sge = 1 },
	};

	*recv = ibv_create_qp_ex(ctx, &ra);
	*send = ibv_create_qp_ex(ctx, &sa);
	assert_non_null(*recv);
	assert_non_null(*send);
	rc_to_rts(*recv, (*send)->qp_num, &gid, &rc_conn_default);
	rc_to_rts(*send, (*recv)->qp_num, &gid, &rc_conn_default);
}

static enum ibv_wc_status rd_post(struct ibv_qp *qp, enum ibv_wr_opcode op,
				  struct ibv_mr *mr, uint8_t *local,
				  uint32_t len, uint32_t srqn, uint32_t rkey,
				  uint64_t raddr, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(RD_IMM),
	}, *bad;

	wr.wr.rdma.rkey = rkey;
	wr.wr.rdma.remote_addr = raddr;
	wr.qp_type.xrc.remote_srqn = srqn;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	return wait_wr(id).status;
}

static void test_rdma_into_owner(void **state)
{
	const int *arg = *state;
	int up = arg[1], down = arg[2], st;
	uint8_t *local = calloc(1, RD_BUF);
	struct ibv_qp *send, *recv;
	struct ibv_xrcd *x;
	struct ibv_mr *mr;
	struct rd_keys k;
	unsigned int i;
	char go = 1;

	assert_non_null(local);
	assert_int_equal(write(down, &go, 1), 1);
	assert_int_equal(read(up, &k, sizeof(k)), sizeof(k));
	x = xrcd_open(ctx, 0);
	assert_non_null(x);
	mr = ibv_reg_mr(pd, local, RD_BUF, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	for (i = 0; i < RD_WRITE_LEN; i++)
		local[i] = rd_pattern(0, i);
	for (i = 0; i < RD_IMM_LEN; i++)
		local[4096 + i] = rd_pattern(1, i);
	rd_pair(x, &send, &recv);
	assert_int_equal(rd_post(send, IBV_WR_RDMA_WRITE, mr, local,
				 RD_WRITE_LEN, k.srqn, k.rkey,
				 k.base + RD_WRITE_OFF, 1), IBV_WC_SUCCESS);
	assert_int_equal(rd_post(send, IBV_WR_RDMA_WRITE_WITH_IMM, mr,
				 local + 4096, RD_IMM_LEN, k.srqn, k.rkey,
				 k.base + RD_IMM_OFF, 2), IBV_WC_SUCCESS);
	assert_int_equal(rd_post(send, IBV_WR_RDMA_READ, mr, local + 8192,
				 RD_READ_LEN, k.srqn, k.rkey,
				 k.base + RD_READ_OFF, 3), IBV_WC_SUCCESS);
	for (i = 0; i < RD_READ_LEN; i++)
		if (local[8192 + i] != rd_pattern(2, i))
			fail_msg("READ byte %u", i);
	assert_int_equal(ibv_destroy_qp(send), 0);
	assert_int_equal(ibv_destroy_qp(recv), 0);

	/* what A's keys do not grant is a remote access error, and writes
	 * nothing (A checks every byte): a wrong key, a range past the MR,
	 * and an atomic, which is not done across processes */
	for (i = 0; i < 3; i++) {
		uint64_t raddr = i == 1 ? k.base + RD_BUF - 8 : k.base;
		enum ibv_wr_opcode op = i == 2 ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					i == 1 ? IBV_WR_RDMA_READ :
						 IBV_WR_RDMA_WRITE;
		struct ibv_sge sge = { (uintptr_t)local + 12288, 64,
				       mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = 10 + i, .sg_list = &sge, .num_sge = 1,
			.opcode = op, .send_flags = IBV_SEND_SIGNALED,
		}, *bad;

		rd_pair(x, &send, &recv);
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			sge.length = 8;
			wr.wr.atomic.rkey = k.rkey;
			wr.wr.atomic.remote_addr = raddr;
			wr.wr.atomic.compare_add = 1;
		} else {
			wr.wr.rdma.rkey = i ? k.rkey : k.rkey ^ 0x100;
			wr.wr.rdma.remote_addr = raddr;
		}
		wr.qp_type.xrc.remote_srqn = k.srqn;
		assert_int_equal(ibv_post_send(send, &wr, &bad), 0);
		assert_int_equal(wait_wr(10 + i).status,
				 IBV_WC_REM_ACCESS_ERR);
		assert_int_equal(ibv_destroy_qp(send), 0);
		assert_int_equal(ibv_destroy_qp(recv), 0);
	}
	assert_int_equal(write(down, &go, 1), 1);
	/* A deregistered its MR: its key no longer opens its memory */
	assert_int_equal(read(up, &go, 1), 1);
	for (i = 0; i < RD_WRITE_LEN; i++)
		local[i] = rd_pattern(3, i);
	rd_pair(x, &send, &recv);
	assert_int_equal(rd_post(send, IBV_WR_RDMA_WRITE, mr, local,
				 RD_WRITE_LEN, k.srqn, k.rkey,
				 k.base + RD_WRITE_OFF, 20), IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_destroy_qp(send), 0);
	assert_int_equal(ibv_destroy_qp(recv), 0);
	assert_int_equal(write(down, &go, 1), 1);
	assert_int_equal(waitpid(arg[0], &st, 0), arg[0]);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_close_xrcd(x), 0);
	free(local);
	nstash = 0;
}

static int rm_one(const char *path, const struct stat *sb, int flag,
		  struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(path);
}

static void test_owner_polls(void **state)
{
	other_process_srq(state);
}

static void test_owner_waits_on_channel(void **state)
{
	other_process_srq(state);
}

/* Forks an owner (before this process opens the device: each process
 * is its own NIC) into arg: pid, its pipe up, its pipe down. */
static int fork_owner(int arg[3], int mode)
{
	int u[2], d[2];
	pid_t pid;

	if (pipe(u) || pipe(d))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (!pid) {
		close(u[0]);
		close(d[1]);
		_exit(mode == 3 ? rdma_owner(u[1], d[0]) :
		      mode == 2 ? held_owner(u[1], d[0]) :
				  owner(u[1], d[0], mode == 1));
	}
	close(u[1]);
	close(d[0]);
	arg[0] = pid;
	arg[1] = u[0];
	arg[2] = d[1];
	return 0;
}

int main(void)
{
	char path[64] = "/tmp/ur-xrcp-XXXXXX";
	int polled[3], waited[3], held[3], rdma[3], st, rc, i;

	if (ptrace_scope() >= 2) {
		printf("skip: ptrace_scope >= 2 refuses process_vm_writev\n");
		return 77;
	}
	snprintf(rundir, sizeof(rundir), "/tmp/ur-xrcp-run-XXXXXX");
	domain_fd = mkstemp(path);
	if (!mkdtemp(rundir) || domain_fd < 0)
		return 1;
	unlink(path);
	setenv("XDG_RUNTIME_DIR", rundir, 1);
	if (fork_owner(polled, 0) || fork_owner(waited, 1) ||
	    fork_owner(held, 2) || fork_owner(rdma, 3))
		return 1;
	{
		const struct CMUnitTest tests[] = {
			cmocka_unit_test_prestate(test_owner_polls, polled),
			/* the owner waits on a completion channel: its waker
			 * thread moves the completions and fires the event */
			cmocka_unit_test_prestate(
				test_owner_waits_on_channel, waited),
			cmocka_unit_test_prestate(test_held_wqe_flushed,
						  held),
			cmocka_unit_test_prestate(test_rdma_into_owner, rdma),
		};

		rc = cmocka_run_group_tests(tests, setup, teardown);
	}
	for (i = 0; i < 4; i++) {
		pid_t pid = i == 3 ? rdma[0] : i == 2 ? held[0] :
			    i ? waited[0] : polled[0];

		if (waitpid(pid, &st, WNOHANG) == 0) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
		}
	}
	nftw(rundir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}
