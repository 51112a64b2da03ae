/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "util/log.h"

int ur_log_level = UR_LOG_WARN;

void ur_log_init(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *v = getenv("UROCE_LOG");

	if (!v)
		return;
	for (unsigned int i = 0; i < UR_ARRAY_SIZE(names); i++)
		if (!strcasecmp(v, names[i]))
			ur_log_level = (int)i;
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
