/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * wire/ unit tests without captures: header accessors, the opcode table and
 * its predicates, build/parse round trips for every opcode, every parse
 * rejection reason, MTU and class checks, PSN arithmetic at the wrap, UDP
 * source-port hashes, IP/UDP encapsulation and the GRH image.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tw_util.h"
#include "wire/icrc.h"

static void test_bth_accessors(void **state)
{
	struct ur_bth b;
	const uint8_t *raw = (const uint8_t *)&b;

	memset(&b, 0, sizeof(b));
	ur_bth_set_opcode(&b, 0x0b);
	ur_bth_set_se(&b, true);
	ur_bth_set_pad(&b, 3);
	ur_bth_set_pkey(&b, 0xabcd);
	ur_bth_set_qpn(&b, 0x123456);
	ur_bth_set_ackreq(&b, true);
	ur_bth_set_psn(&b, 0xfedcba);
	assert_int_equal(raw[0], 0x0b);
	assert_int_equal(raw[1], 0xb0);
	assert_int_equal(raw[2], 0xab);
	assert_int_equal(raw[3], 0xcd);
	assert_int_equal(raw[4], 0x00);
	assert_int_equal(raw[5], 0x12);
	assert_int_equal(raw[6], 0x34);
	assert_int_equal(raw[7], 0x56);
	assert_int_equal(raw[8], 0x80);
	assert_int_equal(raw[9], 0xfe);
	assert_int_equal(raw[11], 0xba);
	/* neighbours are untouched by each setter */
	ur_bth_set_fecn(&b, true);
	ur_bth_set_becn(&b, true);
	ur_bth_set_resv6a(&b, 0x3f);
	assert_int_equal(ur_bth_qpn(&b), 0x123456);
	assert_int_equal(raw[4], 0xff);
	ur_bth_set_qpn(&b, 0xffffffff); /* masked to 24 bits */
	assert_int_equal(ur_bth_qpn(&b), 0xffffff);
	assert_true(ur_bth_fecn(&b) && ur_bth_becn(&b));
	assert_int_equal(ur_bth_resv6a(&b), 0x3f);
	ur_bth_set_resv7(&b, 0x7f);
	assert_true(ur_bth_ackreq(&b));
	assert_int_equal(ur_bth_psn(&b), 0xfedcba);
	ur_bth_set_ackreq(&b, false);
	assert_int_equal(ur_bth_resv7(&b), 0x7f);
	ur_bth_set_tver(&b, 0xf);
	ur_bth_set_mig(&b, true);
	assert_int_equal(ur_bth_pad(&b), 3);
	assert_true(ur_bth_se(&b));
	assert_int_equal(raw[1], 0xff);
	assert_int_equal(ur_bth_pkey(&b), 0xabcd);
}

static void test_ext_accessors(void **state)
{
	uint8_t buf[64];
	struct ur_reth *r = (void *)(buf + 1); /* deliberately unaligned */
	struct ur_atmeth *a = (void *)(buf + 3);
	struct ur_deth *d = (void *)(buf + 5);
	struct ur_aeth *ae = (void *)(buf + 7);

	memset(buf, 0, sizeof(buf));
	ur_reth_set_va(r, 0x0102030405060708ull);
	ur_reth_set_rkey(r, 0x11223344);
	ur_reth_set_len(r, 0x55667788);
	assert_int_equal(buf[1], 0x01);
	assert_int_equal(buf[8], 0x08);
	assert_int_equal(buf[9], 0x11);
	assert_int_equal(buf[16], 0x88);
	assert_true(ur_reth_va(r) == 0x0102030405060708ull);
	assert_int_equal(ur_reth_rkey(r), 0x11223344);
	assert_int_equal(ur_reth_len(r), 0x55667788);

	memset(buf, 0, sizeof(buf));
	ur_atmeth_set_va(a, 1);
	ur_atmeth_set_rkey(a, 2);
	ur_atmeth_set_swap_add(a, 0xa0a1a2a3a4a5a6a7ull);
	ur_atmeth_set_compare(a, 0xb0b1b2b3b4b5b6b7ull);
	assert_int_equal(buf[3 + 12], 0xa0);
	assert_int_equal(buf[3 + 20], 0xb0);
	assert_int_equal(buf[3 + 27], 0xb7);
	assert_true(ur_atmeth_swap_add(a) == 0xa0a1a2a3a4a5a6a7ull);
	assert_true(ur_atmeth_compare(a) == 0xb0b1b2b3b4b5b6b7ull);
	assert_int_equal(ur_atmeth_rkey(a), 2);

	memset(buf, 0, sizeof(buf));
	ur_deth_set_qkey(d, 0x80010000);
	ur_deth_set_sqp(d, 0xabcdef);
	assert_int_equal(buf[5], 0x80);
	assert_int_equal(buf[9], 0x00);
	assert_int_equal(buf[10], 0xab);
	assert_int_equal(ur_deth_resv8(d), 0);
	assert_int_equal(ur_deth_sqp(d), 0xabcdef);

	memset(buf, 0, sizeof(buf));
	ur_aeth_set_syn(ae, UR_AETH_NAK_PSN_SEQ);
	ur_aeth_set_msn(ae, 0x010203);
	assert_int_equal(buf[7], 0x60);
	assert_int_equal(buf[10], 0x03);
	assert_int_equal(ur_aeth_syn(ae), 0x60);
	assert_int_equal(ur_aeth_msn(ae), 0x010203);
}

