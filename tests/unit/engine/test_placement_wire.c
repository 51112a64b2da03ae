/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * IBA 1.5's ATOMIC WRITE (0x1D) and FLUSH (0x1C) on the wire, both sides,
 * against a peer the test builds packet by packet (forge_peer.h):
 *  - responder: what uroce0 answers (a zero-length READ response ONLY),
 *    what it writes, its NAKs for misuse, and duplicates: a repeated
 *    ATOMIC WRITE is answered again but never executed again, so a WRITE
 *    that changed the location in between stays;
 *  - requester: the packets uroce0 sends (RETH, FETH, payload, AckReq)
 *    and which response completes them (an ACK does not);
 *  - uroce's same-host mark (a WRITE with immediate whose payload was
 *    copied, engine/direct.c) counts only from a ring: from the wire the
 *    packet is dropped as reserved bits are, nothing completes, and the
 *    same PSN is taken afterwards without it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "forge_peer.h"
#include "obj/verbs_abi.h"

#define BUF 8192
#define REPLY_MS 3000

static struct fp_env E;
static uint32_t next_qpn = 0x515150;

struct reply {
	uint8_t opcode;
	uint32_t psn;
	uint32_t paylen;
	int syn;
};

/* The next packet the peer gets (false if none within ms). */
static bool peer_reply(struct reply *r, int ms)
{
	uint8_t b[4096];
	struct ur_pkt pkt;

	if (!fp_recv(E.peer, &pkt, b, sizeof(b), ms))
		return false;
	r->opcode = pkt.opcode;
	r->psn = pkt.psn;
	r->paylen = pkt.paylen;
	r->syn = pkt.aeth ? ur_aeth_syn(pkt.aeth) : -1;
	return true;
}

static void expect_reply(uint8_t opcode, uint32_t psn, int syn)
{
	struct reply r;

	assert_true(peer_reply(&r, REPLY_MS));
	assert_int_equal(r.opcode, opcode);
	assert_int_equal(r.psn, psn);
	assert_int_equal(r.paylen, 0);
	assert_int_equal(r.syn, syn);
}

static struct ibv_qp *qp_new(uint32_t rq_psn, uint64_t send_ops)
{
	return fp_qp_new(&E, next_qpn++, rq_psn, 0x700,
			 IBV_ACCESS_REMOTE_WRITE | UR_ACCESS_FLUSH_GLOBAL |
				 UR_ACCESS_FLUSH_PERSISTENT,
			 send_ops);
}

/* A request with a RETH (the RETH's length may lie). */
static void req_fields(struct ur_hdr_fields *f, struct ibv_qp *qp,
		       uint8_t opcode, uint32_t psn, uint64_t va,
		       uint32_t rkey, uint32_t len)
{
	memset(f, 0, sizeof(*f));
	f->opcode = opcode;
	f->qpn = qp->qp_num;
	f->psn = psn;
	f->ackreq = true;
	f->reth.va = va;
	f->reth.rkey = rkey;
	f->reth.len = len;
}

/* An ATOMIC WRITE or a WRITE of 8 bytes. */
static void send_8(struct ibv_qp *qp, uint8_t opcode, uint32_t psn,
		   uint64_t va, uint32_t len, const char *val)
{
	struct ur_hdr_fields f;

	req_fields(&f, qp, opcode, psn, va, E.mr->rkey, len);
	fp_forge(&E, E.peer, &E.peer_addr, &f, val, 8);
}

static void send_atomic_write(struct ibv_qp *qp, uint32_t psn, uint64_t va,
			      uint32_t len, const char *val)
{
	send_8(qp, UR_OPC_RC_ATOMIC_WRITE, psn, va, len, val);
}

static void send_flush(struct ibv_qp *qp, uint32_t psn, uint32_t rkey,
		       uint8_t sel, uint8_t plt, uint64_t va, uint32_t len)
{
	struct ur_hdr_fields f;

	req_fields(&f, qp, UR_OPC_RC_FLUSH, psn, va, rkey, len);
	f.feth.sel = sel;
	f.feth.plt = plt;
	fp_forge(&E, E.peer, &E.peer_addr, &f, NULL, 0);
}

static void send_write(struct ibv_qp *qp, uint32_t psn, uint64_t va,
		       const char *val)
{
	send_8(qp, UR_OPC_RC_WRITE_ONLY, psn, va, 8, val);
}

