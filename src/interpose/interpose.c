/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * liburoce-interpose.so: preloaded by `uroce run` (LD_PRELOAD) so that the
 * paths RDMA software hard-codes resolve without a kernel RDMA stack.
 * It links no uroce library (only libc; of util/ it compiles in the two
 * libc-only files it shares with the library: parse.c for UROCE_INTERPOSE's
 * spellings, rundir.c for the runtime directory's path) and changes
 * exactly two things:
 *
 *  1. /dev/infiniband/uverbs<anything> and /dev/infiniband/rdma_cm, when the
 *     real node does not exist: stat-like calls report a character device
 *     (mode 0666, major 231 or 10) and access-like calls succeed. UCX keeps
 *     a verbs device only if /dev/infiniband/<ibv_device.dev_name> passes
 *     stat(S_ISCHR) and access(R_OK|W_OK); uroce never uses the node
 *     itself. Opening one fails with ENODEV, as a node whose driver is not
 *     loaded does: a /dev/null descriptor would let rdma-core's own
 *     librdmacm (when uroce's is not first on the path) parse garbage, and
 *     ENODEV is what UCX's rdmacm component takes quietly.
 *  2. Absolute paths under /sys/class/infiniband and
 *     /sys/class/infiniband_verbs are redirected into the device tree of
 *     this process (or, if it has none, of its nearest ancestor that has
 *     one): <runtime>/uroce-<uid>/<pid>/sys/class/... (util/rundir.h). When
 *     no tree exists the real path is used.
 *
 * Intercepted: open, open64, openat, openat64, __open_2, __open64_2,
 * __openat_2, __openat64_2, fopen, fopen64, opendir, scandir, scandir64,
 * chdir, stat, stat64, lstat,
 * lstat64, fstatat, fstatat64, __xstat, __xstat64, __lxstat, __lxstat64,
 * __fxstatat, __fxstatat64, statx, access, faccessat, euidaccess, eaccess,
 * readlink, realpath, canonicalize_file_name. Relative paths and every
 * other path go to libc untouched. UROCE_INTERPOSE=0 (any false boolean of
 * util/parse.h) turns it all off; a value that is not a boolean leaves it
 * on, with one message.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/parse.h"
#include "util/rundir.h"

#define EXPORT __attribute__((visibility("default")))

/* glibc's internal entry points that binaries call; no header has them. */
EXPORT int __open_2(const char *path, int flags);
EXPORT int __open64_2(const char *path, int flags);
EXPORT int __openat_2(int dirfd, const char *path, int flags);
EXPORT int __openat64_2(int dirfd, const char *path, int flags);
EXPORT int __xstat(int ver, const char *path, struct stat *st);
EXPORT int __xstat64(int ver, const char *path, struct stat64 *st);
EXPORT int __lxstat(int ver, const char *path, struct stat *st);
EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st);
EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
		      int flags);
EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			struct stat64 *st, int flags);

#define DEV_DIR "/dev/infiniband/"
#define SYS_IB "/sys/class/infiniband"
#define MAX_ANCESTORS 16

enum kind {
	K_NONE,		/* not ours: libc as it is */
	K_CHARDEV,	/* a fake /dev/infiniband node */
	K_TREE,		/* rewritten into the device tree */
};

/* A bad value's message is written once per process. */
static bool disabled(void)
{
	static atomic_bool warned;
	const char *v = getenv("UROCE_INTERPOSE");
	bool on;

	if (!v || !*v)
		return false;
	if (!ur_parse_bool(v, &on))
		return !on;
	if (!atomic_exchange(&warned, true))
		fprintf(stderr, "uroce-interpose: UROCE_INTERPOSE=%s: want %s; "
			"staying on (the default)\n", v, UR_PARSE_BOOL_WORDS);
	return false;
}

static void *next(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

#define REAL(ret, name, ...)                                                   \
	static ret (*real_##name)(__VA_ARGS__);                                \
	if (!real_##name)                                                      \
		real_##name = (ret(*)(__VA_ARGS__))next(#name)

/* libc's stat (ours would come back here). */
static int real_stat(const char *path, struct stat *st)
{
	REAL(int, fstatat, int, const char *, struct stat *, int);
	return real_fstatat(AT_FDCWD, path, st, 0);
}

/* The parent pid of pid from /proc (0 if unknown). */
static pid_t parent_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int ppid = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fgets(buf, sizeof(buf), f)) {
		/* "pid (comm) state ppid": comm may hold spaces and ')' */
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 1, " %*c %d", &ppid) != 1)
			ppid = 0;
	}
	fclose(f);
	return (pid_t)ppid;
}

