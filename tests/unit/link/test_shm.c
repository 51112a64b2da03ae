/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The same-host rings (link/shm.c) under the link's facade: datagrams
 * between two links of this host go through the rings, whole and in
 * order, with the addresses a socket would report; a link without rings
 * is reached by UDP; GSO trains arrive as their datagrams; a sleeping
 * receiver is woken by the doorbell; concurrent senders lose nothing that
 * is not counted; a dead owner's ring is left behind and the address
 * works again for the next owner; the fault stage applies to the rings.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "link/link.h"
#include "link/params.h"
#include "tl_util.h"
#include "util/random.h"
#include "util/time.h"

static int open_link(const union ur_sockaddr *bind, int same_host,
		     const char *fault, struct ur_link **out)
{
	struct ur_link_config c;

	memset(&c, 0, sizeof(c));
	c.bind = *bind;
	c.use_gso = 1;
	c.use_gro = 1;
	c.same_host = same_host;
	c.fault = fault;
	return ur_link_open(&c, out);
}

/* A link on a random loopback address and an ephemeral port. */
static struct ur_link *link_new(int same_host, const char *fault,
				union ur_sockaddr *addr)
{
	union ur_sockaddr s;
	struct ur_link *l;

	tl_rand_v4(&s, 0);
	assert_int_equal(open_link(&s, same_host, fault, &l), 0);
	assert_int_equal(ur_link_local_addr(l, 0, addr), 0);
	return l;
}

static struct ur_link_stats stats(struct ur_link *l)
{
	struct ur_link_stats st;

	ur_link_get_stats(l, &st);
	return st;
}

/* Datagram i: its length, then bytes that say i and their offset. */
static size_t fill(uint8_t *buf, uint32_t i)
{
	size_t len = 16 + (i * 37u) % 4000u, k;

	for (k = 0; k < len; k++)
		buf[k] = (uint8_t)(i * 131u + k);
	memcpy(buf, &i, 4);
	return len;
}

static void check(const struct ur_rxd *d, uint32_t want)
{
	uint8_t buf[4096];
	size_t len = fill(buf, want);

	assert_int_equal(d->len, len);
	assert_memory_equal(d->data, buf, len);
}

static void test_exchange(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct ur_link_stats sa, sb;
	uint8_t buf[4096];
	struct ur_rxd d[64];
	uint32_t i, got = 0;
	int n, k;

	for (i = 0; i < 1000; i++) {
		assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, i), 0), 1);
		while ((n = ur_link_recv(b, d, 64)) > 0) {
			for (k = 0; k < n; k++, got++) {
				check(&d[k], got);
				/* what a socket would say of it */
				assert_true(d[k].src.in.sin_addr.s_addr ==
					    aa.in.sin_addr.s_addr);
				assert_true(d[k].src.in.sin_port ==
					    aa.in.sin_port);
				assert_true(d[k].dst.in.sin_addr.s_addr ==
					    ba.in.sin_addr.s_addr);
				assert_int_equal(d[k].ttl, 64);
			}
		}
	}
	while (got < 1000 && (n = tl_recv_wait(b, d, 64, 200)) > 0)
		for (k = 0; k < n; k++, got++)
			check(&d[k], got);
	assert_int_equal(got, 1000);
	sa = stats(a);
	sb = stats(b);
	assert_int_equal(sa.shm_tx_pkts, 1000);
	assert_int_equal(sa.tx_pkts, 1000);
	assert_int_equal(sb.shm_rx_pkts, 1000);
	assert_int_equal(sb.rx_pkts, 1000);
	assert_int_equal(sb.shm_full_drops, 0);
	ur_link_close(a);
	ur_link_close(b);
}

/* A peer without rings (UROCE_LINK=udp) is reached by UDP, and a sender
 * without them sends by UDP to one that has them. */
static void test_udp_peer(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(0, NULL, &ba);
	uint8_t buf[4096];
	struct ur_rxd d[4];

	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 7), 0), 1);
	assert_int_equal(tl_recv_wait(b, d, 4, 500), 1);
	check(&d[0], 7);
	assert_int_equal(tl_send_buf(b, &aa, buf, fill(buf, 8), 0), 1);
	assert_int_equal(tl_recv_wait(a, d, 4, 500), 1);
	check(&d[0], 8);
	assert_int_equal(stats(a).shm_tx_pkts, 0);
	assert_int_equal(stats(a).shm_rx_pkts, 0);
	ur_link_close(a);
	ur_link_close(b);
}

