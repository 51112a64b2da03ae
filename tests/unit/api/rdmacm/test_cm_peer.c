/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce's CM (the QP1 agent and the state machine of librdmacm) against a
 * scripted peer: the test is the other CM, a UDP socket on a loopback
 * address of its own at port 4791 that builds every MAD and RoCEv2 packet
 * itself (cm/, wire/), so it can lose, repeat, reorder and break them:
 *  - passive side (our listener, the script connects): a REQ seen again
 *    before rdma_accept gets an MRA, after it the REP again; the REP is
 *    retransmitted while no RTU comes; RTU before accept, a second RTU
 *    and a second DREQ change nothing (a DREQ is answered again); a REJ
 *    from the active side while the application holds the request gives
 *    REJECTED on that id; an active side that never sends the RTU gives
 *    UNREACHABLE within the CM timeout, with a REJ (timeout) to it;
 *    rdma_reject sends its reason and private data; rdma_disconnect in
 *    each state (REQ_RCVD: EINVAL; REP_SENT: a DREQ; DREQ_SENT and
 *    TIMEWAIT: nothing more), and a late RTU establishes nothing;
 *  - active side (our rdma_connect, the script listens, published in the
 *    loopback rendezvous): a lost REQ is sent again with the same IDs; an
 *    MRA stops the retransmissions; a REP seen again gets the RTU again; a
 *    REJ carries its reason and private data to REJECTED; a REP for an
 *    unknown connection gets a REJ; rdma_disconnect and rdma_destroy_id
 *    while the REQ is out send a REJ; a DREQ never answered is resent
 *    (within the peer QP's retry budget, also after rdma_destroy_id),
 *    then DISCONNECTED comes anyway;
 *  - malformed MADs (short, wrong class or version or method, unknown
 *    attribute, a REQ with a bad rdma_cm header or transport) raise no
 *    event and the listener still works;
 *  - an XRC REQ gives an XRC_RECV id whose REP is the kernel CM's
 *    (target QP in the EE context field, QPN 0, SRQ set);
 *  - a flood of thousands of REQs (distinct connections) and malformed
 *    MADs, in a child process whose UROCE_STATS this test reads: no more
 *    CONNECT_REQUESTs than the backlog, the rest dropped and counted, the
 *    process's memory stays bounded, and the listener accepts a real
 *    connection afterwards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#include "cm/mad.h"
#include "ta_cm.h"
#include "tw_util.h"
#include "util/iba.h"
#include "util/rundir.h"
#include "util/time.h"
#include "wire/wire.h"

/* what a loaded 2-core host may take to deliver an event: a bound on a
 * hang, not a speed */
#define EV_MS 15000
#define QUIET_MS 300
#define FLOOD_REQS 3000
#define FLOOD_BAD 2000
#define FLOOD_BACKLOG 8
#define FLOOD_BURST 32
#ifdef __SANITIZE_THREAD__
/* ThreadSanitizer's shadow and allocator multiply what the same objects
 * cost (5-10x, its documentation says): 4.5 MB for the bounded flood here */
#define FLOOD_RSS_GROWTH_KB (8 * 4096)
#else
#define FLOOD_RSS_GROWTH_KB 4096
#endif

/* the scripted CM: its socket, its address (= GID), and uroce0's QP1 */
static int peer_fd = -1;
static union ur_sockaddr peer_addr, dev_addr;
static uint8_t peer_gid[16];
static struct rdma_event_channel *ch;
static uint16_t next_port;
static uint32_t peer_psn;

static uint16_t new_port(void)
{
	return next_port++;
}

/* A socket on 127.x.y.z:4791 that no other process holds. */
static int peer_open(void)
{
	int i, fd;

	for (i = 0; i < 64; i++) {
		uint32_t r = (uint32_t)random();

		memset(&peer_addr, 0, sizeof(peer_addr));
		peer_addr.in.sin_family = AF_INET;
		peer_addr.in.sin_port = htons(UR_ROCEV2_PORT);
		peer_addr.in.sin_addr.s_addr =
			htonl(0x7F000000u | (r & 0xFFFF00u) | 0x20u);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -1;
		if (!bind(fd, &peer_addr.sa, sizeof(peer_addr.in))) {
			ur_sockaddr_to_gid(&peer_addr, peer_gid);
			return fd;
		}
		close(fd);
	}
	return -1;
}

/* uroce0's address, where its QP1 listens. */
static void dev_find(void)
{
	struct ibv_context **ctxs = rdma_get_devices(NULL);
	union ibv_gid gid;

	assert_non_null(ctxs);
	assert_non_null(ctxs[0]);
	assert_int_equal(ibv_query_gid(ctxs[0], 1, 0, &gid), 0);
	ur_gid_to_sockaddr(gid.raw, UR_ROCEV2_PORT, &dev_addr);
	rdma_free_devices(ctxs);
}

/* Sends raw MAD bytes (len of them, 256 normally) to uroce0's QP1. */
static void send_raw(const uint8_t *mad, uint32_t len)
{
	struct ur_hdr_fields f = { 0 };
	struct ur_ip_flow flow;
	uint8_t b[512];
	int n;

	f.opcode = UR_OPC_UD_SEND_ONLY;
	f.qpn = UR_QPN_GSI;
	f.psn = peer_psn++ & UR_PSN_MASK;
	f.deth.qkey = UR_GSI_QKEY;
	f.deth.sqp = UR_QPN_GSI;
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, &peer_addr,
						  &dev_addr), 0);
	n = tw_seal(b, sizeof(b), &f, mad, len, &flow);
	assert_true(n > 0);
	assert_int_equal(sendto(peer_fd, b, (size_t)n, 0, &dev_addr.sa,
				sizeof(dev_addr.in)), n);
}

