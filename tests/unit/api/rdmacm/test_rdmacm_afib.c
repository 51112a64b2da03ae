/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * AF_IB addresses on RoCEv2: a struct sockaddr_ib names a GID, which on
 * RoCEv2 is an IP address (UROCE_ADDRS=A,B: GIDs ::ffff:A and ::ffff:B),
 * and its service ID carries the port space and the port. Checked: binds
 * (the port space the service ID picks, by the kernel rdma_cm's rules, and
 * its errors), a connection between two AF_IB ids (addresses each end
 * reports, private data from byte 0 as the kernel's AF_IB REQ carries no
 * rdma_cm header, a SEND), a UD id over SIDR, the family rules of
 * rdma_resolve_addr, and rdma_getaddrinfo's AF_IB answers.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <infiniband/ib.h>
#include <rdma/rdma_cma.h>

#include "ta_cm.h"

#define EV_MS 15000
#define PS_TCP_SID 0x0000000001060000ULL	/* RDMA_IB_IP_PS_TCP */
#define PS_UDP_SID 0x0000000001110000ULL	/* RDMA_IB_IP_PS_UDP */
#define PS_IB_SID 0x00000000013F0000ULL	/* the kernel's RDMA_IB_IP_PS_IB */

static struct rdma_event_channel *ch;
static uint16_t next_port;
static char addr_a[32], addr_b[32];	/* GID 0 and GID 1 */

/* The GID of an IPv4 address: ::ffff:a.b.c.d (NULL: the zero GID). */
static void gid_of(const char *s, uint8_t g[16])
{
	memset(g, 0, 16);
	if (!s)
		return;
	g[10] = g[11] = 0xff;
	assert_int_equal(inet_pton(AF_INET, s, g + 12), 1);
}

/* An AF_IB address: the GID of host (NULL: zero), service ID sid. */
static struct sockaddr_ib ib(const char *host, uint64_t sid, uint64_t mask)
{
	struct sockaddr_ib a;

	memset(&a, 0, sizeof(a));
	a.sib_family = AF_IB;
	a.sib_pkey = htons(0xFFFF);
	gid_of(host, a.sib_addr.sib_raw);
	a.sib_sid = htobe64(sid);
	a.sib_sid_mask = htobe64(mask);
	return a;
}

static struct sockaddr_in ip(const char *s, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	assert_int_equal(inet_pton(AF_INET, s, &a.sin_addr), 1);
	return a;
}

/* sa is AF_IB with host's GID and, unless sid is 0, that service ID. */
static void ib_addr_is(const struct sockaddr *sa, const char *host,
		       uint64_t sid)
{
	const struct sockaddr_ib *a = (const struct sockaddr_ib *)sa;
	uint8_t g[16];

	assert_int_equal(sa->sa_family, AF_IB);
	gid_of(host, g);
	assert_memory_equal(a->sib_addr.sib_raw, g, 16);
	if (sid)
		assert_int_equal(be64toh(a->sib_sid), sid);
}

static void ack(enum rdma_cm_event_type t)
{
	rdma_ack_cm_event(ta_event(ch, t, EV_MS));
}

/* Binds id to an AF_IB address of host with the next free port under
 * service ID prefix ps_sid; returns the port. */
static uint16_t bind_ib(struct rdma_cm_id *id, const char *host,
			uint64_t ps_sid)
{
	struct sockaddr_ib a;
	uint16_t p;
	int rc, tries;

	for (tries = 0; tries < 64; tries++) {
		p = next_port++;
		a = ib(host, ps_sid | p, ~0ULL);
		rc = rdma_bind_addr(id, (struct sockaddr *)&a);
		if (!rc || errno != EADDRINUSE)
			break;
	}
	assert_int_equal(rc, 0);
	return p;
}

