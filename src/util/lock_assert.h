/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Lock assertions: a function whose comment says "called with X held"
 * says it in code too, and a debug build checks it.
 *
 *   UR_ASSERT_HELD(&qp->sq_lock);         this thread holds it (any mode)
 *   UR_ASSERT_RDLOCKED(&dev->obj_lock);   read or write, by this thread
 *   UR_ASSERT_WRLOCKED(&dev->obj_lock);   write, by this thread
 *   UR_ASSERT_NOT_HELD(&cq->lock);        for a function that takes it
 *
 * The argument is a pthread_mutex_t *, pthread_rwlock_t * or
 * pthread_spinlock_t * (const or not). A failed assertion prints the file,
 * line, function and lock expression to stderr and aborts.
 *
 * Checked when NDEBUG is not defined (CMAKE_BUILD_TYPE=Debug: the ASan and
 * TSan builds of scripts/test.sh), or when UR_LOCK_ASSERT is defined to 1;
 * otherwise every macro and wrapper compiles to the plain pthread call or
 * to nothing.
 *
 * How "held by this thread" is known, per lock type (glibc):
 *  - mutex: glibc records the owner's thread id in the mutex itself
 *    (__data.__owner, set by every successful lock and trylock, also under
 *    TSan, which calls glibc's lock), so plain pthread_mutex_lock() is
 *    enough. Lock elision (glibc.elision tunable, off by default) would
 *    leave the owner unset: debug runs must not turn it on.
 *  - rwlock, write mode: glibc records the writer (__data.__cur_writer).
 *  - rwlock, read mode, and spinlocks: nothing records a reader or a
 *    spinner, so these are taken and released through the wrappers below,
 *    which keep a per-thread list of what this thread holds. A read lock
 *    or spinlock asserted on must use the wrappers at every lock and
 *    unlock site: a wrapper unlock of a lock the list does not hold
 *    aborts (it was taken with a plain call, or not at all).
 *
 * The wrappers return what the pthread call returns.
 */
#ifndef UR_UTIL_LOCK_ASSERT_H
#define UR_UTIL_LOCK_ASSERT_H

#include <pthread.h>
#include <stdbool.h>

#ifndef UR_LOCK_ASSERT
#ifdef NDEBUG
#define UR_LOCK_ASSERT 0
#else
#define UR_LOCK_ASSERT 1
#endif
#endif

/* read locks and spinlocks one thread may hold at once (debug builds) */
#define UR_LOCK_MAX_HELD 32

enum ur_lock_want {
	UR_LOCK_WANT_HELD,	/* any mode */
	UR_LOCK_WANT_WRITE,	/* rwlock in write mode */
	UR_LOCK_WANT_NONE,	/* not held by this thread */
};

#if UR_LOCK_ASSERT

struct ur_lock_site {
	const char *file;
	int line;
	const char *func;
	const char *expr;
};

/* the per-thread list of read locks and spinlocks held */
void ur_lock_note_acquired(const void *lock);
void ur_lock_note_released(const void *lock, const char *what);
bool ur_lock_noted(const void *lock);

void ur_lock_check_mutex(const pthread_mutex_t *m, enum ur_lock_want want,
			 const struct ur_lock_site *site);
void ur_lock_check_rwlock(const pthread_rwlock_t *l, enum ur_lock_want want,
			  const struct ur_lock_site *site);
void ur_lock_check_spin(const volatile int *s, enum ur_lock_want want,
			const struct ur_lock_site *site);
/* true when this thread holds rwlock l in write mode */
bool ur_lock_rw_is_writer(const pthread_rwlock_t *l);

#define ur_lock_check(lock, want, text)                                       \
	_Generic((lock),                                                       \
		pthread_mutex_t *: ur_lock_check_mutex,                        \
		const pthread_mutex_t *: ur_lock_check_mutex,                  \
		pthread_rwlock_t *: ur_lock_check_rwlock,                      \
		const pthread_rwlock_t *: ur_lock_check_rwlock,                \
		pthread_spinlock_t *: ur_lock_check_spin,                      \
		const pthread_spinlock_t *: ur_lock_check_spin)(               \
		(lock), (want),                                                \
		&(const struct ur_lock_site){ __FILE__, __LINE__, __func__,    \
					      text })

#define UR_ASSERT_HELD(lock) ur_lock_check(lock, UR_LOCK_WANT_HELD, #lock)
#define UR_ASSERT_RDLOCKED(lock)                                              \
	ur_lock_check_rwlock(lock, UR_LOCK_WANT_HELD,                          \
			     &(const struct ur_lock_site){ __FILE__, __LINE__, \
							   __func__, #lock })
#define UR_ASSERT_WRLOCKED(lock)                                              \
	ur_lock_check_rwlock(lock, UR_LOCK_WANT_WRITE,                         \
			     &(const struct ur_lock_site){ __FILE__, __LINE__, \
							   __func__, #lock })
#define UR_ASSERT_NOT_HELD(lock) ur_lock_check(lock, UR_LOCK_WANT_NONE, #lock)

static inline int ur_rwlock_rdlock(pthread_rwlock_t *l)
{
	int rc = pthread_rwlock_rdlock(l);

	if (!rc)
		ur_lock_note_acquired(l);
	return rc;
}

static inline int ur_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	int rc = pthread_rwlock_tryrdlock(l);

	if (!rc)
		ur_lock_note_acquired(l);
	return rc;
}

/* write mode needs no note (glibc knows the writer); unlock tells the two
 * modes apart before the lock forgets its writer */
static inline int ur_rwlock_unlock(pthread_rwlock_t *l)
{
	if (!ur_lock_rw_is_writer(l))
		ur_lock_note_released(l, "read lock");
	return pthread_rwlock_unlock(l);
}

static inline int ur_spin_lock(pthread_spinlock_t *s)
{
	int rc = pthread_spin_lock(s);

	if (!rc)
		ur_lock_note_acquired((const void *)s);
	return rc;
}

static inline int ur_spin_trylock(pthread_spinlock_t *s)
{
	int rc = pthread_spin_trylock(s);

	if (!rc)
		ur_lock_note_acquired((const void *)s);
	return rc;
}

static inline int ur_spin_unlock(pthread_spinlock_t *s)
{
	ur_lock_note_released((const void *)s, "spinlock");
	return pthread_spin_unlock(s);
}

#else /* !UR_LOCK_ASSERT */

#define UR_ASSERT_HELD(lock) ((void)sizeof(lock))
#define UR_ASSERT_RDLOCKED(lock) ((void)sizeof(lock))
#define UR_ASSERT_WRLOCKED(lock) ((void)sizeof(lock))
#define UR_ASSERT_NOT_HELD(lock) ((void)sizeof(lock))

static inline int ur_rwlock_rdlock(pthread_rwlock_t *l)
{
	return pthread_rwlock_rdlock(l);
}

static inline int ur_rwlock_tryrdlock(pthread_rwlock_t *l)
{
	return pthread_rwlock_tryrdlock(l);
}

static inline int ur_rwlock_unlock(pthread_rwlock_t *l)
{
	return pthread_rwlock_unlock(l);
}

static inline int ur_spin_lock(pthread_spinlock_t *s)
{
	return pthread_spin_lock(s);
}

static inline int ur_spin_trylock(pthread_spinlock_t *s)
{
	return pthread_spin_trylock(s);
}

static inline int ur_spin_unlock(pthread_spinlock_t *s)
{
	return pthread_spin_unlock(s);
}

#endif /* UR_LOCK_ASSERT */

/* write locks need no wrapper; these keep call sites symmetrical */
static inline int ur_rwlock_wrlock(pthread_rwlock_t *l)
{
	return pthread_rwlock_wrlock(l);
}

static inline int ur_rwlock_trywrlock(pthread_rwlock_t *l)
{
	return pthread_rwlock_trywrlock(l);
}

#endif