static void send_msg(const struct ur_cm_msg *m)
{
	uint8_t mad[UR_MAD_SIZE];

	assert_int_equal(ur_cm_encode(m, mad), 0);
	send_raw(mad, UR_MAD_SIZE);
}

/* Next MAD to the scripted CM within ms, decoded: true, or false if none. */
static bool recv_msg(struct ur_cm_msg *m, int ms)
{
	struct pollfd p = { .fd = peer_fd, .events = POLLIN };
	uint8_t b[1024];
	struct ur_pkt pkt;
	ssize_t n;

	for (;;) {
		if (poll(&p, 1, ms) != 1)
			return false;
		n = recv(peer_fd, b, sizeof(b), 0);
		if (n <= 0 || ur_pkt_parse(b, (size_t)n, &pkt) != UR_DROP_NONE)
			continue;
		if (pkt.qpn != UR_QPN_GSI || pkt.paylen != UR_MAD_SIZE)
			continue;
		assert_int_equal(ur_cm_decode(pkt.payload, pkt.paylen, m), 0);
		return true;
	}
}

static void expect_msg(struct ur_cm_msg *m, uint16_t attr, int ms)
{
	if (!recv_msg(m, ms))
		fail_msg("no %s within %d ms", ur_cm_attr_str(attr), ms);
	if (m->hdr.attr_id != attr)
		fail_msg("got %s, wanted %s", ur_cm_attr_str(m->hdr.attr_id),
			 ur_cm_attr_str(attr));
}

static void expect_no_msg(int ms)
{
	struct ur_cm_msg m;

	if (recv_msg(&m, ms))
		fail_msg("unexpected %s", ur_cm_attr_str(m.hdr.attr_id));
}

static struct rdma_cm_event *expect_ev(enum rdma_cm_event_type t)
{
	return ta_event(ch, t, EV_MS);
}

static void expect_no_ev(int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, ms) == 1 && !rdma_get_cm_event(ch, &ev))
		fail_msg("unexpected %s", rdma_event_str(ev->event));
}

/* ---------------------------------------------------------------- */
/* The scripted active side                                           */

/* A REQ as rdma_cm sends it, from the scripted CM to 127.0.0.1:port. */
static void req_build(struct ur_cm_msg *m, uint16_t port, uint32_t comm_id,
		      uint64_t tid)
{
	struct ur_cm_req *r = &m->req;
	struct ur_cma_hdr h = { .ip_version = 4, .src_port = 4242 };

	memset(m, 0, sizeof(*m));
	ur_cm_hdr_init(&m->hdr, UR_CM_ATTR_REQ, tid);
	r->local_comm_id = comm_id;
	r->service_id = ur_cm_service_id(RDMA_PS_TCP, port);
	r->local_qpn = 0x1234;
	r->responder_resources = 1;
	r->initiator_depth = 1;
	r->remote_cm_response_timeout = 18;
	r->local_cm_response_timeout = 18;
	r->starting_psn = 0x111;
	r->retry_count = 7;
	r->rnr_retry_count = 7;
	r->max_cm_retries = 6;
	r->pkey = 0xFFFF;
	r->path_mtu = IBV_MTU_1024;
	memcpy(r->primary.local_gid, peer_gid, 16);
	ur_sockaddr_to_gid(&dev_addr, r->primary.remote_gid);
	r->primary.hop_limit = 64;
	r->primary.local_ack_timeout = 14;
	memcpy(h.src_addr + 12, &peer_addr.in.sin_addr, 4);
	h.dst_addr[12] = 127;
	h.dst_addr[15] = 1;
	ur_cma_hdr_encode(&h, r->private_data);
}

/* A message of attr that answers (local, remote) on the scripted side. */
static void reply_build(struct ur_cm_msg *m, uint16_t attr, uint64_t tid,
			uint32_t local, uint32_t remote)
{
	memset(m, 0, sizeof(*m));
	ur_cm_hdr_init(&m->hdr, attr, tid);
	/* every CM reply starts with the two communication IDs */
	m->rtu.local_comm_id = local;
	m->rtu.remote_comm_id = remote;
}

