/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The CM MAD codec against the MADs Linux rxe's kernel CM sent during an
 * rping (tests/data/pcaps/rping.pcap, frames 1-3 and 64-65): every field
 * decodes to what tshark shows for that frame, and encoding the decoded
 * message gives back the captured 256 bytes exactly. Then the refusals:
 * foreign classes, short MADs, LAP/SIDR, out-of-range fields.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "cm/mad.h"
#include "tw_util.h"

#define MAD_OFF 20	/* BTH + DETH */

static const uint8_t *capture_mad(struct tw_set *set, unsigned int frame)
{
	size_t i;

	for (i = 0; i < set->n; i++)
		if (set->pkts[i].frame == frame) {
			assert_true(set->pkts[i].len >= MAD_OFF + UR_MAD_SIZE + 4);
			return set->pkts[i].udp + MAD_OFF;
		}
	fail_msg("frame %u not in rping.pcap", frame);
	return NULL;
}

static void roundtrip(const uint8_t *mad, const struct ur_cm_msg *m)
{
	uint8_t out[UR_MAD_SIZE];

	assert_int_equal(ur_cm_encode(m, out), 0);
	assert_memory_equal(out, mad, UR_MAD_SIZE);
}

static void test_rxe_req(void **state)
{
	struct tw_set set = { 0 };
	const uint8_t *mad;
	struct ur_cm_msg m;
	struct ur_cma_hdr h;
	const struct ur_cm_req *r = &m.req;
	static const uint8_t src[16] = { [12] = 10, 99, 0, 12 };
	static const uint8_t dst[16] = { [12] = 10, 99, 0, 11 };
	static const uint8_t lgid[16] = { [10] = 0xff, 0xff, 10, 99, 0, 12 };

	tw_load(&set, "rping.pcap");
	mad = capture_mad(&set, 1);
	assert_int_equal(ur_cm_decode(mad, UR_MAD_SIZE, &m), 0);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_REQ);
	assert_true(m.hdr.tid == 0x000000029d4a764bULL);
	assert_int_equal(r->local_comm_id, 0x4b764a9d);
	assert_true(r->service_id == 0x0000000001061c06ULL);
	assert_true(r->local_ca_guid == 0x505400fffe99000cULL);
	assert_int_equal(r->local_qpn, 0x24);
	assert_int_equal(r->responder_resources, 1);
	assert_int_equal(r->initiator_depth, 1);
	assert_int_equal(r->remote_cm_response_timeout, 0x14);
	assert_int_equal(r->transport, 0);
	assert_int_equal(r->starting_psn, 0x1fae36);
	assert_int_equal(r->local_cm_response_timeout, 0x14);
	assert_int_equal(r->retry_count, 7);
	assert_int_equal(r->pkey, 0xffff);
	assert_int_equal(r->path_mtu, 3);
	assert_int_equal(r->rnr_retry_count, 7);
	assert_int_equal(r->max_cm_retries, 15);
	assert_int_equal(r->primary.local_lid, 0xffff);
	assert_int_equal(r->primary.remote_lid, 0xffff);
	assert_memory_equal(r->primary.local_gid, lgid, 16);
	/*
	 * IBA/kernel layout: flow label in the top 20 bits of bytes 88-91,
	 * packet rate in the low 6 of byte 91. tshark 4.0 shows these two
	 * (only) shifted by 8 bits ("0x002cc", rate "0x2c").
	 */
	assert_int_equal(r->primary.flow_label, 0x2cccd);
	assert_int_equal(r->primary.packet_rate, 0);
	assert_int_equal(r->primary.hop_limit, 0x40);
	assert_int_equal(r->primary.local_ack_timeout, 0x13);
	assert_false(r->has_alternate);
	assert_int_equal(ur_cma_hdr_decode(r->private_data, &h), 0);
	assert_int_equal(h.ip_version, 4);
	assert_int_equal(h.src_port, 0x9a59);
	assert_memory_equal(h.src_addr, src, 16);
	assert_memory_equal(h.dst_addr, dst, 16);
	roundtrip(mad, &m);
	{	/* the in-place rewrite of the remote GID touches nothing else */
		uint8_t copy[UR_MAD_SIZE], g[16];
		struct ur_cm_msg m2;

		memcpy(copy, mad, UR_MAD_SIZE);
		memset(g, 0xab, sizeof(g));
		ur_cm_req_set_remote_gid(copy, g);
		assert_int_equal(ur_cm_decode(copy, UR_MAD_SIZE, &m2), 0);
		assert_memory_equal(m2.req.primary.remote_gid, g, 16);
		memcpy(m2.req.primary.remote_gid, r->primary.remote_gid, 16);
		assert_memory_equal(&m2.req, &m.req, sizeof(m.req));
	}
	tw_free(&set);
}

