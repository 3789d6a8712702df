// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Garbage on the control socket, over raw connections of our own (the
 * path is where the provider finds it).  A message that breaks the
 * protocol (size, opcode, header, descriptors, order) closes the
 * connection; a well-formed request with bad contents gets its error
 * status and changes nothing.  After each attempt a fresh connection must
 * still open the device.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "raw_ctl.h"

/* Messages that break the protocol: the connection is closed. */
static int protocol_break(const char *path, enum variant v)
{
	uint8_t buf[4096];
	struct rn_ctl_req_hdr *h = (void *)buf;
	const char *what = variants[v].name;
	bool opened = v != V_CTL_BEFORE_OPEN && rng_below(2);
	size_t len;
	uint32_t op;
	int fd, ret, nfds = 0, fds[3] = { -1, -1, -1 };

	if (v == V_CTL_UNEXPECTED_FD || v == V_CTL_LEN_MISMATCH ||
	    v == V_CTL_WRONG_SIZE || v == V_CTL_OPEN_TWICE ||
	    v == V_CTL_CAPTURE_OPENED)
		opened = true;
	if (v == V_CTL_AFTER_CAPTURE)
		opened = false;
	if (opened)
		HTRY(raw_session(path, &fd, what));
	else
		HTRY((fd = raw_connect(path)) < 0);
	/* A capture takes nothing after the request that started it. */
	if (v == V_CTL_AFTER_CAPTURE) {
		struct rn_ctl_capture_req c = {
			{ RN_CTL_CAPTURE, sizeof(c) }, RN_CAPTURE_ANY_QP, 0, 0, 0
		};

		HCHECK(!rn_test_send_fds(fd, &c, sizeof(c), NULL, 0, 0),
		       "CAPTURE");
		HTRY(expect_status(fd, 0, what));
	}

	len = any_request(buf, &op);
	switch (v) {
	case V_CTL_BEFORE_OPEN:
	case V_CTL_AFTER_CAPTURE:
		break;
	case V_CTL_CAPTURE_OPENED: {
		struct rn_ctl_capture_req *c = (void *)buf;

		*c = (struct rn_ctl_capture_req){ { RN_CTL_CAPTURE, sizeof(*c) },
						  RN_CAPTURE_ANY_QP, 0, 0, 0 };
		len = sizeof(*c);
		break;
	}
	case V_CTL_EMPTY:
		len = 0;
		break;
	case V_CTL_TRUNCATED_HDR:
		len = rng_range(1, sizeof(*h) - 1);
		break;
	case V_CTL_LEN_MISMATCH:
		h->len = rng_below(2) ? len - rng_range(1, len) :
					len + rng_range(1, 1000);
		break;
	case V_CTL_WRONG_SIZE:
		len = rng_below(2) ? rng_range(sizeof(*h), len - 1) :
				     rng_range(len + 1, RN_CTL_MSG_MAX);
		if (len == sizeof(*h) && op == RN_CTL_ALLOC_PD)
			len++;
		h->len = len;
		break;
	case V_CTL_OVERSIZED:
		len = rng_range(RN_CTL_MSG_MAX + 1, sizeof(buf));
		h->len = len;
		break;
	case V_CTL_BAD_OPCODE:
		h->op = rng_below(2) ? 0 : rng_range(RN_CTL_OP_MAX + 1, UINT32_MAX);
		break;
	case V_CTL_OPEN_TWICE: {
		struct rn_ctl_open_req *o = (void *)buf;

		*o = (struct rn_ctl_open_req){ { RN_CTL_OPEN, sizeof(*o) },
					       RN_CTL_VERSION, 0 };
		len = sizeof(*o);
		HCHECK(!pipe2(&fds[0], O_CLOEXEC), "pipe: %s", strerror(errno));
		close(fds[0]);
		fds[0] = fds[1];
		fds[1] = -1;
		nfds = 1;
		break;
	}
	default: /* V_CTL_UNEXPECTED_FD: one where none, or two where one */
		fds[0] = eventfd(0, EFD_CLOEXEC);
		nfds = 1;
		if (op == RN_CTL_CREATE_CQ || op == RN_CTL_OPEN_XRCD) {
			fds[1] = eventfd(0, EFD_CLOEXEC);
			nfds = 2;
		}
		break;
	}
	/* A send refused because ringnicd closed already is the same answer. */
	ret = rn_test_send_fds(fd, buf, len, fds, nfds, 0);
	if (!ret)
		ret = v == V_CTL_AFTER_CAPTURE ? expect_capture_closed(fd, what) :
						 expect_closed(fd, what);
	else if (ret == EPIPE || ret == ECONNRESET)
		ret = 0;
	else
		ret = HFAIL("%s: send: %s", what, strerror(ret));
	for (nfds = 0; nfds < 3; nfds++)
		if (fds[nfds] >= 0)
			close(fds[nfds]);
	close(fd);
	return ret;
}

