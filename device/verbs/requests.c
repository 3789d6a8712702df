// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Control requests: the protocol's checks, then the objects' functions. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/capture.h"
#include "engine/fault.h"
#include "verbs/requests.h"

/*
 * Descriptors a request may carry: OPEN one or two, CREATE_CQ (a channel)
 * and OPEN_XRCD (the file naming a shared domain) at most one.
 */
static int fds_allowed(uint32_t op)
{
	switch (op) {
	case RN_CTL_OPEN:
		return 2;
	case RN_CTL_CREATE_CQ:
	case RN_CTL_OPEN_XRCD:
		return 1;
	default:
		return 0;
	}
}

static int do_open(struct rn_client *client, struct rn_msg *m,
		   struct rn_reply *r)
{
	struct rn_ctl_open_req *req = (void *)m->req.buf;
	struct rn_ctl_open_resp *resp = (void *)r->resp.buf;
	struct rn_device *dev = client->dev;
	struct epoll_event ev = { .events = EPOLLIN };
	int memfd, wake, flags, uffd_at, ret;
	struct stat st;

	if (req->version != RN_CTL_VERSION)
		return EPROTO;
	/* In kernel mode a context is opened through ringnic.ko only. */
	if (!client->kctx && dev->kdev_fd >= 0)
		return EOPNOTSUPP;
	/* A kernel context's async events go through the kernel: its only
	 * descriptor is the optional userfaultfd.
	 */
	uffd_at = client->kctx ? 0 : 1;
	if (!client->kctx) {
		if (m->nfds < 1 || fstat(m->fds[0], &st) || !S_ISFIFO(st.st_mode))
			return EINVAL;
		/* Never block on a client that does not read its events. */
		flags = fcntl(m->fds[0], F_GETFL);
		if (flags < 0 || fcntl(m->fds[0], F_SETFL, flags | O_NONBLOCK))
			return errno;
	}
	ret = rn_client_attach(client);
	if (ret == EACCES || ret == EPERM) {
		/* /proc/PID/mem asks for the right to ptrace the client. */
		rn_warn("client pid %d (uid %u): cannot reach its memory: %s: "
			"ringnicd (uid %u) reaches the processes it may ptrace: "
			"its own user's (unless kernel.yama.ptrace_scope is 2 or "
			"more) or, as root, any\n", client->pid,
			(unsigned)client->uid, strerror(ret),
			(unsigned)geteuid());
		return ret;
	}
	if (ret) {
		rn_warn("client pid %d: cannot reach its process: %s\n",
			client->pid, strerror(ret));
		return ret;
	}
	if (m->nfds > uffd_at && rn_guard_open(client, m->fds[uffd_at])) {
		rn_client_detach(client);
		return EINVAL;
	}

	if (rn_charge(client, RN_DEV_PAGE_SIZE))
		goto err_guard;
	client->dev_page = rn_shared_alloc(RN_DEV_PAGE_SIZE, &memfd);
	if (!client->dev_page) {
		rn_uncharge(client, RN_DEV_PAGE_SIZE);
		goto err_guard;
	}
	wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (wake < 0)
		goto err_page;
	client->wake_watch = (struct rn_watch){ RN_WATCH_WAKE, client };
	ev.data.ptr = &client->wake_watch;
	if (epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, wake, &ev))
		goto err_wake;

	client->wake_fd = wake;
	client->async_fd = client->kctx ? -1 : m->fds[0];
	m->nfds = 0; /* all kept */
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
	rn_uncharge(client, RN_DEV_PAGE_SIZE);
	client->dev_page = NULL;
	close(memfd);
err_guard:
	if (client->uffd >= 0) {
		rn_guard_close(client);
		m->nfds = uffd_at; /* the uffd is closed already */
	}
	rn_client_detach(client);
	return ENOMEM;
}

/* Sets the response's length and calls fn(client, request, response). */
#define CALL(fn, resp_type)                                                    \
	(r->resp.hdr.len = sizeof(struct resp_type),                          \
	 fn(client, (void *)m->req.buf, (void *)r->resp.buf))
