// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The control socket: one SOCK_SEQPACKET connection per opened context.
 * The peer is identified by SO_PEERCRED, never by what it says.  A message
 * that breaks the protocol (wrong size, unknown op, unexpected descriptors)
 * closes the connection, which frees everything the client had.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ringnicd.h"

#define RN_MAX_FDS 2

int rn_control_listen(struct rn_device *dev)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (strlen(dev->ctl_path) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	strcpy(sa.sun_path, dev->ctl_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	unlink(dev->ctl_path);
	/* Anyone may open the device: it only ever touches the memory of the
	 * process on the other end of the connection.
	 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(dev->ctl_path, 0666) || listen(fd, 128)) {
		int ret = errno;

		close(fd);
		return ret;
	}
	dev->listen_fd = fd;
	dev->listening = true;
	dev->listen_watch = (struct rn_watch){ RN_WATCH_LISTEN, dev };
	ev.data.ptr = &dev->listen_watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev))
		return errno;
	return 0;
}

void rn_control_accept(struct rn_device *dev)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rn_client *client;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	fd = accept4(dev->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	client = calloc(1, sizeof(*client));
	if (!client ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		free(client);
		close(fd);
		return;
	}
	client->dev = dev;
	client->fd = fd;
	client->pid = cred.pid;
	client->uid = cred.uid;
	client->async_fd = -1;
	client->wake_fd = -1;
	rn_client_tables_init(client);
	client->watch = (struct rn_watch){ RN_WATCH_CLIENT, client };
	ev.data.ptr = &client->watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		free(client);
		return;
	}
	rn_list_add_tail(&dev->clients, &client->link);
	rn_dbg("client pid %d connected\n", client->pid);
}

void rn_client_destroy(struct rn_client *client)
{
	struct rn_device *dev = client->dev;

	rn_dbg("client pid %d gone\n", client->pid);
	epoll_ctl(dev->epoll_fd, EPOLL_CTL_DEL, client->fd, NULL);
	close(client->fd);
	rn_client_objects_destroy(client);
	if (client->wake_fd >= 0) {
		epoll_ctl(dev->epoll_fd, EPOLL_CTL_DEL, client->wake_fd, NULL);
		close(client->wake_fd);
	}
	if (client->async_fd >= 0)
		close(client->async_fd);
	if (client->dev_page)
		munmap(client->dev_page, RN_DEV_PAGE_SIZE);
	rn_list_del(&client->link);
	free(client);
}

/* ---- one message ------------------------------------------------------- */

struct rn_msg {
	union {
		struct rn_ctl_req_hdr hdr;
		uint8_t buf[RN_CTL_MSG_MAX];
	} req;
	size_t len;
	int fds[RN_MAX_FDS];
	int nfds;
};

struct rn_reply {
	union {
		struct rn_ctl_resp_hdr hdr;
		uint8_t buf[RN_CTL_MSG_MAX];
	} resp;
	int fds[RN_MAX_FDS];
	int nfds;
};

/* Descriptors a request may carry: OPEN exactly one, CREATE_CQ at most one. */
static int fds_allowed(uint32_t op)
{
	return op == RN_CTL_OPEN || op == RN_CTL_CREATE_CQ ? 1 : 0;
}

static const size_t req_size[RN_CTL_OP_MAX + 1] = {
	[RN_CTL_OPEN] = sizeof(struct rn_ctl_open_req),
	[RN_CTL_ALLOC_PD] = sizeof(struct rn_ctl_alloc_pd_req),
	[RN_CTL_DEALLOC_PD] = sizeof(struct rn_ctl_handle_req),
	[RN_CTL_REG_MR] = sizeof(struct rn_ctl_reg_mr_req),
	[RN_CTL_DEREG_MR] = sizeof(struct rn_ctl_handle_req),
	[RN_CTL_CREATE_CQ] = sizeof(struct rn_ctl_create_cq_req),
	[RN_CTL_DESTROY_CQ] = sizeof(struct rn_ctl_handle_req),
	[RN_CTL_CREATE_QP] = sizeof(struct rn_ctl_create_qp_req),
	[RN_CTL_MODIFY_QP] = sizeof(struct rn_ctl_modify_qp_req),
	[RN_CTL_QUERY_QP] = sizeof(struct rn_ctl_handle_req),
	[RN_CTL_DESTROY_QP] = sizeof(struct rn_ctl_handle_req),
};

static int do_open(struct rn_client *client, struct rn_msg *m,
		   struct rn_reply *r)
{
	struct rn_ctl_open_req *req = (void *)m->req.buf;
	struct rn_ctl_open_resp *resp = (void *)r->resp.buf;
	struct rn_device *dev = client->dev;
	struct epoll_event ev = { .events = EPOLLIN };
	int memfd, wake, flags;
	struct stat st;

	if (req->version != RN_CTL_VERSION)
		return EPROTO;
	if (m->nfds != 1 || fstat(m->fds[0], &st) || !S_ISFIFO(st.st_mode))
		return EINVAL;
	/* Never block on a client that does not read its events. */
	flags = fcntl(m->fds[0], F_GETFL);
	if (flags < 0 || fcntl(m->fds[0], F_SETFL, flags | O_NONBLOCK))
		return errno;

	client->dev_page = rn_shared_alloc(RN_DEV_PAGE_SIZE, &memfd);
	if (!client->dev_page)
		return ENOMEM;
	wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake < 0)
		goto err_page;
	client->wake_watch = (struct rn_watch){ RN_WATCH_WAKE, client };
	ev.data.ptr = &client->wake_watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, wake, &ev))
		goto err_wake;

	client->wake_fd = wake;
	client->async_fd = m->fds[0];
	m->nfds = 0; /* kept */
	client->opened = true;
	resp->attr = dev->attr;
	r->resp.hdr.len = sizeof(*resp);
	r->fds[0] = memfd;
	r->fds[1] = wake;
	r->nfds = 2;
	rn_dbg("client pid %d opened %s\n", client->pid, dev->name);
	return 0;

