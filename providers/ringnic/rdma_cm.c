// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_cm without kernel RDMA: librdmacm opens /dev/infiniband/rdma_cm,
 * checks with fstat that it is a character device, and writes one UCMA
 * command per write().  Here an open of that path (devnodes.c) is an event
 * channel of ringnicd (kernel-abi/ringnic-cm.h): the application holds one end of a
 * socketpair, readable while events wait (devnodes.c makes fstat show it
 * as a character device), and the commands written to it travel over a
 * SOCK_SEQPACKET connection to ringnicd instead.  Every other write and
 * close goes to libc untouched.
 *
 * The channels are found by descriptor in a table of pages that are never
 * freed, so that the check in write() and close() of every other descriptor
 * takes no lock.  A channel's commands take its mutex, one at a time; a
 * GET_EVENT waits for its byte holding neither the mutex nor the channel,
 * as the kernel lets other commands run while GET_EVENT sleeps.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "kernel-abi/ringnic-cm.h"
#include "shim.h"

typedef ssize_t (*write_fn)(int, const void *, size_t);
typedef int (*close_fn)(int);

static void *_Atomic next_close;

static int real_close(int fd)
{
	return ((close_fn)rn_shim_next(&next_close, "close"))(fd);
}

struct chan {
	int sock; /* the SEQPACKET connection to ringnicd */
	/*
	 * The application's end of the event pair, duplicated: GET_EVENT
	 * reads it, so that a close of the application's descriptor in
	 * another thread leaves it waiting, as the kernel's file does.
	 */
	int events;
	__u64 token; /* from the hello reply, for MIGRATE_ID */
	pthread_mutex_t cmd_lock; /* one command at a time on sock */
	int refs; /* under table_lock: the table's, and each command's */
};

/*
 * Descriptor fd's channel is pages[fd / CHAN_PER_PAGE][fd % CHAN_PER_PAGE].
 * Slots and pages change under table_lock only; a lookup without it only
 * tells whether fd may be a channel.
 */
#define CHAN_PER_PAGE 1024
#define CHAN_PAGES 1024
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static struct chan *_Atomic *_Atomic pages[CHAN_PAGES];

static struct chan *_Atomic *chan_slot(int fd)
{
	struct chan *_Atomic *page;

	if (fd < 0 || fd >= CHAN_PAGES * CHAN_PER_PAGE)
		return NULL;
	page = atomic_load_explicit(&pages[fd / CHAN_PER_PAGE],
				    memory_order_acquire);
	return page ? &page[fd % CHAN_PER_PAGE] : NULL;
}

/* fd's channel; without table_lock, only a hint. */
static struct chan *chan_at(int fd)
{
	struct chan *_Atomic *slot = chan_slot(fd);

	return slot ? atomic_load_explicit(slot, memory_order_relaxed) : NULL;
}