/* A GSO train is cut into its datagrams, each in a slot. */
static void test_gso_train(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	static uint8_t buf[10 * 1000 + 300];
	struct ur_rxd d[64];
	unsigned int k, got = 0;
	int n;

	for (k = 0; k < sizeof(buf); k++)
		buf[k] = (uint8_t)(k * 7u);
	assert_int_equal(tl_send_buf(a, &ba, buf, sizeof(buf), 1000), 1);
	while (got < 11 && (n = tl_recv_wait(b, d, 64, 200)) > 0) {
		for (k = 0; k < (unsigned int)n; k++, got++) {
			assert_int_equal(d[k].len, got < 10 ? 1000 : 300);
			assert_memory_equal(d[k].data, buf + got * 1000,
					    d[k].len);
		}
	}
	assert_int_equal(got, 11);
	assert_int_equal(stats(a).shm_tx_pkts, 11);
	ur_link_close(a);
	ur_link_close(b);
}

/* A receiver about to sleep arms; the next datagram rings its fd. */
static void test_doorbell(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct pollfd p = { .events = POLLIN };
	uint8_t buf[4096];
	struct ur_rxd d[4];

	assert_false(ur_link_wait_arm(b));
	p.fd = ur_link_fd(b);
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 1), 0), 1);
	assert_int_equal(poll(&p, 1, 1000), 1);
	ur_link_wait_disarm(b);
	assert_int_equal(stats(a).shm_doorbells, 1);
	/* the doorbell itself is no datagram */
	assert_int_equal(tl_recv_wait(b, d, 4, 100), 1);
	check(&d[0], 1);
	assert_int_equal(ur_link_recv(b, d, 4), 0);
	/* armed with a datagram already there: do not sleep */
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 2), 0), 1);
	assert_true(ur_link_wait_arm(b));
	/* not armed: no doorbell */
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 3), 0), 1);
	assert_int_equal(stats(a).shm_doorbells, 1);
	ur_link_close(a);
	ur_link_close(b);
}

/*
 * Regression: the owner's poll_cq read the doorbell off the socket (and
 * drained the ring) while its progress thread slept armed; the next
 * datagram found `waiting` taken by the first doorbell and rang nothing,
 * so the thread slept through it until a retransmit timer (fio's SEND
 * pairs ran out of retries). Every datagram must ring while the sleeper
 * has not woken.
 */
static void test_regress_stolen_doorbell(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct pollfd p = { .events = POLLIN };
	uint8_t buf[4096];
	struct ur_rxd d[4];

	p.fd = ur_link_fd(b);
	assert_false(ur_link_wait_arm(b));	/* the thread sleeps */
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 1), 0), 1);
	assert_int_equal(poll(&p, 1, 1000), 1);
	/* another thread of b takes the doorbell and the datagram */
	assert_int_equal(tl_recv_wait(b, d, 4, 100), 1);
	check(&d[0], 1);
	assert_int_equal(ur_link_recv(b, d, 4), 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	/* the sleeper is still asleep: the next datagram wakes it */
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 2), 0), 1);
	assert_int_equal(poll(&p, 1, 1000), 1);
	ur_link_wait_disarm(b);
	assert_int_equal(stats(a).shm_doorbells, 2);
	ur_link_close(a);
	ur_link_close(b);
}

/*
 * Regression: one send of several descriptors to one peer puts them into
 * its ring one after the other, and rang the doorbell at the first put
 * that found the owner asleep, not again for the others of the batch.
 * The doorbell woke the owner's thread at once (the other core), which
 * drained the first datagrams, armed again and slept, while the next
 * descriptors of the batch landed after its arm without a doorbell: they
 * sat in the ring until a timer woke the thread (16-128 KiB ib_write_lat
 * waited for the recovery probe, 0.5 ms, in a quarter of its round trips
 * and resent without loss). The owner here is a thread that sleeps armed
 * and drains when woken, as the progress thread does; a wait that ends by
 * its timeout with datagrams in the ring is a lost wake-up.
 */
