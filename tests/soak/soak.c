/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce_soak: one side of the data-integrity soak (docs/soak.md;
 * tests/soak/soak.sh runs pairs of it). Start one with -l ADDR:PORT and one
 * with -c ADDR:PORT; both take the same -s SEED. Each process is the
 * requester of its own seeded schedule (RC SEND, SEND_WITH_IMM, WRITE,
 * WRITE_WITH_IMM, READ, FETCH_AND_ADD, CMP_AND_SWP on two QPs, UC and UD
 * sends) and checks everything its peer sends, writes, reads and adds.
 * Faults come from UROCE_FAULT; the counters in UROCE_STATS prove they
 * happened. Prints one summary line and exits 0 only when nothing was
 * wrong.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

#define MAX_ROUNDS 100000

struct barrier_msg {
	uint32_t round, phase, fatal, more;
	uint64_t counter;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: uroce_soak (-l ADDR:PORT | -c ADDR:PORT) [-s SEED] [-m MB]\n"
		"                  [-t MAX_SECONDS] [-L MAX_MSG_KIB] [-T QP_TIMEOUT]\n"
		"                  [-S STUCK_SECONDS] [-o OPS]\n"
		"  -l/-c  listen on / connect to the out-of-band TCP address\n"
		"  -s     seed of the schedules and patterns (same on both sides)\n"
		"  -m     stop after about this many MB scheduled (both sides; 64)\n"
		"  -r     stop after this many rounds at most (for -o without big\n"
		"         operations)\n"
		"  -t     fail if the target is not reached in this time (120)\n"
		"  -L     largest WRITE/READ in KiB, at least 2048 (4096)\n"
		"  -T     RC local ACK timeout exponent (14: 67 ms, perftest's)\n"
		"  -S     fail when no completion comes for this long (30)\n"
		"  -o     operations: all (default) or a list of send, send_imm,\n"
		"         write, write_imm, read, fadd, cas, uc, ud; uc and ud\n"
		"         carry those of the listed sends and writes they can\n"
		"  -X     spoil on purpose, once each (a test of the checks): all\n"
		"         or a list of send, extra, read, write, ud (1 byte wrong\n"
		"         each), cqe (a completion taken twice), counter\n"
		"Faults: UROCE_FAULT (both processes); counters: UROCE_STATS.\n");
	exit(2);
}

static int parse_sabotage(const char *list, uint32_t *bits)
{
	static const char *const kinds[SAB__N] = {
		[SAB_SEND] = "send", [SAB_EXTRA] = "extra", [SAB_READ] = "read",
		[SAB_WRITE] = "write", [SAB_UD] = "ud", [SAB_CQE] = "cqe",
		[SAB_COUNTER] = "counter",
	};
	char buf[128], *save = NULL;

	*bits = 0;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *w = strtok_r(buf, ",", &save); w;
	     w = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		for (i = SAB_SEND; i < SAB__N && strcmp(w, kinds[i]); i++)
			;
		if (!strcmp(w, "all"))
			*bits |= ((1u << SAB__N) - 1) & ~1u;
		else if (i < SAB__N)
			*bits |= 1u << i;
		else
			return -1;
	}
	return 0;
}

static void split_addr(char *arg, const char **addr, int *port)
{
	char *colon = strrchr(arg, ':');

	if (!colon)
		usage();
	*colon = 0;
	*addr = arg;
	*port = atoi(colon + 1);
}

static int area_alloc(struct soak *s, struct soak_area *a, size_t len,
		      int access)
{
	a->len = len;
	a->p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (a->p == MAP_FAILED) {
		a->p = NULL;
		return -1;
	}
	memset(a->p, SOAK_CANARY, len);
	a->mr = ibv_reg_mr(s->pd, a->p, len, access);
	if (!a->mr) {
		perror("soak: ibv_reg_mr");
		return -1;
	}
	return 0;
}

static void area_free(struct soak_area *a)
{
	if (a->mr)
		ibv_dereg_mr(a->mr);
	if (a->p)
		munmap(a->p, a->len);
}

static struct ibv_qp *make_qp(struct soak *s, enum ibv_qp_type type)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = s->scq,
		.recv_cq = s->rcq,
		.qp_type = type,
		.cap = {
			.max_send_wr = 512,
			.max_recv_wr = 512,
			.max_send_sge = SOAK_MAX_SGE,
			.max_recv_sge = SOAK_MAX_SGE,
			.max_inline_data = 512,
		},
	};

	return ibv_create_qp(s->pd, &ia);
}