#define CALL_MEM(fn, resp_type)                                                \
	(r->resp.hdr.len = sizeof(struct resp_type),                          \
	 fn(client, (void *)m->req.buf, (void *)r->resp.buf, &memfd))

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
	case RN_CTL_QUERY_PORT: {
		const struct rn_ctl_query_port_req *req = (void *)m->req.buf;
		struct rn_ctl_query_port_resp *resp = (void *)r->resp.buf;

		if (req->port != 1)
			return EINVAL;
		r->resp.hdr.len = sizeof(*resp);
		rn_port_query(client->dev, &resp->attr);
		return 0;
	}
	case RN_CTL_CREATE_AH:
		return CALL(rn_ah_create, rn_ctl_create_ah_resp);
	case RN_CTL_DESTROY_AH:
		return rn_ah_destroy(client, h->handle);
	case RN_CTL_CREATE_SRQ:
		ret = CALL_MEM(rn_srq_create, rn_ctl_create_srq_resp);
		break;
	case RN_CTL_MODIFY_SRQ:
		ret = CALL_MEM(rn_srq_modify, rn_ctl_modify_srq_resp);
		break;
	case RN_CTL_QUERY_SRQ:
		r->resp.hdr.len = sizeof(struct rn_ctl_query_srq_resp);
		return rn_srq_query(client, h->handle, (void *)r->resp.buf);
	case RN_CTL_DESTROY_SRQ:
		return rn_srq_destroy(client, h->handle);
	case RN_CTL_OPEN_XRCD:
		r->resp.hdr.len = sizeof(struct rn_ctl_open_xrcd_resp);
		return rn_xrcd_open(client, (void *)m->req.buf,
				    m->nfds ? m->fds[0] : -1, (void *)r->resp.buf);
	case RN_CTL_CLOSE_XRCD:
		return rn_xrcd_close(client, h->handle);
	case RN_CTL_OPEN_QP:
		return CALL(rn_qp_open, rn_ctl_open_qp_resp);
	case RN_CTL_ALLOC_MW:
		return CALL(rn_mw_alloc, rn_ctl_alloc_mw_resp);
	case RN_CTL_DEALLOC_MW:
		return rn_mw_dealloc(client, h->handle);
	case RN_CTL_REREG_MR:
		return CALL(rn_mr_rereg, rn_ctl_rereg_mr_resp);
	case RN_CTL_RESIZE_CQ:
		ret = CALL_MEM(rn_cq_resize, rn_ctl_resize_cq_resp);
		break;
	case RN_CTL_QUERY_PD:
		return rn_pd_query(client, h->handle);
	case RN_CTL_QUERY_MR:
		r->resp.hdr.len = sizeof(struct rn_ctl_query_mr_resp);
		return rn_mr_query(client, h->handle, (void *)r->resp.buf);
	case RN_CTL_FAULTS:
		return rn_faults_set(client, (void *)m->req.buf, true);
	default:
		return EINVAL;
	}
	/* Requests that answer with memory; MODIFY_SRQ only when it moved. */
	if (!ret && memfd >= 0) {
		r->fds[0] = memfd;
		r->nfds = 1;
	}
	return ret;
}

void rn_reply_sent(const struct rn_client *client, const struct rn_reply *r)
{
	int i;

	for (i = 0; i < r->nfds; i++)
		if (!client || r->fds[i] != client->wake_fd)
			close(r->fds[i]);
}

/* A packet capture's connection: its first message and its only one. */
static int do_capture(struct rn_client *client, struct rn_msg *m)
{
	struct rn_ctl_capture_req *req = (void *)m->req.buf;

	if (client->kctx)
		return EOPNOTSUPP;
	if (req->reserved || req->pid > INT32_MAX)
		return EINVAL;
	return rn_capture_start(client, req->qpn, (pid_t)req->pid,
				req->snaplen);
}

bool rn_request(struct rn_client *client, struct rn_msg *m, struct rn_reply *r)
{
	uint32_t op = m->req.hdr.op;
	bool first = op == RN_CTL_OPEN || op == RN_CTL_CAPTURE;
	/* FAULTS: a context's, for its QPs, or ringnic-fault's, by QPN. */
	bool unopened_faults = op == RN_CTL_FAULTS && !client->opened;

	/* A capture takes no request after the one that started it. */
	if (m->len < sizeof(m->req.hdr) || m->req.hdr.len != m->len ||
	    m->len != rn_ctl_req_size(op) || client->capture ||
	    (first == client->opened && !unopened_faults) ||
	    m->nfds > fds_allowed(op))
		return false;

	memset(r, 0, sizeof(*r));
	r->resp.hdr.len = sizeof(struct rn_ctl_resp_hdr);
	if (op == RN_CTL_OPEN)
		r->resp.hdr.status = do_open(client, m, r);
	else if (op == RN_CTL_CAPTURE)
		r->resp.hdr.status = do_capture(client, m);
	else if (unopened_faults)
		r->resp.hdr.status =
			client->kctx ? EOPNOTSUPP :
				       rn_faults_set(client, (void *)m->req.buf,
						     false);
	else if (!rn_client_confirm(client, m->sender))
		r->resp.hdr.status = EPERM;
	else
		r->resp.hdr.status = dispatch(client, m, r);
	if (r->resp.hdr.status) {
		r->resp.hdr.len = sizeof(struct rn_ctl_resp_hdr);
		r->nfds = 0;
	}
	return true;
}
