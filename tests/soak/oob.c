/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The out-of-band TCP channel between the two soak processes: one exchange
 * of QP numbers, PSNs, GIDs and keys, then one small exchange per round
 * barrier. Both sides write first and then read, so an exchange is also a
 * barrier.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "soak.h"

static int set_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int soak_oob_listen(const char *addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };
	int one = 1, lfd, fd;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "soak: bad listen address %s\n", addr);
		return -1;
	}
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -1;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("soak: listen");
		close(lfd);
		return -1;
	}
	/* the peer is started right after us: a minute is plenty */
	struct pollfd p = { .fd = lfd, .events = POLLIN };

	if (poll(&p, 1, 60000) != 1) {
		fprintf(stderr, "soak: no peer connected\n");
		close(lfd);
		return -1;
	}
	fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	close(lfd);
	if (fd >= 0)
		set_nodelay(fd);
	return fd;
}

int soak_oob_connect(const char *addr, int port, int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)port) };

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "soak: bad peer address %s\n", addr);
		return -1;
	}
	for (int i = 0; i < timeout_s * 10; i++) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (fd < 0)
			return -1;
		if (!connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
			set_nodelay(fd);
			return fd;
		}
		close(fd);
		usleep(100000);	/* the listener is still starting */
	}
	fprintf(stderr, "soak: cannot connect to %s:%d\n", addr, port);
	return -1;
}

static int io_all(int fd, void *buf, size_t len, bool wr, int timeout_ms)
{
	uint8_t *p = buf;

	while (len) {
		struct pollfd pf = { .fd = fd, .events = wr ? POLLOUT : POLLIN };
		ssize_t n;

		if (poll(&pf, 1, timeout_ms) != 1) {
			errno = ETIMEDOUT;
			return -1;
		}
		n = wr ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			if (!n)
				errno = EPIPE;	/* the peer went away */
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

int soak_oob_xchg(int fd, const void *out, void *in, size_t len,
		  int timeout_ms)
{
	if (io_all(fd, (void *)out, len, true, timeout_ms))
		return -1;
	return io_all(fd, in, len, false, timeout_ms);
}