/* OPEN done wrong: its status, and a right OPEN works after it. */
static int bad_open(const char *path, enum variant v)
{
	const char *what = variants[v].name;
	int fd, p[2], other, ret;

	HTRY((fd = raw_connect(path)) < 0);
	HCHECK(!pipe2(p, O_CLOEXEC), "pipe: %s", strerror(errno));
	if (v == V_CTL_OPEN_VERSION) {
		uint32_t version = rng_below(2) ? 0 : rng_range(RN_CTL_VERSION + 1,
								UINT32_MAX);

		ret = raw_open_fds(fd, version, &p[1], 1, EPROTO, what);
	} else if (v == V_CTL_OPEN_TOO_MANY_FDS) {
		int fds[3] = { p[1], p[1], p[1] };
		struct rn_ctl_open_req req = {
			{ RN_CTL_OPEN, sizeof(req) }, RN_CTL_VERSION, 0
		};

		ret = rn_test_send_fds(fd, &req, sizeof(req), fds, 3, 0);
		ret = ret ? HFAIL("%s: send: %s", what, strerror(ret)) :
			    expect_closed(fd, what);
		close(fd);
		close(p[0]);
		close(p[1]);
		return ret;
	} else {
		/* No descriptor, a first one that is no pipe, or a second one
		 * that is no userfaultfd.
		 */
		switch (rng_below(3)) {
		case 0:
			ret = raw_open_fds(fd, RN_CTL_VERSION, NULL, 0, EINVAL, what);
			break;
		case 1:
			other = rng_below(2) ? eventfd(0, EFD_CLOEXEC) :
					       open("/dev/null", O_WRONLY | O_CLOEXEC);
			ret = raw_open_fds(fd, RN_CTL_VERSION, &other, 1, EINVAL,
					   what);
			close(other);
			break;
		default: {
			int fds[2] = { p[1], eventfd(0, EFD_CLOEXEC) };

			ret = raw_open_fds(fd, RN_CTL_VERSION, fds, 2, EINVAL, what);
			close(fds[1]);
			break;
		}
		}
	}
	close(p[0]);
	close(p[1]);
	/* Nothing changed: the connection still opens. */
	if (!ret)
		ret = raw_open(fd, what);
	close(fd);
	return ret;
}

/* A request of fds; its answer must be status 'want'. */
static int call_fds(int fd, uint32_t op, const int *fds, int nfds, int want,
		    const char *what)
{
	union {
		struct rn_ctl_open_req open;
		struct rn_ctl_handle_req handle;
	} req = { 0 };
	size_t len = op == RN_CTL_IMPORT ? sizeof(req.open) : sizeof(req.handle);

	req.open.hdr = (struct rn_ctl_req_hdr){ op, len };
	if (op == RN_CTL_IMPORT)
		req.open.version = RN_CTL_VERSION;
	HCHECK(!rn_test_send_fds(fd, &req, len, fds, nfds, 0),
	       "%s: send failed", what);
	return expect_status(fd, want, what);
}

/*
 * Sharing a context done wrong: IMPORT of a file that names no context or
 * without one, NAME_CONTEXT of a file that is no sealed memfd, twice, or
 * of a file another context has, GUARD of no userfaultfd.  Each gets its
 * status and the connection goes on; a right IMPORT then joins.
 */
