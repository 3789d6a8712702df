// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Provider glue: how libibverbs finds a ringnic device, and how a context
 * is opened, imported (ibv_import_device: another context on the same
 * connection within the process that opened it, or a context of another
 * process joined on a connection of our own) and closed.  The mode is
 * discovered per device: one ringnicd published (userspace mode: a control
 * connection to it) or one ringnic.ko registered (kernel mode: the uverbs
 * file, see kernel.c).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include "ringnic.h"
#include "shim.h"

static const struct verbs_match_ent match_table[] = {
	{ .u.modalias = RN_MODALIAS_PREFIX "*", .kind = RN_VERBS_MATCH_MODALIAS },
	{ .kind = RN_VERBS_MATCH_SENTINEL },
};

static void rn_free_context(struct ibv_context *ibctx);
static void rn_async_event(struct ibv_context *ibctx,
			   struct ibv_async_event *event);
static const struct verbs_device_ops rn_dev_ops;

static const struct verbs_context_ops rn_ctx_ops = {
	.advise_mr = rn_advise_mr,
	.alloc_mw = rn_alloc_mw,
	.alloc_pd = rn_alloc_pd,
	.async_event = rn_async_event,
	.bind_mw = rn_bind_mw,
	.close_xrcd = rn_close_xrcd,
	.cq_event = rn_cq_event,
	.create_ah = rn_create_ah,
	.create_cq = rn_create_cq,
	.create_cq_ex = rn_create_cq_ex,
	.create_qp = rn_create_qp,
	.create_qp_ex = rn_create_qp_ex,
	.create_srq = rn_create_srq,
	.create_srq_ex = rn_create_srq_ex,
	.dealloc_mw = rn_dealloc_mw,
	.dealloc_pd = rn_dealloc_pd,
	.dereg_mr = rn_dereg_mr,
	.destroy_ah = rn_destroy_ah,
	.destroy_cq = rn_destroy_cq,
	.destroy_qp = rn_destroy_qp,
	.destroy_srq = rn_destroy_srq,
	.free_context = rn_free_context,
	.get_srq_num = rn_get_srq_num,
	.import_mr = rn_import_mr,
	.import_pd = rn_import_pd,
	.modify_qp = rn_modify_qp,
	.modify_srq = rn_modify_srq,
	.open_qp = rn_open_qp,
	.open_xrcd = rn_open_xrcd,
	.poll_cq = rn_poll_cq,
	.post_recv = rn_post_recv,
	.post_send = rn_post_send,
	.post_srq_recv = rn_post_srq_recv,
	.query_device_ex = rn_query_device_ex,
	.query_port = rn_query_port,
	.query_qp = rn_query_qp,
	.query_qp_data_in_order = rn_query_qp_data_in_order,
	.query_srq = rn_query_srq,
	.reg_mr = rn_reg_mr,
	.req_notify_cq = rn_req_notify_cq,
	.rereg_mr = rn_rereg_mr,
	.resize_cq = rn_resize_cq,
	.unimport_mr = rn_unimport_mr,
	.unimport_pd = rn_unimport_pd,
};

static int connect_device(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * The device reads and writes our memory with process_vm_readv/writev.
 * Under Yama's ptrace_scope 1 an unprivileged device needs our consent.
 */
static void allow_device_access(int ctl_fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (!getsockopt(ctl_fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) && cred.uid)
		prctl(PR_SET_PTRACER, cred.pid, 0, 0, 0);
}

/*
 * A userfaultfd of our address space, for ringnicd to learn when memory
 * under an MR is unmapped or moved; -1 where we may not have one (seccomp,
 * vm.unprivileged_userfaultfd on kernels before user-mode-only ones).
 */
static int make_uffd(void)
{
	int fd = syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);

	if (fd < 0 && errno == EINVAL)
		fd = syscall(SYS_userfaultfd, O_CLOEXEC);
	return fd;
}

/*
 * The OPEN exchange: our async event pipe (and uffd) for the device page
 * and doorbell; then the command fd, by which other processes may name
 * the context (IMPORT).  With import_fd >= 0, IMPORT instead: the context
 * of another process whose command fd that is.  *async_rd: the read end
 * of the context's async event pipe.
 */
