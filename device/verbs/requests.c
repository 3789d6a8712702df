// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Control requests: the protocol's checks, then the objects' functions. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/kcmp.h>

#include "engine/capture.h"
#include "engine/fault.h"
#include "verbs/requests.h"

/*
 * Descriptors a request may carry: OPEN one or two, IMPORT two, CREATE_CQ
 * (a channel), OPEN_XRCD (the file naming a shared domain), NAME_CONTEXT
 * (the command fd) and GUARD (a userfaultfd) at most one.
 */
static int fds_allowed(uint32_t op)
{
	switch (op) {
	case RN_CTL_OPEN:
	case RN_CTL_IMPORT:
		return 2;
	case RN_CTL_CREATE_CQ:
	case RN_CTL_OPEN_XRCD:
	case RN_CTL_NAME_CONTEXT:
	case RN_CTL_GUARD:
		return 1;
	default:
		return 0;
	}
}

/*
 * The process of a new connection, and its userfaultfd if it gave one
 * (uffd: -1): what OPEN and IMPORT both need of it.
 */
static int attach_process(struct rn_client *client, int uffd)
{
	int ret = rn_client_attach(client);

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
	if (uffd >= 0 && rn_guard_open(client, uffd)) {
		rn_client_detach(client);
		return EINVAL;
	}
	return 0;
}

/* An async event pipe's write end, made non-blocking: never block on a
 * client that does not read its events.
 */
static int take_async_fd(int fd)
{
	struct stat st;
	int flags;

	if (fstat(fd, &st) || !S_ISFIFO(st.st_mode))
		return EINVAL;
	flags = fcntl(fd, F_GETFL);
	if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK))
		return errno;
	return 0;
}

/* The device page and wake-up eventfd of a new context, client's. */
static int context_create(struct rn_client *client)
{
	struct rn_device *dev = client->dev;
	struct epoll_event ev = { .events = EPOLLIN };
	struct rn_context *ctx = rn_context_new(dev);

	if (!ctx)
		return ENOMEM;
	rn_context_join(ctx, client);
	if (rn_charge(client, RN_DEV_PAGE_SIZE))
		goto err_ctx;
	ctx->dev_page = rn_shared_alloc(RN_DEV_PAGE_SIZE, &ctx->dev_page_fd);
	if (!ctx->dev_page)
		goto err_charge;
	ctx->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->wake_fd < 0)
		goto err_page;
	ctx->wake_watch = (struct rn_watch){ RN_WATCH_WAKE, ctx };
	ev.data.ptr = &ctx->wake_watch;
	ctx->engine = rn_engine_for_context(dev);
	if (epoll_ctl(ctx->engine->epoll_fd, EPOLL_CTL_ADD, ctx->wake_fd, &ev))
		goto err_wake;
	rn_list_add_tail(&dev->contexts, &ctx->link);
	rn_engine_context_added(ctx);
	return 0;

err_wake:
	close(ctx->wake_fd);
err_page:
	munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
	close(ctx->dev_page_fd);
err_charge:
	rn_uncharge(client, RN_DEV_PAGE_SIZE);
err_ctx:
	rn_list_del(&client->ctx_link);
	client->ctx = NULL;
	free(ctx);
	return ENOMEM;
}

/* OPEN's and IMPORT's answer: the device, the context's page and wake-up. */
static int answer_opened(struct rn_client *client, struct rn_context *ctx,
			 struct rn_reply *r)
{
	struct rn_ctl_open_resp *resp = (void *)r->resp.buf;

	r->fds[0] = dup(ctx->dev_page_fd);
	if (r->fds[0] < 0)
		return errno;
	r->fds[1] = ctx->wake_fd; /* kept: see rn_reply_sent */
	r->nfds = 2;
	resp->attr = client->dev->attr;
	r->resp.hdr.len = sizeof(*resp);
	return 0;
}

static int do_open(struct rn_client *client, struct rn_msg *m,
		   struct rn_reply *r)
{
	struct rn_ctl_open_req *req = (void *)m->req.buf;
	struct rn_device *dev = client->dev;
	int uffd_at, ret;

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
		ret = m->nfds < 1 ? EINVAL : take_async_fd(m->fds[0]);
		if (ret)
			return ret;
	}
	ret = attach_process(client, m->nfds > uffd_at ? m->fds[uffd_at] : -1);
	if (ret)
		return ret;
	ret = context_create(client);
	if (!ret)
		ret = answer_opened(client, client->ctx, r);
	if (ret) {
		rn_client_release(client);
		if (m->nfds > uffd_at)
			m->nfds = uffd_at; /* the uffd is closed already */
		return ret;
	}
	client->async_fd = client->kctx ? -1 : m->fds[0];
	client->opened = true;
	m->nfds = 0; /* all kept */
	rn_dbg("client pid %d opened %s\n", client->pid, dev->name);
	return 0;
}

