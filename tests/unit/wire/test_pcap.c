/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Cross-checks against independent decoders. (1) Every datagram of every
 * reference capture parses and each field equals what tshark reports for
 * that frame; re-encoding the parsed headers gives the same bytes. (2)
 * Packets we build for every opcode, written by our pcap writer (IPv4 and
 * IPv6, Ethernet and raw IP, several threads at once), decode in tshark as
 * InfiniBand without malformed/expert-error fields. (3) Packets of every
 * opcode pass the independent ICRC checker (tests/interop/icrc_check.py,
 * which shares no code with src/wire), a ctest entry of its own because
 * it skips where the checker is missing.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "skip.h"
#include "tw_util.h"

#define TSHARK_FIELDS                                                          \
	"-e frame.number -e infiniband.bth.opcode -e infiniband.bth.se "       \
	"-e infiniband.bth.m -e infiniband.bth.padcnt "                        \
	"-e infiniband.bth.tver -e infiniband.bth.p_key "                      \
	"-e infiniband.bth.destqp -e infiniband.bth.a "                        \
	"-e infiniband.bth.reserved7 -e infiniband.bth.psn "                   \
	"-e infiniband.deth.q_key -e infiniband.deth.srcqp "                   \
	"-e infiniband.reth.va -e infiniband.reth.r_key "                      \
	"-e infiniband.reth.dmalen -e infiniband.atomiceth.swapdt "            \
	"-e infiniband.atomiceth.cmpdt -e infiniband.aeth.syndrome "           \
	"-e infiniband.aeth.msn -e infiniband.atomicacketh.origremdt "         \
	"-e infiniband.immdt -e infiniband.ieth -e infiniband.invariant.crc "  \
	"-e udp.srcport -e _ws.malformed -e _ws.expert.severity "              \
	"-e frame.protocols -e udp.checksum.status"

/* Upper-layer heuristics would guess protocols inside our test payloads. */
#define TSHARK_NO_HEUR                                                         \
	"--disable-heuristic eth_over_ib --disable-heuristic fc_infiniband "   \
	"--disable-heuristic sdp_infiniband "                                  \
	"--disable-heuristic iser_infiniband --disable-heuristic lnet_ib "     \
	"--disable-heuristic rpcrdma_infiniband "                              \
	"--disable-heuristic smb_direct_infiniband "                           \
	"--disable-heuristic smcr_infiniband "                                 \
	"--disable-heuristic mellanox_eoib"

enum {
	C_FRAME, C_OPCODE, C_SE, C_M, C_PAD, C_TVER, C_PKEY, C_DESTQP, C_A,
	C_RESV7, C_PSN, C_QKEY, C_SRCQP, C_VA, C_RKEY, C_DMALEN, C_SWAP,
	C_CMP, C_SYN, C_MSN, C_ORIG, C_IMM, C_IETH, C_ICRC, C_SPORT,
	C_MALFORMED, C_EXPERT, C_PROTOS, C_UDPCSUM, C_NUM
};

struct tline {
	char *col[C_NUM];
	char buf[1024];
};

/* Run tshark on path; returns a malloc'd array of lines, *n set. */
static struct tline *run_tshark(const char *path, size_t *n)
{
	char cmd[8192];
	struct tline *v = NULL;
	size_t cap = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "tshark -n -o udp.check_checksum:TRUE " TSHARK_NO_HEUR
		 " -r '%s' "
		 "-T fields -E separator='|' -E occurrence=f " TSHARK_FIELDS
		 " 2>/dev/null",
		 path);
	f = popen(cmd, "r");
	assert_non_null(f);
	*n = 0;
	for (;;) {
		if (*n == cap) {
			cap = cap ? cap * 2 : 256;
			v = realloc(v, cap * sizeof(*v));
			assert_non_null(v);
		}
		if (!fgets(v[*n].buf, sizeof(v[*n].buf), f))
			break;
		(*n)++;
	}
	assert_int_equal(pclose(f), 0);
	/* split only now: a realloc above moves the lines (more than 256
	 * of them did, and the column pointers of the first ones dangled) */
	for (size_t i = 0; i < *n; i++) {
		struct tline *l = &v[i];
		char *s;
		int c;

		l->buf[strcspn(l->buf, "\n")] = 0;
		s = l->buf;
		for (c = 0; c < C_NUM; c++) {
			l->col[c] = s;
			s = strchr(s, '|');
			if (!s) {
				c++;
				break;
			}
			*s++ = 0;
		}
		assert_int_equal(c, C_NUM);
	}
	return v;
}

