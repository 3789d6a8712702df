// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "send_fds.h"

int rn_test_send_fds(int sock, const void *msg, size_t len, const int *fds,
		     int nfds, int flags)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RN_TEST_SEND_FDS_MAX)];
		struct cmsghdr align;
	} ctl = { { 0 } };
	struct iovec iov = { (void *)msg, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds < 0 || nfds > RN_TEST_SEND_FDS_MAX)
		return EMSGSIZE;
	if (nfds) {
		struct cmsghdr *c;

		mh.msg_control = ctl.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
	if (n < 0)
		return errno;
	return n == (ssize_t)len ? 0 : EMSGSIZE;
}