static int bad_import(const char *path)
{
	const char *what = "bad import";
	int fd = -1, other = -1, p[2], memfd, null, ret = -1;

	HCHECK(!pipe2(p, O_CLOEXEC), "pipe: %s", strerror(errno));
	memfd = memfd_create("rn-hostile", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (memfd < 0 || null < 0 ||
	    fcntl(memfd, F_ADD_SEALS, F_SEAL_GROW | F_SEAL_SHRINK)) {
		HFAIL("memfd: %s", strerror(errno));
		goto out;
	}
	fd = raw_connect(path);
	other = raw_connect(path);
	if (fd < 0 || other < 0)
		goto out;
	/* Nothing named the memfd yet: no context, and a lone fd is short. */
	if (call_fds(fd, RN_CTL_IMPORT, (int[]){ p[1], memfd }, 2, EBADF,
		     what) ||
	    call_fds(fd, RN_CTL_IMPORT, (int[]){ p[1], null }, 2, EBADF, what) ||
	    call_fds(fd, RN_CTL_IMPORT, &p[1], 1, EINVAL, what) ||
	    raw_open(fd, what) ||
	    call_fds(fd, RN_CTL_NAME_CONTEXT, &null, 1, EINVAL, what) ||
	    call_fds(fd, RN_CTL_NAME_CONTEXT, &memfd, 1, 0, what) ||
	    call_fds(fd, RN_CTL_NAME_CONTEXT, &memfd, 1, EINVAL, what) ||
	    call_fds(fd, RN_CTL_GUARD, &p[1], 1, EINVAL, what))
		goto out;
	/* The named file joins; a second naming of it is refused. */
	if (call_fds(other, RN_CTL_IMPORT, (int[]){ p[1], memfd }, 2, 0,
		     what) ||
	    call_fds(other, RN_CTL_NAME_CONTEXT, &memfd, 1, EINVAL, what) ||
	    alloc_pd(other, &(uint32_t){ 0 }))
		goto out;
	ret = 0;
out:
	if (fd >= 0)
		close(fd);
	if (other >= 0)
		close(other);
	close(memfd);
	close(null);
	close(p[0]);
	close(p[1]);
	return ret;
}

/* Handles this connection does not have (it has nothing at all). */
static int handle_ops(int fd, const uint32_t *h, const char *what)
{
	struct rn_ctl_handle_req req = { 0 };
	struct rn_ctl_modify_qp_req mod = { 0 };
	struct rn_ctl_create_qp_req cq;
	struct rn_ctl_reg_mr_req mr = {
		.addr = (uintptr_t)&mr,
		.length = sizeof(mr),
		.pd = h[0],
	};
	static const uint32_t ops[] = { RN_CTL_DEALLOC_PD, RN_CTL_DEREG_MR,
					RN_CTL_DESTROY_CQ, RN_CTL_QUERY_QP,
					RN_CTL_DESTROY_QP };
	unsigned int i;

	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		req.handle = h[i];
		HTRY(raw_call(fd, &req, sizeof(req), ops[i], EINVAL, what));
	}
	mod.handle = h[4];
	mod.attr_mask = IBV_QP_STATE;
	mod.attr.qp_state = IBV_QPS_ERR;
	HTRY(raw_call(fd, &mod, sizeof(mod), RN_CTL_MODIFY_QP, EINVAL, what));
	HTRY(raw_call(fd, &mr, sizeof(mr), RN_CTL_REG_MR, EINVAL, what));
	qp_request(&cq, h[0], h[2], h[2]);
	return raw_call(fd, &cq, sizeof(cq), RN_CTL_CREATE_QP, EINVAL, what);
}

static int bad_handles(const char *path, const struct loot *loot)
{
	const char *what = loot ? "handle of another client" :
				  "handle that does not exist";
	uint32_t h[5];
	int fd, i, ret;

	HTRY(raw_session(path, &fd, what));
	if (loot) {
		/* pd, mr, cq, qp, qp: the victim's own numbers. */
		h[0] = loot->pd_handle;
		h[1] = loot->mr_handle;
		h[2] = loot->cq_handle;
		h[3] = h[4] = loot->qp_handle;
	} else {
		for (i = 0; i < 5; i++)
			h[i] = rng_below(3) ? (uint32_t)rng_below(8) :
					      (uint32_t)rng_next();
	}
	ret = handle_ops(fd, h, what);
	close(fd);
	return ret;
}

