/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The ICRC on uroce0's receive path, for datagrams of its same-host ring
 * and of its socket. The test plays the remote end of an RC QP (forge
 * peer.h) and, on the peer's IP, opens a link of its own with rings
 * (link/), so that the SENDs it builds (wire/) reach uroce0 through
 * uroce0's ring, with the slot's "no ICRC" flag set or not:
 *  - a ring SEND whose ICRC is present and one payload byte corrupted is
 *    dropped and counted (drop_icrc), and nothing completes;
 *  - a ring SEND flagged as sent without ICRC (its ICRC bytes zero) is
 *    accepted: the receiver skips the check for such slots only;
 *  - a UDP SEND with the same zero ICRC is dropped and counted: a socket's
 *    datagram is always checked;
 *  - uroce0's ACKs towards the peer (UDP) carry correct ICRCs;
 *  - the pcap (UROCE_PCAP) shows every packet with the ICRC it carried on
 *    the wire, and the ring SEND sent without one with its right ICRC.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>

#include "forge_peer.h"
#include "link/link.h"
#include "skip.h"
#include "tw_util.h"
#include "wire/pcap.h"

#define BUF 4096
#define PAY 64

static char stats_path[] = "/tmp/uroce-ringicrc.XXXXXX";
static char pcap_path[] = "/tmp/uroce-ringicrc-pcap.XXXXXX";

static struct fp_env E;
static struct ur_link *L;		/* the peer's rings */
static union ur_sockaddr L_addr;	/* peer IP, the link's own port */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void send_req(struct ur_hdr_fields *f, struct ibv_qp *qp, uint32_t psn)
{
	memset(f, 0, sizeof(*f));
	f->opcode = UR_OPC_RC_SEND_ONLY;
	f->qpn = qp->qp_num;
	f->psn = psn;
	f->ackreq = true;
}

/* A SEND of PAY bytes of fill from src to uroce0, with its ICRC; flip:
 * that payload byte is corrupted after the ICRC was computed; no_icrc:
 * the ICRC bytes are zeroed, as a ring sender leaves them. */
static int build(uint8_t *b, size_t blen, struct ibv_qp *qp, uint32_t psn,
		 const union ur_sockaddr *src, uint8_t fill, int flip,
		 bool no_icrc)
{
	struct ur_hdr_fields f;
	struct ur_ip_flow flow;
	uint8_t pay[PAY];
	int n;

	send_req(&f, qp, psn);
	memset(pay, fill, sizeof(pay));
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, src, &E.me), 0);
	n = tw_seal(b, blen, &f, pay, sizeof(pay), &flow);
	assert_true(n > PAY);
	if (flip >= 0)
		b[n - UR_ICRC_BYTES - PAY + flip] ^= 0x10;
	if (no_icrc)
		memset(b + n - UR_ICRC_BYTES, 0, UR_ICRC_BYTES);
	return n;
}

static void ring_send(const uint8_t *b, int n, bool no_icrc)
{
	struct iovec iov = { .iov_base = (void *)b, .iov_len = (size_t)n };
	struct ur_txd d = { .dst = &E.me, .iov = &iov, .iovcnt = 1,
			    .no_icrc = no_icrc };
	struct ur_link_stats st;
	uint64_t before;

	ur_link_get_stats(L, &st);
	before = st.shm_tx_pkts;
	assert_int_equal(ur_link_send(L, &d, 1), 1);
	ur_link_get_stats(L, &st);
	assert_int_equal(st.shm_tx_pkts, before + 1);	/* by the ring */
}

static void post_recv(struct ibv_qp *qp, uint32_t off)
{
	struct ibv_sge sge = { .addr = (uintptr_t)E.buf + off,
			       .length = PAY, .lkey = E.mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = off, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

/* A completion within ms, or -1. */
static int poll_one(struct ibv_wc *wc, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	int n;

	while (!(n = ibv_poll_cq(E.cq, 1, wc)) && now_ms() < end)
		usleep(200);
	return n == 1 ? 0 : -1;
}

/* The peer's next datagram (uroce0's ACK) within ms: it must be an ACK of
 * psn whose ICRC is the one its IP header gives. false if none came. */
static bool peer_ack(uint32_t psn, int ms)
{
	struct pollfd p = { .fd = E.peer, .events = POLLIN };
	struct ur_ip_flow flow;
	uint8_t b[2048];
	struct ur_pkt pkt;
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recv(E.peer, b, sizeof(b), 0);
	assert_true(n > 0);
	assert_int_equal(ur_pkt_parse(b, (size_t)n, &pkt), UR_DROP_NONE);
	assert_int_equal(pkt.opcode, UR_OPC_RC_ACK);
	assert_int_equal(pkt.psn, psn);
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, &E.me, &E.peer_addr),
			 0);
	assert_int_equal(ur_icrc_check_rx(&flow, b, (size_t)n), UR_DROP_NONE);
	return true;
}