/* Listener on 127.0.0.1:port; a scripted REQ; the CONNECT_REQUEST's id. */
static struct rdma_cm_id *passive_start(uint16_t port, struct rdma_cm_id **l,
					uint32_t comm_id, struct ur_cm_msg *req)
{
	struct sockaddr_in a = ta_lo(port);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	assert_int_equal(rdma_create_id(ch, l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(*l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(*l, 4), 0);
	req_build(req, port, comm_id, 0x7000 + comm_id);
	send_msg(req);
	ev = expect_ev(RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_ptr_equal(ev->listen_id, *l);
	rdma_ack_cm_event(ev);
	return c;
}

static void make_qp(struct rdma_cm_id *id)
{
	assert_int_equal(ta_rc_qp(id), 0);
}

static void test_passive_dups_and_order(void **state)
{
	struct rdma_cm_id *l, *c;
	struct ur_cm_msg req, m, rep, rep2;
	struct rdma_cm_event *ev;
	uint32_t ours;

	c = passive_start(new_port(), &l, 0xA1, &req);
	/* the REQ again while the application holds it: an MRA, no event */
	send_msg(&req);
	expect_msg(&m, UR_CM_ATTR_MRA, EV_MS);
	assert_int_equal(m.mra.remote_comm_id, 0xA1);
	assert_int_equal(m.mra.msg_mraed, UR_CM_MSG_REQ);
	ours = m.mra.local_comm_id;
	/* an RTU before the REP was sent changes nothing */
	reply_build(&m, UR_CM_ATTR_RTU, req.hdr.tid, 0xA1, ours);
	send_msg(&m);
	expect_no_ev(QUIET_MS);
	make_qp(c);
	assert_int_equal(rdma_accept(c, NULL), 0);
	expect_msg(&rep, UR_CM_ATTR_REP, EV_MS);
	assert_int_equal(rep.rep.local_comm_id, ours);
	assert_int_equal(rep.rep.remote_comm_id, 0xA1);
	/* the REQ again after accept: the same REP again */
	send_msg(&req);
	expect_msg(&rep2, UR_CM_ATTR_REP, EV_MS);
	assert_int_equal(rep2.rep.starting_psn, rep.rep.starting_psn);
	assert_int_equal(rep2.rep.local_qpn, rep.rep.local_qpn);
	/* RTU: ESTABLISHED once, a second RTU is dropped */
	reply_build(&m, UR_CM_ATTR_RTU, req.hdr.tid, 0xA1, ours);
	send_msg(&m);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ESTABLISHED));
	send_msg(&m);
	expect_no_ev(QUIET_MS);
	/* DREQ: DREP and DISCONNECTED; the DREQ again: a DREP, no event */
	reply_build(&m, UR_CM_ATTR_DREQ, 0x99, 0xA1, ours);
	m.dreq.remote_qpn = rep.rep.local_qpn;
	send_msg(&m);
	expect_msg(&rep2, UR_CM_ATTR_DREP, EV_MS);
	assert_int_equal(rep2.dreq.local_comm_id, ours);
	ev = expect_ev(RDMA_CM_EVENT_DISCONNECTED);
	assert_ptr_equal(ev->id, c);
	rdma_ack_cm_event(ev);
	send_msg(&m);
	expect_msg(&rep2, UR_CM_ATTR_DREP, EV_MS);
	expect_no_ev(QUIET_MS);
	assert_int_equal(rdma_disconnect(c), 0);	/* already done */
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	expect_no_msg(QUIET_MS);	/* nothing left to say */
}

/*
 * Regression: an active side that gave up (REJ "timeout") while the
 * application still held its CONNECT_REQUEST left the passive id in
 * REQ_RCVD for good: the REJ was dropped as unmatched, and the
 * application learnt nothing until its accept had run out of REP retries.
 * Fixed with this test (recv.c: a REJ is taken in REQ_RCVD too).
 */
static void test_regress_rej_while_request_held(void **state)
{
	struct rdma_cm_id *l, *c;
	struct ur_cm_msg req, m;
	struct rdma_cm_event *ev;
	uint32_t ours;

	c = passive_start(new_port(), &l, 0xA2, &req);
	send_msg(&req);		/* learn our comm ID from the MRA */
	expect_msg(&m, UR_CM_ATTR_MRA, EV_MS);
	ours = m.mra.local_comm_id;
	reply_build(&m, UR_CM_ATTR_REJ, req.hdr.tid, 0xA2, ours);
	m.rej.msg_rejected = UR_CM_MSG_REQ;
	m.rej.reason = UR_CM_REJ_TIMEOUT;
	send_msg(&m);
	ev = expect_ev(RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(ev->id, c);
	assert_int_equal(ev->status, UR_CM_REJ_TIMEOUT);
	rdma_ack_cm_event(ev);
	make_qp(c);
	errno = 0;
	assert_int_equal(rdma_accept(c, NULL), -1);
	assert_int_equal(errno, EINVAL);
	expect_no_msg(QUIET_MS);	/* no REP to a peer that gave up */
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/*
 * An XRC initiator's REQ (IBA annex A14: transport 3, extended transport
 * 1, no responder resources, retry counts or SRQ) gives the listener an
 * XRC_RECV id, whose QP rdma_create_qp puts in the device's XRC domain;
 * the REP names that QP in the EE context field with QPN 0, SRQ set and
 * no initiator depth, as the kernel's CM writes it; the RTU establishes
 * the connection with the initiator's QPN as the target's destination.
 * Before XRC was known the REQ was refused (REJ 5).
 */
static void test_passive_xrc(void **state)
{
	uint16_t port = new_port();
	struct sockaddr_in a = ta_lo(port);
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_XRC_RECV };
	struct ibv_qp_attr qattr;
	struct ibv_qp_init_attr ia;
	struct rdma_cm_id *l, *c;
	struct rdma_cm_event *ev;
	struct ur_cm_msg req, m, r;

	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_IB), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(l, 4), 0);
	req_build(&req, port, 0xB1, 0x7B1);
	req.req.service_id = ur_cm_service_id(RDMA_PS_IB, port);
	req.req.transport = 3;
	req.req.ext_transport = 1;
	req.req.responder_resources = 0;
	req.req.retry_count = 0;
	req.req.rnr_retry_count = 0;
	send_msg(&req);
	ev = expect_ev(RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	assert_int_equal(c->qp_type, IBV_QPT_XRC_RECV);
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_create_qp(c, NULL, &qa), 0);
	assert_int_equal(rdma_accept(c, NULL), 0);
	expect_msg(&m, UR_CM_ATTR_REP, EV_MS);
	assert_int_equal(m.rep.local_qpn, 0);
	assert_int_equal(m.rep.local_eecn, c->qp->qp_num);
	assert_true(m.rep.srq);
	assert_int_equal(m.rep.initiator_depth, 0);
	assert_false(m.rep.flow_control);
	reply_build(&r, UR_CM_ATTR_RTU, req.hdr.tid, 0xB1,
		    m.rep.local_comm_id);
	send_msg(&r);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(ibv_query_qp(c->qp, &qattr, IBV_QP_STATE |
				      IBV_QP_DEST_QPN, &ia), 0);
	assert_int_equal(qattr.qp_state, IBV_QPS_RTS);
	assert_int_equal(qattr.dest_qp_num, 0x1234);
	/* the DREQ names the initiator's QP */
	assert_int_equal(rdma_disconnect(c), 0);
	expect_msg(&m, UR_CM_ATTR_DREQ, EV_MS);
	assert_int_equal(m.dreq.remote_qpn, 0x1234);
	reply_build(&r, UR_CM_ATTR_DREP, m.hdr.tid, 0xB1, m.dreq.local_comm_id);
	send_msg(&r);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* rdma_disconnect on the passive side in each state it can be in. */
static void test_passive_disconnect_each_state(void **state)
{
	struct rdma_cm_id *l, *c;
	struct ur_cm_msg req, m, dreq;
	uint32_t ours;

	c = passive_start(new_port(), &l, 0xA9, &req);
	/* REQ_RCVD: nothing to disconnect yet */
	errno = 0;
	assert_int_equal(rdma_disconnect(c), -1);
	assert_int_equal(errno, EINVAL);
	expect_no_msg(QUIET_MS);
	make_qp(c);
	assert_int_equal(rdma_accept(c, NULL), 0);
	expect_msg(&m, UR_CM_ATTR_REP, EV_MS);
	ours = m.rep.local_comm_id;
	/* REP_SENT (no RTU yet): a DREQ, resent until answered */
	assert_int_equal(rdma_disconnect(c), 0);
	expect_msg(&dreq, UR_CM_ATTR_DREQ, EV_MS);
	assert_int_equal(dreq.dreq.local_comm_id, ours);
	assert_int_equal(dreq.dreq.remote_comm_id, 0xA9);
	/* DREQ_SENT: again changes nothing */
	assert_int_equal(rdma_disconnect(c), 0);
	reply_build(&m, UR_CM_ATTR_DREP, dreq.hdr.tid, 0xA9, ours);
	send_msg(&m);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_DISCONNECTED));
	/* TIMEWAIT: done already */
	assert_int_equal(rdma_disconnect(c), 0);
	expect_no_ev(QUIET_MS);
	/* the RTU that comes late establishes nothing */
	reply_build(&m, UR_CM_ATTR_RTU, req.hdr.tid, 0xA9, ours);
	send_msg(&m);
	expect_no_ev(QUIET_MS);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	expect_no_msg(1500);		/* no DREQ after the DREP */
}

