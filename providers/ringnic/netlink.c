// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMA netlink for the shim: iproute2's rdma tool, and any program that
 * asks about RDMA devices over a NETLINK_RDMA socket, gets the answers of
 * the ringnicd devices of the runtime dir, as it would get the kernel's.
 *
 * The program's socket is one end of a SOCK_SEQPACKET pair; the other end
 * is the pump's: one thread of the shim per process, started with the
 * first socket, with every signal blocked.  It takes each request the
 * program sends (a datagram may hold several, as the kernel reads them),
 * passes it to the devices' ringnicd over their control sockets (the
 * NETLINK connection of kernel-abi/ringnic-ctl.h, one per device for the
 * whole process) and writes their answers back as datagrams, as the kernel
 * writes its skbs: a dump goes to every device and ends with one
 * NLMSG_DONE; a request naming a device (RDMA_NLDEV_ATTR_DEV_INDEX) goes
 * to that device alone.  So the program's socket is a real one (poll,
 * O_NONBLOCK, dup, close work), and only what would tell it apart from a
 * netlink socket is interposed: bind, getsockname, setsockopt at
 * SOL_NETLINK, and the sender's address of recvmsg and recvfrom.
 *
 * Devices are numbered from 1 in the order the process first meets them:
 * those of the runtime dir in the order of their names at the first
 * request, then each new one after them.  A device keeps its number while
 * the process lives, through a restart of its ringnicd too, so that the
 * index a dump gave names the same device in the next request.  A ringnicd
 * that does not answer within DEVICE_TIMEOUT_S is left as gone.
 *
 * A child of fork() shares the sockets it inherited with its parent, whose
 * pump answers them while the parent lives; a socket the child makes gets
 * a pump of the child's.
 *
 * libibverbs lists devices over RDMA netlink when it can, and must not:
 * it finds ringnic devices in the tree ringnicd publishes.  So a process
 * that has libibverbs loaded is refused the socket, as before.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "kernel-abi/ringnic-ctl.h"
#include "shim.h"

#define MAX_DEVICES 64
#define DEVICE_TIMEOUT_S 5

/* One socket of the program. */
struct nl_socket {
	/* The program's end: its descriptors, dup'd or not, share these. */
	dev_t dev;
	ino_t ino;
	int fd; /* the pump's end; -1 in a child of fork() */
	/* The port ID: 0 until bound; bind writes it under lock. */
	_Atomic uint32_t portid;
};

/*
 * The process's sockets and its pump, under lock: the program's threads
 * look sockets up (rarely: only once a socket was made) and add them; the
 * pump removes each when the program has closed it.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct nl_socket **sockets;
static int nsockets;
static int epoll_fd = -1; /* the pump's, its ends; -1: no pump yet */
static char runtime_dir[PATH_MAX];
/* Whether any socket was made: until then nothing is looked up. */
static atomic_bool any_socket;

/* ---- the pump: one thread for the process's sockets ------------------ */

/* The devices met, by number - 1; the pump's alone. */
static struct device {
	char *name; /* its control socket's file: NAME.sock */
	int sock; /* its NETLINK connection; -1: none now */
} devices[MAX_DEVICES];
static int ndevices;
/* A datagram of a device's answer: netlink messages, 4-byte aligned. */
static char answer[RN_NETLINK_DGRAM_MAX] __attribute__((aligned(8)));

/* Connects to the device and makes the connection a NETLINK one. */
static int connect_device(const char *file, uint32_t index)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct rn_ctl_netlink_req req = {
		.hdr = { RN_CTL_NETLINK, sizeof(req) },
		.dev_index = index,
	};
	struct timeval timeout = { .tv_sec = DEVICE_TIMEOUT_S };
	struct rn_ctl_resp_hdr resp;
	int sock;

	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
			     runtime_dir, file) >= sizeof(addr.sun_path))
		return -1;
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -1;
	if (setsockopt(sock, SOL_SOCKET, SO_RCVTIMEO, &timeout,
		       sizeof(timeout)) ||
	    setsockopt(sock, SOL_SOCKET, SO_SNDTIMEO, &timeout,
		       sizeof(timeout)) ||
	    connect(sock, (struct sockaddr *)&addr, sizeof(addr)) ||
	    send(sock, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req) ||
	    recv(sock, &resp, sizeof(resp), 0) != sizeof(resp) || resp.status) {
		close(sock);
		return -1;
	}
	return sock;
}