static void test_opcode_table(void **state)
{
	unsigned int op, h, nvalid = 0;

	for (op = 0; op < 256; op++) {
		const struct ur_opcode_info *oi = ur_op_info((uint8_t)op);
		unsigned int len = 0, prev_end = 0, pos;

		if (!ur_op_valid((uint8_t)op)) {
			assert_int_equal(oi->mask, 0);
			assert_string_equal(ur_op_name((uint8_t)op), "UNKNOWN");
			continue;
		}
		nvalid++;
		assert_non_null(oi->name);
		assert_true(oi->mask & UR_MASK_BTH);
		assert_int_equal(oi->offset[UR_HDR_BTH], 0);
		/* headers in wire order, contiguous, summing to length */
		for (h = 0; h < UR_HDR_NUM; h++) {
			if (!(oi->mask & (1u << h)))
				continue;
			assert_int_equal(oi->offset[h], prev_end);
			prev_end = oi->offset[h] + ur_hdr_size[h];
			len += ur_hdr_size[h];
		}
		assert_int_equal(len, oi->length);
		/* exactly one message position */
		pos = !!ur_op_is_first((uint8_t)op) +
		      !!ur_op_is_middle((uint8_t)op) +
		      !!ur_op_is_last((uint8_t)op) +
		      !!ur_op_is_only((uint8_t)op);
		assert_int_equal(pos, 1);
		/* request xor response, except CNP */
		if (op != UR_OPC_CNP)
			assert_true(!!ur_op_is_request((uint8_t)op) !=
				    !!ur_op_is_response((uint8_t)op));
	}
	/* 25 RC + 12 UC + 2 UD + CNP + 23 XRC (RC's but FLUSH, ATOMIC_WRITE) */
	assert_int_equal(nvalid, 63);
	assert_true(ur_op_is_first(UR_OPC_RC_SEND_FIRST));
	assert_true(ur_op_is_middle(UR_OPC_UC_WRITE_MIDDLE));
	assert_true(ur_op_is_last(UR_OPC_RC_READ_RESP_LAST));
	assert_true(ur_op_is_only(UR_OPC_UD_SEND_ONLY_IMM));
	assert_true(ur_op_has_start(UR_OPC_RC_WRITE_ONLY));
	assert_true(ur_op_has_end(UR_OPC_RC_SEND_LAST_INV));
	assert_true(ur_op_has_imm(UR_OPC_RC_WRITE_ONLY_IMM));
	assert_int_equal(ur_op_hdr_off(UR_OPC_RC_WRITE_ONLY_IMM, UR_HDR_IMMDT),
			 28);
	assert_int_equal(ur_op_hdr_off(UR_OPC_UD_SEND_ONLY_IMM, UR_HDR_IMMDT),
			 20);
	assert_int_equal(ur_op_hdr_len(UR_OPC_RC_ATOMIC_ACK), 24);
	assert_int_equal(ur_op_hdr_len(UR_OPC_RC_CMP_SWAP), 40);
	assert_true(ur_op_has_inv(UR_OPC_RC_SEND_ONLY_INV));
	assert_false(ur_op_has_payload(UR_OPC_RC_READ_REQ));
	assert_true(ur_op_is_read(UR_OPC_RC_READ_REQ));
	assert_true(ur_op_is_atomic(UR_OPC_RC_ATOMIC_ACK));
	assert_true(ur_op_is_ack(UR_OPC_RC_ACK));
	assert_true(ur_op_may_ackreq(UR_OPC_RC_WRITE_MIDDLE));
	assert_false(ur_op_may_ackreq(UR_OPC_UC_SEND_ONLY));
	assert_true(ur_op_consumes_rwr(UR_OPC_RC_WRITE_LAST_IMM));
	assert_false(ur_op_consumes_rwr(UR_OPC_RC_WRITE_LAST));
	assert_true(ur_op_completes_rwr(UR_OPC_RC_SEND_LAST));
	assert_false(ur_op_valid(0x40)); /* RD: no RD QPs */
	assert_false(ur_op_valid(0x15));
	assert_string_equal(ur_op_name(UR_OPC_RC_SEND_FIRST), "RC SEND_FIRST");
	assert_string_equal(ur_op_name(UR_OPC_CNP), "CNP");
}

/* util/iba.h's UR_ROCEV2_MAX_HDR_BYTES (which sizes the device's IB MTU
 * from the link's) is the largest header any opcode with payload has. */
static void test_max_hdr_bytes(void **state)
{
	unsigned int most = 0;

	for (unsigned int op = 0; op < 256; op++) {
		unsigned int n;

		if (!ur_op_valid((uint8_t)op) ||
		    !(ur_op_mask((uint8_t)op) & UR_MASK_PAYLOAD) ||
		    ur_op_info((uint8_t)op)->fixed_payload)
			continue;
		n = UR_UDP_HDR_BYTES + ur_op_hdr_len((uint8_t)op) +
		    UR_ICRC_BYTES;
		if (n > most)
			most = n;
	}
	assert_int_equal(most, UR_ROCEV2_MAX_HDR_BYTES);
}

