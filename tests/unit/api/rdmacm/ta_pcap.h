/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a test's own process put on the wire: UROCE_PCAP (set by main()
 * before the first verbs call; "%p" becomes the pid) records every RoCEv2
 * datagram sent and received, as Ethernet frames. ta_pcap_count() counts
 * the frames whose BTH has opcode op and whose bytes after the BTH satisfy
 * match(); reading the file as it grows is safe (the writer flushes whole
 * records, a short tail is ignored).
 */
#ifndef UR_TESTS_API_RDMACM_TA_PCAP_H
#define UR_TESTS_API_RDMACM_TA_PCAP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TA_ROCE_PORT 4791
#define TA_BTH_LEN 12

/* The path the library of process pid writes (%p: its pid). */
static inline void ta_pcap_path_of(int pid, char *out, size_t n)
{
	const char *spec = getenv("UROCE_PCAP");
	const char *p = spec ? strstr(spec, "%p") : NULL;

	if (!spec)
		snprintf(out, n, "(unset)");
	else if (p)
		snprintf(out, n, "%.*s%d%s", (int)(p - spec), spec, pid,
			 p + 2);
	else
		snprintf(out, n, "%s", spec);
}

/* The path our own library writes. */
static inline void ta_pcap_path(char *out, size_t n)
{
	ta_pcap_path_of((int)getpid(), out, n);
}

/* The BTH of an Ethernet/IP/UDP frame to port 4791, or NULL. */
static inline const uint8_t *ta_bth(const uint8_t *f, size_t len,
				    size_t *rest)
{
	size_t ip, l4;

	if (len < 14)
		return NULL;
	ip = 14;
	if (f[12] == 0x08 && f[13] == 0x00 && len >= ip + 20 && f[ip + 9] == 17)
		l4 = ip + (size_t)(f[ip] & 0x0f) * 4;
	else if (f[12] == 0x86 && f[13] == 0xdd && len >= ip + 40 &&
		 f[ip + 6] == 17)
		l4 = ip + 40;
	else
		return NULL;
	if (len < l4 + 8 + TA_BTH_LEN ||
	    ((f[l4 + 2] << 8) | f[l4 + 3]) != TA_ROCE_PORT)
		return NULL;
	*rest = len - (l4 + 8);
	return f + l4 + 8;
}

static inline int ta_pcap_count(uint8_t op,
				bool (*match)(const uint8_t *after_bth,
					      size_t len, const void *arg),
				const void *arg)
{
	char path[512];
	uint8_t hdr[24], rec[16], *buf = NULL;
	const uint8_t *bth;
	uint32_t incl;
	size_t rest;
	int cnt = 0;
	FILE *f;

	ta_pcap_path(path, sizeof(path));
	f = fopen(path, "rb");
	if (!f)
		return -1;
	if (fread(hdr, sizeof(hdr), 1, f) != 1) {
		fclose(f);
		return -1;
	}
	buf = malloc(65536);
	while (buf && fread(rec, sizeof(rec), 1, f) == 1) {
		memcpy(&incl, rec + 8, 4);	/* written in host order */
		if (incl > 65536 || fread(buf, incl, 1, f) != 1)
			break;
		bth = ta_bth(buf, incl, &rest);
		if (bth && bth[0] == op &&
		    (!match || match(bth + TA_BTH_LEN, rest - TA_BTH_LEN, arg)))
			cnt++;
	}
	free(buf);
	fclose(f);
	return cnt;
}

#endif /* UR_TESTS_API_RDMACM_TA_PCAP_H */
