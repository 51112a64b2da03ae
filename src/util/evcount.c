/* SPDX-License-Identifier: BSD-2-Clause */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "util/evcount.h"
#include "util/log.h"

int ur_evcount_open(void)
{
	return eventfd(0, EFD_SEMAPHORE | EFD_CLOEXEC);
}

void ur_evcount_add(int fd)
{
	uint64_t one = 1;

	/* fails only at a count of 2^64-2 */
	if (write(fd, &one, sizeof(one)) != sizeof(one))
		ur_warn("event counter write failed");
}

void ur_evcount_take(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t v;

	/* The poll keeps a broken invariant from becoming a hang with the
	 * queue's lock held; the count is non-zero whenever it holds. */
	if (poll(&p, 1, 0) != 1 || !(p.revents & POLLIN) ||
	    read(fd, &v, sizeof(v)) != sizeof(v))
		ur_warn("event counter out of step with its queue");
}

int ur_evcount_wait(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	int fl = fcntl(fd, F_GETFL);
	int n;

	if (fl < 0)
		return -errno;
	n = poll(&p, 1, (fl & O_NONBLOCK) ? 0 : -1);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -EAGAIN;
	return 0;
}
