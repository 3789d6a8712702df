// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Raw connections to ringnicd's control socket, for saying what the
 * provider never would: messages are sent exactly as built, and each
 * answer is a reply (with its status) or the connection closed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "raw_ctl.h"

/* How long ringnicd may take to answer or hang up. */
#define CTL_WAIT_MS 10000

int find_ctl_path(char *buf, size_t len)
{
	struct ibv_device **list;
	char path[IBV_SYSFS_PATH_MAX + 32];
	ssize_t n = -1;
	int i, fd;

	list = ibv_get_device_list(NULL);
	HCHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i] && n <= 0; i++) {
		if (strncmp(ibv_get_device_name(list[i]), "ringnic", 7))
			continue;
		snprintf(path, sizeof(path), "%s/ringnic_control",
			 list[i]->ibdev_path);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		n = read(fd, buf, len - 1);
		close(fd);
	}
	ibv_free_device_list(list);
	HCHECK(n > 0, "no ringnic control socket published");
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* ---- a raw connection ------------------------------------------------------ */

int raw_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	HCHECK(fd >= 0, "socket: %s", strerror(errno));
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return HFAIL("connect %s: %s", path, strerror(errno));
	}
	return fd;
}

/* The next answer: a reply (its status), or the connection closed. */
int raw_answer(int fd, enum answer *a, int *status)
{
	union {
		char buf[CMSG_SPACE(sizeof(int) * 4)];
		struct cmsghdr align;
	} cmsg;
	uint8_t buf[RN_CTL_MSG_MAX];
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cmsg.buf,
		.msg_controllen = sizeof(cmsg.buf),
	};
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct rn_ctl_resp_hdr hdr;
	struct cmsghdr *c;
	ssize_t n;

	HCHECK(poll(&pfd, 1, CTL_WAIT_MS) == 1, "no answer from ringnicd");
	n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
	for (c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL; c; c = CMSG_NXTHDR(&mh, c)) {
		int *fds = (int *)CMSG_DATA(c);
		size_t i, cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);

		for (i = 0; i < cnt; i++)
			close(fds[i]);
	}
	if (n == 0 || (n < 0 && errno == ECONNRESET)) {
		*a = ANSWER_CLOSED;
		return 0;
	}
	HCHECK(n >= (ssize_t)sizeof(hdr), "answer of %zd bytes: %s", n,
	       n < 0 ? strerror(errno) : "short");
	memcpy(&hdr, buf, sizeof(hdr));
	HCHECK(hdr.len == (uint32_t)n, "answer says %u bytes, has %zd", hdr.len, n);
	*a = ANSWER_REPLY;
	*status = hdr.status;
	return 0;
}

int expect_capture_closed(int fd, const char *what)
{
	static uint8_t buf[sizeof(struct rn_capture_rec) + 65536];
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	struct timespec start, now;
	ssize_t n;

	clock_gettime(CLOCK_MONOTONIC, &start);
	for (;;) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		HCHECK((now.tv_sec - start.tv_sec) * 1000 < CTL_WAIT_MS,
		       "%s: the capture was not closed", what);
		HCHECK(poll(&pfd, 1, CTL_WAIT_MS) == 1,
		       "%s: the capture was not closed", what);
		n = recv(fd, buf, sizeof(buf), 0);
		if (n == 0 || (n < 0 && errno == ECONNRESET))
			return 0;
		HCHECK(n >= (ssize_t)sizeof(struct rn_capture_rec),
		       "%s: %zd bytes where a capture record or the end was expected: %s",
		       what, n, n < 0 ? strerror(errno) : "short");
	}
}

int expect_closed(int fd, const char *what)
{
	enum answer a;
	int status = 0;

	HTRY(raw_answer(fd, &a, &status));
	HCHECK(a == ANSWER_CLOSED, "%s: answered (status %d) instead of closing",
	       what, status);
	return 0;
}

int expect_status(int fd, int want, const char *what)
{
	enum answer a;
	int status = 0;

	HTRY(raw_answer(fd, &a, &status));
	HCHECK(a == ANSWER_REPLY, "%s: connection closed, wanted status %d", what,
	       want);
	HCHECK(status == want, "%s: status %d (%s), wanted %d (%s)", what, status,
	       strerror(status), want, strerror(want));
	return 0;
}

/* One well-formed request; its answer must be status 'want'. */
int raw_call(int fd, void *req, size_t len, uint32_t op, int want,
		const char *what)
{
	struct rn_ctl_req_hdr *h = req;

	h->op = op;
	h->len = len;
	HCHECK(!rn_test_send_fds(fd, req, len, NULL, 0, 0), "%s: send failed",
	       what);
	return expect_status(fd, want, what);
}