static int bad_reg_mr(const char *path)
{
	const char *what = "REG_MR with bad fields";
	size_t page = page_size();
	struct rn_ctl_reg_mr_req req;
	uint8_t *ro;
	uint32_t pd;
	int fd, want, ret;

	HTRY(raw_session(path, &fd, what));
	if (alloc_pd(fd, &pd)) {
		close(fd);
		return -1;
	}
	/* A page that is readable only, and one that is not mapped at all. */
	ro = mmap(NULL, 2 * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	HCHECK(ro != MAP_FAILED, "mmap: %s", strerror(errno));
	munmap(ro + page, page);
	req = (struct rn_ctl_reg_mr_req){
		.addr = (uintptr_t)ro,
		.length = page,
		.iova = (uintptr_t)ro,
		.pd = pd,
		.access = IBV_ACCESS_REMOTE_READ,
	};
	want = EINVAL;
	switch (rng_below(10)) {
	case 0:
		req.pd = pd + rng_range(1, 1000);
		break;
	case 1:
		req.length = 0;
		break;
	case 2:
		req.length = UINT64_MAX - req.addr + rng_range(2, page);
		break;
	case 3:
		req.length = (1ull << 47) + rng_range(1, 1ull << 40);
		break;
	case 4: /* bit 20 is IBV_ACCESS_RELAXED_ORDERING, which is known */
		req.access |= 1u << rng_range(21, 31);
		break;
	case 5:
		req.access = IBV_ACCESS_REMOTE_WRITE;
		break;
	case 6: /* implicit on-demand paging has no zero-based form */
		req.addr = 0;
		req.length = UINT64_MAX;
		req.access |= IBV_ACCESS_ON_DEMAND | IBV_ACCESS_ZERO_BASED;
		break;
	case 7:
		req.iova = UINT64_MAX - rng_below(page - 1);
		break;
	case 8: /* not mapped */
		req.addr = (uintptr_t)ro + page;
		want = EFAULT;
		break;
	default: /* mapped, but not writable */
		req.access = IBV_ACCESS_LOCAL_WRITE;
		want = EFAULT;
		break;
	}
	ret = raw_call(fd, &req, sizeof(req), RN_CTL_REG_MR, want, what);
	munmap(ro, page);
	close(fd);
	return ret;
}

static int bad_create(const char *path)
{
	const char *what = "CREATE_CQ/QP with bad fields";
	struct rn_ctl_create_cq_req cq = { .cqe = 16 };
	struct rn_ctl_create_qp_req qp;
	uint32_t pd, cqh;
	int fd, ret = 0, efd;

	HTRY(raw_session(path, &fd, what));
	if (alloc_pd(fd, &pd) || create_cq(fd, &cqh)) {
		close(fd);
		return -1;
	}
	qp_request(&qp, pd, cqh, cqh);
	switch (rng_below(8)) {
	case 0:
		cq.cqe = 0;
		ret = raw_call(fd, &cq, sizeof(cq), RN_CTL_CREATE_CQ, EINVAL, what);
		break;
	case 1:
		cq.cqe = rng_range(RN_MAX_CQE + 1, UINT32_MAX);
		ret = raw_call(fd, &cq, sizeof(cq), RN_CTL_CREATE_CQ, EINVAL, what);
		break;
	case 2: /* a completion channel that is not a pipe */
		cq.hdr = (struct rn_ctl_req_hdr){ RN_CTL_CREATE_CQ, sizeof(cq) };
		efd = eventfd(0, EFD_CLOEXEC);
		HCHECK(!rn_test_send_fds(fd, &cq, sizeof(cq), &efd, 1, 0),
		       "send");
		close(efd);
		ret = expect_status(fd, EINVAL, what);
		break;
	case 3:
		qp.pd = pd + rng_range(1, 100);
		ret = raw_call(fd, &qp, sizeof(qp), RN_CTL_CREATE_QP, EINVAL, what);
		break;
	case 4:
		if (rng_below(2))
			qp.send_cq = cqh + rng_range(1, 100);
		else
			qp.recv_cq = cqh + rng_range(1, 100);
		ret = raw_call(fd, &qp, sizeof(qp), RN_CTL_CREATE_QP, EINVAL, what);
		break;
	case 5:
		/* Raw packet QPs, and numbers no QP type has. */
		qp.qp_type = rng_below(2) ? IBV_QPT_RAW_PACKET :
					    rng_range(IBV_QPT_XRC_RECV + 1, 255);
		ret = raw_call(fd, &qp, sizeof(qp), RN_CTL_CREATE_QP, EOPNOTSUPP, what);
		break;
	case 6:
		qp.cap.max_send_wr = rng_range(RN_MAX_QP_WR + 1, UINT32_MAX);
		ret = raw_call(fd, &qp, sizeof(qp), RN_CTL_CREATE_QP, EINVAL, what);
		break;
	default:
		if (rng_below(2))
			qp.cap.max_send_sge = rng_range(RN_MAX_SGE + 1, UINT32_MAX);
		else
			qp.cap.max_inline_data = rng_range(RN_MAX_INLINE + 1,
							   UINT32_MAX);
		ret = raw_call(fd, &qp, sizeof(qp), RN_CTL_CREATE_QP, EINVAL, what);
		break;
	}
	close(fd);
	return ret;
}

static int bad_modify(const char *path)
{
	const char *what = "MODIFY_QP breaking the rules";
	struct rn_ctl_modify_qp_req m = { 0 };
	uint32_t pd, cq, qp;
	int fd, ret;

	HTRY(raw_session(path, &fd, what));
	if (alloc_pd(fd, &pd) || create_cq(fd, &cq) || create_qp(fd, pd, cq, &qp)) {
		close(fd);
		return -1;
	}
	m.handle = qp;
	m.attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		      IBV_QP_ACCESS_FLAGS;
	m.attr.qp_state = IBV_QPS_INIT;
	m.attr.port_num = 1;
	switch (rng_below(6)) {
	case 0: /* RESET straight to RTS */
		m.attr.qp_state = IBV_QPS_RTS;
		break;
	case 1: /* a required attribute missing */
		m.attr_mask &= ~IBV_QP_ACCESS_FLAGS;
		break;
	case 2:
		m.attr.port_num = rng_range(2, 255);
		break;
	case 3: /* a bit no ibv_access_flags defines (an MR's are taken) */
		m.attr.qp_access_flags = 1u << (rng_below(2) ? rng_range(8, 19) :
							       rng_range(30, 31));
		break;
	case 4:
		m.attr.qp_state = rng_range(IBV_QPS_ERR + 1, UINT32_MAX);
		break;
	default: /* what it claims the state is, is not */
		m.attr_mask |= IBV_QP_CUR_STATE;
		m.attr.cur_qp_state = rng_range(IBV_QPS_INIT, IBV_QPS_ERR);
		break;
	}
	ret = raw_call(fd, &m, sizeof(m), RN_CTL_MODIFY_QP, EINVAL, what);
	close(fd);
	return ret;
}

/* Random bytes: any answer or none, as long as ringnicd serves on. */
static int random_bytes(const char *path)
{
	uint8_t buf[700];
	struct rn_ctl_req_hdr *h = (void *)buf;
	size_t len = rng_below(sizeof(buf) + 1), i;
	enum answer a;
	int fd, status, ret;

	if (rng_below(2))
		HTRY(raw_session(path, &fd, "random bytes"));
	else
		HTRY((fd = raw_connect(path)) < 0);
	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)rng_next();
	if (len >= sizeof(*h) && rng_below(2)) {
		/* Often enough, a header that passes the first checks. */
		h->op = rng_range(RN_CTL_OPEN, RN_CTL_OP_MAX);
		h->len = len;
	}
	ret = rn_test_send_fds(fd, buf, len, NULL, 0, 0);
	if (!ret)
		ret = raw_answer(fd, &a, &status);
	else
		ret = ret == EPIPE || ret == ECONNRESET ? 0 : HFAIL("send: %s",
								    strerror(ret));
	close(fd);
	return ret;
}

