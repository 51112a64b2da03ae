/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-process device tree: what /sys shows for a RoCE device, written
 * for uroce's devices under the runtime directory (util/rundir.h) as
 * <root>/<pid>/sys/class/infiniband/<dev>/... and
 * <root>/<pid>/sys/class/infiniband_verbs/<dev_name>/..., so that programs
 * and tools that read sysfs (UCX, Open MPI, pyverbs, ibstat-like scripts)
 * find ports, GIDs, GID types, net devices and live hw_counters.
 * ibv_get_sysfs_path() is <root>/<pid>/sys and every device's
 * ibdev_path/dev_path point into it.
 *
 * Counters (ports/1/hw_counters and ports/1/counters) are rewritten from the
 * engine's every UR_DEVTREE_REFRESH_MS by one thread that runs while a
 * device is open, each file only when its value changed (so they are at
 * most two periods old while traffic flows, and an idle round writes
 * nothing). The tree is removed at exit; trees of processes that are
 * gone (killed) are removed by the next process that publishes one.
 */
#ifndef UR_API_IBVERBS_DEVTREE_H
#define UR_API_IBVERBS_DEVTREE_H

#include "api/ibverbs/params.h"
#include "obj/obj.h"

/*
 * Writes the tree of devs[0..n) once per process (and again in a forked
 * child) and points their paths into it. Failure is logged and leaves the
 * devices without a tree (verbs work the same). Thread-safe.
 */
void ur_devtree_publish(struct ur_device *devs, unsigned int n);

/* A device's NIC has started: port attributes and GIDs are rewritten (the
 * NIC may have picked a new address) and counters refresh while open. */
void ur_devtree_device_opened(struct ur_device *dev);

/* <root>/<pid>/sys, or a path that does not exist when there is no tree. */
const char *ur_devtree_sysfs_path(void);

#endif