static unsigned long long num(const char *s)
{
	return strtoull(s, NULL, 0);
}

/* tshark prints byte fields as hex without 0x */
static uint32_t hex32(const char *s)
{
	return (uint32_t)strtoul(s, NULL, 16);
}

static void check_frame(const struct tw_pkt *p, const struct tline *l)
{
	struct ur_hdr_fields f;
	struct ur_pkt pkt;
	uint8_t hb[64];
	enum ur_drop_reason r;

	r = ur_pkt_parse(p->udp, p->len, &pkt);
	if (r != UR_DROP_NONE)
		fail_msg("%s frame %u: parse: %s", p->file, p->frame,
			 ur_drop_reason_str(r));
	ur_pkt_to_fields(&pkt, &f);
	assert_int_equal(num(l->col[C_OPCODE]), pkt.opcode);
	assert_int_equal(num(l->col[C_SE]), pkt.se);
	assert_int_equal(num(l->col[C_M]), f.mig);
	assert_int_equal(num(l->col[C_PAD]), pkt.pad);
	assert_int_equal(num(l->col[C_TVER]), ur_bth_tver(pkt.bth));
	assert_int_equal(num(l->col[C_PKEY]), f.pkey);
	assert_int_equal(num(l->col[C_DESTQP]), pkt.qpn);
	assert_int_equal(num(l->col[C_A]), pkt.ackreq);
	assert_int_equal(num(l->col[C_RESV7]), ur_bth_resv7(pkt.bth));
	assert_int_equal(num(l->col[C_PSN]), pkt.psn);
	assert_int_equal(num(l->col[C_SPORT]), p->flow.sport);
	assert_int_equal(*l->col[C_QKEY] != 0, !!pkt.deth);
	if (pkt.deth) {
		assert_int_equal(num(l->col[C_QKEY]), f.deth.qkey);
		assert_int_equal(num(l->col[C_SRCQP]), f.deth.sqp);
	}
	/* tshark shows the AtomicETH VA/R_Key in the reth.* fields */
	if (pkt.reth) {
		assert_true(num(l->col[C_VA]) == f.reth.va);
		assert_int_equal(num(l->col[C_RKEY]), f.reth.rkey);
		assert_int_equal(num(l->col[C_DMALEN]), f.reth.len);
	} else if (pkt.atmeth) {
		assert_true(num(l->col[C_VA]) == f.atmeth.va);
		assert_int_equal(num(l->col[C_RKEY]), f.atmeth.rkey);
		assert_true(num(l->col[C_SWAP]) == f.atmeth.swap_add);
		assert_true(num(l->col[C_CMP]) == f.atmeth.compare);
	} else {
		assert_string_equal(l->col[C_VA], "");
	}
	assert_int_equal(*l->col[C_SYN] != 0, !!pkt.aeth);
	if (pkt.aeth) {
		assert_int_equal(num(l->col[C_SYN]), f.aeth.syn);
		assert_int_equal(num(l->col[C_MSN]), f.aeth.msn);
	}
	if (pkt.atmack)
		assert_true(num(l->col[C_ORIG]) == f.atmack_orig);
	assert_int_equal(*l->col[C_IMM] != 0, !!pkt.immdt);
	if (pkt.immdt)
		assert_int_equal(hex32(l->col[C_IMM]), ntohl(f.imm_be));
	if (pkt.ieth)
		assert_int_equal(hex32(l->col[C_IETH]), f.ieth_rkey);
	/* tshark reads the ICRC bytes as a big-endian number */
	assert_int_equal(num(l->col[C_ICRC]), __builtin_bswap32(pkt.icrc));
	assert_string_equal(l->col[C_MALFORMED], "");
	/* re-encoding the parsed fields reproduces the header bytes */
	assert_int_equal(ur_hdr_build(hb, sizeof(hb), &f), pkt.hdr_len);
	assert_memory_equal(hb, p->udp, pkt.hdr_len);
}