static int open_device(struct rn_context *ctx, int cmd_fd, int import_fd,
		       int *async_rd)
{
	struct rn_ctl_open_req req = {
		.hdr.op = import_fd >= 0 ? RN_CTL_IMPORT : RN_CTL_OPEN,
		.version = RN_CTL_VERSION,
	};
	struct rn_ctl_handle_req name = { .hdr.op = RN_CTL_NAME_CONTEXT };
	struct rn_ctl_resp_hdr named;
	struct rn_ctl_open_resp resp;
	int async[2], give[2], fds[2], ret;

	if (pipe2(async, O_CLOEXEC))
		return errno;
	give[0] = async[1];
	give[1] = import_fd >= 0 ? import_fd : make_uffd();
	ret = rn_ctl_call(ctx, &req, sizeof(req), &resp, sizeof(resp), give,
			  give[1] < 0 ? 1 : 2, fds, 2);
	if (give[1] >= 0 && import_fd < 0)
		close(give[1]); /* ringnicd's now */
	if (ret)
		goto err_pipe;
	ret = ENOMEM;
	ctx->dev_page = rn_map_fd(fds[0], RN_DEV_PAGE_SIZE);
	if (!ctx->dev_page) {
		close(fds[1]);
		goto err_pipe;
	}
	ctx->wake_fd = fds[1];
	ctx->attr = resp.attr;
	if (import_fd < 0) {
		ret = rn_ctl_call(ctx, &name, sizeof(name), &named,
				  sizeof(named), &cmd_fd, 1, NULL, 0);
	} else {
		/* IMPORT had no room for our userfaultfd. */
		struct rn_ctl_handle_req guard = { .hdr.op = RN_CTL_GUARD };
		int uffd = make_uffd();

		ret = 0;
		if (uffd >= 0) {
			ret = rn_ctl_call(ctx, &guard, sizeof(guard), &named,
					  sizeof(named), &uffd, 1, NULL, 0);
			close(uffd); /* ringnicd's now */
		}
	}
	if (ret)
		goto err_page;
	*async_rd = async[0];
	/* The device holds a copy; ours is for when the device is gone. */
	ctx->async_wfd = async[1];
	return 0;

err_page:
	munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
	close(ctx->wake_fd);
err_pipe:
	close(async[0]);
	close(async[1]);
	return ret;
}

/* ringnicd went away: fail what can fail, and wake whoever waits. */
static void device_lost(struct rn_context *ctx)
{
	struct {
		uint64_t element;
		uint32_t event_type;
		uint32_t reserved;
	} ev = { 0, IBV_EVENT_DEVICE_FATAL, 0 };
	struct rn_cq *cq;

	__atomic_store_n(&ctx->dead, true, __ATOMIC_SEQ_CST);
	rn_err(ctx, "ringnicd is gone: the device is lost\n");
	if (write(ctx->async_wfd, &ev, sizeof(ev)) != sizeof(ev))
		rn_err(ctx, "cannot report IBV_EVENT_DEVICE_FATAL\n");
	/* A waiter in ibv_get_cq_event gets its CQ, whose poll now fails. */
	pthread_mutex_lock(&ctx->channel_lock);
	for (cq = ctx->channel_cqs; cq; cq = cq->next_channel_cq) {
		struct ibv_cq *ibcq = ibv_cq_ex_to_cq(&cq->ibv_cq);

		if (write(cq->channel_wfd, &ibcq, sizeof(ibcq)) != sizeof(ibcq))
			rn_err(ctx, "cannot wake a completion channel\n");
	}
	pthread_mutex_unlock(&ctx->channel_lock);
}

/*
 * libibverbs shows the provider each async event it reads.  In kernel
 * mode the kernel reports a device removed under its contexts (rdma link
 * delete) as DEVICE_FATAL before ringnicd's hang-up reaches the watchdog:
 * the context is dead from that event on, whoever sent it.
 */
static void rn_async_event(struct ibv_context *ibctx,
			   struct ibv_async_event *event)
{
	if (event->event_type == IBV_EVENT_DEVICE_FATAL)
		__atomic_store_n(&to_rn_ctx(ibctx)->dead, true, __ATOMIC_SEQ_CST);
}

