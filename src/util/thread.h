/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * uroce's own threads (the progress thread, the device tree's refresher,
 * rdma_cm's agent, rsockets' keepalive, the XRC ring waker) run in the
 * application's process, whose default thread attributes are the
 * application's: a program or library that made the default stack small
 * (pthread_setattr_default_np, a small RLIMIT_STACK) would have our
 * threads overflow it in stdio or in a chained signal handler, and a stack
 * overflow there is a SIGSEGV in the application. So every thread of ours
 * gets at least UR_THREAD_STACK_MIN, and a larger default as it is.
 */
#ifndef UR_UTIL_THREAD_H
#define UR_UTIL_THREAD_H

#include <pthread.h>

/* Room for the deepest chain of ours (stdio's formatting, open_memstream,
 * two PATH_MAX buffers) with a large margin for signal handlers that the
 * application installed and that run on whichever thread faulted. */
#define UR_THREAD_STACK_MIN (1024 * 1024)

/*
 * pthread_create(t, NULL, fn, arg) with the process's default attributes
 * but a stack of at least UR_THREAD_STACK_MIN, named name (15 characters
 * at most, for top -H and the tests) if not NULL. 0 or a positive errno.
 */
int ur_thread_create(pthread_t *t, void *(*fn)(void *), void *arg,
		     const char *name);

/* The stack size ur_thread_create gives a new thread now. */
size_t ur_thread_stack_size(void);

#endif