static void test_class(void **state)
{
	assert_true(ur_op_valid_for_class(UR_OPC_RC_ACK, UR_TCLASS_RC));
	assert_false(ur_op_valid_for_class(UR_OPC_RC_ACK, UR_TCLASS_UC));
	assert_true(ur_op_valid_for_class(UR_OPC_UC_SEND_ONLY, UR_TCLASS_UC));
	assert_false(ur_op_valid_for_class(UR_OPC_UC_SEND_ONLY, UR_TCLASS_UD));
	assert_true(ur_op_valid_for_class(UR_OPC_UD_SEND_ONLY, UR_TCLASS_UD));
	assert_false(ur_op_valid_for_class(UR_OPC_UD_SEND_ONLY, UR_TCLASS_RC));
	assert_false(ur_op_valid_for_class(UR_OPC_CNP, UR_TCLASS_CNP));
	assert_false(
	    ur_op_valid_for_class(0x2c, UR_TCLASS_UC)); /* no UC READ */
}

/*
 * The RoCEv2 CNP (annex A17.9.3) as NICs send it: BTH with opcode 0x81,
 * P_Key 0xFFFF, BECN, the destination QP, PSN 0, 16 reserved zero bytes,
 * then the ICRC: 32 bytes of UDP payload. The header bytes are those of
 * a published mlx5 CNP to QP 0xd2. On receive the reserved bytes are
 * ignored, and no QP class has the opcode (it is the NIC's, not a QP's).
 */
static void test_cnp(void **state)
{
	static const uint8_t mlx5_hdr[28] = {
		0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x00, 0xd2,
	};
	struct ur_hdr_fields f = { 0 };
	uint8_t buf[32];
	struct ur_pkt pkt;

	(void)state;
	f.opcode = UR_OPC_CNP;
	f.pkey = 0xffff;
	f.becn = true;
	f.qpn = 0xd2;
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(ur_hdr_build(buf, sizeof(buf), &f), 28);
	assert_memory_equal(buf, mlx5_hdr, sizeof(mlx5_hdr));
	assert_int_equal(ur_pkt_parse(buf, sizeof(buf), &pkt), UR_DROP_NONE);
	assert_int_equal(pkt.opcode, UR_OPC_CNP);
	assert_int_equal(pkt.qpn, 0xd2);
	assert_int_equal(pkt.psn, 0);
	assert_int_equal(pkt.hdr_len, 28);
	assert_int_equal(pkt.paylen, 0);
	assert_true(ur_bth_becn(pkt.bth));
	assert_null(pkt.aeth);
	buf[20] = 0x5a;		/* reserved: ignored on receive */
	assert_int_equal(ur_pkt_parse(buf, sizeof(buf), &pkt), UR_DROP_NONE);
	assert_int_equal(ur_pkt_check_class(&pkt, UR_TCLASS_RC),
			 UR_DROP_OPCODE_CLASS);
	/* too short for its reserved bytes; or with a payload */
	assert_int_equal(ur_pkt_parse(buf, 31, &pkt), UR_DROP_BAD_LENGTH);
	assert_int_equal(ur_pkt_parse(buf, sizeof(buf), &pkt), UR_DROP_NONE);
	{
		uint8_t big[36] = { 0 };

		memcpy(big, buf, 28);
		assert_int_equal(ur_pkt_parse(big, sizeof(big), &pkt),
				 UR_DROP_PAYLOAD_LEN);
	}
}

/* uroce's same-host mark (hdr.h): built into resv6a, parsed back, and
 * the ICRC's masked byte, so the same packet with and without it has the
 * same ICRC. */
static void test_placed_mark(void **state)
{
	struct ur_hdr_fields f = { 0 }, g;
	struct ur_ip_flow flow;
	uint8_t a[64], b[64];
	struct ur_pkt pkt;
	int len;

	(void)state;
	tw_flow_v4(&flow);
	f.opcode = UR_OPC_RC_WRITE_ONLY_IMM;
	f.pkey = 0xffff;
	f.qpn = 0x123456;
	f.psn = 77;
	f.ackreq = true;
	f.reth.va = 0x1000;
	f.reth.rkey = 0xabcd;
	f.reth.len = 20000;
	f.imm_be = 0x01020304;
	len = ur_hdr_build(a, sizeof(a), &f);
	assert_int_equal(len, 12 + 16 + 4);
	f.placed = true;
	assert_int_equal(ur_hdr_build(b, sizeof(b), &f), len);
	assert_int_equal(b[4], UR_BTH_RESV6A_PLACED);
	assert_int_equal(ur_bth_qpn((const struct ur_bth *)b), 0x123456);
	/* the ICRC slot follows the headers (no payload) */
	assert_int_equal(ur_icrc_compute(&flow, a, (size_t)len + 4),
			 ur_icrc_compute(&flow, b, (size_t)len + 4));
	assert_int_equal(ur_pkt_parse(b, (size_t)len + 4, &pkt), UR_DROP_NONE);
	assert_true(pkt.placed);
	assert_int_equal(pkt.paylen, 0);
	assert_int_equal(ur_reth_len(pkt.reth), 20000);
	ur_pkt_to_fields(&pkt, &g);
	assert_true(g.placed);
}

