/* SPDX-License-Identifier: BSD-2-Clause */
/* Strict configuration value parsers (parse.h). */
#include <errno.h>
#include <strings.h>

#include "util/parse.h"

int ur_parse_bool(const char *s, bool *out)
{
	static const char *const words[][2] = {
		{ "0", "1" }, { "no", "yes" }, { "false", "true" },
		{ "off", "on" },
	};

	if (!s)
		return -EINVAL;
	for (unsigned int i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		for (unsigned int v = 0; v < 2; v++)
			if (!strcasecmp(s, words[i][v])) {
				*out = v;
				return 0;
			}
	return -EINVAL;
}

int ur_parse_uint(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;
	bool big = false;

	if (!s || !*s)
		return -EINVAL;
	for (; *s; s++) {
		unsigned int d = (unsigned int)(*s - '0');

		if (d > 9)
			return -EINVAL;
		if (x > (UINT64_MAX - d) / 10)
			big = true;
		else
			x = x * 10 + d;
	}
	if (big || x < min || x > max)
		return -ERANGE;
	*out = x;
	return 0;
}