static void *watchdog(void *arg)
{
	struct rn_context *ctx = arg;
	struct pollfd pfd[2] = {
		{ .fd = ctx->ctl_fd, .events = POLLRDHUP },
		{ .fd = ctx->watchdog_stop, .events = POLLIN },
	};

	while (poll(pfd, 2, -1) < 0 && errno == EINTR)
		;
	if (!pfd[1].revents)
		device_lost(ctx);
	return NULL;
}

/* The watchdog takes no signal meant for the application. */
static int start_watchdog(struct rn_context *ctx)
{
	sigset_t all, old;
	int ret;

	ctx->watchdog_stop = eventfd(0, EFD_CLOEXEC);
	if (ctx->watchdog_stop < 0)
		return errno;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ret = pthread_create(&ctx->watchdog, NULL, watchdog, ctx);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret)
		close(ctx->watchdog_stop);
	return ret;
}

static void stop_watchdog(struct rn_context *ctx)
{
	static const uint64_t one = 1;

	if (write(ctx->watchdog_stop, &one, sizeof(one)) != sizeof(one))
		rn_err(ctx, "cannot stop the watchdog\n");
	pthread_join(ctx->watchdog, NULL);
	close(ctx->watchdog_stop);
}

bool rn_is_ringnic(struct ibv_context *context)
{
	/* Every libibverbs device is a verbs_device: compare its ops. */
	return to_rn_dev(context->device)->ibv_dev.ops == &rn_dev_ops;
}

/* Kernel mode: the uverbs command opens the context with ringnicd. */
static int open_kernel_context(struct rn_context *ctx)
{
	int uffd = make_uffd();
	int ret = rn_kernel_open(ctx, uffd);

	if (uffd >= 0)
		close(uffd); /* ringnicd's now */
	if (ret)
		rn_err(ctx, "cannot open the device: %s\n", strerror(ret));
	ctx->ctl_fd = -1;
	ctx->async_wfd = -1;
	ctx->kernel = true;
	return ret;
}

/* The homes of the process's contexts in userspace mode (see rn_context). */
static pthread_mutex_t homes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct rn_context *homes;

static void home_add(struct rn_context *home, const struct stat *st)
{
	home->cmd_dev = st->st_dev;
	home->cmd_ino = st->st_ino;
	home->pid = getpid();
	home->users = 1;
	pthread_mutex_lock(&homes_lock);
	home->next_home = homes;
	homes = home;
	pthread_mutex_unlock(&homes_lock);
}

/*
 * The home of a command fd's context, with one more user; or NULL.  A
 * child's copy of its parent's homes names the parent's connections, which
 * the child must not share: the fd is then another process's.
 */
static struct rn_context *home_get(const struct stat *st)
{
	pid_t pid = getpid();
	struct rn_context *home;

	pthread_mutex_lock(&homes_lock);
	for (home = homes; home; home = home->next_home)
		if (home->cmd_dev == st->st_dev && home->cmd_ino == st->st_ino &&
		    home->pid == pid) {
			home->users++;
			break;
		}
	pthread_mutex_unlock(&homes_lock);
	return home;
}

/* A context of the home is closed; the last one closes the connection. */
static void home_put(struct rn_context *home)
{
	struct rn_context **p;
	bool last;

	pthread_mutex_lock(&homes_lock);
	last = !--home->users;
	if (last)
		for (p = &homes; *p; p = &(*p)->next_home)
			if (*p == home) {
				*p = home->next_home;
				break;
			}
	pthread_mutex_unlock(&homes_lock);
	if (!last)
		return;
	/* Closing the connection frees whatever the application left. */
	close(home->ctl_fd);
	close(home->wake_fd);
	munmap(home->dev_page, RN_DEV_PAGE_SIZE);
	pthread_mutex_destroy(&home->mr_lock);
	pthread_mutex_destroy(&home->ctl_lock);
	free(home);
}

static struct rn_context *context_alloc(struct ibv_device *ibdev, int cmd_fd)
{
	struct rn_context *ctx;

	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    &((struct rn_context *)NULL)->ibv_ctx,
					    0);
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->ctl_lock, NULL);
	pthread_mutex_init(&ctx->channel_lock, NULL);
	pthread_mutex_init(&ctx->mr_lock, NULL);
	ctx->home = ctx;
	ctx->wake_fd = -1;
	ctx->ibv_ctx.context.num_comp_vectors = 1;
	return ctx;
}

