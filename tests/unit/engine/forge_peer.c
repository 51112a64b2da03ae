/* SPDX-License-Identifier: BSD-2-Clause */
/* A hand-built RoCEv2 peer for uroce0 (forge_peer.h). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "forge_peer.h"
#include "tw_util.h"

#define FP_ADDR_TRIES 16

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

void fp_forge(const struct fp_env *e, int fd, const union ur_sockaddr *src,
	      struct ur_hdr_fields *f, const void *pay, uint32_t paylen)
{
	uint8_t b[2048];
	struct ur_ip_flow flow;
	int n;

	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, src, &e->me), 0);
	n = tw_seal(b, sizeof(b), f, pay, paylen, &flow);
	assert_true(n > 0);
	assert_int_equal(sendto(fd, b, (size_t)n, 0, &e->me.sa,
				sizeof(e->me.in)), n);
}

bool fp_recv(int fd, struct ur_pkt *pkt, uint8_t *b, size_t len, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return false;
	n = recv(fd, b, len, 0);
	return n > 0 && ur_pkt_parse(b, (size_t)n, pkt) == UR_DROP_NONE;
}

void fp_drain(int fd)
{
	uint8_t b[4096];
	struct ur_pkt pkt;

	while (fp_recv(fd, &pkt, b, sizeof(b), 20))
		;
}

static struct ibv_qp *qp_create(const struct fp_env *e, uint64_t send_ops)
{
	struct ibv_qp_init_attr_ex ia;

	memset(&ia, 0, sizeof(ia));
	ia.send_cq = e->cq;
	ia.recv_cq = e->cq;
	ia.qp_type = IBV_QPT_RC;
	ia.cap.max_send_wr = 8;
	ia.cap.max_recv_wr = 8;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ia.pd = e->pd;
	ia.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (send_ops) {
		ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		ia.send_ops_flags = send_ops;
	}
	return ibv_create_qp_ex(e->ctx, &ia);
}

struct ibv_qp *fp_qp_new(const struct fp_env *e, uint32_t dqpn,
			 uint32_t rq_psn, uint32_t sq_psn,
			 unsigned int access, uint64_t send_ops)
{
	struct ibv_qp_attr a;
	struct ibv_qp *qp = qp_create(e, send_ops);

	assert_non_null(qp);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = access;
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
	ur_sockaddr_to_gid(&e->peer_addr, a.ah_attr.grh.dgid.raw);
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

enum ibv_qp_state fp_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	assert_int_equal(ibv_query_qp(qp, &a, IBV_QP_STATE, &ia), 0);
	return a.qp_state;
}

int fp_open(struct fp_env *e, size_t buflen, unsigned int access)
{
	struct ibv_device **list;
	union ibv_gid gid;
	int n, i;

	memset(e, 0, sizeof(*e));
	e->peer = e->forger = -1;
	list = ibv_get_device_list(&n);
	if (!list || n < 1)
		return -1;
	e->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!e->ctx || ibv_query_gid(e->ctx, 1, 0, &gid))
		return -1;
	ur_gid_to_sockaddr(gid.raw, UR_ROCEV2_PORT, &e->me);
	e->pd = ibv_alloc_pd(e->ctx);
	e->cq = ibv_create_cq(e->ctx, 16, NULL, NULL, 0);
	e->buf = aligned_alloc(64, buflen);
	if (!e->pd || !e->cq || !e->buf)
		return -1;
	memset(e->buf, 0, buflen);
	e->mr = ibv_reg_mr(e->pd, e->buf, buflen, access);
	if (!e->mr)
		return -1;
	/* a loopback address of our own for the peer and the forger */
	for (i = 0; i < FP_ADDR_TRIES; i++) {
		uint32_t a = 0x7f000000u | (200u << 16) |
			     ((uint32_t)rand() & 0xffffu);

		memset(&e->peer_addr, 0, sizeof(e->peer_addr));
		e->peer_addr.in.sin_family = AF_INET;
		e->peer_addr.in.sin_addr.s_addr = htonl(a);
		e->peer_addr.in.sin_port = htons(UR_ROCEV2_PORT);
		e->forger_addr = e->peer_addr;
		e->forger_addr.in.sin_port = htons(40000 + (rand() & 0x3fff));
		e->peer = udp_bound(&e->peer_addr);
		e->forger = udp_bound(&e->forger_addr);
		if (e->peer >= 0 && e->forger >= 0)
			return 0;
		if (e->peer >= 0)
			close(e->peer);
		if (e->forger >= 0)
			close(e->forger);
		e->peer = e->forger = -1;
	}
	return -1;
}

void fp_close(struct fp_env *e)
{
	ibv_dereg_mr(e->mr);
	ibv_destroy_cq(e->cq);
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);	/* writes UROCE_STATS */
	if (e->peer >= 0)
		close(e->peer);
	if (e->forger >= 0)
		close(e->forger);
	free(e->buf);
}
