/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma_cm on every address of a device: the process's device is given two
 * loopback addresses (UROCE_ADDRS=A,B: GID 0 and GID 1) and connections
 * are made to and from each, with a listener bound to one address or to
 * the wildcard. For each the test checks what the IBA and rdma-core say an
 * id on that address has: the route's SGID and DGID, the GID index of the
 * QPs' address vectors (both ends), the addresses each end reports, and a
 * SEND that arrives. A UD id resolved from GID 1 gets an AV with
 * sgid_index 1. Before the CM knew more than GID 0, the id bound to B
 * resolved and connected through A: every check of GID 1 failed.
 */
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
#include <rdma/rdma_cma.h>

#include "ta_cm.h"

#define EV_MS 15000

static struct rdma_event_channel *ch;
static uint16_t next_port;
static char addr_a[32], addr_b[32];	/* GID 0 and GID 1 */

static struct sockaddr_in ip(const char *s, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	if (s)
		assert_int_equal(inet_pton(AF_INET, s, &a.sin_addr), 1);
	return a;
}

/* The GID of an IPv4 address: ::ffff:a.b.c.d. */
static union ibv_gid gid_of(const char *s)
{
	union ibv_gid g;
	struct sockaddr_in a = ip(s, 0);

	memset(&g, 0, sizeof(g));
	g.raw[10] = g.raw[11] = 0xff;
	memcpy(g.raw + 12, &a.sin_addr, 4);
	return g;
}

static void ack(enum rdma_cm_event_type t)
{
	rdma_ack_cm_event(ta_event(ch, t, EV_MS));
}

/* A listener on host (NULL: the wildcard), on the next free port. */
static struct rdma_cm_id *listener(const char *host, uint16_t *p)
{
	struct rdma_cm_id *l;
	struct sockaddr_in a;
	int rc, tries;

	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	for (tries = 0; tries < 64; tries++) {
		*p = next_port++;
		a = ip(host, *p);
		rc = rdma_bind_addr(l, (struct sockaddr *)&a);
		if (!rc || errno != EADDRINUSE)
			break;
	}
	assert_int_equal(rc, 0);
	assert_int_equal(rdma_listen(l, 4), 0);
	return l;
}

static void gid_index_of_qp(struct ibv_qp *qp, int want_sgid,
			    const char *want_dgid)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	union ibv_gid g = gid_of(want_dgid);

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_AV, &ia), 0);
	assert_int_equal(a.ah_attr.grh.sgid_index, want_sgid);
	assert_memory_equal(a.ah_attr.grh.dgid.raw, g.raw, 16);
}

static void addr_is(const struct sockaddr *sa, const char *want)
{
	char buf[INET_ADDRSTRLEN];

	assert_int_equal(sa->sa_family, AF_INET);
	inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, buf,
		  sizeof(buf));
	assert_string_equal(buf, want);
}

/* One SEND from the active id's QP to the passive one's. */
static void send_one(struct rdma_cm_id *from, struct rdma_cm_id *to)
{
	char out[32] = "through a second address", in[32] = { 0 };
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
	for (n = 0; n < 2000; n++) {
		if (ibv_poll_cq(to->recv_cq, 1, &wc) == 1)
			break;
		usleep(1000);
	}
	assert_true(n < 2000);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_memory_equal(in, out, sizeof(out));
	for (n = 0; n < 2000 && ibv_poll_cq(from->send_cq, 1, &wc) != 1; n++)
		usleep(1000);
	ibv_dereg_mr(mo);
	ibv_dereg_mr(mi);
}

/*
 * Connects from src (NULL: no source) to dst:port with a listener l, and
 * checks each end's GID indexes (active sgid_a, passive sgid_p) and
 * addresses.
 */
