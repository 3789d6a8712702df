// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "have_uffd.h"

bool rn_test_have_uffd(void)
{
	static int have = -1;

	if (have < 0) {
		int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

		if (fd < 0 && errno == EINVAL)
			fd = syscall(SYS_userfaultfd, O_CLOEXEC);
		have = fd >= 0;
		if (fd >= 0)
			close(fd);
	}
	return have;
}
