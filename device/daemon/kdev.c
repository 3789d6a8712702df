// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Kernel mode: the device is an ib_device of ringnic.ko (`rdma link add`),
 * and its applications' control requests arrive through RN_KDEV_PATH
 * instead of the control socket (kernel-abi/ringnic-kdev.h).  Each kernel
 * context is a client like a socket one; the same rn_request serves it.
 * Completion and async events go back through the kernel, which delivers
 * them on its own channels.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "kernel-abi/ringnic-kdev.h"
#include "verbs/requests.h"
#include "wire/wire.h"

bool rn_kdev_present(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/" RN_SYSFS_KERNEL,
		 name);
	return !access(path, F_OK);
}

int rn_kdev_attach(struct rn_device *dev)
{
	struct rn_kdev_attach a = { .version = RN_CTL_VERSION };
	int fd = open(RN_KDEV_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return errno;
	snprintf(a.ibdev, sizeof(a.ibdev), "%s", dev->name);
	if (ioctl(fd, RN_KDEV_ATTACH, &a)) {
		int ret = errno;

		close(fd);
		return ret;
	}
	dev->kdev_fd = fd;
	dev->guid = a.node_guid;
	return 0;
}

/*
 * The port's GIDs are the kernel's (the core fills them from the netdev):
 * read them from the device's sysfs, as libibverbs does.  Returns whether
 * the table changed.
 */
bool rn_kdev_read_gids(struct rn_device *dev)
{
	char path[160], line[64];
	unsigned int g[8];
	bool changed = false;
	int i, j;

	for (i = 0; i < RN_GID_TABLE_LEN; i++) {
		union ibv_gid gid = {};
		FILE *f;

		snprintf(path, sizeof(path),
			 "/sys/class/infiniband/%s/ports/1/gids/%d", dev->name, i);
		f = fopen(path, "re");
		if (f) {
			if (fgets(line, sizeof(line), f) &&
			    sscanf(line, "%x:%x:%x:%x:%x:%x:%x:%x", &g[0], &g[1],
				   &g[2], &g[3], &g[4], &g[5], &g[6], &g[7]) == 8)
				for (j = 0; j < 8; j++) {
					gid.raw[2 * j] = g[j] >> 8;
					gid.raw[2 * j + 1] = g[j] & 0xff;
				}
			fclose(f);
		}
		if (memcmp(&gid, &dev->port.gids[i], sizeof(gid))) {
			dev->port.gids[i] = gid;
			dev->port.gid_errors[i] = 0; /* the wire tries it anew */
			changed = true;
		}
	}
	return changed;
}

static struct rn_client *client_of(struct rn_device *dev, uint32_t ctx)
{
	struct rn_list *pos, *tmp;

	/* 0 names no kernel context: it is every socket client's kctx. */
	if (!ctx)
		return NULL;
	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *c = rn_container_of(pos, struct rn_client, link);

		if (c->kctx == ctx)
			return c;
	}
	return NULL;
}

static struct rn_client *client_new(struct rn_device *dev,
				    const struct rn_kdev_req *req)
{
	struct rn_client *client;

	if (dev->nclients >= dev->max_clients)
		return NULL;
	client = calloc(1, sizeof(*client));
	if (!client)
		return NULL;
	rn_client_init(client, dev, req->pid, req->uid);
	client->kctx = req->ctx;
	rn_list_add_tail(&dev->clients, &client->link);
	dev->nclients++;
	rn_dbg("kernel context %u of pid %d\n", req->ctx, req->pid);
	return client;
}

static void reply(struct rn_device *dev, const struct rn_kdev_req *req,
		  struct rn_client *client, const struct rn_reply *r)
{
	struct rn_kdev_reply out = {
		.type = RN_KDEV_REPLY,
		.ctx = req->ctx,
		.seq = req->seq,
		.nfds = r->nfds,
		.len = r->resp.hdr.len,
	};
	int i;

	memcpy(out.body, r->resp.buf, r->resp.hdr.len);
	for (i = 0; i < r->nfds; i++) {
		out.fds[i] = r->fds[i];
		/* The wake-up eventfd is handed over as is; the rest is
		 * memory the application maps.
		 */
		if (client && client->ctx && r->fds[i] == client->ctx->wake_fd)
			out.fd_pass |= 1u << i;
	}
	if (write(dev->kdev_fd, &out, sizeof(out)) != sizeof(out))
		rn_warn("kernel context %u: reply lost: %s\n", req->ctx,
			strerror(errno));
	/* The kernel holds its own references now. */
	rn_reply_sent(client, r);
}

