/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault-safe access to application memory (memguard.h).
 *
 * A guarded access records, in a per-thread pointer, a sigjmp_buf and the
 * address ranges it may touch, then runs. The SIGSEGV/SIGBUS handler
 * recovers only a fault raised by the hardware (si_code > 0) in a thread
 * that is inside a guarded access, at an address of its ranges: it restores
 * the signal mask the fault interrupted and jumps back, and the access
 * returns -EFAULT. Every other signal goes to the disposition that was in
 * place when the handler was installed, as the kernel would have delivered
 * it: SA_SIGINFO or plain handler with its mask and flags, SIG_IGN, or the
 * default action (restored, so the fault kills with the right signal).
 *
 * Cost: sigsetjmp without saving the mask is a few register stores (4 to
 * 13 ns per access here, bench/memguard); process_vm_writev() on ourselves,
 * the syscall alternative, costs 2.5 to 5 us per call. The handler is installed with
 * SA_ONSTACK, so a thread that has an alternate signal stack (stack
 * overflow detection) still gets its overflow delivered there and chained.
 * A handler installed after ours replaces it; uroce faults are then signals
 * again (docs/security.md).
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#include "util/memguard.h"

/* x86-64: an access past the canonical user half raises #GP, which Linux
 * reports as SIGSEGV with si_code SI_KERNEL and no address. */
#define UR_VA_NONCANONICAL (1ull << 47)
#define UR_VA_LA57 (1ull << 56)

struct ur_memguard {
	sigjmp_buf env;
	uintptr_t lo[2];
	uintptr_t hi[2];	/* exclusive; UINTPTR_MAX when it wraps */
};

/*
 * The thread's guard. General-dynamic TLS on purpose: initial-exec would
 * put the library's whole TLS block in the static TLS surplus, which is too
 * small when the library is dlopen()ed (pyverbs, UCX: "cannot allocate
 * memory in static TLS block"). Reading it from the handler is then safe in
 * every thread that has armed a guard (its block exists); threads that
 * never did are kept away from it by guard_used (see memguard_handler).
 */
static __thread struct ur_memguard *guard_cur;

/* Set once, by the first guard armed in any thread: until then no fault
 * can be ours, and the handler chains without touching guard_cur (a
 * thread's first access to dlopen()ed TLS may allocate, which a signal
 * handler must not do). */
static atomic_bool guard_used;

/* End of the user address space where known (x86-64: 2^47, or 2^56 with
 * 5-level paging): a range past it is refused without being touched, as
 * ASan's interceptors would report it before any fault could happen. */
static uintptr_t va_top = UINTPTR_MAX;

static struct sigaction prev_segv, prev_bus;
static pthread_once_t install_once = PTHREAD_ONCE_INIT;
static int install_err;
static _Atomic uint64_t fault_count;

/* Records the range; false (and counted) if it leaves user space. */
static inline bool guard_range(struct ur_memguard *g, unsigned int i,
			       const void *p, size_t n)
{
	uintptr_t lo = (uintptr_t)p;

	g->lo[i] = lo;
	g->hi[i] = lo + n < lo ? UINTPTR_MAX : lo + n;
	if (g->hi[i] <= va_top)
		return true;
	atomic_fetch_add_explicit(&fault_count, 1, memory_order_relaxed);
	return false;
}

static inline void guard_arm(struct ur_memguard *g)
{
	if (!atomic_load_explicit(&guard_used, memory_order_relaxed))
		atomic_store(&guard_used, true);
	atomic_signal_fence(memory_order_seq_cst);
	guard_cur = g;
	atomic_signal_fence(memory_order_seq_cst);
}

static inline void guard_disarm(void)
{
	atomic_signal_fence(memory_order_seq_cst);
	guard_cur = NULL;
	atomic_signal_fence(memory_order_seq_cst);
}

