/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The host-wide side of an XRC domain opened on a file: what every uroce
 * process of this host that opened the same file on the same device must
 * agree on, kept in one registry file per domain in the runtime directory
 * (xrcd-<device>-<st_dev>-<st_ino>).
 *
 * The registry is an array of fixed records. A record is live while the
 * process that wrote it holds an open-file-description lock on its first
 * byte: the kernel drops that lock when the process exits, however it
 * exits, so a crashed member never keeps a domain alive or an SRQ number
 * taken, and pids (reused, or of another pid namespace) play no part.
 * Each member keeps two descriptions of the file: one holds its records'
 * locks, the other asks F_OFD_GETLK about any record, its own included
 * (two descriptions conflict even within one process). Records are
 * written and scanned under flock() of the whole file, and under a mutex
 * too: the threads of one process share the description, which flock()
 * does not set against itself.
 *
 * What it decides: whether the domain exists on the host (ibv_open_xrcd's
 * O_CREAT and O_EXCL answer as the kernel's, whichever process opened the
 * file first) and XRC SRQ numbers unique across the domain's processes,
 * so that a request naming an SRQ of another member can be told from one
 * naming no SRQ at all. The last member out removes the file; a joiner
 * that locked a file already removed opens the path again. Files whose
 * members all died are removed by the next process that joins a domain
 * (never waiting for a busy one), as the device trees of dead processes
 * are.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "obj/obj_priv.h"
#include "util/log.h"
#include "util/rundir.h"

/* a bound on the file: members plus SRQs of one domain on one host */
#define XH_MAX_RECORDS 65536u

enum xh_kind { XH_FREE = 0, XH_MEMBER = 1, XH_SRQ = 2 };

struct xh_record {
	uint32_t kind;			/* enum xh_kind */
	uint32_t num;			/* XH_SRQ: the srq_num */
};

struct ur_xrc_host {
	pthread_mutex_t lock;		/* this process's threads, then flock */
	int fd;				/* holds this process's record locks */
	int qfd;			/* asks about any record's lock */
	uint32_t member;		/* our XH_MEMBER record */
	char path[PATH_MAX];
	char ring_prefix[PATH_MAX];	/* xsrq-<device>-<st_dev>-<st_ino> */
};

static int xh_lock_rec(int fd, uint32_t i, short type, int cmd)
{
	struct flock fl = {
		.l_type = type,
		.l_whence = SEEK_SET,
		.l_start = (off_t)i * sizeof(struct xh_record),
		.l_len = 1,
	};

	return fcntl(fd, cmd, &fl) ? -errno : 0;
}

static bool xh_live(const struct ur_xrc_host *h, uint32_t i)
{
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = (off_t)i * sizeof(struct xh_record),
		.l_len = 1,
	};

	/* an error reads as live: never hand out what may be taken */
	if (fcntl(h->qfd, F_OFD_GETLK, &fl))
		return true;
	return fl.l_type != F_UNLCK;
}

static uint32_t xh_count(const struct ur_xrc_host *h)
{
	struct stat st;

	if (fstat(h->fd, &st) || st.st_size < 0)
		return 0;
	return (uint32_t)(st.st_size / sizeof(struct xh_record));
}

/*
 * The whole table in one read (*n records; NULL when there are none or
 * on error). A FREE record is free without asking: records are written,
 * locked and unlocked under the flock the caller holds.
 */
static struct xh_record *xh_snapshot(const struct ur_xrc_host *h,
				     uint32_t *n)
{
	struct xh_record *t;
	size_t len;
	ssize_t got;

	*n = xh_count(h);
	if (*n > XH_MAX_RECORDS)
		*n = XH_MAX_RECORDS;
	len = (size_t)*n * sizeof(*t);
	t = *n ? malloc(len) : NULL;
	if (!t) {
		*n = 0;
		return NULL;
	}
	got = pread(h->fd, t, len, 0);
	if (got < 0)
		got = 0;
	*n = (uint32_t)((size_t)got / sizeof(*t));
	return t;
}

static int xh_write(const struct ur_xrc_host *h, uint32_t i,
		    const struct xh_record *r)
{
	ssize_t n = pwrite(h->fd, r, sizeof(*r),
			   (off_t)i * sizeof(struct xh_record));

	return n == (ssize_t)sizeof(*r) ? 0 : (n < 0 ? -errno : -EIO);
}