/* The REP is resent while no RTU comes; then UNREACHABLE and a REJ. */
static void test_passive_peer_vanishes(void **state)
{
	struct rdma_cm_id *l, *c;
	struct ur_cm_msg req, m;
	struct rdma_cm_event *ev;
	struct timespec t0, t1;
	int reps = 0;

	c = passive_start(new_port(), &l, 0xA3, &req);
	make_qp(c);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(rdma_accept(c, NULL), 0);
	while (recv_msg(&m, 2500) && m.hdr.attr_id == UR_CM_ATTR_REP)
		reps++;
	/* 1 + UR_CM_MAX_RETRIES REPs, then the REJ (timeout) */
	assert_int_equal(reps, 7);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_REJ);
	assert_int_equal(m.rej.reason, UR_CM_REJ_TIMEOUT);
	ev = expect_ev(RDMA_CM_EVENT_UNREACHABLE);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	assert_ptr_equal(ev->id, c);
	assert_int_equal(ev->status, -ETIMEDOUT);
	rdma_ack_cm_event(ev);
	assert_true(t1.tv_sec - t0.tv_sec >= 6 && t1.tv_sec - t0.tv_sec <= 12);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

static void test_malformed_mads(void **state)
{
	uint16_t port = new_port();
	struct rdma_cm_id *l, *c;
	struct rdma_cm_event *ev;
	struct ur_cm_msg req, m;
	uint8_t mad[UR_MAD_SIZE];

	c = passive_start(port, &l, 0xA4, &req);
	assert_int_equal(rdma_reject(c, "nope", 5), 0);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.reason, UR_CM_REJ_CONSUMER_DEFINED);
	assert_int_equal(m.rej.msg_rejected, UR_CM_MSG_REQ);
	assert_memory_equal(m.rej.private_data, "nope", 5);
	assert_int_equal(rdma_destroy_id(c), 0);

	req_build(&req, port, 0xA5, 0x8000);
	assert_int_equal(ur_cm_encode(&req, mad), 0);
	send_raw(mad, 100);			/* short */
	mad[0] = 2;				/* base version */
	send_raw(mad, UR_MAD_SIZE);
	mad[0] = 1;
	mad[1] = 0x81;				/* class */
	send_raw(mad, UR_MAD_SIZE);
	mad[1] = UR_MAD_CLASS_CM;
	mad[2] = 1;				/* class version */
	send_raw(mad, UR_MAD_SIZE);
	mad[2] = UR_MAD_CM_CLASS_VERSION;
	mad[3] = 0x01;				/* method Get */
	send_raw(mad, UR_MAD_SIZE);
	mad[3] = UR_MAD_METHOD_SEND;
	mad[17] = 0x7F;				/* attribute */
	send_raw(mad, UR_MAD_SIZE);
	/* a REQ whose rdma_cm header has an unknown version: no listener
	 * can be named, REJ invalid service ID */
	req.req.private_data[0] = 0x77;
	send_msg(&req);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.reason, UR_CM_REJ_INVALID_SERVICE_ID);
	/* unknown service ID space: REJ invalid service, no event */
	req_build(&req, port, 0xA6, 0x8001);
	req.req.service_id |= 1ULL << 40;
	send_msg(&req);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.reason, UR_CM_REJ_INVALID_SERVICE_ID);
	/* an extended transport that is not XRC: REJ unsupported request */
	req_build(&req, port, 0xA7, 0x8002);
	req.req.transport = 3;
	req.req.ext_transport = 2;
	send_msg(&req);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.reason, UR_CM_REJ_UNSUPPORTED_REQ);
	expect_no_ev(QUIET_MS);
	/* and the listener still takes a good REQ */
	req_build(&req, port, 0xA8, 0x8003);
	send_msg(&req);
	ev = expect_ev(RDMA_CM_EVENT_CONNECT_REQUEST);
	c = ev->id;
	rdma_ack_cm_event(ev);
	assert_int_equal(rdma_destroy_id(l), 0);
	expect_no_msg(QUIET_MS);	/* the request is the application's */
	assert_int_equal(rdma_destroy_id(c), 0);	/* which rejects it */
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.remote_comm_id, 0xA8);
}

