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
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "tw_util.h"
#include "wire/wire.h"

#define BUF 8192
#define FORGER_PORT_TRIES 16

static bool hardened;
static char stats_path[] = "/tmp/uroce-hardened.XXXXXX";

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ur_sockaddr me;		/* uroce0's IP:4791 */
	union ur_sockaddr peer_addr;	/* 127.x.y.z:4791 */
	union ur_sockaddr forger_addr;	/* 127.x.y.z:other */
	int peer, forger;
};

static struct env E;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int udp_bound(union ur_sockaddr *a)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, &a->sa, sizeof(a->in))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Sends one packet built from f and payload, with its ICRC, from fd. */
static void forge(int fd, const union ur_sockaddr *src,
		  struct ur_hdr_fields *f, const void *pay, uint32_t paylen)
{
	uint8_t b[2048];
	struct ur_ip_flow flow;
	int n;

	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, src, &E.me), 0);
	n = tw_seal(b, sizeof(b), f, pay, paylen, &flow);
	assert_true(n > 0);
	assert_int_equal(sendto(fd, b, (size_t)n, 0, &E.me.sa,
				sizeof(E.me.in)), n);
}

/* Receives one packet at fd within ms and parses it; false if none. */
static bool recv_pkt(int fd, struct ur_pkt *pkt, uint8_t *b, size_t len,
		     int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recv(fd, b, len, 0);
	return n > 0 && ur_pkt_parse(b, (size_t)n, pkt) == UR_DROP_NONE;
}

static void drain(int fd)
{
	uint8_t b[4096];
	struct ur_pkt pkt;

	while (recv_pkt(fd, &pkt, b, sizeof(b), 20))
		;
}

