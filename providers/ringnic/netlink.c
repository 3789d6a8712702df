// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMA netlink for the shim: iproute2's rdma tool, and any program that
 * asks about RDMA devices over a NETLINK_RDMA socket, gets the answers of
 * the ringnicd devices of the runtime dir, as it would get the kernel's.
 *
 * The program's socket is one end of a SOCK_SEQPACKET pair; a thread of
 * the shim holds the other end (the pump).  It takes each request the
 * program sends, passes it to the devices' ringnicd over their control
 * sockets (the NETLINK connection of kernel-abi/ringnic-ctl.h) and writes
 * their answers back as datagrams, as the kernel writes its skbs: a dump
 * goes to every device and ends with one NLMSG_DONE; a request naming a
 * device (RDMA_NLDEV_ATTR_DEV_INDEX) goes to that device alone.  Devices
 * are numbered from 1 in the order of their names.  So the program's
 * socket is a real one (poll, O_NONBLOCK, close work), and only what would
 * tell it apart from a netlink socket is interposed: bind, getsockname,
 * setsockopt at SOL_NETLINK, and the sender's address of recvmsg and
 * recvfrom.
 *
 * A child of fork() shares the socket, and the parent's thread answers
 * what it sends; once the parent has exited, nothing does.
 *
 * libibverbs lists devices over RDMA netlink when it can, and must not:
 * it finds ringnic devices in the tree ringnicd publishes.  So a process
 * that has libibverbs loaded is refused the socket, as before.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include "kernel-abi/ringnic-ctl.h"
#include "shim.h"

#define MAX_DEVICES 64

/* A socket's thread and what it holds; the thread frees it. */
struct pump {
	int fd; /* our end of the pair */
	/* The socket's port ID: 0 until bound; bind writes it under
	 * sockets_lock, the thread reads it. */
	_Atomic uint32_t portid;
	char *dir; /* the runtime dir */
	int devices[MAX_DEVICES]; /* NETLINK connections; -1: gone */
	int ndevices;
	bool listed;
	/* A datagram of a device's answer: netlink messages, 4-byte aligned. */
	char answer[RN_NETLINK_DGRAM_MAX] __attribute__((aligned(8)));
};

/* One socket of the program. */
struct nl_socket {
	int fd; /* the program's end */
	ino_t ino; /* of fd: a descriptor reused for something else differs */
	/* Its pump, alive while the socket is open (then ino matches). */
	struct pump *pump;
};

/* The program's sockets, found by descriptor under a lock: few and rare. */
static pthread_mutex_t sockets_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nl_socket *sockets;
static int nsockets;
/* Whether any was made: until then nothing is looked up. */
static atomic_bool any_socket;

/* The socket that fd is, or NULL; under sockets_lock. */
static struct nl_socket *find(int fd)
{
	struct stat st;
	int i;

	for (i = 0; i < nsockets; i++)
		if (sockets[i].fd == fd && sockets[i].pump)
			break;
	if (i == nsockets || fstat(fd, &st) || st.st_ino != sockets[i].ino)
		return NULL;
	return &sockets[i];
}

/*
 * Whether fd is a socket of ours; its port ID in *portid.  With bind_to
 * (not 0), binds it there first unless it is bound.
 */
static bool lookup(int fd, uint32_t bind_to, uint32_t *portid)
{
	struct nl_socket *s;

	if (!atomic_load_explicit(&any_socket, memory_order_relaxed))
		return false;
	pthread_mutex_lock(&sockets_lock);
	s = find(fd);
	if (s) {
		if (bind_to && !s->pump->portid)
			s->pump->portid = bind_to;
		*portid = s->pump->portid;
	}
	pthread_mutex_unlock(&sockets_lock);
	return s;
}

/* The thread of p is ending: its socket is closed everywhere. */
static void forget(struct pump *p)
{
	int i;

	pthread_mutex_lock(&sockets_lock);
	for (i = 0; i < nsockets; i++)
		if (sockets[i].pump == p)
			sockets[i] = (struct nl_socket){ .fd = -1 };
	pthread_mutex_unlock(&sockets_lock);
}

static int remember(int fd, struct pump *p)
{
	struct nl_socket *grown;
	struct stat st;
	int i, ret = 0;

	if (fstat(fd, &st))
		return errno;
	pthread_mutex_lock(&sockets_lock);
	for (i = 0; i < nsockets; i++)
		if (sockets[i].fd == fd || sockets[i].fd < 0)
			break;
	if (i == nsockets) {
		grown = realloc(sockets, (nsockets + 1) * sizeof(*grown));
		if (!grown) {
			ret = ENOMEM;
			goto out;
		}
		sockets = grown;
		nsockets++;
	}
	sockets[i] = (struct nl_socket){ .fd = fd, .ino = st.st_ino, .pump = p };
	atomic_store(&any_socket, true);
out:
	pthread_mutex_unlock(&sockets_lock);
	return ret;
}

