/* SPDX-License-Identifier: BSD-2-Clause */
/* Environment configuration; the variables are documented in config.h. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/config.h"
#include "util/log.h"
#include "util/parse.h"
#include "util/random.h"

static struct ur_config config;
static bool config_quiet;
static pthread_once_t config_once = PTHREAD_ONCE_INIT;

/*
 * The list's addresses into out (at most max); *bad counts the entries that
 * are not addresses (each reported at level lvl), *extra the addresses
 * past the first max, which are parsed and counted but not kept.
 */
static unsigned int parse_addr_list(const char *list, union ur_sockaddr *out,
				    unsigned int max, unsigned int *bad,
				    unsigned int *extra, int lvl)
{
	char buf[INET6_ADDRSTRLEN + 8];
	union ur_sockaddr spare;
	unsigned int n = 0;
	const char *p = list;

	*bad = 0;
	*extra = 0;
	while (p && *p) {
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
			if (ur_addr_parse(buf, n < max ? &out[n] : &spare)) {
				if (n < max)
					n++;
				else
					(*extra)++;
			} else {
				ur_log_at(lvl, "UROCE_ADDRS: '%s' is not an IPv4 "
				       "or IPv6 address", buf);
				(*bad)++;
			}
		} else if (len) {
			ur_log_at(lvl, "UROCE_ADDRS: an entry of %zu characters "
			       "is no address", len);
			(*bad)++;
		}
		p = end ? end + 1 : NULL;
	}
	return n;
}

