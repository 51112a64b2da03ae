/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ECN and CNPs (engine/ecn.c) on the fake link: packets leave ECT(0);
 * without CE marks no CNP ever leaves; CE-marked requests make the
 * responder send CNPs to the requester's QP, no more than one per
 * UR_CNP_INTERVAL_NS, which the requester counts and every byte still
 * arrives; a CNP shrinks the requester's window and is never answered
 * (no ACK, no NAK), never counted as a drop, and one for a QP that is not
 * there is ignored. A send that found the local socket full (the link's
 * EAGAIN/ENOBUFS wait) cuts the window as a CNP does, counted apart.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_env.h"
#include "util/time.h"

#define T_TMO 5000
#define T_LEN 65536		/* 64 packets at MTU 1024 */

struct t_pair {
	struct fe_side a, b;
};

static int setup(void **state)
{
	struct t_pair *p = calloc(1, sizeof(*p));

	fe_set_fault(NULL);
	fe_set_filter(NULL);
	fe_set_rx_tos(0, UR_IP_ECN_ECT0);
	fe_set_rx_tos(1, UR_IP_ECN_ECT0);
	fe_side_open(&p->a, 0, IBV_QPT_RC);
	fe_side_open(&p->b, 1, IBV_QPT_RC);
	fe_connect(p->a.qp, p->b.qp, 0x10, 0x20, 14, 7, 7);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct t_pair *p = *state;

	fe_set_filter(NULL);
	fe_set_rx_tos(0, 0);
	fe_set_rx_tos(1, 0);
	fe_side_close(&p->a);
	fe_side_close(&p->b);
	free(p);
	return 0;
}

static uint64_t dstat(int dev, enum ur_stat s)
{
	return atomic_load(&fe_dev(dev)->nic->cnt.stat[s]);
}

static uint64_t drops(int dev)
{
	uint64_t n = 0;

	for (unsigned int r = 1; r < UR_DROP__MAX; r++)
		n += atomic_load(&fe_dev(dev)->nic->cnt.drop[r]);
	return n;
}

static uint64_t qstat(struct ur_qp *qp, enum ur_qstat s)
{
	return atomic_load(&qp->xp->qcnt.req[s]) +
	       atomic_load(&qp->xp->qcnt.rx[s]);
}

/* What the fake network carried: CNPs to device 0 (their destination
 * QPNs) and every packet to device 1. */
static unsigned int cnps_to_a, pkts_to_b;
static uint32_t cnp_qpn;

static bool watch(int to, const uint8_t *d, uint32_t len)
{
	struct ur_pkt pkt;

	if (to == 1)
		__atomic_fetch_add(&pkts_to_b, 1, __ATOMIC_RELAXED);
	if (to == 0 && fe_pkt_opcode(d) == UR_OPC_CNP &&
	    ur_pkt_parse(d, len, &pkt) == UR_DROP_NONE) {
		__atomic_store_n(&cnp_qpn, pkt.qpn, __ATOMIC_RELAXED);
		__atomic_fetch_add(&cnps_to_a, 1, __ATOMIC_RELAXED);
	}
	return false;
}

