/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The responder's reorder store (engine/reorder.c) alone, on a bare
 * transport state: what it keeps (only ahead of the expected PSN, within
 * UR_REORDER_PSNS), what it gives back (the request for the expected PSN,
 * once), what a second copy of a kept request does (nothing if it is the
 * same request, both gone if it is not), that every byte it holds is
 * accounted for and freed, and that drained buffers serve the next gap
 * (each large enough for what comes, within the device's bound).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine_priv.h"

#define T_LEN (UR_BTH_BYTES + 64 + UR_ICRC_BYTES)
#define T_BIG 9100

struct t_store {
	struct ur_nic nic;
	struct ur_rx_shard sh;
	struct ur_qp qp;
	struct ur_qp_xport xp;
};

static int setup(void **state)
{
	struct t_store *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	t->qp.xp = &t->xp;
	t->xp.qp = &t->qp;
	t->xp.nic = &t->nic;
	t->nic.shard = &t->sh;
	t->nic.n_shard = 1;
	pthread_mutex_init(&t->sh.lock, NULL);
	pthread_mutex_lock(&t->sh.lock);
	t->xp.resp.epsn = 0xfffff0;	/* the store's PSNs wrap */
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t_store *t = *state;

	ur_reorder_clear(&t->xp);
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 0);
	ur_reorder_spares_free(&t->sh);
	pthread_mutex_unlock(&t->sh.lock);
	pthread_mutex_destroy(&t->sh.lock);
	free(t);
	return 0;
}

/* A request datagram whose payload says psn and variant. */
static struct ur_rxd *req(uint32_t psn, uint8_t variant, bool ackreq)
{
	static uint8_t buf[T_LEN];
	static struct ur_rxd d;

	memset(buf, 0, sizeof(buf));
	buf[0] = UR_OPC_RC_WRITE_MIDDLE;
	buf[8] = ackreq ? 0x80 : 0;
	buf[9] = (uint8_t)(psn >> 16);
	buf[10] = (uint8_t)(psn >> 8);
	buf[11] = (uint8_t)psn;
	memset(buf + UR_BTH_BYTES, variant, 64);
	buf[T_LEN - 1] = ackreq;	/* the ICRC changes with the header */
	d = (struct ur_rxd){ .data = buf, .len = T_LEN };
	return &d;
}

static uint32_t at(const struct t_store *t, int32_t k)
{
	return ur_psn_add(t->xp.resp.epsn, k);
}

/* A request of len bytes (at least a BTH and an ICRC) whose payload
 * bytes all say variant. */
static struct ur_rxd *req_len(uint32_t psn, uint8_t variant, uint32_t len)
{
	static uint8_t buf[T_BIG];
	static struct ur_rxd d;

	assert_true(len >= UR_BTH_BYTES + UR_ICRC_BYTES && len <= T_BIG);
	memset(buf, variant, len);
	buf[0] = UR_OPC_RC_WRITE_MIDDLE;
	buf[9] = (uint8_t)(psn >> 16);
	buf[10] = (uint8_t)(psn >> 8);
	buf[11] = (uint8_t)psn;
	d = (struct ur_rxd){ .data = buf, .len = len };
	return &d;
}

/* Drains the n requests kept from epsn + 1 on (the missing one came),
 * checking each is the variant-k request of lens[k - 1] bytes. */
static void drain(struct t_store *t, int n, const uint32_t *lens)
{
	struct ur_reorder_pkt *p;

	t->xp.resp.epsn = at(t, 1);
	for (int k = 1; k <= n; k++) {
		p = ur_reorder_take(&t->xp);
		assert_non_null(p);
		assert_int_equal(p->d.len, lens[k - 1]);
		assert_int_equal(p->d.data[UR_BTH_BYTES], (uint8_t)k);
		assert_int_equal(p->d.data[lens[k - 1] - 1], (uint8_t)k);
		ur_reorder_free(&t->xp, p);
		t->xp.resp.epsn = ur_psn_inc(t->xp.resp.epsn);
	}
	assert_int_equal(t->xp.resp.reorder_n, 0);
}

/* Only ahead of the expected PSN and within the store's PSNs. */
static void test_keeps_ahead_only(void **state)
{
	struct t_store *t = *state;

	assert_false(ur_reorder_keep(&t->xp, at(t, 0), req(at(t, 0), 1, 0)));
	assert_false(ur_reorder_keep(&t->xp, at(t, -1), req(at(t, -1), 1, 0)));
	assert_false(ur_reorder_keep(&t->xp, at(t, UR_REORDER_PSNS),
				     req(at(t, UR_REORDER_PSNS), 1, 0)));
	assert_true(ur_reorder_keep(&t->xp, at(t, UR_REORDER_PSNS - 1),
				    req(at(t, UR_REORDER_PSNS - 1), 1, 0)));
	assert_int_equal(t->xp.resp.reorder_n, 1);
	assert_true(ur_reorder_ahead(&t->xp));
}

/* Given back in PSN order, each once, as the expected PSN moves. */
static void test_taken_in_order(void **state)
{
	struct t_store *t = *state;
	struct ur_reorder_pkt *p;
	int32_t k;

	for (k = 3; k >= 1; k--)
		assert_true(ur_reorder_keep(&t->xp, at(t, k),
					    req(at(t, k), (uint8_t)k, 0)));
	assert_null(ur_reorder_take(&t->xp));	/* the gap at epsn */
	t->xp.resp.epsn = at(t, 1);		/* the missing one came */
	for (k = 1; k <= 3; k++) {
		p = ur_reorder_take(&t->xp);
		assert_non_null(p);
		assert_int_equal(p->psn, t->xp.resp.epsn);
		assert_int_equal(p->d.len, T_LEN);
		assert_int_equal(p->d.data[UR_BTH_BYTES], k);
		assert_null(ur_reorder_take(&t->xp));	/* not twice */
		ur_reorder_free(&t->xp, p);
		t->xp.resp.epsn = ur_psn_inc(t->xp.resp.epsn);
	}
	assert_int_equal(t->xp.resp.reorder_n, 0);
	assert_false(ur_reorder_ahead(&t->xp));
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 0);
}

