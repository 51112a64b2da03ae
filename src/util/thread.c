/* SPDX-License-Identifier: BSD-2-Clause */
/* Creating uroce's internal threads (thread.h). */
#include <pthread.h>

#include "util/thread.h"

/* attr: the process's defaults with the stack raised to our minimum. */
static int thread_attr(pthread_attr_t *attr)
{
	size_t sz = 0;
	int rc = pthread_getattr_default_np(attr);

	if (rc) {
		rc = pthread_attr_init(attr);
		if (rc)
			return rc;
	}
	if (pthread_attr_getstacksize(attr, &sz) || sz < UR_THREAD_STACK_MIN)
		rc = pthread_attr_setstacksize(attr, UR_THREAD_STACK_MIN);
	if (rc)
		pthread_attr_destroy(attr);
	return rc;
}

int ur_thread_create(pthread_t *t, void *(*fn)(void *), void *arg,
		     const char *name)
{
	pthread_attr_t attr;
	int rc = thread_attr(&attr);

	if (rc)
		return rc;
	rc = pthread_create(t, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	if (!rc && name)
		pthread_setname_np(*t, name);
	return rc;
}

size_t ur_thread_stack_size(void)
{
	pthread_attr_t attr;
	size_t sz = 0;

	if (thread_attr(&attr))
		return 0;
	pthread_attr_getstacksize(&attr, &sz);
	pthread_attr_destroy(&attr);
	return sz;
}
