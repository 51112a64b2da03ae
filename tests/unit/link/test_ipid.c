/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What IPv4 ID and DF the kernel puts on the link's datagrams (the engine
 * computes every ICRC with ID 0, see link/udp.c): capture on lo with tshark
 * while the link sends single datagrams, a batch, and a GSO train; every
 * packet must carry DF and ID 0. Skipped without tshark or root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "skip.h"
#include "link/link.h"
#include "util/random.h"

#define NPKT 6	/* 3 singles, a batch of 2, one train (one skb on lo) */

static bool file_has(const char *path, const char *needle)
{
	char buf[4096];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int c, n = 0;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

/* 3 single datagrams, a batch of 2, one GSO train of 4 segments: NPKT
 * packets on lo (the train travels as one). */
static void send_set(struct ur_link *a, const union ur_sockaddr *sb,
		     uint8_t *buf, size_t len)
{
	struct iovec iov[3];
	struct ur_txd t[2];
	int i;

	for (i = 0; i < 3; i++) {
		iov[0] = (struct iovec){ buf, 100 + (size_t)i * 1000 };
		t[0] = (struct ur_txd){ .dst = sb, .iov = iov, .iovcnt = 1 };
		assert_int_equal(ur_link_send(a, t, 1), 1);
	}
	iov[0] = (struct iovec){ buf, 64 };
	iov[1] = (struct iovec){ buf, 1024 };
	iov[2] = (struct iovec){ buf, len };
	t[0] = (struct ur_txd){ .dst = sb, .iov = &iov[0], .iovcnt = 2 };
	t[1] = (struct ur_txd){ .dst = sb, .iov = &iov[2], .iovcnt = 1,
				.gso_size = 1000 };
	assert_int_equal(ur_link_send(a, &t[0], 1), 1);
	/* second of the batch: a plain datagram; then the 4-segment train */
	t[0].iovcnt = 1;
	assert_int_equal(ur_link_send(a, t, 2), 2);
}

static void test_ipv4_id_df(void **state)
{
	char dir[] = "/tmp/ur_ipid.XXXXXX", out[64], err[64], cmd[512];
	static uint8_t buf[4000];
	union ur_sockaddr sa, sb;
	struct ur_link_config c;
	struct ur_link *a, *b;
	unsigned int id, df;
	int i, pass, got = 0;
	FILE *f;

	if (geteuid() || system("command -v tshark >/dev/null 2>&1")) {
		ur_skip("no tshark or not root\n");
	}
	memset(&c, 0, sizeof(c));
	c.bind.in.sin_family = AF_INET;
	c.bind.in.sin_addr.s_addr = htonl(0x7f000000u |
					  (ur_random_u32() & 0xfff000) | 1);
	c.use_gso = 1;
	c.use_gro = 1;
	assert_int_equal(ur_link_open(&c, &a), 0);
	c.bind.in.sin_addr.s_addr = htonl(ntohl(c.bind.in.sin_addr.s_addr) + 1);
	c.use_gro = 0;
	assert_int_equal(ur_link_open(&c, &b), 0);
	ur_link_local_addr(a, 0, &sa);
	ur_link_local_addr(b, 0, &sb);

	assert_non_null(mkdtemp(dir));
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(err, sizeof(err), "%s/err", dir);
	snprintf(cmd, sizeof(cmd),
		 "timeout 20 tshark -l -i lo -f 'udp and dst port %u' -c %d "
		 "-T fields -e ip.id -e ip.flags.df >%s 2>%s &",
		 ntohs(sb.in.sin_port), NPKT, out, err);
	assert_int_equal(system(cmd), 0);
	for (i = 0; i < 150 && !file_has(err, "Capturing on"); i++)
		sleep_ms(100);
	assert_true(file_has(err, "Capturing on"));
	sleep_ms(300);

	/* tshark may start seeing lo a little after it says so (a loaded
	 * box): send the set again until it has NPKT packets (-c NPKT);
	 * every one of them must carry ID 0 and DF, whichever pass it is of */
	for (pass = 0; pass < 10 && count_lines(out) < NPKT; pass++) {
		send_set(a, &sb, buf, sizeof(buf));
		for (i = 0; i < 10 && count_lines(out) < NPKT; i++)
			sleep_ms(100);
	}
	f = fopen(out, "r");
	assert_non_null(f);
	while (fscanf(f, "%x %u", &id, &df) == 2) {
		assert_int_equal(id, 0);
		assert_int_equal(df, 1);
		got++;
	}
	fclose(f);
	assert_int_equal(got, NPKT);
	unlink(out);
	unlink(err);
	rmdir(dir);
	ur_link_close(a);
	ur_link_close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ipv4_id_df),
	};

	return ur_run_tests(tests);
}