static void fill(uint8_t *p, size_t n, unsigned int seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

/* A WRITEs T_LEN bytes to B and waits for its completion. */
static void write_once(struct t_pair *p, unsigned int seed)
{
	struct ur_send_wqe *w;
	struct ibv_wc wc;

	fill(p->a.buf, T_LEN, seed);
	memset(p->b.buf, 0, T_LEN);
	w = fe_sq_next(p->a.qp);
	w->wr_id = seed;
	w->opcode = IBV_WR_RDMA_WRITE;
	w->send_flags = IBV_SEND_SIGNALED;
	w->num_sge = 1;
	w->length = T_LEN;
	w->sge[0].addr = (uintptr_t)p->a.buf;
	w->sge[0].length = T_LEN;
	w->sge[0].lkey = p->a.mr->ibmr.lkey;
	w->rdma.remote_addr = (uintptr_t)p->b.buf;
	w->rdma.rkey = p->b.mr->ibmr.rkey;
	fe_sq_post(p->a.qp);
	assert_int_equal(fe_cq_poll(&p->a.scq, &wc, T_TMO), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, seed);
	assert_memory_equal(p->b.buf, p->a.buf, T_LEN);
}

/* Waits until device dev's counter s reaches n (the receive path runs in
 * the NIC threads). */
static void wait_stat(int dev, enum ur_stat s, uint64_t n)
{
	for (int i = 0; i < 20000 && dstat(dev, s) < n; i++)
		usleep(50);
	assert_true(dstat(dev, s) >= n);
}

static void test_ce_makes_cnps(void **state)
{
	struct t_pair *p = *state;
	uint64_t t0, ns, cnps, marked;
	uint64_t sent0 = dstat(1, UR_STAT_NP_CNP_SENT);
	uint64_t marked0 = dstat(1, UR_STAT_NP_ECN_MARKED);
	uint64_t handled0 = dstat(0, UR_STAT_RP_CNP_HANDLED);
	uint64_t ignored0 = dstat(0, UR_STAT_RP_CNP_IGNORED);
	uint64_t drops0 = drops(0), asent0 = dstat(0, UR_STAT_NP_CNP_SENT);

	/* unmarked: ECT(0) out, not a single CNP */
	cnps_to_a = pkts_to_b = 0;
	fe_set_filter(watch);
	write_once(p, 1);
	assert_int_equal(fe_last_tx_tos(0) & UR_IP_ECN_MASK, UR_IP_ECN_ECT0);
	assert_int_equal(fe_last_tx_tos(1) & UR_IP_ECN_MASK, UR_IP_ECN_ECT0);
	assert_int_equal(dstat(1, UR_STAT_NP_ECN_MARKED), marked0);
	assert_int_equal(dstat(1, UR_STAT_NP_CNP_SENT), sent0);
	assert_int_equal(__atomic_load_n(&cnps_to_a, __ATOMIC_RELAXED), 0);

	/* every request arrives CE-marked */
	fe_set_rx_tos(1, UR_IP_ECN_CE);
	t0 = ur_now_ns();
	write_once(p, 2);
	ns = ur_now_ns() - t0;
	fe_set_rx_tos(1, UR_IP_ECN_ECT0);
	wait_stat(0, UR_STAT_RP_CNP_HANDLED, handled0 + 1);
	cnps = dstat(1, UR_STAT_NP_CNP_SENT) - sent0;
	wait_stat(0, UR_STAT_RP_CNP_HANDLED, handled0 + cnps);
	fe_set_filter(NULL);
	marked = dstat(1, UR_STAT_NP_ECN_MARKED) - marked0;
	fprintf(stderr, "%" PRIu64 " marked, %" PRIu64 " CNPs in %" PRIu64
		" us\n", marked, cnps, ns / 1000);
	assert_true(marked >= T_LEN / 1024);
	assert_true(cnps >= 1);
	/* one per interval at most: the last may leave after t0 + ns */
	assert_true(cnps <= ns / UR_CNP_INTERVAL_NS + 2);
	assert_int_equal(__atomic_load_n(&cnps_to_a, __ATOMIC_RELAXED), cnps);
	assert_int_equal(cnp_qpn, ur_qp_num(p->a.qp));
	/* the requester took every one, as a CNP and not as a drop */
	assert_int_equal(dstat(0, UR_STAT_RP_CNP_HANDLED) - handled0, cnps);
	assert_int_equal(dstat(0, UR_STAT_RP_CNP_IGNORED), ignored0);
	assert_int_equal(drops(0), drops0);
	/* per QP, the same */
	assert_int_equal(qstat(p->b.qp, UR_QSTAT_CNP_SENT), cnps);
	assert_int_equal(qstat(p->b.qp, UR_QSTAT_ECN_MARKED), marked);
	assert_int_equal(qstat(p->a.qp, UR_QSTAT_CNP_HANDLED), cnps);
	/* the marks were on requests only: A sent no CNP */
	assert_int_equal(dstat(0, UR_STAT_NP_CNP_SENT), asent0);
}

/* A CNP from B's address to QP qpn of device 0, as a NIC builds it. */
static void inject_cnp(struct t_pair *p, uint32_t qpn)
{
	struct ur_hdr_fields f = { 0 };
	struct ur_ip_flow flow;
	uint8_t buf[UR_HDR_MAX + UR_ICRC_BYTES];
	int hl;

	f.opcode = UR_OPC_CNP;
	f.becn = true;
	f.pkey = UR_PKEY_DEFAULT;
	f.qpn = qpn;
	hl = ur_hdr_build(buf, sizeof(buf), &f);
	assert_int_equal(hl, 28);
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow,
						  &p->b.dev->nic->addrs[0],
						  &p->a.dev->nic->addrs[0]), 0);
	ur_icrc_store(buf + hl, ur_icrc_compute(&flow, buf, (size_t)hl + 4));
	fe_inject(0, buf, (uint32_t)hl + 4);
}

static uint32_t window(struct ur_qp *qp)
{
	uint32_t w;

	pthread_mutex_lock(&qp->sq_lock);
	w = ur_cc_window(qp->xp);
	pthread_mutex_unlock(&qp->sq_lock);
	return w;
}

