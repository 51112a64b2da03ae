/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Process configuration from the environment, read once (first call of
 * ur_config_get(), thread-safe) and constant afterwards.
 *
 *   UROCE_ADDRS=a,b,...   IPv4 and/or IPv6 addresses of uroce0, in GID table
 *                         order (GID i is RoCEv2: IPv4 a.b.c.d becomes
 *                         ::ffff:a.b.c.d, IPv6 stays itself). At most
 *                         UR_CONFIG_MAX_ADDRS; an unparsable entry is
 *                         skipped with a warning. Unset or empty: uroce0
 *                         gets ONE automatic loopback address, 127.X.Y.Z
 *                         with X.Y.Z random (X != 0, so 127.0.0.0/16 and
 *                         127.0.0.1 stay free), so that several processes
 *                         on one host each bind their own <IP>:4791 with no
 *                         setup.
 *   UROCE_NUM_DEVICES=n   number of devices uroce0..uroce<n-1> (default 1,
 *                         1..UR_CONFIG_MAX_DEVICES). Devices after uroce0
 *                         always get one automatic loopback address each.
 *   UROCE_LOG=level       error|warn|info|debug (util/log.c).
 */
#ifndef UR_UTIL_CONFIG_H
#define UR_UTIL_CONFIG_H

#include <stdbool.h>
#include "util/addr.h"

#define UR_CONFIG_MAX_ADDRS 16
#define UR_CONFIG_MAX_DEVICES 16

struct ur_config {
	unsigned int num_devices;
	unsigned int num_addrs;		/* of uroce0; 0 = automatic */
	union ur_sockaddr addrs[UR_CONFIG_MAX_ADDRS];	/* port 0 */
};

const struct ur_config *ur_config_get(void);

/*
 * Parses a UROCE_ADDRS-style list into out (at most max entries). Returns
 * the number of addresses parsed; invalid entries are skipped. Exposed for
 * tests.
 */
unsigned int ur_config_parse_addrs(const char *list, union ur_sockaddr *out,
				   unsigned int max);

/* A random 127.X.Y.Z with X != 0 (port 0). Returns 0 or -errno. */
int ur_config_auto_addr(union ur_sockaddr *out);

#endif
