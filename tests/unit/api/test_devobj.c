/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * obj/device.c and util/config.c from the inside: address list parsing,
 * automatic addresses, thread-safe creation, and the re-roll the engine
 * asks for after EADDRINUSE.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "obj/device.h"
#include "util/config.h"

static void parse_addrs(void **state)
{
	union ur_sockaddr a[4];
	uint8_t v6[16];

	assert_int_equal(ur_config_parse_addrs("10.0.0.1", a, 4), 1);
	assert_int_equal(a[0].sa.sa_family, AF_INET);
	assert_int_equal(a[0].in.sin_addr.s_addr, htonl(0x0a000001));
	assert_int_equal(a[0].in.sin_port, 0);

	assert_int_equal(ur_config_parse_addrs(" fe80::1 ,, x, 1.2.3.4 ", a, 4),
			 2);
	assert_int_equal(a[0].sa.sa_family, AF_INET6);
	assert_int_equal(inet_pton(AF_INET6, "fe80::1", v6), 1);
	assert_memory_equal(&a[0].in6.sin6_addr, v6, 16);
	assert_int_equal(a[1].sa.sa_family, AF_INET);

	/* at most max entries */
	assert_int_equal(ur_config_parse_addrs("1.1.1.1,2.2.2.2,3.3.3.3", a, 2),
			 2);
	assert_int_equal(ur_config_parse_addrs("", a, 4), 0);
	assert_int_equal(ur_config_parse_addrs("1.2.3", a, 4), 0);
}

static void auto_addrs(void **state)
{
	union ur_sockaddr a, b;
	int same = 0;

	for (int i = 0; i < 64; i++) {
		uint32_t h;

		assert_int_equal(ur_config_auto_addr(&a), 0);
		assert_int_equal(a.sa.sa_family, AF_INET);
		h = ntohl(a.in.sin_addr.s_addr);
		assert_int_equal(h >> 24, 127);
		assert_true(((h >> 16) & 0xff) != 0);	/* not 127.0.0.0/16 */
		assert_true(h != 0x7fffffff);		/* not the broadcast */
		assert_int_equal(ur_config_auto_addr(&b), 0);
		same += a.in.sin_addr.s_addr == b.in.sin_addr.s_addr;
	}
	assert_true(same < 2);	/* 24 random bits */
}

static void *get_all_thread(void *arg)
{
	unsigned int n;

	return ur_device_get_all(&n);
}

static void create_once_and_reroll(void **state)
{
	pthread_t t[4];
	void *res[4];
	struct ur_device *devs;
	struct ibv_gid_entry e0, e1;
	uint64_t guid0;
	unsigned int n;

	unsetenv("UROCE_ADDRS");
	setenv("UROCE_NUM_DEVICES", "3", 1);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_create(&t[i], NULL, get_all_thread,
						NULL), 0);
	for (int i = 0; i < 4; i++)
		assert_int_equal(pthread_join(t[i], &res[i]), 0);
	devs = ur_device_get_all(&n);
	assert_non_null(devs);
	assert_int_equal(n, 3);
	for (int i = 0; i < 4; i++)
		assert_ptr_equal(res[i], devs);
	for (unsigned int i = 0; i < n; i++) {
		assert_int_equal(devs[i].index, i);
		assert_int_equal(devs[i].num_gids, 1);
		assert_true(devs[i].gids[0].valid);
		assert_int_equal(devs[i].gids[0].addr.sa.sa_family, AF_INET);
	}
	assert_false(ur_sockaddr_same_host(&devs[0].gids[0].addr,
					   &devs[1].gids[0].addr));

	assert_int_equal(ur_device_gid_entry(&devs[0], 1, 0, &e0), 0);
	guid0 = devs[0].node_guid;
	pthread_mutex_lock(&devs[0].lock);
	assert_int_equal(ur_device_reroll_auto_addr(&devs[0]), 0);
	pthread_mutex_unlock(&devs[0].lock);
	assert_int_equal(ur_device_gid_entry(&devs[0], 1, 0, &e1), 0);
	assert_memory_not_equal(e0.gid.raw, e1.gid.raw, 16);
	assert_int_equal(e1.gid.raw[12], 127);
	assert_true(devs[0].node_guid != guid0);
	/* the bind address follows the GID */
	assert_memory_equal(&devs[0].gids[0].addr.in.sin_addr,
			    e1.gid.raw + 12, 4);
}

/* A configured GID 0 is never changed behind the user's back. */
static void reroll_configured(void **state)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		/* the configuration is read once per process: a fresh one */
		setenv("UROCE_ADDRS", "127.0.9.9", 1);
		execl("/proc/self/exe", "t_devobj", "--configured", NULL);
		_exit(99);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static int configured_main(void)
{
	struct ur_device *d;
	unsigned int n;
	int rc;

	d = ur_device_get_all(&n);
	if (!d || n < 1 || !d[0].gids[0].valid)
		return 1;
	pthread_mutex_lock(&d[0].lock);
	rc = ur_device_reroll_auto_addr(&d[0]);
	pthread_mutex_unlock(&d[0].lock);
	if (rc != -EADDRNOTAVAIL)
		return 2;
	if (d[0].gids[0].addr.in.sin_addr.s_addr != htonl(0x7f000909))
		return 3;
	return 0;
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(parse_addrs),
		cmocka_unit_test(auto_addrs),
		cmocka_unit_test(create_once_and_reroll),
		cmocka_unit_test(reroll_configured),
	};

	if (argc > 1 && !strcmp(argv[1], "--configured"))
		return configured_main();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
