/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Writing the device tree's files (devtree_priv.h), atomically.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/ibverbs/devtree/devtree_priv.h"

int tree_mkdirs(const char *path)
{
	char p[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(p))
		return -ENAMETOOLONG;
	memcpy(p, path, len + 1);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -errno;
		*s = '/';
	}
	if (mkdir(p, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/*
 * The shadow of path (a file of the tree): <tree>/shadow/<its path below
 * the tree, '/' written as %2F and '%' as %25>. Outside the directories a
 * reader lists: a kept file next to its original would be an extra entry
 * (pyverbs' test counts a port's gids/). -1 if path is not in the tree or
 * the name is too long.
 */
static int shadow_path(char *out, size_t len, const char *path)
{
	size_t root = strlen(devtree.dir), n, start, k;
	const char *p, *esc;
	int w;

	if (!root || strncmp(path, devtree.dir, root) || path[root] != '/')
		return -1;
	w = snprintf(out, len, "%s/" TREE_SHADOW_DIR "/", devtree.dir);
	if (w < 0 || (size_t)w >= len)
		return -1;
	n = start = (size_t)w;
	for (p = path + root + 1; *p; p++) {
		esc = *p == '/' ? "%2F" : *p == '%' ? "%25" : NULL;
		k = esc ? 3 : 1;
		if (n + k >= len)
			return -1;
		memcpy(out + n, esc ? esc : p, k);
		n += k;
	}
	out[n] = 0;
	return n - start > NAME_MAX ? -1 : 0;
}

/* tmp := buf[0..len), the file made if need be. 0 or -errno. */
static int put_text(const char *tmp, const char *buf, size_t len)
{
	ssize_t w;
	int fd;

	fd = open(tmp, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	w = pwrite(fd, buf, len, 0);
	if (w == (ssize_t)len && ftruncate(fd, (off_t)len))
		w = -1;
	close(fd);
	return w == (ssize_t)len ? 0 : -EIO;
}

/* tmp renamed over path; 0 or -EIO (tmp removed). */
static int replace(const char *tmp, const char *path)
{
	if (rename(tmp, path)) {
		unlink(tmp);
		return -EIO;
	}
	return 0;
}

/*
 * A file is replaced whole, so that a reader sees the old text or the new
 * one. The text goes into the file's shadow (shadow_path), which then
 * trades places with the file (RENAME_EXCHANGE) and is kept for the next
 * write: no inode is made or freed. A new file per write (renamed over
 * the old one, which was freed) cost ext4 an inode allocation, a free and
 * a discard of its block each time, a large share of a busy process's CPU
 * (docs/benchmarks.md, "The device tree's files rewritten in place").
 * A reader that holds the file open across two refreshes may see the
 * shadow being rewritten. A first write, or a file system without the
 * exchange, renames the shadow over the file; a file without a shadow
 * (outside the tree) is written to .name.tmp beside it and renamed.
 */
int tree_put_buf(const char *dir, const char *name, const char *buf,
		 size_t len)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int rc;

	if (snprintf(path, sizeof(path), "%s/%s", dir, name) >=
	    (int)sizeof(path))
		return -ENAMETOOLONG;
	if (!shadow_path(tmp, sizeof(tmp), path)) {
		rc = put_text(tmp, buf, len);
		if (!rc && !renameat2(AT_FDCWD, tmp, AT_FDCWD, path,
				      RENAME_EXCHANGE))
			return 0;
		if (!rc)
			return replace(tmp, path);
		unlink(tmp);
	}
	if (snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name) >=
	    (int)sizeof(tmp))
		return -ENAMETOOLONG;
	rc = put_text(tmp, buf, len);
	if (rc) {
		unlink(tmp);
		return rc;
	}
	return replace(tmp, path);
}

int tree_put(const char *dir, const char *name, const char *fmt, ...)
{
	char text[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(text) - 1)
		return -EINVAL;
	text[n++] = '\n';
	return tree_put_buf(dir, name, text, (size_t)n);
}

void tree_pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

void tree_ibdev_dir(const struct ur_device *dev, char *buf, size_t len)
{
	tree_pathf(buf, len, "%s/class/infiniband/%s", devtree.sys,
		   dev->ibdev.name);
}
