/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ICRC cost for 4 KiB RoCEv2 packets, measured next to memcpy of the same
 * size in the same run: full ICRC (pseudo-headers, masking, CRC), the bare
 * CRC-32, the 3-iovec incremental form the engine uses, and the receive
 * check with the IPv4 ID solver (same length: cached elimination; two
 * lengths that evict each other: elimination redone every packet), and
 * the send side's adjustment of a GSO train segment's ICRC to its IPv4 ID.
 * Each figure is the median of REPS repetitions.
 * Usage: icrc_bench [payload_bytes=4096] [reps=11]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include "common/bench.h"
#include "wire/wire.h"

static volatile uint32_t sink;

enum kind {
	K_MEMCPY, K_CRC, K_ICRC, K_ICRC_IOV, K_RX_SAME, K_RX_ALT, K_TX_ID,
	K_NUM
};

static const char *const kind_name[K_NUM] = {
	[K_MEMCPY] = "memcpy",
	[K_CRC] = "crc32 (ISA-L) only",
	[K_ICRC] = "ICRC full (one buffer)",
	[K_ICRC_IOV] = "ICRC full (3 iovecs)",
	[K_RX_SAME] = "rx check, IPv4 ID solve",
	[K_RX_ALT] = "rx check, ID solve, cache miss",
	[K_TX_ID] = "tx GSO segment, ID adjust",
};

static uint8_t *pkt, *dst;
static size_t len;
static struct ur_ip_flow flow, rxflow;

static void run(enum kind k, long iters)
{
	struct iovec iov[3];
	long i;

	iov[0].iov_base = pkt;
	iov[0].iov_len = 12;
	iov[1].iov_base = pkt + 12;
	iov[1].iov_len = len - 16;
	iov[2].iov_base = pkt + len - 4;
	iov[2].iov_len = 4;
	for (i = 0; i < iters; i++) {
		switch (k) {
		case K_MEMCPY:
			memcpy(dst, pkt, len);
			sink += dst[i & 63];
			break;
		case K_CRC:
			sink += ur_crc32(0, pkt, len - 4);
			break;
		case K_ICRC:
			sink += ur_icrc_compute(&flow, pkt, len);
			break;
		case K_ICRC_IOV:
			sink += ur_icrc_compute_iov(&flow, iov, 3);
			break;
		case K_RX_SAME:
			sink += ur_icrc_check_rx(&rxflow, pkt, len);
			break;
		case K_RX_ALT:
			/* a 64-byte shorter view fails, but evicts the
			 * cached elimination every time (worst case) */
			sink += ur_icrc_check_rx(&rxflow, pkt,
						 (i & 1) ? len : len - 64);
			break;
		case K_TX_ID:
			/* segment 1..16 of a train, as engine/tx.c does */
			sink += ur_icrc_ipv4_id_adjust(sink, len, 0,
						       (uint16_t)(1 + (i & 15)));
			break;
		default:
			break;
		}
	}
}

int main(int argc, char **argv)
{
	size_t payload = argc > 1 ? strtoul(argv[1], NULL, 0) : 4096;
	int reps = argc > 2 ? atoi(argv[2]) : 11, r, k;
	struct ur_hdr_fields f = { .opcode = UR_OPC_RC_SEND_ONLY,
				   .pkey = 0xffff,
				   .qpn = 0x11,
				   .psn = 1 };
	double res[K_NUM][64];
	size_t i;

	if (reps < 1 || reps > 64 || payload > 65000)
		return 2;
	len = 12 + payload + ur_pad_len((uint32_t)payload) + 4;
	pkt = aligned_alloc(64, 65536);
	dst = aligned_alloc(64, 65536);
	if (!pkt || !dst)
		return 1;
	memset(&flow, 0, sizeof(flow));
	flow.family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &flow.src.v4);
	inet_pton(AF_INET, "127.0.0.2", &flow.dst.v4);
	flow.sport = ur_udp_sport_qp_pair(0x11, 0x12);
	flow.dport = UR_ROCEV2_PORT;
	f.pad = ur_pad_len((uint32_t)payload);
	ur_hdr_build(pkt, len, &f);
	for (i = 12; i < len - 4; i++)
		pkt[i] = (uint8_t)(i * 131);
	/* receive side sees an rxe-style packet with a non-zero IPv4 ID */
	rxflow = flow;
	rxflow.ip_id = 0x1234;
	ur_icrc_store(pkt + len - 4, ur_icrc_compute(&rxflow, pkt, len));
	if (ur_icrc_check_rx(&rxflow, pkt, len) || rxflow.ip_id != 0x1234) {
		fprintf(stderr, "self-check failed\n");
		return 1;
	}

	for (r = 0; r < reps; r++) {
		for (k = 0; k < K_NUM; k++) {
			long iters = k == K_RX_ALT ? 20000 : 100000;
			double t0, t1;

			run((enum kind)k, iters / 10);	/* warm */
			t0 = bench_now_s();
			run((enum kind)k, iters);
			t1 = bench_now_s();
			res[k][r] = (t1 - t0) / (double)iters;
		}
	}
	printf("packet: %zu bytes UDP payload (%zu B IB payload), %d reps, "
	       "median\n",
	       len, payload, reps);
	printf("%-30s %12s %12s %10s\n", "what", "ns/packet", "GB/s",
	       "x memcpy");
	for (k = 0; k < K_NUM; k++)
		qsort(res[k], (size_t)reps, sizeof(double), bench_cmp_dbl);
	for (k = 0; k < K_NUM; k++) {
		double t = res[k][reps / 2];

		printf("%-30s %12.1f %12.2f %10.2f\n", kind_name[k], t * 1e9,
		       (double)len / t / 1e9, t / res[K_MEMCPY][reps / 2]);
	}
	free(pkt);
	free(dst);
	return 0;
}
