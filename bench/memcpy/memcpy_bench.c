/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * memcpy throughput of this machine, the copy floor next to which uroce's
 * bandwidth is read (bench/run.sh). Hot cache: the same source and
 * destination buffers every time, as a NIC's copy of a registered buffer
 * that was just written would be.
 *
 *   memcpy_bench [-t secs] [-r runs] [size...]   default sizes 65536 1048576
 *
 * Output: "memcpy_<size> <GB/s> GB/s" (1 GB = 1e9 bytes), the median of the
 * runs, each run copying for secs / runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/bench.h"

#define MAX_RUNS 64

/* One run: copy len bytes over and over for secs; bytes per second. */
static double run_once(char *dst, const char *src, size_t len, double secs)
{
	double t0 = bench_now_s(), t;
	unsigned long n = 0;

	do {
		unsigned int i;

		for (i = 0; i < 16; i++) {
			memcpy(dst, src, len);
			/* the compiler must not drop or merge the copies */
			__asm__ __volatile__("" : : "r"(dst) : "memory");
		}
		n += 16;
		t = bench_now_s();
	} while (t - t0 < secs);
	return (double)n * (double)len / (t - t0);
}

static void bench_size(size_t len, double secs, int runs)
{
	double gbs[MAX_RUNS];
	char *src, *dst;
	int r;

	if (posix_memalign((void **)&src, 4096, len) ||
	    posix_memalign((void **)&dst, 4096, len)) {
		perror("posix_memalign");
		exit(1);
	}
	memset(src, 0x5a, len);
	memset(dst, 0, len);
	run_once(dst, src, len, secs / runs / 4);	/* warm up */
	for (r = 0; r < runs; r++)
		gbs[r] = run_once(dst, src, len, secs / runs) / 1e9;
	printf("memcpy_%zu %.2f GB/s\n", len, bench_median(gbs, runs));
	fflush(stdout);
	free(src);
	free(dst);
}

int main(int argc, char **argv)
{
	double secs = 0.5;
	int runs = 5, opt, i;

	while ((opt = getopt(argc, argv, "t:r:")) != -1) {
		switch (opt) {
		case 't':
			secs = atof(optarg);
			break;
		case 'r':
			runs = atoi(optarg);
			break;
		default:
			goto usage;
		}
	}
	if (secs <= 0 || runs < 1 || runs > MAX_RUNS)
		goto usage;
	if (optind == argc) {
		bench_size(64u << 10, secs, runs);
		bench_size(1u << 20, secs, runs);
		return 0;
	}
	for (i = optind; i < argc; i++) {
		long len = atol(argv[i]);

		if (len <= 0)
			goto usage;
		bench_size((size_t)len, secs, runs);
	}
	return 0;
usage:
	fprintf(stderr, "usage: memcpy_bench [-t secs] [-r runs] [size...]\n");
	return 2;
}
