/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * util/lock_assert.h: with checking on (UR_LOCK_ASSERT=1, entry
 * unit_util_lock_assert) every assertion that should fail aborts with the
 * lock's name on stderr, each one in a forked child; with checking off
 * (entry unit_util_lock_assert_off, the release build's view) the same
 * calls do nothing and the wrappers still lock.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "util/lock_assert.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;

/*
 * Runs fn in a forked child. Returns true when the child aborted with a
 * lock assertion naming `name` on stderr, false when it returned; anything
 * else fails the test.
 */
static bool dies(void (*fn)(void), const char *name)
{
	char out[1024] = "";
	ssize_t n, got = 0;
	int fds[2], status;
	pid_t pid;

	assert_int_equal(pipe(fds), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(fds[0]);
		dup2(fds[1], STDERR_FILENO);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while ((n = read(fds[0], out + got, sizeof(out) - 1 - got)) > 0)
		got += n;
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		assert_int_equal(got, 0);
		return false;
	}
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGABRT)
		fail_msg("child ended with status %#x: %s", status, out);
	if (!strstr(out, "lock assertion") || !strstr(out, name))
		fail_msg("abort without the lock's name %s: %s", name, out);
	return true;
}

/* a lock held by another thread is not held by this one */
static void *hold_mutex(void *arg)
{
	pthread_barrier_t *b = arg;

	pthread_mutex_lock(&mu);
	pthread_barrier_wait(b);	/* locked */
	pthread_barrier_wait(b);	/* main has checked */
	pthread_mutex_unlock(&mu);
	return NULL;
}

static void *hold_rdlock(void *arg)
{
	pthread_barrier_t *b = arg;

	ur_rwlock_rdlock(&rw);
	pthread_barrier_wait(b);
	pthread_barrier_wait(b);
	ur_rwlock_unlock(&rw);
	return NULL;
}

static void with_other_holder(void *(*holder)(void *), void (*check)(void),
			      const char *name, bool want_death)
{
	pthread_barrier_t b;
	pthread_t t;

	pthread_barrier_init(&b, NULL, 2);
	assert_int_equal(pthread_create(&t, NULL, holder, &b), 0);
	pthread_barrier_wait(&b);
	assert_int_equal(dies(check, name), want_death);
	pthread_barrier_wait(&b);
	pthread_join(t, NULL);
	pthread_barrier_destroy(&b);
}

static void mutex_held(void)
{
	UR_ASSERT_HELD(&mu);
}

static void mutex_not_held(void)
{
	UR_ASSERT_NOT_HELD(&mu);
}

static void mutex_locked_held(void)
{
	pthread_mutex_lock(&mu);
	UR_ASSERT_HELD(&mu);
	pthread_mutex_unlock(&mu);
	UR_ASSERT_NOT_HELD(&mu);
}

static void mutex_locked_not_held(void)
{
	pthread_mutex_lock(&mu);
	UR_ASSERT_NOT_HELD(&mu);
}

static void mutex_trylocked_held(void)
{
	if (pthread_mutex_trylock(&mu))
		_exit(3);
	UR_ASSERT_HELD(&mu);
}

static void mutex_errorcheck_held(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	const pthread_mutex_t *cm = &m;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &a);
	pthread_mutex_lock(&m);
	UR_ASSERT_HELD(cm);
	pthread_mutex_unlock(&m);
	UR_ASSERT_HELD(cm);
}

static void test_mutex(void **state)
{
	bool on = UR_LOCK_ASSERT;

	assert_int_equal(dies(mutex_held, "&mu"), on);
	assert_false(dies(mutex_not_held, "&mu"));
	assert_false(dies(mutex_locked_held, "&mu"));
	assert_int_equal(dies(mutex_locked_not_held, "&mu"), on);
	assert_false(dies(mutex_trylocked_held, "&mu"));
	/* the first assertion passes, the one after the unlock fails */
	assert_int_equal(dies(mutex_errorcheck_held, "cm"), on);
	with_other_holder(hold_mutex, mutex_held, "&mu", on);
	with_other_holder(hold_mutex, mutex_not_held, "&mu", false);
}

static void rw_read(void)
{
	UR_ASSERT_RDLOCKED(&rw);
}

static void rw_write(void)
{
	UR_ASSERT_WRLOCKED(&rw);
}