static void serve(struct rn_device *dev, struct rn_kdev_req *req)
{
	struct rn_client *client = client_of(dev, req->ctx);
	struct rn_msg m = {
		.len = req->len,
		.nfds = (int)req->nfds,
		.sender = req->pid,
	};
	struct rn_reply r = { .resp.hdr = { .status = ENOMEM } };
	int i;

	memcpy(m.req.buf, req->body, req->len);
	memcpy(m.fds, req->fds, sizeof(int) * req->nfds);
	r.resp.hdr.len = sizeof(r.resp.hdr);
	if (!client)
		client = client_new(dev, req);
	if (client && !rn_request(client, &m, &r)) {
		memset(&r, 0, sizeof(r));
		r.resp.hdr = (struct rn_ctl_resp_hdr){ EPROTO, sizeof(r.resp.hdr) };
	}
	reply(dev, req, client, &r);
	for (i = 0; i < m.nfds; i++)
		close(m.fds[i]);
	/* A context that could not open has nothing to keep. */
	if (client && !client->opened)
		rn_client_destroy(client);
}

/* A datagram the kernel's QP1 sends (its MAD layer: the CM's MADs). */
static void gsi_send(struct rn_device *dev, const struct rn_kdev_req *req)
{
	struct rn_kdev_gsi g;

	if (req->len != sizeof(g))
		return;
	memcpy(&g, req->body, sizeof(g));
	if (g.len > sizeof(g.mad) || g.sgid_index >= RN_GID_TABLE_LEN)
		return;
	rn_wire_gsi_send(dev, (int)g.sgid_index, g.gid, g.traffic_class,
			 g.hop_limit, g.remote_qpn, g.qkey, g.mad, g.len);
}

void rn_kdev_readable(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct rn_kdev_req req;
	ssize_t n;

	for (;;) {
		n = read(dev->kdev_fd, &req, sizeof(req));
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n != sizeof(req)) {
			rn_err("%s: the kernel device is gone (%s): stopping\n",
			       dev->name, n < 0 ? strerror(errno) : "short read");
			d->stop = true;
			return;
		}
		if (req.nfds > RN_CTL_MAX_FDS || req.len > RN_CTL_MSG_MAX) {
			rn_err("malformed request from the kernel\n");
			continue;
		}
		if (req.type == RN_KDEV_CLOSE) {
			struct rn_client *client = client_of(dev, req.ctx);

			if (client)
				rn_client_destroy(client);
		} else if (req.type == RN_KDEV_GSI_SEND) {
			gsi_send(dev, &req);
		} else {
			serve(dev, &req);
		}
	}
}

/* The port's counters to the stub, which reports them (`rdma statistic`). */
int rn_kdev_counters(struct rn_device *dev, const uint64_t *counters)
{
	struct rn_kdev_counters out = {
		.type = RN_KDEV_COUNTERS,
		.count = RN_CNT_MAX,
	};

	memcpy(out.values, counters, sizeof(out.values));
	if (write(dev->kdev_fd, &out, sizeof(out)) != sizeof(out))
		return errno ? errno : EIO;
	return 0;
}

/* What engine 'engine' counted of them, to the stub (engines/K/). */
int rn_kdev_engine_counters(struct rn_device *dev, uint32_t engine,
			    const uint64_t *counters)
{
	struct rn_kdev_engine_counters out = {
		.type = RN_KDEV_ENGINE_COUNTERS,
		.count = RN_CNT_MAX,
		.engine = engine,
	};

	memcpy(out.values, counters, sizeof(out.values));
	if (write(dev->kdev_fd, &out, sizeof(out)) != sizeof(out))
		return errno ? errno : EIO;
	return 0;
}

/*
 * Whether ringnicd can use none of the port's GIDs, to the stub, which
 * reports the port INIT then (its query_port).
 */
int rn_kdev_port(struct rn_device *dev, bool no_gid)
{
	struct rn_kdev_port out = { .type = RN_KDEV_PORT, .no_gid = no_gid };

	if (write(dev->kdev_fd, &out, sizeof(out)) != sizeof(out))
		return errno ? errno : EIO;
	return 0;
}

/* Kernel mode: a datagram to QP1 goes to the kernel's QP1, in the stub. */
void rn_kdev_gsi_recv(struct rn_device *dev, const struct rn_wire_gsi *gsi)
{
	struct rn_kdev_gsi g = {
		.len = gsi->len,
		.sgid_index = gsi->gid_index,
		.remote_qpn = gsi->src_qpn,
		.qkey = gsi->qkey,
		.flow_label = gsi->flow_label,
		.traffic_class = gsi->tclass,
		.hop_limit = gsi->hop_limit,
		.ipv4 = gsi->ipv4,
	};

	/* A GSI datagram is one whole MAD: the MAD layer reads 256 bytes of
	 * its buffer whatever arrived.
	 */
	if (gsi->len != sizeof(g.mad))
		return;
	memcpy(g.gid, gsi->sgid, sizeof(g.gid));
	memcpy(g.local_gid, gsi->dgid, sizeof(g.local_gid));
	memcpy(g.mad, gsi->mad, gsi->len);
	g.type = RN_KDEV_GSI_RECV;
	if (write(dev->kdev_fd, &g, sizeof(g)) != sizeof(g))
		rn_dbg("a datagram to QP1 not taken by the kernel: %s\n",
		       strerror(errno));
}