static void disconnect(struct device *d)
{
	if (d->sock >= 0)
		close(d->sock);
	d->sock = -1;
}

/*
 * Does ringnicd publish the device of control socket 'file' (NAME.sock)?
 * One attached to ringnic.ko (kernel mode) publishes nothing: the kernel
 * answers RDMA netlink for it, and its socket serves captures only.
 */
static bool published(const char *file)
{
	char path[PATH_MAX];
	int len = (int)(strlen(file) - strlen(".sock"));

	return (size_t)snprintf(path, sizeof(path), "%s/sys/class/infiniband/%.*s",
				runtime_dir, len, file) < sizeof(path) &&
	       !access(path, F_OK);
}

/*
 * The devices of the runtime dir now: a new one gets the next number, one
 * met before its old number (connected again if it was gone), and one
 * whose socket is no longer there is gone.
 */
static void refresh_devices(void)
{
	bool present[MAX_DEVICES] = { false };
	char **names;
	int i, j, n;

	n = rn_shim_scan(runtime_dir, ".sock", &names);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		if (!published(names[i])) {
			free(names[i]);
			continue;
		}
		for (j = 0; j < ndevices; j++)
			if (!strcmp(devices[j].name, names[i]))
				break;
		if (j == ndevices && ndevices < MAX_DEVICES) {
			devices[j] = (struct device){ .name = names[i],
						      .sock = -1 };
			names[i] = NULL;
			ndevices++;
		}
		if (j < ndevices) {
			present[j] = true;
			if (devices[j].sock < 0)
				devices[j].sock =
					connect_device(devices[j].name, j + 1);
		}
		free(names[i]);
	}
	free(names);
	for (j = 0; j < ndevices; j++)
		if (!present[j])
			disconnect(&devices[j]);
}

/* The request's RDMA_NLDEV_ATTR_DEV_INDEX, or 0. */
static uint32_t dev_index_of(const struct nlmsghdr *nlh)
{
	const char *at = (const char *)nlh + NLMSG_HDRLEN;
	const char *end = (const char *)nlh + nlh->nlmsg_len;
	const struct nlattr *a;
	uint32_t index;

	while (end - at >= NLA_HDRLEN) {
		a = (const void *)at;
		if (a->nla_len < NLA_HDRLEN || a->nla_len > end - at)
			break;
		if ((a->nla_type & NLA_TYPE_MASK) == RDMA_NLDEV_ATTR_DEV_INDEX &&
		    a->nla_len >= NLA_HDRLEN + sizeof(index)) {
			memcpy(&index, at + NLA_HDRLEN, sizeof(index));
			return index;
		}
		at += NLA_ALIGN(a->nla_len);
	}
	return 0;
}

/* Sends the program one message of no payload but an int: DONE or ERROR. */
static void send_status(struct nl_socket *s, const struct nlmsghdr *req,
			__u16 type, int error)
{
	struct {
		struct nlmsghdr hdr;
		struct nlmsgerr err; /* DONE uses only err.error */
	} msg = {
		.hdr = {
			.nlmsg_type = type,
			.nlmsg_flags = type == NLMSG_DONE ? NLM_F_MULTI :
							    NLM_F_CAPPED,
			.nlmsg_seq = req->nlmsg_seq,
			.nlmsg_pid = s->portid,
		},
		.err = { .error = error, .msg = *req },
	};

	msg.hdr.nlmsg_len = NLMSG_LENGTH(type == NLMSG_DONE ? sizeof(int) :
					 sizeof(msg.err));
	send(s->fd, &msg, msg.hdr.nlmsg_len, MSG_NOSIGNAL);
}

/*
 * One device's answer to req, datagram by datagram, to the program; with
 * dump, its NLMSG_DONE is held back and its status returned.  An error
 * of the connection answers as a device that is gone: ENODEV.
 */
