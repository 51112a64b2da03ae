/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Registration probe (mem_probe.h). A NIC pins the pages of a new MR
 * (get_user_pages, writable when the access flags allow any write), and
 * the pin fails with EFAULT where nothing is mapped, the mapping is not
 * readable, or it is not writable and the MR needs writing. uroce asks the
 * kernel the same question with MADV_POPULATE_READ / MADV_POPULATE_WRITE
 * (Linux 5.14): the same page walk as a pin, with the same side effects
 * (pages are faulted in, copy-on-write is broken), and the same refusals.
 * Measured for 1 GiB here: 25-33 ms when the pages were already touched,
 * 240-290 ms when they were not (zeroing them is most of it); a NIC takes
 * about 80 ms. A walk of /proc/self/maps costs 0.25-0.5 ms for any size
 * but 40 us even for 64 KiB (the file is generated whole), misses what
 * only a fault finds (a file mapping past its end), and snapshots a list
 * that another thread may be changing: it is the fallback for kernels
 * without MADV_POPULATE_*, and what tells "not mapped" from "out of
 * memory" when the kernel says ENOMEM. mincore() sees mapping but not
 * protection.
 *
 * Memory that goes away after registration (munmap, mprotect) is the
 * engine's business: its accesses are fault-safe (util/memguard.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "obj/mem_probe.h"
#include "obj/obj_priv.h"

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define UR_ACCESS_PINS_WRITABLE                                                \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                    \
	 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND)

/* One line of /proc/self/maps: "lo-hi perms ...". */
static bool maps_line(const char *s, uintptr_t *lo, uintptr_t *hi,
		      char perm[2])
{
	char *end;

	*lo = strtoull(s, &end, 16);
	if (*end != '-')
		return false;
	*hi = strtoull(end + 1, &end, 16);
	if (*end != ' ' || !end[1] || !end[2])
		return false;
	perm[0] = end[1];
	perm[1] = end[2];
	return true;
}

/*
 * 0 if [lo, hi) is covered by mappings without a gap, readable and, if
 * write, writable; -EFAULT if not; -errno if the file cannot be read.
 */
static int maps_walk(uintptr_t lo, uintptr_t hi, bool write)
{
	char buf[4096], line[256];
	size_t ll = 0;
	uintptr_t cur = lo;
	ssize_t n;
	int fd, ret = -EFAULT;

	fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (cur < hi && (n = read(fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < n && cur < hi; i++) {
			uintptr_t a, b;
			char perm[2];

			if (buf[i] != '\n') {
				if (ll < sizeof(line) - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = '\0';
			ll = 0;
			if (!maps_line(line, &a, &b, perm) || b <= cur)
				continue;
			if (a > cur || perm[0] != 'r' ||
			    (write && perm[1] != 'w'))
				goto out;	/* a hole or a protection */
			cur = b;
		}
	}
	if (cur >= hi)
		ret = 0;
out:
	close(fd);
	return ret;
}

/* The walk as the only check: a maps file we cannot read refuses
 * nothing (the engine's accesses are fault-safe anyway). */
static int probe_by_maps(uintptr_t lo, uintptr_t hi, bool write)
{
	return maps_walk(lo, hi, write) == -EFAULT ? -EFAULT : 0;
}

/* Whether this kernel knows MADV_POPULATE_READ (and no sandbox forbids
 * it): asked once, on a page that is certainly mapped and readable (our
 * own stack). */
static bool populate_supported(void)
{
	static _Atomic int known;	/* 0 unknown, 1 yes, -1 no */
	long pg = sysconf(_SC_PAGESIZE);
	char probe;
	uintptr_t p = (uintptr_t)&probe & ~(uintptr_t)(pg - 1);

	if (!known)
		known = madvise((void *)p, (size_t)pg, MADV_POPULATE_READ) ? -1 :
									      1;
	return known > 0;
}

int ur_mem_probe(const void *addr, size_t length, unsigned int access)
{
	bool write = access & UR_ACCESS_PINS_WRITABLE;
	uintptr_t pg = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t lo = (uintptr_t)addr & ~(pg - 1);
	uintptr_t hi = ((uintptr_t)addr + length + pg - 1) & ~(pg - 1);
	int tries = 8, err;

	if (access & IBV_ACCESS_ON_DEMAND)
		return 0;
	if (hi <= lo)
		return -EFAULT;	/* reaches the top of the address space */
	if (!populate_supported())
		return probe_by_maps(lo, hi, write);
	while (madvise((void *)lo, hi - lo, write ? MADV_POPULATE_WRITE :
						    MADV_POPULATE_READ)) {
		err = errno;
		if ((err == EINTR || err == EAGAIN) && --tries)
			continue;
		if (err == ENOMEM)	/* not mapped, or really no memory */
			return maps_walk(lo, hi, write) ? -EFAULT : -ENOMEM;
		if (err == EINVAL || err == EFAULT || err == EHWPOISON)
			return -EFAULT;	/* protection, VM_IO/PFNMAP; SIGBUS
					 * (past a file's end); poison */
		return probe_by_maps(lo, hi, write);	/* EPERM: a sandbox */
	}
	return 0;
}
