/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * ibv_modify_qp rules: every (current, next) pair for RC, UC and UD against
 * an independent transcription of the IBA table (docs/wire-notes.md §4.1):
 * allowed transitions succeed with exactly the required mask, fail with any
 * required bit missing or any bit outside required|optional, and every
 * optional bit is accepted; transitions not in the table always fail.
 * Then the attribute value checks, "a refused modify changes nothing",
 * and the query_qp round trip.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "qp_fixture.h"

#define S IBV_QP_STATE
#define CUR IBV_QP_CUR_STATE
#define ACC IBV_QP_ACCESS_FLAGS
#define PK IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define QK IBV_QP_QKEY
#define AV IBV_QP_AV
#define MTU IBV_QP_PATH_MTU
#define TMO IBV_QP_TIMEOUT
#define RC_ IBV_QP_RETRY_CNT
#define RNR IBV_QP_RNR_RETRY
#define RQ IBV_QP_RQ_PSN
#define RDA IBV_QP_MAX_QP_RD_ATOMIC
#define ALT IBV_QP_ALT_PATH
#define MRNR IBV_QP_MIN_RNR_TIMER
#define SQ IBV_QP_SQ_PSN
#define DRDA IBV_QP_MAX_DEST_RD_ATOMIC
#define MIG IBV_QP_PATH_MIG_STATE
#define DQ IBV_QP_DEST_QPN
#define SQDN IBV_QP_EN_SQD_ASYNC_NOTIFY

/* the attribute bits a modify can name (beyond STATE) */
static const int all_bits[] = {
	CUR, SQDN, ACC, PK, PORT, QK, AV, MTU, TMO, RC_, RNR, RQ, RDA, ALT,
	MRNR, SQ, DRDA, MIG, IBV_QP_CAP, DQ, IBV_QP_RATE_LIMIT,
};

struct exp {
	enum ibv_qp_type type;
	enum ibv_qp_state cur, next;
	int req, opt;
};

#define R IBV_QPS_RESET
#define I IBV_QPS_INIT
#define RTR IBV_QPS_RTR
#define RTS IBV_QPS_RTS
#define SQD IBV_QPS_SQD
#define SQE IBV_QPS_SQE
#define E IBV_QPS_ERR

#define ANY3(c, n) { IBV_QPT_RC, c, n, 0, 0 }, { IBV_QPT_UC, c, n, 0, 0 }, \
		   { IBV_QPT_UD, c, n, 0, 0 }

static const struct exp table[] = {
	ANY3(R, R),
	{ IBV_QPT_RC, R, I, PK | PORT | ACC, 0 },
	{ IBV_QPT_UC, R, I, PK | PORT | ACC, 0 },
	{ IBV_QPT_UD, R, I, PK | PORT | QK, 0 },
	{ IBV_QPT_RC, I, I, 0, PK | PORT | ACC },
	{ IBV_QPT_UC, I, I, 0, PK | PORT | ACC },
	{ IBV_QPT_UD, I, I, 0, PK | PORT | QK },
	{ IBV_QPT_RC, I, RTR, AV | MTU | DQ | RQ | DRDA | MRNR,
	  ALT | ACC | PK },
	{ IBV_QPT_UC, I, RTR, AV | MTU | DQ | RQ, ALT | ACC | PK },
	{ IBV_QPT_UD, I, RTR, 0, PK | QK },
	{ IBV_QPT_RC, RTR, RTS, TMO | RC_ | RNR | SQ | RDA,
	  CUR | ALT | ACC | MRNR | MIG },
	{ IBV_QPT_UC, RTR, RTS, SQ, CUR | ALT | ACC | MIG },
	{ IBV_QPT_UD, RTR, RTS, SQ, CUR | QK },
	{ IBV_QPT_RC, RTS, RTS, 0, CUR | ACC | ALT | MIG | MRNR },
	{ IBV_QPT_UC, RTS, RTS, 0, CUR | ACC | ALT | MIG },
	{ IBV_QPT_UD, RTS, RTS, 0, CUR | QK },
	{ IBV_QPT_RC, RTS, SQD, 0, SQDN },
	{ IBV_QPT_UC, RTS, SQD, 0, SQDN },
	{ IBV_QPT_UD, RTS, SQD, 0, SQDN },
	{ IBV_QPT_RC, SQD, RTS, 0, CUR | ACC | ALT | MIG | MRNR },
	{ IBV_QPT_UC, SQD, RTS, 0, CUR | ACC | ALT | MIG },
	{ IBV_QPT_UD, SQD, RTS, 0, CUR | QK },
	{ IBV_QPT_RC, SQD, SQD, 0, PORT | AV | TMO | RC_ | RNR | RDA | DRDA |
	  ALT | ACC | PK | MRNR | MIG },
	{ IBV_QPT_UC, SQD, SQD, 0, AV | ALT | ACC | PK | MIG },
	{ IBV_QPT_UD, SQD, SQD, 0, PK | QK },
	{ IBV_QPT_RC, SQE, RTS, 0, 0 },
	{ IBV_QPT_UC, SQE, RTS, 0, CUR | ACC },
	{ IBV_QPT_UD, SQE, RTS, 0, CUR | QK },
	ANY3(I, R), ANY3(RTR, R), ANY3(RTS, R), ANY3(SQD, R), ANY3(SQE, R),
	ANY3(E, R),
	ANY3(I, E), ANY3(RTR, E), ANY3(RTS, E), ANY3(SQD, E), ANY3(SQE, E),
	ANY3(E, E),
};

