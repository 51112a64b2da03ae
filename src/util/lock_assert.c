// SPDX-License-Identifier: BSD-2-Clause
/*
 * The debug half of util/lock_assert.h: the per-thread list of read locks
 * and spinlocks, and the checks. Compiled to nothing in release builds.
 */
#include "util/lock_assert.h"

#if UR_LOCK_ASSERT

#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

static __thread const void *held[UR_LOCK_MAX_HELD];
static __thread unsigned int nheld;

/* gettid() is a system call each time: cache it, and forget it in a fork
 * child, whose one thread has a new id */
static __thread pid_t self_tid;

static void forget_tid(void)
{
	self_tid = 0;
}

__attribute__((constructor)) static void lock_assert_init(void)
{
	pthread_atfork(NULL, NULL, forget_tid);
}

static pid_t self(void)
{
	if (!self_tid)
		self_tid = gettid();
	return self_tid;
}

__attribute__((noreturn)) static void lock_fail(const struct ur_lock_site *s,
						const char *what)
{
	fprintf(stderr, "uroce: lock assertion failed at %s:%d in %s(): %s %s\n",
		s->file, s->line, s->func, s->expr, what);
	abort();
}

void ur_lock_note_acquired(const void *lock)
{
	if (nheld == UR_LOCK_MAX_HELD) {
		fprintf(stderr, "uroce: lock assertion: a thread holds more than %d read locks and spinlocks\n",
			UR_LOCK_MAX_HELD);
		abort();
	}
	held[nheld++] = lock;
}

void ur_lock_note_released(const void *lock, const char *what)
{
	unsigned int i;

	/* the newest entry first: a read lock taken twice is held twice */
	for (i = nheld; i-- > 0;) {
		if (held[i] == lock) {
			held[i] = held[--nheld];
			return;
		}
	}
	fprintf(stderr, "uroce: lock assertion: unlock of a %s %p this thread did not take through util/lock_assert.h\n",
		what, lock);
	abort();
}

bool ur_lock_noted(const void *lock)
{
	unsigned int i;

	for (i = 0; i < nheld; i++)
		if (held[i] == lock)
			return true;
	return false;
}

static void check(bool held_now, enum ur_lock_want want,
		  const struct ur_lock_site *site)
{
	if (want == UR_LOCK_WANT_NONE && held_now)
		lock_fail(site, "is held by this thread");
	if (want != UR_LOCK_WANT_NONE && !held_now)
		lock_fail(site, want == UR_LOCK_WANT_WRITE ?
				"is not write-locked by this thread" :
				"is not held by this thread");
}

void ur_lock_check_mutex(const pthread_mutex_t *m, enum ur_lock_want want,
			 const struct ur_lock_site *site)
{
#ifdef __GLIBC__
	check(m->__data.__owner == self(), want, site);
#else
	(void)m, (void)want, (void)site;
#endif
}

bool ur_lock_rw_is_writer(const pthread_rwlock_t *l)
{
#ifdef __GLIBC__
	return (pid_t)l->__data.__cur_writer == self();
#else
	(void)l;
	return false;
#endif
}

void ur_lock_check_rwlock(const pthread_rwlock_t *l, enum ur_lock_want want,
			  const struct ur_lock_site *site)
{
	bool writer = ur_lock_rw_is_writer(l);

	if (want == UR_LOCK_WANT_WRITE)
		check(writer, want, site);
	else
		check(writer || ur_lock_noted(l), want, site);
}

void ur_lock_check_spin(const volatile int *s, enum ur_lock_want want,
			const struct ur_lock_site *site)
{
	check(ur_lock_noted((const void *)s), want, site);
}

#endif