/* Executed once, answered twice: the WRITE between them stays. */
static void test_duplicate_atomic_write(void **state)
{
	const uint32_t R = 0x10000;
	struct ibv_qp *qp = qp_new(R, 0);
	uint64_t va = (uintptr_t)E.buf + 64;

	(void)state;
	send_atomic_write(qp, R, va, 8, "AAAAAAAA");
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R, UR_AETH_ACK_UNLIMITED);
	assert_memory_equal(E.buf + 64, "AAAAAAAA", 8);
	send_write(qp, R + 1, va, "BBBBBBBB");
	expect_reply(UR_OPC_RC_ACK, R + 1, UR_AETH_ACK_UNLIMITED);
	assert_memory_equal(E.buf + 64, "BBBBBBBB", 8);
	/* the requester did not see the first answer and sends it again */
	send_atomic_write(qp, R, va, 8, "AAAAAAAA");
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R, UR_AETH_ACK_UNLIMITED);
	assert_memory_equal(E.buf + 64, "BBBBBBBB", 8);
	assert_int_equal(fp_qp_state(qp), IBV_QPS_RTS);
	/* and the QP goes on at the next PSN */
	send_atomic_write(qp, R + 2, va, 8, "CCCCCCCC");
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R + 2, UR_AETH_ACK_UNLIMITED);
	assert_memory_equal(E.buf + 64, "CCCCCCCC", 8);
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

/* FLUSH answered by a zero-length READ response, a duplicate again. */
static void test_flush_and_duplicate(void **state)
{
	const uint32_t R = 0x20000;
	struct ibv_qp *qp = qp_new(R, 0);
	uint64_t va = (uintptr_t)E.buf;

	(void)state;
	send_write(qp, R, va + 128, "DDDDDDDD");
	expect_reply(UR_OPC_RC_ACK, R, UR_AETH_ACK_UNLIMITED);
	send_flush(qp, R + 1, E.mr->rkey, UR_FLUSH_RANGE, UR_FLUSH_GLOBAL,
		   va + 128, 8);
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R + 1, UR_AETH_ACK_UNLIMITED);
	send_flush(qp, R + 1, E.mr->rkey, UR_FLUSH_RANGE, UR_FLUSH_GLOBAL,
		   va + 128, 8);
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R + 1, UR_AETH_ACK_UNLIMITED);
	/* selectivity MR: address and length are not looked at */
	send_flush(qp, R + 2, E.mr->rkey, UR_FLUSH_MR, UR_FLUSH_GLOBAL, 0,
		   0xffff);
	expect_reply(UR_OPC_RC_READ_RESP_ONLY, R + 2, UR_AETH_ACK_UNLIMITED);
	assert_int_equal(fp_qp_state(qp), IBV_QPS_RTS);
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

