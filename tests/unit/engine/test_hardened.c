/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hostile peers (issue 8, item 4). The test plays the remote end of an RC
 * QP of uroce0 with UDP sockets on a loopback address of its own: "peer"
 * on port 4791, as a RoCE NIC sends, and "forger" on the same IP with
 * another port, as a third process that forges the peer's address. It
 * builds every packet itself (wire/), so each one is exactly what a
 * hostile sender could put on the wire.
 *
 * Run twice by ctest: with UROCE_HARDENED=1, the forger's WRITE is dropped
 * (counted as wrong_peer_port) once the peer's port is bound, a bad-rkey
 * WRITE is dropped (counted as hardened) and the QP stays RTS, and an error
 * NAK does not fail the requester's WQE; in the default mode the same
 * packets are accepted as the IBA says (the forged WRITE lands, the bad
 * rkey is NAKed and the QP goes to ERR, the NAK fails the WQE), which is
 * what the hardened mode exists to change.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "forge_peer.h"

#define BUF 8192

static bool hardened;
static char stats_path[] = "/tmp/uroce-hardened.XXXXXX";

static struct fp_env E;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void write_req(struct ur_hdr_fields *f, struct ibv_qp *qp,
		      uint32_t psn, uint32_t off, uint32_t rkey,
		      uint32_t len)
{
	memset(f, 0, sizeof(*f));
	f->opcode = UR_OPC_RC_WRITE_ONLY;
	f->qpn = qp->qp_num;
	f->psn = psn;
	f->ackreq = true;
	f->reth.va = (uintptr_t)E.buf + off;
	f->reth.rkey = rkey;
	f->reth.len = len;
}

/* The next packet the peer gets: its AETH syndrome, or -1 if none comes
 * (within 3 s when one is expected, psn != NULL; 300 ms otherwise). */
static int peer_reply(uint32_t *psn)
{
	uint8_t b[4096];
	struct ur_pkt pkt;

	if (!fp_recv(E.peer, &pkt, b, sizeof(b), psn ? 3000 : 300) ||
	    !pkt.aeth)
		return -1;
	if (psn)
		*psn = pkt.psn;
	return ur_aeth_syn(pkt.aeth);
}

