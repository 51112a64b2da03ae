/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Facts about send work-request opcodes (obj/wr_opcode.c holds the one
 * table): which QP types may post each, what its WQE carries, and what the
 * engine needs to execute and complete it. obj/ checks posts against it;
 * the engine looks facts up here instead of deriving them from opcodes.
 * (The BTH opcode of each packet is a wire/ fact, which obj/ may not see:
 * the engine's requester maps a WQE to it, engine/req.c.)
 */
#ifndef UR_OBJ_WR_OPCODE_H
#define UR_OBJ_WR_OPCODE_H

#include <stdint.h>
#include <infiniband/verbs.h>

#include "obj/verbs_abi.h"

enum {
	UR_WR_PAYLOAD = 1 << 0,		/* gathers local data (may be inline) */
	UR_WR_REMOTE = 1 << 1,		/* rdma.remote_addr/rkey */
	UR_WR_IMM = 1 << 2,		/* imm_data */
	UR_WR_INV = 1 << 3,		/* invalidate_rkey sent in IETH */
	/* a READ or an atomic: the response carries data into the SGEs, it
	 * counts against max_rd_atomic, and it is never completed by a
	 * later ACK (only by its own response) */
	UR_WR_SCATTER = 1 << 4,
	UR_WR_ATOMIC = 1 << 5,		/* atomic.*, one 8-byte SGE */
	UR_WR_LOCAL = 1 << 6,		/* executed locally (BIND_MW/LOCAL_INV) */
	/* answered by its own response only (never by a later ACK), and
	 * counted against max_rd_atomic: the responder keeps it for replay.
	 * READs and atomics (UR_WR_SCATTER), ATOMIC_WRITE and FLUSH. */
	UR_WR_RESPONSE = 1 << 7,
	UR_WR_FLUSH_ARGS = 1 << 8,	/* flush.* (placement, selectivity) */
};

struct ur_wr_opcode_info {
	const char *name;
	unsigned int types;		/* bit 0 RC, 1 UC, 2 UD */
	unsigned int flags;		/* UR_WR_* */
	uint64_t ops_flag;		/* IBV_QP_EX_WITH_* */
	enum ibv_wc_opcode wc_opcode;	/* of its send completion */
	uint32_t wc_byte_len;		/* its CQE's byte_len; 0 = the WQE's
					 * length */
	uint32_t payload_len;		/* the payload's only length (0: any);
					 * may be inline whatever max_inline */
};

/* NULL when op is unknown or not allowed on a QP of this type. */
const struct ur_wr_opcode_info *ur_wr_opcode(enum ibv_qp_type type,
					     enum ibv_wr_opcode op);
/* NULL when op is unknown or allowed on no QP type (the engine: a posted
 * WQE passed ur_wr_opcode() for its QP already). */
const struct ur_wr_opcode_info *ur_wr_opcode_any(enum ibv_wr_opcode op);
/* IBV_QP_EX_WITH_* bits a QP of this type supports. */
uint64_t ur_wr_send_ops_supported(enum ibv_qp_type type);

#endif
