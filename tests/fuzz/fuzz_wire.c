/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libFuzzer target for the wire codec. Input: one selector byte (IPv4 or
 * IPv6 flow, IPv4 ID) followed by a UDP payload. Runs parse, the QP-aware
 * checks, ICRC verify and the ID solver, the header builder round trip,
 * and the frame parser on the raw input; aborts on any broken invariant.
 * Built only with -DUROCE_FUZZ=ON and clang (tests/fuzz/run.sh).
 */
#include "wire/wire.h"
#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(x)                                                               \
	do {                                                                   \
		if (!(x))                                                      \
			abort();                                               \
	} while (0)

static void make_flow(struct ur_ip_flow *f, uint8_t sel)
{
	memset(f, 0, sizeof(*f));
	if (sel & 1) {
		f->family = AF_INET6;
		inet_pton(AF_INET6, "fd00::1", &f->src.v6);
		inet_pton(AF_INET6, "fd00::2", &f->dst.v6);
	} else {
		f->family = AF_INET;
		inet_pton(AF_INET, "10.99.0.11", &f->src.v4);
		inet_pton(AF_INET, "10.99.0.12", &f->dst.v4);
		f->ip_id = (uint16_t)((sel >> 1) * 0x0101);
	}
	f->sport = 0xc000 | sel;
	f->dport = UR_ROCEV2_PORT;
}

/* Rebuild the whole datagram from the parsed view and compare. */
static void round_trip(const struct ur_pkt *pkt, const struct ur_ip_flow *f,
		       const uint8_t *buf, size_t len)
{
	struct ur_hdr_fields fields;
	struct ur_pkt again;
	uint8_t *out = malloc(len);
	int hl;

	CHECK(out);
	ur_pkt_to_fields(pkt, &fields);
	hl = ur_hdr_build(out, len, &fields);
	CHECK(hl == pkt->hdr_len);
	/* CNP's 16 reserved bytes are not reproduced by the builder */
	if (pkt->opcode != UR_OPC_CNP)
		CHECK(!memcmp(out, buf, (size_t)hl));
	else
		CHECK(!memcmp(out, buf, UR_BTH_BYTES));
	memcpy(out + hl, pkt->payload, pkt->paylen + pkt->pad);
	ur_icrc_store(out + len - 4, ur_icrc_compute(f, out, len));
	CHECK(ur_pkt_parse(out, len, &again) == UR_DROP_NONE);
	CHECK(again.opcode == pkt->opcode && again.psn == pkt->psn &&
	      again.qpn == pkt->qpn && again.paylen == pkt->paylen);
	CHECK(ur_icrc_verify(f, out, len) == UR_DROP_NONE);
	free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ur_ip_flow flow, solved, fflow;
	const uint8_t *pl;
	struct ur_pkt pkt;
	enum ur_drop_reason r, v;
	size_t plen, len;
	uint8_t *buf;
	unsigned int mtu;

	if (size < 1)
		return 0;
	/* frame parser on the raw bytes, both link types */
	if (ur_frame_parse(data, size, UR_LINKTYPE_ETHERNET, &fflow, &pl,
			   &plen) == UR_DROP_NONE)
		CHECK(pl >= data && pl + plen <= data + size);
	if (ur_frame_parse(data, size, UR_LINKTYPE_RAW, &fflow, &pl, &plen) ==
	    UR_DROP_NONE)
		CHECK(pl >= data && pl + plen <= data + size);

	make_flow(&flow, data[0]);
	len = size - 1;
	buf = malloc(len ? len : 1); /* exact size: ASan sees overruns */
	CHECK(buf);
	memcpy(buf, data + 1, len);

	r = ur_pkt_parse(buf, len, &pkt);
	CHECK((unsigned int)r < UR_DROP__MAX);
	v = ur_icrc_verify(&flow, buf, len);
	solved = flow;
	if (ur_icrc_check_rx(&solved, buf, len) == UR_DROP_NONE &&
	    flow.family == AF_INET) {
		/* the solved ID must really verify */
		CHECK(ur_icrc_verify(&solved, buf, len) == UR_DROP_NONE);
	}
	if (v == UR_DROP_NONE && len >= 16)
		CHECK(ur_icrc_check_rx(&solved, buf, len) == UR_DROP_NONE);
	if (r == UR_DROP_NONE) {
		CHECK(pkt.hdr_len + pkt.paylen + pkt.pad + 4u == len);
		CHECK(pkt.payload == buf + pkt.hdr_len);
		CHECK(ur_op_valid(pkt.opcode));
		for (mtu = 256; mtu <= 4096; mtu *= 2)
			CHECK((unsigned int)ur_pkt_check_mtu(&pkt, mtu) <
			      UR_DROP__MAX);
		for (mtu = 0; mtu < 8; mtu++)
			(void)ur_pkt_check_class(&pkt, mtu);
		round_trip(&pkt, &flow, buf, len);
	}
	free(buf);
	return 0;
}
