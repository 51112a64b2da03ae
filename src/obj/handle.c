/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Live objects: which ibv_* pointers we handed out, and how many of each
 * kind a device holds.
 *
 * A kernel provider resolves every object a control verb names through its
 * handle, so a destroyed, garbled or foreign object is answered with an
 * error (ENOENT) instead of being freed twice. Our objects are plain heap
 * memory the application holds pointers into, so a verb must know the
 * pointer is one of ours before it reads a byte through it. This is a
 * process-wide open-addressing set keyed by the pointer value (never
 * dereferenced to find it), each entry remembering the kind, the context
 * and the handle the object was created with. A check finds the entry, and
 * only then compares the object's context and handle fields with it, which
 * catches an application that overwrote them.
 *
 * The data path (post_send/recv, poll_cq, req_notify_cq, post_srq_recv)
 * does not look here: in rdma-core those run in user space without the
 * kernel too, and a lookup under a lock would cost every WR.
 *
 * Removal is split in two for destroy verbs that may refuse (EBUSY): take
 * hides the entry, so a concurrent second destroy already fails, and
 * either drop (destroyed) or restore (refused) ends it.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>

#include "obj/obj_priv.h"

#define SLOT_EMPTY 0
#define SLOT_TOMB 1

struct live_entry {
	uintptr_t key;			/* object pointer; EMPTY/TOMB markers */
	struct ur_device *dev;
	struct ibv_context *ctx;
	uint32_t handle;
	uint8_t kind;
	bool taken;			/* a destroy is in progress */
};

static struct {
	pthread_mutex_t lock;
	struct live_entry *slots;
	size_t cap;			/* power of two */
	size_t used;			/* live + tombstones */
	size_t live;
} reg = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Per-device object limit of each kind (0: none beyond memory). */
static unsigned int kind_limit(enum ur_obj_kind kind)
{
	switch (kind) {
	case UR_OBJ_PD:
		return UR_MAX_PD;
	case UR_OBJ_MR:
		return UR_MAX_MR;
	case UR_OBJ_MW:
		return UR_MAX_MW;
	case UR_OBJ_CQ:
		return UR_MAX_CQ;
	case UR_OBJ_SRQ:
		return UR_MAX_SRQ;
	case UR_OBJ_AH:
		return UR_MAX_AH;
	case UR_OBJ_DM:
		return UR_MAX_DM;
	default:
		return 0;	/* QPs: qp.c counts them by number */
	}
}

/* The handle field's offset in each ibv_* struct; -1 when it has none. */
static ptrdiff_t handle_offset(enum ur_obj_kind kind)
{
	switch (kind) {
	case UR_OBJ_PD:
		return offsetof(struct ibv_pd, handle);
	case UR_OBJ_MR:
		return offsetof(struct ibv_mr, handle);
	case UR_OBJ_MW:
		return offsetof(struct ibv_mw, handle);
	case UR_OBJ_CQ:
		return offsetof(struct ibv_cq, handle);
	case UR_OBJ_QP:
	case UR_OBJ_QP_OPEN:
		return offsetof(struct ibv_qp, handle);
	case UR_OBJ_SRQ:
		return offsetof(struct ibv_srq, handle);
	case UR_OBJ_AH:
		return offsetof(struct ibv_ah, handle);
	case UR_OBJ_DM:
		return offsetof(struct ibv_dm, handle);
	default:
		return -1;
	}
}

static size_t hash_ptr(uintptr_t p)
{
	uint64_t x = (uint64_t)p;

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x;
}

/* Caller holds reg.lock. The slot of key, or NULL. */
static struct live_entry *find_locked(uintptr_t key)
{
	size_t i, n;

	if (!reg.cap)
		return NULL;
	for (i = hash_ptr(key) & (reg.cap - 1), n = 0; n < reg.cap;
	     i = (i + 1) & (reg.cap - 1), n++) {
		struct live_entry *e = &reg.slots[i];

		if (e->key == SLOT_EMPTY)
			return NULL;
		if (e->key == key)
			return e;
	}
	return NULL;
}

static int grow_locked(void)
{
	size_t cap = reg.cap ? reg.cap * 2 : 256, i;
	struct live_entry *old = reg.slots, *slots;

	/* only live entries move, so a table full of tombstones shrinks */
	while (cap / 2 > reg.live * 2 + 256 && cap > 256)
		cap /= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < reg.cap; i++) {
		size_t j;

		if (old[i].key <= SLOT_TOMB)
			continue;
		for (j = hash_ptr(old[i].key) & (cap - 1); slots[j].key;
		     j = (j + 1) & (cap - 1))
			;
		slots[j] = old[i];
	}
	free(old);
	reg.slots = slots;
	reg.cap = cap;
	reg.used = reg.live;
	return 0;
}

