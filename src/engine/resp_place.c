/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder's side of IBA 1.5's placement operations, ATOMIC WRITE
 * and FLUSH (RC only), as rxe (Linux 6.2) executes them: what they check,
 * what they do to memory, and their replay. resp.c's state machine calls
 * this at its key check, execution and duplicate states; both are answered
 * by a zero-length RDMA READ response (resp_reply.c).
 *
 * Ordering: the responder executes every request of a QP in PSN order, so
 * an ATOMIC WRITE lands after the data of every earlier WRITE and a FLUSH
 * runs after every earlier WRITE and ATOMIC WRITE was copied. The engine's
 * copies are CPU stores, visible to every thread (and every process
 * mapping the pages) once made: that is global visibility, and a fence
 * orders them before the response that reports it. Persistence is never
 * granted: no MR carries IBV_ACCESS_FLUSH_PERSISTENT (obj/obj_priv.h),
 * so a FLUSH asking for it fails its access check.
 */
#include <errno.h>
#include <string.h>

#include "engine/resp_priv.h"
#include "util/memguard.h"

static bool feth_ok(const struct ur_feth *feth)
{
	uint8_t plt = ur_feth_plt(feth), sel = ur_feth_sel(feth);

	return plt && !(plt & ~(UR_FLUSH_GLOBAL | UR_FLUSH_PERSISTENT)) &&
	       (sel == UR_FLUSH_RANGE || sel == UR_FLUSH_MR);
}

/*
 * A FLUSH names an MR (windows grant no flush access) that allows every
 * placement type it asks for (its QP must too: resp.c); a range must lie inside it, selectivity MR
 * ignores the RETH's address and length (rxe). The key is checked even
 * for length 0: C9-88's exemption is for operations that move no bytes,
 * and a FLUSH acts on the whole range or MR.
 */
static int flush_check(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_mem *m;

	if (!feth_ok(pkt->feth))
		return -EINVAL;
	m = ur_mem_lookup(c->qp->dev, ur_reth_rkey(pkt->reth));
	if (!m || ur_mem_check(m, c->qp->pd, ur_qp_num(c->qp),
			       ur_reth_va(pkt->reth),
			       ur_feth_sel(pkt->feth) == UR_FLUSH_MR ?
				       0 : ur_reth_len(pkt->reth),
			       ur_resp_flush_access(pkt->feth), &c->host))
		return -EACCES;
	return 0;
}

/* An ATOMIC WRITE's DMA length is its 8 bytes, naturally aligned both as
 * the peer addresses them and in memory (a zero-based MR may differ). */
static int atomic_write_check(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;

	if (ur_reth_len(pkt->reth) != 8 || (ur_reth_va(pkt->reth) & 7))
		return -EINVAL;
	if (ur_rkey_map(c->qp, ur_reth_rkey(pkt->reth), ur_reth_va(pkt->reth),
			8, IBV_ACCESS_REMOTE_WRITE, &c->host))
		return -EACCES;
	return c->host & 7 ? -EINVAL : 0;
}

int ur_resp_place_check(struct ur_resp_ctx *c)
{
	return c->op == UR_OPC_RC_FLUSH ? flush_check(c) :
					  atomic_write_check(c);
}

static void store64(void *arg)
{
	const uint64_t *a = arg;

	__atomic_store_n((uint64_t *)(uintptr_t)a[0], a[1], __ATOMIC_SEQ_CST);
}

static enum ur_res_type res_type(const struct ur_resp_ctx *c)
{
	return c->op == UR_OPC_RC_FLUSH ? UR_RES_FLUSH : UR_RES_ATOMIC_WRITE;
}

/* The ATOMIC WRITE's payload bytes go to memory as they are (no byte
 * order applies), in one aligned store. */
int ur_resp_place(struct ur_resp_ctx *c)
{
	const struct ur_pkt *pkt = c->pkt;
	struct ur_res *res;
	uint64_t arg[2];

	if (c->op == UR_OPC_RC_ATOMIC_WRITE) {
		arg[0] = c->host;
		memcpy(&arg[1], pkt->payload, sizeof(arg[1]));
		if (ur_memguard_call((void *)c->host, 8, store64, arg))
			return -EFAULT;
	} else {
		/* FLUSH: the earlier requests' stores are made before the
		 * response is built. x86 keeps stores in order anyway; the
		 * fence says so to the compiler and to weaker CPUs. GCC's
		 * ThreadSanitizer refuses fences (-Wtsan), and its build
		 * checks locking, not this ordering. */
#ifndef __SANITIZE_THREAD__
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
#endif
	}
	res = ur_res_alloc(c->xp);
	res->type = res_type(c);
	res->first_psn = res->last_psn = pkt->psn;
	c->r->epsn = ur_psn_inc(pkt->psn);
	c->r->msn = (c->r->msn + 1) & UR_PSN_MASK;
	ur_resp_send_read_ack(c, pkt->psn);
	return 0;
}

/*
 * A duplicate is answered again from its resource and never executed
 * again: an ATOMIC WRITE repeated after a later WRITE changed the location
 * would undo that WRITE. IBA 1.5 keeps both in the responder's resources
 * as it does atomics, and rxe replays them so; a duplicate whose resource
 * was overwritten is dropped (class D), as for an atomic.
 */
bool ur_resp_place_replay(struct ur_resp_ctx *c, const struct ur_res *res)
{
	if (res->type != res_type(c) || res->first_psn != c->pkt->psn)
		return false;
	if (c->op == UR_OPC_RC_ATOMIC_WRITE)
		ur_cnt_stat(&c->xp->nic->cnt, UR_STAT_ATOMIC_REPLAY, 1);
	ur_resp_send_read_ack(c, c->pkt->psn);
	return true;
}
