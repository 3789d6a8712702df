// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The opens of /dev/infiniband, for the shim: librdmacm opens rdma_cm,
 * which is an event channel of ringnicd here (rdma_cm.c).  Every other
 * open goes to libc untouched.  libc has eight entry points that open a
 * path; a program or library may call any of them.
 */
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/types.h>

#include "shim.h"

#define CM_PATH "/dev/infiniband/rdma_cm"

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);
typedef int (*open_2_fn)(const char *, int);
typedef int (*openat_2_fn)(int, const char *, int);

static bool is_cm_path(const char *path)
{
	return path && !strcmp(path, CM_PATH);
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

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
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

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
	if (needs_mode(flags)) {
		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return ((open_fn)rn_shim_next(&next, "open64"))(path, flags, mode);
}

/* CM_PATH is absolute: the directory descriptor does not matter. */
int openat(int dirfd, const char *path, int flags, ...)
{
	static void *_Atomic next;
	mode_t mode = 0;
	va_list ap;

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
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

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
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

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
	return ((open_2_fn)rn_shim_next(&next, "__open_2"))(path, flags);
}

int __open64_2(const char *path, int flags)
{
	static void *_Atomic next;

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
	return ((open_2_fn)rn_shim_next(&next, "__open64_2"))(path, flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	static void *_Atomic next;

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
	return ((openat_2_fn)rn_shim_next(&next, "__openat_2"))(dirfd, path,
							   flags);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	static void *_Atomic next;

	if (is_cm_path(path))
		return rn_shim_cm_open(flags);
	return ((openat_2_fn)rn_shim_next(&next, "__openat64_2"))(dirfd, path,
							     flags);
}