static int chan_add(int fd, int sock, __u64 token)
{
	struct chan *_Atomic *page;
	struct chan *ch;

	if (fd >= CHAN_PAGES * CHAN_PER_PAGE) {
		errno = EMFILE;
		return -1;
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return -1;
	ch->events = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (ch->events < 0) {
		free(ch);
		return -1;
	}
	ch->sock = sock;
	ch->token = token;
	pthread_mutex_init(&ch->cmd_lock, NULL);
	ch->refs = 1;

	pthread_mutex_lock(&table_lock);
	page = atomic_load_explicit(&pages[fd / CHAN_PER_PAGE],
				    memory_order_relaxed);
	if (!page) {
		page = calloc(CHAN_PER_PAGE, sizeof(*page));
		if (!page) {
			pthread_mutex_unlock(&table_lock);
			pthread_mutex_destroy(&ch->cmd_lock);
			real_close(ch->events);
			free(ch);
			return -1;
		}
		atomic_store_explicit(&pages[fd / CHAN_PER_PAGE], page,
				      memory_order_release);
	}
	atomic_store_explicit(&page[fd % CHAN_PER_PAGE], ch,
			      memory_order_relaxed);
	pthread_mutex_unlock(&table_lock);
	return 0;
}

/* Takes a reference on fd's channel, or fails with EBADF. */
static struct chan *chan_get(int fd)
{
	struct chan *ch;

	pthread_mutex_lock(&table_lock);
	ch = chan_at(fd);
	if (ch)
		ch->refs++;
	pthread_mutex_unlock(&table_lock);
	if (!ch)
		errno = EBADF;
	return ch;
}

/* The last reference closes the connection: ringnicd drops the ids. */
static void chan_put(struct chan *ch)
{
	bool last;

	pthread_mutex_lock(&table_lock);
	last = !--ch->refs;
	pthread_mutex_unlock(&table_lock);
	if (!last)
		return;
	real_close(ch->sock);
	real_close(ch->events);
	pthread_mutex_destroy(&ch->cmd_lock);
	free(ch);
}

static struct chan *chan_remove(int fd)
{
	struct chan *_Atomic *slot = chan_slot(fd);
	struct chan *ch = NULL;

	pthread_mutex_lock(&table_lock);
	if (slot)
		ch = atomic_exchange_explicit(slot, NULL,
					      memory_order_relaxed);
	pthread_mutex_unlock(&table_lock);
	return ch;
}

static int chan_token(int fd, __u64 *token)
{
	struct chan *ch;

	pthread_mutex_lock(&table_lock);
	ch = chan_at(fd);
	if (ch)
		*token = ch->token;
	pthread_mutex_unlock(&table_lock);
	return ch ? 0 : -1;
}

/*
 * Connects to dir/file and says hello, handing over *app's peer; returns
 * the connection and fills *app (the end the application is to hold) and
 * *reply, or -1.
 */
static int hello(const char *dir, const char *file, int *app,
		 struct rn_cm_hello_reply *reply)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct rn_cm_hello msg = { .magic = RN_CM_HELLO_MAGIC };
	struct iovec iov = { .iov_base = &msg, .iov_len = sizeof(msg) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl = { { 0 } };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = ctl.buf,
		.msg_controllen = sizeof(ctl.buf),
	};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	int sock, pair[2];
	ssize_t n;

	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
			     dir, file) >= sizeof(addr.sun_path))
		return -1;
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -1;
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)))
		goto err_sock;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair))
		goto err_sock;

	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &pair[1], sizeof(int));
	n = sendmsg(sock, &mh, MSG_NOSIGNAL);
	real_close(pair[1]);
	if (n != sizeof(msg))
		goto err_pair;
	do
		n = recv(sock, reply, sizeof(*reply), 0);
	while (n < 0 && errno == EINTR);
	if (n != sizeof(*reply))
		goto err_pair;
	*app = pair[0];
	return sock;

err_pair:
	real_close(pair[0]);
err_sock:
	real_close(sock);
	return -1;
}

struct pick {
	int sock, app;
	__u64 token;
};

/*
 * Tries one device; returns true once one is in ringnicd's network
 * namespace, which ends the search.  Until then the first that answered
 * is kept.
 */
static bool try_device(const char *dir, const char *file, __u64 netns,
		       struct pick *pick)
{
	struct rn_cm_hello_reply reply;
	bool match;
	int sock, app;

	sock = hello(dir, file, &app, &reply);
	if (sock < 0)
		return false;
	match = reply.netns_ino == netns;
	if (reply.status || (pick->sock >= 0 && !match)) {
		real_close(app);
		real_close(sock);
		return false;
	}
	if (pick->sock >= 0) {
		real_close(pick->app);
		real_close(pick->sock);
	}
	pick->sock = sock;
	pick->app = app;
	pick->token = reply.token;
	return match;
}

/*
 * In the runtime dir, the first NAME.cm in name order whose ringnicd
 * shares our network namespace, else the first that answers;
 * RINGNIC_CM_DEVICE=NAME tries NAME.cm alone.
 */
static void choose_device(struct pick *pick)
{
	const char *only = secure_getenv("RINGNIC_CM_DEVICE");
	char dir[PATH_MAX], file[NAME_MAX + 1];
	struct stat ns;
	__u64 netns = 0;
	char **names;
	int i, n;

	if (!rn_shim_runtime_dir(dir, sizeof(dir)))
		return;
	if (!stat("/proc/self/ns/net", &ns))
		netns = ns.st_ino;

	if (only) {
		if ((size_t)snprintf(file, sizeof(file), "%s.cm", only) <
		    sizeof(file))
			try_device(dir, file, netns, pick);
		return;
	}
	n = rn_shim_scan(dir, ".cm", &names);
	if (n < 0)
		return;
	for (i = 0; i < n; i++)
		if (try_device(dir, names[i], netns, pick))
			break;
	while (n--)
		free(names[n]);
	free(names);
}

