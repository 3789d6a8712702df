// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_cm event channels: RUNTIME_DIR/NAME.cm takes one SOCK_SEQPACKET
 * connection per open of the rdma_cm device (kernel-abi/ringnic-cm.h).
 * A channel holds its ids and its queue of undelivered events; a byte in
 * the application's socketpair says the queue is not empty.  A connection
 * that breaks the protocol, or closes, takes its ids with it, as closing
 * the kernel's rdma_cm file does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "cm/cm.h"
#include "kernel-abi/ringnic-cm.h"

static int watch(struct rn_cm *cm, int fd, struct rn_watch *w,
		 enum rn_watch_kind kind, void *obj)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };

	*w = (struct rn_watch){ kind, obj };
	return epoll_ctl(cm->dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev) ? errno : 0;
}

/* QP1's datagrams are rdma_cm's MADs (protocol.c). */
void rn_cm_gsi_recv(struct rn_device *dev, const struct rn_wire_gsi *g)
{
	rn_cm_mad_recv(dev, g->gid_index, g->sgid, g->mad, g->len);
}

struct rn_cm *rn_cm_init(struct rn_device *dev)
{
	struct rn_cm *cm = calloc(1, sizeof(*cm));
	struct stat st;

	if (!cm)
		return NULL;
	cm->dev = dev;
	cm->listen_fd = -1;
	rn_list_init(&cm->channels);
	rn_table_init(&cm->ids, 0, RN_CM_MAX_IDS, RN_REUSE_LATE);
	if (getrandom(&cm->hi_tid, sizeof(cm->hi_tid), 0) != sizeof(cm->hi_tid) ||
	    getrandom(&cm->comm_gen, sizeof(cm->comm_gen), 0) !=
		    sizeof(cm->comm_gen))
		cm->hi_tid = cm->comm_gen = (uint32_t)getpid();
	if (!stat("/proc/self/ns/net", &st))
		cm->netns_ino = st.st_ino;
	dev->cm = cm;
	return cm;
}