/* ---------------------------------------------------------------- */
/* The scripted passive side                                          */

/* Publishes the scripted CM as the listener of 127.0.0.1:port, as a
 * uroce process does (docs/design.md, "Addresses and the loopback
 * rendezvous"), so that our rdma_connect sends its REQ there. */
static void publish(uint16_t port, char *path, size_t len)
{
	char root[512], gid[INET6_ADDRSTRLEN];
	FILE *f;

	assert_int_equal(ur_rundir_root(root, sizeof(root)), 0);
	snprintf(path, len, "%s/cm", root);
	mkdir(path, 0700);
	snprintf(path, len, "%s/cm/%04x-%u-127.0.0.1", root, RDMA_PS_TCP,
		 port);
	inet_ntop(AF_INET6, peer_gid, gid, sizeof(gid));
	f = fopen(path, "w");
	assert_non_null(f);
	fprintf(f, "%ld %s\n", (long)getpid(), gid);
	fclose(f);
}

/* rdma_connect to the scripted listener; its REQ. */
static struct rdma_cm_id *active_start(uint16_t port, struct ur_cm_msg *req,
				       const struct rdma_conn_param *cp)
{
	struct sockaddr_in a = ta_lo(port);
	struct rdma_cm_id *c;
	char path[700];

	publish(port, path, sizeof(path));
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&a,
					   2000), 0);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(c, 2000), 0);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(c);
	assert_int_equal(rdma_connect(c, (struct rdma_conn_param *)cp), 0);
	expect_msg(req, UR_CM_ATTR_REQ, EV_MS);
	unlink(path);
	assert_int_equal(req->req.service_id,
			 ur_cm_service_id(RDMA_PS_TCP, port));
	return c;
}

static void rep_build(struct ur_cm_msg *m, const struct ur_cm_msg *req,
		      uint32_t ours)
{
	reply_build(m, UR_CM_ATTR_REP, req->hdr.tid, ours,
		    req->req.local_comm_id);
	m->rep.local_qpn = 0x4321;
	m->rep.starting_psn = 0x222;
	m->rep.responder_resources = 1;
	m->rep.initiator_depth = 1;
	m->rep.rnr_retry_count = 7;
	m->rep.target_ack_delay = 10;
}