err_wake:
	close(wake);
err_page:
	munmap(client->dev_page, RN_DEV_PAGE_SIZE);
	client->dev_page = NULL;
	close(memfd);
	return ENOMEM;
}

static int dispatch(struct rn_client *client, struct rn_msg *m,
		    struct rn_reply *r)
{
	struct rn_ctl_handle_req *h = (void *)m->req.buf;
	int memfd = -1;
	int ret;

	switch (m->req.hdr.op) {
	case RN_CTL_ALLOC_PD: {
		struct rn_ctl_alloc_pd_resp *resp = (void *)r->resp.buf;

		r->resp.hdr.len = sizeof(*resp);
		return rn_pd_alloc(client, &resp->pd);
	}
	case RN_CTL_DEALLOC_PD:
		return rn_pd_dealloc(client, h->handle);
	case RN_CTL_REG_MR:
		r->resp.hdr.len = sizeof(struct rn_ctl_reg_mr_resp);
		return rn_mr_reg(client, (void *)m->req.buf, (void *)r->resp.buf);
	case RN_CTL_DEREG_MR:
		return rn_mr_dereg(client, h->handle);
	case RN_CTL_CREATE_CQ: {
		int channel = m->nfds ? m->fds[0] : -1;

		r->resp.hdr.len = sizeof(struct rn_ctl_create_cq_resp);
		ret = rn_cq_create(client, (void *)m->req.buf, (void *)r->resp.buf,
				   &channel, &memfd);
		if (channel < 0)
			m->nfds = 0; /* the CQ kept the channel */
		break;
	}
	case RN_CTL_DESTROY_CQ:
		return rn_cq_destroy(client, h->handle);
	case RN_CTL_CREATE_QP:
		r->resp.hdr.len = sizeof(struct rn_ctl_create_qp_resp);
		ret = rn_qp_create(client, (void *)m->req.buf, (void *)r->resp.buf,
				   &memfd);
		break;
	case RN_CTL_MODIFY_QP:
		return rn_qp_modify(client, (void *)m->req.buf);
	case RN_CTL_QUERY_QP:
		r->resp.hdr.len = sizeof(struct rn_ctl_query_qp_resp);
		return rn_qp_query(client, h->handle, (void *)r->resp.buf);
	case RN_CTL_DESTROY_QP:
		return rn_qp_destroy(client, h->handle);
	default:
		return EINVAL;
	}
	if (!ret) {
		r->fds[0] = memfd;
		r->nfds = 1;
	}
	return ret;
}

/* Returns false when the connection must be closed. */
static bool handle(struct rn_client *client, struct rn_msg *m)
{
	struct rn_reply r = { .resp.hdr.len = sizeof(struct rn_ctl_resp_hdr) };
	struct msghdr mh = { 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * RN_MAX_FDS)];
		struct cmsghdr align;
	} cmsg;
	struct iovec iov;
	uint32_t op = m->req.hdr.op;
	bool ok;
	int i;

	if (m->len < sizeof(m->req.hdr) || m->req.hdr.len != m->len ||
	    op < RN_CTL_OPEN || op > RN_CTL_OP_MAX || m->len != req_size[op] ||
	    (op == RN_CTL_OPEN) == client->opened ||
	    m->nfds > fds_allowed(op))
		return false;

	r.resp.hdr.status = op == RN_CTL_OPEN ? do_open(client, m, &r) :
						dispatch(client, m, &r);
	if (r.resp.hdr.status) {
		r.resp.hdr.len = sizeof(struct rn_ctl_resp_hdr);
		r.nfds = 0;
	}

	iov.iov_base = r.resp.buf;
	iov.iov_len = r.resp.hdr.len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (r.nfds) {
		struct cmsghdr *c;

		mh.msg_control = cmsg.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * r.nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * r.nfds);
		memcpy(CMSG_DATA(c), r.fds, sizeof(int) * r.nfds);
	}
	/* The client waits for this answer; if its socket is full it is not
	 * following the protocol.
	 */
	ok = sendmsg(client->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT) ==
	     (ssize_t)r.resp.hdr.len;
	/* The client has its copies of the memory fds; the eventfd stays. */
	for (i = 0; i < r.nfds; i++)
		if (r.fds[i] != client->wake_fd)
			close(r.fds[i]);
	return ok;
}

void rn_control_readable(struct rn_client *client)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * RN_MAX_FDS)];
			struct cmsghdr align;
		} cmsg;
		struct rn_msg m = { 0 };
		struct iovec iov = { m.req.buf, sizeof(m.req.buf) };
		struct msghdr mh = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = cmsg.buf,
			.msg_controllen = sizeof(cmsg.buf),
		};
		struct cmsghdr *c;
		ssize_t n;
		bool ok;
		int i;

		n = recvmsg(client->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		for (c = CMSG_FIRSTHDR(&mh); n >= 0 && c; c = CMSG_NXTHDR(&mh, c)) {
			size_t cnt;

			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < (int)cnt; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (m.nfds < RN_MAX_FDS)
					m.fds[m.nfds++] = fd;
				else
					close(fd);
			}
		}
		m.len = n > 0 ? (size_t)n : 0;
		ok = n > 0 && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) &&
		     handle(client, &m);
		for (i = 0; i < m.nfds; i++)
			close(m.fds[i]);
		if (!ok) {
			rn_client_destroy(client);
			return;
		}
	}
}