static int relay(struct nl_socket *s, struct device *d,
		 const struct nlmsghdr *req, bool dump)
{
	struct rn_netlink_hdr hdr;
	int status = 0;
	ssize_t n;

	if (d->sock < 0 ||
	    send(d->sock, req, req->nlmsg_len, MSG_NOSIGNAL) != req->nlmsg_len)
		goto gone;
	do {
		char *at;
		ssize_t left;

		n = recv(d->sock, answer, sizeof(answer), 0);
		if (n < (ssize_t)sizeof(hdr))
			goto gone;
		memcpy(&hdr, answer, sizeof(hdr));
		/*
		 * Each message in a datagram of its own, with the socket's
		 * port ID, as programs that read with 4 KiB buffers take
		 * them; a dump's DONE held back.
		 */
		at = answer + sizeof(hdr);
		for (left = n - sizeof(hdr); left >= NLMSG_HDRLEN;) {
			struct nlmsghdr *m = (void *)at;
			size_t len = NLMSG_ALIGN(m->nlmsg_len);

			if (m->nlmsg_len < NLMSG_HDRLEN || len > (size_t)left)
				goto gone;
			m->nlmsg_pid = s->portid;
			if (dump && m->nlmsg_type == NLMSG_DONE &&
			    m->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
				memcpy(&status, NLMSG_DATA(m), sizeof(int));
			else
				send(s->fd, m, m->nlmsg_len, MSG_NOSIGNAL);
			at += len;
			left -= len;
		}
	} while (!hdr.last);
	return status;

gone:
	disconnect(d);
	if (!dump)
		send_status(s, req, NLMSG_ERROR, -ENODEV);
	return dump ? -ENODEV : 0;
}

static void request(struct nl_socket *s, const struct nlmsghdr *req)
{
	/* Either bit asks for a dump, as the kernel reads it. */
	bool dump = req->nlmsg_flags & NLM_F_DUMP;
	uint32_t index = dev_index_of(req);
	int i, status = 0, ret;

	refresh_devices();
	if (index) {
		/* The kernel's answer for an index it has no device for. */
		if (index > (uint32_t)ndevices || devices[index - 1].sock < 0)
			send_status(s, req, NLMSG_ERROR, -EINVAL);
		else
			relay(s, &devices[index - 1], req, false);
		return;
	}
	if (!dump) {
		/* Not about one device: any device answers it. */
		for (i = 0; i < ndevices; i++)
			if (devices[i].sock >= 0)
				break;
		if (i == ndevices)
			send_status(s, req, NLMSG_ERROR, -ENODEV);
		else
			relay(s, &devices[i], req, false);
		return;
	}
	for (i = 0; i < ndevices; i++) {
		if (devices[i].sock < 0)
			continue;
		ret = relay(s, &devices[i], req, true);
		if (ret && ret != -ENODEV && !status)
			status = ret;
	}
	send_status(s, req, NLMSG_DONE, status);
}

/* The program has closed every descriptor of s. */
static void drop(struct nl_socket *s)
{
	int i;

	pthread_mutex_lock(&lock);
	for (i = 0; i < nsockets; i++)
		if (sockets[i] == s)
			sockets[i] = sockets[--nsockets];
	epoll_ctl(epoll_fd, EPOLL_CTL_DEL, s->fd, NULL);
	pthread_mutex_unlock(&lock);
	close(s->fd);
	free(s);
}

/* What the program sent on s: each of its messages, as the kernel reads. */
static void serve(struct nl_socket *s)
{
	char buf[RN_CTL_MSG_MAX] __attribute__((aligned(8)));
	const struct nlmsghdr *req = (const void *)buf;
	ssize_t n, left;

	n = recv(s->fd, buf, sizeof(buf), MSG_TRUNC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		drop(s);
		return;
	}
	if ((size_t)n > sizeof(buf)) {
		if (req->nlmsg_len >= NLMSG_HDRLEN)
			send_status(s, req, NLMSG_ERROR, -EMSGSIZE);
		return;
	}
	for (left = n; left >= NLMSG_HDRLEN && req->nlmsg_len >= NLMSG_HDRLEN &&
		       req->nlmsg_len <= (size_t)left;) {
		request(s, req);
		if (NLMSG_ALIGN(req->nlmsg_len) >= (size_t)left)
			break;
		left -= NLMSG_ALIGN(req->nlmsg_len);
		req = (const void *)((const char *)req +
				     NLMSG_ALIGN(req->nlmsg_len));
	}
}

static void *pump_run(void *arg)
{
	int efd = (int)(intptr_t)arg;
	struct epoll_event ready[16];
	int i, n;

	for (;;) {
		n = epoll_wait(efd, ready, 16, -1);
		for (i = 0; i < n; i++)
			serve(ready[i].data.ptr);
	}
	return NULL;
}

/*
 * In a child of fork(): the pump, its epoll instance and its connections
 * are the parent's; the sockets stay the parent's to answer.
 */
static void after_fork_in_child(void)
{
	int i;

	if (epoll_fd >= 0)
		close(epoll_fd);
	epoll_fd = -1;
	for (i = 0; i < nsockets; i++) {
		if (sockets[i]->fd >= 0)
			close(sockets[i]->fd);
		sockets[i]->fd = -1;
	}
	for (i = 0; i < ndevices; i++) {
		disconnect(&devices[i]);
		free(devices[i].name);
	}
	ndevices = 0;
	pthread_mutex_unlock(&lock);
}

static void before_fork(void)
{
	pthread_mutex_lock(&lock);
}

static void after_fork_in_parent(void)
{
	pthread_mutex_unlock(&lock);
}

/* Under lock: the pump, started if it was not; 0 or an errno. */
static int start_pump(void)
{
	static bool fork_handled;
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t thread;
	int efd, ret;

	if (epoll_fd >= 0)
		return 0;
	if (!fork_handled) {
		ret = pthread_atfork(before_fork, after_fork_in_parent,
				     after_fork_in_child);
		if (ret)
			return ret;
		fork_handled = true;
	}
	efd = epoll_create1(EPOLL_CLOEXEC);
	if (efd < 0)
		return errno;
	/* The program's signals are for its own threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	ret = pthread_create(&thread, &attr, pump_run, (void *)(intptr_t)efd);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (ret) {
		close(efd);
		return ret;
	}
	epoll_fd = efd;
	return 0;
}

/* ---- the program's side ----------------------------------------------- */

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*getsockname_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *,
			       socklen_t *);

/*
 * Whether fd is a socket of ours; its port ID in *portid.  With bind_to
 * (not 0), binds it there first unless it is bound.
 */
static bool lookup(int fd, uint32_t bind_to, uint32_t *portid)
{
	struct nl_socket *s = NULL;
	struct stat st;
	int i;

	if (!atomic_load_explicit(&any_socket, memory_order_relaxed) ||
	    fstat(fd, &st) || !S_ISSOCK(st.st_mode))
		return false;
	pthread_mutex_lock(&lock);
	for (i = 0; i < nsockets && !s; i++)
		if (sockets[i]->dev == st.st_dev && sockets[i]->ino == st.st_ino)
			s = sockets[i];
	if (s) {
		if (bind_to && !s->portid)
			s->portid = bind_to;
		*portid = s->portid;
	}
	pthread_mutex_unlock(&lock);
	return s;
}

/*
 * The port ID a bind to 0 takes, as the kernel's autobind: the process ID
 * for the first socket, then numbers no process has.
 */
static uint32_t autobind_portid(void)
{
	static atomic_uint taken;
	unsigned int n = atomic_fetch_add(&taken, 1);

	return n ? (uint32_t)-4096 - n : (uint32_t)getpid();
}

/* Under lock: s joins the sockets the pump answers; 0 or an errno. */
static int add_socket(struct nl_socket *s)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = s };
	struct nl_socket **grown;
	int ret = start_pump();

	if (ret)
		return ret;
	grown = realloc(sockets, (nsockets + 1) * sizeof(*grown));
	if (!grown)
		return ENOMEM;
	sockets = grown;
	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, s->fd, &ev))
		return errno;
	sockets[nsockets++] = s;
	atomic_store(&any_socket, true);
	return 0;
}