/* <runtime>/uroce-<uid>/<pid>/sys of us or our nearest ancestor. */
static bool tree_root(char *out, size_t len)
{
	char base[PATH_MAX];
	pid_t pid = getpid();
	struct stat st;

	if (ur_rundir_path(base, sizeof(base)))
		return false;
	for (int i = 0; i < MAX_ANCESTORS && pid > 1; i++) {
		int n = snprintf(out, len, "%s/%d/sys", base, (int)pid);

		if (n > 0 && (size_t)n < len && !real_stat(out, &st) &&
		    S_ISDIR(st.st_mode))
			return true;
		pid = parent_of(pid);
	}
	return false;
}

static bool is_dev_node(const char *path)
{
	const char *name;

	if (strncmp(path, DEV_DIR, sizeof(DEV_DIR) - 1))
		return false;
	name = path + sizeof(DEV_DIR) - 1;
	return (!strncmp(name, "uverbs", 6) && !strchr(name, '/')) ||
	       !strcmp(name, "rdma_cm");
}

/*
 * What path is to us; for K_TREE, buf receives the rewritten path. A
 * /dev node is ours only when the real one is missing.
 */
static enum kind classify(const char *path, char *buf, size_t len)
{
	const char *rest;
	char root[PATH_MAX];
	struct stat st;

	if (!path || path[0] != '/' || disabled())
		return K_NONE;
	if (is_dev_node(path)) {
		int saved = errno, rc = real_stat(path, &st);
		bool missing = rc && errno == ENOENT;

		errno = saved;
		return missing ? K_CHARDEV : K_NONE;
	}
	if (strncmp(path, SYS_IB, sizeof(SYS_IB) - 1))
		return K_NONE;
	rest = path + sizeof(SYS_IB) - 1;
	if (!strncmp(rest, "_verbs", 6))
		rest += 6;
	if (*rest && *rest != '/')
		return K_NONE;
	if (!tree_root(root, sizeof(root)))
		return K_NONE;
	/* <root> + "/class/infiniband..." (path without its "/sys") */
	if (snprintf(buf, len, "%s%s", root, path + 4) >= (int)len)
		return K_NONE;
	return K_TREE;
}

static const char *mapped(const char *path, char *buf, size_t len,
			  enum kind *k)
{
	*k = classify(path, buf, len);
	return *k == K_TREE ? buf : path;
}

/*
 * The path to hand to libc for a call that cannot answer for a fake
 * /dev/infiniband node (only the stat and access calls can): NULL with
 * errno set to err for such a node.
 */
static const char *mapped_or_fail(const char *path, char buf[PATH_MAX], int err)
{
	enum kind k;
	const char *p = mapped(path, buf, PATH_MAX, &k);

	if (k == K_CHARDEV) {
		errno = err;
		return NULL;
	}
	return p;
}

static void fake_stat(const char *path, struct stat *st)
{
	bool cm = !strcmp(path + sizeof(DEV_DIR) - 1, "rdma_cm");

	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	st->st_rdev = cm ? makedev(10, 58) : makedev(231, 192);
	st->st_blksize = 4096;
}

/* ------------------------------------------------------------------ */
/* open                                                                 */
/* ------------------------------------------------------------------ */

static int do_openat(const char *sym, int dirfd, const char *path, int flags,
		     mode_t mode)
{
	int (*real)(int, const char *, int, ...) =
		(int (*)(int, const char *, int, ...))next(sym);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENODEV);

	return p ? real(dirfd, p, flags, mode) : -1;
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE ?
		       (mode_t)va_arg(ap, int) : 0;
}

/* m = the mode argument that follows flags in the caller's varargs */
#define MODE_ARG(flags, m)                  \
	do {                                \
		va_list ap_;                \
		va_start(ap_, flags);       \
		(m) = mode_arg(flags, ap_); \
		va_end(ap_);                \
	} while (0)