static void test_rxe_rep_rtu_dreq_drep(void **state)
{
	struct tw_set set = { 0 };
	const uint8_t *mad;
	struct ur_cm_msg m;

	tw_load(&set, "rping.pcap");
	mad = capture_mad(&set, 2);
	assert_int_equal(ur_cm_decode(mad, UR_MAD_SIZE, &m), 0);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_REP);
	assert_int_equal(m.rep.local_comm_id, 0x81f2539f);
	assert_int_equal(m.rep.remote_comm_id, 0x4b764a9d);
	assert_int_equal(m.rep.local_qpn, 0x29);
	assert_int_equal(m.rep.starting_psn, 0xef24ad);
	assert_int_equal(m.rep.responder_resources, 1);
	assert_int_equal(m.rep.initiator_depth, 1);
	assert_int_equal(m.rep.target_ack_delay, 0x0f);
	assert_int_equal(m.rep.failover_accepted, 0);
	assert_int_equal(m.rep.rnr_retry_count, 7);
	assert_false(m.rep.srq);
	assert_true(m.rep.local_ca_guid == 0x505400fffe99000bULL);
	roundtrip(mad, &m);

	mad = capture_mad(&set, 3);
	assert_int_equal(ur_cm_decode(mad, UR_MAD_SIZE, &m), 0);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_RTU);
	assert_int_equal(m.rtu.local_comm_id, 0x4b764a9d);
	assert_int_equal(m.rtu.remote_comm_id, 0x81f2539f);
	roundtrip(mad, &m);

	mad = capture_mad(&set, 64);
	assert_int_equal(ur_cm_decode(mad, UR_MAD_SIZE, &m), 0);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_DREQ);
	assert_int_equal(m.dreq.local_comm_id, 0x4b764a9d);
	assert_int_equal(m.dreq.remote_comm_id, 0x81f2539f);
	assert_int_equal(m.dreq.remote_qpn, 0x29);
	roundtrip(mad, &m);

	mad = capture_mad(&set, 65);
	assert_int_equal(ur_cm_decode(mad, UR_MAD_SIZE, &m), 0);
	assert_int_equal(m.hdr.attr_id, UR_CM_ATTR_DREP);
	assert_int_equal(m.dreq.local_comm_id, 0x81f2539f);
	assert_int_equal(m.dreq.remote_comm_id, 0x4b764a9d);
	roundtrip(mad, &m);
	tw_free(&set);
}

/* REJ and MRA are not in the capture: our own round trip, field by field. */
static void test_rej_mra_roundtrip(void **state)
{
	struct ur_cm_msg m, d;
	uint8_t buf[UR_MAD_SIZE];
	unsigned int i;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REJ, 0x1122334455667788ULL);
	m.rej.local_comm_id = 1;
	m.rej.remote_comm_id = 0xfedcba98;
	m.rej.msg_rejected = UR_CM_MSG_REP;
	m.rej.reason = UR_CM_REJ_CONSUMER_DEFINED;
	for (i = 0; i < UR_CM_REJ_PDATA; i++)
		m.rej.private_data[i] = (uint8_t)(i * 7 + 1);
	assert_int_equal(ur_cm_encode(&m, buf), 0);
	assert_int_equal(buf[UR_MAD_HDR_SIZE + 8], UR_CM_MSG_REP << 6);
	assert_int_equal(ur_cm_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&d.rej, &m.rej, sizeof(m.rej));
	assert_true(d.hdr.tid == m.hdr.tid);

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_MRA, 5);
	m.mra.local_comm_id = 7;
	m.mra.remote_comm_id = 9;
	m.mra.msg_mraed = UR_CM_MSG_REQ;
	m.mra.service_timeout = 24;
	assert_int_equal(ur_cm_encode(&m, buf), 0);
	assert_int_equal(buf[UR_MAD_HDR_SIZE + 9], 24 << 3);
	assert_int_equal(ur_cm_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&d.mra, &m.mra, sizeof(m.mra));
}

