// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The opens of /dev/infiniband, for the shim, so that no node has to exist
 * there: ringnicd creates nothing outside its runtime dir, and runs as any
 * user, in any container.
 * - libibverbs lists a uverbs device only if stat finds its node, and
 *   opens the node as the context's command fd; UCX checks the node with
 *   access.  The node of a device that ringnicd publishes (SYSFS_PATH/
 *   class/infiniband_verbs/NAME) stats as a character device anyone may
 *   read and write, with the number ringnicd published in NAME/dev.
 * - An open of it gives a command fd: an empty memfd named after the node,
 *   which fstat shows as that character device (libibverbs checks it, and
 *   ibv_import_device finds the device of a context by it).  It is sealed
 *   empty, so that a command written to it fails as an unknown one does;
 *   a dup of it names the same context (the provider's import_context).
 * - librdmacm opens rdma_cm: an event channel of ringnicd (rdma_cm.c).
 * Every other open, access or stat goes to libc untouched.  libc has
 * eight entry points that open a path and, counting those of libraries
 * built before glibc 2.33, four that stat one and four that stat an fd; a
 * program or library may call any of them.
 */
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "shim.h"

#define NODE_DIR "/dev/infiniband/"
#define CM_PATH NODE_DIR "rdma_cm"
/* The name of a command fd's memfd: this, then the node's name. */
#define CMD_FD_NAME "ringnic-uverbs:"

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
typedef int (*fstat_fn)(int, struct stat *);
typedef int (*fstat64_fn)(int, struct stat64 *);
typedef int (*fxstat_fn)(int, int, struct stat *);
typedef int (*fxstat64_fn)(int, int, struct stat64 *);

static int real_access(const char *path, int mode)
{
	static void *_Atomic next;

	return ((access_fn)rn_shim_next(&next, "access"))(path, mode);
}

/* A file of the uverbs device NAME that ringnicd publishes, or false. */
static bool uverbs_file(const char *name, const char *file, char *buf,
			size_t len)
{
	const char *sysfs = secure_getenv("SYSFS_PATH");

	return sysfs && *name && !strchr(name, '/') && strcmp(name, ".") &&
	       strcmp(name, "..") &&
	       (size_t)snprintf(buf, len, "%s/class/infiniband_verbs/%s/%s",
				sysfs, name, file) < len;
}

/* The node of a uverbs device that ringnicd publishes under SYSFS_PATH. */
static bool is_uverbs_node(const char *path)
{
	char ibdev[PATH_MAX];

	/* Every open and stat of the program comes here: the path first. */
	if (!path || strncmp(path, NODE_DIR, strlen(NODE_DIR)))
		return false;
	return uverbs_file(path + strlen(NODE_DIR), "ibdev", ibdev,
			   sizeof(ibdev)) &&
	       !real_access(ibdev, F_OK);
}

/* The number ringnicd published for the uverbs device NAME, or 0. */
static dev_t node_number(const char *name)
{
	static void *_Atomic next;
	unsigned int major, minor;
	char path[PATH_MAX], buf[32];
	ssize_t n;
	int fd;

	if (!uverbs_file(name, "dev", path, sizeof(path)))
		return 0;
	fd = ((open_fn)rn_shim_next(&next, "open"))(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	if (sscanf(buf, "%u:%u", &major, &minor) != 2)
		return 0;
	return makedev(major, minor);
}

static bool is_served(const char *path)
{
	return path && (!strcmp(path, CM_PATH) || is_uverbs_node(path));
}

static int serve(const char *path, int flags)
{
	char name[sizeof(CMD_FD_NAME) + NAME_MAX];
	int fd;

	if (!strcmp(path, CM_PATH))
		return rn_shim_cm_open(flags);
	snprintf(name, sizeof(name), CMD_FD_NAME "%s", path + strlen(NODE_DIR));
	fd = memfd_create(name, MFD_ALLOW_SEALING |
					(flags & O_CLOEXEC ? MFD_CLOEXEC : 0));
	/*
	 * Sealed empty: a write fails (EPERM), as the kernel's node refuses
	 * a command it does not know, and libibverbs then takes the shim's
	 * completion channels instead of a command it thinks succeeded.
	 */
	if (fd >= 0 && fcntl(fd, F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW |
						F_SEAL_SHRINK | F_SEAL_SEAL)) {
		close(fd);
		return -1;
	}
	return fd;
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

/* What the kernel's node of the uverbs device NAME would show. */
static int node_stat(const char *name, struct stat64 *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	st->st_rdev = node_number(name);
	return 0;
}

static void narrow_stat(const struct stat64 *st64, struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = st64->st_mode;
	st->st_nlink = st64->st_nlink;
	st->st_rdev = st64->st_rdev;
}

int stat(const char *path, struct stat *st)
{
	static void *_Atomic next;
	struct stat64 st64;

	if (!is_uverbs_node(path))
		return ((stat_fn)rn_shim_next(&next, "stat"))(path, st);
	node_stat(path + strlen(NODE_DIR), &st64);
	narrow_stat(&st64, st);
	return 0;
}

int stat64(const char *path, struct stat64 *st)
{
	static void *_Atomic next;

	if (!is_uverbs_node(path))
		return ((stat64_fn)rn_shim_next(&next, "stat64"))(path, st);
	return node_stat(path + strlen(NODE_DIR), st);
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
	return node_stat(path + strlen(NODE_DIR), st);
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

/*
 * The node's name if fd is a command fd the shim made: an open of a uverbs
 * node, or a dup of one, from this process or another.  st is what the
 * kernel says of fd.  Only an empty file with no name anywhere can be one,
 * so that the rest of the program's fstat calls cost a comparison more.
 * The name is the memfd's, read in /proc/self/fd: without a /proc of the
 * process's own PID namespace no command fd is recognised, and libibverbs
 * then refuses to open the device.
 */
static bool cmd_fd_name(int fd, const struct stat64 *st, char *name,
			size_t len)
{
	static const char prefix[] = "/memfd:" CMD_FD_NAME;
	char link[64], target[sizeof(prefix) + NAME_MAX + 16], *end;
	ssize_t n;

	if (!S_ISREG(st->st_mode) || st->st_nlink || st->st_size)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, target, sizeof(target) - 1);
	if (n <= 0)
		return false;
	target[n] = 0;
	if (strncmp(target, prefix, strlen(prefix)))
		return false;
	end = strstr(target, " (deleted)");
	if (end)
		*end = 0;
	return (size_t)snprintf(name, len, "%s", target + strlen(prefix)) < len;
}

static int real_fstat64(int fd, struct stat64 *st)
{
	static void *_Atomic next;

	return ((fstat64_fn)rn_shim_next(&next, "fstat64"))(fd, st);
}

bool rn_shim_cmd_fd(int fd)
{
	char name[NAME_MAX + 1];
	struct stat64 st;

	return !real_fstat64(fd, &st) && cmd_fd_name(fd, &st, name, sizeof(name));
}

/*
 * What fstat of an fd that stands for a node shows.  A command fd: the
 * node's character device, as the same file it is (the other fields, st_dev
 * and st_ino among them, are the memfd's).  An rdma_cm event channel: a
 * character device, which is all librdmacm checks (it reads no number).
 * st is what the kernel said, and is left alone for any other fd.
 */
static void node_fd_stat(int fd, struct stat64 *st)
{
	char name[NAME_MAX + 1];

	if (rn_shim_cm_fd(fd)) {
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = 0;
		return;
	}
	if (!cmd_fd_name(fd, st, name, sizeof(name)))
		return;
	st->st_mode = S_IFCHR | 0666;
	st->st_nlink = 1;
	st->st_rdev = node_number(name);
}

/* The same for the callers of struct stat: the fields it changes. */
static void node_fd_stat_narrow(int fd, struct stat *st)
{
	struct stat64 st64 = {
		.st_mode = st->st_mode,
		.st_nlink = st->st_nlink,
		.st_size = st->st_size,
		.st_rdev = st->st_rdev,
	};

	node_fd_stat(fd, &st64);
	st->st_mode = st64.st_mode;
	st->st_nlink = st64.st_nlink;
	st->st_rdev = st64.st_rdev;
}

int fstat64(int fd, struct stat64 *st)
{
	int ret = real_fstat64(fd, st);

	if (!ret)
		node_fd_stat(fd, st);
	return ret;
}

int fstat(int fd, struct stat *st)
{
	static void *_Atomic next;
	int ret = ((fstat_fn)rn_shim_next(&next, "fstat"))(fd, st);

	if (!ret)
		node_fd_stat_narrow(fd, st);
	return ret;
}

/* What libraries built before glibc 2.33 call for fstat. */
int __fxstat64(int ver, int fd, struct stat64 *st)
{
	static void *_Atomic next;
	int ret = ((fxstat64_fn)rn_shim_next(&next, "__fxstat64"))(ver, fd, st);

	if (!ret)
		node_fd_stat(fd, st);
	return ret;
}

int __fxstat(int ver, int fd, struct stat *st)
{
	static void *_Atomic next;
	int ret = ((fxstat_fn)rn_shim_next(&next, "__fxstat"))(ver, fd, st);

	if (!ret)
		node_fd_stat_narrow(fd, st);
	return ret;
}
