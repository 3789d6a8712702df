// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The control socket: one SOCK_SEQPACKET connection per opened context.
 * The peer is identified by SO_PEERCRED and by the credentials the kernel
 * attaches to each message (SO_PASSCRED), never by what it says
 * (core/process.c).  A message that breaks the protocol (wrong size,
 * unknown op, unexpected descriptors, a request sent before OPEN was
 * answered) closes the connection, which frees everything the client had.
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

#include "daemon/daemon.h"
#include "engine/capture.h"
#include "verbs/requests.h"

int rn_control_listen(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct epoll_event ev = { .events = EPOLLIN };
	int fd;

	if (strlen(d->ctl_path) >= sizeof(sa.sun_path))
		return ENAMETOOLONG;
	strcpy(sa.sun_path, d->ctl_path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return errno;
	unlink(d->ctl_path);
	/* Anyone may open the device: it only ever touches the memory of the
	 * process on the other end of the connection.
	 */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(d->ctl_path, 0666) || listen(fd, 128)) {
		int ret = errno;

		close(fd);
		return ret;
	}
	d->listen_fd = fd;
	d->listening = true;
	d->listen_watch = (struct rn_watch){ RN_WATCH_LISTEN, dev };
	ev.data.ptr = &d->listen_watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev))
		return errno;
	return 0;
}

void rn_control_accept(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct epoll_event ev = { .events = EPOLLIN };
	struct rn_client *client;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd, one = 1;

	fd = accept4(d->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	/* Every client costs descriptors: refuse more than the limit allows.
	 * In kernel mode the socket serves captures and ringnic-fault only:
	 * their connections must not take the kernel contexts' places.
	 */
	if (dev->nclients >= dev->max_clients ||
	    (dev->kdev_fd >= 0 && d->sockets >= RN_KERNEL_MODE_SOCKETS)) {
		rn_warn("client refused: %u clients already\n", dev->nclients);
		close(fd);
		return;
	}
	client = calloc(1, sizeof(*client));
	if (!client ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one))) {
		free(client);
		close(fd);
		return;
	}
	rn_client_init(client, dev, cred.pid, cred.uid);
	client->fd = fd;
	client->watch = (struct rn_watch){ RN_WATCH_CLIENT, client };
	ev.data.ptr = &client->watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev)) {
		close(fd);
		free(client);
		return;
	}
	rn_list_add_tail(&dev->clients, &client->link);
	dev->nclients++;
	d->sockets++;
	rn_dbg("client pid %d connected\n", client->pid);
}

void rn_client_destroy(struct rn_client *client)
{
	struct rn_device *dev = client->dev;
	bool retired;

	rn_dbg("client pid %d gone\n", client->pid);
	if (client->fd >= 0) {
		epoll_ctl(dev->epoll_fd, EPOLL_CTL_DEL, client->fd, NULL);
		close(client->fd);
		rn_daemon_of(dev)->sockets--;
	}
	rn_capture_stop(client);
	rn_nldev_stop(client);
	retired = rn_client_release(client);
	rn_list_del(&client->link);
	dev->nclients--;
	if (!retired)
		free(client); /* else its context's, which frees it */
}

/*
 * NETLINK, the first message: the connection answers RDMA netlink from
 * then on (nldev.c).
 */
static bool start_netlink(struct rn_client *client, struct rn_msg *m)
{
	const struct rn_ctl_netlink_req *req = (const void *)m->req.buf;
	struct rn_ctl_resp_hdr resp = { .len = sizeof(resp) };

	if (m->len != sizeof(*req) || req->hdr.len != m->len || m->nfds ||
	    req->reserved)
		return false;
	/* In kernel mode the kernel answers RDMA netlink itself. */
	resp.status = client->dev->kdev_fd >= 0 ?
			      EOPNOTSUPP :
			      rn_nldev_start(client, req->dev_index);
	return send(client->fd, &resp, sizeof(resp),
		    MSG_NOSIGNAL | MSG_DONTWAIT) == sizeof(resp);
}

/* Answer one request; false when the connection must be closed. */
static bool handle(struct rn_client *client, struct rn_msg *m)
{
	struct msghdr mh = { 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int) * RN_CTL_MAX_FDS)];
		struct cmsghdr align;
	} cmsg;
	struct rn_reply r;
	struct iovec iov;
	char next;
	bool ok;

	if (client->nldev)
		return !m->nfds && rn_nldev_request(client, m->req.buf, m->len);
	if (!client->opened && !client->capture &&
	    m->len >= sizeof(m->req.hdr) && m->req.hdr.op == RN_CTL_NETLINK)
		return start_netlink(client, m);
	if (!rn_request(client, m, &r))
		return false;
	/* What the client sends after this answer confirms who it is
	 * (core/process.c): nothing may have been sent before it.
	 */
	if ((m->req.hdr.op == RN_CTL_OPEN || m->req.hdr.op == RN_CTL_IMPORT) &&
	    client->opened &&
	    (recv(client->fd, &next, 1, MSG_PEEK | MSG_DONTWAIT) >= 0 ||
	     errno != EAGAIN)) {
		rn_reply_sent(client, &r);
		return false;
	}
	iov.iov_base = r.resp.buf;
	iov.iov_len = r.resp.hdr.len;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (r.nfds) {
		struct cmsghdr *c;

		/* Padding of the header is sent too: no stack garbage. */
		memset(&cmsg, 0, sizeof(cmsg));
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
	rn_reply_sent(client, &r);
	return ok;
}

void rn_control_readable(struct rn_client *client)
{
	/* An RDMA netlink answer still going out: nothing is read meanwhile. */
	if (client->nldev && rn_nldev_pending(client)) {
		if (!rn_nldev_flush(client)) {
			rn_client_destroy(client);
			return;
		}
		if (rn_nldev_pending(client))
			return;
	}
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * RN_CTL_MAX_FDS) +
				 CMSG_SPACE(sizeof(struct ucred))];
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
			struct ucred cred;
			size_t cnt;

			if (c->cmsg_level == SOL_SOCKET &&
			    c->cmsg_type == SCM_CREDENTIALS &&
			    c->cmsg_len == CMSG_LEN(sizeof(cred))) {
				memcpy(&cred, CMSG_DATA(c), sizeof(cred));
				m.sender = cred.pid;
			}
			if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
				continue;
			cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
			for (i = 0; i < (int)cnt; i++) {
				int fd;

				memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
				if (m.nfds < RN_CTL_MAX_FDS)
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
		if (client->nldev && rn_nldev_pending(client))
			return;
	}
}