static void rw_not_held(void)
{
	UR_ASSERT_NOT_HELD(&rw);
}

static void rw_wrlocked(void)
{
	ur_rwlock_wrlock(&rw);
	UR_ASSERT_WRLOCKED(&rw);
	UR_ASSERT_RDLOCKED(&rw);	/* a writer may read */
	UR_ASSERT_HELD(&rw);
	ur_rwlock_unlock(&rw);
	UR_ASSERT_NOT_HELD(&rw);
}

static void rw_rdlocked_twice(void)
{
	ur_rwlock_rdlock(&rw);
	if (ur_rwlock_tryrdlock(&rw))
		_exit(3);
	UR_ASSERT_RDLOCKED(&rw);
	ur_rwlock_unlock(&rw);
	UR_ASSERT_HELD(&rw);		/* once more */
	ur_rwlock_unlock(&rw);
	UR_ASSERT_NOT_HELD(&rw);
}

static void rw_rdlocked_write(void)
{
	ur_rwlock_rdlock(&rw);
	UR_ASSERT_WRLOCKED(&rw);
}

static void rw_unlocked_read(void)
{
	ur_rwlock_rdlock(&rw);
	ur_rwlock_unlock(&rw);
	UR_ASSERT_RDLOCKED(&rw);
}

/* taken with the plain call, released through the wrapper */
static void rw_plain_rdlock(void)
{
	pthread_rwlock_rdlock(&rw);
	ur_rwlock_unlock(&rw);
}

static void test_rwlock(void **state)
{
	bool on = UR_LOCK_ASSERT;

	assert_int_equal(dies(rw_read, "&rw"), on);
	assert_int_equal(dies(rw_write, "&rw"), on);
	assert_false(dies(rw_not_held, "&rw"));
	assert_false(dies(rw_wrlocked, "&rw"));
	assert_false(dies(rw_rdlocked_twice, "&rw"));
	assert_int_equal(dies(rw_rdlocked_write, "&rw"), on);
	assert_int_equal(dies(rw_unlocked_read, "&rw"), on);
	assert_int_equal(dies(rw_plain_rdlock, "read lock"), on);
	with_other_holder(hold_rdlock, rw_read, "&rw", on);
	with_other_holder(hold_rdlock, rw_not_held, "&rw", false);
}

static void spin_held(void)
{
	UR_ASSERT_HELD(&spin);
}

static void spin_locked(void)
{
	ur_spin_lock(&spin);
	UR_ASSERT_HELD(&spin);
	ur_spin_unlock(&spin);
	UR_ASSERT_NOT_HELD(&spin);
	if (ur_spin_trylock(&spin))
		_exit(3);
	UR_ASSERT_HELD(&spin);
	ur_spin_unlock(&spin);
}

static void spin_locked_not_held(void)
{
	ur_spin_lock(&spin);
	UR_ASSERT_NOT_HELD(&spin);
}

static void spin_unlock_unheld(void)
{
	pthread_spin_lock(&spin);
	ur_spin_unlock(&spin);
}

static void test_spinlock(void **state)
{
	bool on = UR_LOCK_ASSERT;

	assert_int_equal(dies(spin_held, "&spin"), on);
	assert_false(dies(spin_locked, "&spin"));
	assert_int_equal(dies(spin_locked_not_held, "&spin"), on);
	assert_int_equal(dies(spin_unlock_unheld, "spinlock"), on);
}

/* the wrappers lock in either build: a second thread waits for the first */
static void *try_spin(void *arg)
{
	return (void *)(intptr_t)pthread_spin_trylock(&spin);
}

static void test_wrappers_lock(void **state)
{
	pthread_t t;
	void *rc;

	assert_int_equal(ur_spin_lock(&spin), 0);
	assert_int_equal(pthread_create(&t, NULL, try_spin, NULL), 0);
	pthread_join(t, &rc);
	assert_int_not_equal((intptr_t)rc, 0);
	assert_int_equal(ur_spin_unlock(&spin), 0);
	assert_int_equal(ur_rwlock_wrlock(&rw), 0);
	assert_int_equal(ur_rwlock_tryrdlock(&rw), EBUSY);
	assert_int_equal(ur_rwlock_unlock(&rw), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mutex),
		cmocka_unit_test(test_rwlock),
		cmocka_unit_test(test_spinlock),
		cmocka_unit_test(test_wrappers_lock),
	};

	pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
