/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An XRC domain file across processes (obj/xrc_host.c): the domain exists
 * on the host while any process has it open, so ibv_open_xrcd without
 * O_CREAT succeeds and O_EXCL fails in a second process; XRC SRQ numbers
 * are unique across the domain's processes and one process sees another's
 * SRQ numbers; a member that dies without closing anything holds nothing
 * any more, and its registry file, left behind, is removed by the next
 * join; the last member out removes the registry file. Threads of one
 * process creating SRQs at once each get a record of their own.
 *
 * A forked child plays the other process. It forks before either side
 * opens a domain (an inherited descriptor would share the parent's record
 * locks) and reports through a pipe.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "to_util.h"
#include "util/rundir.h"

#define BOTH (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)
#define CHILD_SRQS 32

static char rundir[64];

/* registry files in the runtime directory (uroce-<uid> under rundir) */
static int registry_files(void)
{
	char path[128];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof(path), "%s/uroce-%u", rundir, (unsigned)getuid());
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += !strncmp(e->d_name, "xrcd-", 5);
	closedir(d);
	return n;
}

static int open_xrcd(struct ibv_context *ctx, int fd, int oflags,
		     struct ur_xrcd **x)
{
	struct ibv_xrcd_init_attr a = { .comp_mask = BOTH, .fd = fd,
					.oflags = oflags };

	return ur_xrcd_open(ctx, &a, x);
}

static void xread(int fd, void *buf, size_t n)
{
	assert_int_equal(read(fd, buf, n), (ssize_t)n);
}

/* The child: opens the domain with O_CREAT, makes CHILD_SRQS XRC SRQs,
 * writes their numbers, waits for a byte, then dies without a close. */
static void child(int fd, int fd2, int to_parent, int from_parent)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ibv_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	uint32_t nums[CHILD_SRQS];
	struct ur_pd *pd = ut_pd(ctx);
	struct ur_srq *s;
	struct ur_xrcd *x, *x2;
	struct ur_cq *cq;
	char c;
	int i;

	/* never outlives a parent that failed: EOF or the alarm ends it */
	alarm(30);
	if (open_xrcd(ctx, fd, O_CREAT, &x) || ur_cq_create(ctx, &ca, &cq))
		_exit(2);
	/* a domain of its own, on a second file, that no one else opens */
	if (open_xrcd(ctx, fd2, O_CREAT, &x2))
		_exit(2);
	for (i = 0; i < CHILD_SRQS; i++) {
		if (ur_srq_create_xrc(pd, x, cq, NULL, &sa, &s))
			_exit(3);
		nums[i] = s->srq_num;
	}
	if (write(to_parent, nums, sizeof(nums)) != sizeof(nums))
		_exit(4);
	if (read(from_parent, &c, 1) != 1)
		_exit(5);
	_exit(0);	/* as a crash: nothing closed */
}