static struct ibv_qp *qp_new(uint32_t dqpn, uint32_t rq_psn, uint32_t sq_psn)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr a;
	struct ibv_qp *qp;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = E.cq;
	ia.recv_cq = E.cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	qp = ibv_create_qp(E.pd, &ia);
	assert_non_null(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE |
					       IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT |
					       IBV_QP_ACCESS_FLAGS),
			 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn;
	a.ah_attr.is_global = 1;
	ur_sockaddr_to_gid(&E.peer_addr, a.ah_attr.grh.dgid.raw);
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	a.max_dest_rd_atomic = 1;
	a.min_rnr_timer = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV |
					       IBV_QP_PATH_MTU |
					       IBV_QP_DEST_QPN |
					       IBV_QP_RQ_PSN |
					       IBV_QP_MAX_DEST_RD_ATOMIC |
					       IBV_QP_MIN_RNR_TIMER),
			 0);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 14;		/* 67 ms */
	a.retry_cnt = 3;
	a.rnr_retry = 3;
	a.max_rd_atomic = 1;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					       IBV_QP_TIMEOUT |
					       IBV_QP_RETRY_CNT |
					       IBV_QP_RNR_RETRY |
					       IBV_QP_MAX_QP_RD_ATOMIC),
			 0);
	return qp;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
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

	if (!recv_pkt(E.peer, &pkt, b, sizeof(b), psn ? 3000 : 300) ||
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
	struct ibv_qp *qp = qp_new(0x424242, R, 0x100);
	uint8_t pay[64];
	uint32_t psn = R, apsn;

	(void)state;
	/* the peer's first in-sequence WRITE: executed, ACKed, port bound */
	memset(pay, 0x11, sizeof(pay));
	write_req(&f, qp, psn, 0, E.mr->rkey, sizeof(pay));
	forge(E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
	assert_int_equal(apsn, psn);
	assert_int_equal(E.buf[0], 0x11);
	psn++;

	/* the forger: same IP, other port, the right PSN and rkey */
	memset(pay, 0x22, sizeof(pay));
	write_req(&f, qp, psn, 64, E.mr->rkey, sizeof(pay));
	forge(E.forger, &E.forger_addr, &f, pay, sizeof(pay));
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
	forge(E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
	assert_int_equal(apsn, psn);
	assert_int_equal(E.buf[128], 0x33);
	psn++;

	/* a bad rkey from the peer's own address */
	write_req(&f, qp, psn, 192, E.mr->rkey ^ 0x5a5a5a00u, sizeof(pay));
	forge(E.peer, &E.peer_addr, &f, pay, sizeof(pay));
	if (hardened) {
		assert_int_equal(peer_reply(NULL), -1);
		assert_int_equal(qp_state(qp), IBV_QPS_RTS);
		/* and the connection still works at that PSN */
		memset(pay, 0x44, sizeof(pay));
		write_req(&f, qp, psn, 192, E.mr->rkey, sizeof(pay));
		forge(E.peer, &E.peer_addr, &f, pay, sizeof(pay));
		assert_int_equal(peer_reply(&apsn), UR_AETH_ACK_UNLIMITED);
		assert_int_equal(apsn, psn);
		assert_int_equal(E.buf[192], 0x44);
	} else {
		assert_int_equal(peer_reply(&apsn), UR_AETH_NAK_REM_ACC);
		assert_int_equal(apsn, psn);
		assert_int_equal(qp_state(qp), IBV_QPS_ERR);
	}
	ibv_destroy_qp(qp);
	drain(E.peer);
}

/* An error NAK from the peer's address: in hardened mode the WQE is not
 * failed by it (the requester retransmits and completes on a real ACK). */
static void test_error_nak(void **state)
{
	struct ibv_qp *qp = qp_new(0x434343, 0x10, 0x200);
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
	assert_true(recv_pkt(E.peer, &pkt, b, sizeof(b), 1000));
	assert_int_equal(pkt.psn, 0x200);
	memset(&f, 0, sizeof(f));
	f.opcode = UR_OPC_RC_ACK;
	f.qpn = qp->qp_num;
	f.psn = 0x200;
	f.aeth.syn = UR_AETH_NAK_REM_ACC;
	forge(E.peer, &E.peer_addr, &f, NULL, 0);
	if (hardened) {
		/* dropped: the WRITE comes again after the timeout */
		assert_true(recv_pkt(E.peer, &pkt, b, sizeof(b), 2000));
		assert_int_equal(pkt.psn, 0x200);
		f.aeth.syn = UR_AETH_ACK_UNLIMITED;
		forge(E.peer, &E.peer_addr, &f, NULL, 0);
	}
	end = now_ms() + 3000;
	while (!(n = ibv_poll_cq(E.cq, 1, &wc)) && now_ms() < end)
		;
	assert_int_equal(n, 1);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, hardened ? IBV_WC_SUCCESS :
					       IBV_WC_REM_ACCESS_ERR);
	ibv_destroy_qp(qp);
	drain(E.peer);
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
	struct ibv_device **list;
	union ibv_gid gid;
	int n, i;

	(void)state;
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		return -1;
	E.ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!E.ctx || ibv_query_gid(E.ctx, 1, 0, &gid))
		return -1;
	ur_gid_to_sockaddr(gid.raw, UR_ROCEV2_PORT, &E.me);
	E.pd = ibv_alloc_pd(E.ctx);
	E.cq = ibv_create_cq(E.ctx, 16, NULL, NULL, 0);
	E.buf = calloc(1, BUF);
	if (!E.pd || !E.cq || !E.buf)
		return -1;
	E.mr = ibv_reg_mr(E.pd, E.buf, BUF,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!E.mr)
		return -1;
	/* a loopback address of our own for the peer and the forger */
	for (i = 0; i < FORGER_PORT_TRIES; i++) {
		uint32_t a = 0x7f000000u | (200u << 16) |
			     ((uint32_t)rand() & 0xffffu);

		memset(&E.peer_addr, 0, sizeof(E.peer_addr));
		E.peer_addr.in.sin_family = AF_INET;
		E.peer_addr.in.sin_addr.s_addr = htonl(a);
		E.peer_addr.in.sin_port = htons(UR_ROCEV2_PORT);
		E.forger_addr = E.peer_addr;
		E.forger_addr.in.sin_port = htons(40000 + (rand() & 0x3fff));
		E.peer = udp_bound(&E.peer_addr);
		E.forger = udp_bound(&E.forger_addr);
		if (E.peer >= 0 && E.forger >= 0)
			return 0;
		if (E.peer >= 0)
			close(E.peer);
		if (E.forger >= 0)
			close(E.forger);
	}
	return -1;
}

static int teardown(void **state)
{
	(void)state;
	ibv_dereg_mr(E.mr);
	ibv_destroy_cq(E.cq);
	ibv_dealloc_pd(E.pd);
	ibv_close_device(E.ctx);	/* writes UROCE_STATS */
	close(E.peer);
	close(E.forger);
	free(E.buf);
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