static int setup(struct soak *s)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr pa;
	union ibv_gid gid;
	const int rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;

	if (!list || !list[0]) {
		fprintf(stderr, "soak: no RDMA device\n");
		return -1;
	}
	s->ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	if (!s->ctx || ibv_query_port(s->ctx, 1, &pa) ||
	    ibv_query_gid(s->ctx, 1, 0, &gid))
		return -1;
	s->me.mtu = 128u << pa.active_mtu;
	memcpy(s->me.gid, gid.raw, 16);
	s->pd = ibv_alloc_pd(s->ctx);
	s->ch = ibv_create_comp_channel(s->ctx);
	if (!s->pd || !s->ch)
		return -1;
	s->scq = ibv_create_cq(s->ctx, 4096, NULL, s->ch, 0);
	s->rcq = ibv_create_cq(s->ctx, 4096, NULL, s->ch, 0);
	if (!s->scq || !s->rcq)
		return -1;

	for (unsigned int q = 0; q < SQ__N; q++)
		if (area_alloc(s, &s->local[q],
			       q < SQ_NRC ? SOAK_LOCAL_AREA : 2u << 20,
			       IBV_ACCESS_LOCAL_WRITE))
			return -1;
	for (unsigned int q = 0; q < SQ_NRC; q++)
		if (area_alloc(s, &s->wr[q], SOAK_WRITE_AREA + 4096, rw) ||
		    area_alloc(s, &s->rx[q], SOAK_RECV_AREA,
			       IBV_ACCESS_LOCAL_WRITE))
			return -1;
	if (area_alloc(s, &s->wr[SQ_UC],
		       SOAK_UC_AREAS * SOAK_UC_AREA + SOAK_GAP, rw))
		return -1;
	s->ring_slot = SOAK_UC_MAX + SOAK_GAP;
	for (unsigned int ri = 0; ri < 2; ri++) {
		if (area_alloc(s, &s->ring[ri],
			       (size_t)SOAK_URING * s->ring_slot,
			       IBV_ACCESS_LOCAL_WRITE))
			return -1;
		for (uint32_t i = 0; i < SOAK_URING; i++)
			s->ring_free[ri][s->ring_nfree[ri]++] = i;
		s->seen[ri] = calloc(s->max_ids, 1);
		if (!s->seen[ri])
			return -1;
	}
	if (area_alloc(s, &s->rsrc, SOAK_READ_SRC, IBV_ACCESS_REMOTE_READ) ||
	    area_alloc(s, &s->cnt, 4096,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC))
		return -1;
	soak_fill(s->rsrc.p, SOAK_READ_SRC,
		  soak_key(s->seed, s->side, SOAK_READ_SRC_QP, 0), 0);
	memset(s->cnt.p, 0, 8);

	s->qp[SQ_RC0] = make_qp(s, IBV_QPT_RC);
	s->qp[SQ_RC1] = make_qp(s, IBV_QPT_RC);
	s->qp[SQ_UC] = make_qp(s, IBV_QPT_UC);
	s->qp[SQ_UD] = make_qp(s, IBV_QPT_UD);
	for (unsigned int q = 0; q < SQ__N; q++) {
		if (!s->qp[q]) {
			perror("soak: ibv_create_qp");
			return -1;
		}
		s->me.qpn[q] = s->qp[q]->qp_num;
		s->me.psn[q] = (uint32_t)soak_mix(s->seed ^ ((uint64_t)getpid() << 8) ^
						  q ^ (uint64_t)time(NULL)) & 0xffffff;
	}
	s->me.seed = s->seed;
	s->me.max_len = s->max_len;
	s->me.ops = s->lim.ops;
	for (unsigned int q = 0; q <= SQ_UC; q++) {
		s->me.write_addr[q] = (uintptr_t)s->wr[q].p;
		s->me.write_rkey[q] = s->wr[q].mr->rkey;
	}
	s->me.read_addr = (uintptr_t)s->rsrc.p;
	s->me.read_rkey = s->rsrc.mr->rkey;
	s->me.cnt_addr = (uintptr_t)s->cnt.p;
	s->me.cnt_rkey = s->cnt.mr->rkey;
	return 0;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	enum ibv_mtu m = IBV_MTU_256;

	while (m < IBV_MTU_4096 && (128u << (m + 1)) <= bytes)
		m++;
	return m;
}

