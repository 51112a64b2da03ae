/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Proof that the faults happened: the probabilities asked for in
 * UROCE_FAULT, and the counters uroce writes to UROCE_STATS=<path> when the
 * device closes (fault_*, retransmits, drop_* per reason).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "soak.h"

/* Points UROCE_STATS at a fresh file of ours unless the caller chose one;
 * uroce reads it at the first device list, so call this before that. */
void soak_stats_prepare(char *path, size_t len)
{
	const char *env = getenv("UROCE_STATS");

	if (env && *env && strcmp(env, "1"))
		snprintf(path, len, "%s", env);
	else
		snprintf(path, len, "/tmp/uroce-soak-stats.%d", (int)getpid());
	unlink(path);		/* uroce appends: start empty */
	setenv("UROCE_STATS", path, 1);
}

void soak_fault_env(struct soak_faults *f)
{
	const char *env = getenv("UROCE_FAULT");
	char buf[512], *save = NULL;

	if (!env || !*env || !strcmp(env, "off") || !strcmp(env, "0"))
		return;
	snprintf(buf, sizeof(buf), "%s", env);
	for (char *kv = strtok_r(buf, ",", &save); kv;
	     kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');
		double v;

		if (!eq)
			continue;
		*eq = 0;
		v = strtod(eq + 1, NULL);
		if (!strcmp(kv, "drop"))
			f->p_drop = v;
		else if (!strcmp(kv, "dup"))
			f->p_dup = v;
		else if (!strcmp(kv, "reorder"))
			f->p_reorder = v;
		else if (!strcmp(kv, "corrupt"))
			f->p_corrupt = v;
		else if (!strcmp(kv, "delay"))
			f->p_delay = v;
		else if (!strcmp(kv, "delay_us") && v > 0 && f->p_delay == 0)
			f->p_delay = 1;	/* delay_us alone delays everything */
	}
	f->have = f->p_drop > 0 || f->p_dup > 0 || f->p_reorder > 0 ||
		  f->p_corrupt > 0 || f->p_delay > 0;
}

int soak_stats_read(const char *path, struct soak_faults *f)
{
	static const struct {
		const char *name;
		size_t off;
	} keys[] = {
#define K(n, field) { n, offsetof(struct soak_faults, field) }
		K("fault_dropped", dropped),
		K("fault_duplicated", duplicated),
		K("fault_reordered", reordered),
		K("fault_corrupted", corrupted),
		K("fault_delayed", delayed),
		K("retransmits", retransmits),
		K("timeouts", timeouts),
		K("seq_nak_sent", seq_nak_sent),
		K("seq_nak_rcvd", seq_nak_rcvd),
		K("reorder_kept", reorder_kept),
		K("selective_resends", selective_resends),
		K("read_asks", read_asks),
		K("drop_icrc", drop_bad_icrc),
		K("duplicate_requests", dup_requests),
#undef K
	};
	char line[256], name[128];
	unsigned long long v;
	int found = 0;
	FILE *in;

	*f = (struct soak_faults){ 0 };
	soak_fault_env(f);
	in = fopen(path, "r");
	if (!in)
		return -1;
	while (fgets(line, sizeof(line), in)) {
		if (line[0] == '#' || sscanf(line, "%127s %llu", name, &v) != 2)
			continue;
		found++;
		if (!strncmp(name, "drop_", 5))
			f->drops_total += v;
		for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
			if (!strcmp(name, keys[i].name))
				*(uint64_t *)((char *)f + keys[i].off) = v;
	}
	fclose(in);
	return found ? 0 : -1;
}
