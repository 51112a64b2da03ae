/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * util/memguard: a fault inside a guarded access becomes -EFAULT (again and
 * again: the signal mask is restored), in any thread; a fault anywhere else
 * reaches the disposition that was there before, as if uroce had never
 * installed a handler: an SA_SIGINFO handler, a plain one, SIG_DFL (the
 * process dies of that signal), SIG_IGN (same, for a real fault). Every
 * case runs in a forked child, whose disposition the test sets first
 * (cmocka keeps its own handlers in the parent).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "util/memguard.h"

#define PG 4096

/* Runs fn in a child; its wait status. */
static int in_child(int (*fn)(void))
{
	pid_t pid = fork();
	int st = 0;

	if (!pid)
		_exit(fn());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	return st;
}

/* n pages that nothing maps, far from where the kernel places mappings
 * (and from ASan's allocator and shadow), so no later mmap (a thread's
 * stack, an allocator's chunk) fills the hole. */
#if defined(__SANITIZE_THREAD__)
/* ThreadSanitizer's x86-64 layout has its shadow there: program memory
 * below 2^39 is its own */
#define UNMAPPED_BASE 0x004000000000ull
#else
#define UNMAPPED_BASE 0x500000000000ull
#endif

static uint8_t *unmapped_pages(size_t n)
{
	static uintptr_t next = UNMAPPED_BASE;
	void *p = mmap((void *)next, n * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0);

	if (p == MAP_FAILED)
		abort();
	next += n * PG + (1u << 20);
	munmap(p, n * PG);
	return p;
}

static void set_disposition(int sig, void (*h)(int))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigaction(sig, &sa, NULL);
}

static void sum_page(void *arg)
{
	volatile const uint8_t *p = *(uint8_t **)arg;
	unsigned int s = 0;

	for (size_t i = 0; i < PG; i++)
		s += p[i];
	(void)s;
}

/* Guarded accesses to memory that faults, several times in a row. */
static int child_recovers(void)
{
	uint8_t src[256] = { 1 }, *gone, *ro;
	uint64_t orig = 0, ok = 5;
	FILE *f = tmpfile();
	uint8_t *bus;
	int i;

	set_disposition(SIGSEGV, SIG_DFL);
	set_disposition(SIGBUS, SIG_DFL);
	if (ur_memguard_init())
		return 10;
	ro = mmap(NULL, PG, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!f || ftruncate(fileno(f), 1) || ro == MAP_FAILED)
		return 11;
	bus = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fileno(f), 0);
	if (bus == MAP_FAILED)
		return 12;
	gone = unmapped_pages(1);
	for (i = 0; i < 3; i++) {
		if (ur_memguard_copy(gone + 8, src, sizeof(src)) != -EFAULT)
			return 20;	/* write to nothing */
		if (ur_memguard_copy(src, gone, sizeof(src)) != -EFAULT)
			return 21;	/* read from nothing */
		if (ur_memguard_copy(ro, src, 8) != -EFAULT)
			return 22;	/* write to read-only */
		if (ur_memguard_copy(bus + PG, src, 8) != -EFAULT)
			return 23;	/* SIGBUS: past the file's end */
		if (ur_memguard_fetch_add((uint64_t *)gone, 1, &orig) !=
		    -EFAULT)
			return 24;
		if (ur_memguard_cmp_swap((uint64_t *)ro, 0, 1, &orig) !=
		    -EFAULT)
			return 25;
		if (ur_memguard_call(gone, PG, sum_page, &gone) != -EFAULT)
			return 26;
		/* no CPU maps it (x86-64: refused before any access) */
		if (ur_memguard_copy((void *)(uintptr_t)0xdead000000000000ull,
				     src, 8) != -EFAULT)
			return 27;
	}
	/* and the good cases still work */
	if (ur_memguard_copy(bus, src, 8) || bus[0] != 1)
		return 30;
	if (ur_memguard_fetch_add(&ok, 2, &orig) || orig != 5 || ok != 7)
		return 31;
	if (ur_memguard_cmp_swap(&ok, 7, 9, &orig) || orig != 7 || ok != 9)
		return 32;
	if (ur_memguard_cmp_swap(&ok, 1, 2, &orig) || orig != 9 || ok != 9)
		return 33;
	if (ur_memguard_call(bus, PG, sum_page, &bus))
		return 34;
	if (ur_memguard_faults() != 24)
		return 35;
	return 0;
}

static void test_recovers(void **state)
{
	int st = in_child(child_recovers);

	(void)state;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

#define NTHREADS 4

static void *thread_faults(void *arg)
{
	uint8_t *gone = arg, buf[64];
	uintptr_t bad = 0;

	for (int i = 0; i < 2000; i++)
		if (ur_memguard_copy(buf, gone + (i % 64) * 8, 8) != -EFAULT ||
		    ur_memguard_copy(buf, buf + 32, 8))
			bad++;
	return (void *)bad;
}

/* Many threads fault at once; each recovers its own. */
static int child_threads(void)
{
	pthread_t t[NTHREADS];
	uint8_t *gone = unmapped_pages(1);
	void *bad;
	int i, fails = 0;

	set_disposition(SIGSEGV, SIG_DFL);
	if (ur_memguard_init())
		return 10;
	for (i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_faults, gone);
	for (i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], &bad);
		fails += bad != NULL;
	}
	return fails || ur_memguard_faults() != NTHREADS * 2000 ? 20 : 0;
}

