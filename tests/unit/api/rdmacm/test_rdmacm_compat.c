/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * rdma-core behaviours that programs on top of librdmacm rely on, found
 * by running libfabric's verbs provider (FI_EP_MSG) on uroce:
 *  - rdma_getaddrinfo with no node and no service answers with the hints'
 *    own addresses (libfabric resolves a binary destination this way);
 *    with no hints either it is EINVAL;
 *  - rdma_migrate_id of a synchronous id acks the event the id still
 *    holds from its last synchronous call (rdma_create_ep leaves
 *    ROUTE_RESOLVED there), so a later rdma_destroy_id does not wait for
 *    an ack that never comes (libfabric's fi_close hung there);
 *  - an id that has a device has that device's PD in id->pd (pyverbs
 *    builds its external QPs and UD AHs on it);
 *  - the passive side's RTR attributes are final once CONNECT_REQUEST
 *    arrives: the RQ PSN rdma_init_qp_attr gives before rdma_accept is
 *    the one the REP announces (pyverbs' external-QP test moves its QP
 *    to RTS before accepting).
 */
#include <errno.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <cmocka.h>
#include <rdma/rdma_cma.h>

#include "ta_cm.h"

/* a destroy that waits for an ack ends the test here, not in ctest's timeout */
#define HANG_LIMIT_S 20

static uint16_t test_port(unsigned int n)
{
	return (uint16_t)(20000 + (getpid() * 7 + n) % 20000);
}

static struct rdma_cm_event *next_event(struct rdma_event_channel *ch,
					enum rdma_cm_event_type t)
{
	return ta_event(ch, t, 15000);
}

static void test_getaddrinfo_hints_only(void **state)
{
	struct sockaddr_in dst = { .sin_family = AF_INET,
				   .sin_port = htons(7471) };
	struct sockaddr_in src = { .sin_family = AF_INET };
	struct rdma_addrinfo hints = {
		.ai_flags = RAI_FAMILY,
		.ai_family = AF_INET,
		.ai_qp_type = IBV_QPT_RC,
		.ai_port_space = RDMA_PS_TCP,
	};
	struct rdma_addrinfo *res = NULL;

	(void)state;
	inet_pton(AF_INET, "10.1.2.3", &dst.sin_addr);
	inet_pton(AF_INET, "10.1.2.4", &src.sin_addr);
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	hints.ai_src_addr = (struct sockaddr *)&src;
	hints.ai_src_len = sizeof(src);

	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	assert_non_null(res);
	assert_int_equal(res->ai_family, AF_INET);
	assert_int_equal(res->ai_flags, RAI_FAMILY);
	assert_int_equal(res->ai_qp_type, IBV_QPT_RC);
	assert_int_equal(res->ai_port_space, RDMA_PS_TCP);
	assert_int_equal(res->ai_dst_len, sizeof(dst));
	assert_memory_equal(res->ai_dst_addr, &dst, sizeof(dst));
	assert_ptr_not_equal(res->ai_dst_addr, &dst);
	assert_int_equal(res->ai_src_len, sizeof(src));
	assert_memory_equal(res->ai_src_addr, &src, sizeof(src));
	assert_null(res->ai_next);
	rdma_freeaddrinfo(res);

	res = NULL;
	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(res);
}

static void test_migrate_sync_id_acks_held_event(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct rdma_event_channel *ch;
	struct rdma_cm_id *id;

	(void)state;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(test_port(0));
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&a,
					   2000), 0);
	assert_non_null(id->verbs);
	assert_non_null(id->pd);
	assert_ptr_equal(id->pd->context, id->verbs);
	assert_int_equal(rdma_resolve_route(id, 2000), 0);
	/* the synchronous call leaves its event on the id, as rdma-core */
	assert_non_null(id->event);
	assert_int_equal(id->event->event, RDMA_CM_EVENT_ROUTE_RESOLVED);

	ch = rdma_create_event_channel();
	assert_non_null(ch);
	assert_int_equal(rdma_migrate_id(id, ch), 0);
	assert_ptr_equal(id->channel, ch);
	assert_null(id->event);

	alarm(HANG_LIMIT_S);
	assert_int_equal(rdma_destroy_id(id), 0);
	alarm(0);
	rdma_destroy_event_channel(ch);
}

static void test_passive_rtr_before_accept(void **state)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *cl, *child;
	struct rdma_cm_event *ev;
	struct ibv_qp_attr before, after;
	int mask, i;

	(void)state;
	assert_non_null(ch);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	a.sin_port = htons(test_port(1));
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&a), 0);
	assert_non_null(l->pd);
	assert_int_equal(rdma_listen(l, 1), 0);

	assert_int_equal(rdma_create_id(ch, &cl, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(cl, NULL, (struct sockaddr *)&a,
					   2000), 0);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_non_null(cl->pd);
	assert_int_equal(rdma_resolve_route(cl, 2000), 0);
	rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	assert_int_equal(rdma_create_qp(cl, NULL, &qa), 0);
	assert_int_equal(rdma_connect(cl, NULL), 0);

	ev = next_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	child = ev->id;
	rdma_ack_cm_event(ev);
	assert_non_null(child->pd);
	assert_ptr_equal(child->pd->context, child->verbs);
	memset(&before, 0, sizeof(before));
	before.qp_state = IBV_QPS_RTR;
	assert_int_equal(rdma_init_qp_attr(child, &before, &mask), 0);
	assert_true(mask & IBV_QP_RQ_PSN);
	assert_int_equal(before.dest_qp_num, cl->qp->qp_num);

	assert_int_equal(rdma_create_qp(child, NULL, &qa), 0);
	assert_int_equal(rdma_accept(child, NULL), 0);
	for (i = 0; i < 2; i++)
		rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_ESTABLISHED));

	/* the client sends from where the REP said the server receives */
	memset(&after, 0, sizeof(after));
	after.qp_state = IBV_QPS_RTS;
	assert_int_equal(rdma_init_qp_attr(cl, &after, &mask), 0);
	assert_int_equal(after.sq_psn, before.rq_psn);
	memset(&after, 0, sizeof(after));
	after.qp_state = IBV_QPS_RTR;
	assert_int_equal(rdma_init_qp_attr(child, &after, &mask), 0);
	assert_int_equal(after.rq_psn, before.rq_psn);

	assert_int_equal(rdma_disconnect(cl), 0);
	for (i = 0; i < 2; i++)
		rdma_ack_cm_event(next_event(ch, RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(child);
	assert_int_equal(rdma_destroy_id(child), 0);
	rdma_destroy_qp(cl);
	assert_int_equal(rdma_destroy_id(cl), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(ch);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_getaddrinfo_hints_only),
		cmocka_unit_test(test_migrate_sync_id_acks_held_event),
		cmocka_unit_test(test_passive_rtr_before_accept),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
