/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>

#include "util/log.h"
#include "util/random.h"

int ur_random_bytes(void *buf, size_t len)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint32_t ur_random_u32(void)
{
	uint32_t v;

	if (ur_random_bytes(&v, sizeof(v))) {
		ur_err("getrandom failed: cannot draw unpredictable keys");
		abort();
	}
	return v;
}