static void test_active_loss_mra_dups(void **state)
{
	struct ur_cm_msg req, again, m, rtu;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	c = active_start(new_port(), &req, NULL);
	/* the REQ is "lost": it comes again, the same connection */
	expect_msg(&again, UR_CM_ATTR_REQ, 2500);
	assert_int_equal(again.req.local_comm_id, req.req.local_comm_id);
	assert_int_equal(again.req.starting_psn, req.req.starting_psn);
	assert_true(again.hdr.tid == req.hdr.tid);
	/* an MRA: no more REQs while the service timeout runs */
	reply_build(&m, UR_CM_ATTR_MRA, req.hdr.tid, 0xB1,
		    req.req.local_comm_id);
	m.mra.msg_mraed = UR_CM_MSG_REQ;
	m.mra.service_timeout = 20;		/* 4.3 s */
	send_msg(&m);
	expect_no_msg(1500);
	/* the REP: RTU and ESTABLISHED; the REP again: the RTU again */
	rep_build(&m, &req, 0xB1);
	send_msg(&m);
	expect_msg(&rtu, UR_CM_ATTR_RTU, EV_MS);
	assert_int_equal(rtu.rtu.remote_comm_id, 0xB1);
	ev = expect_ev(RDMA_CM_EVENT_ESTABLISHED);
	assert_ptr_equal(ev->id, c);
	rdma_ack_cm_event(ev);
	send_msg(&m);
	expect_msg(&rtu, UR_CM_ATTR_RTU, EV_MS);
	expect_no_ev(QUIET_MS);
	/* a REP for a connection nobody has: a REJ, invalid comm ID */
	rep_build(&m, &req, 0xB2);
	m.rep.remote_comm_id ^= 0x5A5A5A5A;
	send_msg(&m);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.reason, UR_CM_REJ_INVALID_COMM_ID);
	/* our disconnect: DREQ, resent until the DREP */
	assert_int_equal(rdma_disconnect(c), 0);
	expect_msg(&m, UR_CM_ATTR_DREQ, EV_MS);
	expect_msg(&again, UR_CM_ATTR_DREQ, 2500);
	assert_int_equal(again.dreq.local_comm_id, m.dreq.local_comm_id);
	reply_build(&again, UR_CM_ATTR_DREP, m.hdr.tid, 0xB1,
		    m.dreq.local_comm_id);
	send_msg(&again);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_DISCONNECTED));
	expect_no_msg(1500);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
}

/* A peer that vanishes after the RTU: our DREQ is resent, then the id is
 * DISCONNECTED anyway (never a hang). */
static void test_active_peer_vanishes_at_disconnect(void **state)
{
	struct ur_cm_msg req, m;
	struct rdma_cm_id *c;
	int dreqs = 0;

	c = active_start(new_port(), &req, NULL);
	rep_build(&m, &req, 0xD1);
	send_msg(&m);
	expect_msg(&m, UR_CM_ATTR_RTU, EV_MS);
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(rdma_disconnect(c), 0);
	while (recv_msg(&m, 2500) && m.hdr.attr_id == UR_CM_ATTR_DREQ)
		dreqs++;
	assert_int_equal(dreqs, 7);	/* 1 + UR_CM_MAX_RETRIES */
	rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	expect_no_msg(QUIET_MS);
}

/*
 * Regression: a DREQ was resent only every 1.07 s, while the peer's QP,
 * whose last requests our QP (in ERR since the disconnect) no longer
 * ACKs, fails with RETRY_EXC after retry_count + 1 ACK timeouts (0.54 s
 * at rdma_cm's default): one lost DREQ cost the peer its completions
 * (rping under loss: "cq completion failed status 12"). Three DREQs must
 * come within that budget, from the id and, after rdma_destroy_id, from
 * what lingers of it; the DREP ends them.
 */
static void test_regress_dreq_within_peer_retry_budget(void **state)
{
	for (int destroy = 0; destroy < 2; destroy++) {
		struct ur_cm_msg req, m, drep;
		struct rdma_cm_id *c;
		uint64_t budget, first = 0;
		int dreqs = 0;

		c = active_start(new_port(), &req, NULL);
		budget = ur_iba_timeout_ns(req.req.primary.local_ack_timeout) *
			 (req.req.retry_count + 1u);
		assert_true(req.req.primary.local_ack_timeout > 0);
		rep_build(&m, &req, 0xE1 + destroy);
		send_msg(&m);
		expect_msg(&m, UR_CM_ATTR_RTU, EV_MS);
		rdma_ack_cm_event(expect_ev(RDMA_CM_EVENT_ESTABLISHED));
		assert_int_equal(rdma_disconnect(c), 0);
		if (destroy) {
			rdma_destroy_qp(c);
			assert_int_equal(rdma_destroy_id(c), 0);
		}
		while (dreqs < 3 && recv_msg(&m, 2500)) {
			assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_DREQ);
			if (!dreqs++)
				first = ur_now_ns();
		}
		assert_int_equal(dreqs, 3);
		assert_true(ur_now_ns() - first < budget);
		reply_build(&drep, UR_CM_ATTR_DREP, m.hdr.tid, 0xE1 + destroy,
			    m.dreq.local_comm_id);
		send_msg(&drep);
		if (!destroy) {
			rdma_ack_cm_event(
				expect_ev(RDMA_CM_EVENT_DISCONNECTED));
			rdma_destroy_qp(c);
			assert_int_equal(rdma_destroy_id(c), 0);
		}
		expect_no_msg(QUIET_MS);
	}
}

