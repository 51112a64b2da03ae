/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * RDMA WRITE and READ that name another process's XRC SRQ: its owner's
 * memory, under its owner's keys. This process's XRC target QP keeps the
 * transport and the checks of its own (PSN, opcode sequence, the QP's
 * access flags); the rkey is checked in the table the owner publishes for
 * same-host copies (engine/direct.c: key, PD, access, bounds), against the
 * SRQ's PD as the owner's responder would check it, and the bytes move by
 * one process_vm_writev / process_vm_readv while the MR entry is held, so
 * the owner's ibv_dereg_mr waits for the copy or the copy sees the key
 * gone. The table's pid is proven the owner's as a requester's QP proves
 * it (its nonce read back, renewed every UR_DX_REVERIFY_NS). Whatever is not certainly allowed (no table, a key not published
 * or being rewritten, a refused or short copy) is a remote access error,
 * counted: the answer the packet got before this path existed.
 * Rx owner, dev->obj_lock held, qp->xrc_ring set (engine/xrc.c).
 */
#include <errno.h>
#include <sys/uio.h>

#include "engine/xrc_mem.h"
#include "util/lock_assert.h"

static int xrc_mem_io(struct ur_qp *qp, uint32_t rkey, uint64_t va,
		      void *buf, uint32_t len, bool write)
{
	struct ur_nic *nic = qp->xp->nic;
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote;
	union ur_sockaddr addr;
	struct ur_dx_xhold h;
	uint8_t gid[16];
	uint64_t host;
	uint32_t pd;
	int32_t pid;
	ssize_t done;

	UR_ASSERT_HELD(&nic->shard[0].lock);	/* XRC targets' */
	if (!len)
		return 0;	/* a zero-length access checks no key */
	ur_xring_owner(qp->xrc_ring, &pid, &pd, gid);
	ur_gid_to_sockaddr(gid, UR_ROCEV2_PORT, &addr);
	if (ur_direct_xhold(nic, &addr, pid, pd, rkey,
			    write ? IBV_ACCESS_REMOTE_WRITE :
				    IBV_ACCESS_REMOTE_READ,
			    va, len, &qp->xp->resp.xrc_proof, &h, &host))
		goto refused;
	if (!buf) {			/* the check alone */
		ur_direct_xrelease(nic, &h);
		return 0;
	}
	remote.iov_base = (void *)(uintptr_t)host;
	remote.iov_len = len;
	done = write ? process_vm_writev(pid, &local, 1, &remote, 1, 0) :
		       process_vm_readv(pid, &local, 1, &remote, 1, 0);
	ur_direct_xrelease(nic, &h);
	if (done != (ssize_t)len)
		goto refused;
	ur_cnt_stat(&nic->cnt, UR_STAT_XRC_REMOTE_RDMA, 1);
	return 0;
refused:
	ur_cnt_stat(&nic->cnt, UR_STAT_XRC_REMOTE_REFUSED, 1);
	return -EACCES;
}

int ur_xrc_mem_write(struct ur_qp *qp, uint32_t rkey, uint64_t va,
		     const void *src, uint32_t len)
{
	return xrc_mem_io(qp, rkey, va, (void *)src, len, true);
}

int ur_xrc_mem_read(struct ur_qp *qp, uint32_t rkey, uint64_t va, void *dst,
		    uint32_t len)
{
	return xrc_mem_io(qp, rkey, va, dst, len, false);
}

int ur_xrc_mem_check(struct ur_qp *qp, uint32_t rkey, uint64_t va,
		     uint32_t len, bool write)
{
	return xrc_mem_io(qp, rkey, va, NULL, len, write);
}
