/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Randomness from the OS CSPRNG (getrandom(2)). Used for keys, QPNs and
 * initial PSNs, which must not be predictable (ReDMArk, USENIX Sec 2021).
 */
#ifndef UR_UTIL_RANDOM_H
#define UR_UTIL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fills buf; returns 0 or -errno. Never falls back to a weak source. */
int ur_random_bytes(void *buf, size_t len);
/* A uniformly random 32-bit value; aborts only if the kernel refuses. */
uint32_t ur_random_u32(void);

#endif