static void test_threads(void **state)
{
	int st = in_child(child_threads);

	(void)state;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* ---- chaining ---- */

static sigjmp_buf app_env;
static volatile sig_atomic_t app_calls, app_code;

static void app_siginfo(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	app_calls++;
	app_code = si->si_code;
	siglongjmp(app_env, sig);
}

static void app_plain(int sig)
{
	app_calls++;
	siglongjmp(app_env, sig);
}

/* An application handler installed first gets the faults that are not
 * ours: outside any guarded access, and inside one at another address. */
static int chain_to(bool siginfo)
{
	struct sigaction sa;
	uint8_t *gone = unmapped_pages(2), *gone2 = gone + PG;
	volatile int step = 0;

	memset(&sa, 0, sizeof(sa));
	if (siginfo) {
		sa.sa_sigaction = app_siginfo;
		sa.sa_flags = SA_SIGINFO;
	} else {
		sa.sa_handler = app_plain;
	}
	sigaction(SIGSEGV, &sa, NULL);
	if (ur_memguard_init())
		return 10;
	if (sigsetjmp(app_env, 1) == 0) {
		step = 1;
		*(volatile uint8_t *)gone = 1;	/* unguarded */
		return 11;
	}
	if (step != 1 || app_calls != 1 ||
	    (siginfo && app_code != SEGV_MAPERR))
		return 12;
	/* a guarded access still recovers its own fault afterwards */
	if (ur_memguard_copy(gone, "x", 1) != -EFAULT)
		return 13;
	/* a fault in a callback outside the range it declared */
	if (sigsetjmp(app_env, 1) == 0) {
		step = 2;
		ur_memguard_call(gone2, 1, sum_page, &gone);
		return 14;
	}
	if (step != 2 || app_calls != 2)
		return 15;
	/* a SIGSEGV sent by kill() is not a fault, whatever the thread does */
	if (sigsetjmp(app_env, 1) == 0) {
		step = 3;
		raise(SIGSEGV);
		return 16;
	}
	if (step != 3 || app_calls != 3 || (siginfo && app_code > 0))
		return 17;
	return 0;
}

static int child_chain_siginfo(void)
{
	return chain_to(true);
}

static int child_chain_plain(void)
{
	return chain_to(false);
}

static void test_chain_handlers(void **state)
{
	int st;

	(void)state;
	st = in_child(child_chain_siginfo);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	st = in_child(child_chain_plain);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* SIG_DFL or SIG_IGN before: an unguarded fault kills as without uroce. */
static int child_dies(void (*disp)(int), int sig)
{
	uint8_t *gone, src = 1;
	FILE *f = tmpfile();
	uint8_t *bus;

	set_disposition(SIGSEGV, disp);
	set_disposition(SIGBUS, disp);
	if (ur_memguard_init() || !f || ftruncate(fileno(f), 1))
		return 10;
	bus = mmap(NULL, 2 * PG, PROT_READ | PROT_WRITE, MAP_SHARED,
		   fileno(f), 0);
	if (bus == MAP_FAILED)
		return 11;
	gone = unmapped_pages(1);
	if (ur_memguard_copy(gone, &src, 1) != -EFAULT)
		return 12;
	if (sig == SIGBUS)
		bus[PG] = 1;
	else
		*(volatile uint8_t *)gone = 1;
	return 13;
}

static int child_dfl_segv(void)
{
	return child_dies(SIG_DFL, SIGSEGV);
}

static int child_dfl_bus(void)
{
	return child_dies(SIG_DFL, SIGBUS);
}

static int child_ign_segv(void)
{
	return child_dies(SIG_IGN, SIGSEGV);
}

static int child_dfl_sent(void)
{
	set_disposition(SIGSEGV, SIG_DFL);
	if (ur_memguard_init())
		return 10;
	raise(SIGSEGV);
	return 11;
}

static int child_ign_sent(void)
{
	set_disposition(SIGSEGV, SIG_IGN);
	if (ur_memguard_init())
		return 10;
	raise(SIGSEGV);	/* ignored, as it was before */
	raise(SIGSEGV);
	return 0;
}

static void expect_signal(int (*fn)(void), int sig)
{
	int st = in_child(fn);

	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), sig);
}

static void test_chain_default(void **state)
{
	int st;

	(void)state;
	expect_signal(child_dfl_segv, SIGSEGV);
	expect_signal(child_dfl_bus, SIGBUS);
	expect_signal(child_ign_segv, SIGSEGV);
	expect_signal(child_dfl_sent, SIGSEGV);
	st = in_child(child_ign_sent);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A thread with an alternate signal stack overflowing its stack: the
 * application's SA_ONSTACK handler still runs, on that stack. */
static volatile sig_atomic_t on_alt;
static uint8_t altstack[64 * 1024];

static void app_overflow(int sig, siginfo_t *si, void *uc)
{
	uint8_t here;

	(void)si;
	(void)uc;
	on_alt = &here >= altstack && &here < altstack + sizeof(altstack);
	_exit(on_alt ? 42 : 43);
}

static volatile unsigned long depth_left = ~0ul;	/* never reached */

static unsigned int recurse(volatile uint8_t *prev)
{
	volatile uint8_t pad[1024];

	if (!depth_left--)
		return 0;
	pad[0] = prev ? prev[0] + 1 : 0;
	return recurse(pad) + pad[1];
}

static int child_overflow(void)
{
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = app_overflow;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaltstack(&ss, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	if (ur_memguard_init())
		return 10;
	return (int)recurse(NULL);
}

static void test_altstack_overflow(void **state)
{
	int st = in_child(child_overflow);

	(void)state;
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recovers),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_chain_handlers),
		cmocka_unit_test(test_chain_default),
		cmocka_unit_test(test_altstack_overflow),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
