/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registration probe: refuses what a NIC could not pin.
 */
#ifndef UR_OBJ_MEM_PROBE_H
#define UR_OBJ_MEM_PROBE_H

#include <stddef.h>

/* 0 when every page of [addr, addr+length) is mapped, readable, and
 * writable if access asks for writing (LOCAL_WRITE, REMOTE_WRITE,
 * REMOTE_ATOMIC, MW_BIND: what the kernel pins writable); -EFAULT if not,
 * as ibv_reg_mr on rdma-core's providers; -ENOMEM when the memory is there
 * but cannot be populated. On-demand MRs are not probed. */
int ur_mem_probe(const void *addr, size_t length, unsigned int access);

#endif
