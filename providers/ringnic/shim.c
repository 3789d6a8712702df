// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libringnic-shim.so, preloaded by ringnic-run into unmodified programs:
 * the things of the kernel that libibverbs and librdmacm need and a
 * userspace device cannot provide through the provider interface.
 *
 * - RDMA netlink sockets (netlink.c): ringnicd answers them, for the rdma
 *   tool; libibverbs, which would list devices over one and never read
 *   SYSFS_PATH, is refused one and reads the tree ringnicd publishes.
 * - ibv_create_comp_channel asks the kernel for an event file.  Here a
 *   channel is a pipe: ringnicd writes the events (8-byte CQ handles, what
 *   ibv_get_cq_event reads) into it directly, and it works with poll,
 *   epoll and O_NONBLOCK like the kernel's.  The shim keeps one write end
 *   so that a channel with no CQ yet blocks instead of reading EOF.
 * - librdmacm writes its commands to /dev/infiniband/rdma_cm: devnodes.c
 *   turns each open of it into an event channel of ringnicd (rdma_cm.c).
 * - ibv_import_device asks the kernel, on the command fd, for the new
 *   context's async event fd: the one the provider's import_context
 *   offered just before.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/rdma_user_ioctl_cmds.h>

#include "shim.h"

typedef int (*socket_fn)(int, int, int);
typedef struct ibv_comp_channel *(*create_channel_fn)(struct ibv_context *);
typedef int (*destroy_channel_fn)(struct ibv_comp_channel *);
typedef int (*ioctl_fn)(int, unsigned long, ...);

void *rn_shim_next(void *_Atomic *cache, const char *name)
{
	void *fn = atomic_load_explicit(cache, memory_order_relaxed);

	if (!fn) {
		fn = dlsym(RTLD_NEXT, name);
		atomic_store_explicit(cache, fn, memory_order_relaxed);
	}
	return fn;
}

bool rn_shim_runtime_dir(char *buf, size_t len)
{
	const char *sysfs = secure_getenv("SYSFS_PATH");
	char copy[PATH_MAX];

	if (!sysfs || (size_t)snprintf(copy, sizeof(copy), "%s", sysfs) >=
			      sizeof(copy))
		return false;
	return (size_t)snprintf(buf, len, "%s", dirname(copy)) < len;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int rn_shim_scan(const char *dir, const char *suffix, char ***names)
{
	size_t slen = strlen(suffix), len;
	char **list = NULL, **grown;
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0, saved;

	if (!d)
		return -1;
	while ((e = readdir(d))) {
		len = strlen(e->d_name);
		if (len <= slen || strcmp(e->d_name + len - slen, suffix))
			continue;
		grown = realloc(list, (n + 1) * sizeof(*list));
		if (!grown || !(grown[n] = strdup(e->d_name))) {
			list = grown ? grown : list;
			goto fail;
		}
		list = grown;
		n++;
	}
	closedir(d);
	qsort(list, n, sizeof(*list), by_name);
	*names = list;
	return n;

fail:
	saved = ENOMEM;
	closedir(d);
	while (n--)
		free(list[n]);
	free(list);
	errno = saved;
	return -1;
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

	if (domain == AF_NETLINK && protocol == NETLINK_RDMA)
		return rn_shim_netlink_socket(type);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(domain, type, protocol);
}

/* A descriptor for each of some descriptors of the program, under a lock. */
struct fd_map {
	pthread_mutex_t lock;
	int *fds; /* indexed by the key descriptor; -1: none */
	int n;
};

static int fd_map_put(struct fd_map *map, int key, int fd)
{
	int ret = 0;

	pthread_mutex_lock(&map->lock);
	if (key >= map->n) {
		int n = key + 64, *grown = realloc(map->fds, n * sizeof(int));

		if (!grown) {
			ret = ENOMEM;
			goto out;
		}
		while (map->n < n)
			grown[map->n++] = -1;
		map->fds = grown;
	}
	map->fds[key] = fd;
out:
	pthread_mutex_unlock(&map->lock);
	return ret;
}

/* The descriptor kept for key, now the caller's; -1 if none. */
static int fd_map_take(struct fd_map *map, int key)
{
	int fd = -1;

	pthread_mutex_lock(&map->lock);
	if (key >= 0 && key < map->n) {
		fd = map->fds[key];
		map->fds[key] = -1;
	}
	pthread_mutex_unlock(&map->lock);
	return fd;
}

/* The kept write end of each channel, by the channel's read end. */
static struct fd_map kept = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The async event fd offered for the context of each command fd. */
static struct fd_map offered = { .lock = PTHREAD_MUTEX_INITIALIZER };

int rn_shim_offer_async_fd(int cmd_fd, int async_fd)
{
	int old;

	if (cmd_fd < 0)
		return EBADF;
	old = fd_map_take(&offered, cmd_fd);
	if (old >= 0)
		close(old); /* an import that failed before asking for it */
	return fd_map_put(&offered, cmd_fd, async_fd);
}

/*
 * RDMA_VERBS_IOCTL on a command fd: ASYNC_EVENT_ALLOC answers with the
 * offered fd, as the kernel answers with a new one; any other method
 * fails as on the memfd itself (ENOTTY), as it did before import existed.
 */
static int verbs_ioctl(int fd, struct ib_uverbs_ioctl_hdr *hdr)
{
	int async_fd;

	if (hdr->object_id != UVERBS_OBJECT_ASYNC_EVENT ||
	    hdr->method_id != UVERBS_METHOD_ASYNC_EVENT_ALLOC ||
	    hdr->num_attrs != 1 ||
	    hdr->attrs[0].attr_id != UVERBS_ATTR_ASYNC_EVENT_ALLOC_FD_HANDLE) {
		errno = ENOTTY;
		return -1;
	}
	async_fd = fd_map_take(&offered, fd);
	if (async_fd < 0) {
		errno = ENOTTY;
		return -1;
	}
	hdr->attrs[0].data = async_fd;
	return 0;
}

int ioctl(int fd, unsigned long request, ...)
{
	static void *_Atomic next;
	va_list ap;
	void *arg;

	va_start(ap, request);
	arg = va_arg(ap, void *);
	va_end(ap);
	if (request == RDMA_VERBS_IOCTL && rn_shim_cmd_fd(fd))
		return verbs_ioctl(fd, arg);
	return ((ioctl_fn)rn_shim_next(&next, "ioctl"))(fd, request, arg);
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
	if (fd_map_put(&kept, p[0], p[1])) {
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
	int fd = channel->fd, kept_fd, ret;

	/* libibverbs checks refcnt, closes the read end and frees. */
	ret = real ? real(channel) : ENOSYS;
	if (!ret) {
		kept_fd = fd_map_take(&kept, fd);
		if (kept_fd >= 0)
			close(kept_fd);
	}
	return ret;
}
