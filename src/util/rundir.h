/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The per-user runtime directory every uroce process shares:
 * $XDG_RUNTIME_DIR/uroce-<uid>, or /tmp/uroce-<uid> when XDG_RUNTIME_DIR is
 * unset, empty, not absolute or not a directory we may write (sudo may
 * keep another user's). It holds one <pid>/ directory per process (its
 * device tree, api/ibverbs/devtree/), librdmacm's rendezvous files
 * (api/rdmacm/rendezvous.c) and the XRC domains' registries
 * (obj/xrc_host.c); the interposer finds the trees there. All must agree
 * on the path, so all take it from ur_rundir_path() (the
 * interposer compiles this file into itself: it uses libc only).
 *
 * The directory is created mode 0700 and used only when it is a real
 * directory (not a symlink) owned by us with no group/other access, so
 * another user of a shared /tmp can neither read it nor plant one for us.
 */
#ifndef UR_UTIL_RUNDIR_H
#define UR_UTIL_RUNDIR_H

#include <stddef.h>

/* Writes the root's path into buf without creating or checking it.
 * 0 or -ENAMETOOLONG. */
int ur_rundir_path(char *buf, size_t len);

/* Writes the root into buf, creating it if needed. 0 or -errno. */
int ur_rundir_root(char *buf, size_t len);

/* Removes path and everything under it, never following symlinks.
 * 0 (also when path did not exist) or -errno. */
int ur_rundir_rm_tree(const char *path);

#endif
