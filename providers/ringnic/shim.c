// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libringnic-shim.so, preloaded by ringnic-run into unmodified programs.
 *
 * On a kernel with ib_core loaded, libibverbs enumerates devices over the
 * RDMA netlink socket and never reads SYSFS_PATH; refusing that one socket
 * makes it fall back to the sysfs-style tree ringnicd publishes.
 */
#include <dlfcn.h>
#include <errno.h>
#include <sys/socket.h>
#include <linux/netlink.h>

typedef int (*socket_fn)(int, int, int);

int socket(int domain, int type, int protocol)
{
	static socket_fn real;

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!real)
		real = (socket_fn)dlsym(RTLD_NEXT, "socket");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(domain, type, protocol);
}