int rn_cm_listen(struct rn_device *dev, const char *runtime_dir)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rn_cm *cm = rn_cm_init(dev);
	int ret;

	if (!cm)
		return ENOMEM;
	if (snprintf(cm->path, sizeof(cm->path), "%s/%s.cm", runtime_dir,
		     dev->name) >= (int)sizeof(sa.sun_path))
		return ENAMETOOLONG;
	strcpy(sa.sun_path, cm->path);
	cm->listen_fd = socket(AF_UNIX,
			       SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (cm->listen_fd < 0)
		return errno;
	unlink(cm->path);
	/* Anyone may open rdma_cm, as /dev/infiniband/rdma_cm is 0666. */
	if (bind(cm->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    chmod(cm->path, 0666) || listen(cm->listen_fd, 128))
		return errno;
	ret = watch(cm, cm->listen_fd, &cm->listen_watch, RN_WATCH_CM_LISTEN, cm);
	return ret;
}

void rn_cm_accept(struct rn_cm *cm)
{
	struct rn_cm_channel *ch;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int fd;

	fd = accept4(cm->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (fd < 0)
		return;
	if (cm->nchannels >= RN_CM_MAX_CHANNELS ||
	    !(ch = calloc(1, sizeof(*ch)))) {
		close(fd);
		return;
	}
	ch->cm = cm;
	ch->fd = fd;
	if (!getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		ch->pid = cred.pid;
	ch->event_fd = -1;
	rn_list_init(&ch->events);
	rn_list_init(&ch->ids);
	if (getrandom(&ch->token, sizeof(ch->token), 0) != sizeof(ch->token) ||
	    watch(cm, fd, &ch->watch, RN_WATCH_CM_CHANNEL, ch)) {
		close(fd);
		free(ch);
		return;
	}
	rn_list_add_tail(&cm->channels, &ch->link);
	cm->nchannels++;
}

static void event_free(struct rn_cm_event *ev)
{
	rn_list_del(&ev->link);
	/* A connect request never delivered: its id was never anyone's. */
	if (ev->new_id) {
		struct rn_cm_id *new_id = ev->new_id;

		ev->new_id = NULL;
		rn_cm_id_destroy(new_id);
	}
	free(ev);
}

static void channel_destroy(struct rn_cm_channel *ch)
{
	struct rn_cm *cm = ch->cm;

	while (!rn_list_empty(&ch->events)) {
		ch->nevents--;
		event_free(rn_container_of(ch->events.next, struct rn_cm_event,
					   link));
	}
	while (!rn_list_empty(&ch->ids))
		rn_cm_id_destroy(rn_container_of(ch->ids.next, struct rn_cm_id,
						 ch_link));
	epoll_ctl(cm->dev->epoll_fd, EPOLL_CTL_DEL, ch->fd, NULL);
	close(ch->fd);
	if (ch->event_fd >= 0)
		close(ch->event_fd);
	rn_list_del(&ch->link);
	cm->nchannels--;
	free(ch);
}

/* The application's descriptor polls readable: events wait. */
static void signal_events(struct rn_cm_channel *ch)
{
	char byte = 0;

	/* A full pair already says so: nothing is lost by EAGAIN. */
	(void)!send(ch->event_fd, &byte, 1, MSG_DONTWAIT | MSG_NOSIGNAL);
}

struct rn_cm_event *rn_cm_event(struct rn_cm_id *id, uint32_t event,
				int32_t status)
{
	struct rn_cm_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->id = id;
	ev->resp.uid = id->uid;
	ev->resp.id = id->handle;
	ev->resp.event = event;
	ev->resp.status = (uint32_t)status;
	return ev;
}

/*
 * Queue ev on the channel of the id it counts to.  As the kernel does, an
 * id that librdmacm has not named yet (a connect request not accepted)
 * gets no events but its CONNECT_REQUEST.
 */
void rn_cm_event_post(struct rn_cm_id *id, struct rn_cm_event *ev)
{
	struct rn_cm_channel *ch = id->ch;

	if (!ev)
		return;
	if ((!id->uid && ev->resp.event != RN_CM_EVENT_CONNECT_REQUEST) ||
	    ch->nevents >= RN_CM_MAX_EVENTS) {
		if (ev->new_id)
			rn_cm_id_destroy(ev->new_id);
		free(ev);
		return;
	}
	rn_list_add_tail(&ch->events, &ev->link);
	if (ch->nevents++ == 0)
		signal_events(ch);
}

/* GET_EVENT: the oldest event, or EAGAIN. */
static int get_event(struct rn_cm_channel *ch, uint8_t *resp, uint32_t *len)
{
	struct rn_cm_event *ev;

	if (rn_list_empty(&ch->events))
		return EAGAIN;
	ev = rn_container_of(ch->events.next, struct rn_cm_event, link);
	ev->id->events_reported++;
	if (rn_log_debug())
		rn_dbg("cm: event %u of id %u (status %d) delivered\n",
		       ev->resp.event, ev->resp.id, (int)ev->resp.status);
	if (ev->new_id) { /* librdmacm has it now */
		rn_cm_id_reveal(ev->new_id);
		ev->new_id = NULL;
	}
	memcpy(resp, &ev->resp, sizeof(ev->resp));
	*len = sizeof(ev->resp);
	ch->nevents--;
	event_free(ev);
	if (ch->nevents)
		signal_events(ch);
	return 0;
}

/* Drop the undelivered events of id (DESTROY_ID, MIGRATE_ID moves them). */
void rn_cm_events_of(struct rn_cm_id *id, struct rn_cm_channel *to)
{
	struct rn_cm_channel *ch = id->ch;
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &ch->events) {
		struct rn_cm_event *ev =
			rn_container_of(pos, struct rn_cm_event, link);

		if (ev->id != id)
			continue;
		ch->nevents--;
		if (!to) {
			event_free(ev);
			continue;
		}
		rn_list_del(&ev->link);
		rn_list_add_tail(&to->events, &ev->link);
		if (to->nevents++ == 0)
			signal_events(to);
	}
}

struct rn_cm_channel *rn_cm_channel_of(struct rn_cm *cm, uint64_t token)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &cm->channels) {
		struct rn_cm_channel *ch =
			rn_container_of(pos, struct rn_cm_channel, link);

		if (ch->token == token && ch->event_fd >= 0)
			return ch;
	}
	return NULL;
}

