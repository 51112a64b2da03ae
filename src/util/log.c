/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include "util/log.h"

int ur_log_level = UR_LOG_WARN;

void ur_log_set_level(int level)
{
	if (level >= UR_LOG_ERR && level <= UR_LOG_DEBUG)
		ur_log_level = level;
}

void ur_log(enum ur_log_level lvl, const char *fmt, ...)
{
	static const char tag[] = "EWID";
	int saved = errno;
	char line[512];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "uroce[%d] %c: ", (int)getpid(),
		     tag[lvl]);
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", line);
	errno = saved;
}