static void test_active_rejected_with_private_data(void **state)
{
	static const char why[] = "no room";
	struct ur_cm_msg req, m;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c;

	c = active_start(new_port(), &req, NULL);
	reply_build(&m, UR_CM_ATTR_REJ, req.hdr.tid, 0xC1,
		    req.req.local_comm_id);
	m.rej.msg_rejected = UR_CM_MSG_REQ;
	m.rej.reason = UR_CM_REJ_CONSUMER_DEFINED;
	memcpy(m.rej.private_data, why, sizeof(why));
	send_msg(&m);
	ev = expect_ev(RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ev->status, UR_CM_REJ_CONSUMER_DEFINED);
	assert_true(ev->param.conn.private_data_len >= sizeof(why));
	assert_memory_equal(ev->param.conn.private_data, why, sizeof(why));
	rdma_ack_cm_event(ev);
	send_msg(&m);				/* again: dropped */
	expect_no_ev(QUIET_MS);
	expect_no_msg(1500);			/* and no REQ any more */
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
}

/* Disconnect while the REQ is out, destroy while it is out: a REJ each. */
static void test_active_disconnect_destroy_while_connecting(void **state)
{
	struct ur_cm_msg req, m;
	struct rdma_cm_id *c;

	c = active_start(new_port(), &req, NULL);
	assert_int_equal(rdma_disconnect(c), 0);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.local_comm_id, req.req.local_comm_id);
	expect_no_msg(1500);			/* no REQ retransmitted */
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);

	c = active_start(new_port(), &req, NULL);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	expect_msg(&m, UR_CM_ATTR_REJ, EV_MS);
	assert_int_equal(m.rej.local_comm_id, req.req.local_comm_id);
	expect_no_msg(1500);
}

/* ---------------------------------------------------------------- */
/* The flood, in a child whose counters are read back                  */

static long rss_kb(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

#define CHILD_CHECK(c, ...)                                                   \
	do {                                                                   \
		if (!(c)) {                                                    \
			fprintf(stderr, "flood child: " __VA_ARGS__);          \
			fprintf(stderr, "\n");                                 \
			exit(1);                                               \
		}                                                              \
	} while (0)

/* Events of type t on the channel until QUIET_MS pass without one. */
static int count_events(enum rdma_cm_event_type t, struct rdma_cm_id **ids,
			int max)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;
	int n = 0;

	while (poll(&p, 1, 3 * QUIET_MS) == 1 && !rdma_get_cm_event(ch, &ev)) {
		if (ev->event == t && n < max)
			ids[n++] = ev->id;
		rdma_ack_cm_event(ev);
	}
	return n;
}

/*
 * QP1 holds 64 receives, and an agent starved on a loaded machine would
 * lose the rest in the engine (a UD drop, not the CM's): the flood waits
 * after each burst for the DREP to a DREQ of no connection, which the CM
 * answers after everything sent before it.
 */
static void flood_clock(void)
{
	struct ur_cm_msg m;

	reply_build(&m, UR_CM_ATTR_DREQ, 0x5EED, 0x5EED, 0x5EED);
	send_msg(&m);
	CHILD_CHECK(recv_msg(&m, 10000) && m.hdr.attr_id == UR_CM_ATTR_DREP,
		    "no DREP to the burst's DREQ");
}

static void flood_child(uint16_t port)
{
	struct sockaddr_in a = ta_lo(port);
	struct rdma_cm_id *l, *ids[64], *cl;
	struct rdma_cm_event *ev;
	struct ur_cm_msg req;
	uint8_t mad[UR_MAD_SIZE];
	long before, after;
	int i, n;

	alarm(60);	/* a hang fails the child rather than the whole run */
	ch = rdma_create_event_channel();
	CHILD_CHECK(ch, "no channel");
	dev_find();
	CHILD_CHECK(!rdma_create_id(ch, &l, NULL, RDMA_PS_TCP) &&
		    !rdma_bind_addr(l, (struct sockaddr *)&a) &&
		    !rdma_listen(l, FLOOD_BACKLOG), "listener");
	before = rss_kb();
	for (i = 0; i < FLOOD_REQS + FLOOD_BAD; i++) {
		req_build(&req, port, 0x10000 + (uint32_t)i, 0x9000 + (uint64_t)i);
		ur_cm_encode(&req, mad);
		if (i >= FLOOD_REQS) {		/* every byte random */
			uint32_t k;

			for (k = 0; k < UR_MAD_SIZE; k++)
				mad[k] = (uint8_t)random();
			mad[1] = (i & 1) ? UR_MAD_CLASS_CM : mad[1];
		}
		send_raw(mad, UR_MAD_SIZE);
		if (i % FLOOD_BURST == FLOOD_BURST - 1)
			flood_clock();
	}
	n = count_events(RDMA_CM_EVENT_CONNECT_REQUEST, ids, 64);
	after = rss_kb();
	fprintf(stderr, "flood child: %d CONNECT_REQUESTs, RSS %ld -> %ld kB\n",
		n, before, after);
	CHILD_CHECK(n == FLOOD_BACKLOG, "%d CONNECT_REQUESTs, backlog %d", n,
		    FLOOD_BACKLOG);
	CHILD_CHECK(after - before < FLOOD_RSS_GROWTH_KB, "RSS grew %ld kB",
		    after - before);
	for (i = 0; i < n; i++)
		CHILD_CHECK(!rdma_reject(ids[i], "busy", 5) &&
			    !rdma_destroy_id(ids[i]), "reject");
	/* a real connection still gets in */
	CHILD_CHECK(!rdma_create_id(ch, &cl, NULL, RDMA_PS_TCP) &&
		    !rdma_resolve_addr(cl, NULL, (struct sockaddr *)&a, 2000),
		    "client");
	for (i = 0; i < 2; i++) {
		CHILD_CHECK(!rdma_get_cm_event(ch, &ev), "event");
		rdma_ack_cm_event(ev);
		if (i == 0)
			CHILD_CHECK(!rdma_resolve_route(cl, 2000), "route");
	}
	CHILD_CHECK(!ta_rc_qp(cl) && !rdma_connect(cl, NULL), "connect");
	CHILD_CHECK(!rdma_get_cm_event(ch, &ev) &&
		    ev->event == RDMA_CM_EVENT_CONNECT_REQUEST,
		    "request: %s %d", rdma_event_str(ev->event), ev->status);
	ids[0] = ev->id;
	rdma_ack_cm_event(ev);
	CHILD_CHECK(!ta_rc_qp(ids[0]) && !rdma_accept(ids[0], NULL), "accept");
	for (i = 0; i < 2; i++) {
		CHILD_CHECK(!rdma_get_cm_event(ch, &ev) &&
			    ev->event == RDMA_CM_EVENT_ESTABLISHED,
			    "established: %s", rdma_event_str(ev->event));
		rdma_ack_cm_event(ev);
	}
	exit(0);	/* the library's destructor writes UROCE_STATS */
}