#define BATCHES 1500
#define BATCH_TRAINS 4
#define TRAIN_SEG 4000
#define TRAIN_SEGS 15

struct sleeper {
	struct ur_link *l;
	atomic_uint got;		/* datagrams received */
	atomic_uint lost_wakes;		/* waits timed out over datagrams */
	atomic_bool stop;
};

static unsigned int drain(struct ur_link *l)
{
	struct ur_rxd d[64];
	unsigned int total = 0;
	int n;

	while ((n = ur_link_recv(l, d, 64)) > 0)
		total += (unsigned int)n;
	return total;
}

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;
	struct pollfd p = { .fd = ur_link_fd(s->l), .events = POLLIN };
	unsigned int n;
	int r;

	while (!atomic_load(&s->stop)) {
		if (ur_link_wait_arm(s->l)) {
			atomic_fetch_add(&s->got, drain(s->l));
			continue;
		}
		r = poll(&p, 1, 20);
		ur_link_wait_disarm(s->l);
		n = drain(s->l);
		if (!r && n)
			atomic_fetch_add(&s->lost_wakes, 1);
		atomic_fetch_add(&s->got, n);
	}
	return NULL;
}

static void test_regress_doorbell_after_last_put(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct sleeper s = { .l = link_new(1, NULL, &ba) };
	static uint8_t train[TRAIN_SEG * TRAIN_SEGS];
	uint8_t small[64] = { 0 };
	struct iovec iov[1 + BATCH_TRAINS];
	struct ur_txd d[1 + BATCH_TRAINS];
	unsigned int i, k, want = 0;
	uint64_t end;
	pthread_t t;

	memset(d, 0, sizeof(d));
	iov[0] = (struct iovec){ .iov_base = small, .iov_len = sizeof(small) };
	d[0] = (struct ur_txd){ .dst = &ba, .iov = &iov[0], .iovcnt = 1 };
	for (k = 1; k <= BATCH_TRAINS; k++) {
		iov[k] = (struct iovec){ .iov_base = train,
					 .iov_len = sizeof(train) };
		d[k] = (struct ur_txd){ .dst = &ba, .iov = &iov[k],
					.iovcnt = 1, .gso_size = TRAIN_SEG };
	}
	assert_int_equal(pthread_create(&t, NULL, sleeper_main, &s), 0);
	end = ur_now_ns() + 3000000000ull;	/* bounded, whatever the load */
	for (i = 0; i < BATCHES && ur_now_ns() < end; i++) {
		assert_int_equal(ur_link_send(a, d, 1 + BATCH_TRAINS),
				 1 + BATCH_TRAINS);
		want += 1 + BATCH_TRAINS * TRAIN_SEGS;
		/* one batch at a time: the sleeper drains it, then sleeps */
		while (atomic_load(&s.got) < want && ur_now_ns() < end)
			;
	}
	atomic_store(&s.stop, true);
	pthread_join(t, NULL);
	assert_int_equal(stats(s.l).shm_full_drops, 0);
	assert_int_equal(atomic_load(&s.got), want);
	assert_int_equal(atomic_load(&s.lost_wakes), 0);
	ur_link_close(a);
	ur_link_close(s.l);
}

#define SENDERS 4
#define PER_SENDER 20000

struct sender {
	struct ur_link *l;
	const union ur_sockaddr *dst;
	uint32_t id;
};

static atomic_uint senders_done;

static void *sender_main(void *arg)
{
	struct sender *s = arg;
	uint32_t i, v[16];

	for (i = 0; i < PER_SENDER; i++) {
		v[0] = s->id;
		v[1] = i;
		tl_send_buf(s->l, s->dst, v, sizeof(v), 0);
	}
	atomic_fetch_add(&senders_done, 1);
	return NULL;
}

/* Threads of one process and a second process's link all send at once:
 * every datagram arrives once and in its sender's order, or is counted as
 * lost to the full ring. */