static const struct exp *find_exp(enum ibv_qp_type t, enum ibv_qp_state c,
				  enum ibv_qp_state n)
{
	size_t i;

	for (i = 0; i < sizeof(table) / sizeof(table[0]); i++)
		if (table[i].type == t && table[i].cur == c &&
		    table[i].next == n)
			return &table[i];
	return NULL;
}

/* Puts qp in state s directly (SQE cannot be reached by a verb). */
static void force_state(struct ur_qp *qp, enum ibv_qp_state s)
{
	qp->state = s;
	qp->attr.qp_state = s;
}

static int try(struct ur_qp *qp, enum ibv_qp_state cur,
	       enum ibv_qp_state next, int mask)
{
	struct ibv_qp_attr at;
	enum ibv_qp_state old;
	int ret;

	force_state(qp, cur);
	qp_fx_good_attr(&at, cur, next);
	ret = qp_fx_modify(qp, &at, mask, &old);
	if (!ret) {
		assert_int_equal(old, cur);
		assert_int_equal(qp->state, next);
		assert_int_equal(qp->ibqp_ex.qp_base.state, next);
	} else {
		assert_int_equal(qp->state, cur);
	}
	return ret;
}

static void check_type(enum ibv_qp_type type)
{
	struct qp_fx *f = qp_fx_new();
	struct ur_qp *qp = qp_fx_qp(f, type);
	unsigned int c, n, b;
	int valid_pairs = 0;

	assert_non_null(qp);
	for (c = IBV_QPS_RESET; c <= IBV_QPS_ERR; c++) {
		for (n = IBV_QPS_RESET; n <= IBV_QPS_ERR; n++) {
			const struct exp *e = find_exp(type, c, n);

			if (!e) {
				assert_int_equal(try(qp, c, n, S), -EINVAL);
				assert_int_equal(try(qp, c, n, S | PK | PORT |
						     ACC | QK), -EINVAL);
				assert_int_equal(try(qp, c, n, S | AV | MTU |
						     DQ | RQ | DRDA | MRNR |
						     TMO | RC_ | RNR | SQ |
						     RDA), -EINVAL);
				assert_int_equal(ur_qp_mask_check(type, c, n,
								  S), -EINVAL);
				continue;
			}
			valid_pairs++;
			/* exactly the required mask */
			assert_int_equal(try(qp, c, n, S | e->req), 0);
			/* all of required and optional at once */
			assert_int_equal(try(qp, c, n, S | e->req | e->opt), 0);
			for (b = 0; b < sizeof(all_bits) / sizeof(all_bits[0]);
			     b++) {
				int bit = all_bits[b];

				if (e->req & bit)
					assert_int_equal(try(qp, c, n,
							     S | (e->req &
								  ~bit)),
							 -EINVAL);
				else if (e->opt & bit)
					assert_int_equal(try(qp, c, n,
							     S | e->req | bit),
							 0);
				else
					assert_int_equal(try(qp, c, n,
							     S | e->req | bit),
							 -EINVAL);
			}
			/* without IBV_QP_STATE the target is the current state */
			if (c == n)
				assert_int_equal(try(qp, c, n, e->req), 0);
		}
	}
	/* RESET->RESET, RESET->INIT, INIT x4, RTR x3, RTS x4, SQD x4,
	 * SQE x3, ERR x2 */
	assert_int_equal(valid_pairs, 2 + 4 + 3 + 4 + 4 + 3 + 2);
	qp_fx_destroy(qp);
	qp_fx_free(f);
}