int rn_shim_netlink_socket(int type)
{
	void *ibverbs = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	int kind = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK);
	struct nl_socket *s;
	int pair[2], ret;
	struct stat st;

	/* libibverbs must find the published tree (above). */
	if (ibverbs) {
		dlclose(ibverbs);
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if (kind != SOCK_RAW && kind != SOCK_DGRAM) {
		errno = ESOCKTNOSUPPORT;
		return -1;
	}
	pthread_mutex_lock(&lock);
	if (!*runtime_dir &&
	    !rn_shim_runtime_dir(runtime_dir, sizeof(runtime_dir))) {
		/* Not under ringnic-run: no devices to ask. */
		pthread_mutex_unlock(&lock);
		errno = EPROTONOSUPPORT;
		return -1;
	}
	pthread_mutex_unlock(&lock);

	s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair)) {
		ret = errno;
		free(s);
		errno = ret;
		return -1;
	}
	s->fd = pair[1];
	if (((type & SOCK_NONBLOCK) && fcntl(pair[0], F_SETFL, O_NONBLOCK)) ||
	    (!(type & SOCK_CLOEXEC) && fcntl(pair[0], F_SETFD, 0)) ||
	    fstat(pair[0], &st)) {
		ret = errno;
		goto err;
	}
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	pthread_mutex_lock(&lock);
	ret = add_socket(s);
	pthread_mutex_unlock(&lock);
	if (ret)
		goto err;
	return pair[0];

