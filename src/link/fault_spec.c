/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * UROCE_FAULT's spec, key by key, into the fault stage's configuration
 * (fault_spec.h; the syntax and what each key does are at the top of
 * fault.c). Every bad key or value is refused with a log line naming it:
 * a fault test that silently ran without its faults would pass.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "link/fault_spec.h"
#include "util/compiler.h"
#include "util/log.h"

enum fi_key {
	FI_SEED,
	FI_DROP,
	FI_DUP,
	FI_REORDER,
	FI_CORRUPT,
	FI_DELAY_US,
	FI_DELAY,
	FI_DIR,
	FI_CE,
};

static const char *const fi_key_names[] = {
	[FI_SEED] = "seed",
	[FI_DROP] = "drop",
	[FI_DUP] = "dup",
	[FI_REORDER] = "reorder",
	[FI_CORRUPT] = "corrupt",
	[FI_DELAY_US] = "delay_us",
	[FI_DELAY] = "delay",
	[FI_DIR] = "dir",
	[FI_CE] = "ce",
};

static int fi_prob(const char *key, const char *v, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(v, &end);
	if (errno || end == v || *end || !(d >= 0.0 && d <= 1.0)) {
		ur_err("link: UROCE_FAULT: %s=%s is not a probability in [0,1]",
		       key, v);
		return -EINVAL;
	}
	*out = d;
	return 0;
}

static int fi_u64(const char *key, const char *v, uint64_t max, uint64_t *out)
{
	unsigned long long x;
	char *end;

	errno = 0;
	x = strtoull(v, &end, 0);
	if (errno || end == v || *end || *v == '-' || x > max) {
		ur_err("link: UROCE_FAULT: %s=%s is not a number (max %" PRIu64
		       ")", key, v, max);
		return -EINVAL;
	}
	*out = x;
	return 0;
}

static int fi_set(struct fi_cfg *c, const char *key, const char *v,
		  bool *delay_given)
{
	unsigned int k;
	uint64_t x;
	int rc;

	for (k = 0; k < UR_ARRAY_SIZE(fi_key_names); k++)
		if (!strcmp(key, fi_key_names[k]))
			break;
	switch (k) {
	case FI_SEED:
		return fi_u64(key, v, UINT64_MAX, &c->seed);
	case FI_DROP:
		return fi_prob(key, v, &c->drop);
	case FI_DUP:
		return fi_prob(key, v, &c->dup);
	case FI_REORDER:
		return fi_prob(key, v, &c->reorder);
	case FI_CORRUPT:
		return fi_prob(key, v, &c->corrupt);
	case FI_CE:
		return fi_prob(key, v, &c->ce);
	case FI_DELAY:
		*delay_given = true;
		return fi_prob(key, v, &c->delay);
	case FI_DELAY_US:
		rc = fi_u64(key, v, 10000000, &x);
		if (!rc)
			c->delay_us = (uint32_t)x;
		return rc;
	case FI_DIR:
		if (!strcmp(v, "tx"))
			c->dir = FI_DIR_TX;
		else if (!strcmp(v, "rx"))
			c->dir = FI_DIR_RX;
		else if (!strcmp(v, "both"))
			c->dir = FI_DIR_TX | FI_DIR_RX;
		else {
			ur_err("link: UROCE_FAULT: dir=%s: want tx, rx or both",
			       v);
			return -EINVAL;
		}
		return 0;
	}
	ur_err("link: UROCE_FAULT: unknown key '%s' (known: seed drop dup "
	       "reorder corrupt delay_us delay dir ce)", key);
	return -EINVAL;
}

int ur_fault_spec_parse(const char *spec, struct fi_cfg *c)
{
	bool delay_given = false;
	char *copy, *tok, *save = NULL, *eq;
	int rc = 0;

	memset(c, 0, sizeof(*c));
	c->seed = 1;
	c->dir = FI_DIR_TX;
	if (!spec || !*spec || !strcmp(spec, "off") || !strcmp(spec, "0"))
		return 0;
	copy = strdup(spec);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		tok += strspn(tok, " \t\n");
		if (!*tok)
			continue;
		eq = strchr(tok, '=');
		if (!eq) {
			ur_err("link: UROCE_FAULT: '%s' is not key=value", tok);
			rc = -EINVAL;
			break;
		}
		*eq = '\0';
		rc = fi_set(c, tok, eq + 1, &delay_given);
	}
	free(copy);
	if (rc)
		return rc;
	if (c->delay_us && !delay_given)
		c->delay = 1.0;
	if (c->delay > 0 && !c->delay_us) {
		ur_err("link: UROCE_FAULT: delay=P needs delay_us=N");
		return -EINVAL;
	}
	return 0;
}

bool ur_fault_spec_active(const struct fi_cfg *c)
{
	return c->drop > 0 || c->dup > 0 || c->reorder > 0 || c->corrupt > 0 ||
	       c->delay > 0 || c->ce > 0;
}