static void test_domain_across_processes(void **state)
{
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ibv_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	uint32_t theirs[CHILD_SRQS], slot;
	struct ur_srq *mine[64];
	struct ibv_context *ctx;
	struct ur_xrcd *x, *x2;
	struct ur_xrc_host *h;
	char path[64] = "/tmp/ur-xrch-XXXXXX", path2[64] = "/tmp/ur-xrch-XXXXXX";
	int up[2], down[2], fd, fd2, i, j, st;
	struct ur_pd *pd;
	struct ur_cq *cq;
	struct stat sb;
	pid_t pid;

	/* the domains are the files' inodes: no name needed (none left
	 * behind by a failed assertion either) */
	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	fd2 = mkstemp(path2);
	assert_true(fd2 >= 0);
	unlink(path2);
	assert_int_equal(fstat(fd, &sb), 0);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		close(up[0]);
		close(down[1]);
		child(fd, fd2, up[1], down[0]);
	}
	close(up[1]);
	close(down[0]);

	ctx = ut_ctx_new();
	pd = ut_pd(ctx);
	xread(up[0], theirs, sizeof(theirs));

	/* the child's domain is the host's: it exists for this process */
	assert_int_equal(open_xrcd(ctx, fd, O_CREAT | O_EXCL, &x), -EINVAL);
	assert_int_equal(open_xrcd(ctx, fd, 0, &x), 0);
	assert_int_equal(registry_files(), 2);

	/* its SRQ numbers are seen here and never handed out again */
	for (i = 0; i < CHILD_SRQS; i++)
		assert_true(ur_xrcd_srq_on_host(x, theirs[i]));
	assert_int_equal(ur_xrc_host_join(ut_dev(ctx)->index, sb.st_dev,
					  sb.st_ino, 0, &h), 0);
	assert_int_equal(ur_xrc_host_srq_claim(h, theirs[0], &slot), -EEXIST);
	assert_int_equal(ur_cq_create(ctx, &ca, &cq), 0);
	for (i = 0; i < 64; i++) {
		assert_int_equal(ur_srq_create_xrc(pd, x, cq, NULL, &sa,
						   &mine[i]), 0);
		for (j = 0; j < CHILD_SRQS; j++)
			assert_int_not_equal(mine[i]->srq_num, theirs[j]);
	}
	/* a number another member holds cannot be taken through h either */
	assert_int_equal(ur_xrc_host_srq_claim(h, mine[0]->srq_num, &slot),
			 -EEXIST);

	assert_int_equal(registry_files(), 2);

	/* the child dies holding everything: nothing of it stays */
	assert_int_equal(write(down[1], "x", 1), 1);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	for (i = 0; i < CHILD_SRQS; i++)
		assert_false(ur_xrcd_srq_on_host(x, theirs[i]));
	assert_int_equal(ur_xrc_host_srq_claim(h, theirs[0], &slot), 0);
	ur_xrc_host_srq_release(h, slot);
	ur_xrc_host_leave(h);

	/* the child was the only member of its own second domain: that file
	 * stays after its death until the next join sweeps it away */
	assert_int_equal(registry_files(), 2);
	assert_int_equal(ur_xrc_host_join(ut_dev(ctx)->index, sb.st_dev,
					  sb.st_ino, 0, &h), 0);
	assert_int_equal(registry_files(), 1);
	ur_xrc_host_leave(h);

	/* still ours: a second XRCD of this process on the file is the same */
	assert_int_equal(open_xrcd(ctx, fd, 0, &x2), 0);
	assert_true(ur_xrcd_same_domain(x, x2));
	assert_int_equal(ur_xrcd_close(x2), 0);
	for (i = 0; i < 64; i++) {
		assert_true(ur_xrcd_srq_on_host(x, mine[i]->srq_num));
		j = (int)mine[i]->srq_num;
		assert_int_equal(ur_srq_destroy(mine[i]), 0);
		assert_false(ur_xrcd_srq_on_host(x, (uint32_t)j));
	}
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_xrcd_close(x), 0);

	/* the last member is gone: no domain, no registry file */
	assert_int_equal(registry_files(), 0);
	assert_int_equal(open_xrcd(ctx, fd, 0, &x), -EAGAIN);
	assert_int_equal(registry_files(), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
	close(up[0]);
	close(down[1]);
	close(fd);
	close(fd2);
}

#define THREADS 4
#define PER_THREAD 40

struct maker {
	struct ur_pd *pd;
	struct ur_xrcd *x;
	struct ur_cq *cq;
	struct ur_srq *srqs[PER_THREAD];
	int err;
};

static void *make_srqs(void *arg)
{
	struct ibv_srq_attr sa = { .max_wr = 4, .max_sge = 1 };
	struct maker *m = arg;
	int i;

	for (i = 0; i < PER_THREAD && !m->err; i++)
		m->err = ur_srq_create_xrc(m->pd, m->x, m->cq, NULL, &sa,
					   &m->srqs[i]);
	return NULL;
}

static void test_threads(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ur_pd *pd = ut_pd(ctx);
	char path[64] = "/tmp/ur-xrch-XXXXXX";
	struct maker m[THREADS];
	pthread_t t[THREADS];
	struct ur_xrcd *x;
	struct ur_cq *cq;
	int fd, i, j, k;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	unlink(path);
	assert_int_equal(open_xrcd(ctx, fd, O_CREAT, &x), 0);
	assert_int_equal(ur_cq_create(ctx, &ca, &cq), 0);
	for (i = 0; i < THREADS; i++) {
		m[i] = (struct maker){ .pd = pd, .x = x, .cq = cq };
		assert_int_equal(pthread_create(&t[i], NULL, make_srqs, &m[i]),
				 0);
	}
	for (i = 0; i < THREADS; i++) {
		assert_int_equal(pthread_join(t[i], NULL), 0);
		assert_int_equal(m[i].err, 0);
	}
	/* every SRQ has its record while it lives, and none after */
	for (i = 0; i < THREADS; i++)
		for (j = 0; j < PER_THREAD; j++) {
			uint32_t n = m[i].srqs[j]->srq_num;

			assert_true(ur_xrcd_srq_on_host(x, n));
			assert_int_equal(ur_srq_destroy(m[i].srqs[j]), 0);
			assert_false(ur_xrcd_srq_on_host(x, n));
			for (k = j + 1; k < PER_THREAD; k++)
				assert_true(ur_xrcd_srq_on_host(
					x, m[i].srqs[k]->srq_num));
		}
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_xrcd_close(x), 0);
	assert_int_equal(registry_files(), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_domain_across_processes),
		cmocka_unit_test(test_threads),
	};
	int rc;

	/* a runtime directory of its own: the registry files are counted */
	snprintf(rundir, sizeof(rundir), "/tmp/ur-xrch-run-XXXXXX");
	if (!mkdtemp(rundir))
		return 1;
	setenv("XDG_RUNTIME_DIR", rundir, 1);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	if (ur_rundir_rm_tree(rundir))
		rc = rc ? rc : 1;
	return rc;
}