unsigned int ur_config_parse_addrs(const char *list, union ur_sockaddr *out,
				   unsigned int max)
{
	unsigned int bad, extra;

	return parse_addr_list(list, out, max, &bad, &extra, UR_LOG_WARN);
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

/* The variable's value, or NULL when it is unset or empty. */
static const char *env(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

static bool env_bool(const char *name, bool def)
{
	const char *v = env(name);
	bool b;

	if (!v)
		return def;
	if (!ur_parse_bool(v, &b))
		return b;
	ur_warn("%s=%s: want %s; using the default (%s)", name, v,
		UR_PARSE_BOOL_WORDS, def ? "on" : "off");
	return def;
}

static uint64_t env_uint(const char *name, uint64_t min, uint64_t max,
			 uint64_t def)
{
	const char *v = env(name);
	uint64_t x;

	if (!v)
		return def;
	if (!ur_parse_uint(v, min, max, &x))
		return x;
	ur_warn("%s=%s: want a whole number %" PRIu64 "..%" PRIu64
		"; using the default (%" PRIu64 ")", name, v, min, max, def);
	return def;
}

/* A number whose default is another layer's (UR_CONFIG_DEFAULT if unset or
 * bad), scaled by unit. */
static uint64_t env_uint_or_default(const char *name, uint64_t max,
				    uint64_t unit)
{
	const char *v = env(name);
	uint64_t x;

	if (!v)
		return UR_CONFIG_DEFAULT;
	if (!ur_parse_uint(v, 0, max, &x))
		return x * unit;
	ur_warn("%s=%s: want a whole number 0..%" PRIu64 "; using the default",
		name, v, max);
	return UR_CONFIG_DEFAULT;
}

static char *env_dup(const char *name)
{
	const char *v = env(name);
	char *copy;

	if (!v)
		return NULL;
	copy = strdup(v);
	if (!copy)
		ur_err("%s: out of memory, ignored", name);
	return copy;
}

static int parse_log_level(void)
{
	static const char *const names[] = { "error", "warn", "info", "debug" };
	const char *v = env("UROCE_LOG");

	if (!v)
		return UR_LOG_WARN;
	for (unsigned int i = 0; i < UR_ARRAY_SIZE(names); i++)
		if (!strcasecmp(v, names[i]))
			return (int)i;
	ur_warn("UROCE_LOG=%s: want error, warn, info or debug; using the "
		"default (warn)", v);
	return UR_LOG_WARN;
}

static void parse_stats(struct ur_config *c)
{
	const char *v = env("UROCE_STATS");
	bool b;

	c->stats = UR_STATS_OFF;
	c->stats_path = NULL;
	if (!v)
		return;
	if (!ur_parse_bool(v, &b)) {
		c->stats = b ? UR_STATS_STDERR : UR_STATS_OFF;
		return;
	}
	c->stats_path = env_dup("UROCE_STATS");
	if (c->stats_path)
		c->stats = UR_STATS_FILE;
}

static bool parse_hardened(void)
{
	const char *v = env("UROCE_HARDENED");
	bool b;

	if (!v)
		return false;
	if (!ur_parse_bool(v, &b))
		return b;
	ur_err("UROCE_HARDENED=%s: want %s; taking it as on, since it was "
	       "set to harden", v, UR_PARSE_BOOL_WORDS);
	return true;
}

/* UROCE_LINK: "auto" (the same-host rings to uroce processes of this
 * host, with one-sided WRITEs and READs copied straight between the two
 * processes; UDP elsewhere), "rings" (the rings, every operation as
 * packets) or "udp" (UDP to everyone, so that the wire can be captured
 * and tested on one host). */
static void parse_link(struct ur_config *c)
{
	const char *v = env("UROCE_LINK");

	c->same_host = c->direct = true;
	if (!v || !strcmp(v, "auto"))
		return;
	if (!strcmp(v, "rings")) {
		c->direct = false;
		return;
	}
	if (!strcmp(v, "udp")) {
		c->same_host = c->direct = false;
		return;
	}
	ur_err("UROCE_LINK=%s: want auto, rings or udp; using auto", v);
}

/*
 * An UROCE_ADDRS with an entry that is not an address, or with more
 * addresses than a device has GIDs, is an error, not a warning: the
 * automatic address (or the rest of the list, with every GID index after
 * the typo shifted, or without the addresses past the table) would reach
 * no peer the user meant, and the program would only time out.
 * obj/device.c then creates no device.
 */
static void parse_devices(struct ur_config *c)
{
	unsigned int bad, extra;
	const char *v;

	c->num_devices = (unsigned int)env_uint("UROCE_NUM_DEVICES", 1,
						UR_CONFIG_MAX_DEVICES, 1);
	c->num_addrs = 0;
	c->addrs_bad = false;
	v = env("UROCE_ADDRS");
	if (!v)
		return;
	c->num_addrs = parse_addr_list(v, c->addrs, UR_CONFIG_MAX_ADDRS, &bad,
				       &extra, UR_LOG_ERR);
	if (bad || !c->num_addrs) {
		c->addrs_bad = true;
		ur_err("UROCE_ADDRS=%s: want comma-separated IPv4/IPv6 "
		       "addresses; no uroce device is created", v);
	} else if (extra) {
		c->addrs_bad = true;
		ur_err("UROCE_ADDRS: %u addresses, but a device has at most %u "
		       "GIDs; no uroce device is created",
		       c->num_addrs + extra, UR_CONFIG_MAX_ADDRS);
	}
}

/* Everything but the log level, which config_load applies first. */
static void parse_rest(struct ur_config *c)
{
	parse_devices(c);
	parse_stats(c);
	c->pcap = env_dup("UROCE_PCAP");
	c->trace = env_dup("UROCE_TRACE");
	c->fault = env_dup("UROCE_FAULT");
	c->busy_poll = env_bool("UROCE_BUSY_POLL", false);
	c->poll_yield = env_bool("UROCE_POLL_YIELD", false);
	c->wait_yield = env_bool("UROCE_WAIT_YIELD", true);
	c->srq_copy = env_bool("UROCE_SRQ_COPY", false);
	c->gso = env_bool("UROCE_GSO", true);
	c->ecn = env_bool("UROCE_ECN", true);
	c->lazy_doorbell = env_bool("UROCE_LAZY_DOORBELL", true);
	c->pace = env_bool("UROCE_PACE", true);
	c->hardened = parse_hardened();
	parse_link(c);
	c->spin_ns = env_uint_or_default("UROCE_SPIN_US", UR_CONFIG_MAX_US,
					 1000);
	c->quiet_ns = env_uint_or_default("UROCE_QUIET_US", UR_CONFIG_MAX_US,
					  1000);
	c->rt_prio = (int)env_uint("UROCE_RT_PRIO", 0, UR_CONFIG_MAX_RT_PRIO,
				   0);
	c->rx_shards = (unsigned int)env_uint("UROCE_RX_SHARDS", 1,
					      UR_CONFIG_MAX_RX_SHARDS, 0);
}

void ur_config_parse(struct ur_config *c)
{
	memset(c, 0, sizeof(*c));
	c->log_level = parse_log_level();
	parse_rest(c);
}

void ur_config_release(struct ur_config *c)
{
	free(c->stats_path);
	free(c->pcap);
	free(c->trace);
	free(c->fault);
	c->stats_path = c->pcap = c->trace = c->fault = NULL;
}

/*
 * The log level first, so that it filters the other variables' messages;
 * quiet, below every message's level until the load is done.
 */
static void config_load(void)
{
	if (config_quiet)
		ur_log_level = UR_LOG_ERR - 1;
	config.log_level = parse_log_level();
	if (!config_quiet)
		ur_log_set_level(config.log_level);
	parse_rest(&config);
	ur_log_set_level(config.log_level);
}

void ur_config_quiet(void)
{
	config_quiet = true;
}

const struct ur_config *ur_config_get(void)
{
	pthread_once(&config_once, config_load);
	return &config;
}
