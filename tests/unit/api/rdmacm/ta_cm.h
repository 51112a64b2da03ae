/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers shared by the rdma_cm unit tests (include after cmocka.h): the
 * loopback address, an RC QP for an id, the next event of a channel
 * checked for its type, the process's open fds for leak checks, and
 * librspreload's placeholder fd.
 */
#ifndef UR_TESTS_API_RDMACM_TA_CM_H
#define UR_TESTS_API_RDMACM_TA_CM_H

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

static inline struct sockaddr_in ta_lo(uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port) };

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* rdma_create_qp of a small RC QP on the id's default PD and CQs. */
static inline int ta_rc_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return rdma_create_qp(id, NULL, &qa);
}

/* The next event of ch within ms, which must be of type t. */
static inline struct rdma_cm_event *ta_event(struct rdma_event_channel *ch,
					     enum rdma_cm_event_type t, int ms)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;

	if (poll(&p, 1, ms) != 1)
		fail_msg("no %s within %d ms", rdma_event_str(t), ms);
	assert_int_equal(rdma_get_cm_event(ch, &ev), 0);
	if (ev->event != t)
		fail_msg("got %s (status %d), wanted %s",
			 rdma_event_str(ev->event), ev->status,
			 rdma_event_str(t));
	return ev;
}

/* Entries of /proc/self/fd (the directory's own fd included). */
static inline int ta_count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	while (d && readdir(d))
		n++;
	if (d)
		closedir(d);
	return n;
}

/*
 * The fewest fds open over 100 ms: the device tree's refresher opens a
 * file for a moment every 50 ms while traffic flows, so one sample may
 * count a descriptor that is no leak.
 */
static inline int ta_fewest_fds(void)
{
	int i, n, least = ta_count_fds();

	for (i = 0; i < 10; i++) {
		usleep(10000);
		n = ta_count_fds();
		if (n < least)
			least = n;
	}
	return least;
}

/*
 * librspreload opens a placeholder fd for the application, then calls
 * rsocket() or raccept(). This opens one with a free fd below it, as
 * another thread closing a file at that moment leaves; the caller closes
 * the placeholder. (The device tree's refresher may itself free a lower
 * fd between the two opens: then again.)
 */
static inline int ta_placeholder_over_hole(void)
{
	int hole, placeholder, tries;

	for (tries = 0; tries < 100; tries++) {
		hole = open("/dev/null", O_RDONLY);
		placeholder = open("/dev/null", O_RDONLY);
		assert_true(hole >= 0 && placeholder >= 0);
		close(hole);
		if (placeholder > hole)
			return placeholder;
		close(placeholder);
	}
	fail_msg("no placeholder above a hole in %d tries", tries);
	return -1;
}

#endif