/* SIDR (UD ids): IBA 12.11 layouts, our own round trip. */
static void test_sidr_roundtrip(void **state)
{
	struct ur_cm_msg m, d;
	uint8_t buf[UR_MAD_SIZE];
	unsigned int i;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REQ, 42);
	m.sidr_req.request_id = 0x01020304;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = ur_cm_service_id(0x0111, 7174);
	for (i = 0; i < UR_CM_SIDR_REQ_PDATA; i++)
		m.sidr_req.private_data[i] = (uint8_t)i;
	assert_int_equal(ur_cm_encode(&m, buf), 0);
	assert_int_equal(buf[UR_MAD_HDR_SIZE + 8 + 5], 0x11);	/* UDP PS */
	assert_int_equal(ur_cm_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&d.sidr_req, &m.sidr_req, sizeof(m.sidr_req));

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_SIDR_REP, 42);
	m.sidr_rep.request_id = 0x01020304;
	m.sidr_rep.status = UR_CM_SIDR_REJECT;
	m.sidr_rep.qpn = 0xabcdef;
	m.sidr_rep.service_id = ur_cm_service_id(0x0111, 7174);
	m.sidr_rep.qkey = 0x01234567;
	m.sidr_rep.private_data[0] = 0x5a;
	m.sidr_rep.private_data[UR_CM_SIDR_REP_PDATA - 1] = 0xa5;
	assert_int_equal(ur_cm_encode(&m, buf), 0);
	assert_int_equal(buf[UR_MAD_SIZE - 1], 0xa5);
	assert_int_equal(ur_cm_decode(buf, sizeof(buf), &d), 0);
	assert_memory_equal(&d.sidr_rep, &m.sidr_rep, sizeof(m.sidr_rep));
	m.sidr_rep.qpn = 0x1000000;
	assert_int_equal(ur_cm_encode(&m, buf), -EINVAL);
}

/*
 * ECE as the Linux CM carries it: the options in the MAD header's
 * attribute modifier of REQ and REP, the vendor id in the REQ's 24 bits
 * at byte 5 and in the REP's bytes 15, 19 and 23 (high to low), the
 * reserved bytes after its three 24-bit fields. rxe's captured REP has
 * vendor 0 there (it has no ECE): checked above by its round trip.
 */
static void test_ece_fields(void **state)
{
	uint8_t out[UR_MAD_SIZE];
	const uint8_t *d = out + UR_MAD_HDR_SIZE;
	struct ur_cm_msg m, m2;

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REP, 0x1122334455667788ULL);
	m.hdr.attr_mod = 0xa8d7;
	m.rep.local_qpn = 0xabcdef;
	m.rep.local_eecn = 0x123456;
	m.rep.starting_psn = 0x789abc;
	m.rep.vendor_id = 0x02c9fe;
	assert_int_equal(ur_cm_encode(&m, out), 0);
	assert_int_equal(out[20] << 24 | out[21] << 16 | out[22] << 8 | out[23],
			 0xa8d7);
	assert_int_equal(d[15], 0x02);
	assert_int_equal(d[19], 0xc9);
	assert_int_equal(d[23], 0xfe);
	/* the 24-bit fields around them are untouched */
	assert_int_equal(d[12] << 16 | d[13] << 8 | d[14], 0xabcdef);
	assert_int_equal(d[16] << 16 | d[17] << 8 | d[18], 0x123456);
	assert_int_equal(d[20] << 16 | d[21] << 8 | d[22], 0x789abc);
	assert_int_equal(ur_cm_decode(out, UR_MAD_SIZE, &m2), 0);
	assert_int_equal(m2.rep.vendor_id, 0x02c9fe);
	assert_int_equal(m2.hdr.attr_mod, 0xa8d7);
	assert_int_equal(m2.rep.local_qpn, 0xabcdef);
	assert_int_equal(m2.rep.starting_psn, 0x789abc);

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REQ, 1);
	m.hdr.attr_mod = 0xffffffff;
	m.req.vendor_id = 0xffffff;
	m.req.path_mtu = 3;
	assert_int_equal(ur_cm_encode(&m, out), 0);
	assert_int_equal(d[5] << 16 | d[6] << 8 | d[7], 0xffffff);
	assert_int_equal(ur_cm_decode(out, UR_MAD_SIZE, &m2), 0);
	assert_int_equal(m2.req.vendor_id, 0xffffff);
	assert_int_equal(m2.hdr.attr_mod, 0xffffffff);
}

