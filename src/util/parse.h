/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Strict parsers for configuration values: the whole string must be the
 * value, nothing is logged and nothing global is touched, so the
 * interposer (which links nothing of uroce, interpose.c) compiles this file
 * into itself and takes the same spellings as util/config.c.
 */
#ifndef UR_UTIL_PARSE_H
#define UR_UTIL_PARSE_H

#include <stdbool.h>
#include <stdint.h>

/* What ur_parse_bool() accepts, for messages. */
#define UR_PARSE_BOOL_WORDS "1/0, yes/no, true/false or on/off"

/* 1/0, yes/no, true/false, on/off in any case. 0 or -EINVAL. */
int ur_parse_bool(const char *s, bool *out);

/* A decimal number in [min, max]: digits only (no sign, no blanks, no
 * 0x). 0, or -EINVAL (not a number) or -ERANGE (outside the bounds). */
int ur_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
