/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Every device and port limit uroce reports, one line of why each. These are
 * what ibv_query_device/_ex and ibv_query_port return, and what object
 * creation checks against. Software has no hardware ceiling, so the values
 * are chosen to be realistic (close to rxe or a ConnectX) while keeping
 * per-object memory modest.
 */
#ifndef UR_OBJ_LIMITS_H
#define UR_OBJ_LIMITS_H

#include "obj/verbs_abi.h"
#include "util/iba.h"

/* GID table: one entry per configured IP address. */
#define UR_MAX_GID 16
/* One port, as rxe and most RoCE functions expose. */
#define UR_NUM_PORTS 1
/* P_Key table of one entry, UR_PKEY_DEFAULT (RoCE has no partitions). */
#define UR_PKEY_TBL_LEN 1

/* Queue depths: rxe 6.12 advertises 2^20; 32K keeps a full SQ near 32 MiB. */
#define UR_MAX_QP_WR 32768
/* an SRQ's largest: 2^15 - 1 as mlx5's (srq.c grants 2^k - 1) */
#define UR_MAX_SRQ_WR 32767
/* CQ depth: mlx5's 4,194,303 (2^22 - 1), so one CQ can serve 1,024 QPs of
 * perftest's default depth; the ring's memory grows as it fills (cq.c). */
#define UR_MAX_CQE 4194303
/* SGEs per WR: rxe's 32; max_sge_rd the same since reads scatter in software. */
#define UR_MAX_SGE 32
#define UR_MAX_SGE_RD 32
#define UR_MAX_SRQ_SGE 32
/* Inline data is copied into the WQE slot: 512 B as rxe 6.12. */
#define UR_MAX_INLINE_DATA 512

/* Object counts per device: bounded by memory only; these are sane
 * ceilings, each enforced at creation (ENOMEM past it, as a kernel
 * provider answers when its table is full; obj/handle.c counts). QPs are
 * counted by their numbers in obj/qp.c. */
#define UR_MAX_QP 65536
#define UR_MAX_CQ 65536
#define UR_MAX_MR 524287
#define UR_MAX_MW 524287
#define UR_MAX_PD 65536
#define UR_MAX_AH 32767
#define UR_MAX_SRQ 65536
/* Multicast (engine/mcast.c): each group a device joins is a socket
 * bound to the group, so groups are bounded by file descriptors (the
 * usual soft limit is 1024 per process): 256 groups; a QP list per group
 * of 64 (rxe: 56); and the product in all. */
#define UR_MAX_MCAST_GRP 256
#define UR_MAX_MCAST_QP_ATTACH 64
#define UR_MAX_TOTAL_MCAST_QP_ATTACH (UR_MAX_MCAST_GRP * UR_MAX_MCAST_QP_ATTACH)
/* Device memory: heap memory the library owns (obj/dm.c); one allocation
 * of up to 4 MiB (max_dm_size; mlx5's MEMIC offers 256 KiB), 1024 alive. */
#define UR_MAX_DM 1024
#define UR_MAX_DM_SIZE (4u << 20)

/* Outstanding RDMA READ/atomic per QP, both directions (rxe: 128). */
#define UR_MAX_QP_RD_ATOM 128
#define UR_MAX_QP_INIT_RD_ATOM 128
#define UR_MAX_RES_RD_ATOM (UR_MAX_QP * UR_MAX_QP_RD_ATOM)

/* Largest message: 2 GiB, the RETH DMA length limit rxe enforces. */
#define UR_MAX_MSG_SZ 0x80000000u
/* Largest MR: all of user space is registrable. */
#define UR_MAX_MR_SIZE (~0ull)
/* Pages are not pinned; report 4 KiB granularity like rxe. */
#define UR_PAGE_SIZE_CAP 0xFFFFF000ull

/* Local ACK delay exponent (4.096 us * 2^15 = 134 ms), rxe's value. */
#define UR_LOCAL_CA_ACK_DELAY 15
/* IB MTU limit (4096); the active MTU is chosen from the link (see dev). */
#define UR_MAX_MTU IBV_MTU_4096

/* Vendor: 0xFFFFFF "unassigned", as rxe reports. */
#define UR_VENDOR_ID 0xFFFFFF
#define UR_VENDOR_PART_ID 0x7572	/* 'ur' */
#define UR_HW_VER 1

/* QPN, PSN and flow label widths, the default P_Key: util/iba.h. */

/* Capabilities we implement (ibv_query_device device_cap_flags): RNR NAK
 * generation, P_Key/Q_Key violation counters, port events, SRQ resize,
 * type 1 and 2B memory windows, XRC and a system image GUID (the node
 * GUID).
 * Not MEM_MGT_EXTENSIONS: there are no fast-register MRs. */
#define UR_DEVICE_CAP_FLAGS                                                   \
	(IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_BAD_PKEY_CNTR |               \
	 IBV_DEVICE_BAD_QKEY_CNTR | IBV_DEVICE_PORT_ACTIVE_EVENT |             \
	 IBV_DEVICE_SRQ_RESIZE | IBV_DEVICE_MEM_WINDOW |                      \
	 IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC |                     \
	 IBV_DEVICE_SYS_IMAGE_GUID)
/* device_cap_flags_ex beyond those: IBA 1.5's ATOMIC WRITE and FLUSH with
 * global visibility, as rxe (Linux 6.2) advertises them; not persistence
 * (obj/obj_priv.h, UR_MR_ACCESS_SUPPORTED). */
#define UR_DEVICE_CAP_FLAGS_EX                                                \
	(UR_DEVICE_CAP_FLAGS | UR_DEVICE_FLUSH_GLOBAL | UR_DEVICE_ATOMIC_WRITE)
/* cq_ex timestamps are CLOCK_MONOTONIC nanoseconds: full 64 bits, 1 GHz. */
#define UR_TIMESTAMP_MASK (~0ull)
#define UR_HCA_CORE_CLOCK_KHZ 1000000ull
/* Port speed 1X EDR = 25 Gb/s, a common RoCE port (IBTA width/speed codes). */
#define UR_PORT_WIDTH 1			/* 1X */
#define UR_PORT_SPEED 32		/* EDR, 25 Gb/s per lane */
/* phys_state 5 = LinkUp (IBTA PortPhysicalState). */
#define UR_PORT_PHYS_LINK_UP 5

#endif