static void test_table_rc(void **state)
{
	(void)state;
	check_type(IBV_QPT_RC);
}

static void test_table_uc(void **state)
{
	(void)state;
	check_type(IBV_QPT_UC);
}

static void test_table_ud(void **state)
{
	(void)state;
	check_type(IBV_QPT_UD);
}

static void test_unknown_mask_bit(void **state)
{
	struct qp_fx *f = qp_fx_new();
	struct ur_qp *qp = qp_fx_qp(f, IBV_QPT_RC);

	(void)state;
	assert_int_equal(try(qp, IBV_QPS_RTS, IBV_QPS_RTS, S | (1 << 30)),
			 -EOPNOTSUPP);
	/* a state value that is none */
	{
		struct ibv_qp_attr at;
		enum ibv_qp_state old;

		qp_fx_good_attr(&at, IBV_QPS_RTS, IBV_QPS_RTS);
		at.qp_state = IBV_QPS_UNKNOWN;
		assert_int_equal(qp_fx_modify(qp, &at, S, &old), -EINVAL);
	}
	qp_fx_destroy(qp);
	qp_fx_free(f);
}

/* Modify with one bad value: -EINVAL and the QP is bit-for-bit the same. */
static void bad_value(struct ur_qp *qp, enum ibv_qp_state cur,
		      enum ibv_qp_state next, int mask,
		      void (*spoil)(struct ibv_qp_attr *))
{
	struct ibv_qp_attr at, q0, q1;
	struct ibv_qp_init_attr i0, i1;
	struct ur_av av0;
	enum ibv_qp_state old;
	uint32_t mtu0;

	qp_fx_good_attr(&at, cur, next);
	spoil(&at);
	ur_qp_query(qp, &q0, &i0);
	av0 = qp->av;
	mtu0 = qp->path_mtu_bytes;
	assert_int_equal(qp_fx_modify(qp, &at, mask, &old), -EINVAL);
	ur_qp_query(qp, &q1, &i1);
	assert_memory_equal(&q0, &q1, sizeof(q0));
	assert_memory_equal(&i0, &i1, sizeof(i0));
	assert_memory_equal(&av0, &qp->av, sizeof(av0));
	assert_int_equal(mtu0, qp->path_mtu_bytes);
	assert_int_equal(qp->state, cur);
}

static void sp_port(struct ibv_qp_attr *a) { a->port_num = 2; }
static void sp_pkey(struct ibv_qp_attr *a) { a->pkey_index = 1; }
static void sp_acc(struct ibv_qp_attr *a) { a->qp_access_flags |= IBV_ACCESS_ZERO_BASED; }
static void sp_mtu0(struct ibv_qp_attr *a) { a->path_mtu = 0; }
static void sp_mtu6(struct ibv_qp_attr *a) { a->path_mtu = 6; }
static void sp_dqpn(struct ibv_qp_attr *a) { a->dest_qp_num = 0x1000000; }
static void sp_drda(struct ibv_qp_attr *a) { a->max_dest_rd_atomic = 129; }
static void sp_rnrt(struct ibv_qp_attr *a) { a->min_rnr_timer = 32; }
static void sp_noglobal(struct ibv_qp_attr *a) { a->ah_attr.is_global = 0; }
static void sp_sgid(struct ibv_qp_attr *a) { a->ah_attr.grh.sgid_index = 1; }
static void sp_avport(struct ibv_qp_attr *a) { a->ah_attr.port_num = 2; }
static void sp_dgid0(struct ibv_qp_attr *a)
{
	memset(a->ah_attr.grh.dgid.raw, 0, 16);
}
static void sp_dgid6(struct ibv_qp_attr *a)
{
	a->ah_attr.grh.dgid.raw[0] = 0xfe;	/* IPv6 peer, IPv4 sgid */
}
static void sp_alt(struct ibv_qp_attr *a) { a->alt_port_num = 3; }
static void sp_tmo(struct ibv_qp_attr *a) { a->timeout = 32; }
static void sp_retry(struct ibv_qp_attr *a) { a->retry_cnt = 8; }
static void sp_rnr(struct ibv_qp_attr *a) { a->rnr_retry = 8; }
static void sp_rda(struct ibv_qp_attr *a) { a->max_rd_atomic = 200; }
static void sp_cur(struct ibv_qp_attr *a) { a->cur_qp_state = IBV_QPS_INIT; }
static void sp_mig(struct ibv_qp_attr *a) { a->path_mig_state = 7; }
static void sp_none(struct ibv_qp_attr *a) { (void)a; }