static bool fault_is_guarded(const struct ur_memguard *g, const siginfo_t *si)
{
	uintptr_t a = (uintptr_t)si->si_addr;
	unsigned int i;

	if (si->si_code <= 0)
		return false;	/* sent by kill() and friends, not a fault */
	for (i = 0; i < 2; i++) {
		if (a >= g->lo[i] && a < g->hi[i])
			return true;
#if defined(__x86_64__)
		/* guard_range() refuses such ranges before any access;
		 * this is in case find_va_top() guessed the top too high */
		if (si->si_code == SI_KERNEL && !a &&
		    g->hi[i] > UR_VA_NONCANONICAL)
			return true;
#endif
	}
	return false;
}

static void chain(int sig, siginfo_t *si, void *uc)
{
	const struct sigaction *p = sig == SIGSEGV ? &prev_segv : &prev_bus;
	sigset_t mask, saved;

	if ((p->sa_flags & SA_SIGINFO) ||
	    (p->sa_handler != SIG_DFL && p->sa_handler != SIG_IGN)) {
		mask = p->sa_mask;
		if (!(p->sa_flags & SA_NODEFER))
			sigaddset(&mask, sig);
		if (p->sa_flags & SA_RESETHAND) {
			struct sigaction dfl;

			memset(&dfl, 0, sizeof(dfl));
			dfl.sa_handler = SIG_DFL;
			sigaction(sig, &dfl, NULL);
		}
		pthread_sigmask(SIG_BLOCK, &mask, &saved);
		if (p->sa_flags & SA_SIGINFO)
			p->sa_sigaction(sig, si, uc);
		else
			p->sa_handler(sig);
		pthread_sigmask(SIG_SETMASK, &saved, NULL);
		return;
	}
	if (p->sa_handler == SIG_IGN && si->si_code <= 0)
		return;		/* a sent signal, ignored as before */
	/* Default action. Returning re-runs the faulting instruction, which
	 * now kills the process with this signal (the kernel does the same
	 * for a fault while the signal is ignored); a sent signal, blocked
	 * until we return, is raised again. */
	sigaction(sig, p, NULL);
	if (si->si_code <= 0)
		raise(sig);
}

static void memguard_handler(int sig, siginfo_t *si, void *ucv)
{
	struct ur_memguard *g = NULL;
	int saved_errno = errno;

	if (atomic_load_explicit(&guard_used, memory_order_relaxed))
		g = guard_cur;

	if (g && fault_is_guarded(g, si)) {
		const ucontext_t *uc = ucv;

		guard_cur = NULL;
		atomic_fetch_add_explicit(&fault_count, 1,
					  memory_order_relaxed);
		/* the mask the fault interrupted: siglongjmp(env, 0 saved)
		 * would leave sig blocked in this thread for good */
		pthread_sigmask(SIG_SETMASK, &uc->uc_sigmask, NULL);
		siglongjmp(g->env, 1);
	}
	chain(sig, si, ucv);
	errno = saved_errno;
}

#if defined(__SANITIZE_THREAD__)
#define UR_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define UR_TSAN 1
#endif
#endif

#if defined(__x86_64__) && defined(UR_TSAN)
/* ThreadSanitizer's x86-64 layout keeps the program below 2^47 and its
 * mmap interceptor kills the process when a mapping lands outside that
 * layout, which the probe below would do on a 5-level-paging kernel. */
static void find_va_top(void)
{
	va_top = UR_VA_NONCANONICAL;
}
#elif defined(__x86_64__)
/* 5-level paging gives user space 2^56 bytes, and then (only then) a page
 * just above 2^47 can be mapped on request. */
static void find_va_top(void)
{
	void *want = (void *)(uintptr_t)UR_VA_NONCANONICAL;
	void *p = mmap(want, 4096, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
		       0);

	va_top = UR_VA_NONCANONICAL;
	if (p == want) {
		va_top = UR_VA_LA57;
		munmap(p, 4096);
	} else if (p != MAP_FAILED) {
		munmap(p, 4096);	/* old kernel: a hint, not a place */
	}
}
#else
static void find_va_top(void)
{
}
#endif

static void install(void)
{
	struct sigaction sa;

	find_va_top();

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = memguard_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	/* read the old dispositions first: a fault racing the install must
	 * find them in place */
	if (sigaction(SIGSEGV, NULL, &prev_segv) ||
	    sigaction(SIGBUS, NULL, &prev_bus) ||
	    sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL))
		install_err = -errno;
}

