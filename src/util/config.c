/* SPDX-License-Identifier: BSD-2-Clause */
/* Environment configuration; the variables are documented in config.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/config.h"
#include "util/log.h"
#include "util/random.h"

static struct ur_config config;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

static bool parse_one(const char *s, union ur_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, s, &out->in.sin_addr) == 1) {
		out->in.sin_family = AF_INET;
		return true;
	}
	if (inet_pton(AF_INET6, s, &out->in6.sin6_addr) == 1) {
		out->in6.sin6_family = AF_INET6;
		return true;
	}
	return false;
}

unsigned int ur_config_parse_addrs(const char *list, union ur_sockaddr *out,
				   unsigned int max)
{
	char buf[INET6_ADDRSTRLEN + 8];
	unsigned int n = 0;
	const char *p = list;

	while (p && *p && n < max) {
		const char *end = strchr(p, ',');
		size_t len = end ? (size_t)(end - p) : strlen(p);

		/* trim blanks around the entry */
		while (len && (*p == ' ' || *p == '\t')) {
			p++;
			len--;
		}
		while (len && (p[len - 1] == ' ' || p[len - 1] == '\t'))
			len--;
		if (len && len < sizeof(buf)) {
			memcpy(buf, p, len);
			buf[len] = '\0';
			if (parse_one(buf, &out[n]))
				n++;
			else
				ur_warn("UROCE_ADDRS: ignoring '%s'", buf);
		} else if (len) {
			ur_warn("UROCE_ADDRS: ignoring an over-long entry");
		}
		p = end ? end + 1 : NULL;
	}
	return n;
}

int ur_config_auto_addr(union ur_sockaddr *out)
{
	uint8_t r[3];
	int rc;

	do {
		rc = ur_random_bytes(r, sizeof(r));
		if (rc)
			return rc;
	} while (r[0] == 0 || (r[0] == 255 && r[1] == 255 && r[2] == 255));
	memset(out, 0, sizeof(*out));
	out->in.sin_family = AF_INET;
	out->in.sin_addr.s_addr = htonl(127u << 24 | (uint32_t)r[0] << 16 |
					(uint32_t)r[1] << 8 | r[2]);
	return 0;
}

static void config_load(void)
{
	const char *v;

	ur_log_init();
	config.num_devices = 1;
	v = getenv("UROCE_NUM_DEVICES");
	if (v && *v) {
		char *end;
		long n = strtol(v, &end, 10);

		if (*end || n < 1 || n > UR_CONFIG_MAX_DEVICES)
			ur_warn("UROCE_NUM_DEVICES=%s invalid (1..%d), using 1",
				v, UR_CONFIG_MAX_DEVICES);
		else
			config.num_devices = (unsigned int)n;
	}
	v = getenv("UROCE_ADDRS");
	if (v && *v) {
		config.num_addrs = ur_config_parse_addrs(v, config.addrs,
							 UR_CONFIG_MAX_ADDRS);
		if (!config.num_addrs)
			ur_warn("UROCE_ADDRS has no usable address, using an automatic one");
	}
}

const struct ur_config *ur_config_get(void)
{
	pthread_once(&config_once, config_load);
	return &config;
}
