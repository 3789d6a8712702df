// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The opens of /dev/infiniband, for the shim, so that no node has to exist
 * there: ringnicd creates nothing outside its runtime dir, and runs as any
 * user, in any container.
 * - libibverbs lists a uverbs device only if stat finds its node, and
 *   opens the node as the context's command fd; UCX checks the node with
 *   access.  The node of a device that ringnicd publishes (SYSFS_PATH/
 *   class/infiniband_verbs/NAME) stats as a character device anyone may
 *   read and write, and opens /dev/full: nothing is ever written to it in
 *   userspace mode, and a write would fail with ENOSPC.
 * - librdmacm opens rdma_cm: an event channel of ringnicd (rdma_cm.c).
 * Every other open, access or stat goes to libc untouched.  libc has
 * eight entry points that open a path and, counting those of libraries
 * built before glibc 2.33, four that stat one; a program or library may
 * call any of them.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "shim.h"

#define NODE_DIR "/dev/infiniband/"
#define CM_PATH NODE_DIR "rdma_cm"

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open_2_fn)(const char *, int);
typedef int (*openat_2_fn)(int, const char *, int);
typedef int (*access_fn)(const char *, int);
typedef int (*faccessat_fn)(int, const char *, int, int);
typedef int (*stat_fn)(const char *, struct stat *);
typedef int (*stat64_fn)(const char *, struct stat64 *);
typedef int (*xstat_fn)(int, const char *, struct stat *);
typedef int (*xstat64_fn)(int, const char *, struct stat64 *);

static int real_access(const char *path, int mode)
{
	static void *_Atomic next;

	return ((access_fn)rn_shim_next(&next, "access"))(path, mode);
}

/* The node of a uverbs device that ringnicd publishes under SYSFS_PATH. */
static bool is_uverbs_node(const char *path)
{
	const char *sysfs, *name;
	char ibdev[PATH_MAX];

	/* Every open and stat of the program comes here: the path first. */
	if (!path || strncmp(path, NODE_DIR, strlen(NODE_DIR)))
		return false;
	sysfs = secure_getenv("SYSFS_PATH");
	if (!sysfs)
		return false;
	name = path + strlen(NODE_DIR);
	return *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..") &&
	       (size_t)snprintf(ibdev, sizeof(ibdev),
				"%s/class/infiniband_verbs/%s/ibdev", sysfs,
				name) < sizeof(ibdev) &&
	       !real_access(ibdev, F_OK);
}

static bool is_served(const char *path)
{
	return path && (!strcmp(path, CM_PATH) || is_uverbs_node(path));
}

static int serve(const char *path, int flags)
{
	static void *_Atomic next;

	if (!strcmp(path, CM_PATH))
		return rn_shim_cm_open(flags);
	return ((open_fn)rn_shim_next(&next, "open"))(
		"/dev/full", O_RDWR | (flags & O_CLOEXEC));
}

static bool needs_mode(int flags)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE;
}

int open(const char *path, int flags, ...)
{
	static void *_Atomic next;
	mode_t mode = 0;
	va_list ap;

	if (is_served(path))
		return serve(path, flags);
	if (needs_mode(flags)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return ((open_fn)rn_shim_next(&next, "open"))(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	static void *_Atomic next;
	mode_t mode = 0;
	va_list ap;

	if (is_served(path))
		return serve(path, flags);
	if (needs_mode(flags)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return ((open_fn)rn_shim_next(&next, "open64"))(path, flags, mode);
}

/* The paths served are absolute: the directory descriptor does not matter. */
int openat(int dirfd, const char *path, int flags, ...)
{
	static void *_Atomic next;
	mode_t mode = 0;
	va_list ap;

	if (is_served(path))
		return serve(path, flags);
	if (needs_mode(flags)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return ((openat_fn)rn_shim_next(&next, "openat"))(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	static void *_Atomic next;
	mode_t mode = 0;
	va_list ap;

	if (is_served(path))
		return serve(path, flags);
	if (needs_mode(flags)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return ((openat_fn)rn_shim_next(&next, "openat64"))(dirfd, path, flags,
						       mode);
}

/* What programs built with _FORTIFY_SOURCE call instead. */
int __open_2(const char *path, int flags)
{
	static void *_Atomic next;

	if (is_served(path))
		return serve(path, flags);
	return ((open_2_fn)rn_shim_next(&next, "__open_2"))(path, flags);
}

int __open64_2(const char *path, int flags)
{
	static void *_Atomic next;

	if (is_served(path))
		return serve(path, flags);
	return ((open_2_fn)rn_shim_next(&next, "__open64_2"))(path, flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	static void *_Atomic next;

	if (is_served(path))
		return serve(path, flags);
	return ((openat_2_fn)rn_shim_next(&next, "__openat_2"))(dirfd, path,
							   flags);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	static void *_Atomic next;

	if (is_served(path))
		return serve(path, flags);
	return ((openat_2_fn)rn_shim_next(&next, "__openat64_2"))(dirfd, path,
							     flags);
}

/* What the kernel's node of a uverbs device would show, but its number:
 * 0:0 is what ringnicd publishes as the device's dev, and what libibverbs
 * then does not check.
 */
static int node_stat(struct stat64 *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	return 0;
}

int stat(const char *path, struct stat *st)
{
	static void *_Atomic next;
	struct stat64 st64;

	if (!is_uverbs_node(path))
		return ((stat_fn)rn_shim_next(&next, "stat"))(path, st);
	node_stat(&st64);
	memset(st, 0, sizeof(*st));
	st->st_mode = st64.st_mode;
	st->st_nlink = st64.st_nlink;
	return 0;
}

int stat64(const char *path, struct stat64 *st)
{
	static void *_Atomic next;

	if (!is_uverbs_node(path))
		return ((stat64_fn)rn_shim_next(&next, "stat64"))(path, st);
	return node_stat(st);
}

/* What libraries built before glibc 2.33 call for stat. */
int __xstat(int ver, const char *path, struct stat *st)
{
	static void *_Atomic next;

	if (!is_uverbs_node(path))
		return ((xstat_fn)rn_shim_next(&next, "__xstat"))(ver, path, st);
	return stat(path, st);
}

int __xstat64(int ver, const char *path, struct stat64 *st)
{
	static void *_Atomic next;

	if (!is_uverbs_node(path))
		return ((xstat64_fn)rn_shim_next(&next, "__xstat64"))(ver, path,
								       st);
	return node_stat(st);
}

/* Anyone may read and write the node, as the kernel's 0666 one. */
int access(const char *path, int mode)
{
	if (!is_uverbs_node(path))
		return real_access(path, mode);
	return 0;
}

int faccessat(int dirfd, const char *path, int mode, int flags)
{
	static void *_Atomic next;

	if (!is_uverbs_node(path))
		return ((faccessat_fn)rn_shim_next(&next, "faccessat"))(
			dirfd, path, mode, flags);
	return 0;
}
