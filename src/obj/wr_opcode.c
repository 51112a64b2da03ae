/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Work-request opcodes x QP types (IBA 1.x, "service types and the
 * operations they support"): which opcode a QP of each type may post,
 * what the WQE carries, the ibv_qp_ex send_ops_flags bit that enables it
 * in the ibv_wr_* API, and its completion's opcode and length (declared
 * in obj/wr_opcode.h, which the engine reads too).
 *
 * SEND_WITH_INV is refused at post time on UC (the IETH exists only on
 * RC; rxe accepts it and fails at execution). A UD QP takes every opcode
 * here at post time and completes the ones UD lacks with
 * IBV_WC_LOC_QP_OP_ERR, as mlx5 does (obj/post.c). LOCAL_INV and BIND_MW are
 * local operations IBA allows on RC and UC. ATOMIC_WRITE and FLUSH (IBA
 * 1.5) exist on RC only; both are answered by a zero-length RDMA READ
 * response, so they count against max_rd_atomic as READs do. FLUSH is
 * posted only by ibv_wr_flush(): struct ibv_send_wr has no field for its
 * length, placement type or selectivity.
 */
#include "obj/obj_priv.h"

#define RC (1u << 0)
#define UC (1u << 1)
#define UD (1u << 2)
#define XRC (1u << 3)	/* XRC_SEND: RC's operations, to an XRC SRQ's QP */

static const struct ur_wr_opcode_info ur_wr_ops[] = {
	[IBV_WR_RDMA_WRITE] = {
		.name = "RDMA_WRITE", .types = RC | UC | XRC,
		.flags = UR_WR_PAYLOAD | UR_WR_REMOTE,
		.ops_flag = IBV_QP_EX_WITH_RDMA_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[IBV_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "RDMA_WRITE_WITH_IMM", .types = RC | UC | XRC,
		.flags = UR_WR_PAYLOAD | UR_WR_REMOTE | UR_WR_IMM,
		.ops_flag = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		.wc_opcode = IBV_WC_RDMA_WRITE,
	},
	[IBV_WR_SEND] = {
		.name = "SEND", .types = RC | UC | UD | XRC,
		.flags = UR_WR_PAYLOAD,
		.ops_flag = IBV_QP_EX_WITH_SEND,
		.wc_opcode = IBV_WC_SEND,
	},
	[IBV_WR_SEND_WITH_IMM] = {
		.name = "SEND_WITH_IMM", .types = RC | UC | UD | XRC,
		.flags = UR_WR_PAYLOAD | UR_WR_IMM,
		.ops_flag = IBV_QP_EX_WITH_SEND_WITH_IMM,
		.wc_opcode = IBV_WC_SEND,
	},
	[IBV_WR_RDMA_READ] = {
		.name = "RDMA_READ", .types = RC | XRC,
		.flags = UR_WR_REMOTE | UR_WR_SCATTER | UR_WR_RESPONSE,
		.ops_flag = IBV_QP_EX_WITH_RDMA_READ,
		.wc_opcode = IBV_WC_RDMA_READ,
	},
	[IBV_WR_ATOMIC_CMP_AND_SWP] = {
		.name = "ATOMIC_CMP_AND_SWP", .types = RC | XRC,
		.flags = UR_WR_ATOMIC | UR_WR_SCATTER | UR_WR_RESPONSE,
		.ops_flag = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
		.wc_opcode = IBV_WC_COMP_SWAP,
		.wc_byte_len = 8,
	},
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = {
		.name = "ATOMIC_FETCH_AND_ADD", .types = RC | XRC,
		.flags = UR_WR_ATOMIC | UR_WR_SCATTER | UR_WR_RESPONSE,
		.ops_flag = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
		.wc_opcode = IBV_WC_FETCH_ADD,
		.wc_byte_len = 8,
	},
	[IBV_WR_LOCAL_INV] = {
		.name = "LOCAL_INV", .types = RC | UC | XRC,
		.flags = UR_WR_LOCAL,
		.ops_flag = IBV_QP_EX_WITH_LOCAL_INV,
		.wc_opcode = IBV_WC_LOCAL_INV,
	},
	[IBV_WR_BIND_MW] = {
		.name = "BIND_MW", .types = RC | UC | XRC,
		.flags = UR_WR_LOCAL,
		.ops_flag = IBV_QP_EX_WITH_BIND_MW,
		.wc_opcode = IBV_WC_BIND_MW,
	},
	[IBV_WR_SEND_WITH_INV] = {
		.name = "SEND_WITH_INV", .types = RC | XRC,
		.flags = UR_WR_PAYLOAD | UR_WR_INV,
		.ops_flag = IBV_QP_EX_WITH_SEND_WITH_INV,
		.wc_opcode = IBV_WC_SEND,
	},
	[UR_WR_FLUSH] = {
		.name = "FLUSH", .types = RC,
		.flags = UR_WR_FLUSH_ARGS | UR_WR_RESPONSE,
		.ops_flag = UR_QP_EX_WITH_FLUSH,
		.wc_opcode = (enum ibv_wc_opcode)UR_WC_FLUSH,
	},
	[IBV_WR_ATOMIC_WRITE] = {
		.name = "ATOMIC_WRITE", .types = RC,
		.flags = UR_WR_PAYLOAD | UR_WR_REMOTE | UR_WR_RESPONSE,
		.ops_flag = IBV_QP_EX_WITH_ATOMIC_WRITE,
		.wc_opcode = IBV_WC_ATOMIC_WRITE,
		.payload_len = 8,
	},
	/* TSO, DRIVER1: not supported (types = 0) */
};

static unsigned int type_bit(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return RC;
	case IBV_QPT_UC:
		return UC;
	case IBV_QPT_UD:
		return UD;
	case IBV_QPT_XRC_SEND:
		return XRC;
	default:
		return 0;
	}
}

const struct ur_wr_opcode_info *ur_wr_opcode(enum ibv_qp_type type,
					     enum ibv_wr_opcode op)
{
	const struct ur_wr_opcode_info *info;

	if ((unsigned int)op >= UR_ARRAY_SIZE(ur_wr_ops))
		return NULL;
	info = &ur_wr_ops[op];
	if (!(info->types & type_bit(type)))
		return NULL;
	return info;
}

const struct ur_wr_opcode_info *ur_wr_opcode_any(enum ibv_wr_opcode op)
{
	if ((unsigned int)op >= UR_ARRAY_SIZE(ur_wr_ops) ||
	    !ur_wr_ops[op].types)
		return NULL;
	return &ur_wr_ops[op];
}

uint64_t ur_wr_send_ops_supported(enum ibv_qp_type type)
{
	uint64_t flags = 0;
	unsigned int i;

	for (i = 0; i < UR_ARRAY_SIZE(ur_wr_ops); i++)
		if (ur_wr_ops[i].types & type_bit(type))
			flags |= ur_wr_ops[i].ops_flag;
	return flags;
}
