/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Between the parts of libringnic-shim.so (shim.c, devnodes.c, rdma_cm.c,
 * netlink.c).
 */
#ifndef RINGNIC_SHIM_H
#define RINGNIC_SHIM_H

#include <stdbool.h>
#include <stddef.h>

/*
 * libc's definition of a function we interpose, looked up at first use
 * and kept in *cache: other libraries' constructors may call us before
 * any of ours would run.
 */
void *rn_shim_next(void *_Atomic *cache, const char *name);

/*
 * ringnic-run's runtime dir, where each ringnicd has its sockets, in buf:
 * ringnic-run sets SYSFS_PATH to RUNTIME_DIR/sys.  False when the program
 * runs without ringnic-run.
 */
bool rn_shim_runtime_dir(char *buf, size_t len);

/*
 * The names in dir that end with suffix (a device's NAME.sock, NAME.cm),
 * in name order: *names holds the array and each name, all the caller's
 * to free.  Their count, or -1 with errno.
 */
int rn_shim_scan(const char *dir, const char *suffix, char ***names);

/* Whether fd is the command fd of a context of a ringnic device. */
bool rn_shim_cmd_fd(int fd);

/*
 * The provider's import_context gives the shim the new context's async
 * event fd, for the ASYNC_EVENT_ALLOC that ibv_import_device then asks of
 * the command fd (shim.c).  0 or an errno; the shim owns async_fd on
 * success.  The provider looks it up by name: the shim is preloaded.
 */
int rn_shim_offer_async_fd(int cmd_fd, int async_fd);
typedef int (*rn_shim_offer_async_fd_fn)(int cmd_fd, int async_fd);

/* An open of /dev/infiniband/rdma_cm: a new event channel of ringnicd. */
int rn_shim_cm_open(int flags);

/* Whether fd is such an event channel. */
bool rn_shim_cm_fd(int fd);

/* socket(AF_NETLINK, type, NETLINK_RDMA): answered by ringnicd (netlink.c). */
int rn_shim_netlink_socket(int type);

#endif