EXPORT int open(const char *path, int flags, ...)
{
	mode_t m;

	MODE_ARG(flags, m);
	return do_openat("openat", AT_FDCWD, path, flags, m);
}

EXPORT int open64(const char *path, int flags, ...)
{
	mode_t m;

	MODE_ARG(flags, m);
	return do_openat("openat64", AT_FDCWD, path, flags, m);
}

EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	mode_t m;

	MODE_ARG(flags, m);
	return do_openat("openat", dirfd, path, flags, m);
}

EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t m;

	MODE_ARG(flags, m);
	return do_openat("openat64", dirfd, path, flags, m);
}

/* The _FORTIFY_SOURCE entry points (no O_CREAT, so no mode). */
EXPORT int __open_2(const char *path, int flags)
{
	return do_openat("openat", AT_FDCWD, path, flags, 0);
}

EXPORT int __open64_2(const char *path, int flags)
{
	return do_openat("openat64", AT_FDCWD, path, flags, 0);
}

EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
	return do_openat("openat", dirfd, path, flags, 0);
}

EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
	return do_openat("openat64", dirfd, path, flags, 0);
}

static FILE *do_fopen(const char *sym, const char *path, const char *mode)
{
	FILE *(*real)(const char *, const char *) =
		(FILE * (*)(const char *, const char *)) next(sym);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENODEV);

	return p ? real(p, mode) : NULL;
}

EXPORT FILE *fopen(const char *path, const char *mode)
{
	return do_fopen("fopen", path, mode);
}

EXPORT FILE *fopen64(const char *path, const char *mode)
{
	return do_fopen("fopen64", path, mode);
}

EXPORT DIR *opendir(const char *path)
{
	REAL(DIR *, opendir, const char *);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENOTDIR);

	return p ? real_opendir(p) : NULL;
}

/* libibumad (ibstat) lists a device's ports with scandir, whose own
 * opendir inside libc does not come back here. */
typedef int (*dirent_filter)(const struct dirent *);
typedef int (*dirent_cmp)(const struct dirent **, const struct dirent **);

EXPORT int scandir(const char *path, struct dirent ***list, dirent_filter sel,
		   dirent_cmp cmp)
{
	REAL(int, scandir, const char *, struct dirent ***, dirent_filter,
	     dirent_cmp);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENOTDIR);

	return p ? real_scandir(p, list, sel, cmp) : -1;
}

typedef int (*dirent64_filter)(const struct dirent64 *);
typedef int (*dirent64_cmp)(const struct dirent64 **,
			    const struct dirent64 **);

EXPORT int scandir64(const char *path, struct dirent64 ***list,
		     dirent64_filter sel, dirent64_cmp cmp)
{
	REAL(int, scandir64, const char *, struct dirent64 ***,
	     dirent64_filter, dirent64_cmp);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENOTDIR);

	return p ? real_scandir64(p, list, sel, cmp) : -1;
}

/* ibstatus (a shell script) does `cd /sys/class/infiniband`, then reads
 * relative paths: the working directory itself moves into the tree. */
EXPORT int chdir(const char *path)
{
	REAL(int, chdir, const char *);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, ENOTDIR);

	return p ? real_chdir(p) : -1;
}

/* ------------------------------------------------------------------ */
/* stat                                                                 */
/* ------------------------------------------------------------------ */

static int do_fstatat(const char *sym, int dirfd, const char *path,
		      struct stat *st, int flags)
{
	int (*real)(int, const char *, struct stat *, int) =
		(int (*)(int, const char *, struct stat *, int))next(sym);
	char buf[PATH_MAX];
	enum kind k;
	const char *p = mapped(path, buf, sizeof(buf), &k);

	if (k == K_CHARDEV) {
		fake_stat(path, st);
		return 0;
	}
	return real(dirfd, p, st, flags);
}

EXPORT int stat(const char *path, struct stat *st)
{
	return do_fstatat("fstatat", AT_FDCWD, path, st, 0);
}

EXPORT int stat64(const char *path, struct stat64 *st)
{
	return do_fstatat("fstatat64", AT_FDCWD, path, (struct stat *)st, 0);
}

