/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Receive shards over real sockets (UROCE_LINK=udp, UROCE_RX_SHARDS=4),
 * through the public verbs API with one look inside (engine_priv.h): two
 * RC QP pairs between the two devices, whose receiving QPs (device 1's)
 * belong to different shards.
 *  - the kernel steers each QP's datagrams to its own shard's socket:
 *    only that shard counts them, and no shard forwards any;
 *  - a CQ names only its QPs' shards for poll_cq;
 *  - while the test holds QP B's shard lock and B's SENDs wait in its
 *    socket, QP A's SENDs complete through poll_cq alone: A's receive
 *    needs nothing of B's shard. Once released, B's complete too;
 *  - the ACKs of two QPs that one responder shard sends in one reply
 *    batch reach the requester's two shards by the kernel's steering: a
 *    GSO train never mixes destination QPs (its receiver gets it whole,
 *    in the socket of the first datagram's QP), so no shard forwards.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/engine_priv.h"
#include "skip.h"
#include "te_util.h"

#define T_TMO 5000
#define N_MSG 32
#define MSG 256

static struct ur_nic *nic_of(struct ibv_qp *qp)
{
	return to_ur_qp(qp)->xp->nic;
}

static unsigned int shard_of(struct ibv_qp *qp)
{
	return ur_qp_shard_of(nic_of(qp), to_ur_qp(qp));
}

static uint64_t rx_of(struct ur_nic *nic, unsigned int i)
{
	return atomic_load(&nic->shard[i].rx_pkts);
}

/* Datagrams one shard handed to another, either way (recv.c). */
static uint64_t fwd_total(struct ur_nic *nic)
{
	return atomic_load(&nic->cnt.stat[UR_STAT_RX_FORWARDED]);
}

/* Two connected pairs whose receiving QPs are in different shards. */
static int setup(void **state)
{
	struct te_pair *p = calloc(2, sizeof(*p));
	int tries;

	assert_non_null(p);
	assert_int_equal(te_pair_open(&p[0], IBV_QPT_RC), 0);
	if (nic_of(p[0].s[1].qp)->n_linkq < 4) {
		te_pair_close(&p[0]);
		free(p);
		ur_skip("the kernel refused steered receive queues\n");
	}
	/* QPNs are random: a few tries find another shard */
	for (tries = 0; tries < 64; tries++) {
		assert_int_equal(te_pair_open(&p[1], IBV_QPT_RC), 0);
		if (shard_of(p[1].s[1].qp) != shard_of(p[0].s[1].qp))
			break;
		te_pair_close(&p[1]);
	}
	assert_true(tries < 64);
	assert_int_equal(te_pair_connect(&p[0], NULL), 0);
	assert_int_equal(te_pair_connect(&p[1], NULL), 0);
	*state = p;
	return 0;
}

/* Two connected pairs whose responders (device 1) share a shard and
 * whose requesters (device 0) do not. */
static int setup_ack_train(void **state)
{
	struct te_pair *p = calloc(2, sizeof(*p));
	int tries;

	assert_non_null(p);
	assert_int_equal(te_pair_open(&p[0], IBV_QPT_RC), 0);
	if (nic_of(p[0].s[1].qp)->n_linkq < 4 ||
	    !nic_of(p[0].s[1].qp)->use_gso) {
		te_pair_close(&p[0]);
		free(p);
		ur_skip("no steered receive queues or no GSO here\n");
	}
	for (tries = 0; tries < 256; tries++) {
		assert_int_equal(te_pair_open(&p[1], IBV_QPT_RC), 0);
		if (shard_of(p[1].s[1].qp) == shard_of(p[0].s[1].qp) &&
		    shard_of(p[1].s[0].qp) != shard_of(p[0].s[0].qp))
			break;
		te_pair_close(&p[1]);
	}
	assert_true(tries < 256);
	assert_int_equal(te_pair_connect(&p[0], NULL), 0);
	assert_int_equal(te_pair_connect(&p[1], NULL), 0);
	*state = p;
	return 0;
}

static int teardown(void **state)
{
	struct te_pair *p = *state;

	te_pair_close(&p[0]);
	te_pair_close(&p[1]);
	free(p);
	return 0;
}

/* n SENDs from side 0 to side 1 of p, receives posted first. */
static void post_sends(struct te_pair *p, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		assert_int_equal(te_post_recv(&p->s[1], i, i * MSG, MSG), 0);
	for (i = 0; i < n; i++) {
		memset(p->s[0].buf + i * MSG, (int)(i + 1), MSG);
		assert_int_equal(te_post_send(&p->s[0], IBV_WR_SEND, i,
					      i * MSG, MSG, 0, 0,
					      IBV_SEND_SIGNALED), 0);
	}
}

/* Every SEND of post_sends() completes on both sides, in order, with its
 * bytes. */
static void reap_sends(struct te_pair *p, unsigned int n)
{
	struct ibv_wc wc;
	unsigned int i, k;

	for (i = 0; i < n; i++) {
		assert_int_equal(te_poll(p->s[1].rcq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
		assert_int_equal(wc.byte_len, MSG);
		for (k = 0; k < MSG; k++)
			assert_int_equal(p->s[1].buf[i * MSG + k],
					 (uint8_t)(i + 1));
		assert_int_equal(te_poll(p->s[0].scq, &wc, T_TMO), 1);
		assert_int_equal(wc.status, IBV_WC_SUCCESS);
		assert_int_equal(wc.wr_id, i);
	}
}

static void test_each_qp_its_shard(void **state)
{
	struct te_pair *p = *state;
	struct ur_nic *nic = nic_of(p[0].s[1].qp);
	unsigned int a = shard_of(p[0].s[1].qp), b = shard_of(p[1].s[1].qp);
	uint64_t before[UR_MAX_RX_SHARDS], fwd = fwd_total(nic);
	unsigned int i, j;

	assert_int_equal(nic->n_shard, 4);
	for (j = 0; j < 2; j++) {
		unsigned int mine = j ? b : a;

		for (i = 0; i < nic->n_shard; i++)
			before[i] = rx_of(nic, i);
		post_sends(&p[j], N_MSG);
		reap_sends(&p[j], N_MSG);
		/* retransmissions may add some; no other shard sees any */
		assert_true(rx_of(nic, mine) - before[mine] >= N_MSG);
		for (i = 0; i < nic->n_shard; i++)
			if (i != mine)
				assert_int_equal(rx_of(nic, i), before[i]);
	}
	assert_int_equal(fwd_total(nic), fwd);
	/* what poll_cq of each receive CQ tries */
	assert_int_equal(atomic_load(&to_ur_cq(p[0].s[1].rcq)->rx_shards),
			 1ull << a);
	assert_int_equal(atomic_load(&to_ur_cq(p[1].s[1].rcq)->rx_shards),
			 1ull << b);
}

static void test_poll_leaves_other_shard(void **state)
{
	struct te_pair *p = *state;
	struct ur_nic *nic = nic_of(p[0].s[1].qp);
	pthread_mutex_t *lb = &nic->shard[shard_of(p[1].s[1].qp)].lock;
	uint64_t rx_b;

	pthread_mutex_lock(lb);
	rx_b = rx_of(nic, shard_of(p[1].s[1].qp));
	post_sends(&p[1], N_MSG);	/* they wait in B's socket */
	post_sends(&p[0], N_MSG);
	reap_sends(&p[0], N_MSG);
	/* B's shard received nothing while held */
	assert_int_equal(rx_of(nic, shard_of(p[1].s[1].qp)), rx_b);
	assert_int_equal(te_poll_none(p[1].s[1].rcq, 10), 0);
	pthread_mutex_unlock(lb);
	reap_sends(&p[1], N_MSG);
}

static void test_ack_train_one_qp(void **state)
{
	struct te_pair *p = *state;
	struct ur_nic *req = nic_of(p[0].s[0].qp), *rsp = nic_of(p[0].s[1].qp);
	pthread_mutex_t *l = &rsp->shard[shard_of(p[0].s[1].qp)].lock;
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	uint64_t fwd = fwd_total(req), acks;
	unsigned int round;

	for (round = 0; round < 8; round++) {
		acks = atomic_load(&req->cnt.stat[UR_STAT_ACK_RCVD]);
		/* both SENDs wait in the responder shard's socket, so one
		 * burst answers both and one reply batch holds both ACKs */
		pthread_mutex_lock(l);
		post_sends(&p[0], 1);
		post_sends(&p[1], 1);
		nanosleep(&ts, NULL);
		pthread_mutex_unlock(l);
		reap_sends(&p[0], 1);
		reap_sends(&p[1], 1);
		assert_true(atomic_load(&req->cnt.stat[UR_STAT_ACK_RCVD]) -
			    acks >= 2);
	}
	assert_int_equal(fwd_total(req), fwd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_each_qp_its_shard, setup,
						teardown),
		cmocka_unit_test_setup_teardown(test_poll_leaves_other_shard,
						setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_train_one_qp,
						setup_ack_train, teardown),
	};
	int rc;

	setenv("UROCE_LINK", "udp", 1);
	setenv("UROCE_RX_SHARDS", "4", 1);
	rc = ur_run_tests(tests);
	te_close_devices();
	return rc;
}
