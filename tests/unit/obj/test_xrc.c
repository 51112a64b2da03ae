/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * XRC domains and XRC SRQs (object layer): ibv_open_xrcd's rules as the
 * kernel answers them (comp_mask, oflags, fd -1, bad fd, O_CREAT and
 * O_EXCL on a file), one domain per file and device, a domain that ends
 * with its last XRCD, EBUSY while an SRQ uses it, and XRC SRQ numbers:
 * 24 bits, unique, findable while the SRQ lives.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "to_util.h"

#define BOTH (IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS)

static int tmp_fd(char *path, size_t n)
{
	int fd;

	snprintf(path, n, "/tmp/ur-xrcd-XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	return fd;
}

static void test_open_rules(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ibv_xrcd_init_attr a = { .comp_mask = IBV_XRCD_INIT_ATTR_FD,
					.fd = -1, .oflags = O_CREAT };
	struct ur_xrcd *x1 = NULL, *x2 = NULL, *x3 = NULL, *p1, *p2;
	char path[64];
	int fd = tmp_fd(path, sizeof(path)), fd2;

	assert_int_equal(ur_xrcd_open(ctx, &a, &x1), -EINVAL);	/* mask */
	a.comp_mask = BOTH;
	a.oflags = O_RDWR | O_CREAT | O_TRUNC;
	assert_int_equal(ur_xrcd_open(ctx, &a, &x1), -EINVAL);	/* oflags */
	a.oflags = O_CREAT;
	a.fd = 1000;						/* not open */
	assert_int_equal(ur_xrcd_open(ctx, &a, &x1), -EBADF);

	/* fd -1: a private domain each time */
	a.fd = -1;
	assert_int_equal(ur_xrcd_open(ctx, &a, &p1), 0);
	assert_int_equal(ur_xrcd_open(ctx, &a, &p2), 0);
	assert_false(ur_xrcd_same_domain(p1, p2));

	/* a file: created once, then shared; O_EXCL refuses a second */
	a.fd = fd;
	a.oflags = 0;
	/* none yet: EAGAIN, the kernel's answer (uverbs_cmd.c) */
	assert_int_equal(ur_xrcd_open(ctx, &a, &x1), -EAGAIN);
	a.oflags = O_CREAT;
	assert_int_equal(ur_xrcd_open(ctx, &a, &x1), 0);
	a.oflags = O_CREAT | O_EXCL;
	assert_int_equal(ur_xrcd_open(ctx, &a, &x2), -EINVAL);
	fd2 = open(path, O_RDONLY);		/* same inode, another fd */
	assert_true(fd2 >= 0);
	a.fd = fd2;
	a.oflags = 0;
	assert_int_equal(ur_xrcd_open(ctx, &a, &x2), 0);
	assert_true(ur_xrcd_same_domain(x1, x2));
	assert_false(ur_xrcd_same_domain(x1, p1));

	/* the domain lives while one XRCD does */
	assert_int_equal(ur_xrcd_close(x1), 0);
	assert_int_equal(ur_xrcd_open(ctx, &a, &x3), 0);
	assert_true(ur_xrcd_same_domain(x2, x3));
	assert_int_equal(ur_xrcd_close(x2), 0);
	assert_int_equal(ur_xrcd_close(x3), 0);
	assert_int_equal(ur_xrcd_open(ctx, &a, &x3), -EAGAIN);	/* gone */

	assert_int_equal(ur_xrcd_close(p1), 0);
	assert_int_equal(ur_xrcd_close(p2), 0);
	close(fd2);
	close(fd);
	unlink(path);
	ut_ctx_free(ctx);
}

static void test_xrc_srq(void **state)
{
	struct ibv_context *ctx = ut_ctx_new();
	struct ur_device *dev = ut_dev(ctx);
	struct ur_pd *pd = ut_pd(ctx);
	struct ibv_xrcd_init_attr a = { .comp_mask = BOTH, .fd = -1,
					.oflags = O_CREAT };
	struct ibv_cq_init_attr_ex ca = { .cqe = 16 };
	struct ibv_srq_attr sa = { .max_wr = 8, .max_sge = 1 };
	struct ur_srq *s1 = NULL, *s2 = NULL;
	struct ur_xrcd *x;
	struct ur_cq *cq;
	uint32_t n1;

	assert_int_equal(ur_xrcd_open(ctx, &a, &x), 0);
	assert_int_equal(ur_cq_create(ctx, &ca, &cq), 0);
	assert_int_equal(ur_srq_create_xrc(pd, NULL, cq, NULL, &sa, &s1),
			 -EINVAL);
	assert_int_equal(ur_srq_create_xrc(pd, x, NULL, NULL, &sa, &s1),
			 -EINVAL);
	assert_int_equal(ur_srq_create_xrc(pd, x, cq, NULL, &sa, &s1), 0);
	assert_int_equal(ur_srq_create_xrc(pd, x, cq, NULL, &sa, &s2), 0);
	assert_int_not_equal(s1->srq_num, 0);
	assert_int_equal(s1->srq_num & ~UR_QPN_MASK, 0);
	assert_int_not_equal(s1->srq_num, s2->srq_num);
	assert_ptr_equal(ur_srq_lookup_xrc(dev, s1->srq_num), s1);
	assert_ptr_equal(ur_srq_lookup_xrc(dev, s2->srq_num), s2);
	assert_ptr_equal(s1->pd, pd);

	/* the XRCD and the CQ are busy while XRC SRQs use them */
	assert_int_equal(ur_xrcd_close(x), -EBUSY);
	assert_int_equal(ur_cq_destroy(cq), -EBUSY);
	n1 = s1->srq_num;
	assert_int_equal(ur_srq_destroy(s1), 0);
	assert_null(ur_srq_lookup_xrc(dev, n1));
	assert_int_equal(ur_srq_destroy(s2), 0);
	assert_int_equal(ur_cq_destroy(cq), 0);
	assert_int_equal(ur_xrcd_close(x), 0);
	assert_int_equal(ur_pd_free(pd), 0);
	ut_ctx_free(ctx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_open_rules),
		cmocka_unit_test(test_xrc_srq),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