static void test_cnp_cuts_never_answered(void **state)
{
	struct t_pair *p = *state;
	uint64_t acks, naks, errs, before_drops, handled0, ignored0, sent0;
	uint32_t w0, w1;

	write_once(p, 3);	/* the window grew past its start */
	w0 = window(p->a.qp);
	assert_true(w0 > UR_CWND_INIT);
	acks = dstat(0, UR_STAT_ACK_SENT);
	naks = dstat(0, UR_STAT_SEQ_NAK_SENT);
	errs = dstat(0, UR_STAT_ERR_NAK_SENT);
	before_drops = drops(0);
	handled0 = dstat(0, UR_STAT_RP_CNP_HANDLED);
	ignored0 = dstat(0, UR_STAT_RP_CNP_IGNORED);
	sent0 = dstat(0, UR_STAT_NP_CNP_SENT);

	pkts_to_b = 0;
	fe_set_filter(watch);
	inject_cnp(p, ur_qp_num(p->a.qp));
	wait_stat(0, UR_STAT_RP_CNP_HANDLED, handled0 + 1);
	w1 = window(p->a.qp);
	assert_int_equal(w1, w0 - w0 / 2);	/* alpha starts at 1: halved */

	/* one for a QP that is not there: ignored, not a drop */
	inject_cnp(p, 0xabcde);
	wait_stat(0, UR_STAT_RP_CNP_IGNORED, ignored0 + 1);
	usleep(20000);
	fe_set_filter(NULL);
	/* nothing answered either */
	assert_int_equal(__atomic_load_n(&pkts_to_b, __ATOMIC_RELAXED), 0);
	assert_int_equal(dstat(0, UR_STAT_ACK_SENT), acks);
	assert_int_equal(dstat(0, UR_STAT_SEQ_NAK_SENT), naks);
	assert_int_equal(dstat(0, UR_STAT_ERR_NAK_SENT), errs);
	assert_int_equal(drops(0), before_drops);
	assert_int_equal(dstat(0, UR_STAT_RP_CNP_HANDLED), handled0 + 1);
	assert_int_equal(dstat(0, UR_STAT_NP_CNP_SENT), sent0);

	/* the connection goes on, the window grows back */
	write_once(p, 4);
	write_once(p, 5);
	assert_true(window(p->a.qp) > w1);
}

static uint32_t ssthresh(struct ur_qp *qp)
{
	uint32_t s;

	pthread_mutex_lock(&qp->sq_lock);
	s = qp->xp->cc.ssthresh;
	pthread_mutex_unlock(&qp->sq_lock);
	return s;
}

/* The link waited out a full socket on every send: the requester's
 * window is cut (ssthresh leaves its start) and the cut counted as local
 * congestion, not as a CNP; every byte still arrives. Without the fault
 * nothing is counted. */
static void test_local_full_cuts(void **state)
{
	struct t_pair *p = *state;
	struct fe_fault f = { .tx_blocked = true };
	uint64_t handled0;

	write_once(p, 6);
	assert_int_equal(dstat(0, UR_STAT_LOCAL_CONGESTION), 0);
	assert_int_equal(ssthresh(p->a.qp), UR_WINDOW_PSNS);
	handled0 = dstat(0, UR_STAT_RP_CNP_HANDLED);
	fe_set_fault(&f);
	write_once(p, 7);
	write_once(p, 8);
	fe_set_fault(NULL);
	assert_true(dstat(0, UR_STAT_LOCAL_CONGESTION) >= 1);
	assert_int_equal(qstat(p->a.qp, UR_QSTAT_LOCAL_CONGESTION),
			 dstat(0, UR_STAT_LOCAL_CONGESTION));
	assert_true(ssthresh(p->a.qp) < UR_WINDOW_PSNS);
	assert_int_equal(dstat(0, UR_STAT_RP_CNP_HANDLED), handled0);
	/* the responder's replies are no requester's: no cut at B */
	assert_int_equal(dstat(1, UR_STAT_LOCAL_CONGESTION), 0);
}

/* The responder's limit alone, on a clock the test sets: CE marks every
 * 10 us make one CNP per UR_CNP_INTERVAL_NS, the first at once. */
static void test_cnp_interval(void **state)
{
	uint64_t last = 0, t0 = 1000000, t;
	unsigned int due = 0;

	(void)state;
	for (t = t0; t <= t0 + 4 * UR_CNP_INTERVAL_NS; t += 10000)
		if (ur_ecn_cnp_due(&last, t)) {
			assert_int_equal((t - t0) % UR_CNP_INTERVAL_NS, 0);
			due++;
		}
	assert_int_equal(due, 5);
	/* a mark just before the interval ends makes none, at its end one */
	assert_false(ur_ecn_cnp_due(&last, last + UR_CNP_INTERVAL_NS - 1));
	assert_true(ur_ecn_cnp_due(&last, last + UR_CNP_INTERVAL_NS));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cnp_interval),
		cmocka_unit_test_setup_teardown(test_ce_makes_cnps, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_cnp_cuts_never_answered,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_local_full_cuts, setup,
						teardown),
	};
	int rc;

	fe_init();
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	fe_fini();
	return rc;
}