/* Whether a live record of that kind (and number, for SRQs) exists. */
static bool xh_find(const struct ur_xrc_host *h, enum xh_kind kind,
		    uint32_t num)
{
	uint32_t i, n;
	struct xh_record *t = xh_snapshot(h, &n);
	bool found = false;

	for (i = 0; i < n && !found; i++) {
		if (t[i].kind != kind || (kind == XH_SRQ && t[i].num != num))
			continue;
		found = xh_live(h, i);
	}
	free(t);
	return found;
}

/* Whether any record is live. */
static bool xh_any_live(const struct ur_xrc_host *h)
{
	uint32_t i, n;
	struct xh_record *t = xh_snapshot(h, &n);
	bool live = false;

	for (i = 0; i < n && !live; i++)
		live = t[i].kind != XH_FREE && xh_live(h, i);
	free(t);
	return live;
}

/* Writes a record into a free slot (or a new one) and locks it. */
static int xh_add(struct ur_xrc_host *h, enum xh_kind kind, uint32_t num,
		  uint32_t *slot)
{
	struct xh_record r = { .kind = kind, .num = num };
	struct xh_record *t;
	uint32_t i, n;
	int err;

	t = xh_snapshot(h, &n);
	for (i = 0; i < n; i++)
		if (t[i].kind == XH_FREE || !xh_live(h, i))
			break;
	free(t);
	if (i >= XH_MAX_RECORDS)
		return -ENOSPC;
	/* locked before it is written: a scan never sees it live and stale */
	err = xh_lock_rec(h->fd, i, F_WRLCK, F_OFD_SETLK);
	if (err)
		return err;
	err = xh_write(h, i, &r);
	if (err) {
		xh_lock_rec(h->fd, i, F_UNLCK, F_OFD_SETLK);
		return err;
	}
	*slot = i;
	return 0;
}

static void xh_remove(struct ur_xrc_host *h, uint32_t i)
{
	struct xh_record r = { .kind = XH_FREE };

	xh_write(h, i, &r);
	xh_lock_rec(h->fd, i, F_UNLCK, F_OFD_SETLK);
}

static void xh_close(struct ur_xrc_host *h)
{
	if (h->fd >= 0)
		close(h->fd);
	if (h->qfd >= 0)
		close(h->qfd);
	h->fd = h->qfd = -1;
}

/*
 * Opens the path and locks the whole file; again if the last member
 * removed it in between (our lock would be on a file no one else finds).
 */