int ur_memguard_init(void)
{
	pthread_once(&install_once, install);
	return install_err;
}

#ifdef UR_BENCH_UNGUARDED
/*
 * bench/memguard_ab.sh's baseline: the same calls without the guard, so
 * that an end-to-end run measures what the guard costs. A fault here is a
 * signal, as it was before the guard existed.
 */
int ur_memguard_copy(void *dst, const void *src, size_t n)
{
	memcpy(dst, src, n);
	return 0;
}

int ur_memguard_fetch_add(uint64_t *p, uint64_t add, uint64_t *orig)
{
	*orig = __atomic_fetch_add(p, add, __ATOMIC_SEQ_CST);
	return 0;
}

int ur_memguard_cmp_swap(uint64_t *p, uint64_t cmp, uint64_t swap,
			 uint64_t *orig)
{
	__atomic_compare_exchange_n(p, &cmp, swap, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
	*orig = cmp;
	return 0;
}

int ur_memguard_call(const void *p, size_t n, void (*fn)(void *arg),
		     void *arg)
{
	fn(arg);
	return 0;
}
#else
int ur_memguard_copy(void *dst, const void *src, size_t n)
{
	struct ur_memguard g;

	if (!guard_range(&g, 0, dst, n) || !guard_range(&g, 1, src, n))
		return -EFAULT;
	if (sigsetjmp(g.env, 0))
		return -EFAULT;
	guard_arm(&g);
	memcpy(dst, src, n);
	guard_disarm();
	return 0;
}

/*
 * Under ThreadSanitizer an instrumented atomic runs inside its runtime
 * with the runtime's own locks held, so a fault there, left through
 * siglongjmp, would leave them held. These two run uninstrumented: TSan
 * does not see them as synchronisation, which nothing relies on (a remote
 * atomic's result reaches the program through a completion).
 */
__attribute__((no_sanitize("thread"), noinline))
static uint64_t fetch_add(uint64_t *p, uint64_t add)
{
	return __atomic_fetch_add(p, add, __ATOMIC_SEQ_CST);
}

__attribute__((no_sanitize("thread"), noinline))
static void cmp_swap(uint64_t *p, uint64_t *expect, uint64_t swap)
{
	__atomic_compare_exchange_n(p, expect, swap, false, __ATOMIC_SEQ_CST,
				    __ATOMIC_SEQ_CST);
}

int ur_memguard_fetch_add(uint64_t *p, uint64_t add, uint64_t *orig)
{
	struct ur_memguard g;

	if (!guard_range(&g, 0, p, sizeof(*p)) ||
	    !guard_range(&g, 1, p, sizeof(*p)))
		return -EFAULT;
	if (sigsetjmp(g.env, 0))
		return -EFAULT;
	guard_arm(&g);
	*orig = fetch_add(p, add);
	guard_disarm();
	return 0;
}

int ur_memguard_cmp_swap(uint64_t *p, uint64_t cmp, uint64_t swap,
			 uint64_t *orig)
{
	struct ur_memguard g;
	uint64_t expect = cmp;

	if (!guard_range(&g, 0, p, sizeof(*p)) ||
	    !guard_range(&g, 1, p, sizeof(*p)))
		return -EFAULT;
	if (sigsetjmp(g.env, 0))
		return -EFAULT;
	guard_arm(&g);
	cmp_swap(p, &expect, swap);
	guard_disarm();
	*orig = expect;
	return 0;
}

int ur_memguard_call(const void *p, size_t n, void (*fn)(void *arg),
		     void *arg)
{
	struct ur_memguard g;

	if (!guard_range(&g, 0, p, n) || !guard_range(&g, 1, p, n))
		return -EFAULT;
	if (sigsetjmp(g.env, 0))
		return -EFAULT;
	guard_arm(&g);
	fn(arg);
	guard_disarm();
	return 0;
}

#endif /* UR_BENCH_UNGUARDED */

uint64_t ur_memguard_faults(void)
{
	return atomic_load_explicit(&fault_count, memory_order_relaxed);
}
