/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every benchmark program here shares: a monotonic clock in seconds,
 * medians, and the "MODE [-n iters] [-t secs] [-r runs]" command line of
 * the two-process UDP benchmarks. Header-only: each bench is one file.
 */
#ifndef UR_BENCH_BENCH_H
#define UR_BENCH_BENCH_H

#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static inline double bench_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline int bench_cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Sorts v in place and returns its median (the upper one for even n). */
static inline double bench_median(double *v, int n)
{
	qsort(v, (size_t)n, sizeof(*v), bench_cmp_dbl);
	return v[n / 2];
}

struct bench_args {
	const char *mode;
	int iters;
	int runs;
	double secs;
};

/* Parses MODE [-n iters] [-t secs] [-r runs] over the defaults already in
 * a; returns 0, or -1 when the caller should print its usage. */
static inline int bench_parse_args(int argc, char **argv,
				   struct bench_args *a, int max_iters)
{
	int opt;

	if (argc < 2)
		return -1;
	a->mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:t:r:")) != -1) {
		switch (opt) {
		case 'n':
			a->iters = atoi(optarg);
			break;
		case 't':
			a->secs = atof(optarg);
			break;
		case 'r':
			a->runs = atoi(optarg);
			break;
		default:
			return -1;
		}
	}
	if (a->iters < 1 || a->iters > max_iters || a->runs < 1 ||
	    a->secs <= 0)
		return -1;
	return 0;
}

#endif