static void test_values_and_atomicity(void **state)
{
	struct qp_fx *f = qp_fx_new();
	struct ur_qp *qp = qp_fx_qp(f, IBV_QPT_RC);
	struct ibv_qp_attr at;
	enum ibv_qp_state old;
	int init_m = S | PK | PORT | ACC;
	int rtr_m = S | AV | MTU | DQ | RQ | DRDA | MRNR;
	int rts_m = S | TMO | RC_ | RNR | SQ | RDA;

	(void)state;
	bad_value(qp, IBV_QPS_RESET, IBV_QPS_INIT, init_m, sp_port);
	bad_value(qp, IBV_QPS_RESET, IBV_QPS_INIT, init_m, sp_pkey);
	bad_value(qp, IBV_QPS_RESET, IBV_QPS_INIT, init_m, sp_acc);
	qp_fx_good_attr(&at, IBV_QPS_RESET, IBV_QPS_INIT);
	assert_int_equal(qp_fx_modify(qp, &at, init_m, &old), 0);

	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_mtu0);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_mtu6);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_dqpn);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_drda);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_rnrt);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_noglobal);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_sgid);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_avport);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_dgid0);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m, sp_dgid6);
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m | ALT, sp_alt);
	/* a good attr but a required bit missing: also nothing changes */
	bad_value(qp, IBV_QPS_INIT, IBV_QPS_RTR, rtr_m & ~RQ, sp_none);
	qp_fx_good_attr(&at, IBV_QPS_INIT, IBV_QPS_RTR);
	assert_int_equal(qp_fx_modify(qp, &at, rtr_m, &old), 0);
	assert_int_equal(qp->path_mtu_bytes, 1024);
	assert_int_equal(qp->av.dest.in.sin_family, AF_INET);
	assert_int_equal(ntohs(qp->av.dest.in.sin_port), 4791);
	assert_int_equal(ntohl(qp->av.dest.in.sin_addr.s_addr), 0x7f000002);
	assert_int_equal(ntohl(qp->av.src.in.sin_addr.s_addr), 0x7f000001);
	assert_int_equal(qp->av.hop_limit, 1);

	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m, sp_tmo);
	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m, sp_retry);
	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m, sp_rnr);
	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m, sp_rda);
	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m | CUR, sp_cur);
	bad_value(qp, IBV_QPS_RTR, IBV_QPS_RTS, rts_m | MIG, sp_mig);
	qp_fx_good_attr(&at, IBV_QPS_RTR, IBV_QPS_RTS);
	assert_int_equal(qp_fx_modify(qp, &at, rts_m | CUR, &old), 0);
	assert_int_equal(qp->state, IBV_QPS_RTS);

	/* RESET clears the attributes back to the creation defaults */
	at.qp_state = IBV_QPS_RESET;
	assert_int_equal(qp_fx_modify(qp, &at, S, &old), 0);
	assert_int_equal(old, IBV_QPS_RTS);
	assert_int_equal(qp->attr.dest_qp_num, 0);
	assert_int_equal(qp->attr.path_mtu, IBV_MTU_256);
	/* RESET -> ERR is not in the table */
	at.qp_state = IBV_QPS_ERR;
	assert_int_equal(qp_fx_modify(qp, &at, S, &old), -EINVAL);
	qp_fx_destroy(qp);
	qp_fx_free(f);
}