/* A resent copy (AckReq and ICRC differ) is the same request; a request
 * that differs in its payload leaves neither, and is counted. */
static void test_second_copy(void **state)
{
	struct t_store *t = *state;
	uint32_t psn = at(t, 5);

	assert_true(ur_reorder_keep(&t->xp, psn, req(psn, 7, false)));
	assert_true(ur_reorder_keep(&t->xp, psn, req(psn, 7, true)));
	assert_int_equal(t->xp.resp.reorder_n, 1);
	assert_false(ur_reorder_keep(&t->xp, psn, req(psn, 8, false)));
	assert_int_equal(t->xp.resp.reorder_n, 0);
	assert_int_equal(
		atomic_load(&t->nic.cnt.stat[UR_STAT_REORDER_CONFLICTS]), 1);
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 0);
	/* the slot is free again for the real request */
	assert_true(ur_reorder_keep(&t->xp, psn, req(psn, 7, false)));
}

/* What the drain can no longer reach (its PSN was passed over) is freed
 * once nothing kept is ahead any more. */
static void test_left_behind_freed(void **state)
{
	struct t_store *t = *state;

	assert_true(ur_reorder_keep(&t->xp, at(t, 2), req(at(t, 2), 1, 0)));
	t->xp.resp.epsn = at(t, 10);	/* a READ's PSNs, say */
	assert_null(ur_reorder_take(&t->xp));
	assert_false(ur_reorder_ahead(&t->xp));
	assert_int_equal(t->xp.resp.reorder_n, 0);
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 0);
}

/* The device's bytes bound what all its QPs keep. */
static void test_device_bound(void **state)
{
	struct t_store *t = *state;

	atomic_store(&t->nic.reorder_bytes, UR_REORDER_MAX_BYTES - 16);
	assert_false(ur_reorder_keep(&t->xp, at(t, 1), req(at(t, 1), 1, 0)));
	atomic_store(&t->nic.reorder_bytes, 0);
	assert_true(ur_reorder_keep(&t->xp, at(t, 1), req(at(t, 1), 1, 0)));
}

/* A drained gap's buffers serve the next one: no allocation per loss. A
 * larger request than any before replaces the spares with buffers that
 * hold it, and a smaller one then fits a spare. */
static void test_spares_serve_next_gap(void **state)
{
	struct t_store *t = *state;
	uint32_t small[3] = { 100, 100, 60 }, big[2] = { 4200, 3000 };
	uint64_t one;
	int k;

	for (k = 1; k <= 3; k++)
		assert_true(ur_reorder_keep(&t->xp, at(t, k),
				req_len(at(t, k), (uint8_t)k, small[k - 1])));
	one = atomic_load(&t->nic.reorder_bytes) / 3;
	assert_int_equal(t->sh.reorder_spare_bytes, 0);
	drain(t, 3, small);
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 0);
	assert_int_equal(t->sh.reorder_spare_bytes, 3 * one);
	/* the next gap takes them back */
	for (k = 1; k <= 2; k++)
		assert_true(ur_reorder_keep(&t->xp, at(t, k),
				req_len(at(t, k), (uint8_t)k, small[k - 1])));
	assert_int_equal(t->sh.reorder_spare_bytes, one);
	assert_int_equal(atomic_load(&t->nic.reorder_bytes), 2 * one);
	drain(t, 2, small);
	/* larger than any before: the spares cannot hold it */
	for (k = 1; k <= 2; k++)
		assert_true(ur_reorder_keep(&t->xp, at(t, k),
				req_len(at(t, k), (uint8_t)k, big[k - 1])));
	assert_int_equal(t->sh.reorder_spare_bytes, 0);
	drain(t, 2, big);
	assert_int_equal(t->sh.reorder_spare_bytes,
			 2 * (sizeof(struct ur_reorder_pkt) + 4200));
	/* a small one fits a large spare */
	assert_true(ur_reorder_keep(&t->xp, at(t, 1),
				    req_len(at(t, 1), 1, 60)));
	assert_int_equal(t->sh.reorder_spare_bytes,
			 sizeof(struct ur_reorder_pkt) + 4200);
	drain(t, 1, &small[2]);
}

/* The spares a device keeps are bounded; the rest is freed. */
static void test_spares_bounded(void **state)
{
	struct t_store *t = *state;
	static uint32_t lens[UR_REORDER_PSNS];
	int k, n = UR_REORDER_PSNS - 2;

	for (k = 1; k <= n; k++) {
		lens[k - 1] = T_BIG;
		assert_true(ur_reorder_keep(&t->xp, at(t, k),
				req_len(at(t, k), (uint8_t)k, T_BIG)));
	}
	assert_true((uint64_t)n * T_BIG > UR_REORDER_SPARE_BYTES);
	drain(t, n, lens);
	assert_true(t->sh.reorder_spare_bytes <= UR_REORDER_SPARE_BYTES);
	assert_true(t->sh.reorder_spare_bytes >
		    UR_REORDER_SPARE_BYTES - 2 * T_BIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_keeps_ahead_only, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_taken_in_order, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_second_copy, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_left_behind_freed, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_device_bound, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_spares_serve_next_gap,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_spares_bounded, setup,
						teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