/* Compare two field sets on what opcode op carries. */
static void assert_fields_equal(const struct ur_hdr_fields *a,
				const struct ur_hdr_fields *b, uint8_t op)
{
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->se, b->se);
	assert_int_equal(a->ackreq, b->ackreq);
	assert_int_equal(a->placed, b->placed);
	assert_int_equal(a->pad, b->pad);
	assert_int_equal(a->pkey, b->pkey);
	assert_int_equal(a->qpn, b->qpn);
	assert_int_equal(a->psn, b->psn);
	if (ur_op_has(op, UR_HDR_RETH)) {
		assert_true(a->reth.va == b->reth.va);
		assert_int_equal(a->reth.rkey, b->reth.rkey);
		assert_int_equal(a->reth.len, b->reth.len);
	}
	if (ur_op_has(op, UR_HDR_AETH)) {
		assert_int_equal(a->aeth.syn, b->aeth.syn);
		assert_int_equal(a->aeth.msn, b->aeth.msn);
	}
	if (ur_op_has(op, UR_HDR_ATMETH)) {
		assert_true(a->atmeth.va == b->atmeth.va);
		assert_int_equal(a->atmeth.rkey, b->atmeth.rkey);
		assert_true(a->atmeth.swap_add == b->atmeth.swap_add);
		assert_true(a->atmeth.compare == b->atmeth.compare);
	}
	if (ur_op_has(op, UR_HDR_ATMACK))
		assert_true(a->atmack_orig == b->atmack_orig);
	if (ur_op_has(op, UR_HDR_IMMDT))
		assert_int_equal(a->imm_be, b->imm_be);
	if (ur_op_has(op, UR_HDR_IETH))
		assert_int_equal(a->ieth_rkey, b->ieth_rkey);
	if (ur_op_has(op, UR_HDR_DETH)) {
		assert_int_equal(a->deth.qkey, b->deth.qkey);
		assert_int_equal(a->deth.sqp, b->deth.sqp);
	}
	if (ur_op_has(op, UR_HDR_XRCETH))
		assert_int_equal(a->xrc_srqn, b->xrc_srqn);
	if (ur_op_has(op, UR_HDR_FETH)) {
		assert_int_equal(a->feth.sel, b->feth.sel);
		assert_int_equal(a->feth.plt, b->feth.plt);
	}
}

static void test_build_parse_all(void **state)
{
	static const uint32_t lens[] = {0, 1, 3, 8, 255, 1024};
	struct ur_ip_flow flow;
	uint8_t buf[2048], hb[64];
	unsigned int op, i, n = 0;

	tw_flow_v4(&flow);
	for (op = 0; op < 256; op++) {
		if (!ur_op_valid((uint8_t)op))
			continue;
		for (i = 0; i < UR_ARRAY_SIZE(lens); i++) {
			struct ur_hdr_fields f, g;
			struct ur_pkt pkt;
			uint32_t pl = lens[i];
			int len, hl;

			if (ur_op_info((uint8_t)op)->fixed_payload)
				pl = ur_op_info((uint8_t)op)->fixed_payload;
			len = tw_build(buf, sizeof(buf), (uint8_t)op, pl, &flow,
				       &f);
			assert_true(len > 0);
			assert_int_equal(ur_pkt_parse(buf, (size_t)len, &pkt),
					 UR_DROP_NONE);
			assert_int_equal(pkt.opcode, op);
			assert_int_equal(pkt.hdr_len,
					 ur_op_hdr_len((uint8_t)op));
			assert_int_equal(pkt.paylen,
					 ur_op_has_payload((uint8_t)op) ? pl
									: 0);
			assert_ptr_equal(pkt.payload, buf + pkt.hdr_len);
			assert_int_equal(pkt.psn, 0xfffffe);
			assert_int_equal(pkt.qpn, 0x123456);
			assert_int_equal(!!pkt.reth,
					 ur_op_has((uint8_t)op, UR_HDR_RETH));
			assert_int_equal(!!pkt.immdt,
					 ur_op_has_imm((uint8_t)op));
			ur_pkt_to_fields(&pkt, &g);
			assert_fields_equal(&f, &g, (uint8_t)op);
			hl = ur_hdr_build(hb, sizeof(hb), &g);
			assert_int_equal(hl, pkt.hdr_len);
			assert_memory_equal(hb, buf, (size_t)hl);
			assert_int_equal(
			    ur_icrc_verify(&flow, buf, (size_t)len),
			    UR_DROP_NONE);
			n++;
		}
	}
	assert_int_equal(n, 63 * UR_ARRAY_SIZE(lens));
	/* builder errors */
	{
		struct ur_hdr_fields f = {.opcode = 0x40};

		assert_int_equal(ur_hdr_build(hb, sizeof(hb), &f), -EINVAL);
		f.opcode = UR_OPC_RC_CMP_SWAP;
		assert_int_equal(ur_hdr_build(hb, 39, &f), -ENOSPC);
		assert_int_equal(ur_hdr_build(hb, 40, &f), 40);
	}
}

static enum ur_drop_reason parse(const uint8_t *b, size_t len)
{
	struct ur_pkt pkt;

	return ur_pkt_parse(b, len, &pkt);
}

/* The XRCETH: 8 reserved bits and the 24-bit XRC SRQ number, right after
 * the BTH of every XRC request and of no response. */