static void test_pcaps_vs_tshark(void **state)
{
	size_t fi, total = 0;

	for (fi = 0; fi < tw_pcap_nfiles; fi++) {
		const char *file = tw_pcap_files[fi];
		struct tw_set set = { 0 };
		struct tline *lines;
		size_t n, i, k = 0;

		assert_true(tw_load(&set, file) > 0);
		lines = run_tshark(tw_pcap_path(file), &n);
		for (i = 0; i < set.n; i++) {
			const struct tw_pkt *p = &set.pkts[i];

			while (k < n && num(lines[k].col[C_FRAME]) < p->frame)
				k++;
			assert_true(k < n);
			assert_int_equal(num(lines[k].col[C_FRAME]), p->frame);
			check_frame(p, &lines[k]);
			total++;
		}
		free(lines);
		tw_free(&set);
	}
	assert_int_equal(total, 737);
}

/* Run the independent ICRC checker; returns the number of ICRC-ok lines or
 * -1 if it reported a mismatch. */
static int icrc_check(const char *path)
{
	char cmd[8192], line[1024];
	int ok = 0, bad = -1, ret;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "python3 '%s' '%s' 2>&1", UR_ICRC_CHECK,
		 path);
	f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		const char *s = strstr(line, ": ");

		if (s && sscanf(s, ": %d ICRC ok, %d ICRC bad", &ok, &bad) == 2)
			continue;
		print_message("icrc_check: %s", line);
	}
	ret = pclose(f);
	if (ret != 0 || bad != 0)
		return -1;
	return ok;
}

struct writer_arg {
	struct ur_pcap *pc;
	const struct ur_ip_flow *flow;
	int nops;
	const uint8_t *ops;
	int reps;
};

/* Write one packet per opcode, the header and the rest as separate iovecs
 * (as the engine sends them). */
static void *writer(void *arg)
{
	struct writer_arg *w = arg;
	uint8_t buf[2048];
	int r, i;

	for (r = 0; r < w->reps; r++) {
		for (i = 0; i < w->nops; i++) {
			uint8_t op = w->ops[i];
			struct iovec iov[2];
			int len = tw_build(buf, sizeof(buf), op,
					   (uint32_t)(r * 37 % 1025), w->flow,
					   NULL);

			if (len < 0)
				return (void *)1;
			iov[0].iov_base = buf;
			iov[0].iov_len = ur_op_hdr_len(op);
			iov[1].iov_base = buf + iov[0].iov_len;
			iov[1].iov_len = (size_t)len - iov[0].iov_len;
			if (ur_pcap_write(w->pc, w->flow, iov, 2))
				return (void *)1;
		}
	}
	return NULL;
}

struct count_ctx {
	const struct ur_ip_flow *flow;
	int n, bad;
};

static int count_cb(const uint8_t *frame, size_t caplen, int linktype,
		    void *arg)
{
	struct count_ctx *c = arg;
	struct ur_ip_flow flow;
	const uint8_t *pl;
	size_t plen;
	struct ur_pkt pkt;

	c->n++;
	if (ur_frame_parse(frame, caplen, linktype, &flow, &pl, &plen) ||
	    ur_pkt_parse(pl, plen, &pkt) ||
	    ur_icrc_verify(&flow, pl, plen) ||
	    memcmp(&flow.src, &c->flow->src, sizeof(flow.src)) ||
	    flow.sport != c->flow->sport || flow.ip_id != 0)
		c->bad++;
	return 0;
}

