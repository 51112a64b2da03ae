/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef UR_UTIL_TIME_H
#define UR_UTIL_TIME_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds; timers compare against this. */
static inline uint64_t ur_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