static void test_xrceth(void **state)
{
	struct ur_hdr_fields f = { 0 }, g;
	struct ur_ip_flow flow;
	struct ur_pkt pkt;
	uint8_t buf[256];
	int len;

	tw_flow_v4(&flow);
	len = tw_build(buf, sizeof(buf), ur_op_rc_to_xrc(UR_OPC_RC_WRITE_ONLY),
		       8, &flow, &f);
	assert_true(len > 0);
	assert_int_equal(buf[0], 0xaa);
	assert_int_equal(buf[12], 0);			/* reserved */
	assert_int_equal(buf[13], 0xc0);		/* f.xrc_srqn */
	assert_int_equal(buf[14], 0xff);
	assert_int_equal(buf[15], 0xee);
	assert_int_equal(ur_pkt_parse(buf, (size_t)len, &pkt), UR_DROP_NONE);
	assert_ptr_equal(pkt.xrceth, buf + 12);
	assert_ptr_equal(pkt.reth, buf + 16);		/* RETH after it */
	assert_ptr_equal(pkt.payload, buf + 32);
	assert_int_equal(ur_xrceth_srqn(pkt.xrceth), 0xc0ffee);
	ur_pkt_to_fields(&pkt, &g);
	assert_int_equal(g.xrc_srqn, 0xc0ffee);
	buf[12] = 1;					/* reserved bits */
	assert_int_equal(ur_pkt_parse(buf, (size_t)len, &pkt),
			 UR_DROP_RESERVED);

	/* atomics and READ requests carry it, responses do not */
	assert_int_equal(ur_op_hdr_off(ur_op_rc_to_xrc(UR_OPC_RC_FETCH_ADD),
				       UR_HDR_ATMETH), 16);
	assert_int_equal(ur_op_hdr_len(ur_op_rc_to_xrc(UR_OPC_RC_READ_REQ)),
			 32);
	assert_false(ur_op_has(ur_op_rc_to_xrc(UR_OPC_RC_ACK),
			       UR_HDR_XRCETH));
	assert_false(ur_op_has(ur_op_rc_to_xrc(UR_OPC_RC_READ_RESP_ONLY),
			       UR_HDR_XRCETH));
	assert_int_equal(ur_op_xrc_to_rc(0xb1), UR_OPC_RC_ACK);
	assert_int_equal(ur_op_xrc_to_rc(UR_OPC_UC_SEND_ONLY),
			 UR_OPC_UC_SEND_ONLY);
	assert_true(ur_op_valid_for_class(0xa4, UR_TCLASS_XRC));
	assert_false(ur_op_valid_for_class(0xa4, UR_TCLASS_RC));
	assert_false(ur_op_valid(0xbc));	/* no XRC FLUSH (yet) */
	assert_string_equal(ur_op_name(0xa4), "XRC SEND_ONLY");
}

static void test_parse_rejects(void **state)
{
	struct ur_ip_flow flow;
	uint8_t buf[2048], tmp[2048];
	struct ur_pkt pkt;
	size_t i;
	int len;

	tw_flow_v4(&flow);
	/* too short: anything below BTH + ICRC */
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_ONLY, 0, &flow, NULL);
	assert_int_equal(len, 16);
	for (i = 0; i < 16; i++)
		assert_int_equal(parse(buf, i), UR_DROP_TOO_SHORT);
	assert_int_equal(parse(buf, 16), UR_DROP_NONE);

	/* unknown opcodes */
	memcpy(tmp, buf, 16);
	tmp[0] = 0x40;
	assert_int_equal(parse(tmp, 16), UR_DROP_BAD_OPCODE);
	tmp[0] = 0x15;
	assert_int_equal(parse(tmp, 16), UR_DROP_BAD_OPCODE);
	tmp[0] = 0xff;
	assert_int_equal(parse(tmp, 16), UR_DROP_BAD_OPCODE);

	/* TVer and reserved bits */
	memcpy(tmp, buf, 16);
	tmp[1] |= 0x01;
	assert_int_equal(parse(tmp, 16), UR_DROP_BAD_TVER);
	memcpy(tmp, buf, 16);
	tmp[4] = 0x01; /* resv6a */
	assert_int_equal(parse(tmp, 16), UR_DROP_RESERVED);
	tmp[4] = 0xc0; /* FECN + BECN are fine */
	assert_int_equal(parse(tmp, 16), UR_DROP_NONE);
	/* uroce's same-host mark parses (the engine decides where it
	 * counts); any other resv6a bit with it is still an error */
	tmp[4] = UR_BTH_RESV6A_PLACED;
	assert_int_equal(ur_pkt_parse(tmp, 16, &pkt), UR_DROP_NONE);
	assert_true(pkt.placed);
	tmp[4] = UR_BTH_RESV6A_PLACED | 0x01;
	assert_int_equal(parse(tmp, 16), UR_DROP_RESERVED);
	assert_int_equal(ur_pkt_parse(buf, 16, &pkt), UR_DROP_NONE);
	assert_false(pkt.placed);
	memcpy(tmp, buf, 16);
	tmp[8] |= 0x01; /* resv7 */
	assert_int_equal(parse(tmp, 16), UR_DROP_RESERVED);
	tmp[8] = 0x80; /* AckReq alone is fine */
	assert_int_equal(parse(tmp, 16), UR_DROP_NONE);
	len = tw_build(tmp, sizeof(tmp), UR_OPC_UD_SEND_ONLY, 4, &flow, NULL);
	tmp[12 + 4] = 1; /* DETH resv8 */
	assert_int_equal(parse(tmp, (size_t)len), UR_DROP_RESERVED);

	len = tw_build(tmp, sizeof(tmp), UR_OPC_RC_FLUSH, 0, &flow, NULL);
	assert_int_equal(parse(tmp, (size_t)len), UR_DROP_NONE);
	tmp[12 + 2] = 1; /* FETH reserved */
	assert_int_equal(parse(tmp, (size_t)len), UR_DROP_RESERVED);

	/* truncated headers: WRITE_ONLY needs 28 + 4 */
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_WRITE_ONLY, 0, &flow, NULL);
	assert_int_equal(len, 32);
	for (i = 16; i < 32; i++)
		assert_int_equal(parse(buf, i), UR_DROP_BAD_LENGTH);
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_CMP_SWAP, 0, &flow, NULL);
	assert_int_equal(parse(buf, (size_t)len - 1), UR_DROP_BAD_LENGTH);

	/* payload on an opcode without payload (padded input) */
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_ACK, 0, &flow, NULL);
	memset(buf + len, 0, 8);
	assert_int_equal(parse(buf, (size_t)len + 4), UR_DROP_PAYLOAD_LEN);
	assert_int_equal(parse(buf, (size_t)len + 1), UR_DROP_PAYLOAD_LEN);
	buf[1] |= 0x10; /* pad count on an ACK */
	assert_int_equal(parse(buf, (size_t)len), UR_DROP_BAD_PAD);

	/* pad count vs payload area */
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_ONLY, 3, &flow, NULL);
	assert_int_equal(len, 12 + 3 + 1 + 4);
	assert_int_equal(parse(buf, (size_t)len), UR_DROP_NONE);
	assert_int_equal(parse(buf, (size_t)len - 1), UR_DROP_BAD_PAD);
	assert_int_equal(parse(buf, (size_t)len + 1), UR_DROP_BAD_PAD);
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_SEND_ONLY, 0, &flow, NULL);
	buf[1] |= 0x30; /* pad 3, no room */
	assert_int_equal(parse(buf, (size_t)len), UR_DROP_BAD_PAD);

	/* ATOMIC_WRITE carries exactly 8 bytes */
	len =
	    tw_build(buf, sizeof(buf), UR_OPC_RC_ATOMIC_WRITE, 8, &flow, NULL);
	assert_int_equal(parse(buf, (size_t)len), UR_DROP_NONE);
	assert_int_equal(parse(buf, (size_t)len + 4), UR_DROP_PAYLOAD_LEN);

	/* over-long datagram */
	assert_int_equal(parse(buf, 0x10000), UR_DROP_BAD_LENGTH);

	/* every prefix of every opcode's packet is handled (ASan checks
	 * the bounds in sanitizer builds) */
	for (i = 0; i < 256; i++) {
		size_t k;

		if (!ur_op_valid((uint8_t)i))
			continue;
		len = tw_build(buf, sizeof(buf), (uint8_t)i, 20, &flow, NULL);
		for (k = 0; k <= (size_t)len; k++) {
			uint8_t *copy = malloc(k ? k : 1);

			memcpy(copy, buf, k);
			if (ur_pkt_parse(copy, k, &pkt) == UR_DROP_NONE) {
				assert_true(pkt.hdr_len + pkt.paylen + pkt.pad +
						4 ==
					    k);
			}
			free(copy);
		}
	}
}