static int connect_qps(struct soak *s)
{
	uint32_t mtu = s->me.mtu < s->peer.mtu ? s->me.mtu : s->peer.mtu;
	struct ibv_ah_attr ah = {
		.is_global = 1,
		.port_num = 1,
		.grh = { .sgid_index = 0, .hop_limit = 64 },
	};

	memcpy(ah.grh.dgid.raw, s->peer.gid, 16);
	s->lim.ud_max = mtu;
	s->lim.max_len = s->max_len;
	for (unsigned int q = 0; q < SQ__N; q++) {
		enum ibv_qp_type t = s->qp[q]->qp_type;
		struct ibv_qp_attr a = {
			.qp_state = IBV_QPS_INIT,
			.pkey_index = 0,
			.port_num = 1,
			.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				(t == IBV_QPT_RC ? IBV_ACCESS_REMOTE_READ |
				 IBV_ACCESS_REMOTE_ATOMIC : 0),
			.qkey = SOAK_QKEY,
		};
		int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

		mask |= t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
		if (ibv_modify_qp(s->qp[q], &a, mask))
			goto fail;

		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR };
		mask = IBV_QP_STATE;
		if (t != IBV_QPT_UD) {
			a.path_mtu = mtu_enum(mtu);
			a.dest_qp_num = s->peer.qpn[q];
			a.rq_psn = s->peer.psn[q];
			a.ah_attr = ah;
			mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				IBV_QP_RQ_PSN;
		}
		if (t == IBV_QPT_RC) {
			a.max_dest_rd_atomic = 16;
			a.min_rnr_timer = 12;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		if (ibv_modify_qp(s->qp[q], &a, mask))
			goto fail;

		a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTS,
					  .sq_psn = s->me.psn[q] };
		mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (t == IBV_QPT_RC) {
			a.timeout = s->timeout;
			a.retry_cnt = 7;
			a.rnr_retry = 7;
			a.max_rd_atomic = 16;
			mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
		if (ibv_modify_qp(s->qp[q], &a, mask))
			goto fail;
	}
	s->ah = ibv_create_ah(s->pd, &ah);
	return s->ah ? 0 : -1;
fail:
	perror("soak: ibv_modify_qp");
	return -1;
}

int soak_barrier(struct soak *s, uint32_t phase, bool more)
{
	struct barrier_msg out = { .round = s->round, .phase = phase,
				   .fatal = s->fatal, .more = more }, in;
	int tmo = (int)(s->stuck_seconds * 1000) + 30000;

	if (soak_oob_xchg(s->oob, &out, &in, sizeof(in), tmo)) {
		soak_err(s, "peer gone at barrier %u: %s", phase,
			 strerror(errno));
		s->fatal = true;
		return -1;
	}
	if (in.round != out.round || in.phase != out.phase) {
		soak_err(s, "peer at round %u phase %u", in.round, in.phase);
		s->fatal = true;
		return -1;
	}
	if (in.fatal) {
		soak_err(s, "the peer failed");
		s->fatal = true;
		return -1;
	}
	return out.fatal ? -1 : (in.more && more);
}

static void teardown(struct soak *s)
{
	if (s->ah)
		ibv_destroy_ah(s->ah);
	for (unsigned int q = 0; q < SQ__N; q++)
		if (s->qp[q])
			ibv_destroy_qp(s->qp[q]);
	for (unsigned int q = 0; q < SQ__N; q++)
		area_free(&s->local[q]);
	for (unsigned int q = 0; q <= SQ_UC; q++)
		area_free(&s->wr[q]);
	for (unsigned int q = 0; q < SQ_NRC; q++)
		area_free(&s->rx[q]);
	for (unsigned int ri = 0; ri < 2; ri++) {
		area_free(&s->ring[ri]);
		free(s->seen[ri]);
	}
	area_free(&s->rsrc);
	area_free(&s->cnt);
	if (s->scq)
		ibv_destroy_cq(s->scq);
	if (s->rcq)
		ibv_destroy_cq(s->rcq);
	if (s->ch)
		ibv_destroy_comp_channel(s->ch);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	free(s->chain);
}