/* Reads name's value from a UROCE_STATS file; -1 if absent. */
static long long stat_of(const char *path, const char *name)
{
	char line[256], key[128];
	long long v, found = -1;
	FILE *f = fopen(path, "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%127s %lld", key, &v) == 2 &&
		    !strcmp(key, name))
			found = v;
	fclose(f);
	return found;
}

/* First: the child must not inherit an initialised library. */
static void test_flood_bounded(void **state)
{
	char path[] = "/tmp/uroce-cmflood.XXXXXX";
	long long rx, dropped;
	int fd = mkstemp(path), st;
	pid_t pid;

	assert_true(fd >= 0);
	close(fd);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		setenv("UROCE_STATS", path, 1);
		flood_child(new_port());
	}
	next_port++;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	rx = stat_of(path, "cm_mads_rx");
	dropped = stat_of(path, "cm_mads_dropped");
	unlink(path);
	printf("flood: cm_mads_rx %lld, cm_mads_dropped %lld\n", rx, dropped);
	/* every MAD reached the CM (flood_clock), and all but the backlog's
	 * REQs were dropped and counted; the DREQs of flood_clock and the
	 * real connection's REQ, REP and RTU are not drops */
	assert_true(rx >= FLOOD_REQS + FLOOD_BAD);
	assert_int_equal(dropped, FLOOD_REQS - FLOOD_BACKLOG + FLOOD_BAD);
}

static int group_setup(void **state)
{
	srandom((unsigned int)getpid() ^ (unsigned int)time(NULL));
	next_port = (uint16_t)(30000 + random() % 20000);
	peer_fd = peer_open();
	return peer_fd < 0;
}

/* Each test starts with nothing left from the one before. */
static int drain(void **state)
{
	struct rdma_cm_event *ev;
	struct pollfd p;
	struct ur_cm_msg m;

	while (recv_msg(&m, 50))
		;
	if (!ch)
		return 0;
	p.fd = ch->fd;
	p.events = POLLIN;
	while (poll(&p, 1, 0) == 1 && !rdma_get_cm_event(ch, &ev))
		rdma_ack_cm_event(ev);
	return 0;
}

/* After the fork: the parent's own library. */
static void test_parent_setup(void **state)
{
	struct ur_cm_msg m;

	while (recv_msg(&m, 100))	/* what the child's CM sent */
		;
	ch = rdma_create_event_channel();
	assert_non_null(ch);
	dev_find();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flood_bounded),
		cmocka_unit_test(test_parent_setup),
		cmocka_unit_test_setup(test_passive_dups_and_order, drain),
		cmocka_unit_test_setup(test_regress_rej_while_request_held, drain),
		cmocka_unit_test_setup(test_malformed_mads, drain),
		cmocka_unit_test_setup(test_passive_xrc, drain),
		cmocka_unit_test_setup(test_active_loss_mra_dups, drain),
		cmocka_unit_test_setup(test_active_rejected_with_private_data, drain),
		cmocka_unit_test_setup(test_active_peer_vanishes_at_disconnect, drain),
		cmocka_unit_test_setup(test_regress_dreq_within_peer_retry_budget, drain),
		cmocka_unit_test_setup(test_active_disconnect_destroy_while_connecting, drain),
		cmocka_unit_test_setup(test_passive_disconnect_each_state, drain),
		cmocka_unit_test_setup(test_passive_peer_vanishes, drain),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