/*
 * Whether a and b are the same open file: kcmp says so exactly; where it
 * is not offered (no CONFIG_KCMP, or a seccomp policy), the inode decides,
 * which the context's holding its file open keeps from being reused.
 */
static bool same_file(int a, int b)
{
	pid_t self = getpid();
	struct stat sa, sb;
	long ret;

	if (fstat(a, &sa) || fstat(b, &sb) || sa.st_dev != sb.st_dev ||
	    sa.st_ino != sb.st_ino)
		return false;
	ret = syscall(SYS_kcmp, self, self, KCMP_FILE, a, b);
	return ret == 0 || (ret < 0 && (errno == ENOSYS || errno == EPERM));
}

/* The live context whose command fd is the file fd, or NULL. */
static struct rn_context *context_named(struct rn_device *dev, int fd)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->contexts) {
		struct rn_context *ctx =
			rn_container_of(pos, struct rn_context, link);

		if (ctx->cmd_fd >= 0 && same_file(ctx->cmd_fd, fd))
			return ctx;
	}
	return NULL;
}

/*
 * NAME_CONTEXT: the file by which other processes name the context.  It
 * must be a sealed memfd (the shim's command fd is one), a file of the
 * process's own that nobody can open by a path; a second naming, or a
 * file that names another context already, is refused.
 */
static int do_name_context(struct rn_client *client, struct rn_msg *m)
{
	const struct rn_ctl_handle_req *req = (void *)m->req.buf;
	int seals = m->nfds == 1 ? fcntl(m->fds[0], F_GET_SEALS) : -1;

	if (client->kctx)
		return EOPNOTSUPP;
	if (m->nfds != 1 || req->handle || req->reserved ||
	    client->ctx->cmd_fd >= 0 || seals < 0 || !(seals & F_SEAL_GROW) ||
	    context_named(client->dev, m->fds[0]))
		return EINVAL;
	client->ctx->cmd_fd = m->fds[0];
	m->nfds = 0; /* kept */
	return 0;
}

/*
 * IMPORT: the first message of a process that joins a context of another
 * (ibv_import_device), by the command fd that process passed it: holding
 * the file is the right to the context, as it is for a uverbs file.  Its
 * own memory is reached as any client's; its userfaultfd comes next
 * (GUARD).
 */
static int do_import(struct rn_client *client, struct rn_msg *m,
		     struct rn_reply *r)
{
	struct rn_ctl_open_req *req = (void *)m->req.buf;
	struct rn_context *ctx;
	int ret;

	if (req->version != RN_CTL_VERSION)
		return EPROTO;
	if (client->kctx || client->dev->kdev_fd >= 0)
		return EOPNOTSUPP;
	if (req->reserved || m->nfds != 2)
		return EINVAL;
	ret = take_async_fd(m->fds[0]);
	if (ret)
		return ret;
	ctx = context_named(client->dev, m->fds[1]);
	if (!ctx)
		return EBADF;
	ret = attach_process(client, -1);
	if (ret)
		return ret;
	ret = answer_opened(client, ctx, r);
	if (ret) {
		rn_client_detach(client);
		return ret;
	}
	/* Members gone whose objects are gone too are freed now. */
	rn_context_prune(ctx);
	rn_context_join(ctx, client);
	client->opened = true;
	client->async_fd = m->fds[0];
	m->nfds = 1; /* the async fd is kept, the command fd closed */
	m->fds[0] = m->fds[1];
	rn_dbg("client pid %d joined context %u of %s\n", client->pid,
	       ctx->ctxn, client->dev->name);
	return 0;
}

/* GUARD: the userfaultfd of a process that joined with IMPORT. */
static int do_guard(struct rn_client *client, struct rn_msg *m)
{
	const struct rn_ctl_handle_req *req = (void *)m->req.buf;

	if (client->kctx)
		return EOPNOTSUPP;
	if (m->nfds != 1 || req->handle || req->reserved || client->uffd >= 0 ||
	    rn_guard_open(client, m->fds[0]))
		return EINVAL;
	m->nfds = 0; /* kept */
	return 0;
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
		uint64_t counters[RN_CNT_MAX];

		if (req->port != 1)
			return EINVAL;
		r->resp.hdr.len = sizeof(*resp);
		rn_port_query(client->dev, &resp->attr);
		rn_port_counters(client->dev, counters);
		resp->attr.qkey_viol_cntr =
			(uint32_t)counters[RN_CNT_QKEY_VIOLATIONS];
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
	case RN_CTL_NAME_CONTEXT:
		return do_name_context(client, m);
	case RN_CTL_GUARD:
		return do_guard(client, m);
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

	/* A context's wake-up eventfd is handed out and kept. */
	for (i = 0; i < r->nfds; i++)
		if (!client || !client->ctx || r->fds[i] != client->ctx->wake_fd)
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
	bool first = op == RN_CTL_OPEN || op == RN_CTL_IMPORT ||
		     op == RN_CTL_CAPTURE;
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
	else if (op == RN_CTL_IMPORT)
		r->resp.hdr.status = do_import(client, m, r);
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
