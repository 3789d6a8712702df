// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Requests to ringnicd over the context's control socket. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ringnic.h"

static int send_req(int fd, void *req, size_t len, const int *fds, int nfds)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RN_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cmsg;
	struct iovec iov = { req, len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t n;

	if (nfds) {
		struct cmsghdr *c;

		/* Padding of the header is sent too: no stack garbage. */
		memset(&cmsg, 0, sizeof(cmsg));
		mh.msg_control = cmsg.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	do
		n = sendmsg(fd, &mh, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)len ? 0 : ENODEV;
}

/* Receive the response; up to nfds descriptors kept in fds (*have). */
static int recv_resp(int fd, void *resp, size_t len, int *fds, int nfds,
		     size_t *got, int *have)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * RN_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cmsg;
	struct iovec iov = { resp, len };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cmsg.buf,
		.msg_controllen = sizeof(cmsg.buf),
	};
	struct cmsghdr *c;
	ssize_t n;
	int i;

	do
		n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return ENODEV;
	for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		size_t cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < (int)cnt; i++) {
			int rfd;

			memcpy(&rfd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*have < nfds)
				fds[(*have)++] = rfd;
			else
				close(rfd);
		}
	}
	*got = n;
	return mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC) ? EPROTO : 0;
}

/*
 * One request, one response.  Returns 0 with exactly nfds_out descriptors
 * in fds_out and resp_len bytes in resp, or a positive errno (ENODEV once
 * the device is gone) with no descriptor left open.
 */
int rn_ctl_call(struct rn_context *ctx, void *req, size_t req_len, void *resp,
		size_t resp_len, const int *fds_in, int nfds_in, int *fds_out,
		int nfds_out)
{
	struct rn_ctl_resp_hdr *hdr = resp;
	size_t got = 0;
	int ret, i, have = 0;

	((struct rn_ctl_req_hdr *)req)->len = req_len;
	pthread_mutex_lock(&ctx->home->ctl_lock);
	if (rn_dead(ctx)) {
		ret = ENODEV;
	} else {
		ret = send_req(ctx->ctl_fd, req, req_len, fds_in, nfds_in);
		if (!ret)
			ret = recv_resp(ctx->ctl_fd, resp, resp_len, fds_out,
					nfds_out, &got, &have);
	}
	pthread_mutex_unlock(&ctx->home->ctl_lock);

	if (!ret && (got < sizeof(*hdr) || hdr->len != got))
		ret = EPROTO;
	if (!ret && hdr->status)
		ret = hdr->status > 0 ? hdr->status : EPROTO;
	if (!ret && (got != resp_len || have != nfds_out))
		ret = EPROTO;
	if (ret)
		for (i = 0; i < have; i++)
			close(fds_out[i]);
	return ret;
}

/* Map a queue the device sent, then drop the descriptor. */
void *rn_map_fd(int fd, size_t size)
{
	void *mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	close(fd);
	return mem == MAP_FAILED ? NULL : mem;
}

/* A request that names one handle and answers with nothing but a status. */
int rn_ctl_handle_call(struct ibv_context *context, enum rn_ctl_op op,
		       uint32_t handle)
{
	struct rn_ctl_handle_req req = { .hdr.op = op, .handle = handle };
	struct rn_ctl_resp_hdr resp;

	return rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
			   sizeof(resp), NULL, 0, NULL, 0);
}