static struct verbs_context *rn_alloc_context(struct ibv_device *ibdev,
					      int cmd_fd, void *private_data)
{
	struct rn_device *dev = to_rn_dev(ibdev);
	struct rn_context *ctx;
	struct stat st;
	int ret;

	(void)private_data;
	ctx = context_alloc(ibdev, cmd_fd);
	if (!ctx)
		return NULL;
	if (dev->kernel) {
		ret = open_kernel_context(ctx);
		if (ret)
			goto err;
		goto done;
	}
	ctx->ctl_fd = connect_device(dev->ctl_path);
	if (ctx->ctl_fd < 0) {
		ret = errno;
		rn_err(ctx, "cannot reach ringnicd at %s: %s\n", dev->ctl_path,
		       strerror(ret));
		goto err;
	}
	allow_device_access(ctx->ctl_fd);
	ret = open_device(ctx, cmd_fd, -1, &ctx->ibv_ctx.context.async_fd);
	if (ret) {
		rn_err(ctx, "ringnicd refused to open the device: %s\n",
		       strerror(ret));
		close(ctx->ctl_fd);
		goto err;
	}
	ret = start_watchdog(ctx);
	if (ret) {
		rn_err(ctx, "cannot start the watchdog: %s\n", strerror(ret));
		munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
		close(ctx->wake_fd);
		close(ctx->async_wfd);
		close(ctx->ctl_fd);
		goto err;
	}
	/* The shim's command fd is a file of its own, which fstat names. */
	if (fstat(cmd_fd, &st))
		memset(&st, 0, sizeof(st));
	home_add(ctx, &st);
done:
	verbs_set_ops(&ctx->ibv_ctx, &rn_ctx_ops);
	return &ctx->ibv_ctx;

err:
	verbs_uninit_context(&ctx->ibv_ctx);
	free(ctx);
	errno = ret;
	return NULL;
}

/*
 * ibv_import_device of another process's context in userspace mode (the
 * command fd it passed us): a connection of our own joins that context in
 * ringnicd, which knows the context by that file.
 */
static int import_other(struct rn_context *ctx, int *async_rd)
{
	struct rn_device *dev = to_rn_dev(ctx->ibv_ctx.context.device);
	int cmd_fd = ctx->ibv_ctx.context.cmd_fd;
	int ret;

	ctx->ctl_fd = connect_device(dev->ctl_path);
	if (ctx->ctl_fd < 0)
		return errno;
	allow_device_access(ctx->ctl_fd);
	ret = open_device(ctx, cmd_fd, cmd_fd, async_rd);
	if (ret)
		close(ctx->ctl_fd); /* EBADF: the file names no context */
	return ret;
}

/*
 * ibv_import_device in userspace mode: the command fd is the shim's memfd
 * of a context.  A context of this process (a dup of its command fd, the
 * same file) shares that context's connection; one of another process
 * gets a connection of its own (import_other), and is the home of the
 * file in this process from then on.  Either way the async event fd
 * libibverbs then asks of the command fd is a pipe of our own, handed to
 * the shim to answer with.
 */
