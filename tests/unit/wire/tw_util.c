/* SPDX-License-Identifier: BSD-2-Clause */
/* Test helpers: reference captures and sample packets (see tw_util.h). */
#include "tw_util.h"
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const tw_pcap_files[] = {
    "atomic_lat.pcap", "host_peer.pcap",   "rc_pingpong.pcap", "read_lat.pcap",
    "rping.pcap",      "ud_pingpong.pcap", "write_bw.pcap",
};
const size_t tw_pcap_nfiles = sizeof(tw_pcap_files) / sizeof(tw_pcap_files[0]);

const char *tw_pcap_path(const char *file)
{
	static char path[4096];

	snprintf(path, sizeof(path), "%s/%s", UR_PCAP_DIR, file);
	return path;
}

struct load_ctx {
	struct tw_set *set;
	const char *file;
	unsigned int frame;
	size_t added;
};

static int load_cb(const uint8_t *frame, size_t caplen, int linktype, void *arg)
{
	struct load_ctx *c = arg;
	struct tw_set *s = c->set;
	struct ur_ip_flow flow;
	const uint8_t *pl;
	size_t plen;
	struct tw_pkt *p;

	c->frame++;
	if (ur_frame_parse(frame, caplen, linktype, &flow, &pl, &plen) !=
		UR_DROP_NONE ||
	    flow.dport != UR_ROCEV2_PORT)
		return 0;
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 256;
		s->pkts = realloc(s->pkts, s->cap * sizeof(*s->pkts));
		if (!s->pkts)
			abort();
	}
	p = &s->pkts[s->n++];
	p->file = c->file;
	p->frame = c->frame;
	p->flow = flow;
	p->len = plen;
	p->udp = malloc(plen ? plen : 1);
	if (!p->udp)
		abort();
	memcpy(p->udp, pl, plen);
	c->added++;
	return 0;
}

size_t tw_load(struct tw_set *set, const char *file)
{
	struct load_ctx c = {.set = set, .file = file};

	if (ur_pcap_foreach(tw_pcap_path(file), load_cb, &c))
		return 0;
	return c.added;
}

void tw_load_all(struct tw_set *set)
{
	size_t i;

	for (i = 0; i < tw_pcap_nfiles; i++)
		tw_load(set, tw_pcap_files[i]);
}

void tw_free(struct tw_set *set)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		free(set->pkts[i].udp);
	free(set->pkts);
	memset(set, 0, sizeof(*set));
}

void tw_flow_v4(struct ur_ip_flow *flow)
{
	memset(flow, 0, sizeof(*flow));
	flow->family = AF_INET;
	inet_pton(AF_INET, "10.99.0.11", &flow->src.v4);
	inet_pton(AF_INET, "10.99.0.12", &flow->dst.v4);
	flow->sport = ur_udp_sport_qp_pair(0x11, 0x12);
	flow->dport = UR_ROCEV2_PORT;
}

void tw_flow_v6(struct ur_ip_flow *flow)
{
	memset(flow, 0, sizeof(*flow));
	flow->family = AF_INET6;
	inet_pton(AF_INET6, "fd00:99::11", &flow->src.v6);
	inet_pton(AF_INET6, "fd00:99::12", &flow->dst.v6);
	flow->sport = ur_udp_sport_qp_pair(0x11, 0x12);
	flow->dport = UR_ROCEV2_PORT;
}

int tw_build(uint8_t *buf, size_t buflen, uint8_t op, uint32_t paylen,
	     const struct ur_ip_flow *flow, struct ur_hdr_fields *out)
{
	struct ur_hdr_fields f = {0};
	uint8_t pad;
	size_t total;
	uint32_t i;
	int n;

	if (!ur_op_has_payload(op))
		paylen = 0;
	pad = ur_pad_len(paylen);
	f.opcode = op;
	f.se = ur_op_has_end(op) && ur_op_is_send(op);
	f.ackreq = ur_op_may_ackreq(op) && ur_op_has_end(op);
	f.pad = pad;
	f.pkey = UR_PKEY_DEFAULT;
	f.qpn = 0x123456;
	f.psn = 0xfffffe;
	f.reth.va = 0x00007f0012345678ull;
	f.reth.rkey = 0x1234ab;
	f.reth.len = paylen;
	f.aeth.syn = UR_AETH_ACK_UNLIMITED;
	f.aeth.msn = 0x654321;
	f.atmeth.va = 0x00007f00deadbee8ull;
	f.atmeth.rkey = 0x5678cd;
	f.atmeth.swap_add = 0x0102030405060708ull;
	f.atmeth.compare = 0x1112131415161718ull;
	f.atmack_orig = 0x2122232425262728ull;
	f.imm_be = htonl(0xc0ffee01);
	f.ieth_rkey = 0x9abcde;
	f.xrc_srqn = 0xc0ffee;
	f.deth.qkey = 0x11111111;
	f.deth.sqp = 0x22;
	f.feth.sel = 1;
	f.feth.plt = 1;
	n = ur_hdr_build(buf, buflen, &f);
	if (n < 0)
		return n;
	total = (size_t)n + paylen + pad + UR_ICRC_BYTES;
	if (total > buflen)
		return -ENOSPC;
	for (i = 0; i < paylen; i++)
		buf[n + i] = (uint8_t)(i * 7 + op);
	memset(buf + n + paylen, 0, pad);
	ur_icrc_store(buf + total - UR_ICRC_BYTES,
		      ur_icrc_compute(flow, buf, total));
	if (out)
		*out = f;
	return (int)total;
}

int tw_seal(uint8_t *buf, size_t buflen, struct ur_hdr_fields *f,
	    const void *pay, uint32_t paylen, const struct ur_ip_flow *flow)
{
	struct ur_icrc c;
	size_t n;
	int h;

	f->pad = ur_pad_len(paylen);
	f->pkey = UR_PKEY_DEFAULT;
	h = ur_hdr_build(buf, buflen, f);
	if (h < 0)
		return h;
	n = (size_t)h + paylen + f->pad + UR_ICRC_BYTES;
	if (n > buflen)
		return -ENOSPC;
	if (paylen)
		memcpy(buf + h, pay, paylen);
	memset(buf + h + paylen, 0, f->pad);
	ur_icrc_begin(&c, flow, n);
	ur_icrc_update(&c, buf, n - UR_ICRC_BYTES);
	ur_icrc_store(buf + n - UR_ICRC_BYTES, ur_icrc_final(&c));
	return (int)n;
}
