/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fault-safe access to application memory. A NIC pins the pages of a
 * registration, so a peer's WRITE into memory the application unmapped, or
 * into an on-demand MR where nothing is mapped, ends in a remote access
 * error. uroce reaches the same memory with the CPU, so every access the
 * engine makes on a peer's behalf goes through these functions: a SIGSEGV
 * or SIGBUS inside the range they touch becomes -EFAULT instead of a
 * signal. Faults anywhere else reach the handler that was installed before
 * (the application's, a sanitizer's, or the default action) unchanged.
 */
#ifndef UR_UTIL_MEMGUARD_H
#define UR_UTIL_MEMGUARD_H

#include <stddef.h>
#include <stdint.h>

/* Installs the SIGSEGV/SIGBUS handler, once per process (later calls do
 * nothing). Until it is installed the functions below still work, but a
 * fault is a signal. 0 or -errno. */
int ur_memguard_init(void);

/* memcpy that returns -EFAULT (having copied some prefix) when a byte of
 * [dst, dst+n) or [src, src+n) faults; 0 otherwise. */
int ur_memguard_copy(void *dst, const void *src, size_t n);

/* 64-bit atomics on *p (8-byte aligned); *orig gets the value before. */
int ur_memguard_fetch_add(uint64_t *p, uint64_t add, uint64_t *orig);
int ur_memguard_cmp_swap(uint64_t *p, uint64_t cmp, uint64_t swap,
			 uint64_t *orig);

/* Runs fn(arg), which may read or write [p, p+n) and nothing else that can
 * fault; -EFAULT if that range faulted (fn was cut short), else 0. */
int ur_memguard_call(const void *p, size_t n, void (*fn)(void *arg),
		     void *arg);

/* Faults turned into -EFAULT since the process started. */
uint64_t ur_memguard_faults(void);

#endif