static struct verbs_context *rn_import_context(struct ibv_device *ibdev,
					       int cmd_fd)
{
	rn_shim_offer_async_fd_fn offer = (rn_shim_offer_async_fd_fn)dlsym(
		RTLD_DEFAULT, "rn_shim_offer_async_fd");
	struct rn_context *ctx, *home;
	struct stat st;
	int async_rd = -1, ret;

	if (to_rn_dev(ibdev)->kernel || !offer) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (fstat(cmd_fd, &st))
		return NULL;
	ctx = context_alloc(ibdev, cmd_fd);
	if (!ctx)
		return NULL;
	home = home_get(&st);
	if (home) {
		int async[2];

		ctx->home = home;
		ctx->ctl_fd = home->ctl_fd;
		ctx->dev_page = home->dev_page;
		ctx->wake_fd = home->wake_fd;
		ctx->attr = home->attr;
		if (pipe2(async, O_CLOEXEC)) {
			ret = errno;
			goto err_ctx;
		}
		async_rd = async[0];
		ctx->async_wfd = async[1];
	} else {
		ret = import_other(ctx, &async_rd);
		if (ret)
			goto err_ctx;
	}
	ret = start_watchdog(ctx);
	if (ret)
		goto err_pipe;
	/* The last step that can fail: the shim then owns the read end. */
	ret = offer(cmd_fd, async_rd);
	if (ret) {
		stop_watchdog(ctx);
		goto err_pipe;
	}
	/* Only now may another import of this process find it. */
	if (!home)
		home_add(ctx, &st);
	verbs_set_ops(&ctx->ibv_ctx, &rn_ctx_ops);
	return &ctx->ibv_ctx;

err_pipe:
	close(async_rd);
	close(ctx->async_wfd);
	if (!home) {
		/* Our own connection: closing it leaves the context. */
		close(ctx->ctl_fd);
		close(ctx->wake_fd);
		munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
	}
err_ctx:
	/* A failed import leaves the caller its fd, as an early one does. */
	ctx->ibv_ctx.context.cmd_fd = -1;
	verbs_uninit_context(&ctx->ibv_ctx);
	pthread_mutex_destroy(&ctx->mr_lock);
	pthread_mutex_destroy(&ctx->channel_lock);
	pthread_mutex_destroy(&ctx->ctl_lock);
	free(ctx);
	if (home)
		home_put(home);
	errno = ret;
	return NULL;
}

static void rn_free_context(struct ibv_context *ibctx)
{
	struct rn_context *ctx = to_rn_ctx(ibctx), *home = ctx->home;

	if (ctx->kernel) {
		/* The kernel frees whatever the application left. */
		munmap((void *)ctx->kstatus, 4096);
		pthread_mutex_destroy(&ctx->channel_lock);
		close(ctx->wake_fd);
		munmap(ctx->dev_page, RN_DEV_PAGE_SIZE);
		pthread_mutex_destroy(&ctx->mr_lock);
		pthread_mutex_destroy(&ctx->ctl_lock);
		verbs_uninit_context(&ctx->ibv_ctx);
		free(ctx);
		return;
	}
	stop_watchdog(ctx); /* it takes channel_lock when the device dies */
	pthread_mutex_destroy(&ctx->channel_lock);
	close(ctx->async_wfd);
	verbs_uninit_context(&ctx->ibv_ctx);
	/* A home's connection and locks outlive it while importers use them. */
	if (ctx != home) {
		pthread_mutex_destroy(&ctx->mr_lock);
		pthread_mutex_destroy(&ctx->ctl_lock);
		free(ctx);
	}
	home_put(home);
}

/* The control socket's path is published next to the device's attributes. */
static int read_ctl_path(const struct verbs_sysfs_dev *sysfs, char *buf,
			 size_t len)
{
	char path[IBV_SYSFS_PATH_MAX + 32];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" RN_SYSFS_CONTROL, sysfs->ibdev_path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

/* A published device matches by its modalias; ringnic.ko's by its file. */
static bool rn_match_device(struct verbs_sysfs_dev *sysfs)
{
	return sysfs->match || rn_kernel_device(sysfs);
}

static struct verbs_device *rn_alloc_device(struct verbs_sysfs_dev *sysfs)
{
	struct rn_device *dev = calloc(1, sizeof(*dev));

	if (!dev)
		return NULL;
	dev->kernel = !sysfs->match;
	if (!dev->kernel &&
	    read_ctl_path(sysfs, dev->ctl_path, sizeof(dev->ctl_path))) {
		free(dev);
		return NULL;
	}
	return &dev->ibv_dev;
}

static void rn_uninit_device(struct verbs_device *vdev)
{
	free(rn_container_of(vdev, struct rn_device, ibv_dev));
}

static const struct verbs_device_ops rn_dev_ops = {
	.name = "ringnic",
	.match_min_abi_version = RN_UVERBS_ABI_VERSION,
	.match_max_abi_version = RN_UVERBS_ABI_VERSION,
	.match_table = match_table,
	.match_device = rn_match_device,
	.alloc_device = rn_alloc_device,
	.uninit_device = rn_uninit_device,
	.alloc_context = rn_alloc_context,
	.import_context = rn_import_context,
};

static void __attribute__((constructor)) rn_register(void)
{
	rn_verbs_register_driver(&rn_dev_ops);
}
