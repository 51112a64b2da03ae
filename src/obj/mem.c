/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory regions, memory windows and the keys that name them.
 *
 * Keys. A key is 32 bits: its upper 24 are its "slot", which
 * dev->mem_keys maps to the live MR or MW, the low 8 its key byte. A
 * slot is free, live or quarantined (dev->keys). A new key takes a free
 * slot drawn at random with a random key byte (the OS CSPRNG; never 0)
 * while fewer than UR_KEY_QUARANTINE slots are quarantined, and otherwise
 * the slot retired longest ago with a new random key byte, never the one
 * that slot's last key had. Either way the live slots are a random subset
 * of the space, so a blind guess names a live key with a chance of 1 in
 * 2^32 per live key. A deregistered MR's or deallocated MW's slot is
 * quarantined: it goes to the back of a FIFO of retired keys and leaves
 * it only by being reissued.
 *
 * Why: slots are finite (2^24) and the memory that remembers them must
 * be bounded, so slots must come back, as a NIC reuses an MR index with
 * a new key byte; but a peer may still hold a dead key (a retransmitted
 * request, a peer not yet told), and while its slot is quarantined such a
 * key names nothing: the access fails. Once reissued, the last holder's
 * key never names the new MR or MW, an older holder's with a chance of
 * 1/256, the key byte's, as on hardware (rxe draws a byte other than the
 * previous one too). A reissued slot comes from the FIFO, not from the
 * free slots, because only the FIFO remembers a slot's last key; so the
 * taken slots are the live keys plus the quarantine (at most 1/8 of the
 * space whenever a free one is drawn: params.h), and the FIFO holds
 * UR_KEY_QUARANTINE keys plus at most the live keys of a burst of
 * deregistrations. Wall-clock time plays
 * no part: a minimum age would let memory grow with the churn rate, and
 * the count alone gives about a second at the fastest churn, much more
 * at any real one (params.h).
 *
 * A window keeps its slot for life: a bind changes only its key byte
 * (IBA, ibv_inc_rkey), which the map never sees, and may give it any
 * byte, that of a dead key of its slot too, as on hardware; its current
 * key is the one retired. So binds and invalidates, which run in the
 * engine under dev->obj_lock held for reading, never modify the map or
 * dev->keys; only registration and removal do, as writers. Devices live
 * until the process exits, so a slot stays quarantined across the
 * device's close and reopen.
 *
 * An MR's fields change only under dev->obj_lock held for writing. A
 * window's fields change under its own spinlock (bind, invalidate), which
 * the engine's lookups take too, for windows only.
 *
 * Registration rules (decided here, the man pages leave them open):
 *  - length 0 is a valid, empty MR (mlx5 and rxe register them; only
 *    zero-length accesses pass through it), at any address; otherwise a
 *    NULL address is EINVAL, and so is addr + length or iova + length
 *    wrapping past 2^64;
 *  - ZERO_BASED: the MR's iova is 0 whatever iova the call gave (the
 *    peer addresses offsets; ibv_mr.addr stays the host address);
 *  - REMOTE_WRITE or REMOTE_ATOMIC without LOCAL_WRITE: EINVAL (IBA);
 *  - FLUSH_GLOBAL is accepted (a FLUSH needs it, resp.c);
 *    FLUSH_PERSISTENT is EINVAL, as rxe answers for memory that is not
 *    pmem: nothing uroce reaches is persistent memory; windows grant
 *    neither (a FLUSH names an MR's rkey);
 *  - ON_DEMAND and HUGETLB are accepted (nothing is ever pinned, so every
 *    MR already behaves as on-demand); ON_DEMAND with addr NULL and length
 *    SIZE_MAX is an implicit ODP MR: the whole address space, iova = host
 *    address; ibv_advise_mr only validates (there is nothing to fault in);
 *    bits of IBV_ACCESS_OPTIONAL_RANGE
 *    are ignored as rdma-core specifies; any unknown bit: EINVAL;
 *  - memory a NIC could not pin (not mapped, or not writable where the
 *    access flags write): EFAULT, on reg and rereg (mem_probe.c);
 *  - rereg keeps lkey/rkey, sets iova = addr (0 when zero-based) on
 *    CHANGE_TRANSLATION, and is refused (EBUSY) while windows are bound,
 *    like dereg.
 */
#include <errno.h>
#include <stdlib.h>

#include "obj/mem_probe.h"
#include "obj/obj_priv.h"
#include "obj/params.h"
#include "util/random.h"

/* the slot's index (dev->keys.taken) and its name in dev->mem_keys,
 * which must not be 0 */
#define UR_KEY_IDX(k) ((uint32_t)(k) >> 8)
#define UR_KEY_SLOT(k) (UR_KEY_IDX(k) + 1)
#define UR_KEY_TAG_MASK 0xFFu

/* LOCAL_WRITE is accepted in a bind (rxe and mlx5 do; pyverbs' tests
 * pass it) and means nothing: a window grants remote access only. */
#define UR_MW_ACCESS_SUPPORTED                                                 \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED |                    \
	 IBV_ACCESS_LOCAL_WRITE)