static void test_concurrent(void **state)
{
	union ur_sockaddr aa, ca, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *c = link_new(1, NULL, &ca);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct sender s[SENDERS];
	pthread_t t[SENDERS];
	uint32_t next[SENDERS] = { 0 }, got = 0, v[16];
	uint64_t lost;
	struct ur_rxd d[64];
	int n, k, i;

	atomic_store(&senders_done, 0);
	for (i = 0; i < SENDERS; i++) {
		s[i] = (struct sender){ i & 1 ? c : a, &ba, (uint32_t)i };
		assert_int_equal(pthread_create(&t[i], NULL, sender_main,
						&s[i]), 0);
	}
	for (;;) {
		/* read before the receive: an empty one after the last
		 * sender finished means the ring holds nothing more */
		bool all_done = atomic_load(&senders_done) == SENDERS;

		n = ur_link_recv(b, d, 64);
		assert_true(n >= 0);
		for (k = 0; k < n; k++, got++) {
			assert_int_equal(d[k].len, sizeof(v));
			memcpy(v, d[k].data, sizeof(v));
			assert_true(v[0] < SENDERS);
			/* FIFO per sender: never back, never twice */
			assert_true(v[1] >= next[v[0]]);
			next[v[0]] = v[1] + 1;
		}
		if (!n && all_done)
			break;
	}
	for (i = 0; i < SENDERS; i++)
		pthread_join(t[i], NULL);
	lost = stats(b).shm_full_drops;
	assert_int_equal(got + lost, (uint64_t)SENDERS * PER_SENDER);
	/* the lost ones never entered the ring */
	assert_int_equal(stats(a).shm_tx_pkts + stats(c).shm_tx_pkts, got);
	assert_int_equal(stats(b).shm_rx_pkts, got);
	ur_link_close(a);
	ur_link_close(b);
	ur_link_close(c);
}

/* The ring file of a link on addr (the name shm.c gives it). */
static void ring_path(const union ur_sockaddr *addr, char *buf, size_t len)
{
	char host[INET_ADDRSTRLEN];
	struct stat st;

	assert_int_equal(stat("/proc/self/ns/net", &st), 0);
	inet_ntop(AF_INET, &addr->in.sin_addr, host, sizeof(host));
	snprintf(buf, len, "/dev/shm/uroce-%u-%lu-%s-%u",
		 (unsigned int)getuid(), (unsigned long)st.st_ino, host,
		 ntohs(addr->in.sin_port));
}

/* A killed owner: sends to it neither hang nor crash (its ring fills,
 * the rest goes nowhere, as to a dead host), its ring file goes away, and
 * the next owner of the address gets the datagrams again. */
static void test_dead_owner(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b;
	int pfd[2], status;
	uint8_t buf[4096];
	struct ur_rxd d[4];
	char path[128];
	struct stat st;
	pid_t pid;
	int i;

	assert_int_equal(pipe(pfd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct ur_link *l = link_new(1, NULL, &ba);

		if (write(pfd[1], &ba, sizeof(ba)) != sizeof(ba))
			_exit(1);
		pause();
		ur_link_close(l);
		_exit(0);
	}
	assert_int_equal(read(pfd[0], &ba, sizeof(ba)), sizeof(ba));
	ring_path(&ba, path, sizeof(path));
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 0), 0), 1);
	assert_int_equal(stats(a).shm_tx_pkts, 1);
	kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* more than a ring holds */
	for (i = 0; i < 2100; i++)
		assert_int_equal(tl_send_buf(a, &ba, buf, 64, 0), 1);
	assert_true(stats(a).shm_tx_pkts < 2100);
	/* the sender saw the owner gone and removed its file */
	assert_int_not_equal(stat(path, &st), 0);
	/* a new owner of the same address */
	assert_int_equal(open_link(&ba, 1, NULL, &b), 0);
	assert_int_equal(stat(path, &st), 0);
	/* the dead ring is looked up again at once or within
	 * UR_SHM_ABSENT_NS: whichever path, the datagram arrives */
	for (i = 0; i < 300; i++) {
		assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, 5), 0), 1);
		if (tl_recv_wait(b, d, 4, 10) > 0)
			break;
	}
	assert_true(i < 300);
	check(&d[0], 5);
	ur_link_close(b);
	assert_int_not_equal(stat(path, &st), 0);
	ur_link_close(a);
	close(pfd[0]);
	close(pfd[1]);
}

