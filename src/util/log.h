/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Logging to stderr, at the level UROCE_LOG sets (util/config.c applies it
 * when the configuration is loaded; default warn). Every macro preserves errno so that a log line never
 * changes what the caller reports. ur_dbg_dp() is for the data path and
 * compiles to nothing unless UROCE_DEBUG_DATAPATH is defined.
 */
#ifndef UR_UTIL_LOG_H
#define UR_UTIL_LOG_H

#include "util/compiler.h"

enum ur_log_level {
	UR_LOG_ERR,
	UR_LOG_WARN,
	UR_LOG_INFO,
	UR_LOG_DEBUG,
};

extern int ur_log_level;

/* Out-of-range levels are ignored. */
void ur_log_set_level(int level);
void ur_log(enum ur_log_level lvl, const char *fmt, ...) UR_PRINTF(2, 3);

#define ur_log_at(lvl, ...)                                                   \
	do {                                                                   \
		if (unlikely((lvl) <= ur_log_level))                           \
			ur_log(lvl, __VA_ARGS__);                              \
	} while (0)

#define ur_err(...) ur_log_at(UR_LOG_ERR, __VA_ARGS__)
#define ur_warn(...) ur_log_at(UR_LOG_WARN, __VA_ARGS__)
#define ur_info(...) ur_log_at(UR_LOG_INFO, __VA_ARGS__)
#define ur_dbg(...) ur_log_at(UR_LOG_DEBUG, __VA_ARGS__)

#ifdef UROCE_DEBUG_DATAPATH
#define ur_dbg_dp(...) ur_dbg(__VA_ARGS__)
#else
#define ur_dbg_dp(...) do { } while (0)
#endif

#endif