#define UR_MW_ACCESS_GRANTS                                                    \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |                    \
	 IBV_ACCESS_REMOTE_ATOMIC)
#define UR_ACCESS_NEEDS_LOCAL_WRITE                                            \
	(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)

static struct ur_mw *mem_to_mw(const struct ur_mem *m)
{
	return container_of((struct ur_mem *)m, struct ur_mw, mem);
}

void ur_key_space_init(struct ur_key_space *ks)
{
	*ks = (struct ur_key_space){ .slot_bits = UR_KEY_SLOT_BITS,
				     .quarantine = UR_KEY_QUARANTINE };
}

void ur_key_space_fini(struct ur_key_space *ks)
{
	free(ks->taken);
	free(ks->retired);
	ur_key_space_init(ks);
}

static bool slot_taken(const struct ur_key_space *ks, uint32_t idx)
{
	return ks->taken[idx >> 3] & (1u << (idx & 7));
}

/*
 * Room for every retirement to come: the ring holds at least its keys
 * plus one per live key and the one about to be issued, so retiring a key
 * (dereg, dealloc) never allocates and never fails. The slot bitmap is
 * allocated on the first key (2 MiB; pages untouched cost nothing).
 */
static int keys_reserve(struct ur_key_space *ks)
{
	uint64_t need = (uint64_t)ks->len + ks->live + 1;
	uint32_t *ring, i;
	size_t size;

	if (!ks->taken) {
		ks->taken = calloc(((size_t)1 << ks->slot_bits) / 8 + 1, 1);
		if (!ks->taken)
			return -ENOMEM;
	}
	if (need <= ks->size)
		return 0;
	size = need < 64 ? 64 : need + need / 2;
	ring = malloc(size * sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (i = 0; i < ks->len; i++)
		ring[i] = ks->retired[(ks->head + i) % ks->size];
	free(ks->retired);
	ks->retired = ring;
	ks->head = 0;
	ks->size = (uint32_t)size;
	return 0;
}

/* The oldest quarantined slot again, with a key byte its last key did not
 * have (a stale key of its last holder must not name the new object). */
static uint32_t key_reissue(struct ur_key_space *ks)
{
	uint32_t old = ks->retired[ks->head];

	ks->head = (ks->head + 1) % ks->size;
	ks->len--;
	for (;;) {
		uint32_t r = ur_random_u32();

		for (int i = 0; i < 4; i++, r >>= 8) {
			uint32_t k = (old & ~UR_KEY_TAG_MASK) |
				     (r & UR_KEY_TAG_MASK);

			if (k != old && k)
				return k;
		}
	}
}

/* Caller holds dev->obj_lock for writing, which is what guards dev->keys
 * (not dev->lock: close_device holds that while it joins the progress
 * thread, which may wait for obj_lock). */
static int key_new(struct ur_device *dev, uint32_t *key)
{
	struct ur_key_space *ks = &dev->keys;
	int err = keys_reserve(ks);

	if (err)
		return err;
	for (int i = 0; ks->len < ks->quarantine && i < UR_KEY_TRIES; i++) {
		uint32_t r = ur_random_u32();
		/* a shrunk space (tests) is the low slots */
		uint32_t idx = UR_KEY_IDX(r) >>
			       (UR_KEY_SLOT_BITS - ks->slot_bits);
		uint32_t k = idx << 8 | (r & UR_KEY_TAG_MASK);

		if (!k || slot_taken(ks, idx))
			continue;
		ks->taken[idx >> 3] |= (uint8_t)(1u << (idx & 7));
		ks->live++;
		*key = k;
		return 0;
	}
	if (!ks->len)
		return -ENOSPC;	/* every slot is live */
	*key = key_reissue(ks);
	ks->live++;
	return 0;
}

/* The key of an MR or MW gone (or never published): its slot is
 * quarantined. keys_reserve made room. Caller holds dev->obj_lock for
 * writing. */
static void key_retire(struct ur_device *dev, uint32_t key)
{
	struct ur_key_space *ks = &dev->keys;

	ks->retired[(ks->head + ks->len) % ks->size] = key;
	ks->len++;
	ks->live--;
}

/* Caller holds dev->obj_lock for writing. */
static int key_publish(struct ur_device *dev, struct ur_mem *m)
{
	int err = key_new(dev, &m->key);

	if (err)
		return err;
	err = ur_u32_map_insert(&dev->mem_keys, UR_KEY_SLOT(m->key), m);
	if (err)
		key_retire(dev, m->key);
	return err;
}

int ur_mr_access_ok(unsigned int access)
{
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (access & ~(unsigned int)UR_MR_ACCESS_SUPPORTED)
		return -EINVAL;
	if ((access & UR_ACCESS_NEEDS_LOCAL_WRITE) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/* Implicit ODP: the whole address space, iova == host address. */
static bool mr_is_implicit(const void *addr, size_t length,
			   unsigned int access)
{
	return !addr && length == SIZE_MAX && (access & IBV_ACCESS_ON_DEMAND);
}

static int range_ok(const void *addr, size_t length, uint64_t iova)
{
	if (!length)
		return 0;
	if (!addr)
		return -EINVAL;
	if ((uintptr_t)addr + (length - 1) < (uintptr_t)addr)
		return -EINVAL;
	if (iova + (length - 1) < iova)
		return -EINVAL;
	return 0;
}

int ur_mr_reg(struct ur_pd *given, void *addr, size_t length, uint64_t iova,
	      unsigned int access, struct ur_mr **out)
{
	struct ur_device *dev = ur_ctx_dev(given->ibpd.context);
	struct ur_pd *pd = ur_pd_prot(given);	/* a parent domain's PD */
	struct ur_mr *mr;
	int err;

	err = ur_mr_access_ok(access);
	if (!err && !mr_is_implicit(addr, length, access))
		err = range_ok(addr, length, iova);
	if (!err && length)	/* an empty MR names no memory to probe */
		err = ur_mem_probe(addr, length, access);
	if (err)
		return err;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->mem.kind = UR_MEM_MR;
	mr->mem.pd = pd;
	mr->mem.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : iova;
	mr->mem.length = length;
	mr->mem.host_base = (uintptr_t)addr;
	mr->mem.access = access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	mr->mem.valid = true;
	atomic_init(&mr->num_mw, 0);

	pthread_rwlock_wrlock(&dev->obj_lock);
	err = key_publish(dev, &mr->mem);
	pthread_rwlock_unlock(&dev->obj_lock);
	if (err) {
		free(mr);
		return err;
	}
	mr->ibmr.context = pd->ibpd.context;
	mr->ibmr.pd = &given->ibpd;
	mr->ibmr.addr = addr;
	mr->ibmr.length = length;
	mr->ibmr.handle = ur_obj_handle();
	mr->ibmr.lkey = mr->mem.key;
	mr->ibmr.rkey = mr->mem.key;
	atomic_fetch_add(&pd->usecnt, 1);
	*out = mr;
	return 0;
}

int ur_mr_rereg(struct ur_mr *mr, int flags, struct ur_pd *pd, void *addr,
		size_t length, unsigned int access)
{
	struct ur_device *dev = ur_ctx_dev(mr->ibmr.context);
	struct ur_pd *old_pd = mr->mem.pd;
	int err = 0;

	if (!flags || (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		return -EINVAL;
	/* a DM MR's memory is the DM's: it cannot move to host memory */
	if (mr->dm && (flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		return -EINVAL;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION)
		err = range_ok(addr, length, (uintptr_t)addr);
	if (!err && (flags & IBV_REREG_MR_CHANGE_ACCESS))
		err = ur_mr_access_ok(access);
	if (!err && (flags & IBV_REREG_MR_CHANGE_PD) && !pd)
		err = -EINVAL;
	if (!err && (flags & IBV_REREG_MR_CHANGE_TRANSLATION))
		err = ur_mem_probe(addr, length,
				   flags & IBV_REREG_MR_CHANGE_ACCESS ?
					   access : mr->mem.access);
	else if (!err && (flags & IBV_REREG_MR_CHANGE_ACCESS))
		err = ur_mem_probe(mr->ibmr.addr, mr->ibmr.length, access);
	if (err)
		return err;

	pthread_rwlock_wrlock(&dev->obj_lock);
	if (atomic_load(&mr->num_mw)) {
		pthread_rwlock_unlock(&dev->obj_lock);
		return -EBUSY;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->mem.access =
			access & ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE;
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->mem.iova = (mr->mem.access & IBV_ACCESS_ZERO_BASED) ?
				       0 : (uintptr_t)addr;
		mr->mem.length = length;
		mr->mem.host_base = (uintptr_t)addr;
		mr->ibmr.addr = addr;
		mr->ibmr.length = length;
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) && ur_pd_prot(pd) != old_pd) {
		mr->mem.pd = ur_pd_prot(pd);
		mr->ibmr.pd = &pd->ibpd;
		atomic_fetch_add(&mr->mem.pd->usecnt, 1);
		atomic_fetch_sub(&old_pd->usecnt, 1);
	}
	pthread_rwlock_unlock(&dev->obj_lock);
	return 0;
}

int ur_mr_dereg(struct ur_mr *mr)
{
	struct ur_device *dev = ur_ctx_dev(mr->ibmr.context);
	struct ur_pd *pd = mr->mem.pd;

	pthread_rwlock_wrlock(&dev->obj_lock);
	if (atomic_load(&mr->num_mw)) {
		pthread_rwlock_unlock(&dev->obj_lock);
		return -EBUSY;
	}
	ur_u32_map_remove(&dev->mem_keys, UR_KEY_SLOT(mr->mem.key));
	key_retire(dev, mr->mem.key);
	mr->mem.valid = false;
	pthread_rwlock_unlock(&dev->obj_lock);
	atomic_fetch_sub(&pd->usecnt, 1);
	if (mr->dm)
		atomic_fetch_sub(&mr->dm->usecnt, 1);
	free(mr);
	return 0;
}

int ur_mw_alloc(struct ur_pd *given, enum ibv_mw_type type, struct ur_mw **out)
{
	struct ur_device *dev = ur_ctx_dev(given->ibpd.context);
	struct ur_pd *pd = ur_pd_prot(given);
	struct ur_mw *mw;
	int err;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)
		return -EINVAL;
	mw = calloc(1, sizeof(*mw));
	if (!mw)
		return -ENOMEM;
	pthread_spin_init(&mw->lock, PTHREAD_PROCESS_PRIVATE);
	mw->mem.kind = UR_MEM_MW;
	mw->mem.pd = pd;
	/* Type 1 starts valid with an empty window; type 2 starts free. */
	mw->mem.valid = type == IBV_MW_TYPE_1;

	pthread_rwlock_wrlock(&dev->obj_lock);
	err = key_publish(dev, &mw->mem);
	pthread_rwlock_unlock(&dev->obj_lock);
	if (err) {
		pthread_spin_destroy(&mw->lock);
		free(mw);
		return err;
	}
	mw->ibmw.context = pd->ibpd.context;
	mw->ibmw.pd = &given->ibpd;
	mw->ibmw.rkey = mw->mem.key;
	mw->ibmw.handle = ur_obj_handle();
	mw->ibmw.type = type;
	atomic_fetch_add(&pd->usecnt, 1);
	*out = mw;
	return 0;
}

int ur_mw_dealloc(struct ur_mw *mw)
{
	struct ur_device *dev = ur_ctx_dev(mw->ibmw.context);
	struct ur_pd *pd = mw->mem.pd;

	pthread_rwlock_wrlock(&dev->obj_lock);
	ur_u32_map_remove(&dev->mem_keys, UR_KEY_SLOT(mw->mem.key));
	key_retire(dev, mw->mem.key);	/* a type 2's key byte as last bound */
	if (mw->mr)
		atomic_fetch_sub(&mw->mr->num_mw, 1);
	mw->mr = NULL;
	pthread_rwlock_unlock(&dev->obj_lock);
	atomic_fetch_sub(&pd->usecnt, 1);
	pthread_spin_destroy(&mw->lock);
	free(mw);
	return 0;
}

uint32_t ur_mw_rkey(struct ur_mw *mw)
{
	uint32_t k;

	pthread_spin_lock(&mw->lock);
	k = mw->mem.key;
	pthread_spin_unlock(&mw->lock);
	return k;
}

int ur_mr_advise(struct ur_pd *given, int advice, uint32_t flags,
		 const struct ibv_sge *sg, uint32_t num_sge)
{
	struct ur_device *dev = ur_ctx_dev(given->ibpd.context);
	struct ur_pd *pd = ur_pd_prot(given);
	uint32_t i;
	int err = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || (num_sge && !sg))
		return -EINVAL;
	pthread_rwlock_rdlock(&dev->obj_lock);
	for (i = 0; i < num_sge && !err; i++) {
		struct ur_mem *m = ur_mem_lookup(dev, sg[i].lkey);
		uintptr_t host;

		if (!m)
			err = -EFAULT;
		else if (m->kind != UR_MEM_MR)
			err = -EINVAL;
		else if (m->pd != pd)
			err = -EPERM;
		else if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
			 !(m->access & IBV_ACCESS_LOCAL_WRITE))
			err = -EPERM;
		else if (ur_mem_check(m, pd, 0, sg[i].addr, sg[i].length, 0,
				      &host))
			err = -EFAULT;
	}
	pthread_rwlock_unlock(&dev->obj_lock);
	/* nothing is ever paged out by us: a valid range needs no work */
	return err;
}

/* ------------------------------------------------------------------ */
/* Engine-facing                                                       */
/* ------------------------------------------------------------------ */

struct ur_mem *ur_mem_lookup(struct ur_device *dev, uint32_t key)
{
	struct ur_mem *m = ur_u32_map_find(&dev->mem_keys, UR_KEY_SLOT(key));
	struct ur_mw *mw;
	bool match;

	if (!m)
		return NULL;
	if (m->kind == UR_MEM_MR)
		return m->key == key ? m : NULL;
	mw = mem_to_mw(m);
	pthread_spin_lock(&mw->lock);
	match = m->key == key;
	pthread_spin_unlock(&mw->lock);
	return match ? m : NULL;
}

static int mem_check_locked(const struct ur_mem *m, const struct ur_pd *pd,
			    uint64_t iova, uint64_t len, unsigned int access,
			    uintptr_t *host)
{
	if (!m->valid || m->pd != pd)
		return -EACCES;
	if (access & ~m->access)
		return -EACCES;
	if (!len) {
		*host = m->host_base;
		return 0;
	}
	if (iova < m->iova || len > m->length ||
	    iova - m->iova > m->length - len)
		return -EINVAL;
	*host = m->host_base + (uintptr_t)(iova - m->iova);
	return 0;
}

int ur_mem_check(const struct ur_mem *m, const struct ur_pd *pd,
		 uint32_t qp_num, uint64_t iova, uint64_t len,
		 unsigned int access, uintptr_t *host)
{
	struct ur_mw *mw;
	int err;

	if (m->kind == UR_MEM_MR)
		return mem_check_locked(m, pd, iova, len, access, host);
	mw = mem_to_mw(m);
	pthread_spin_lock(&mw->lock);
	if (mw->ibmw.type == IBV_MW_TYPE_2 && mw->qp_num != qp_num)
		err = -EACCES;
	else
		err = mem_check_locked(m, pd, iova, len, access, host);
	pthread_spin_unlock(&mw->lock);
	return err;
}

/* The MR side of a bind; the MR is stable under dev->obj_lock (read). */
static int bind_mr_ok(const struct ur_mr *mr, const struct ur_pd *pd,
		      uint64_t addr, uint64_t length, unsigned int access)
{
	const struct ur_mem *m = &mr->mem;

	if (!m->valid || m->pd != pd)
		return -EACCES;
	if (!(m->access & IBV_ACCESS_MW_BIND))
		return -EACCES;
	if ((access & UR_ACCESS_NEEDS_LOCAL_WRITE) &&
	    !(m->access & IBV_ACCESS_LOCAL_WRITE))
		return -EACCES;
	if (addr < m->iova || length > m->length ||
	    addr - m->iova > m->length - length)
		return -EINVAL;
	return 0;
}

int ur_mw_bind_wqe(struct ur_qp *qp, struct ur_send_wqe *wqe)
{
	struct ur_mw *mw = wqe->bind.mw;
	struct ur_mr *mr = wqe->bind.mr;
	uint64_t addr = wqe->bind.addr, length = wqe->bind.length;
	unsigned int access = wqe->bind.access;
	uint32_t rkey = wqe->bind.rkey;
	bool type2;
	int err = 0;

	if (!mw || (qp->type != IBV_QPT_RC && qp->type != IBV_QPT_UC))
		return -EINVAL;
	if (mw->mem.pd != qp->pd)
		return -EACCES;
	if (access & ~(unsigned int)UR_MW_ACCESS_SUPPORTED)
		return -EINVAL;
	type2 = mw->ibmw.type == IBV_MW_TYPE_2;
	if (!type2 && (access & IBV_ACCESS_ZERO_BASED))
		return -EINVAL;
	/* a type 2 window is emptied by invalidation, never by a bind of
	 * length 0 (mlx5: MW_BIND_ERR; type 1 unbinds that way) */
	if (type2 && !length)
		return -EINVAL;
	if (length && !mr)
		return -EINVAL;
	if (mr) {
		err = bind_mr_ok(mr, qp->pd, addr, length, access);
		if (err)
			return err;
	}

	pthread_spin_lock(&mw->lock);
	if (type2 && mw->mem.valid) {
		pthread_spin_unlock(&mw->lock);
		return -EINVAL;		/* type 2 binds only when free */
	}
	/* the window keeps its index (slot); the WR supplies only the key
	 * byte, as mlx5 and rxe read it (ibv_inc_rkey changes that byte) */
	rkey = (mw->mem.key & ~UR_KEY_TAG_MASK) | (rkey & UR_KEY_TAG_MASK);
	if (mw->mr)
		atomic_fetch_sub(&mw->mr->num_mw, 1);
	mw->mem.key = rkey;
	if (!length) {
		/* zero length: an empty window (type 1: unbound) */
		mw->mr = NULL;
		mw->mem.iova = 0;
		mw->mem.length = 0;
		mw->mem.host_base = 0;
		mw->mem.access = 0;
	} else {
		atomic_fetch_add(&mr->num_mw, 1);
		mw->mr = mr;
		mw->mem.iova = (access & IBV_ACCESS_ZERO_BASED) ? 0 : addr;
		mw->mem.length = length;
		mw->mem.host_base =
			mr->mem.host_base + (uintptr_t)(addr - mr->mem.iova);
		mw->mem.access = access & UR_MW_ACCESS_GRANTS;
	}
	mw->mem.valid = true;
	mw->qp_num = qp->ibqp_ex.qp_base.qp_num;
	pthread_spin_unlock(&mw->lock);
	/* type 1: ibv_bind_mw already told the user the new rkey */
	if (type2)
		mw->ibmw.rkey = rkey;
	return 0;
}

int ur_mem_invalidate(struct ur_device *dev, struct ur_pd *pd,
		      uint32_t qp_num, uint32_t rkey)
{
	struct ur_mem *m = ur_mem_lookup(dev, rkey);
	struct ur_mw *mw;
	int err = 0;

	/* MRs: only fast-registration MRs are invalidatable; none exist. */
	if (!m || m->kind != UR_MEM_MW)
		return -EINVAL;
	mw = mem_to_mw(m);
	if (mw->ibmw.type != IBV_MW_TYPE_2)
		return -EINVAL;
	pthread_spin_lock(&mw->lock);
	if (m->key != rkey || !m->valid)
		err = -EINVAL;
	else if (m->pd != pd)
		err = -EACCES;
	else if (mw->qp_num != qp_num)
		err = -EACCES;		/* type 2B: only its own QP (IBA) */
	if (!err) {
		m->valid = false;
		if (mw->mr)
			atomic_fetch_sub(&mw->mr->num_mw, 1);
		mw->mr = NULL;
		mw->qp_num = 0;
	}
	pthread_spin_unlock(&mw->lock);
	return err;
}
