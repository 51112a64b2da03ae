/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An event queue's file descriptor: an eventfd in semaphore mode whose
 * count equals the number of queued events, so that it polls readable
 * exactly while one waits (ibv_comp_channel, ibv_context.async_fd and
 * rdma_event_channel hand such an fd to the application).
 *
 * The count is changed only under the lock that guards the queue, one
 * step with each event queued or taken. A reader therefore never takes a
 * count without taking its event in the same critical section: were the
 * two apart, a thread purging the queue under the lock (a destroyed id or
 * CQ drops its events) could find the count already taken and block in
 * read() with the lock held, and the reader, waiting for that lock, would
 * never give it back (an rping client hung this way in rdma_destroy_id).
 */
#ifndef UR_UTIL_EVCOUNT_H
#define UR_UTIL_EVCOUNT_H

/* A new fd with a count of zero, close-on-exec; -1 and errno on failure. */
int ur_evcount_open(void);
/* One event queued / one taken: call with the queue's lock held. Taking
 * never blocks, since the count equals the queue's length. */
void ur_evcount_add(int fd);
void ur_evcount_take(int fd);
/* Without the lock, after finding the queue empty: returns 0 once the
 * count may be non-zero (check the queue again), -EAGAIN at once if the
 * application made the fd non-blocking, -EINTR on a signal, or -errno. */
int ur_evcount_wait(int fd);

#endif
