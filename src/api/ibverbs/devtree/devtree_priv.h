/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the device tree's files share. devtree.c publishes the tree and
 * follows the process's life (exit, fork); devtree_refresh.c keeps the
 * counter files and the QP list current while a device is open;
 * devtree_files.c writes files. Calls go only that way down.
 */
#ifndef UR_API_IBVERBS_DEVTREE_PRIV_H
#define UR_API_IBVERBS_DEVTREE_PRIV_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "api/ibverbs/devtree/devtree.h"
#include "util/compiler.h"

/* This process's tree. lock guards all of it and the refresher's state. */
struct devtree_state {
	pthread_mutex_t lock;
	pid_t pid;			/* the process the tree belongs to */
	char dir[PATH_MAX];		/* <root>/<pid> */
	char sys[PATH_MAX];		/* <root>/<pid>/sys */
	struct ur_device *devs;
	unsigned int ndev;
};
extern struct devtree_state devtree;

/* devtree_files.c: every file is replaced whole (it trades places with a
 * kept shadow, or one is renamed over it), so a reader sees the old or the
 * new value, never a partial one. */
int tree_mkdirs(const char *path);
/* <root>/<pid>/TREE_SHADOW_DIR holds the files' shadows (devtree_files.c) */
#define TREE_SHADOW_DIR "shadow"

/* dir/name := buf[0..len). 0 or -errno. */
int tree_put_buf(const char *dir, const char *name, const char *buf,
		 size_t len);
/* dir/name := the formatted text plus a newline. 0 or -errno. */
int UR_PRINTF(3, 4) tree_put(const char *dir, const char *name,
			     const char *fmt, ...);
void UR_PRINTF(3, 4) tree_pathf(char *buf, size_t len, const char *fmt, ...);
/* <sys>/class/infiniband/<dev> */
void tree_ibdev_dir(const struct ur_device *dev, char *buf, size_t len);

/* devtree_refresh.c; devtree.lock held for all of these. */
/* Forgets what the files of the last tree said: 0 or -ENOMEM. */
int refresh_reset(unsigned int ndev);
/* Rewrites the counter files and QP list of devtree.devs[i] that changed
 * (the device's NIC must run). */
void refresh_device(unsigned int i);
/* Starts the refresher thread (every UR_DEVTREE_REFRESH_MS while a device
 * is open) unless it runs. */
void refresher_start(void);
/* Stops the refresher and waits for it (drops the lock meanwhile); false
 * if it did not end within UR_DEVTREE_EXIT_WAIT_MS (then still running). */
bool refresher_stop(void);
/* Whether the calling thread is the refresher (no lock needed). */
bool refresher_is_self(void);
/* Fills dl with the CLOCK_REALTIME time UR_DEVTREE_EXIT_WAIT_MS from now. */
void devtree_deadline(struct timespec *dl);
/* Once per process, and in a forked child (which has no refresher). */
void refresher_init(void);

#endif