static int xh_open_locked(struct ur_xrc_host *h)
{
	struct stat st;
	int tries;

	for (tries = 0; tries < 100; tries++) {
		h->fd = open(h->path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
		if (h->fd < 0)
			return -errno;
		h->qfd = open(h->path, O_RDWR | O_CLOEXEC);
		if (h->qfd < 0) {
			int err = -errno;

			xh_close(h);
			return err;
		}
		if (flock(h->fd, LOCK_EX)) {
			int err = -errno;

			xh_close(h);
			return err;
		}
		if (!fstat(h->fd, &st) && st.st_nlink > 0)
			return 0;
		xh_close(h);
	}
	return -EAGAIN;
}

/*
 * A shared XRC SRQ's file (xrc_ring.c) whose owner died without
 * destroying it: no one holds the lock on its first byte. Its creator
 * locks it right after creating it and creates it again if it was
 * removed in between.
 */
static void xh_sweep_ring(const char *root, const char *name)
{
	char path[PATH_MAX];
	struct ur_xrc_host t = { .fd = -1 };
	struct stat a, b;
	struct flock fl = {
		.l_type = F_WRLCK,
		.l_whence = SEEK_SET,
		.l_start = 0,
		.l_len = 1,
	};

	if (snprintf(path, sizeof(path), "%s/%s", root, name) >=
	    (int)sizeof(path))
		return;
	t.qfd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (t.qfd < 0)
		return;

	/* ... and only that file: a new owner may have replaced it */
	if (!fcntl(t.qfd, F_OFD_GETLK, &fl) && fl.l_type == F_UNLCK &&
	    !fstat(t.qfd, &a) && !stat(path, &b) && a.st_ino == b.st_ino &&
	    a.st_dev == b.st_dev)
		unlink(path);
	xh_close(&t);
}

/* Removes root's registry files that no live process holds a record in. */
static void xh_sweep(const char *root)
{
	struct ur_xrc_host t;
	struct dirent *e;
	struct stat st;
	bool live;
	DIR *d;

	d = opendir(root);
	if (!d)
		return;
	while ((e = readdir(d))) {
		if (!strncmp(e->d_name, "xsrq-", 5)) {
			xh_sweep_ring(root, e->d_name);
			continue;
		}
		if (strncmp(e->d_name, "xrcd-", 5) ||
		    snprintf(t.path, sizeof(t.path), "%s/%s", root,
			     e->d_name) >= (int)sizeof(t.path))
			continue;
		t.fd = open(t.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		t.qfd = t.fd < 0 ? -1 : open(t.path, O_RDWR | O_CLOEXEC |
						     O_NOFOLLOW);
		if (t.qfd < 0 || flock(t.fd, LOCK_EX | LOCK_NB) ||
		    fstat(t.fd, &st) || !st.st_nlink) {
			xh_close(&t);
			continue;
		}
		live = xh_any_live(&t);
		if (!live)
			unlink(t.path);
		xh_close(&t);	/* and its flock */
	}
	closedir(d);
}

int ur_xrc_host_join(unsigned int dev_index, dev_t st_dev, ino_t st_ino,
		     int oflags, struct ur_xrc_host **out)
{
	char root[PATH_MAX - 64];
	struct ur_xrc_host *h;
	bool exists;
	int err;

	err = ur_rundir_root(root, sizeof(root));
	if (err)
		return err;
	xh_sweep(root);
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->fd = h->qfd = -1;
	pthread_mutex_init(&h->lock, NULL);
	snprintf(h->path, sizeof(h->path), "%s/xrcd-%u-%" PRIx64 "-%" PRIx64,
		 root, dev_index, (uint64_t)st_dev, (uint64_t)st_ino);
	snprintf(h->ring_prefix, sizeof(h->ring_prefix),
		 "%s/xsrq-%u-%" PRIx64 "-%" PRIx64, root, dev_index,
		 (uint64_t)st_dev, (uint64_t)st_ino);
	err = xh_open_locked(h);
	if (err) {
		pthread_mutex_destroy(&h->lock);
		free(h);
		return err;
	}
	exists = xh_find(h, XH_MEMBER, 0);
	if (exists && (oflags & O_EXCL))
		err = -EINVAL;
	else if (!exists && !(oflags & O_CREAT))
		err = -EAGAIN;
	else
		err = xh_add(h, XH_MEMBER, 0, &h->member);
	if (err && !exists)
		unlink(h->path);
	flock(h->fd, LOCK_UN);
	if (err) {
		xh_close(h);
		pthread_mutex_destroy(&h->lock);
		free(h);
		return err;
	}
	*out = h;
	return 0;
}

void ur_xrc_host_leave(struct ur_xrc_host *h)
{
	bool last;

	if (!h)
		return;
	pthread_mutex_lock(&h->lock);
	flock(h->fd, LOCK_EX);
	xh_remove(h, h->member);
	last = !xh_any_live(h);
	if (last)
		unlink(h->path);
	flock(h->fd, LOCK_UN);
	xh_close(h);
	pthread_mutex_unlock(&h->lock);
	pthread_mutex_destroy(&h->lock);
	free(h);
}

int ur_xrc_host_srq_claim(struct ur_xrc_host *h, uint32_t srqn,
			  uint32_t *slot)
{
	int err;

	pthread_mutex_lock(&h->lock);
	flock(h->fd, LOCK_EX);
	if (xh_find(h, XH_SRQ, srqn))
		err = -EEXIST;
	else
		err = xh_add(h, XH_SRQ, srqn, slot);
	flock(h->fd, LOCK_UN);
	pthread_mutex_unlock(&h->lock);
	return err;
}

void ur_xrc_host_srq_release(struct ur_xrc_host *h, uint32_t slot)
{
	pthread_mutex_lock(&h->lock);
	flock(h->fd, LOCK_EX);
	xh_remove(h, slot);
	flock(h->fd, LOCK_UN);
	pthread_mutex_unlock(&h->lock);
}

bool ur_xrc_host_srq_exists(struct ur_xrc_host *h, uint32_t srqn)
{
	bool found = false;

	/* never waits: a member stopped while it holds the file (SIGSTOP,
	 * a debugger) must not stall the receive path that asks */
	if (pthread_mutex_trylock(&h->lock))
		return false;
	if (!flock(h->fd, LOCK_SH | LOCK_NB)) {
		found = xh_find(h, XH_SRQ, srqn);
		flock(h->fd, LOCK_UN);
	}
	pthread_mutex_unlock(&h->lock);
	return found;
}

const char *ur_xrc_host_ring_prefix(const struct ur_xrc_host *h)
{
	return h->ring_prefix;
}