/* ---- the pump: one thread per socket ---------------------------------- */

static int is_ctl_socket(const struct dirent *d)
{
	size_t len = strlen(d->d_name);

	return len > 5 && !strcmp(d->d_name + len - 5, ".sock");
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

/* Connects to the device and makes the connection a NETLINK one. */
static int connect_device(const char *dir, const char *file, uint32_t index)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct rn_ctl_netlink_req req = {
		.hdr = { RN_CTL_NETLINK, sizeof(req) },
		.dev_index = index,
	};
	struct rn_ctl_resp_hdr resp;
	int sock;

	if ((size_t)snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/%s",
			     dir, file) >= sizeof(addr.sun_path))
		return -1;
	sock = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (sock < 0)
		return -1;
	if (connect(sock, (struct sockaddr *)&addr, sizeof(addr)) ||
	    send(sock, &req, sizeof(req), MSG_NOSIGNAL) != sizeof(req) ||
	    recv(sock, &resp, sizeof(resp), 0) != sizeof(resp) || resp.status) {
		close(sock);
		return -1;
	}
	return sock;
}

/*
 * The devices, once per socket, as the kernel's list is fixed for one
 * dump: those of the runtime dir whose ringnicd answers, numbered from 1
 * in the order of their names.
 */
static void list_devices(struct pump *p)
{
	struct dirent **names;
	int i, n, sock;

	p->listed = true;
	n = scandir(p->dir, &names, is_ctl_socket, by_name);
	if (n < 0)
		return;
	for (i = 0; i < n; i++) {
		if (p->ndevices < MAX_DEVICES) {
			sock = connect_device(p->dir, names[i]->d_name,
					      p->ndevices + 1);
			if (sock >= 0)
				p->devices[p->ndevices++] = sock;
		}
		free(names[i]);
	}
	free(names);
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
static void send_status(struct pump *p, const struct nlmsghdr *req,
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
			.nlmsg_pid = p->portid,
		},
		.err = { .error = error, .msg = *req },
	};

	msg.hdr.nlmsg_len = NLMSG_LENGTH(type == NLMSG_DONE ? sizeof(int) :
					 sizeof(msg.err));
	send(p->fd, &msg, msg.hdr.nlmsg_len, MSG_NOSIGNAL);
}

/*
 * One device's answer to req, datagram by datagram, to the program; with
 * dump, its NLMSG_DONE is held back and its status returned.  An error
 * of the connection answers as a device that is gone: ENODEV.
 */
static int relay(struct pump *p, int *sock, const struct nlmsghdr *req,
		 bool dump)
{
	char *buf = p->answer;
	struct rn_netlink_hdr hdr;
	int status = 0;
	ssize_t n;

	if (*sock < 0 ||
	    send(*sock, req, req->nlmsg_len, MSG_NOSIGNAL) != req->nlmsg_len)
		goto gone;
	do {
		char *at;
		ssize_t left;

		n = recv(*sock, buf, sizeof(p->answer), 0);
		if (n < (ssize_t)sizeof(hdr))
			goto gone;
		memcpy(&hdr, buf, sizeof(hdr));
		/*
		 * Each message in a datagram of its own, with our port ID, as
		 * programs that read with 4 KiB buffers take them; a dump's
		 * DONE held back.
		 */
		at = buf + sizeof(hdr);
		for (left = n - sizeof(hdr); left >= NLMSG_HDRLEN;) {
			struct nlmsghdr *m = (void *)at;
			size_t len = NLMSG_ALIGN(m->nlmsg_len);

			if (m->nlmsg_len < NLMSG_HDRLEN || len > (size_t)left)
				goto gone;
			m->nlmsg_pid = p->portid;
			if (dump && m->nlmsg_type == NLMSG_DONE &&
			    m->nlmsg_len >= NLMSG_LENGTH(sizeof(int)))
				memcpy(&status, NLMSG_DATA(m), sizeof(int));
			else
				send(p->fd, m, m->nlmsg_len, MSG_NOSIGNAL);
			at += len;
			left -= len;
		}
	} while (!hdr.last);
	return status;

gone:
	if (*sock >= 0)
		close(*sock);
	*sock = -1;
	if (!dump)
		send_status(p, req, NLMSG_ERROR, -ENODEV);
	return dump ? -ENODEV : 0;
}