/* One bad request on a fresh QP: its NAK, and the QP in ERR. */
static void expect_nak(struct ibv_qp *qp, uint32_t psn, int syn)
{
	expect_reply(UR_OPC_RC_ACK, psn, syn);
	assert_int_equal(fp_qp_state(qp), IBV_QPS_ERR);
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

static void test_responder_errors(void **state)
{
	uint64_t va = (uintptr_t)E.buf;
	struct ibv_mr *plain;
	struct ibv_qp *qp;

	(void)state;
	memset(E.buf + 256, 0x5a, 16);
	/* misaligned: invalid request, nothing written */
	qp = qp_new(0x30000, 0);
	send_atomic_write(qp, 0x30000, va + 260, 8, "EEEEEEEE");
	expect_nak(qp, 0x30000, UR_AETH_NAK_INV_REQ);
	assert_int_equal(E.buf[260], 0x5a);
	/* a DMA length other than 8 */
	qp = qp_new(0x31000, 0);
	send_atomic_write(qp, 0x31000, va + 256, 16, "EEEEEEEE");
	expect_nak(qp, 0x31000, UR_AETH_NAK_INV_REQ);
	assert_int_equal(E.buf[256], 0x5a);
	/* past the MR */
	qp = qp_new(0x32000, 0);
	send_atomic_write(qp, 0x32000, va + BUF, 8, "EEEEEEEE");
	expect_nak(qp, 0x32000, UR_AETH_NAK_REM_ACC);
	/* FLUSH: reserved selectivity, no placement type */
	qp = qp_new(0x33000, 0);
	send_flush(qp, 0x33000, E.mr->rkey, 2, UR_FLUSH_GLOBAL, va, 8);
	expect_nak(qp, 0x33000, UR_AETH_NAK_INV_REQ);
	qp = qp_new(0x34000, 0);
	send_flush(qp, 0x34000, E.mr->rkey, UR_FLUSH_MR, 0, va, 8);
	expect_nak(qp, 0x34000, UR_AETH_NAK_INV_REQ);
	/* persistence: no MR grants it */
	qp = qp_new(0x35000, 0);
	send_flush(qp, 0x35000, E.mr->rkey, UR_FLUSH_MR, UR_FLUSH_PERSISTENT,
		   va, 8);
	expect_nak(qp, 0x35000, UR_AETH_NAK_REM_ACC);
	/* an MR without FLUSH_GLOBAL, and a range past the flushable MR */
	plain = ibv_reg_mr(E.pd, E.buf, BUF, IBV_ACCESS_LOCAL_WRITE |
						     IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(plain);
	qp = qp_new(0x36000, 0);
	send_flush(qp, 0x36000, plain->rkey, UR_FLUSH_MR, UR_FLUSH_GLOBAL, va,
		   8);
	expect_nak(qp, 0x36000, UR_AETH_NAK_REM_ACC);
	assert_int_equal(ibv_dereg_mr(plain), 0);
	qp = qp_new(0x37000, 0);
	send_flush(qp, 0x37000, E.mr->rkey, UR_FLUSH_RANGE, UR_FLUSH_GLOBAL,
		   va + BUF - 4, 8);
	expect_nak(qp, 0x37000, UR_AETH_NAK_REM_ACC);
	/* a QP without flush access, and one without remote write */
	qp = fp_qp_new(&E, next_qpn++, 0x38000, 0x700,
		       IBV_ACCESS_REMOTE_WRITE, 0);
	send_flush(qp, 0x38000, E.mr->rkey, UR_FLUSH_MR, UR_FLUSH_GLOBAL, va,
		   8);
	expect_nak(qp, 0x38000, UR_AETH_NAK_INV_REQ);
	qp = fp_qp_new(&E, next_qpn++, 0x39000, 0x700, UR_ACCESS_FLUSH_GLOBAL,
		       0);
	send_atomic_write(qp, 0x39000, va + 256, 8, "EEEEEEEE");
	expect_nak(qp, 0x39000, UR_AETH_NAK_INV_REQ);
	assert_int_equal(E.buf[256], 0x5a);
}

static void send_response(struct ibv_qp *qp, uint8_t opcode, uint32_t psn)
{
	struct ur_hdr_fields f;

	memset(&f, 0, sizeof(f));
	f.opcode = opcode;
	f.qpn = qp->qp_num;
	f.psn = psn;
	f.aeth.syn = UR_AETH_ACK_UNLIMITED;
	fp_forge(&E, E.peer, &E.peer_addr, &f, NULL, 0);
}

static void expect_cqe(uint64_t wr_id, int opcode)
{
	struct ibv_wc wc;
	uint64_t end = (uint64_t)time(NULL) + 3;
	int n;

	while (!(n = ibv_poll_cq(E.cq, 1, &wc)) && (uint64_t)time(NULL) < end)
		usleep(100);
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, wr_id);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, opcode);
}

