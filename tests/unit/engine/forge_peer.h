/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The remote end of an RC QP of uroce0, played by the test with UDP
 * sockets on a loopback address of its own: "peer" on port 4791, as a
 * RoCE NIC sends, and "forger" on the same IP with another port. Every
 * packet is built by the test (wire/), so each one is exactly what a peer
 * could put on the wire, and every reply is parsed as it arrived.
 */
#ifndef UR_FORGE_PEER_H
#define UR_FORGE_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "wire/wire.h"

struct fp_env {
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

/* uroce0, a PD, a CQ, buflen bytes registered with access, the sockets.
 * 0 or -1. */
int fp_open(struct fp_env *e, size_t buflen, unsigned int access);
void fp_close(struct fp_env *e);

/* Sends one packet built from f and payload, with its ICRC, from fd. */
void fp_forge(const struct fp_env *e, int fd, const union ur_sockaddr *src,
	      struct ur_hdr_fields *f, const void *pay, uint32_t paylen);
/* Receives one packet at fd within ms and parses it; false if none. */
bool fp_recv(int fd, struct ur_pkt *pkt, uint8_t *b, size_t len, int ms);
void fp_drain(int fd);

/* An RC QP of uroce0 in RTS aimed at the peer (qp_access_flags access,
 * one READ/atomic each way); send_ops: created with ibv_create_qp_ex and
 * these IBV_QP_EX_WITH_* (0: ibv_create_qp). */
struct ibv_qp *fp_qp_new(const struct fp_env *e, uint32_t dqpn,
			 uint32_t rq_psn, uint32_t sq_psn,
			 unsigned int access, uint64_t send_ops);
enum ibv_qp_state fp_qp_state(struct ibv_qp *qp);

#endif
