/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Verbs ABI values that rdma-core 45 (and the kernel's uAPI since 6.2)
 * added for IBA 1.5's FLUSH, and that the installed rdma-core 44 headers
 * lack. A program built against newer headers passes these numbers to us,
 * so they are facts of the ABI; rdma-core 44 already has ATOMIC_WRITE
 * (IBV_WR_ATOMIC_WRITE, IBV_WC_ATOMIC_WRITE, IBV_QP_EX_WITH_ATOMIC_WRITE,
 * ibv_qp_ex.wr_atomic_write), so only its device capability bit is here.
 */
#ifndef UR_OBJ_VERBS_ABI_H
#define UR_OBJ_VERBS_ABI_H

#include <stddef.h>
#include <stdint.h>

enum {
	UR_WR_FLUSH = 14,		/* enum ibv_wr_opcode */
	UR_WC_FLUSH = 8,		/* enum ibv_wc_opcode */
	UR_QP_EX_WITH_FLUSH = 1 << 11,	/* enum ibv_qp_create_send_ops_flags */
	UR_ACCESS_FLUSH_GLOBAL = 1 << 8,	/* enum ibv_access_flags */
	UR_ACCESS_FLUSH_PERSISTENT = 1 << 9,
};

/* ibv_wr_flush()'s type (a mask: enum ibv_placement_type) and level
 * (enum ibv_selectivity_level); the same values travel in the FETH. */
enum {
	UR_FLUSH_GLOBAL = 1 << 0,
	UR_FLUSH_PERSISTENT = 1 << 1,
	UR_FLUSH_RANGE = 0,
	UR_FLUSH_MR = 1,
};

/* ibv_device_attr_ex.device_cap_flags_ex (IB_UVERBS_DEVICE_*) */
#define UR_DEVICE_FLUSH_GLOBAL (1ull << 38)
#define UR_DEVICE_FLUSH_PERSISTENT (1ull << 39)
#define UR_DEVICE_ATOMIC_WRITE (1ull << 40)

/* ibv_odp_caps per-transport bits (IBV_ODP_SUPPORT_FLUSH, _ATOMIC_WRITE) */
#define UR_ODP_SUPPORT_FLUSH (1u << 6)
#define UR_ODP_SUPPORT_ATOMIC_WRITE (1u << 7)

/*
 * rdma-core 45 appended wr_flush to struct ibv_qp_ex, right after
 * wr_atomic_write (its last member in 44): a program built against it
 * calls ibv_wr_flush() through this slot, which struct ur_qp places
 * there.
 */
struct ibv_qp_ex;
typedef void (*ur_wr_flush_fn)(struct ibv_qp_ex *qp, uint32_t rkey,
			       uint64_t remote_addr, size_t len, uint8_t type,
			       uint8_t level);

#endif