/* What uroce0 sends, and that only its READ response completes it. */
static void test_requester(void **state)
{
	struct ibv_qp *qp = qp_new(0x40000, IBV_QP_EX_WITH_ATOMIC_WRITE |
						    UR_QP_EX_WITH_FLUSH);
	struct ibv_qp_ex *qpx = ibv_qp_to_qp_ex(qp);
	ur_wr_flush_fn wr_flush = *(ur_wr_flush_fn *)(qpx + 1);
	struct ur_pkt pkt;
	uint8_t b[4096];
	struct ibv_wc wc;

	(void)state;
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_atomic_write(qpx, 0x1234, 0xabc000, "FFFFFFFF");
	assert_int_equal(ibv_wr_complete(qpx), 0);
	assert_true(fp_recv(E.peer, &pkt, b, sizeof(b), REPLY_MS));
	assert_int_equal(pkt.opcode, UR_OPC_RC_ATOMIC_WRITE);
	assert_int_equal(pkt.psn, 0x700);
	assert_true(pkt.ackreq);
	assert_non_null(pkt.reth);
	assert_int_equal(ur_reth_va(pkt.reth), 0xabc000);
	assert_int_equal(ur_reth_rkey(pkt.reth), 0x1234);
	assert_int_equal(ur_reth_len(pkt.reth), 8);
	assert_int_equal(pkt.paylen, 8);
	assert_memory_equal(pkt.payload, "FFFFFFFF", 8);
	/* a plain ACK at its PSN is not its answer */
	send_response(qp, UR_OPC_RC_ACK, 0x700);
	usleep(100 * 1000);
	assert_int_equal(ibv_poll_cq(E.cq, 1, &wc), 0);
	send_response(qp, UR_OPC_RC_READ_RESP_ONLY, 0x700);
	expect_cqe(1, IBV_WC_ATOMIC_WRITE);
	fp_drain(E.peer);	/* its retransmissions while it waited */

	ibv_wr_start(qpx);
	qpx->wr_id = 2;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	wr_flush(qpx, 0x5678, 0xdef000, 4096, UR_FLUSH_GLOBAL,
		 UR_FLUSH_RANGE);
	assert_int_equal(ibv_wr_complete(qpx), 0);
	assert_true(fp_recv(E.peer, &pkt, b, sizeof(b), REPLY_MS));
	assert_int_equal(pkt.opcode, UR_OPC_RC_FLUSH);
	assert_int_equal(pkt.psn, 0x701);
	assert_true(pkt.ackreq);
	assert_non_null(pkt.feth);
	assert_int_equal(ur_feth_sel(pkt.feth), UR_FLUSH_RANGE);
	assert_int_equal(ur_feth_plt(pkt.feth), UR_FLUSH_GLOBAL);
	assert_int_equal(ur_reth_va(pkt.reth), 0xdef000);
	assert_int_equal(ur_reth_rkey(pkt.reth), 0x5678);
	assert_int_equal(ur_reth_len(pkt.reth), 4096);
	assert_int_equal(pkt.paylen, 0);
	send_response(qp, UR_OPC_RC_READ_RESP_ONLY, 0x701);
	expect_cqe(2, UR_WC_FLUSH);
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

static void test_placed_mark_from_wire(void **state)
{
	const uint32_t R = 0x30000;
	struct ibv_qp *qp = qp_new(R, 0);
	struct ibv_sge sge = { (uintptr_t)E.buf + 4096, 64, E.mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 42, .sg_list = &sge,
				   .num_sge = 1 }, *bad;
	struct ur_hdr_fields f;
	struct ibv_wc wc;
	struct reply r;
	int i, n = 0;

	(void)state;
	fp_drain(E.peer);
	assert_int_equal(ibv_post_recv(qp, &rwr, &bad), 0);
	memset(E.buf, 0, 64);
	req_fields(&f, qp, UR_OPC_RC_WRITE_ONLY_IMM, R, (uintptr_t)E.buf,
		   E.mr->rkey, 64);
	f.imm_be = htonl(5);
	f.placed = true;
	fp_forge(&E, E.peer, &E.peer_addr, &f, NULL, 0);
	assert_false(peer_reply(&r, 300));
	assert_int_equal(ibv_poll_cq(E.cq, 1, &wc), 0);
	assert_int_equal(fp_qp_state(qp), IBV_QPS_RTS);
	/* the real one, at the same PSN */
	req_fields(&f, qp, UR_OPC_RC_WRITE_ONLY_IMM, R, (uintptr_t)E.buf,
		   E.mr->rkey, 8);
	f.imm_be = htonl(6);
	fp_forge(&E, E.peer, &E.peer_addr, &f, "DDDDDDDD", 8);
	expect_reply(UR_OPC_RC_ACK, R, UR_AETH_ACK_UNLIMITED);
	for (i = 0; i < 300 && !n; i++) {
		n = ibv_poll_cq(E.cq, 1, &wc);
		if (!n)
			usleep(1000);
	}
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 42);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	assert_int_equal(wc.byte_len, 8);
	assert_int_equal(ntohl(wc.imm_data), 6);
	assert_memory_equal(E.buf, "DDDDDDDD", 8);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static int setup(void **state)
{
	(void)state;
	return fp_open(&E, BUF,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			       UR_ACCESS_FLUSH_GLOBAL);
}

static int teardown(void **state)
{
	(void)state;
	fp_close(&E);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_duplicate_atomic_write),
		cmocka_unit_test(test_flush_and_duplicate),
		cmocka_unit_test(test_responder_errors),
		cmocka_unit_test(test_requester),
		cmocka_unit_test(test_placed_mark_from_wire),
	};

	srand((unsigned int)(time(NULL) ^ getpid()));
	return cmocka_run_group_tests(tests, setup, teardown);
}
