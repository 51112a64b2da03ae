/* SPDX-License-Identifier: BSD-2-Clause */
/* The per-user runtime directory (rundir.h). */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/rundir.h"

int ur_rundir_root(char *buf, size_t len)
{
	const char *base = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (!base || !*base)
		base = "/tmp";
	n = snprintf(buf, len, "%s/uroce-%u", base, (unsigned int)getuid());
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
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