/* Binds: the service ID's port space, the port, and the errors. */
static void test_bind(void **state)
{
	struct rdma_cm_id *t, *t2, *u, *b;
	struct sockaddr_ib a;
	struct sockaddr_in in;
	uint16_t p;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &t, NULL, RDMA_PS_TCP), 0);
	p = bind_ib(t, addr_b, PS_TCP_SID);
	ib_addr_is(rdma_get_local_addr(t), addr_b, PS_TCP_SID | p);
	assert_int_equal(rdma_get_src_port(t), htons(p));

	/* the same port of the TCP port space, over IP: taken */
	assert_int_equal(rdma_create_id(ch, &t2, NULL, RDMA_PS_TCP), 0);
	in = ip(addr_b, p);
	assert_int_equal(rdma_bind_addr(t2, (struct sockaddr *)&in), -1);
	assert_int_equal(errno, EADDRINUSE);

	/* an RDMA_PS_IB id with a TCP service ID lives in the TCP space */
	assert_int_equal(rdma_create_id(ch, &b, NULL, RDMA_PS_IB), 0);
	a = ib(addr_b, PS_TCP_SID | p, ~0ULL);
	assert_int_equal(rdma_bind_addr(b, (struct sockaddr *)&a), -1);
	assert_int_equal(errno, EADDRINUSE);
	/* no service ID: the id's own port space, an ephemeral port */
	a = ib(NULL, 0, 0);
	assert_int_equal(rdma_bind_addr(b, (struct sockaddr *)&a), 0);
	assert_int_equal(be64toh(((struct sockaddr_ib *)
				  rdma_get_local_addr(b))->sib_sid) >> 16,
			 PS_IB_SID >> 16);
	assert_true(ntohs(rdma_get_src_port(b)) != 0);

	/* a UDP id cannot take a TCP service ID; nothing changed, it binds
	 * over IP afterwards */
	assert_int_equal(rdma_create_id(ch, &u, NULL, RDMA_PS_UDP), 0);
	a = ib(addr_a, PS_TCP_SID | p, 0xFFFFFFFFFFFF0000ULL);
	assert_int_equal(rdma_bind_addr(u, (struct sockaddr *)&a), -1);
	assert_int_equal(errno, EPROTONOSUPPORT);
	/* a GID that is none of ours */
	a = ib("10.255.255.1", PS_UDP_SID, ~0ULL);
	assert_int_equal(rdma_bind_addr(u, (struct sockaddr *)&a), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	in = ip(addr_a, 0);
	assert_int_equal(rdma_bind_addr(u, (struct sockaddr *)&in), 0);
	assert_int_equal(rdma_get_local_addr(u)->sa_family, AF_INET);

	assert_int_equal(rdma_destroy_id(u), 0);
	assert_int_equal(rdma_destroy_id(b), 0);
	assert_int_equal(rdma_destroy_id(t2), 0);
	assert_int_equal(rdma_destroy_id(t), 0);
}

