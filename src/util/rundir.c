/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-user runtime directory (rundir.h). */
#include <errno.h>
#include <stdbool.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/rundir.h"

static bool usable_base(const char *base)
{
	struct stat st;

	return base && base[0] == '/' && !stat(base, &st) &&
	       S_ISDIR(st.st_mode) && !access(base, W_OK | X_OK);
}

int ur_rundir_path(char *buf, size_t len)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	int n;

	if (!usable_base(base))
		base = "/tmp";
	n = snprintf(buf, len, "%s/uroce-%u", base, (unsigned int)getuid());
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int ur_rundir_root(char *buf, size_t len)
{
	struct stat st;
	int rc = ur_rundir_path(buf, len);

	if (rc)
		return rc;
	if (mkdir(buf, 0700) && errno != EEXIST)
		return -errno;
	if (lstat(buf, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
	    (st.st_mode & 077))
		return -EPERM;
	return 0;
}

static int rm_one(const char *path, const struct stat *st, int flag,
		  struct FTW *ftw)
{
	int rc = flag == FTW_DP ? rmdir(path) : unlink(path);

	return rc && errno != ENOENT ? -1 : 0;
}

int ur_rundir_rm_tree(const char *path)
{
	if (nftw(path, rm_one, 16, FTW_DEPTH | FTW_PHYS))
		return errno == ENOENT ? 0 : -errno;
	return 0;
}