int ur_live_add(struct ur_device *dev, enum ur_obj_kind kind, const void *obj,
		struct ibv_context *ctx, uint32_t handle)
{
	uintptr_t key = (uintptr_t)obj;
	unsigned int limit = kind_limit(kind);
	struct live_entry *e;
	size_t i;
	int err = 0;

	pthread_mutex_lock(&reg.lock);
	if (limit && dev->obj_count[kind] >= limit) {
		err = -ENOMEM;
		goto out;
	}
	if ((reg.used + 1) * 4 > reg.cap * 3) {
		err = grow_locked();
		if (err)
			goto out;
	}
	e = find_locked(key);
	if (e && !e->taken) {
		err = -EEXIST;
		goto out;
	}
	if (e) {
		/* the address of an object whose destroy freed it and has not
		 * dropped it yet: that object is gone, this one takes over */
		e->dev->obj_count[e->kind]--;
		e->key = SLOT_TOMB;
		reg.live--;
	}
	for (i = hash_ptr(key) & (reg.cap - 1); reg.slots[i].key > SLOT_TOMB;
	     i = (i + 1) & (reg.cap - 1))
		;
	if (reg.slots[i].key == SLOT_EMPTY)
		reg.used++;
	reg.slots[i] = (struct live_entry){
		.key = key, .dev = dev, .ctx = ctx, .handle = handle,
		.kind = (uint8_t)kind,
	};
	reg.live++;
	dev->obj_count[kind]++;
out:
	pthread_mutex_unlock(&reg.lock);
	return err;
}

/* Caller holds reg.lock. 0, -ENOENT (not ours, wrong kind, being
 * destroyed, handle changed) or -EINVAL (its context was overwritten). */
static int check_locked(struct live_entry *e, enum ur_obj_kind kind,
			const void *obj, bool handle)
{
	ptrdiff_t off = handle ? handle_offset(kind) : -1;

	if (!e || e->kind != kind || e->taken)
		return -ENOENT;
	/* every ibv_* object starts with its context pointer */
	if (*(struct ibv_context *const *)obj != e->ctx)
		return -EINVAL;
	if (off >= 0 &&
	    *(const uint32_t *)((const char *)obj + off) != e->handle)
		return -ENOENT;
	return 0;
}

int ur_live_check(enum ur_obj_kind kind, const void *obj)
{
	int err;

	if (!obj)
		return -EINVAL;
	pthread_mutex_lock(&reg.lock);
	err = check_locked(find_locked((uintptr_t)obj), kind, obj, true);
	pthread_mutex_unlock(&reg.lock);
	return err;
}

int ur_live_check_ptr(enum ur_obj_kind kind, const void *obj)
{
	int err;

	if (!obj)
		return -EINVAL;
	pthread_mutex_lock(&reg.lock);
	err = check_locked(find_locked((uintptr_t)obj), kind, obj, false);
	pthread_mutex_unlock(&reg.lock);
	return err;
}

int ur_live_take(enum ur_obj_kind kind, const void *obj)
{
	struct live_entry *e;
	int err;

	if (!obj)
		return -EINVAL;
	pthread_mutex_lock(&reg.lock);
	e = find_locked((uintptr_t)obj);
	err = check_locked(e, kind, obj, true);
	if (!err)
		e->taken = true;
	pthread_mutex_unlock(&reg.lock);
	return err;
}

void ur_live_restore(const void *obj)
{
	struct live_entry *e;

	pthread_mutex_lock(&reg.lock);
	e = find_locked((uintptr_t)obj);
	if (e && e->taken)
		e->taken = false;
	pthread_mutex_unlock(&reg.lock);
}

void ur_live_drop(const void *obj)
{
	struct live_entry *e;

	pthread_mutex_lock(&reg.lock);
	e = find_locked((uintptr_t)obj);
	/* not taken: a new object already reuses the address (see add) */
	if (e && e->taken) {
		e->dev->obj_count[e->kind]--;
		e->key = SLOT_TOMB;
		reg.live--;
	}
	pthread_mutex_unlock(&reg.lock);
}

unsigned int ur_live_count(const struct ur_device *dev, enum ur_obj_kind kind)
{
	unsigned int n;

	pthread_mutex_lock(&reg.lock);
	n = dev->obj_count[kind];
	pthread_mutex_unlock(&reg.lock);
	return n;
}