static void build_and_check(int family, int linktype)
{
	char path[] = "/tmp/ur_wire_test_XXXXXX";
	uint8_t ops[64];
	struct ur_ip_flow flow;
	struct writer_arg wa;
	struct count_ctx cc = { 0 };
	struct tline *lines;
	pthread_t th[3];
	struct ur_pcap *pc;
	size_t n, i;
	int nops = 0, op, fd, t;

	/* every RC/UC/UD/XRC opcode tshark 4.0 knows (not FLUSH,
	 * ATOMIC_WRITE); it names the XRC ones and shows their XRCETH and
	 * what follows as vendor-specific data, malformed nowhere */
	for (op = 0; op < 256; op++)
		if (ur_op_valid((uint8_t)op) && op != UR_OPC_CNP &&
		    op != UR_OPC_RC_FLUSH && op != UR_OPC_RC_ATOMIC_WRITE)
			ops[nops++] = (uint8_t)op;
	assert_int_equal(nops, 60);
	if (family == AF_INET6)
		tw_flow_v6(&flow);
	else
		tw_flow_v4(&flow);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ur_pcap_open(&pc, path, linktype), 0);
	wa = (struct writer_arg){ pc, &flow, nops, ops, 2 };
	for (t = 0; t < 3; t++)
		assert_int_equal(pthread_create(&th[t], NULL, writer, &wa), 0);
	for (t = 0; t < 3; t++) {
		void *ret;

		pthread_join(th[t], &ret);
		assert_null(ret);
	}
	assert_int_equal(ur_pcap_close(pc), 0);

	/* our own reader: whole records, all parse and verify */
	cc.flow = &flow;
	assert_int_equal(ur_pcap_foreach(path, count_cb, &cc), 0);
	assert_int_equal(cc.n, 3 * 2 * nops);
	assert_int_equal(cc.bad, 0);

	lines = run_tshark(path, &n);
	assert_int_equal(n, (size_t)(3 * 2 * nops));
	for (i = 0; i < n; i++) {
		op = (int)num(lines[i].col[C_OPCODE]);
		assert_true(ur_op_valid((uint8_t)op));
		assert_non_null(strstr(lines[i].col[C_PROTOS], "infiniband"));
		if (*lines[i].col[C_MALFORMED] || *lines[i].col[C_EXPERT])
			fail_msg("frame %zu (%s): malformed '%s' expert '%s'",
				 i + 1, ur_op_name((uint8_t)op),
				 lines[i].col[C_MALFORMED],
				 lines[i].col[C_EXPERT]);
		assert_int_equal(num(lines[i].col[C_PSN]), 0xfffffe);
		/* 2 = unverified; with -o udp.check_checksum:TRUE 1 = good */
		assert_string_equal(lines[i].col[C_UDPCSUM], "1");
		assert_int_equal(num(lines[i].col[C_DESTQP]), 0x123456);
	}
	free(lines);

	unlink(path);
}

static void test_built_v4_eth(void **state)
{
	build_and_check(AF_INET, UR_LINKTYPE_ETHERNET);
}

static void test_built_v6_eth(void **state)
{
	build_and_check(AF_INET6, UR_LINKTYPE_ETHERNET);
}

static void test_built_v4_raw(void **state)
{
	build_and_check(AF_INET, UR_LINKTYPE_RAW);
}

/* Every opcode we build, over IPv4 and IPv6, passes the independent ICRC
 * checker (skipped where it is missing). */
static void test_icrc_checker(void **state)
{
	char path[] = "/tmp/ur_wire_test_XXXXXX";
	struct ur_ip_flow flow;
	struct ur_pcap *pc;
	uint8_t buf[2048];
	int op, fam, n = 0, fd;

	if (access(UR_ICRC_CHECK, R_OK))
		ur_skip("%s missing\n", UR_ICRC_CHECK);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(ur_pcap_open(&pc, path, UR_LINKTYPE_ETHERNET), 0);
	for (fam = 0; fam < 2; fam++) {
		if (fam)
			tw_flow_v6(&flow);
		else
			tw_flow_v4(&flow);
		for (op = 0; op < 256; op++) {
			struct iovec iov;
			int len;

			if (!ur_op_valid((uint8_t)op))
				continue;
			len = tw_build(buf, sizeof(buf), (uint8_t)op,
				       (uint32_t)(n * 37 % 1025), &flow, NULL);
			assert_true(len > 0);
			iov.iov_base = buf;
			iov.iov_len = (size_t)len;
			assert_int_equal(ur_pcap_write(pc, &flow, &iov, 1), 0);
			n++;
		}
	}
	assert_int_equal(ur_pcap_close(pc), 0);
	assert_int_equal(n, 2 * 63);
	assert_int_equal(icrc_check(path), n);
	unlink(path);
}

static void test_pcap_errors(void **state)
{
	struct ur_pcap *pc;

	assert_int_equal(ur_pcap_open(&pc, "/nonexistent/dir/x.pcap",
				      UR_LINKTYPE_ETHERNET),
			 -ENOENT);
	assert_int_equal(ur_pcap_open(&pc, "/tmp/x.pcap", 42), -EINVAL);
	assert_int_equal(ur_pcap_close(NULL), 0);
	assert_int_equal(ur_pcap_foreach("/nonexistent.pcap", NULL, NULL),
			 -ENOENT);
	assert_int_equal(ur_pcap_foreach(UR_PCAP_DIR "/INDEX.md", NULL, NULL),
			 -EBADMSG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pcaps_vs_tshark),
		cmocka_unit_test(test_built_v4_eth),
		cmocka_unit_test(test_built_v6_eth),
		cmocka_unit_test(test_built_v4_raw),
		cmocka_unit_test(test_icrc_checker),
		cmocka_unit_test(test_pcap_errors),
	};

	return ur_run_tests(tests);
}
