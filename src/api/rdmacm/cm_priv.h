/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the CM's three files share: msg.c sends and changes state, conn.c
 * (the application's calls) and recv.c (the peer's messages, timers) use
 * it. cma.lock is held around every call.
 */
#ifndef UR_API_RDMACM_CM_PRIV_H
#define UR_API_RDMACM_CM_PRIV_H

#include "api/rdmacm/rdmacm_priv.h"

uint64_t cma_interval_ns(void);		/* one CM retransmission period */
uint64_t cma_dreq_interval_ns(const struct cma_id *id);
uint32_t cma_new_comm_id(void);		/* random, non-zero, unused */
uint64_t cma_new_tid(void);

/* Encodes msg into id->mad and sends it to the peer; with retransmit,
 * arms the id's timer (UR_CM_MAX_RETRIES more tries). Returns 0 or an
 * errno for a message that does not encode. */
int cma_send_msg(struct cma_id *id, struct ur_cm_msg *msg, bool retransmit);
/* A REQ or SIDR_REQ, or held while a loopback listener is looked for. */
int cma_send_req(struct cma_id *id, struct ur_cm_msg *msg);
/* Messages that belong to no id's retransmission, from our GID index
 * sgid to the QP1 at gid. */
void cma_send_stateless(struct cma_dev *dev, uint8_t sgid,
			const uint8_t gid[16], struct ur_cm_msg *msg);
void cma_send_rej(struct cma_dev *dev, uint8_t sgid, const uint8_t gid[16],
		  uint64_t tid, uint32_t local, uint32_t remote, uint8_t kind,
		  uint16_t reason, const void *pdata, unsigned int len);
void cma_send_drep(struct cma_dev *dev, uint8_t sgid, const uint8_t gid[16],
		   uint64_t tid, uint32_t local, uint32_t remote);
void cma_send_rtu(struct cma_id *id);
void cma_send_dreq(struct cma_id *id, bool retransmit);
/* keep: where to save the encoded MAD for answering a repeated SIDR_REQ. */
void cma_send_sidr_rep(struct cma_dev *dev, uint8_t sgid,
		       const uint8_t gid[16], uint64_t tid, uint32_t request_id,
		       uint8_t status, uint64_t sid, uint32_t qpn, uint32_t qkey,
		       const void *pdata, unsigned int len, uint8_t *keep);
uint64_t cma_id_service_id(const struct cma_id *id);

void cma_conn_param_of(struct rdma_conn_param *c, uint8_t resp_res,
		       uint8_t init_depth, bool fc, uint8_t retry, uint8_t rnr,
		       bool srq, uint32_t qpn);
/* RC/UC: INIT with the connection's access flags, then RTR and RTS. */
int cma_qp_connect(struct cma_id *id);
void cma_established(struct cma_id *id);	/* + ESTABLISHED event */
void cma_disconnected(struct cma_id *id);	/* + DISCONNECTED event */

/* recv.c: what each device's agent hands received MADs and its timer
 * ticks to (cma.c starts the agents with it). */
extern const struct cma_agent_handlers cma_cm_handlers;

#endif /* UR_API_RDMACM_CM_PRIV_H */