/* One SEND from the active id's QP to the passive one's. */
static void send_one(struct rdma_cm_id *from, struct rdma_cm_id *to)
{
	char out[24] = "over an AF_IB address", in[24] = { 0 };
	struct ibv_mr *mo = ibv_reg_mr(from->pd, out, sizeof(out), 0);
	struct ibv_mr *mi = ibv_reg_mr(to->pd, in, sizeof(in),
				       IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge so = { (uintptr_t)out, sizeof(out), 0 };
	struct ibv_sge si = { (uintptr_t)in, sizeof(in), 0 };
	struct ibv_send_wr sw = { .sg_list = &so, .num_sge = 1,
				  .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bs;
	struct ibv_recv_wr rw = { .sg_list = &si, .num_sge = 1 }, *br;
	struct ibv_wc wc;
	int n;

	assert_non_null(mo);
	assert_non_null(mi);
	so.lkey = mo->lkey;
	si.lkey = mi->lkey;
	assert_int_equal(ibv_post_recv(to->qp, &rw, &br), 0);
	assert_int_equal(ibv_post_send(from->qp, &sw, &bs), 0);
	for (n = 0; n < 2000 && ibv_poll_cq(to->recv_cq, 1, &wc) != 1; n++)
		usleep(1000);
	assert_true(n < 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(in, out, sizeof(out));
	for (n = 0; n < 2000 && ibv_poll_cq(from->send_cq, 1, &wc) != 1; n++)
		usleep(1000);
	ibv_dereg_mr(mo);
	ibv_dereg_mr(mi);
}

/*
 * A wildcard AF_IB listener, a client resolving the GID of address A with
 * the service ID rdma_getaddrinfo writes: both ends report AF_IB
 * addresses, the 92 bytes of private data arrive from byte 0.
 */
static void test_connect(void **state)
{
	uint8_t pdata[93];
	struct rdma_conn_param cp = { .private_data = pdata,
				      .private_data_len = sizeof(pdata),
				      .retry_count = 7, .rnr_retry_count = 7 };
	struct rdma_cm_id *l, *c, *child;
	struct rdma_cm_event *ev;
	struct sockaddr_ib d;
	uint8_t ga[16];
	uint16_t p;
	int i;

	(void)state;
	for (i = 0; i < (int)sizeof(pdata); i++)
		pdata[i] = (uint8_t)(i * 7 + 1);
	gid_of(addr_a, ga);
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	p = bind_ib(l, NULL, PS_TCP_SID);
	assert_int_equal(rdma_listen(l, 4), 0);

	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	d = ib(addr_a, PS_TCP_SID | p, ~0ULL);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d,
					   EV_MS), 0);
	ack(RDMA_CM_EVENT_ADDR_RESOLVED);
	ib_addr_is(rdma_get_local_addr(c), addr_a, 0);
	ib_addr_is(rdma_get_peer_addr(c), addr_a, PS_TCP_SID | p);
	assert_int_equal(rdma_get_dst_port(c), htons(p));
	assert_memory_equal(c->route.addr.addr.ibaddr.dgid.raw, ga, 16);
	assert_int_equal(rdma_resolve_route(c, EV_MS), 0);
	ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(ta_rc_qp(c), 0);
	/* no rdma_cm header: the whole REQ private data is the user's */
	assert_int_equal(rdma_connect(c, &cp), -1);
	assert_int_equal(errno, EINVAL);
	cp.private_data_len = 92;
	assert_int_equal(rdma_connect(c, &cp), 0);

	ev = ta_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, EV_MS);
	assert_ptr_equal(ev->listen_id, l);
	assert_int_equal(ev->param.conn.private_data_len, 92);
	assert_memory_equal(ev->param.conn.private_data, pdata, 92);
	child = ev->id;
	rdma_ack_cm_event(ev);
	ib_addr_is(rdma_get_local_addr(child), addr_a, PS_TCP_SID | p);
	ib_addr_is(rdma_get_peer_addr(child), addr_a, 0);
	assert_int_equal(ta_rc_qp(child), 0);
	assert_int_equal(rdma_accept(child, NULL), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_ESTABLISHED);
	send_one(c, child);

	assert_int_equal(rdma_disconnect(c), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(child);
	assert_int_equal(rdma_destroy_id(child), 0);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* An AF_IB listener on ::1 (the loopback GID), reached through the
 * rendezvous: its REQ names only the device GID it went to, which must
 * still find the listener. */
static void test_loopback_gid(void **state)
{
	struct rdma_cm_id *l, *c, *child;
	struct rdma_cm_event *ev;
	struct sockaddr_ib a;
	uint16_t p = next_port++;
	int i;

	(void)state;
	a = ib(NULL, PS_TCP_SID | p, ~0ULL);
	a.sib_addr.sib_raw[15] = 1;				/* ::1 */
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(l, 4), 0);
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&a,
					   EV_MS), 0);
	ack(RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c, EV_MS), 0);
	ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(ta_rc_qp(c), 0);
	assert_int_equal(rdma_connect(c, NULL), 0);
	ev = ta_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, EV_MS);
	assert_ptr_equal(ev->listen_id, l);
	child = ev->id;
	rdma_ack_cm_event(ev);
	assert_int_equal(ta_rc_qp(child), 0);
	assert_int_equal(rdma_accept(child, NULL), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_ESTABLISHED);
	send_one(c, child);
	assert_int_equal(rdma_disconnect(c), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(child);
	assert_int_equal(rdma_destroy_id(child), 0);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* A UD id over SIDR to an AF_IB listener on address B. */
static void test_ud(void **state)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct rdma_cm_id *l, *c, *child;
	struct rdma_cm_event *ev;
	struct sockaddr_ib d;
	uint8_t gb[16];
	uint16_t p;

	(void)state;
	gid_of(addr_b, gb);
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_UDP), 0);
	p = bind_ib(l, addr_b, PS_UDP_SID);
	assert_int_equal(rdma_listen(l, 4), 0);
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_UDP), 0);
	d = ib(addr_b, PS_UDP_SID | p, ~0ULL);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d,
					   EV_MS), 0);
	ack(RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c, EV_MS), 0);
	ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(c, NULL, &qa), 0);
	assert_int_equal(rdma_connect(c, NULL), 0);
	ev = ta_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, EV_MS);
	child = ev->id;
	rdma_ack_cm_event(ev);
	ib_addr_is(rdma_get_local_addr(child), addr_b, PS_UDP_SID | p);
	assert_int_equal(rdma_create_qp(child, NULL, &qa), 0);
	assert_int_equal(rdma_accept(child, NULL), 0);
	ev = ta_event(ch, RDMA_CM_EVENT_ESTABLISHED, EV_MS);
	assert_int_equal(ev->param.ud.qp_num, child->qp->qp_num);
	assert_memory_equal(ev->param.ud.ah_attr.grh.dgid.raw, gb, 16);
	rdma_ack_cm_event(ev);
	rdma_destroy_qp(child);
	assert_int_equal(rdma_destroy_id(child), 0);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* The id and the destination: both AF_IB or both IP, else EINVAL. */