/*
 * The descriptors a message carried: the first in *fd (-1: none), any
 * others closed; their count.  Every one is taken, however many came.
 */
static unsigned int take_fds(struct msghdr *mh, int *fd)
{
	struct cmsghdr *c;
	unsigned int n = 0;

	*fd = -1;
	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t i, cnt;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		cnt = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < cnt; i++, n++) {
			int one;

			memcpy(&one, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = one;
			else
				close(one);
		}
	}
	return n;
}

/*
 * The first message, msg of n bytes: the hello and the channel's end of
 * the pair, its only descriptor (nfds came, the first is *fd), which the
 * channel keeps (*fd = -1) if the hello is good.
 */
static bool hello(struct rn_cm_channel *ch, const uint8_t *msg, ssize_t n,
		  int *fd, unsigned int nfds)
{
	struct rn_cm_hello_reply reply = {
		.token = ch->token,
		.netns_ino = ch->cm->netns_ino,
	};
	struct rn_cm_hello h;

	if (nfds != 1 || n != sizeof(h))
		return false;
	memcpy(&h, msg, sizeof(h));
	if (h.magic != RN_CM_HELLO_MAGIC)
		return false;
	ch->event_fd = *fd;
	*fd = -1;
	return send(ch->fd, &reply, sizeof(reply), MSG_NOSIGNAL) ==
	       sizeof(reply);
}

static bool serve(struct rn_cm_channel *ch, const uint8_t *msg, size_t len)
{
	struct {
		struct rn_cm_reply r;
		uint8_t resp[sizeof(struct rdma_ucm_query_route_resp) +
			     sizeof(struct rdma_ucm_event_resp)];
	} out = { 0 };
	const struct rdma_ucm_cmd_hdr *hdr = (const void *)msg;
	uint32_t resp_len = 0;
	int ret;

	if (len < sizeof(*hdr))
		return false;
	if (hdr->cmd == RDMA_USER_CM_CMD_GET_EVENT)
		ret = get_event(ch, out.resp, &resp_len);
	else
		ret = rn_cm_command(ch, msg, len, out.resp, &resp_len);
	if (rn_log_debug())
		rn_dbg("cm: channel %p command %u: %d\n", (void *)ch, hdr->cmd,
		       ret);
	if (ret)
		resp_len = 0;
	if (resp_len > hdr->out)
		resp_len = hdr->out;
	out.r.status = ret;
	out.r.len = resp_len;
	return send(ch->fd, &out, sizeof(out.r) + resp_len, MSG_NOSIGNAL) > 0;
}

void rn_cm_readable(struct rn_cm_channel *ch)
{
	uint8_t buf[RN_CM_MSG_MAX + 8];
	/* Room for the hello's descriptor; more that come are closed, by
	 * the kernel (MSG_CTRUNC) or by take_fds.
	 */
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} cmsg;
	struct iovec iov = { buf, sizeof(buf) };
	struct msghdr mh = {
		.msg_iov = &iov,
		.msg_iovlen = 1,
		.msg_control = cmsg.buf,
		.msg_controllen = sizeof(cmsg.buf),
	};
	ssize_t n = recvmsg(ch->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	unsigned int nfds;
	bool ok;
	int fd;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		channel_destroy(ch);
		return;
	}
	/* Descriptors come with an empty or truncated message too. */
	nfds = take_fds(&mh, &fd);
	if (n == 0 || (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)))
		ok = false;
	else if (ch->event_fd < 0)
		ok = hello(ch, buf, n, &fd, nfds);
	else /* commands carry no descriptors */
		ok = !nfds && serve(ch, buf, (size_t)n);
	if (fd >= 0)
		close(fd);
	if (!ok)
		channel_destroy(ch);
}

void rn_cm_close(struct rn_device *dev)
{
	struct rn_cm *cm = dev->cm;

	if (!cm)
		return;
	while (!rn_list_empty(&cm->channels))
		channel_destroy(rn_container_of(cm->channels.next,
						struct rn_cm_channel, link));
	if (cm->listen_fd >= 0) {
		close(cm->listen_fd);
		unlink(cm->path);
	}
	rn_table_destroy(&cm->ids);
	free(cm);
	dev->cm = NULL;
}