static void test_refusals(void **state)
{
	struct tw_set set = { 0 };
	uint8_t buf[UR_MAD_SIZE];
	struct ur_cm_msg m;

	tw_load(&set, "rping.pcap");
	memcpy(buf, capture_mad(&set, 1), UR_MAD_SIZE);
	tw_free(&set);
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE - 1, &m), -EPROTO);
	buf[1] = 0x04;		/* another management class */
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE, &m), -EPROTO);
	buf[1] = UR_MAD_CLASS_CM;
	buf[2] = 1;		/* class version 1 */
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE, &m), -EPROTO);
	buf[2] = UR_MAD_CM_CLASS_VERSION;
	buf[17] = UR_CM_ATTR_LAP;
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE, &m), -EOPNOTSUPP);
	assert_int_equal(m.rej.local_comm_id, 0x4b764a9d);
	buf[17] = UR_CM_ATTR_APR;
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE, &m), -EOPNOTSUPP);
	buf[17] = 0x30;		/* no such attribute */
	assert_int_equal(ur_cm_decode(buf, UR_MAD_SIZE, &m), -EPROTO);

	memset(&m, 0, sizeof(m));
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_REQ, 1);
	m.req.local_qpn = 0x1000000;	/* 25 bits */
	assert_int_equal(ur_cm_encode(&m, buf), -EINVAL);
	m.req.local_qpn = 1;
	m.req.retry_count = 8;
	assert_int_equal(ur_cm_encode(&m, buf), -EINVAL);
	ur_cm_hdr_init(&m.hdr, UR_CM_ATTR_LAP, 1);
	assert_int_equal(ur_cm_encode(&m, buf), -EINVAL);
}

static void test_cma_hdr(void **state)
{
	struct ur_cma_hdr h = { .ip_version = 6, .src_port = 0xbeef }, d;
	uint8_t b[UR_CMA_HDR_SIZE];

	memset(h.src_addr, 0x11, 16);
	memset(h.dst_addr, 0x22, 16);
	ur_cma_hdr_encode(&h, b);
	assert_int_equal(b[1], 0x60);
	assert_int_equal(ur_cma_hdr_decode(b, &d), 0);
	/* field by field: the padding after ip_version is not data */
	assert_int_equal(d.ip_version, h.ip_version);
	assert_int_equal(d.src_port, h.src_port);
	assert_memory_equal(d.src_addr, h.src_addr, 16);
	assert_memory_equal(d.dst_addr, h.dst_addr, 16);
	b[1] = 0x50;
	assert_int_equal(ur_cma_hdr_decode(b, &d), -EPROTO);
	assert_true(ur_cm_service_id(0x0106, 7174) == 0x0000000001061c06ULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rxe_req),
		cmocka_unit_test(test_rxe_rep_rtu_dreq_drep),
		cmocka_unit_test(test_rej_mra_roundtrip),
		cmocka_unit_test(test_sidr_roundtrip),
		cmocka_unit_test(test_ece_fields),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_cma_hdr),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