int rn_shim_cm_open(int flags)
{
	struct pick pick = { .sock = -1, .app = -1 };
	int cancel;

	/* connect and recv are cancellation points: no leak of sockets. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	choose_device(&pick);
	if (pick.sock < 0) {
		errno = ENODEV;
		goto out;
	}
	if (((flags & O_NONBLOCK) && fcntl(pick.app, F_SETFL, O_NONBLOCK)) ||
	    (!(flags & O_CLOEXEC) && fcntl(pick.app, F_SETFD, 0)) ||
	    chan_add(pick.app, pick.sock, pick.token)) {
		real_close(pick.app);
		real_close(pick.sock);
		pick.app = -1;
	}
out:
	pthread_setcancelstate(cancel, NULL);
	return pick.app;
}

/*
 * One command: the message out, the reply in, its payload straight into
 * the caller's response buffer (as the kernel's copy_to_user, a bad
 * pointer is EFAULT).
 */
static int command_on(struct chan *ch, const void *msg, size_t size,
		      void *resp, size_t out)
{
	struct rn_cm_reply reply;
	struct iovec iov[2] = {
		{ .iov_base = &reply, .iov_len = sizeof(reply) },
		{ .iov_base = resp, .iov_len = resp ? out : 0 },
	};
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	int cancel, ret = -1;
	ssize_t n;

	/* A cancellation here would keep cmd_lock. */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	pthread_mutex_lock(&ch->cmd_lock);
	do
		n = send(ch->sock, msg, size, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n >= 0) {
		do
			n = recvmsg(ch->sock, &mh, 0);
		while (n < 0 && errno == EINTR);
	}
	/* EOF or a reset: ringnicd exited or dropped the channel. */
	if (n < 0) {
		if (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)
			errno = ENODEV;
	} else if (n == 0) {
		errno = ENODEV;
	} else if ((size_t)n < sizeof(reply)) {
		errno = EPROTO;
	} else if (reply.status) {
		errno = reply.status;
	} else {
		ret = 0;
	}
	pthread_mutex_unlock(&ch->cmd_lock);
	pthread_setcancelstate(cancel, NULL);
	return ret;
}

static int command(int fd, const void *msg, size_t size, void *resp,
		   size_t out)
{
	struct chan *ch = chan_get(fd);
	int ret;

	if (!ch)
		return -1;
	ret = command_on(ch, msg, size, resp, out);
	chan_put(ch);
	return ret;
}

static void chan_put_cleanup(void *ch)
{
	chan_put(ch);
}

/*
 * Waits for ringnicd's byte, then asks for the event.  A byte whose event
 * was discarded meanwhile gets EAGAIN: wait again.  The channel is held
 * throughout, as the kernel holds the file during the write: a close of
 * fd in another thread meanwhile leaves this one waiting (until the
 * process ends, unless an event comes), never EBADF.  rping's event
 * thread counts on it.
 */
static int get_event(int fd, const void *msg, size_t size, void *resp,
		     size_t out)
{
	struct chan *ch = chan_get(fd);
	char bytes[64];
	int ret = -1, err;
	ssize_t n;

	if (!ch)
		return -1;
	pthread_cleanup_push(chan_put_cleanup, ch);
	for (;;) {
		n = read(ch->events, bytes, sizeof(bytes));
		if (n < 0)
			break;
		if (n == 0) { /* ringnicd closed the pair: it is gone */
			errno = ENODEV;
			break;
		}
		if (!command_on(ch, msg, size, resp, out)) {
			ret = 0;
			break;
		}
		if (errno != EAGAIN || (fcntl(ch->events, F_GETFL) & O_NONBLOCK))
			break;
	}
	err = errno;
	pthread_cleanup_pop(1);
	errno = err;
	return ret;
}

/* Where the command's response pointer is, or -1 if it has none. */
static int response_offset(__u32 cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return offsetof(struct rdma_ucm_create_id, response);
	case RDMA_USER_CM_CMD_DESTROY_ID:
	case RDMA_USER_CM_CMD_LEAVE_MCAST:
		return offsetof(struct rdma_ucm_destroy_id, response);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
	case RDMA_USER_CM_CMD_QUERY:
		return offsetof(struct rdma_ucm_query, response);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return offsetof(struct rdma_ucm_init_qp_attr, response);
	case RDMA_USER_CM_CMD_GET_EVENT:
		return offsetof(struct rdma_ucm_get_event, response);
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST:
		return offsetof(struct rdma_ucm_join_ip_mcast, response);
	case RDMA_USER_CM_CMD_JOIN_MCAST:
		return offsetof(struct rdma_ucm_join_mcast, response);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return offsetof(struct rdma_ucm_migrate_id, response);
	default:
		return -1;
	}
}

