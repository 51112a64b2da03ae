/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the fault-safe accesses (util/memguard.h) add per packet, measured
 * next to the plain operations in the same run: the responder's copy into
 * an MR (64 B, 1 KiB, 4 KiB), the ICRC over a payload iovec, both 64-bit
 * atomics; and process_vm_writev() on ourselves, the syscall alternative.
 * Each figure is the median of REPS repetitions, in ns per operation; the
 * plain and guarded forms run back to back in each repetition, and the
 * delta is the median of their differences (robust to a loaded machine).
 * Usage: memguard_bench [reps=11]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "common/bench.h"
#include "util/memguard.h"
#include "wire/wire.h"

#define ITERS 200000

static uint8_t *src, *dst;
static struct ur_ip_flow flow;
static volatile uint64_t sink;
static uint64_t word;

struct icrc_arg {
	struct ur_icrc *c;
	const void *p;
	size_t n;
};

static void icrc_cb(void *arg)
{
	struct icrc_arg *a = arg;

	ur_icrc_update(a->c, a->p, a->n);
}

enum kind {
	K_COPY,
	K_COPY_G,
	K_ICRC,
	K_ICRC_G,
	K_FADD,
	K_FADD_G,
	K_CSWAP,
	K_CSWAP_G,
	K_PVM,
	K_NUM,
};

static const char *const kind_name[K_NUM] = {
	[K_COPY] = "memcpy",
	[K_COPY_G] = "memcpy, guarded",
	[K_ICRC] = "ICRC",
	[K_ICRC_G] = "ICRC, payload guarded",
	[K_FADD] = "fetch_add",
	[K_FADD_G] = "fetch_add, guarded",
	[K_CSWAP] = "cmp_swap",
	[K_CSWAP_G] = "cmp_swap, guarded",
	[K_PVM] = "process_vm_writev",
};

static double run(enum kind k, size_t len, long iters)
{
	struct iovec l = { src, len }, r = { dst, len };
	pid_t me = getpid();
	struct icrc_arg a;
	struct ur_icrc c;
	uint64_t orig;
	double t0 = bench_now_s();
	long i;

	for (i = 0; i < iters; i++) {
		switch (k) {
		case K_COPY:
			memcpy(dst, src, len);
			break;
		case K_COPY_G:
			sink += (uint64_t)ur_memguard_copy(dst, src, len);
			break;
		case K_ICRC:
			ur_icrc_begin(&c, &flow, len + 16);
			ur_icrc_update(&c, src, len + 12);
			sink += ur_icrc_final(&c);
			break;
		case K_ICRC_G:
			ur_icrc_begin(&c, &flow, len + 16);
			ur_icrc_update(&c, src, 12);
			a.c = &c;
			a.p = src + 12;
			a.n = len;
			sink += (uint64_t)ur_memguard_call(src + 12, len,
							   icrc_cb, &a);
			sink += ur_icrc_final(&c);
			break;
		case K_FADD:
			sink += __atomic_fetch_add(&word, 1, __ATOMIC_SEQ_CST);
			break;
		case K_FADD_G:
			ur_memguard_fetch_add(&word, 1, &orig);
			sink += orig;
			break;
		case K_CSWAP:
			orig = word;
			__atomic_compare_exchange_n(&word, &orig, orig + 1,
						    false, __ATOMIC_SEQ_CST,
						    __ATOMIC_SEQ_CST);
			sink += orig;
			break;
		case K_CSWAP_G:
			ur_memguard_cmp_swap(&word, word, word + 1, &orig);
			sink += orig;
			break;
		case K_PVM:
			sink += (uint64_t)process_vm_writev(me, &l, 1, &r, 1,
							    0);
			break;
		default:
			break;
		}
	}
	return (bench_now_s() - t0) / (double)iters * 1e9;
}

int main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, 4096 };
	int reps = argc > 1 ? atoi(argv[1]) : 11;
	double plain[64], guarded[64], delta[64];
	unsigned int s;
	int k, i;

	if (reps < 1 || reps > 64)
		return 2;
	if (ur_memguard_init())
		return 1;
	src = aligned_alloc(4096, 8192);
	dst = aligned_alloc(4096, 8192);
	if (!src || !dst)
		return 1;
	memset(src, 0x5a, 8192);
	memset(dst, 0, 8192);
	flow.family = AF_INET;
	flow.sport = flow.dport = 4791;
	printf("# ns per operation, median of %d; plain and guarded run back "
	       "to back in each repetition, delta = median of the differences\n",
	       reps);
	printf("%-12s %6s %9s %9s %9s\n", "operation", "bytes", "plain",
	       "guarded", "delta");
	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		for (k = 0; k < K_PVM; k += 2) {
			bool sized = k <= K_ICRC;

			if (!sized && s)
				continue;
			for (i = 0; i < reps; i++) {
				plain[i] = run((enum kind)k, sizes[s], ITERS);
				guarded[i] = run((enum kind)(k + 1), sizes[s],
						 ITERS);
				delta[i] = guarded[i] - plain[i];
			}
			printf("%-12s %6zu %9.1f %9.1f %9.1f\n", kind_name[k],
			       sized ? sizes[s] : 8, bench_median(plain, reps),
			       bench_median(guarded, reps),
			       bench_median(delta, reps));
		}
		for (i = 0; i < reps; i++)
			plain[i] = run(K_PVM, sizes[s], ITERS / 20);
		printf("%-12s %6zu %9.1f\n", "pvm_writev", sizes[s],
		       bench_median(plain, reps));
	}
	return (int)(sink & 0);
}