static void test_mtu_check(void **state)
{
	struct ur_ip_flow flow;
	uint8_t buf[5000];
	struct ur_pkt pkt;
	int len;

	tw_flow_v4(&flow);
#define CHECK(op, pl, mtu, want)                                               \
	do {                                                                   \
		len = tw_build(buf, sizeof(buf), op, pl, &flow, NULL);         \
		assert_int_equal(ur_pkt_parse(buf, (size_t)len, &pkt),         \
				 UR_DROP_NONE);                                \
		assert_int_equal(ur_pkt_check_mtu(&pkt, mtu), want);           \
	} while (0)
	CHECK(UR_OPC_RC_SEND_FIRST, 1024, 1024, UR_DROP_NONE);
	CHECK(UR_OPC_RC_SEND_FIRST, 1020, 1024, UR_DROP_SEG_LENGTH);
	CHECK(UR_OPC_RC_SEND_FIRST, 2048, 1024, UR_DROP_MTU_EXCEEDED);
	CHECK(UR_OPC_RC_SEND_MIDDLE, 256, 256, UR_DROP_NONE);
	CHECK(UR_OPC_UC_WRITE_MIDDLE, 255, 256, UR_DROP_SEG_LENGTH);
	CHECK(UR_OPC_RC_READ_RESP_FIRST, 4096, 4096, UR_DROP_NONE);
	CHECK(UR_OPC_RC_SEND_LAST, 1, 1024, UR_DROP_NONE);
	CHECK(UR_OPC_RC_SEND_LAST, 1024, 1024, UR_DROP_NONE);
	CHECK(UR_OPC_RC_SEND_LAST, 0, 1024, UR_DROP_SEG_LENGTH);
	CHECK(UR_OPC_RC_WRITE_LAST, 1025, 1024, UR_DROP_MTU_EXCEEDED);
	CHECK(UR_OPC_RC_SEND_ONLY, 0, 1024, UR_DROP_NONE);
	CHECK(UR_OPC_UD_SEND_ONLY, 1024, 1024, UR_DROP_NONE);
	CHECK(UR_OPC_UD_SEND_ONLY, 1025, 1024, UR_DROP_MTU_EXCEEDED);
	CHECK(UR_OPC_RC_ACK, 0, 256, UR_DROP_NONE);
	CHECK(UR_OPC_RC_READ_REQ, 0, 256, UR_DROP_NONE);
#undef CHECK
	len = tw_build(buf, sizeof(buf), UR_OPC_RC_ACK, 0, &flow, NULL);
	assert_int_equal(ur_pkt_parse(buf, (size_t)len, &pkt), UR_DROP_NONE);
	assert_int_equal(ur_pkt_check_class(&pkt, UR_TCLASS_RC), UR_DROP_NONE);
	assert_int_equal(ur_pkt_check_class(&pkt, UR_TCLASS_UD),
			 UR_DROP_OPCODE_CLASS);
}

