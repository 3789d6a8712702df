// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libringnic-shim.so, preloaded by ringnic-run into unmodified programs:
 * the things of the kernel that libibverbs and librdmacm need and a
 * userspace device cannot provide through the provider interface.
 *
 * - On a kernel with ib_core loaded, libibverbs enumerates devices over the
 *   RDMA netlink socket and never reads SYSFS_PATH; refusing that one
 *   socket makes it fall back to the tree ringnicd publishes.
 * - ibv_create_comp_channel asks the kernel for an event file.  Here a
 *   channel is a pipe: ringnicd writes the events (8-byte CQ handles, what
 *   ibv_get_cq_event reads) into it directly, and it works with poll,
 *   epoll and O_NONBLOCK like the kernel's.  The shim keeps one write end
 *   so that a channel with no CQ yet blocks instead of reading EOF.
 * - librdmacm writes its commands to /dev/infiniband/rdma_cm: devnodes.c
 *   turns each open of it into an event channel of ringnicd (rdma_cm.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <infiniband/verbs.h>

#include "shim.h"

typedef int (*socket_fn)(int, int, int);
typedef struct ibv_comp_channel *(*create_channel_fn)(struct ibv_context *);
typedef int (*destroy_channel_fn)(struct ibv_comp_channel *);

void *rn_shim_next(void *_Atomic *cache, const char *name)
{
	void *fn = atomic_load_explicit(cache, memory_order_relaxed);

	if (!fn) {
		fn = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, fn, memory_order_relaxed);
	}
	return fn;
}

/*
 * libibverbs' own definition of a function.  RTLD_NEXT finds it only when
 * libibverbs is in the program's global scope; a program that loads it
 * inside a plugin (UCX: dlopen of libuct_ib.so, RTLD_LOCAL) calls our
 * definition all the same, since preloaded symbols come first.  A handle
 * of the library itself finds it however it was loaded; it is loaded, or
 * its caller could not have called us.
 */
static void *ibverbs(const char *name)
{
	void *lib = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	void *fn;

	if (!lib)
		return dlsym(RTLD_NEXT, name);
	fn = dlsym(lib, name);
	dlclose(lib); /* NOLOAD took a reference: give it back */
	return fn;
}

int socket(int domain, int type, int protocol)
{
	socket_fn real = (socket_fn)dlsym(RTLD_NEXT, "socket");

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(domain, type, protocol);
}

/* The kept write end of each channel, indexed by the channel's read end. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static int *kept;
static int nkept;

static int keep(int read_fd, int write_fd)
{
	int ret = 0;

	pthread_mutex_lock(&kept_lock);
	if (read_fd >= nkept) {
		int n = read_fd + 64, *grown = realloc(kept, n * sizeof(*kept));

		if (!grown) {
			ret = -1;
			goto out;
		}
		while (nkept < n)
			grown[nkept++] = -1;
		kept = grown;
	}
	kept[read_fd] = write_fd;
out:
	pthread_mutex_unlock(&kept_lock);
	return ret;
}

static void drop(int read_fd)
{
	pthread_mutex_lock(&kept_lock);
	if (read_fd >= 0 && read_fd < nkept && kept[read_fd] >= 0) {
		close(kept[read_fd]);
		kept[read_fd] = -1;
	}
	pthread_mutex_unlock(&kept_lock);
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	create_channel_fn real =
		(create_channel_fn)ibverbs("ibv_create_comp_channel");
	struct ibv_comp_channel *channel;
	int p[2];

	/* A device with a kernel behind it gets the kernel's channel. */
	channel = real ? real(context) : NULL;
	if (channel)
		return channel;

	channel = calloc(1, sizeof(*channel));
	if (!channel)
		return NULL;
	if (pipe2(p, O_CLOEXEC)) {
		free(channel);
		return NULL;
	}
	if (keep(p[0], p[1])) {
		close(p[0]);
		close(p[1]);
		free(channel);
		errno = ENOMEM;
		return NULL;
	}
	channel->context = context;
	channel->fd = p[0];
	return channel;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	destroy_channel_fn real =
		(destroy_channel_fn)ibverbs("ibv_destroy_comp_channel");
	int fd = channel->fd, ret;

	/* libibverbs checks refcnt, closes the read end and frees. */
	ret = real ? real(channel) : ENOSYS;
	if (!ret)
		drop(fd);
	return ret;
}
