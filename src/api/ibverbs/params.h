/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libibverbs' own tunables (the engine's are in engine/params.h, the
 * link's in link/params.h), each with why it has its value.
 */
#ifndef UR_API_IBVERBS_PARAMS_H
#define UR_API_IBVERBS_PARAMS_H

/*
 * How often the device tree's counter files are refreshed while a device
 * is open. The ecosystem issue asks for counters at most 100 ms old while
 * traffic flows; a file is at most two periods old, and an idle round
 * writes nothing, so 50 ms costs 1.5-2 ms of CPU per idle second.
 */
#define UR_DEVTREE_REFRESH_MS 50

/* Counter files the refresher keeps per device: the engine's and the
 * link's counters are 64 today; one past this bound is not published. */
#define UR_DEVTREE_MAX_COUNTERS 128

/* How long exit() waits for the device tree's lock and for the refresher
 * to end its round (microseconds when all is well) before leaving the
 * tree for the next process to remove: the holder may be a thread that
 * will never run again (it called exit() from a signal handler, or is
 * blocked in one). */
#define UR_DEVTREE_EXIT_WAIT_MS 2000

#endif