static void test_family_mix(void **state)
{
	struct rdma_cm_id *c;
	struct sockaddr_in in = ip(addr_a, 0), to = ip(addr_b, 9);
	struct sockaddr_ib d = ib(addr_b, PS_TCP_SID | 9, ~0ULL);

	(void)state;
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(c, (struct sockaddr *)&in), 0);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&d,
					   EV_MS), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(c), 0);

	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	bind_ib(c, addr_a, PS_TCP_SID);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&to,
					   EV_MS), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_destroy_id(c), 0);
}

/* rdma_getaddrinfo with AF_IB hints, as rdmacm-utils' "-f gid" asks. */
static void test_getaddrinfo(void **state)
{
	struct rdma_addrinfo h, *r;
	const struct sockaddr_ib *a;

	(void)state;
	memset(&h, 0, sizeof(h));
	h.ai_flags = RAI_NUMERICHOST | RAI_FAMILY;
	h.ai_family = AF_IB;
	h.ai_port_space = RDMA_PS_TCP;
	assert_int_equal(rdma_getaddrinfo("::ffff:127.0.0.1", "7471", &h, &r),
			 0);
	assert_int_equal(r->ai_family, AF_IB);
	assert_int_equal(r->ai_dst_len, sizeof(struct sockaddr_ib));
	ib_addr_is(r->ai_dst_addr, "127.0.0.1", PS_TCP_SID + 7471);
	a = (const struct sockaddr_ib *)r->ai_dst_addr;
	assert_int_equal(be64toh(a->sib_sid_mask), ~0ULL);
	assert_int_equal(ntohs(a->sib_pkey), 0xFFFF);
	rdma_freeaddrinfo(r);

	/* an IPv4 address is its IPv4-mapped GID; UDP's port space */
	h.ai_port_space = RDMA_PS_UDP;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7174", &h, &r), 0);
	ib_addr_is(r->ai_dst_addr, "127.0.0.1", PS_UDP_SID + 7174);
	rdma_freeaddrinfo(r);

	/* passive, no node: the zero GID; no port: only the port space is
	 * significant */
	h.ai_flags |= RAI_PASSIVE;
	h.ai_port_space = RDMA_PS_TCP;
	assert_int_equal(rdma_getaddrinfo(NULL, "0", &h, &r), 0);
	assert_null(r->ai_dst_addr);
	ib_addr_is(r->ai_src_addr, NULL, PS_TCP_SID);
	a = (const struct sockaddr_ib *)r->ai_src_addr;
	assert_int_equal(be64toh(a->sib_sid_mask), 0xFFFFFFFFFFFF0000ULL);
	rdma_freeaddrinfo(r);

	/* AF_IB without RAI_FAMILY: an IP answer, as rdma-core gives it */
	h.ai_flags = RAI_NUMERICHOST;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "7471", &h, &r), 0);
	assert_int_equal(r->ai_family, AF_INET);
	assert_int_equal(r->ai_dst_addr->sa_family, AF_INET);
	rdma_freeaddrinfo(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bind),
		cmocka_unit_test(test_connect),
		cmocka_unit_test(test_loopback_gid),
		cmocka_unit_test(test_ud),
		cmocka_unit_test(test_family_mix),
		cmocka_unit_test(test_getaddrinfo),
	};
	char addrs[80];
	int x = 20 + getpid() % 200, y = 1 + (getpid() / 200) % 250, rc;

	/* two addresses of this run, read when the device is opened */
	snprintf(addr_a, sizeof(addr_a), "127.%d.%d.1", x, y);
	snprintf(addr_b, sizeof(addr_b), "127.%d.%d.2", x, y);
	snprintf(addrs, sizeof(addrs), "%s,%s", addr_a, addr_b);
	setenv("UROCE_ADDRS", addrs, 1);
	next_port = (uint16_t)(20000 + getpid() % 20000);
	ch = rdma_create_event_channel();
	if (!ch) {
		fprintf(stderr, "rdma_create_event_channel: %s\n",
			strerror(errno));
		return 1;
	}
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rdma_destroy_event_channel(ch);
	return rc;
}
