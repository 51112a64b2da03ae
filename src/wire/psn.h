/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 24-bit PSN serial arithmetic (IBA 9.7.1; docs/wire-notes.md §2.6). Every
 * result is masked to 24 bits. Ordering is by signed distance, meaningful while
 * the two PSNs are less than 2^23 apart.
 */
#ifndef UR_WIRE_PSN_H
#define UR_WIRE_PSN_H

#include <stdbool.h>
#include <stdint.h>

#include "util/iba.h"

#define UR_PSN_HALF 0x800000u

static inline uint32_t ur_psn_add(uint32_t psn, int32_t n)
{
	return (psn + (uint32_t)n) & UR_PSN_MASK;
}

static inline uint32_t ur_psn_inc(uint32_t psn)
{
	return (psn + 1) & UR_PSN_MASK;
}

/* Signed distance a - b in [-2^23, 2^23). */
static inline int32_t ur_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* <0 if a is before b, 0 if equal, >0 if after. */
static inline int ur_psn_cmp(uint32_t a, uint32_t b)
{
	int32_t d = ur_psn_diff(a, b);

	return (d > 0) - (d < 0);
}

static inline bool ur_psn_before(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) < 0;
}

static inline bool ur_psn_after(uint32_t a, uint32_t b)
{
	return ur_psn_diff(a, b) > 0;
}

/* psn in [start, start + count) modulo 2^24; count <= 2^23. */
static inline bool ur_psn_in_window(uint32_t psn, uint32_t start,
				    uint32_t count)
{
	return ((psn - start) & UR_PSN_MASK) < count;
}

/* psn in [first, last] (inclusive, first not after last). */
static inline bool ur_psn_in_range(uint32_t psn, uint32_t first, uint32_t last)
{
	return ((psn - first) & UR_PSN_MASK) <= ((last - first) & UR_PSN_MASK);
}

#endif