static void request(struct pump *p, struct nlmsghdr *req)
{
	bool dump = (req->nlmsg_flags & NLM_F_DUMP) == NLM_F_DUMP;
	uint32_t index = dev_index_of(req);
	int i, status = 0, ret;

	if (!p->listed)
		list_devices(p);
	if (index) {
		if (index > (uint32_t)p->ndevices) {
			send_status(p, req, NLMSG_ERROR, -ENODEV);
			return;
		}
		relay(p, &p->devices[index - 1], req, false);
		return;
	}
	if (!dump) {
		/* Not about one device: any device answers it. */
		if (!p->ndevices)
			send_status(p, req, NLMSG_ERROR, -ENODEV);
		else
			relay(p, &p->devices[0], req, false);
		return;
	}
	for (i = 0; i < p->ndevices; i++) {
		ret = relay(p, &p->devices[i], req, true);
		if (ret && ret != -ENODEV && !status)
			status = ret;
	}
	send_status(p, req, NLMSG_DONE, status);
}

static void *pump_run(void *arg)
{
	struct pump *p = arg;
	char buf[RN_CTL_MSG_MAX];
	struct nlmsghdr *req = (void *)buf;
	ssize_t n;
	int i;

	/* Until the program closes its end. */
	while ((n = recv(p->fd, buf, sizeof(buf), MSG_TRUNC)) > 0) {
		if ((size_t)n < NLMSG_HDRLEN || req->nlmsg_len > (size_t)n)
			continue; /* as the kernel, which drops it */
		if ((size_t)n > sizeof(buf)) {
			send_status(p, req, NLMSG_ERROR, -EMSGSIZE);
			continue;
		}
		request(p, req);
	}
	forget(p);
	for (i = 0; i < p->ndevices; i++)
		if (p->devices[i] >= 0)
			close(p->devices[i]);
	close(p->fd);
	free(p->dir);
	free(p);
	return NULL;
}

/* ---- the program's side ----------------------------------------------- */

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);
typedef int (*getsockname_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*setsockopt_fn)(int, int, int, const void *, socklen_t);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *,
			       socklen_t *);

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

int rn_shim_netlink_socket(int type)
{
	void *ibverbs = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);
	const char *sysfs = secure_getenv("SYSFS_PATH");
	int pair[2], saved;
	struct pump *p;
	pthread_attr_t attr;
	pthread_t thread;
	char *copy;

	/* libibverbs must find the published tree (above). */
	if (ibverbs) {
		dlclose(ibverbs);
		errno = EPROTONOSUPPORT;
		return -1;
	}
	if ((type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != SOCK_RAW &&
	    (type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK)) != SOCK_DGRAM) {
		errno = ESOCKTNOSUPPORT;
		return -1;
	}
	if (!sysfs) { /* not under ringnic-run: no devices to ask */
		errno = EPROTONOSUPPORT;
		return -1;
	}
	p = calloc(1, sizeof(*p));
	copy = strdup(sysfs);
	if (!p || !copy) {
		free(p);
		free(copy);
		errno = ENOMEM;
		return -1;
	}
	/* ringnic-run sets SYSFS_PATH to RUNTIME_DIR/sys. */
	p->dir = strdup(dirname(copy));
	free(copy);
	if (!p->dir) {
		free(p);
		errno = ENOMEM;
		return -1;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
		goto err;
	p->fd = pair[1];
	if (((type & SOCK_NONBLOCK) && fcntl(pair[0], F_SETFL, O_NONBLOCK)) ||
	    (!(type & SOCK_CLOEXEC) && fcntl(pair[0], F_SETFD, 0)))
		goto err_pair;
	errno = remember(pair[0], p);
	if (errno)
		goto err_pair;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	errno = pthread_create(&thread, &attr, pump_run, p);
	pthread_attr_destroy(&attr);
	if (errno) {
		forget(p);
		goto err_pair;
	}
	return pair[0];

err_pair:
	saved = errno;
	close(pair[0]);
	close(pair[1]);
	errno = saved;
err:
	saved = errno;
	free(p->dir);
	free(p);
	errno = saved;
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
		if (nl.nl_groups) { /* RDMA netlink's groups are the kernel's */
			errno = EPERM;
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

	/* Extended and capped acks: ringnicd's acks are capped already. */
	if (level == SOL_NETLINK && lookup(fd, 0, &portid))
		return 0;
	return ((setsockopt_fn)rn_shim_next(&next, "setsockopt"))(fd, level,
								  name, value,
								  len);
}

ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
	static void *_Atomic next;
	uint32_t portid;
	ssize_t n;

	n = ((recvmsg_fn)rn_shim_next(&next, "recvmsg"))(fd, msg, flags);
	if (n >= 0 && msg->msg_name && lookup(fd, 0, &portid))
		kernel_address(msg->msg_name, &msg->msg_namelen);
	return n;
}

ssize_t recvfrom(int fd, void *buf, size_t size, int flags,
		 struct sockaddr *from, socklen_t *len)
{
	static void *_Atomic next;
	uint32_t portid;
	ssize_t n;

	n = ((recvfrom_fn)rn_shim_next(&next, "recvfrom"))(fd, buf, size, flags,
							  from, len);
	if (n >= 0 && from && lookup(fd, 0, &portid))
		kernel_address(from, len);
	return n;
}