/* The forger shares the peer's IP; only its UDP port differs. */
static void test_forged_port_and_bad_rkey(void **state)
{
	const uint32_t R = 0x345678;
	struct ur_hdr_fields f;
	struct ibv_qp *qp = fp_qp_new(&E, 0x424242, R, 0x100,
				      IBV_ACCESS_REMOTE_WRITE, 0);
	uint8_t pay[64];
	uint32_t psn = R, apsn;

	(void)state;
	/* the peer's first in-sequence WRITE: executed, ACKed, port bound */
	memset(pay, 0x11, sizeof(pay));
	write_req(&f, qp, psn, 0, E.mr->rkey, sizeof(pay));
	fp_forge(&E, E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
	assert_int_equal(apsn, psn);
	assert_int_equal(E.buf[0], 0x11);
	psn++;

	/* the forger: same IP, other port, the right PSN and rkey */
	memset(pay, 0x22, sizeof(pay));
	write_req(&f, qp, psn, 64, E.mr->rkey, sizeof(pay));
	fp_forge(&E, E.forger, &E.forger_addr, &f, pay, sizeof(pay));
	if (hardened) {
		assert_int_equal(peer_reply(NULL), -1);
		assert_int_equal(E.buf[64], 0);
	} else {
		/* the IBA's RoCEv2 accepts it: the attack the binding stops */
		assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
		assert_int_equal(E.buf[64], 0x22);
		psn++;
	}

	/* the peer goes on at its PSN */
	memset(pay, 0x33, sizeof(pay));
	write_req(&f, qp, psn, 128, E.mr->rkey, sizeof(pay));
	fp_forge(&E, E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
	assert_int_equal(apsn, psn);
	assert_int_equal(E.buf[128], 0x33);
	psn++;

	/* a bad rkey from the peer's own address */
	write_req(&f, qp, psn, 192, E.mr->rkey ^ 0x5a5a5a00u, sizeof(pay));
	fp_forge(&E, E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	if (hardened) {
		assert_int_equal(peer_reply(NULL), -1);
		assert_int_equal(fp_qp_state(qp), IBV_QPS_RTS);
		/* and the connection still works at that PSN */
		memset(pay, 0x44, sizeof(pay));
		write_req(&f, qp, psn, 192, E.mr->rkey, sizeof(pay));
		fp_forge(&E, E.peer, &E.peer_addr, &f, pay, sizeof(pay));
		assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
		assert_int_equal(apsn, psn);
		assert_int_equal(E.buf[192], 0x44);
	} else {
		assert_int_equal(peer_reply(&apsn), UR_AETH_NAK_REM_ACC);
		assert_int_equal(apsn, psn);
		assert_int_equal(fp_qp_state(qp), IBV_QPS_ERR);
	}
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

/* An error NAK from the peer's address: in hardened mode the WQE is not
 * failed by it (the requester retransmits and completes on a real ACK). */
static void test_error_nak(void **state)
{
	struct ibv_qp *qp = fp_qp_new(&E, 0x434343, 0x10, 0x200,
				      IBV_ACCESS_REMOTE_WRITE, 0);
	struct ibv_sge sge = { (uintptr_t)E.buf, 32, E.mr->lkey };
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ur_hdr_fields f;
	struct ibv_wc wc;
	uint8_t b[4096];
	struct ur_pkt pkt;
	uint64_t end;
	int n = 0;

	(void)state;
	wr.wr_id = 9;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.rdma.remote_addr = 0x1000;
	wr.wr.rdma.rkey = 0x1234;
	assert_int_equal(ibv_post_send(qp, &wr, &bad), 0);
	assert_true(fp_recv(E.peer, &pkt, b, sizeof(b), 1000));
	assert_int_equal(pkt.psn, 0x200);
	memset(&f, 0, sizeof(f));
	f.opcode = UR_OPC_RC_ACK;
	f.qpn = qp->qp_num;
	f.psn = 0x200;
	f.aeth.syn = UR_AETH_NAK_REM_ACC;
	fp_forge(&E, E.peer, &E.peer_addr, &f, NULL, 0);
	if (hardened) {
		/* dropped: the WRITE comes again after the timeout */
		assert_true(fp_recv(E.peer, &pkt, b, sizeof(b), 2000));
		assert_int_equal(pkt.psn, 0x200);
		f.aeth.syn = UR_AETH_ACK_UNLIMITED;
		fp_forge(&E, E.peer, &E.peer_addr, &f, NULL, 0);
	}
	end = now_ms() + 3000;
	while (!(n = ibv_poll_cq(E.cq, 1, &wc)) && now_ms() < end)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, hardened ? IBV_WC_SUCCESS :
					       IBV_WC_REM_ACCESS_ERR);
	ibv_destroy_qp(qp);
	fp_drain(E.peer);
}

static uint64_t stat_of(const char *name)
{
	char line[256];
	size_t nl = strlen(name);
	uint64_t v = 0;
	FILE *f = fopen(stats_path, "r");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, nl) && line[nl] == ' ')
			v = strtoull(line + nl + 1, NULL, 10);
	fclose(f);
	return v;
}

static int setup(void **state)
{
	(void)state;
	return fp_open(&E, BUF,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
}

static int teardown(void **state)
{
	(void)state;
	fp_close(&E);
	return 0;
}

/* After the device closed: what was dropped, by reason. */
static void test_counters(void **state)
{
	(void)state;
	if (hardened) {
		assert_int_equal(stat_of("drop_wrong_peer_port"), 1);
		/* the bad-rkey WRITE and the error NAK */
		assert_int_equal(stat_of("drop_hardened"), 2);
	} else {
		assert_int_equal(stat_of("drop_wrong_peer_port"), 0);
		assert_int_equal(stat_of("drop_hardened"), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_port_and_bad_rkey),
		cmocka_unit_test(test_error_nak),
	};
	const struct CMUnitTest after[] = {
		cmocka_unit_test(test_counters),
	};
	const char *h = getenv("UROCE_HARDENED");
	int fd = mkstemp(stats_path), rc;

	if (fd < 0)
		return 1;
	close(fd);
	setenv("UROCE_STATS", stats_path, 1);
	srand((unsigned int)(time(NULL) ^ getpid()));
	hardened = h && *h && strcmp(h, "0");
	rc = cmocka_run_group_tests(tests, setup, teardown);
	rc |= cmocka_run_group_tests(after, NULL, NULL);
	unlink(stats_path);
	return rc;
}