static void test_psn(void **state)
{
	assert_int_equal(ur_psn_add(0xffffff, 1), 0);
	assert_int_equal(ur_psn_add(0xfffffe, 5), 3);
	assert_int_equal(ur_psn_add(2, -5), 0xfffffd);
	assert_int_equal(ur_psn_inc(0xffffff), 0);
	assert_int_equal(ur_psn_diff(0, 0xffffff), 1);
	assert_int_equal(ur_psn_diff(0xffffff, 0), -1);
	assert_int_equal(ur_psn_diff(5, 0xfffffb), 10);
	assert_int_equal(ur_psn_diff(0x7fffff, 0), 0x7fffff);
	assert_int_equal(ur_psn_diff(0x800000, 0), -0x800000);
	assert_int_equal(ur_psn_cmp(0, 0xffffff), 1);
	assert_int_equal(ur_psn_cmp(0xffffff, 0), -1);
	assert_int_equal(ur_psn_cmp(77, 77), 0);
	assert_true(ur_psn_before(0xfffff0, 0x10));
	assert_true(ur_psn_after(0x10, 0xfffff0));
	assert_false(ur_psn_after(0x10, 0x10));
	assert_true(ur_psn_in_window(0xffffff, 0xfffff0, 128));
	assert_true(ur_psn_in_window(0x6f, 0xfffff0, 128));
	assert_false(ur_psn_in_window(0x70, 0xfffff0, 128));
	assert_false(ur_psn_in_window(0xffffef, 0xfffff0, 128));
	assert_true(ur_psn_in_window(5, 5, 1));
	assert_false(ur_psn_in_window(5, 5, 0));
	assert_true(ur_psn_in_range(0, 0xfffffe, 2));
	assert_true(ur_psn_in_range(2, 0xfffffe, 2));
	assert_false(ur_psn_in_range(3, 0xfffffe, 2));
	assert_false(ur_psn_in_range(0xfffffd, 0xfffffe, 2));
	/* high bits of inputs are ignored */
	assert_int_equal(ur_psn_diff(0x01000005, 3), 2);
}

static void test_sport(void **state)
{
	uint32_t a, b;

	assert_int_equal(ur_udp_sport_qpn(1), 55410);
	assert_int_equal(ur_udp_sport_qp_pair(0x11, 0x12), 0xc132);
	assert_int_equal(ur_udp_sport_flow_label(0), 0xc000);
	assert_int_equal(ur_udp_sport_flow_label(0xfffff), 0xc000 | 0x3fc0);
	for (a = 1; a < 0x1000000; a = a * 3 + 1) {
		for (b = 7; b < 0x1000000; b = b * 5 + 3) {
			uint16_t s = ur_udp_sport_qp_pair(a, b);

			assert_int_equal(s, ur_udp_sport_qp_pair(b, a));
			assert_true(s >= 0xc000);
		}
		assert_true(ur_udp_sport_qpn(a) >= 0xc000);
	}
}

static void test_drop_names(void **state)
{
	int i, j;

	for (i = 0; i < UR_DROP__MAX; i++) {
		assert_non_null(ur_drop_reason_names[i]);
		assert_string_equal(ur_drop_reason_str(i),
				    ur_drop_reason_names[i]);
		for (j = 0; j < i; j++)
			assert_string_not_equal(ur_drop_reason_names[i],
						ur_drop_reason_names[j]);
	}
	assert_string_equal(ur_drop_reason_str(UR_DROP__MAX), "invalid");
	assert_string_equal(ur_drop_reason_str(UR_DROP_ICRC), "icrc");
}

static void test_grh_image(void **state)
{
	struct ur_ip_flow flow;
	uint8_t grh[UR_GRH_BYTES];
	static const uint8_t zero[20];

	tw_flow_v4(&flow);
	flow.tos = 0x28;
	flow.ttl = 17;
	flow.ip_id = 0xbeef;
	assert_int_equal(ur_grh_image_build(grh, &flow, 280), 0);
	assert_memory_equal(grh, zero, 20);
	assert_int_equal(grh[20], 0x45);
	assert_int_equal(grh[21], 0x28);
	assert_int_equal(grh[22] << 8 | grh[23], 20 + 8 + 280);
	assert_int_equal(grh[24] << 8 | grh[25], 0xbeef);
	assert_int_equal(grh[26], 0x40); /* DF */
	assert_int_equal(grh[28], 17);
	assert_int_equal(grh[29], 17); /* UDP */
	assert_memory_equal(grh + 32, &flow.src.v4, 4);
	assert_memory_equal(grh + 36, &flow.dst.v4, 4);
	/* a valid header sums to 0xffff (what ibv_init_ah_from_wc checks) */
	assert_int_equal(ur_inet_csum_fold(grh + 20, 20), 0xffff);
	grh[33] ^= 1;
	assert_int_not_equal(ur_inet_csum_fold(grh + 20, 20), 0xffff);

	tw_flow_v6(&flow);
	flow.tos = 0xab;
	flow.ttl = 3;
	assert_int_equal(ur_grh_image_build(grh, &flow, 100), 0);
	assert_int_equal(grh[0], 0x6a);
	assert_int_equal(grh[1], 0xb0);
	assert_int_equal(grh[4] << 8 | grh[5], 108);
	assert_int_equal(grh[6], 17);
	assert_int_equal(grh[7], 3);
	assert_memory_equal(grh + 8, &flow.src.v6, 16);
	assert_memory_equal(grh + 24, &flow.dst.v6, 16);
	flow.family = 99;
	assert_int_equal(ur_grh_image_build(grh, &flow, 100), -EINVAL);
}