/*
 * The message is built in a copy of the command, so that what ringnicd
 * checks is what we act on.  Returns its size, or -1 with errno.
 */
static ssize_t build(const void *buf, size_t len, char *msg, void **resp)
{
	struct rdma_ucm_cmd_hdr hdr;
	struct rdma_ucm_set_option opt;
	struct rdma_ucm_migrate_id mig;
	char *body = msg + sizeof(hdr);
	size_t size;
	__u64 ptr, token;
	int off;

	if (len < sizeof(hdr))
		goto inval;
	memcpy(&hdr, buf, sizeof(hdr));
	size = sizeof(hdr) + hdr.in;
	if (size > len || size > RN_CM_MSG_MAX)
		goto inval;
	memcpy(msg, buf, size);

	switch (hdr.cmd) {
	case RDMA_USER_CM_CMD_SET_OPTION:
		if (hdr.in < sizeof(opt))
			goto inval;
		memcpy(&opt, body, sizeof(opt));
		if (opt.optlen > RN_CM_OPTVAL_MAX ||
		    size + opt.optlen > RN_CM_MSG_MAX)
			goto inval;
		if (opt.optlen)
			memcpy(msg + size, (void *)(uintptr_t)opt.optval,
			       opt.optlen);
		size += opt.optlen;
		break;
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		if (hdr.in < sizeof(mig))
			goto inval;
		memcpy(&mig, body, sizeof(mig));
		if (chan_token(mig.fd, &token) ||
		    size + sizeof(token) > RN_CM_MSG_MAX)
			goto inval;
		memcpy(msg + size, &token, sizeof(token));
		size += sizeof(token);
		break;
	}

	*resp = NULL;
	off = response_offset(hdr.cmd);
	if (off >= 0 && hdr.out) {
		if (hdr.in < off + sizeof(ptr))
			goto inval;
		memcpy(&ptr, body + off, sizeof(ptr));
		*resp = (void *)(uintptr_t)ptr;
	}
	return size;

inval:
	errno = EINVAL;
	return -1;
}

static ssize_t cm_write(int fd, const void *buf, size_t len)
{
	struct rdma_ucm_cmd_hdr hdr;
	char msg[RN_CM_MSG_MAX];
	ssize_t size;
	void *resp;
	int ret;

	size = build(buf, len, msg, &resp);
	if (size < 0)
		return -1;
	memcpy(&hdr, msg, sizeof(hdr));
	if (hdr.cmd == RDMA_USER_CM_CMD_GET_EVENT)
		ret = get_event(fd, msg, size, resp, hdr.out);
	else
		ret = command(fd, msg, size, resp, hdr.out);
	return ret ? -1 : (ssize_t)len;
}

bool rn_shim_cm_fd(int fd)
{
	return chan_at(fd);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	static void *_Atomic next;

	if (chan_at(fd))
		return cm_write(fd, buf, len);
	return ((write_fn)rn_shim_next(&next, "write"))(fd, buf, len);
}

int close(int fd)
{
	struct chan *ch;
	int cancel, ret, err;

	if (!chan_at(fd))
		return real_close(fd);
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	ch = chan_remove(fd);
	ret = real_close(fd);
	err = errno;
	if (ch)
		chan_put(ch);
	errno = err;
	pthread_setcancelstate(cancel, NULL);
	return ret;
}
