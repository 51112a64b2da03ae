/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Loopback rendezvous. Every uroce process has its own device address
 * (127.X.Y.Z), so "127.0.0.1" names nobody's device. A listener bound to a
 * loopback address that is not a device's, or to the wildcard, publishes
 * itself in a per-user directory
 *
 *   <runtime root>/cm/  (util/rundir.h: $XDG_RUNTIME_DIR/uroce-<uid>/cm/,
 *                        else /tmp/uroce-<uid>/cm/)
 *
 * as a file "<ps>-<port>-<address|any>" holding "<pid> <device GID>".
 * rdma_resolve_addr/rdma_connect of a loopback destination reads the exact
 * entry, then the wildcard one, and sends its REQ to that GID. Entries are
 * created with O_EXCL, so a second live listener on the same address and
 * port gets EADDRINUSE, and entries of processes that died are removed by
 * the next reader or publisher.
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

/* Reads an entry: 0 (live, gid set), -ESRCH (stale, removed), -ENOENT. */
static int entry_read(const char *path, uint8_t gid[16])
{
	char buf[128], ip[INET6_ADDRSTRLEN];
	struct in6_addr a;
	FILE *f = fopen(path, "r");
	long pid;
	int n;

	if (!f)
		return -ENOENT;
	n = fgets(buf, sizeof(buf), f) ? sscanf(buf, "%ld %45s", &pid, ip) : 0;
	fclose(f);
	if (n != 2 || pid <= 0 || (kill((pid_t)pid, 0) && errno == ESRCH) ||
	    inet_pton(AF_INET6, ip, &a) != 1) {
		unlink(path);
		return -ESRCH;
	}
	memcpy(gid, &a, 16);
	return 0;
}

int cma_rv_publish(struct cma_id *id)
{
	const union ur_sockaddr *sa =
		(const union ur_sockaddr *)&id->id.route.addr.src_storage;
	char dir[PATH_MAX], path[PATH_MAX + 100], line[128];
	char gid[INET6_ADDRSTRLEN];
	uint8_t g[16];
	int fd, ret, tries;

	if (!cma_addr_is_any(sa) &&
	    !(ur_addr_is_loopback(sa) && !cma_dev_by_addr(sa)))
		return 0;	/* a device address: reachable as it is */
	if (!cma.ndev)
		return ENODEV;
	ret = rv_dir(dir, sizeof(dir));
	if (ret)
		return ret;
	entry_name(id->rv_name, sizeof(id->rv_name), id->id.ps,
		   cma_addr_port(&sa->sa), sa);
	snprintf(path, sizeof(path), "%s/%s", dir, id->rv_name);
	inet_ntop(AF_INET6, (id->dev ? id->dev : &cma.devs[0])->gid, gid,
		  sizeof(gid));
	snprintf(line, sizeof(line), "%ld %s\n", (long)getpid(), gid);
	for (tries = 0; tries < 2; tries++) {
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd >= 0)
			break;
		if (errno != EEXIST)
			return errno;
		if (entry_read(path, g) == 0) {
			id->rv_name[0] = 0;
			return EADDRINUSE;
		}
	}
	if (fd < 0) {
		id->rv_name[0] = 0;
		return EADDRINUSE;
	}
	ret = write(fd, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : EIO;
	close(fd);
	if (ret) {
		unlink(path);
		id->rv_name[0] = 0;
	}
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
		  uint8_t gid[16])
{
	char dir[PATH_MAX], name[96], path[PATH_MAX + 100];
	union ur_sockaddr any;
	uint16_t port = cma_addr_port(&dst->sa);

	if (rv_dir(dir, sizeof(dir)))
		return -ENOENT;
	entry_name(name, sizeof(name), ps, port, dst);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (!entry_read(path, gid))
		return 0;
	memset(&any, 0, sizeof(any));
	any.sa.sa_family = dst->sa.sa_family;
	entry_name(name, sizeof(name), ps, port, &any);
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return entry_read(path, gid) ? -ENOENT : 0;
}