static void test_ring_and_udp(void **state)
{
	const uint32_t R = 0x2a2a2a;
	struct ibv_qp *qp = fp_qp_new(&E, 0x515151, R, 0x100,
				      IBV_ACCESS_LOCAL_WRITE, 0);
	uint8_t b[2048], want[PAY];
	struct ibv_wc wc;
	int n;

	(void)state;
	post_recv(qp, 0);

	/* ring, ICRC present, a corrupted byte: dropped, no ACK */
	n = build(b, sizeof(b), qp, R, &L_addr, 0xa1, 5, false);
	ring_send(b, n, false);
	assert_int_equal(poll_one(&wc, 300), -1);
	assert_false(peer_ack(R, 100));

	/* ring, sent without ICRC: accepted as it is */
	n = build(b, sizeof(b), qp, R, &L_addr, 0xb2, -1, true);
	ring_send(b, n, true);
	assert_int_equal(poll_one(&wc, 3000), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.byte_len, PAY);
	memset(want, 0xb2, sizeof(want));
	assert_memory_equal(E.buf, want, PAY);
	assert_true(peer_ack(R, 3000));

	/* a socket's datagram with the same zero ICRC: dropped */
	post_recv(qp, PAY);
	n = build(b, sizeof(b), qp, R + 1, &E.peer_addr, 0xc3, -1, true);
	assert_int_equal(sendto(E.peer, b, (size_t)n, 0, &E.me.sa,
				sizeof(E.me.in)), n);
	assert_int_equal(poll_one(&wc, 300), -1);
	assert_false(peer_ack(R + 1, 100));
	/* and with its ICRC: accepted */
	n = build(b, sizeof(b), qp, R + 1, &E.peer_addr, 0xc3, -1, false);
	assert_int_equal(sendto(E.peer, b, (size_t)n, 0, &E.me.sa,
				sizeof(E.me.in)), n);
	assert_int_equal(poll_one(&wc, 3000), 0);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	memset(want, 0xc3, sizeof(want));
	assert_memory_equal(E.buf + PAY, want, PAY);
	assert_true(peer_ack(R + 1, 3000));
	ibv_destroy_qp(qp);
}

static uint64_t stat_of(const char *name)
{
	char line[256];
	size_t nl = strlen(name);
	uint64_t v = UINT64_MAX;
	FILE *f = fopen(stats_path, "r");

	if (!f)
		return UINT64_MAX;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, nl) && line[nl] == ' ')
			v = strtoull(line + nl + 1, NULL, 10);
	fclose(f);
	return v;
}

struct cap {
	unsigned int sends[256];	/* SENDs by payload byte */
	unsigned int sends_ok[256];	/* of which the ICRC verifies */
	unsigned int acks, acks_ok;
};

static int cap_cb(const uint8_t *frame, size_t caplen, int linktype,
		  void *arg)
{
	struct cap *c = arg;
	struct ur_ip_flow flow;
	const uint8_t *pl;
	struct ur_pkt pkt;
	size_t plen;
	bool ok;

	if (ur_frame_parse(frame, caplen, linktype, &flow, &pl, &plen) ||
	    ur_pkt_parse(pl, plen, &pkt))
		return 0;
	ok = ur_icrc_verify(&flow, pl, plen) == UR_DROP_NONE;
	if (pkt.opcode == UR_OPC_RC_SEND_ONLY && pkt.paylen == PAY) {
		/* the corrupted one's first byte is intact */
		c->sends[pkt.payload[0]]++;
		c->sends_ok[pkt.payload[0]] += ok;
	} else if (pkt.opcode == UR_OPC_RC_ACK) {
		c->acks++;
		c->acks_ok += ok;
	}
	return 0;
}

/* After the device closed: the drops, and the capture. */
static void test_counters_and_pcap(void **state)
{
	struct cap c;

	(void)state;
	/* the corrupted ring SEND and the UDP one without ICRC */
	assert_int_equal(stat_of("drop_icrc"), 2);
	memset(&c, 0, sizeof(c));
	assert_int_equal(ur_pcap_foreach(pcap_path, cap_cb, &c), 0);
	/* as they were on the wire: the corrupted one fails its check */
	assert_int_equal(c.sends[0xa1], 1);
	assert_int_equal(c.sends_ok[0xa1], 0);
	/* the ring SEND sent without ICRC: recorded with its right one */
	assert_int_equal(c.sends[0xb2], 1);
	assert_int_equal(c.sends_ok[0xb2], 1);
	/* the UDP one with a zero ICRC, then the good one */
	assert_int_equal(c.sends[0xc3], 2);
	assert_int_equal(c.sends_ok[0xc3], 1);
	assert_int_equal(c.acks, 2);
	assert_int_equal(c.acks_ok, 2);
}

static int setup(void **state)
{
	struct ur_link_config cfg;

	(void)state;
	if (fp_open(&E, BUF, IBV_ACCESS_LOCAL_WRITE))
		return -1;
	memset(&cfg, 0, sizeof(cfg));
	cfg.bind = E.peer_addr;
	cfg.bind.in.sin_port = 0;
	cfg.same_host = 1;
	cfg.seal = ur_icrc_seal;
	if (ur_link_open(&cfg, &L) || ur_link_local_addr(L, 0, &L_addr))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	ur_link_close(L);
	fp_close(&E);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_and_udp),
	};
	const struct CMUnitTest after[] = {
		cmocka_unit_test(test_counters_and_pcap),
	};
	const char *lk = getenv("UROCE_LINK");
	int fd = mkstemp(stats_path), pfd = mkstemp(pcap_path), rc;

	if (fd < 0 || pfd < 0)
		return 1;
	close(fd);
	close(pfd);
	if (lk && *lk && strcmp(lk, "rings") && strcmp(lk, "auto")) {
		printf("skipped: UROCE_LINK=%s: no same-host rings\n", lk);
		unlink(stats_path);
		unlink(pcap_path);
		return UR_SKIP_RC;
	}
	setenv("UROCE_STATS", stats_path, 1);
	setenv("UROCE_PCAP", pcap_path, 1);
	srand((unsigned int)(time(NULL) ^ getpid()));
	rc = cmocka_run_group_tests(tests, setup, teardown);
	rc |= cmocka_run_group_tests(after, NULL, NULL);
	unlink(stats_path);
	unlink(pcap_path);
	return rc;
}
