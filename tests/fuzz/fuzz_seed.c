/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writes a libFuzzer seed corpus for fuzz_wire: one file per RoCEv2
 * datagram of the given captures, as selector byte (IPv4 ID high byte, so
 * the seed's ICRC matches often) + UDP payload.
 * Usage: fuzz_seed OUTDIR FILE.pcap...
 */
#include "wire/wire.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct seed_ctx {
	const char *dir;
	unsigned int n;
};

static int write_seed(const uint8_t *frame, size_t caplen, int linktype,
		      void *arg)
{
	struct seed_ctx *c = arg;
	struct ur_ip_flow flow;
	const uint8_t *pl;
	size_t plen;
	char path[4096];
	uint8_t sel;
	FILE *f;

	if (ur_frame_parse(frame, caplen, linktype, &flow, &pl, &plen))
		return 0;
	sel = flow.family == AF_INET6 ? 1 : (uint8_t)((flow.ip_id >> 8) << 1);
	snprintf(path, sizeof(path), "%s/seed-%05u", c->dir, c->n++);
	f = fopen(path, "wb");
	if (!f)
		return -1;
	fwrite(&sel, 1, 1, f);
	fwrite(pl, 1, plen, f);
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct seed_ctx c = {0};
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: %s OUTDIR FILE.pcap...\n", argv[0]);
		return 2;
	}
	c.dir = argv[1];
	for (i = 2; i < argc; i++) {
		if (ur_pcap_foreach(argv[i], write_seed, &c)) {
			fprintf(stderr, "%s: cannot read\n", argv[i]);
			return 1;
		}
	}
	printf("%u seeds in %s\n", c.n, c.dir);
	return 0;
}