static void test_frame_parse(void **state)
{
	struct ur_ip_flow flow, got;
	uint8_t frame[256];
	const uint8_t *pl;
	size_t plen;
	int n, fam;

	for (fam = 0; fam < 2; fam++) {
		if (fam)
			tw_flow_v6(&flow);
		else
			tw_flow_v4(&flow);
		flow.ip_id = 0x1234 * !fam;
		flow.ttl = 9;
		flow.tos = 0x10;
		memset(frame, 0, sizeof(frame));
		frame[12] = fam ? 0x86 : 0x08;
		frame[13] = fam ? 0xdd : 0x00;
		n = ur_ip_udp_hdr_build(frame + 14, &flow, 32);
		assert_int_equal(n, fam ? 48 : 28);
		assert_int_equal(ur_frame_parse(frame, 14 + n + 32,
						UR_LINKTYPE_ETHERNET, &got, &pl,
						&plen),
				 UR_DROP_NONE);
		assert_int_equal(got.family, flow.family);
		assert_int_equal(got.sport, flow.sport);
		assert_int_equal(got.dport, UR_ROCEV2_PORT);
		assert_int_equal(got.ip_id, flow.ip_id);
		assert_int_equal(got.ttl, 9);
		assert_int_equal(got.tos, 0x10);
		assert_ptr_equal(pl, frame + 14 + n);
		assert_int_equal(plen, 32);
		assert_memory_equal(&got.src, &flow.src, fam ? 16 : 4);
		/* raw IP link type */
		assert_int_equal(ur_frame_parse(frame + 14, n + 32,
						UR_LINKTYPE_RAW, &got, &pl,
						&plen),
				 UR_DROP_NONE);
		/* truncated: UDP length beyond the capture */
		assert_int_equal(ur_frame_parse(frame, 14 + n + 31,
						UR_LINKTYPE_ETHERNET, &got, &pl,
						&plen),
				 UR_DROP_BAD_LENGTH);
	}
	/* VLAN tag in front of IPv4 */
	tw_flow_v4(&flow);
	memset(frame, 0, sizeof(frame));
	frame[12] = 0x81;
	frame[16] = 0x08;
	n = ur_ip_udp_hdr_build(frame + 18, &flow, 16);
	assert_int_equal(ur_frame_parse(frame, 18 + n + 16,
					UR_LINKTYPE_ETHERNET, &got, &pl, &plen),
			 UR_DROP_NONE);
	assert_int_equal(plen, 16);
	/* TCP is not RoCE */
	frame[18 + 9] = 6;
	assert_int_equal(ur_frame_parse(frame, 18 + n + 16,
					UR_LINKTYPE_ETHERNET, &got, &pl, &plen),
			 UR_DROP_NOT_ROCE);
	/* ARP is not RoCE; empty frame is short */
	frame[16] = 0x08;
	frame[17] = 0x06;
	assert_int_equal(
	    ur_frame_parse(frame, 60, UR_LINKTYPE_ETHERNET, &got, &pl, &plen),
	    UR_DROP_NOT_ROCE);
	assert_int_equal(
	    ur_frame_parse(frame, 3, UR_LINKTYPE_ETHERNET, &got, &pl, &plen),
	    UR_DROP_BAD_LENGTH);
}

static void test_flow_helpers(void **state)
{
	union ur_sockaddr a, b;
	struct ur_ip_flow flow;
	uint8_t sgid[16], dgid[16];

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	a.in.sin_family = b.in.sin_family = AF_INET;
	a.in.sin_port = htons(0xc123);
	b.in.sin_port = htons(UR_ROCEV2_PORT);
	inet_pton(AF_INET, "127.0.0.1", &a.in.sin_addr);
	inet_pton(AF_INET, "127.0.0.2", &b.in.sin_addr);
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, &a, &b), 0);
	assert_int_equal(flow.family, AF_INET);
	assert_int_equal(flow.sport, 0xc123);
	assert_int_equal(flow.dport, UR_ROCEV2_PORT);
	assert_memory_equal(&flow.dst.v4, &b.in.sin_addr, 4);
	ur_sockaddr_to_gid(&a, sgid);
	ur_sockaddr_to_gid(&b, dgid);
	assert_int_equal(ur_ip_flow_from_gids(&flow, sgid, dgid, 1, 2), 0);
	assert_int_equal(flow.family, AF_INET);
	assert_memory_equal(&flow.src.v4, &a.in.sin_addr, 4);
	b.in6.sin6_family = AF_INET6;
	assert_int_equal(ur_ip_flow_from_sockaddr(&flow, &a, &b),
			 -EAFNOSUPPORT);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_bth_accessors),
	    cmocka_unit_test(test_ext_accessors),
	    cmocka_unit_test(test_opcode_table),
	    cmocka_unit_test(test_max_hdr_bytes),
	    cmocka_unit_test(test_class),
	    cmocka_unit_test(test_cnp),
	    cmocka_unit_test(test_placed_mark),
	    cmocka_unit_test(test_build_parse_all),
	    cmocka_unit_test(test_xrceth),
	    cmocka_unit_test(test_parse_rejects),
	    cmocka_unit_test(test_mtu_check),
	    cmocka_unit_test(test_psn),
	    cmocka_unit_test(test_sport),
	    cmocka_unit_test(test_drop_names),
	    cmocka_unit_test(test_grh_image),
	    cmocka_unit_test(test_frame_parse),
	    cmocka_unit_test(test_flow_helpers),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
