/* SPDX-License-Identifier: BSD-2-Clause */
#include <arpa/inet.h>
#include <poll.h>
#include <string.h>

#include "tl_util.h"
#include "util/random.h"
#include "util/time.h"

void tl_rand_v4(union ur_sockaddr *s, uint16_t port)
{
	uint32_t r = ur_random_u32() & 0xffffff;

	if (!r || r == 0xffffff)
		r = 0x010203;
	memset(s, 0, sizeof(*s));
	s->in.sin_family = AF_INET;
	s->in.sin_port = htons(port);
	s->in.sin_addr.s_addr = htonl(0x7f000000u | r);
}

int tl_send_buf(struct ur_link *l, const union ur_sockaddr *dst,
		const void *buf, size_t len, uint16_t gso)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct ur_txd d = { .dst = dst, .iov = &iov, .iovcnt = 1,
			    .gso_size = gso };

	return ur_link_send(l, &d, 1);
}

int tl_recv_wait(struct ur_link *l, struct ur_rxd *d, unsigned int max,
		 int ms)
{
	struct pollfd p = { .fd = ur_link_fd(l), .events = POLLIN };
	uint64_t end = ur_now_ns() + (uint64_t)ms * 1000000ull;
	int n;

	while ((n = ur_link_recv(l, d, max)) == 0 && ur_now_ns() < end)
		poll(&p, 1, 1);
	return n;
}
