/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a call prints on stderr, for tests of log and warning lines:
 * ur_capture_begin() sends fd 2 to a temporary file, ur_capture_end() puts
 * it back and copies what came (at most len - 1 bytes, NUL-terminated)
 * into buf. Include after cmocka.h.
 */
#ifndef UR_TESTS_UNIT_CAPTURE_H
#define UR_TESTS_UNIT_CAPTURE_H

#include <stdio.h>
#include <unistd.h>

struct ur_capture {
	FILE *tmp;
	int saved;
};

static inline void ur_capture_begin(struct ur_capture *c)
{
	c->tmp = tmpfile();
	c->saved = dup(2);
	assert_non_null(c->tmp);
	assert_true(c->saved >= 0);
	fflush(stderr);
	assert_int_equal(dup2(fileno(c->tmp), 2), 2);
}

static inline void ur_capture_end(struct ur_capture *c, char *buf,
				  size_t len)
{
	size_t n;

	fflush(stderr);
	assert_int_equal(dup2(c->saved, 2), 2);
	close(c->saved);
	rewind(c->tmp);
	n = fread(buf, 1, len - 1, c->tmp);
	buf[n] = '\0';
	fclose(c->tmp);
}

#endif
