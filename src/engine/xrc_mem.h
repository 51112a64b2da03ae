/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMA WRITE and READ into the memory of another process's XRC SRQ's
 * owner (xrc_mem.c), and the hold on the owner's published MR entry that
 * they copy under (direct.c). Rx owner, dev->obj_lock held.
 */
#ifndef UR_ENGINE_XRC_MEM_H
#define UR_ENGINE_XRC_MEM_H

#include "engine/engine_priv.h"

/* An MR entry of a same-host peer's table held for one copy (direct.c,
 * for xrc_mem.c): release it soon, with ur_direct_xrelease. */
struct ur_dx_xhold {
	void *entry;
	unsigned int slot;
};

/*
 * Whether the same-host peer at addr, whose ring's owner must be pid,
 * grants need over [va, va+len) under rkey of its PD handle pd, exactly
 * as its responder would check it: then its MR entry is held (the peer's
 * deregistration waits for it), *host is the address in the peer, and
 * 0 is returned; else -EACCES (not certainly granted: no table, no entry,
 * being rewritten, no free holder slot, a peer not proven to be pid) or
 * -EPERM (the kernel refuses cross-memory calls to it). proof: the
 * caller's last proof of a pid, renewed as direct.c renews its QPs'.
 * Rx owner.
 */
int ur_direct_xhold(struct ur_nic *nic, const union ur_sockaddr *addr,
		    int32_t pid, uint32_t pd, uint32_t rkey, unsigned int need,
		    uint64_t va, uint64_t len, struct ur_dx_proof *proof,
		    struct ur_dx_xhold *h, uint64_t *host);
void ur_direct_xrelease(struct ur_nic *nic, struct ur_dx_xhold *h);

/* xrc_mem.c: a WRITE packet's payload into, and READ response bytes from,
 * the memory of another process's XRC SRQ's owner (qp->xrc_ring set, rx
 * owner, obj_lock held): 0, or -EACCES (a remote access error). */
int ur_xrc_mem_write(struct ur_qp *qp, uint32_t rkey, uint64_t va,
		     const void *src, uint32_t len);
int ur_xrc_mem_read(struct ur_qp *qp, uint32_t rkey, uint64_t va, void *dst,
		    uint32_t len);
/* The same check, nothing copied (a READ's, before it is executed). */
int ur_xrc_mem_check(struct ur_qp *qp, uint32_t rkey, uint64_t va,
		     uint32_t len, bool write);

#endif