/* Requests without reading the answers: answered, or cut off. */
static int flood(const char *path)
{
	struct rn_ctl_handle_req req = { { RN_CTL_QUERY_QP, sizeof(req) },
					 0x7fff0000, 0 };
	int fd, sent = 0, status, i;
	enum answer a = ANSWER_REPLY;

	HTRY(raw_session(path, &fd, "flood"));
	while (sent < 20000 &&
	       !rn_test_send_fds(fd, &req, sizeof(req), NULL, 0, MSG_DONTWAIT))
		sent++;
	for (i = 0; i < sent && a == ANSWER_REPLY; i++) {
		if (raw_answer(fd, &a, &status)) {
			close(fd);
			return -1;
		}
		HCHECK(a == ANSWER_CLOSED || status == EINVAL,
		       "flood: answer %d has status %d", i, status);
	}
	close(fd);
	return 0;
}

/*
 * A NETLINK connection (what ringnic-run's shim makes for the rdma tool):
 * requests with random commands, flags, attributes and lengths, and
 * garbage.  Each is answered whole (its last datagram says so) or closes
 * the connection; sometimes the answers are left unread, or the
 * connection dropped with an answer half sent.
 */
static int netlink_garbage(const char *path)
{
	const char *what = "RDMA netlink garbage";
	struct rn_ctl_netlink_req req = { { RN_CTL_NETLINK, sizeof(req) },
					  rng_below(4) ? 1 : rng_next(), 0 };
	static uint8_t buf[RN_NETLINK_DGRAM_MAX];
	bool unread = rng_below(4) == 0;
	int fd, i, n = rng_range(1, 64);
	enum answer a;
	int status;

	HTRY((fd = raw_connect(path)) < 0);
	HCHECK(!rn_test_send_fds(fd, &req, sizeof(req), NULL, 0, 0),
	       "%s: send", what);
	HTRY(raw_answer(fd, &a, &status));
	HCHECK(a == ANSWER_REPLY && status == (req.dev_index ? 0 : EINVAL),
	       "%s: NETLINK of device %u: status %d", what, req.dev_index,
	       a == ANSWER_REPLY ? status : -1);
	for (i = 0; i < n && req.dev_index; i++) {
		struct nlmsghdr *h = (void *)buf;
		size_t len = rng_range(0, RN_CTL_MSG_MAX + 16), at;
		struct rn_netlink_hdr last = { 0 };
		ssize_t got;

		for (at = 0; at < len; at++)
			buf[at] = (uint8_t)rng_next();
		if (len >= NLMSG_HDRLEN && rng_below(4)) {
			/* Often enough, a header that passes the first checks. */
			h->nlmsg_len = rng_below(8) ? len : rng_next();
			h->nlmsg_type = RDMA_NL_GET_TYPE(
				rng_below(8) ? RDMA_NL_NLDEV : rng_below(16),
				rng_below(RDMA_NLDEV_NUM_OPS + 2));
			h->nlmsg_flags = NLM_F_REQUEST |
					 (rng_below(2) ? NLM_F_DUMP : 0) |
					 (rng_below(2) ? NLM_F_ACK : 0);
		}
		if (rn_test_send_fds(fd, buf, len, NULL, 0, 0))
			break; /* closed, for an earlier one */
		if (unread)
			continue;
		/* The answer's datagrams, to the last one, or a close. */
		do {
			got = recv(fd, buf, sizeof(buf), 0);
			if (got >= (ssize_t)sizeof(last))
				memcpy(&last, buf, sizeof(last));
		} while (got >= (ssize_t)sizeof(last) && !last.last);
		if (got <= 0)
			break;
		HCHECK(got >= (ssize_t)sizeof(last), "%s: a datagram of %zd bytes",
		       what, got);
	}
	close(fd);
	return 0;
}