static void connect_check(struct rdma_cm_id *l, const char *src,
			  const char *dst, uint16_t port, int sgid_a,
			  int sgid_p)
{
	struct sockaddr_in s = ip(src, 0), d = ip(dst, port);
	const char *src_is = sgid_a ? addr_b : addr_a;
	union ibv_gid gs = gid_of(src_is), gd = gid_of(dst);
	struct rdma_cm_event *ev;
	struct rdma_cm_id *c, *child;
	int i;

	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c, src ? (struct sockaddr *)&s :
					   NULL, (struct sockaddr *)&d, EV_MS),
			 0);
	ack(RDMA_CM_EVENT_ADDR_RESOLVED);
	addr_is(&c->route.addr.src_addr, src_is);
	assert_memory_equal(c->route.addr.addr.ibaddr.sgid.raw, gs.raw, 16);
	assert_memory_equal(c->route.addr.addr.ibaddr.dgid.raw, gd.raw, 16);
	assert_int_equal(rdma_resolve_route(c, EV_MS), 0);
	ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_memory_equal(c->route.path_rec->sgid.raw, gs.raw, 16);
	assert_memory_equal(c->route.path_rec->dgid.raw, gd.raw, 16);
	assert_int_equal(ta_rc_qp(c), 0);
	assert_int_equal(rdma_connect(c, NULL), 0);

	ev = ta_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, EV_MS);
	assert_ptr_equal(ev->listen_id, l);
	child = ev->id;
	rdma_ack_cm_event(ev);
	/* the private-data header's addresses, as each end sees them */
	addr_is(&child->route.addr.src_addr, dst);
	addr_is(&child->route.addr.dst_addr, src_is);
	assert_memory_equal(child->route.addr.addr.ibaddr.sgid.raw, gd.raw, 16);
	assert_int_equal(ta_rc_qp(child), 0);
	assert_int_equal(rdma_accept(child, NULL), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_ESTABLISHED);

	gid_index_of_qp(c->qp, sgid_a, dst);
	gid_index_of_qp(child->qp, sgid_p, src_is);
	send_one(c, child);

	assert_int_equal(rdma_disconnect(c), 0);
	for (i = 0; i < 2; i++)
		ack(RDMA_CM_EVENT_DISCONNECTED);
	rdma_destroy_qp(child);
	assert_int_equal(rdma_destroy_id(child), 0);
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
}

/* A listener on the second address, reached from the first and from no
 * source at all (which then speaks from the destination's own GID). */
static void test_listener_on_gid1(void **state)
{
	uint16_t p;
	struct rdma_cm_id *l = listener(addr_b, &p);

	(void)state;
	connect_check(l, addr_a, addr_b, p, 0, 1);
	connect_check(l, NULL, addr_b, p, 1, 1);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* The reverse: from the second address to a listener on the first. */
static void test_from_gid1(void **state)
{
	uint16_t p;
	struct rdma_cm_id *l = listener(addr_a, &p);

	(void)state;
	connect_check(l, addr_b, addr_a, p, 1, 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* A wildcard listener accepts on every address, answering from each. */
static void test_wildcard_listener(void **state)
{
	uint16_t p;
	struct rdma_cm_id *l = listener(NULL, &p);

	(void)state;
	connect_check(l, addr_a, addr_b, p, 0, 1);
	connect_check(l, addr_b, addr_a, p, 1, 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

/* A UD id on GID 1: its SIDR peer's AV leaves from GID 1. */
static void test_ud_gid1(void **state)
{
	struct rdma_cm_id *l, *c;
	struct rdma_cm_event *ev;
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 2, .max_recv_wr = 2,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_UD,
	};
	struct sockaddr_in s = ip(addr_b, 0), d;
	uint16_t p = next_port++;

	(void)state;
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_UDP), 0);
	d = ip(addr_a, p);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&d), 0);
	assert_int_equal(rdma_listen(l, 4), 0);
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_UDP), 0);
	assert_int_equal(rdma_resolve_addr(c, (struct sockaddr *)&s,
					   (struct sockaddr *)&d, EV_MS), 0);
	ack(RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_int_equal(rdma_resolve_route(c, EV_MS), 0);
	ack(RDMA_CM_EVENT_ROUTE_RESOLVED);
	assert_int_equal(rdma_create_qp(c, NULL, &qa), 0);
	assert_int_equal(rdma_connect(c, NULL), 0);
	ev = ta_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, EV_MS);
	{
		struct rdma_cm_id *child = ev->id;
		struct ibv_qp_init_attr qb = qa;

		rdma_ack_cm_event(ev);
		assert_int_equal(rdma_create_qp(child, NULL, &qb), 0);
		assert_int_equal(rdma_accept(child, NULL), 0);
		ev = ta_event(ch, RDMA_CM_EVENT_ESTABLISHED, EV_MS);
		assert_int_equal(ev->param.ud.ah_attr.grh.sgid_index, 1);
		rdma_ack_cm_event(ev);
		rdma_destroy_qp(child);
		assert_int_equal(rdma_destroy_id(child), 0);
	}
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_listener_on_gid1),
		cmocka_unit_test(test_from_gid1),
		cmocka_unit_test(test_wildcard_listener),
		cmocka_unit_test(test_ud_gid1),
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