err:
	close(pair[0]);
	close(pair[1]);
	free(s);
	errno = ret;
	return -1;
}

/* The kernel's address, as netlink's recvmsg gives it. */
static void kernel_address(void *name, socklen_t *len)
{
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };

	if (!name || !len)
		return;
	memcpy(name, &nl, *len < sizeof(nl) ? *len : sizeof(nl));
	*len = sizeof(nl);
}

int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	static void *_Atomic next;
	struct sockaddr_nl nl;
	uint32_t portid;

	if (lookup(fd, 0, &portid)) {
		if (len < sizeof(nl) || addr->sa_family != AF_NETLINK) {
			errno = EINVAL;
			return -1;
		}
		memcpy(&nl, addr, sizeof(nl));
		if (nl.nl_groups) { /* no notifications are offered */
			errno = EOPNOTSUPP;
			return -1;
		}
		lookup(fd, nl.nl_pid ? nl.nl_pid : autobind_portid(), &portid);
		if (nl.nl_pid && portid != nl.nl_pid) {
			errno = EINVAL; /* bound already, elsewhere */
			return -1;
		}
		return 0;
	}
	return ((bind_fn)rn_shim_next(&next, "bind"))(fd, addr, len);
}

int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	static void *_Atomic next;
	struct sockaddr_nl nl = { .nl_family = AF_NETLINK };
	uint32_t portid;

	if (lookup(fd, 0, &portid)) {
		nl.nl_pid = portid;
		memcpy(addr, &nl, *len < sizeof(nl) ? *len : sizeof(nl));
		*len = sizeof(nl);
		return 0;
	}
	return ((getsockname_fn)rn_shim_next(&next, "getsockname"))(fd, addr,
								    len);
}

int setsockopt(int fd, int level, int name, const void *value, socklen_t len)
{
	static void *_Atomic next;
	uint32_t portid;

	if (level == SOL_NETLINK && lookup(fd, 0, &portid)) {
		/* No notifications are offered. */
		if (name == NETLINK_ADD_MEMBERSHIP) {
			errno = EOPNOTSUPP;
			return -1;
		}
		/* Extended and capped acks: ringnicd's are capped already. */
		return 0;
	}
	return ((setsockopt_fn)rn_shim_next(&next, "setsockopt"))(fd, level,
								  name, value,
								  len);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	static void *_Atomic next;
	socklen_t room = msg->msg_namelen;
	uint32_t portid;
	ssize_t n;

	n = ((recvmsg_fn)rn_shim_next(&next, "recvmsg"))(fd, msg, flags);
	/* A pair's datagrams come from no address: namelen now 0. */
	if (n >= 0 && msg->msg_name && lookup(fd, 0, &portid)) {
		msg->msg_namelen = room;
		kernel_address(msg->msg_name, &msg->msg_namelen);
	}
	return n;
}

ssize_t recvfrom(int fd, void *buf, size_t size, int flags,
		 struct sockaddr *from, socklen_t *len)
{
	static void *_Atomic next;
	socklen_t room = len ? *len : 0;
	uint32_t portid;
	ssize_t n;

	n = ((recvfrom_fn)rn_shim_next(&next, "recvfrom"))(fd, buf, size, flags,
							  from, len);
	if (n >= 0 && from && len && lookup(fd, 0, &portid)) {
		*len = room;
		kernel_address(from, len);
	}
	return n;
}