/*
 * Regression: a ring file another process is still creating (allocated
 * and zero-filled, its owner not yet written) was taken for a dead
 * owner's by the sweep a device open runs, and unlinked: that process's
 * ring was gone for good. The sweep leaves a ring with no owner yet.
 */
static void test_regress_sweep_spares_ring_being_created(void **state)
{
	char path[128];
	struct stat st;
	union ur_sockaddr fake, aa;
	struct ur_link *a;
	int fd;

	(void)state;
	memset(&fake, 0, sizeof(fake));
	fake.in.sin_family = AF_INET;
	fake.in.sin_addr.s_addr = htonl(0x7f0000fe);	/* 127.0.0.254 */
	fake.in.sin_port = htons(1);
	ring_path(&fake, path, sizeof(path));
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 1 << 20), 0);	/* zeros: no owner */
	close(fd);
	a = link_new(1, NULL, &aa);	/* opening a link sweeps */
	assert_int_equal(stat(path, &st), 0);
	ur_link_close(a);
	unlink(path);
}

/* The fault stage sits above the rings: its drops are counted and the
 * rings carry only the rest. */
static void test_fault_on_rings(void **state)
{
	union ur_sockaddr aa, ba;
	struct ur_link *a = link_new(1, "seed=3,drop=0.5", &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct ur_link_stats st;
	uint8_t buf[4096];
	struct ur_rxd d[64];
	unsigned int got = 0;
	int i, n;

	for (i = 0; i < 400; i++) {
		tl_send_buf(a, &ba, buf, fill(buf, (uint32_t)i), 0);
		while ((n = ur_link_recv(b, d, 64)) > 0)
			got += (unsigned int)n;
	}
	while ((n = tl_recv_wait(b, d, 64, 100)) > 0)
		got += (unsigned int)n;
	st = stats(a);
	assert_true(st.fi_dropped > 100 && st.fi_dropped < 300);
	assert_int_equal(st.shm_tx_pkts, 400 - st.fi_dropped);
	assert_int_equal(got, 400 - st.fi_dropped);
	ur_link_close(a);
	ur_link_close(b);
}

/* A stream through the ring does not starve the socket: with the ring
 * full, a datagram from a UDP-only peer comes out within the turn. */
static void test_socket_turn(void **state)
{
	union ur_sockaddr aa, ba, ca;
	struct ur_link *a = link_new(1, NULL, &aa);
	struct ur_link *b = link_new(1, NULL, &ba);
	struct ur_link *c = link_new(0, NULL, &ca);
	uint8_t buf[4096];
	struct ur_rxd d[1];
	unsigned int i, calls = 0;
	bool udp = false;
	int n;

	(void)state;
	for (i = 0; i < 200; i++)
		assert_int_equal(tl_send_buf(a, &ba, buf, fill(buf, i), 0), 1);
	assert_int_equal(tl_send_buf(c, &ba, buf, fill(buf, 999), 0), 1);
	usleep(10000);	/* lo delivers at once; leave it room anyway */
	while (!udp && calls < UR_SHM_SOCK_TURN) {
		n = ur_link_recv(b, d, 1);
		calls++;
		if (n == 1 && !d[0].ring) {
			check(&d[0], 999);
			udp = true;
		}
	}
	assert_true(udp);
	ur_link_close(a);
	ur_link_close(b);
	ur_link_close(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exchange),
		cmocka_unit_test(test_udp_peer),
		cmocka_unit_test(test_gso_train),
		cmocka_unit_test(test_doorbell),
		cmocka_unit_test(test_regress_stolen_doorbell),
		cmocka_unit_test(test_regress_doorbell_after_last_put),
		cmocka_unit_test(test_concurrent),
		cmocka_unit_test(test_dead_owner),
		cmocka_unit_test(test_regress_sweep_spares_ring_being_created),
		cmocka_unit_test(test_fault_on_rings),
		cmocka_unit_test(test_socket_turn),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