/* The OPEN exchange with an async pipe; 'want' is its status. */
int raw_open_fds(int fd, uint32_t version, const int *fds, int nfds,
			int want, const char *what)
{
	struct rn_ctl_open_req req = {
		.hdr = { RN_CTL_OPEN, sizeof(req) },
		.version = version,
	};

	HCHECK(!rn_test_send_fds(fd, &req, sizeof(req), fds, nfds, 0),
	       "%s: send failed", what);
	return expect_status(fd, want, what);
}

int raw_open(int fd, const char *what)
{
	int async[2], ret;

	HCHECK(!pipe2(async, O_CLOEXEC), "pipe: %s", strerror(errno));
	ret = raw_open_fds(fd, RN_CTL_VERSION, &async[1], 1, 0, what);
	close(async[0]);
	close(async[1]);
	return ret;
}

/* An opened raw connection. */
int raw_session(const char *path, int *fd, const char *what)
{
	*fd = raw_connect(path);
	HTRY(*fd < 0);
	if (raw_open(*fd, what)) {
		close(*fd);
		return -1;
	}
	return 0;
}

int alloc_pd(int fd, uint32_t *pd)
{
	struct rn_ctl_alloc_pd_req req = { { RN_CTL_ALLOC_PD, sizeof(req) } };
	struct rn_ctl_alloc_pd_resp resp;

	HCHECK(!rn_test_send_fds(fd, &req, sizeof(req), NULL, 0, 0) &&
		       recv(fd, &resp, sizeof(resp), 0) == sizeof(resp) &&
		       !resp.hdr.status,
	       "raw ALLOC_PD failed");
	*pd = resp.pd;
	return 0;
}

int create_cq(int fd, uint32_t *cq)
{
	struct rn_ctl_create_cq_req req = { .hdr = { RN_CTL_CREATE_CQ, sizeof(req) },
					    .cqe = 16 };
	struct rn_ctl_create_cq_resp resp;
	enum answer a;
	int status;

	HCHECK(!rn_test_send_fds(fd, &req, sizeof(req), NULL, 0, 0),
	       "raw CREATE_CQ");
	/* Peek the handle, then let raw_answer close the memfd. */
	HCHECK(recv(fd, &resp, sizeof(resp), MSG_PEEK) == sizeof(resp),
	       "raw CREATE_CQ answer");
	HTRY(raw_answer(fd, &a, &status));
	HCHECK(a == ANSWER_REPLY && !status, "raw CREATE_CQ: %d", status);
	*cq = resp.handle;
	return 0;
}

void qp_request(struct rn_ctl_create_qp_req *req, uint32_t pd,
		       uint32_t scq, uint32_t rcq)
{
	*req = (struct rn_ctl_create_qp_req){
		.hdr = { RN_CTL_CREATE_QP, sizeof(*req) },
		.pd = pd,
		.send_cq = scq,
		.recv_cq = rcq,
		.qp_type = IBV_QPT_RC,
		.cap = { 4, 4, 1, 1, 0, 0 },
	};
}

int create_qp(int fd, uint32_t pd, uint32_t cq, uint32_t *qp)
{
	struct rn_ctl_create_qp_req req;
	struct rn_ctl_create_qp_resp resp;
	enum answer a;
	int status;

	qp_request(&req, pd, cq, cq);
	HCHECK(!rn_test_send_fds(fd, &req, sizeof(req), NULL, 0, 0),
	       "raw CREATE_QP");
	HCHECK(recv(fd, &resp, sizeof(resp), MSG_PEEK) == sizeof(resp),
	       "raw CREATE_QP answer");
	HTRY(raw_answer(fd, &a, &status));
	HCHECK(a == ANSWER_REPLY && !status, "raw CREATE_QP: %d", status);
	*qp = resp.handle;
	return 0;
}

/* Some well-formed request of any kind but the first messages (OPEN,
 * CAPTURE), in buf; returns its size.
 */
size_t any_request(uint8_t *buf, uint32_t *op)
{
	struct rn_ctl_req_hdr *h = (void *)buf;

	*op = rng_range(RN_CTL_ALLOC_PD, RN_CTL_CAPTURE - 1);
	memset(buf, 0, RN_CTL_MSG_MAX);
	h->op = *op;
	h->len = rn_ctl_req_size(*op);
	return h->len;
}