EXPORT int lstat(const char *path, struct stat *st)
{
	return do_fstatat("fstatat", AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

EXPORT int lstat64(const char *path, struct stat64 *st)
{
	return do_fstatat("fstatat64", AT_FDCWD, path, (struct stat *)st,
			  AT_SYMLINK_NOFOLLOW);
}

EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
	return do_fstatat("fstatat", dirfd, path, st, flags);
}

EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st,
		     int flags)
{
	return do_fstatat("fstatat64", dirfd, path, (struct stat *)st, flags);
}

/* Binaries built against glibc < 2.33 call these. */
EXPORT int __xstat(int ver, const char *path, struct stat *st)
{
	return do_fstatat("fstatat", AT_FDCWD, path, st, 0);
}

EXPORT int __xstat64(int ver, const char *path, struct stat64 *st)
{
	return do_fstatat("fstatat64", AT_FDCWD, path, (struct stat *)st, 0);
}

EXPORT int __lxstat(int ver, const char *path, struct stat *st)
{
	return do_fstatat("fstatat", AT_FDCWD, path, st, AT_SYMLINK_NOFOLLOW);
}

EXPORT int __lxstat64(int ver, const char *path, struct stat64 *st)
{
	return do_fstatat("fstatat64", AT_FDCWD, path, (struct stat *)st,
			  AT_SYMLINK_NOFOLLOW);
}

EXPORT int __fxstatat(int ver, int dirfd, const char *path, struct stat *st,
		      int flags)
{
	return do_fstatat("fstatat", dirfd, path, st, flags);
}

EXPORT int __fxstatat64(int ver, int dirfd, const char *path,
			struct stat64 *st, int flags)
{
	return do_fstatat("fstatat64", dirfd, path, (struct stat *)st, flags);
}

EXPORT int statx(int dirfd, const char *path, int flags, unsigned int mask,
		 struct statx *sx)
{
	REAL(int, statx, int, const char *, int, unsigned int, struct statx *);
	char buf[PATH_MAX];
	enum kind k;
	const char *p = mapped(path, buf, sizeof(buf), &k);

	if (k == K_CHARDEV) {
		struct stat st;

		fake_stat(path, &st);
		memset(sx, 0, sizeof(*sx));
		sx->stx_mask = STATX_TYPE | STATX_MODE | STATX_NLINK;
		sx->stx_mode = (uint16_t)st.st_mode;
		sx->stx_nlink = 1;
		sx->stx_blksize = 4096;
		sx->stx_rdev_major = major(st.st_rdev);
		sx->stx_rdev_minor = minor(st.st_rdev);
		return 0;
	}
	return real_statx(dirfd, p, flags, mask, sx);
}

/* ------------------------------------------------------------------ */
/* access, links, real paths                                            */
/* ------------------------------------------------------------------ */

EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
	REAL(int, faccessat, int, const char *, int, int);
	char buf[PATH_MAX];
	enum kind k;
	const char *p = mapped(path, buf, sizeof(buf), &k);

	if (k == K_CHARDEV)
		return (mode & X_OK) ? (errno = EACCES, -1) : 0;
	return real_faccessat(dirfd, p, mode, flags);
}

EXPORT int access(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, 0);
}

EXPORT int euidaccess(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

EXPORT int eaccess(const char *path, int mode)
{
	return faccessat(AT_FDCWD, path, mode, AT_EACCESS);
}

EXPORT ssize_t readlink(const char *path, char *out, size_t len)
{
	REAL(ssize_t, readlink, const char *, char *, size_t);
	char buf[PATH_MAX];
	const char *p = mapped_or_fail(path, buf, EINVAL);

	return p ? real_readlink(p, out, len) : -1;
}

EXPORT char *realpath(const char *path, char *resolved)
{
	REAL(char *, realpath, const char *, char *);
	char buf[PATH_MAX];
	enum kind k;
	const char *p = mapped(path, buf, sizeof(buf), &k);

	if (k == K_CHARDEV) {
		if (!resolved)
			return strdup(path);
		snprintf(resolved, PATH_MAX, "%s", path);
		return resolved;
	}
	return real_realpath(p, resolved);
}

EXPORT char *canonicalize_file_name(const char *path)
{
	return realpath(path, NULL);
}