/* Each fault asked for must have happened at least once. */
static bool faults_happened(const struct soak_faults *f, char *why,
			    size_t len)
{
	const struct {
		const char *name;
		double p;
		uint64_t n;
	} c[] = {
		{ "drop", f->p_drop, f->dropped },
		{ "dup", f->p_dup, f->duplicated },
		{ "reorder", f->p_reorder, f->reordered },
		{ "corrupt", f->p_corrupt, f->corrupted },
		{ "delay", f->p_delay, f->delayed },
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		if (c[i].p > 0 && !c[i].n) {
			snprintf(why, len, "%s=%g asked for, none injected",
				 c[i].name, c[i].p);
			return false;
		}
	return true;
}

int main(int argc, char **argv)
{
	static struct soak s_;
	struct soak *s = &s_;
	const char *addr = NULL;
	char stats_path[256], why[512] = "", lost[96];
	struct soak_faults f = { 0 };
	struct barrier_msg fin_out = { 0 }, fin_in;
	uint64_t scheduled = 0;
	double t0, secs;
	int port = 0, opt, listen_side = -1;
	uint32_t max_rounds = MAX_ROUNDS;
	bool pass, slow = false;

	s->seed = 1;
	s->target_bytes = 64ull << 20;
	s->max_seconds = 120;
	s->stuck_seconds = 30;
	s->max_len = 4u << 20;
	s->timeout = 14;
	s->lim.ops = SOAK_OPS_ALL;
	while ((opt = getopt(argc, argv, "l:c:s:m:r:t:L:T:S:o:X:v")) != -1) {
		switch (opt) {
		case 'l':
		case 'c':
			listen_side = opt == 'l';
			split_addr(optarg, &addr, &port);
			break;
		case 's':
			s->seed = strtoull(optarg, NULL, 0);
			break;
		case 'm':
			s->target_bytes = (uint64_t)(atof(optarg) * 1e6);
			break;
		case 'r':
			max_rounds = (uint32_t)atoi(optarg);
			if (!max_rounds || max_rounds > MAX_ROUNDS)
				usage();
			break;
		case 't':
			s->max_seconds = atof(optarg);
			break;
		case 'L':
			s->max_len = (uint32_t)atoi(optarg) << 10;
			break;
		case 'T':
			s->timeout = (uint8_t)atoi(optarg);
			break;
		case 'S':
			s->stuck_seconds = atof(optarg);
			break;
		case 'o':
			if (soak_parse_ops(optarg, &s->lim.ops))
				usage();
			break;
		case 'X':
			if (parse_sabotage(optarg, &s->sabotage))
				usage();
			break;
		case 'v':
			s->verbose = true;
			break;
		default:
			usage();
		}
	}
	if (listen_side < 0 || s->max_len < (2u << 20) ||
	    s->max_len > SOAK_READ_SRC || s->max_len > SOAK_WRITE_AREA / 2)
		usage();
	s->side = !listen_side;
	s->max_ids = MAX_ROUNDS * SOAK_MAX_MSGS;
	soak_stats_prepare(stats_path, sizeof(stats_path));
	soak_fault_env(&f);
	s->me.dup_faults = f.p_dup > 0;

	if (setup(s)) {
		fprintf(stderr, "soak: setup failed\n");
		return 1;
	}
	s->oob = listen_side ? soak_oob_listen(addr, port) :
			       soak_oob_connect(addr, port, 60);
	if (s->oob < 0 ||
	    soak_oob_xchg(s->oob, &s->me, &s->peer, sizeof(s->me), 60000)) {
		fprintf(stderr, "soak: no peer\n");
		return 1;
	}
	if (s->peer.seed != s->seed || s->peer.max_len != s->max_len ||
	    s->peer.ops != s->lim.ops) {
		fprintf(stderr, "soak: the peer runs another -s, -L or -o\n");
		return 1;
	}
	s->dups_on_path = s->me.dup_faults || s->peer.dup_faults;
	if (connect_qps(s) || soak_barrier(s, 0, true) < 0)
		return 1;

	t0 = now_s();
	for (s->round = 0; s->round < MAX_ROUNDS; s->round++) {
		bool more;

		if (soak_round_run(s))
			break;
		for (unsigned int q = 0; q < SQ__N; q++)
			scheduled += s->mine[q].bytes + s->theirs[q].bytes;
		slow = now_s() - t0 > s->max_seconds;
		more = scheduled < s->target_bytes && !slow &&
		       s->round + 1 < max_rounds;
		int b = soak_barrier(s, 2, more);

		if (b < 0)
			break;
		soak_round_verify(s);
		if (s->verbose)
			fprintf(stderr, "soak[%c] round %u: %.1f MB moved\n",
				s->side ? 'B' : 'A', s->round,
				s->t.bytes_moved / 1e6);
		if (!b) {
			s->round++;
			break;
		}
	}
	if (!s->fatal) {
		/* late UC/UD datagrams: held reorders go out within 10 ms */
		soak_drain_unreliable(s, 100);
		memcpy(&fin_out.counter, s->cnt.p, 8);
		fin_out.round = s->round;
		fin_out.phase = 3;
		if (soak_oob_xchg(s->oob, &fin_out, &fin_in, sizeof(fin_in),
				  30000) || fin_in.phase != 3) {
			soak_err(s, "no final exchange");
			s->fatal = true;
		} else {
			soak_finish(s, fin_in.counter);
		}
	}
	secs = now_s() - t0;
	teardown(s);

	if (soak_stats_read(stats_path, &f)) {
		snprintf(why, sizeof(why), "no counters in %s", stats_path);
		pass = false;
	} else {
		pass = faults_happened(&f, why, sizeof(why));
	}
	if (slow && scheduled < s->target_bytes)
		snprintf(why, sizeof(why), "too slow: %.0f of %.0f MB in %.0f s",
			 scheduled / 1e6, s->target_bytes / 1e6, secs);
	if (s->sabotage != s->sabotaged)
		snprintf(why, sizeof(why), "-X found nothing to spoil for %#x",
			 s->sabotage & ~s->sabotaged);
	pass = pass && !s->fatal && !slow && !s->t.bytes_wrong &&
	       !s->t.cqe_wrong && !s->t.counter_wrong;
	if (s->fatal && !why[0])
		snprintf(why, sizeof(why), "run aborted");
	/* losses are only counted at the end of a run that got there */
	if (s->fatal)
		snprintf(lost, sizeof(lost), "uc_lost=n/a ud_lost=n/a");
	else
		snprintf(lost, sizeof(lost),
			 "uc_lost=%llu/%llu ud_lost=%llu/%llu",
			 (unsigned long long)s->t.lost[0],
			 (unsigned long long)(s->t.lost[0] + s->t.got[0]),
			 (unsigned long long)s->t.lost[1],
			 (unsigned long long)(s->t.lost[1] + s->t.got[1]));
	printf("soak %c: %s seed=%llu rounds=%u secs=%.1f bytes_moved=%llu "
	       "bytes_wrong=%llu completions_wrong=%llu counter_wrong=%llu "
	       "flushed=%llu "
	       "msgs=%llu reads=%llu big_reads=%llu atomics=%llu "
	       "cas_retries=%llu %s "
	       "uc_write_lost=%llu uc_twice=%llu ud_twice=%llu fault_dropped=%llu fault_duplicated=%llu "
	       "fault_reordered=%llu fault_corrupted=%llu fault_delayed=%llu "
	       "drop_icrc=%llu drops=%llu retransmits=%llu timeouts=%llu "
	       "seq_nak_rcvd=%llu reorder_kept=%llu selective_resends=%llu "
	       "read_asks=%llu%s%s\n",
	       s->side ? 'B' : 'A', pass ? "PASS" : "FAIL",
	       (unsigned long long)s->seed, s->round, secs,
	       (unsigned long long)s->t.bytes_moved,
	       (unsigned long long)s->t.bytes_wrong,
	       (unsigned long long)s->t.cqe_wrong,
	       (unsigned long long)s->t.counter_wrong,
	       (unsigned long long)s->t.flushed,
	       (unsigned long long)s->t.msgs,
	       (unsigned long long)s->t.reads,
	       (unsigned long long)s->t.big_reads,
	       (unsigned long long)s->t.atomics,
	       (unsigned long long)s->t.cas_retries,
	       lost,
	       (unsigned long long)s->t.uc_write_lost,
	       (unsigned long long)s->t.twice[0],
	       (unsigned long long)s->t.twice[1],
	       (unsigned long long)f.dropped,
	       (unsigned long long)f.duplicated,
	       (unsigned long long)f.reordered,
	       (unsigned long long)f.corrupted,
	       (unsigned long long)f.delayed,
	       (unsigned long long)f.drop_bad_icrc,
	       (unsigned long long)f.drops_total,
	       (unsigned long long)f.retransmits,
	       (unsigned long long)f.timeouts,
	       (unsigned long long)f.seq_nak_rcvd,
	       (unsigned long long)f.reorder_kept,
	       (unsigned long long)f.selective_resends,
	       (unsigned long long)f.read_asks,
	       why[0] ? " why=" : "", why);
	if (strncmp(stats_path, "/tmp/uroce-soak-stats.", 22) == 0)
		unlink(stats_path);
	return pass ? 0 : 1;
}
