/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loopback rendezvous. Every uroce process has its own device address
 * (127.X.Y.Z), so "127.0.0.1" names nobody's device. A listener bound to a
 * loopback address (its device's or not), or to the wildcard, publishes
 * itself in a per-user directory
 *
 *   <runtime root>/cm/  (util/rundir.h: $XDG_RUNTIME_DIR/uroce-<uid>/cm/,
 *                        else /tmp/uroce-<uid>/cm/)
 *
 * as a file "<ps>-<port>-<address|any>" holding "<pid>:<start> <GID>...":
 * the listener's own address when it is bound to one of its device's, else
 * every address of its device; <start> is the process's start time
 * (/proc/<pid>/stat), so that an entry left by a killed process is known
 * stale even after its pid has gone to another process.
 * rdma_resolve_addr/rdma_connect of a loopback destination reads the exact
 * entry, then the wildcard one, and sends its REQ to the GID that is the
 * destination, else to one of its own IP version (a datagram cannot
 * change version), else to the first. An entry is written whole before it
 * appears (link(2) of a finished file, which fails where one exists, as
 * O_EXCL would), so a reader never sees half of one, and a second live
 * listener on the same address and port gets EADDRINUSE; entries of
 * processes that died are removed by the next reader or publisher, that
 * file and not whatever holds the name by then (entry_remove).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "api/rdmacm/rdmacm_priv.h"
#include "util/rundir.h"

/* "<pid>:<start>" and up to UR_CM_MAX_GIDS addresses of INET6_ADDRSTRLEN */
#define RV_LINE_MAX (48 + UR_CM_MAX_GIDS * INET6_ADDRSTRLEN)
/* Stale entries a listener removes from its name before it gives up */
#define RV_PUBLISH_TRIES 8

/* When process pid started, in clock ticks after boot (field 22 of
 * /proc/<pid>/stat, after the command name, which may hold spaces and
 * parentheses); 0 if there is no such process or /proc cannot say. */
static unsigned long long proc_start_time(long pid)
{
	char path[48], buf[1024], *p;
	unsigned long long start = 0;
	size_t n;
	int field;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strrchr(buf, ')');
	/* ") S ppid ...": field 3 (the state) follows the parenthesis */
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (p)
		start = strtoull(p + 1, NULL, 10);
	return start;
}

/* The runtime root (util/rundir.h, which refuses someone else's) + /cm. */
static int rv_dir(char *buf, size_t len)
{
	size_t n;
	int rc = ur_rundir_root(buf, len);

	if (rc)
		return -rc;
	n = strlen(buf);
	if (n + sizeof("/cm") > len)
		return ENAMETOOLONG;
	memcpy(buf + n, "/cm", sizeof("/cm"));
	if (mkdir(buf, 0700) && errno != EEXIST)
		return errno;
	return 0;
}

static void entry_name(char *buf, size_t len, enum rdma_port_space ps,
		       uint16_t port, const union ur_sockaddr *sa)
{
	char ip[INET6_ADDRSTRLEN] = "any";

	if (!cma_addr_is_any(sa)) {
		if (sa->sa.sa_family == AF_INET)
			inet_ntop(AF_INET, &sa->in.sin_addr, ip, sizeof(ip));
		else
			inet_ntop(AF_INET6, &sa->in6.sin6_addr, ip, sizeof(ip));
	}
	snprintf(buf, len, "%04x-%u-%s", (unsigned int)ps, port, ip);
}

/*
 * Removes the entry at path if it is still the file f, found stale. By
 * name alone it could be another: a listener that found the same stale
 * entry removes it and links its own in, and that one must stay (its
 * clients would get REJECTED). rename() takes whatever the name holds
 * aside in one step; a file that is not f goes back. f stays open until
 * then, so that its inode cannot have gone to the newer file. Under
 * cma.lock, so the aside name is this process's alone.
 */
static void entry_remove(const char *path, FILE *f)
{
	char tmp[PATH_MAX + 40];
	const char *slash = strrchr(path, '/');
	struct stat was, now;

	if (!slash || fstat(fileno(f), &was))
		return;
	snprintf(tmp, sizeof(tmp), "%.*s/.old-%ld", (int)(slash - path), path,
		 (long)getpid());
	if (rename(path, tmp))
		return;		/* removed already */
	if (lstat(tmp, &now) || now.st_ino != was.st_ino ||
	    now.st_dev != was.st_dev)
		(void)link(tmp, path);	/* EEXIST: a newer one is there */
	unlink(tmp);
}

/*
 * Reads an entry: 0 (live; gid set to the GID that is want, else the first
 * of like's IP version, else the first), -ESRCH (stale, removed), -ENOENT.
 */
static int entry_read(const char *path, const uint8_t want[16],
		      const uint8_t like[16], uint8_t gid[16])
{
	char buf[RV_LINE_MAX], *tok, *save = NULL;
	struct in6_addr a;
	FILE *f = fopen(path, "r");
	int n = 0, rank = 3;	/* 0 want, 1 like's version, 2 first */
	unsigned long long start = 0;
	char *end = NULL;
	long pid = 0;

	if (!f)
		return -ENOENT;
	tok = fgets(buf, sizeof(buf), f) ? strtok_r(buf, " \n", &save) : NULL;
	if (tok)
		pid = strtol(tok, &end, 10);
	if (end && *end == ':')
		start = strtoull(end + 1, NULL, 10);
	while (pid > 0 && (tok = strtok_r(NULL, " \n", &save)) &&
	       inet_pton(AF_INET6, tok, &a) == 1) {
		int r = !memcmp(&a, want, 16) ? 0 :
			ur_gid_is_v4mapped(a.s6_addr) ==
				ur_gid_is_v4mapped(like) ? 1 : 2;

		if (r < rank) {
			rank = r;
			memcpy(gid, &a, 16);
		}
		n++;
	}
	if (!n || (kill((pid_t)pid, 0) && errno == ESRCH) ||
	    (start && proc_start_time(pid) != start)) {
		entry_remove(path, f);
		fclose(f);
		return -ESRCH;
	}
	fclose(f);
	return 0;
}

/* The entry's line: our pid and the GIDs a REQ may reach id at. */
static void entry_line(const struct cma_id *id, const union ur_sockaddr *sa,
		       char *line, size_t len)
{
	const struct cma_dev *d = id->dev ? id->dev : &cma.devs[0];
	char ip[INET6_ADDRSTRLEN];
	size_t n;
	uint8_t k;
	int i;

	n = (size_t)snprintf(line, len, "%ld:%llu", (long)getpid(),
			     proc_start_time(getpid()));
	for (i = 0; i < d->ngids && n < len; i++) {
		if (ur_gid_is_zero(d->gids[i]) ||
		    (cma_dev_by_addr(sa, &k) == d && k != i))
			continue;
		inet_ntop(AF_INET6, d->gids[i], ip, sizeof(ip));
		n += (size_t)snprintf(line + n, len - n, " %s", ip);
	}
	if (n < len)
		snprintf(line + n, len - n, "\n");
}

/*
 * Writes line to a file of our own, then links it in as path: a reader
 * sees the whole entry or none (an entry it found empty it would take for
 * a dead writer's and remove), and link() fails with EEXIST as O_EXCL
 * would. 0, EEXIST, or another errno.
 */
static int entry_link(const char *dir, const char *path, const char *line)
{
	char tmp[PATH_MAX + 40];
	size_t len = strlen(line);
	int fd, ret = 0;

	/* a dot name no reader looks up; the lock (cma.lock) keeps it ours */
	snprintf(tmp, sizeof(tmp), "%s/.new-%ld", dir, (long)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return errno;
	if (write(fd, line, len) != (ssize_t)len)
		ret = EIO;
	close(fd);
	if (!ret && link(tmp, path))
		ret = errno;
	unlink(tmp);
	return ret;
}

/*
 * An entry naming this process that none of its listeners owns is one it
 * withdrew, put back by a reader that had set it aside (entry_remove)
 * meanwhile: it looks live to everyone (our pid, our start time) and
 * would keep the port taken. Removes it (as that file) and returns true;
 * false for anything else. Under cma.lock, as publish and withdraw are.
 */
static bool entry_drop_ghost(const char *path, const char *name)
{
	struct ur_list *pos;
	FILE *f = fopen(path, "r");
	long pid = 0;

	if (!f)
		return true;	/* gone already: try again */
	if (fscanf(f, "%ld", &pid) != 1 || pid != (long)getpid()) {
		fclose(f);
		return false;
	}
	ur_list_for_each(pos, &cma.ids) {
		struct cma_id *id = ur_list_entry(pos, struct cma_id, node);

		if (!strcmp(id->rv_name, name)) {
			fclose(f);
			return false;	/* a listener of ours: live */
		}
	}
	entry_remove(path, f);
	fclose(f);
	return true;
}

int cma_rv_publish(struct cma_id *id)
{
	const union ur_sockaddr *sa = &id->src;
	char dir[PATH_MAX], name[sizeof(id->rv_name)];
	char path[PATH_MAX + 100], line[RV_LINE_MAX];
	uint8_t g[16] = { 0 };
	int ret, tries;

	if (!cma_addr_is_any(sa) && !ur_addr_is_loopback(sa))
		return 0;	/* a network address: reachable as it is */
	if (!cma.ndev)
		return ENODEV;
	ret = rv_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	entry_name(name, sizeof(name), cma_id_ps(id), cma_addr_port(&sa->sa),
		   sa);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	entry_line(id, sa, line, sizeof(line));
	/* a stale entry removed may make way for another put back (a
	 * reader's entry_remove), our own withdrawn one included: each is
	 * removed in turn, a live listener's ends it */
	for (tries = 0; tries < RV_PUBLISH_TRIES; tries++) {
		ret = entry_link(dir, path, line);
		if (ret != EEXIST)
			break;
		if (entry_read(path, g, g, g) == 0 && !entry_drop_ghost(path, name))
			break;	/* a live listener's */
	}
	if (ret == EEXIST)
		return EADDRINUSE;
	if (!ret)	/* withdraw removes only what we published */
		memcpy(id->rv_name, name, sizeof(name));
	return ret;
}

void cma_rv_withdraw(struct cma_id *id)
{
	char dir[PATH_MAX], path[PATH_MAX + 100];

	if (!id->rv_name[0] || rv_dir(dir, sizeof(dir)))
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, id->rv_name);
	unlink(path);
	id->rv_name[0] = 0;
}

int cma_rv_lookup(enum rdma_port_space ps, const union ur_sockaddr *dst,
		  const uint8_t like[16], uint8_t gid[16])
{
	char dir[PATH_MAX], name[96], path[PATH_MAX + 100];
	union ur_sockaddr any;
	uint16_t port = cma_addr_port(&dst->sa);
	uint8_t want[16];

	if (rv_dir(dir, sizeof(dir)))
		return -ENOENT;
	ur_sockaddr_to_gid(dst, want);
	entry_name(name, sizeof(name), ps, port, dst);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!entry_read(path, want, like, gid))
		return 0;
	memset(&any, 0, sizeof(any));
	any.sa.sa_family = dst->sa.sa_family;
	entry_name(name, sizeof(name), ps, port, &any);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return entry_read(path, want, like, gid) ? -ENOENT : 0;
}