/* Objects made, then the connection dropped: ringnicd frees them. */
static int abandon(const char *path)
{
	const char *what = "connection dropped holding objects";
	struct rn_ctl_reg_mr_req mr;
	uint32_t pd = 0, cq, qp;
	uint64_t seed = rng_next();
	struct gbuf g;
	int fd, ret;

	if (rng_below(4) == 0) {
		HTRY((fd = raw_connect(path)) < 0);
		close(fd);
		return 0;
	}
	HTRY(gbuf_alloc(&g, rng_range(1, 8192), rng_below(page_size() / 8) * 8));
	fill_pattern(g.data, g.len, seed);
	mr = (struct rn_ctl_reg_mr_req){
		.addr = (uintptr_t)g.data,
		.length = g.len,
		.iova = (uintptr_t)g.data,
		.access = ACCESS_ALL,
	};
	ret = raw_session(path, &fd, what);
	if (!ret) {
		ret = alloc_pd(fd, &pd) || create_cq(fd, &cq) ||
		      create_qp(fd, pd, cq, &qp);
		mr.pd = pd;
		if (!ret)
			ret = raw_call(fd, &mr, sizeof(mr), RN_CTL_REG_MR, 0, what);
		close(fd);
	}
	if (!ret)
		ret = check_pattern(g.data, g.len, seed, what);
	if (!ret)
		ret = gbuf_check(&g, what);
	gbuf_free(&g);
	return ret ? -1 : 0;
}