static void test_query_round_trip(void **state)
{
	struct qp_fx *f = qp_fx_new();
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr at, q;
	struct ur_qp *qp;

	(void)state;
	qp_fx_init_attr(f, &a, IBV_QPT_RC);
	a.sq_sig_all = 1;
	a.qp_context = (void *)0x1234;
	qp = qp_fx_create(f, &a, NULL);
	assert_non_null(qp);
	assert_int_equal(qp_fx_to_rts(qp), 0);
	ur_qp_query(qp, &q, &init);
	qp_fx_good_attr(&at, IBV_QPS_RTR, IBV_QPS_RTS);
	assert_int_equal(q.qp_state, IBV_QPS_RTS);
	assert_int_equal(q.cur_qp_state, IBV_QPS_RTS);
	assert_int_equal(q.qp_access_flags, at.qp_access_flags);
	assert_int_equal(q.port_num, 1);
	assert_int_equal(q.path_mtu, at.path_mtu);
	assert_int_equal(q.timeout, at.timeout);
	assert_int_equal(q.retry_cnt, at.retry_cnt);
	assert_int_equal(q.rnr_retry, at.rnr_retry);
	assert_int_equal(q.rq_psn, at.rq_psn);
	assert_int_equal(q.sq_psn, at.sq_psn);
	assert_int_equal(q.max_rd_atomic, at.max_rd_atomic);
	assert_int_equal(q.max_dest_rd_atomic, at.max_dest_rd_atomic);
	assert_int_equal(q.min_rnr_timer, at.min_rnr_timer);
	assert_int_equal(q.dest_qp_num, at.dest_qp_num);
	assert_memory_equal(&q.ah_attr, &at.ah_attr, sizeof(at.ah_attr));
	assert_int_equal(q.cap.max_send_wr, a.cap.max_send_wr);
	assert_int_equal(q.cap.max_recv_sge, a.cap.max_recv_sge);
	assert_int_equal(q.cap.max_inline_data, a.cap.max_inline_data);
	assert_ptr_equal(init.qp_context, (void *)0x1234);
	assert_ptr_equal(init.send_cq, &f->cq.ibcq);
	assert_ptr_equal(init.recv_cq, &f->cq.ibcq);
	assert_null(init.srq);
	assert_int_equal(init.qp_type, IBV_QPT_RC);
	assert_int_equal(init.sq_sig_all, 1);
	assert_memory_equal(&init.cap, &q.cap, sizeof(q.cap));
	qp_fx_destroy(qp);
	qp_fx_free(f);
}

/*
 * UCX passes grh.flow_label = 0xFFFFFFFF; rdma-core's providers accept it
 * and only 20 bits exist on the wire. The modify succeeds and the QP keeps
 * (and reports) the low 20 bits, primary and alternate path alike.
 */
static void test_flow_label_masked(void **state)
{
	struct qp_fx *f = qp_fx_new();
	struct ur_qp *qp = qp_fx_qp(f, IBV_QPT_RC);
	struct ibv_qp_init_attr init;
	struct ibv_qp_attr at, q;
	enum ibv_qp_state old;
	int rtr_m = S | AV | MTU | DQ | RQ | DRDA | MRNR | ALT;

	(void)state;
	qp_fx_good_attr(&at, IBV_QPS_RESET, IBV_QPS_INIT);
	assert_int_equal(qp_fx_modify(qp, &at, S | PK | PORT | ACC, &old), 0);
	qp_fx_good_attr(&at, IBV_QPS_INIT, IBV_QPS_RTR);
	at.ah_attr.grh.flow_label = 0xFFFFFFFF;
	at.alt_ah_attr.grh.flow_label = 0xABC12345;
	assert_int_equal(qp_fx_modify(qp, &at, rtr_m, &old), 0);
	assert_int_equal(qp->state, IBV_QPS_RTR);
	assert_int_equal(qp->av.flow_label, 0xFFFFF);
	ur_qp_query(qp, &q, &init);
	assert_int_equal(q.ah_attr.grh.flow_label, 0xFFFFF);
	assert_int_equal(q.alt_ah_attr.grh.flow_label, 0x12345);
	qp_fx_destroy(qp);
	qp_fx_free(f);
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(ur_qp_state_name(IBV_QPS_SQE), "SQE");
	assert_string_equal(ur_qp_state_name(IBV_QPS_UNKNOWN), "UNKNOWN");
	assert_int_equal(ur_mtu_bytes(IBV_MTU_4096), 4096);
	assert_int_equal(ur_mtu_bytes(IBV_MTU_256), 256);
	assert_int_equal(ur_mtu_bytes(0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table_rc),
		cmocka_unit_test(test_table_uc),
		cmocka_unit_test(test_table_ud),
		cmocka_unit_test(test_unknown_mask_bit),
		cmocka_unit_test(test_values_and_atomicity),
		cmocka_unit_test(test_query_round_trip),
		cmocka_unit_test(test_flow_label_masked),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
