/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Compiler helpers shared by every layer: branch hints, inlining control,
 * container_of and array sizes. Nothing here has state.
 */
#ifndef UR_UTIL_COMPILER_H
#define UR_UTIL_COMPILER_H

#include <assert.h>
#include <stddef.h>

#define likely(x) __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define UR_ALWAYS_INLINE inline __attribute__((always_inline))
#define UR_NOINLINE __attribute__((noinline))
#define UR_EXPORT __attribute__((visibility("default")))
#define UR_UNUSED __attribute__((unused))
#define UR_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))

#ifndef container_of
#define container_of(ptr, type, member)                                        \
	((type *)((char *)(ptr) - offsetof(type, member)))
#endif

#define UR_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#define UR_MIN(a, b) ((a) < (b) ? (a) : (b))
#define UR_MAX(a, b) ((a) > (b) ? (a) : (b))
#define UR_ALIGN_UP(x, a) (((x) + ((a)-1)) & ~((__typeof__(x))(a)-1))

#endif