/* The device opens for a new client. */
static int still_serving(struct attack_env *env, const char *what)
{
	int fd;

	HCHECK(!env->ringnicd || !kill(env->ringnicd, 0), "%s: ringnicd is gone",
	       what);
	HTRY(raw_session(env->ctl_path, &fd, "probe"));
	close(fd);
	return 0;
}

int attack_control(struct attack_env *env, bool foreign_handles)
{
	enum variant v = foreign_handles ?
				 V_CTL_FOREIGN_HANDLE :
				 V_CTL_BEFORE_OPEN + rng_below(V_CTL_ABANDON -
							       V_CTL_BEFORE_OPEN + 1);
	const char *path = env->ctl_path;
	int ret;

	if (v == V_CTL_FOREIGN_HANDLE && !env->loot)
		v = V_CTL_BAD_HANDLE;
	count_try(v);
	switch (v) {
	case V_CTL_BEFORE_OPEN:
	case V_CTL_EMPTY:
	case V_CTL_TRUNCATED_HDR:
	case V_CTL_LEN_MISMATCH:
	case V_CTL_WRONG_SIZE:
	case V_CTL_OVERSIZED:
	case V_CTL_BAD_OPCODE:
	case V_CTL_OPEN_TWICE:
	case V_CTL_CAPTURE_OPENED:
	case V_CTL_AFTER_CAPTURE:
	case V_CTL_UNEXPECTED_FD:
		ret = protocol_break(path, v);
		break;
	case V_CTL_OPEN_VERSION:
	case V_CTL_OPEN_FDS:
	case V_CTL_OPEN_TOO_MANY_FDS:
		ret = bad_open(path, v);
		break;
	case V_CTL_BAD_IMPORT:
		ret = bad_import(path);
		break;
	case V_CTL_BAD_HANDLE:
		ret = bad_handles(path, NULL);
		break;
	case V_CTL_FOREIGN_HANDLE:
		ret = bad_handles(path, &env->loot[rng_below(VICTIM_COUNT)]);
		break;
	case V_CTL_BAD_REG_MR:
		ret = bad_reg_mr(path);
		break;
	case V_CTL_BAD_CREATE:
		ret = bad_create(path);
		break;
	case V_CTL_BAD_MODIFY:
		ret = bad_modify(path);
		break;
	case V_CTL_RANDOM:
		ret = random_bytes(path);
		break;
	case V_CTL_FLOOD:
		ret = flood(path);
		break;
	case V_CTL_NETLINK:
		ret = netlink_garbage(path);
		break;
	default:
		ret = abandon(path);
		break;
	}
	if (still_serving(env, variants[v].name))
		ret = -1;
	return ret;
}
