// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * RDMA netlink in userspace mode: a control connection whose first message
 * is NETLINK (kernel-abi/ringnic-ctl.h) is answered as the kernel answers
 * on a NETLINK_RDMA socket (drivers/infiniband/core/nldev.c), for this
 * device, so that iproute2's rdma tool works unmodified under ringnic-run
 * (the shim, providers/ringnic/netlink.c, makes the socket and merges the
 * answers of several devices).  libnl builds and parses the messages.
 *
 * Answered: the device (GET), its port (PORT_GET), the resource summary
 * (RES_GET), QPs, CQs, MRs, PDs, contexts, SRQs and rdma_cm ids
 * (RES_*_GET, one or all), the port's hw counters (STAT_GET), QP counters
 * (verbs/qp_counter.c: STAT_GET of QPs, their mode, one or all; STAT_SET
 * and STAT_DEL for root and ringnicd's user, as the kernel's admin rule),
 * and the system's settings (SYS_GET).  Changes to the device (SET,
 * NEWLINK, DELLINK, SYS_SET) and dynamic counters are not offered:
 * EOPNOTSUPP, or EPERM for a caller the kernel would refuse them to.
 *
 * Resources are numbered as the kernel's resource tracking numbers them:
 * QPNs, MR key indices, rdma_cm handles, SRQNs, and the device-wide
 * numbers verbs/ gives contexts, PDs and CQs.
 *
 * An answer is built whole, in datagrams, before any is sent; what the
 * socket does not take at once waits on the connection (the main loop
 * wakes it when the socket drains), and no request is read meanwhile.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <rdma/rdma_netlink.h>
#include <rdma/rdma_user_cm.h>

#include "cm/cm.h"
#include "daemon/daemon.h"
#include "kernel-abi/ringnic-counters.h"


struct dgram {
	struct dgram *next;
	size_t len; /* header included */
	char buf[RN_NETLINK_DGRAM_MAX];
};

/* A NETLINK connection (client->nldev); the main loop's, as the client. */
struct rn_nldev {
	uint32_t dev_index;
	bool privileged; /* root or ringnicd's user: keys and addresses too */
	/* The answer being sent: datagrams in order, head first. */
	struct dgram *head, *tail;
	bool waiting_out; /* its socket is watched for EPOLLOUT */
};

/* What one request is answered with. */
struct answer {
	struct rn_nldev *nl;
	struct rn_device *dev;
	const struct nlmsghdr *req;
	uint32_t port; /* a dump of the objects of this port only; 0: all */
	uint32_t reply_type; /* the replies' command, if not the request's */
	/* An object too large for a message is cut to fit (QP counters). */
	bool cramped;
	/* STAT_SET and STAT_DEL: the counter and QP they answer about */
	bool bound;
	uint32_t cntn, lqpn;
	struct nl_msg *msg; /* the message being filled, or NULL */
	int error; /* 0, or a negative errno that ends the answer */
};

static const char *const counter_names[RN_CNT_MAX] = RN_COUNTER_NAMES;

/* What a fill function returns for an object the dump leaves out. */
#define SKIP 1

/* ---- building the answer ---------------------------------------------- */

/* Appends the message being built to the answer's datagrams. */
static int emit(struct answer *a)
{
	struct nlmsghdr *h = nlmsg_hdr(a->msg);
	size_t len = NLMSG_ALIGN(h->nlmsg_len);
	struct rn_nldev *nl = a->nl;
	struct dgram *d = nl->tail;

	if (!d || d->len + len > sizeof(d->buf)) {
		d = calloc(1, sizeof(*d));
		if (!d)
			return -ENOMEM;
		d->len = sizeof(struct rn_netlink_hdr);
		if (nl->tail)
			nl->tail->next = d;
		else
			nl->head = d;
		nl->tail = d;
	}
	memcpy(d->buf + d->len, h, h->nlmsg_len);
	d->len += len;
	nlmsg_free(a->msg);
	a->msg = NULL;
	return 0;
}

/* Starts a reply message of the request's command. */
static int begin(struct answer *a, int flags)
{
	a->msg = nlmsg_alloc_size(RN_NETLINK_MSG_MAX);
	if (!a->msg)
		return -ENOMEM;
	if (!nlmsg_put(a->msg, a->req->nlmsg_pid, a->req->nlmsg_seq,
		       a->reply_type ? RDMA_NL_GET_TYPE(RDMA_NL_NLDEV,
							a->reply_type) :
				       a->req->nlmsg_type,
		       0, flags)) {
		nlmsg_free(a->msg);
		a->msg = NULL;
		return -ENOMEM;
	}
	return 0;
}

/*
 * A u64 as the kernel puts it (nla_put_u64_64bit): its value 8-byte
 * aligned, after an empty RDMA_NLDEV_ATTR_PAD where needed.
 */
static int put_u64(struct nl_msg *msg, int type, uint64_t v)
{
	if ((nlmsg_hdr(msg)->nlmsg_len + NLA_HDRLEN) % 8 &&
	    nla_put(msg, RDMA_NLDEV_ATTR_PAD, 0, NULL))
		return -NLE_NOMEM;
	return nla_put_u64(msg, type, v);
}

/*
 * Nests as the kernel's nldev.c makes them: libnl marks each NLA_F_NESTED,
 * as the kernel marks those it added with counters (nla_nest_start: the
 * tables of counters and their entries, a counter's QPs); the older ones
 * (nla_nest_start_noflag) end with nest_end, which takes the mark off.
 */
static struct nlattr *nest(struct nl_msg *msg, int type)
{
	return nla_nest_start(msg, type);
}

static void nest_end(struct nl_msg *msg, struct nlattr *n)
{
	nla_nest_end(msg, n);
	n->nla_type &= ~NLA_F_NESTED;
}

/* The handle that every answer about the device starts with. */
static int put_handle(struct answer *a)
{
	if (nla_put_u32(a->msg, RDMA_NLDEV_ATTR_DEV_INDEX, a->nl->dev_index) ||
	    nla_put_string(a->msg, RDMA_NLDEV_ATTR_DEV_NAME, a->dev->name))
		return -NLE_NOMEM;
	return 0;
}

/* ---- the device and its port ------------------------------------------ */

static int fill_dev(struct answer *a)
{
	struct nl_msg *m = a->msg;
	struct rn_device *dev = a->dev;

	if (put_handle(a) || nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    put_u64(m, RDMA_NLDEV_ATTR_CAP_FLAGS, RN_DEVICE_CAP_FLAGS) ||
	    nla_put_string(m, RDMA_NLDEV_ATTR_FW_VERSION, dev->attr.fw_ver) ||
	    put_u64(m, RDMA_NLDEV_ATTR_NODE_GUID, be64toh(dev->attr.node_guid)) ||
	    put_u64(m, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID,
		    be64toh(dev->attr.sys_image_guid)) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, RDMA_NODE_IB_CA) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 0) ||
	    nla_put_string(m, RDMA_NLDEV_ATTR_DEV_PROTOCOL, "roce"))
		return -NLE_NOMEM;
	return 0;
}

static int fill_port(struct answer *a)
{
	struct nl_msg *m = a->msg;
	struct rn_port *port = &a->dev->port;

	/* A RoCE port: no capability flags, subnet or LIDs (IB's). */
	if (put_handle(a) || nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_PORT_STATE, rn_port_state(a->dev)) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_PORT_PHYS_STATE,
		       port->link_up ? 5 /* LinkUp */ : 3 /* Disabled */))
		return -NLE_NOMEM;
	if (port->ifindex &&
	    (nla_put_u32(m, RDMA_NLDEV_ATTR_NDEV_INDEX, port->ifindex) ||
	     nla_put_string(m, RDMA_NLDEV_ATTR_NDEV_NAME, port->ifname)))
		return -NLE_NOMEM;
	return 0;
}

/* ---- resources -------------------------------------------------------- */

/*
 * The context after c (NULL: the first), or NULL: in the order they were
 * opened, which is their ctxn order.
 */
static struct rn_context *next_context(struct rn_device *dev,
				       struct rn_context *c)
{
	struct rn_list *pos = c ? c->link.next : dev->contexts.next;

	return pos == &dev->contexts ?
		       NULL :
		       rn_container_of(pos, struct rn_context, link);
}

#define for_each_context(c, dev)                                             \
	for (c = next_context(dev, NULL); c; c = next_context(dev, c))

/* The owner's process, unless it is gone (0), as the kernel leaves it. */
static int put_pid(struct nl_msg *m, pid_t pid)
{
	return pid ? nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PID, (uint32_t)pid) : 0;
}

static int fill_qp(struct answer *a, const void *obj)
{
	const struct rn_qp *qp = obj;
	const struct rn_qp_attr *at = &qp->attr;
	struct nl_msg *m = a->msg;
	bool connected = qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_UC;
	uint32_t port = at->qp_state != IBV_QPS_RESET; /* from INIT on */

	if (a->port && a->port != port)
		return SKIP;
	if ((port && nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, port)) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, qp->qpn))
		return -NLE_NOMEM;
	if (connected &&
	    (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_RQPN, at->dest_qp_num) ||
	     nla_put_u32(m, RDMA_NLDEV_ATTR_RES_RQ_PSN, at->rq_psn)))
		return -NLE_NOMEM;
	if (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_SQ_PSN, at->sq_psn))
		return -NLE_NOMEM;
	if ((connected || qp->qp_type == IBV_QPT_XRC_SEND ||
	     qp->qp_type == IBV_QPT_XRC_RECV) &&
	    nla_put_u8(m, RDMA_NLDEV_ATTR_RES_PATH_MIG_STATE, at->path_mig_state))
		return -NLE_NOMEM;
	if (nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, qp->qp_type) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, at->qp_state) ||
	    put_pid(m, qp->client->pid) ||
	    (qp->pd && nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, qp->pd->pdn)))
		return -NLE_NOMEM;
	return 0;
}

static int fill_cq(struct answer *a, const void *obj)
{
	const struct rn_cq *cq = obj;
	struct nl_msg *m = a->msg;

	if (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CQE, cq->entries) ||
	    put_u64(m, RDMA_NLDEV_ATTR_RES_USECNT, cq->refs) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_DEV_DIM, 0) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CQN, cq->cqn) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CTXN, cq->client->ctx->ctxn) ||
	    put_pid(m, cq->client->pid))
		return -NLE_NOMEM;
	return 0;
}

static int fill_mr(struct answer *a, const void *obj)
{
	const struct rn_mr *mr = obj;
	struct nl_msg *m = a->msg;

	/* Keys to the privileged; the address to nobody, as the kernel. */
	if (a->nl->privileged &&
	    (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_RKEY, mr->key) ||
	     nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LKEY, mr->key)))
		return -NLE_NOMEM;
	if (put_u64(m, RDMA_NLDEV_ATTR_RES_MRLEN, mr->length) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_MRN, mr->key >> 8) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, mr->pd->pdn) ||
	    put_pid(m, mr->client->pid))
		return -NLE_NOMEM;
	return 0;
}

static int fill_pd(struct answer *a, const void *obj)
{
	const struct rn_pd *pd = obj;
	struct nl_msg *m = a->msg;

	/* No lkey reaches all memory: the local DMA lkey is 0. */
	if (a->nl->privileged &&
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LOCAL_DMA_LKEY, 0))
		return -NLE_NOMEM;
	/* The objects made on the PD. */
	if (put_u64(m, RDMA_NLDEV_ATTR_RES_USECNT, pd->refs) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, pd->pdn) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CTXN, pd->client->ctx->ctxn) ||
	    put_pid(m, pd->client->pid))
		return -NLE_NOMEM;
	return 0;
}

static int fill_ctx(struct answer *a, const void *obj)
{
	const struct rn_context *c = obj;
	/* Its opener, the first member: gone (0) once retired. */
	const struct rn_client *opener =
		rn_container_of(c->members.next, struct rn_client, ctx_link);

	if (nla_put_u32(a->msg, RDMA_NLDEV_ATTR_RES_CTXN, c->ctxn) ||
	    put_pid(a->msg, opener->pid))
		return -NLE_NOMEM;
	return 0;
}

static int fill_srq(struct answer *a, const void *obj)
{
	const struct rn_srq *srq = obj;
	struct nl_msg *m = a->msg;

	if (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_SRQN, srq->srqn) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, srq->type) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PDN, srq->pd->pdn) ||
	    (srq->cq && nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CQN, srq->cq->cqn)) ||
	    put_pid(m, srq->client->pid))
		return -NLE_NOMEM;
	return 0;
}

/* Our rdma_cm states as the kernel's enum rdma_cm_state numbers them. */
static uint8_t cm_state(enum rn_cm_state s)
{
	enum { IDLE, ADDR_QUERY, ADDR_RESOLVED, ROUTE_QUERY, ROUTE_RESOLVED,
	       CONNECT, DISCONNECT, ADDR_BOUND, LISTEN };

	switch (s) {
	case RN_CM_IDLE:
		return IDLE;
	case RN_CM_BOUND:
		return ADDR_BOUND;
	case RN_CM_ADDR_RESOLVED:
		return ADDR_RESOLVED;
	case RN_CM_ROUTE_RESOLVED:
		return ROUTE_RESOLVED;
	case RN_CM_LISTEN:
		return LISTEN;
	case RN_CM_REQ_SENT:
	case RN_CM_REP_RCVD:
	case RN_CM_REQ_RCVD:
	case RN_CM_REP_SENT:
	case RN_CM_ESTABLISHED:
		return CONNECT;
	default:
		return DISCONNECT;
	}
}

static int put_address(struct nl_msg *m, int type,
		       const struct sockaddr_storage *ss)
{
	if (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)
		return 0;
	return nla_put(m, type, sizeof(*ss), ss);
}

static int fill_cm_id(struct answer *a, const void *obj)
{
	const struct rn_cm_id *id = obj;
	struct nl_msg *m = a->msg;
	uint32_t port = id->on_device;

	if (a->port && a->port != port)
		return SKIP;
	if ((port && nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, port)) ||
	    (id->local_qpn &&
	     (nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, id->local_qpn) ||
	      nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, id->qp_type))) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_PS, id->ps) ||
	    nla_put_u8(m, RDMA_NLDEV_ATTR_RES_STATE, cm_state(id->state)) ||
	    put_address(m, RDMA_NLDEV_ATTR_RES_SRC_ADDR, &id->src) ||
	    put_address(m, RDMA_NLDEV_ATTR_RES_DST_ADDR, &id->dst) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_RES_CM_IDN, id->handle) ||
	    put_pid(m, id->ch ? id->ch->pid : 0))
		return -NLE_NOMEM;
	return 0;
}

/*
 * A kind of resource: its nests, how an object is found by its number and
 * how the objects are walked (from *cursor on, false at the end).
 */
struct res_kind {
	int cmd; /* RDMA_NLDEV_CMD_RES_*_GET */
	int table, entry; /* RDMA_NLDEV_ATTR_RES_QP, RDMA_NLDEV_ATTR_RES_QP_ENTRY */
	int id_attr; /* what names one: RDMA_NLDEV_ATTR_RES_LQPN, ... */
	const char *name; /* in the summary */
	int (*fill)(struct answer *a, const void *obj);
	const void *(*next)(struct rn_device *dev, uint64_t *cursor);
	uint32_t (*id_of)(const void *obj);
};

/* The objects of a device-wide table, by index. */
static const void *table_next(const struct rn_table *t, uint64_t *cursor)
{
	const void *obj;

	while (*cursor < t->size) {
		obj = rn_table_get(t, (*cursor)++);
		if (obj)
			return obj;
	}
	return NULL;
}

/*
 * The objects of every context's table at offset 'table' of struct
 * rn_context: the cursor holds the context's number and the index.
 */
static const void *client_table_next(struct rn_device *dev, uint64_t *cursor,
				     size_t table)
{
	struct rn_context *c;

	for_each_context(c, dev) {
		const struct rn_table *t = (void *)((char *)c + table);
		uint64_t index;
		const void *obj;

		if (c->ctxn < *cursor >> 32)
			continue;
		if (c->ctxn > *cursor >> 32)
			*cursor = (uint64_t)c->ctxn << 32;
		index = *cursor & 0xffffffff;
		obj = table_next(t, &index);
		*cursor = (uint64_t)c->ctxn << 32 | index;
		if (obj)
			return obj;
		*cursor = (uint64_t)(c->ctxn + 1) << 32;
	}
	return NULL;
}

static const void *next_qp(struct rn_device *dev, uint64_t *cursor)
{
	return table_next(&dev->qpns, cursor);
}

static const void *next_mr(struct rn_device *dev, uint64_t *cursor)
{
	return table_next(&dev->mr_keys, cursor);
}

static const void *next_srq(struct rn_device *dev, uint64_t *cursor)
{
	return table_next(&dev->srqns, cursor);
}

static const void *next_cm_id(struct rn_device *dev, uint64_t *cursor)
{
	const struct rn_cm_id *id;

	/* Ids of no address of ours are not the device's yet. */
	while (dev->cm && (id = table_next(&dev->cm->ids, cursor)))
		if (id->on_device || id->state != RN_CM_IDLE)
			return id;
	return NULL;
}

static const void *next_cq(struct rn_device *dev, uint64_t *cursor)
{
	return client_table_next(dev, cursor, offsetof(struct rn_context, cqs));
}

static const void *next_pd(struct rn_device *dev, uint64_t *cursor)
{
	return client_table_next(dev, cursor, offsetof(struct rn_context, pds));
}

static const void *next_ctx(struct rn_device *dev, uint64_t *cursor)
{
	struct rn_context *c;

	for_each_context(c, dev)
		if (c->ctxn >= *cursor) {
			*cursor = (uint64_t)c->ctxn + 1;
			return c;
		}
	return NULL;
}

static uint32_t qp_id(const void *o) { return ((const struct rn_qp *)o)->qpn; }
static uint32_t cq_id(const void *o) { return ((const struct rn_cq *)o)->cqn; }
static uint32_t mr_id(const void *o) { return ((const struct rn_mr *)o)->key >> 8; }
static uint32_t pd_id(const void *o) { return ((const struct rn_pd *)o)->pdn; }
static uint32_t ctx_id(const void *o) { return ((const struct rn_context *)o)->ctxn; }
static uint32_t srq_id(const void *o) { return ((const struct rn_srq *)o)->srqn; }
static uint32_t cm_id_id(const void *o) { return ((const struct rn_cm_id *)o)->handle; }

/* In the order of the kernel's summary. */
static const struct res_kind kinds[] = {
	{ RDMA_NLDEV_CMD_RES_PD_GET, RDMA_NLDEV_ATTR_RES_PD,
	  RDMA_NLDEV_ATTR_RES_PD_ENTRY, RDMA_NLDEV_ATTR_RES_PDN, "pd",
	  fill_pd, next_pd, pd_id },
	{ RDMA_NLDEV_CMD_RES_CQ_GET, RDMA_NLDEV_ATTR_RES_CQ,
	  RDMA_NLDEV_ATTR_RES_CQ_ENTRY, RDMA_NLDEV_ATTR_RES_CQN, "cq",
	  fill_cq, next_cq, cq_id },
	{ RDMA_NLDEV_CMD_RES_QP_GET, RDMA_NLDEV_ATTR_RES_QP,
	  RDMA_NLDEV_ATTR_RES_QP_ENTRY, RDMA_NLDEV_ATTR_RES_LQPN, "qp",
	  fill_qp, next_qp, qp_id },
	{ RDMA_NLDEV_CMD_RES_CM_ID_GET, RDMA_NLDEV_ATTR_RES_CM_ID,
	  RDMA_NLDEV_ATTR_RES_CM_ID_ENTRY, RDMA_NLDEV_ATTR_RES_CM_IDN, "cm_id",
	  fill_cm_id, next_cm_id, cm_id_id },
	{ RDMA_NLDEV_CMD_RES_MR_GET, RDMA_NLDEV_ATTR_RES_MR,
	  RDMA_NLDEV_ATTR_RES_MR_ENTRY, RDMA_NLDEV_ATTR_RES_MRN, "mr",
	  fill_mr, next_mr, mr_id },
	{ RDMA_NLDEV_CMD_RES_CTX_GET, RDMA_NLDEV_ATTR_RES_CTX,
	  RDMA_NLDEV_ATTR_RES_CTX_ENTRY, RDMA_NLDEV_ATTR_RES_CTXN, "ctx",
	  fill_ctx, next_ctx, ctx_id },
	{ RDMA_NLDEV_CMD_RES_SRQ_GET, RDMA_NLDEV_ATTR_RES_SRQ,
	  RDMA_NLDEV_ATTR_RES_SRQ_ENTRY, RDMA_NLDEV_ATTR_RES_SRQN, "srq",
	  fill_srq, next_srq, srq_id },
};

/* ---- QP counters (verbs/qp_counter.c) ---------------------------------- */

/*
 * Room a QP counter's counts take at the end of its entry: one cramped
 * (alone in its message, and still too large) lists only the QPs that fit
 * before them.
 */
#define COUNTS_ROOM (RN_QP_COUNTS * 48 + 64)

static int fill_counter(struct answer *a, const void *obj)
{
	const struct rn_qp_counter *c = obj;
	uint64_t values[RN_QP_COUNTS];
	struct nl_msg *m = a->msg;
	struct nlattr *table, *entry;
	struct rn_list *pos, *tmp;
	unsigned int i;

	if (a->port && a->port != 1)
		return SKIP;
	if (nla_put_u32(m, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, c->id) ||
	    nla_put_u32(m, RDMA_NLDEV_ATTR_STAT_MODE,
			c->auto_mask ? RDMA_COUNTER_MODE_AUTO :
				       RDMA_COUNTER_MODE_MANUAL) ||
	    ((c->auto_mask & RDMA_COUNTER_MASK_QP_TYPE) &&
	     nla_put_u8(m, RDMA_NLDEV_ATTR_RES_TYPE, c->qp_type)) ||
	    ((c->auto_mask & RDMA_COUNTER_MASK_PID) && put_pid(m, c->pid)))
		return -NLE_NOMEM;
	table = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP);
	if (!table)
		return -NLE_NOMEM;
	rn_list_for_each_safe(pos, tmp, (struct rn_list *)&c->qps) {
		const struct rn_qp *qp =
			rn_container_of(pos, struct rn_qp, counter_link);

		if (a->cramped && nlmsg_hdr(m)->nlmsg_len + 16 + COUNTS_ROOM >
					  RN_NETLINK_MSG_MAX)
			break;
		entry = nla_nest_start(m, RDMA_NLDEV_ATTR_RES_QP_ENTRY);
		if (!entry || nla_put_u32(m, RDMA_NLDEV_ATTR_RES_LQPN, qp->qpn))
			return -NLE_NOMEM;
		nla_nest_end(m, entry);
	}
	nla_nest_end(m, table);
	rn_qp_counter_values(c, values);
	table = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS);
	if (!table)
		return -NLE_NOMEM;
	for (i = 0; i < RN_QP_COUNTS; i++) {
		entry = nla_nest_start(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
		if (!entry ||
		    nla_put_string(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
				   rn_qp_count_names[i]) ||
		    put_u64(m, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
			    values[i]))
			return -NLE_NOMEM;
		nla_nest_end(m, entry);
	}
	nla_nest_end(m, table);
	return 0;
}

/* The counters in the order of their ids: the cursor is the next id. */
static const void *next_counter(struct rn_device *dev, uint64_t *cursor)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->qp_counters.list) {
		struct rn_qp_counter *c =
			rn_container_of(pos, struct rn_qp_counter, link);

		if (c->id >= *cursor) {
			*cursor = (uint64_t)c->id + 1;
			return c;
		}
	}
	return NULL;
}

static uint32_t counter_id(const void *o)
{
	return ((const struct rn_qp_counter *)o)->id;
}

static const struct res_kind counters = {
	RDMA_NLDEV_CMD_STAT_GET, RDMA_NLDEV_ATTR_STAT_COUNTER,
	RDMA_NLDEV_ATTR_STAT_COUNTER_ENTRY, RDMA_NLDEV_ATTR_STAT_COUNTER_ID,
	NULL, fill_counter, next_counter, counter_id,
};

static const struct res_kind *kind_of(int cmd)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (kinds[i].cmd == cmd)
			return &kinds[i];
	return NULL;
}

static int fill_summary(struct answer *a)
{
	struct nlattr *table, *entry;
	size_t i;

	if (put_handle(a) ||
	    !(table = nest(a->msg, RDMA_NLDEV_ATTR_RES_SUMMARY)))
		return -NLE_NOMEM;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		uint64_t cursor = 0, n = 0;

		while (kinds[i].next(a->dev, &cursor))
			n++;
		entry = nest(a->msg, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY);
		if (!entry ||
		    nla_put_string(a->msg,
				   RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_NAME,
				   kinds[i].name) ||
		    put_u64(a->msg, RDMA_NLDEV_ATTR_RES_SUMMARY_ENTRY_CURR, n))
			return -NLE_NOMEM;
		nest_end(a->msg, entry);
	}
	nest_end(a->msg, table);
	return 0;
}

/*
 * A dump of one kind: one message holds as many entries as fit, in one
 * table nest after the handle; the next message goes on.  No objects, no
 * message (the DONE says it all), as the kernel does.
 */
static int dump_res(struct answer *a, const struct res_kind *k)
{
	struct nlattr *table = NULL, *entry;
	uint32_t entries = 0; /* in the message being filled */
	uint64_t cursor = 0;
	const void *obj;
	int ret;

	obj = k->next(a->dev, &cursor);
	while (obj) {
		if (!a->msg) {
			ret = begin(a, NLM_F_MULTI);
			if (ret)
				return ret;
			if (put_handle(a) || !(table = nest(a->msg, k->table)))
				return -ENOBUFS;
			entries = 0;
		}
		entry = nest(a->msg, k->entry);
		ret = entry ? k->fill(a, obj) : -NLE_NOMEM;
		if (ret && entry)
			nla_nest_cancel(a->msg, entry);
		if (ret == 0 || ret == SKIP) {
			if (!ret) {
				nest_end(a->msg, entry);
				entries++;
			}
			a->cramped = false;
			obj = k->next(a->dev, &cursor);
			continue;
		}
		/*
		 * The message is full: it goes, and the object to the next.
		 * An object alone in one and still too large (a QP counter's
		 * list of QPs) is filled again, cramped, to fit.
		 */
		if (!entries) {
			if (a->cramped)
				return -ENOBUFS;
			a->cramped = true;
			continue;
		}
		nest_end(a->msg, table);
		ret = emit(a);
		if (ret)
			return ret;
	}
	if (a->msg && !entries) {
		nlmsg_free(a->msg);
		a->msg = NULL;
	} else if (a->msg) {
		nest_end(a->msg, table);
		return emit(a);
	}
	return 0;
}

/* One object, named by its number: its attributes after the handle. */
static int get_res(struct answer *a, const struct res_kind *k,
		   struct nlattr **tb)
{
	uint64_t cursor = 0;
	const void *obj;
	uint32_t id;
	int ret;

	if (!tb[k->id_attr])
		return -EINVAL;
	id = nla_get_u32(tb[k->id_attr]);
	while ((obj = k->next(a->dev, &cursor)) && k->id_of(obj) != id)
		;
	if (!obj)
		return -ENOENT;
	a->cramped = true; /* alone in its message */
	ret = begin(a, 0);
	if (ret)
		return ret;
	if (put_handle(a) || k->fill(a, obj))
		return -ENOBUFS;
	return emit(a);
}

/* ---- statistics ------------------------------------------------------- */

static int fill_hwcounters(struct answer *a)
{
	uint64_t counters[RN_CNT_MAX];
	struct nlattr *table, *entry;
	int c;

	if (put_handle(a) || nla_put_u32(a->msg, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    !(table = nest(a->msg, RDMA_NLDEV_ATTR_STAT_HWCOUNTERS)))
		return -NLE_NOMEM;
	rn_port_counters(a->dev, counters);
	for (c = 0; c < RN_CNT_MAX; c++) {
		entry = nest(a->msg, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY);
		if (!entry ||
		    nla_put_string(a->msg,
				   RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_NAME,
				   counter_names[c]) ||
		    put_u64(a->msg, RDMA_NLDEV_ATTR_STAT_HWCOUNTER_ENTRY_VALUE,
			    counters[c]))
			return -NLE_NOMEM;
		nla_nest_end(a->msg, entry);
	}
	nla_nest_end(a->msg, table);
	return 0;
}

/* The port's mode of QP counters (verbs/qp_counter.c). */
static int fill_stat_mode(struct answer *a)
{
	uint32_t mode = a->dev->qp_counters.mode;

	if (put_handle(a) || nla_put_u32(a->msg, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    nla_put_u32(a->msg, RDMA_NLDEV_ATTR_STAT_MODE, mode) ||
	    (mode == RDMA_COUNTER_MODE_AUTO &&
	     nla_put_u32(a->msg, RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK,
			 a->dev->qp_counters.auto_mask)))
		return -NLE_NOMEM;
	return 0;
}

/* STAT_SET's and STAT_DEL's reply: the port, and the binding made or gone. */
static int fill_stat_set(struct answer *a)
{
	if (put_handle(a) || nla_put_u32(a->msg, RDMA_NLDEV_ATTR_PORT_INDEX, 1) ||
	    (a->bound &&
	     (nla_put_u32(a->msg, RDMA_NLDEV_ATTR_STAT_COUNTER_ID, a->cntn) ||
	      nla_put_u32(a->msg, RDMA_NLDEV_ATTR_RES_LQPN, a->lqpn))))
		return -NLE_NOMEM;
	return 0;
}

static int fill_sys(struct answer *a)
{
	/* Shared network namespaces; fork copies registered memory. */
	if (nla_put_u8(a->msg, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1) ||
	    nla_put_u8(a->msg, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1))
		return -NLE_NOMEM;
	return 0;
}

/* ---- requests --------------------------------------------------------- */

static struct nla_policy policy[RDMA_NLDEV_ATTR_MAX] = {
	[RDMA_NLDEV_ATTR_DEV_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_PORT_INDEX] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_LQPN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_CQN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_MRN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_PDN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_CTXN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_SRQN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_RES_CM_IDN] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_RES] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_MODE] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_COUNTER_ID] = { .type = NLA_U32 },
	[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS] = { .type = NLA_NESTED },
};

/* A message built by one fill function, alone or as one of a dump. */
static int one(struct answer *a, int (*fill)(struct answer *), bool dump)
{
	int ret = begin(a, dump ? NLM_F_MULTI : 0);

	if (ret)
		return ret;
	if (fill(a))
		return -ENOBUFS;
	return emit(a);
}

/*
 * STAT_SET of QP counters: auto mode (its mask; 0 ends it), or a QP bound
 * to a new counter or to one named.  Dynamic counters
 * (RDMA_NLDEV_ATTR_STAT_HWCOUNTERS) are not offered.
 */
static int stat_set(struct answer *a, struct nlattr **tb)
{
	struct nlattr *mask = tb[RDMA_NLDEV_ATTR_STAT_AUTO_MODE_MASK];
	bool existing = tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID];
	int ret;

	if (!tb[RDMA_NLDEV_ATTR_PORT_INDEX] ||
	    (!tb[RDMA_NLDEV_ATTR_STAT_MODE] &&
	     !tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS]))
		return -EINVAL;
	if (tb[RDMA_NLDEV_ATTR_STAT_HWCOUNTERS])
		return -EOPNOTSUPP;
	if (!tb[RDMA_NLDEV_ATTR_STAT_RES] ||
	    nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_RES]) != RDMA_NLDEV_ATTR_RES_QP)
		return -EINVAL;
	if (nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_MODE]) ==
	    RDMA_COUNTER_MODE_AUTO) {
		ret = rn_qp_counter_set_auto(a->dev,
					     mask ? nla_get_u32(mask) : 0);
	} else {
		if (!tb[RDMA_NLDEV_ATTR_RES_LQPN])
			return -EINVAL;
		a->lqpn = nla_get_u32(tb[RDMA_NLDEV_ATTR_RES_LQPN]);
		if (existing)
			a->cntn = nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID]);
		ret = rn_qp_counter_bind(a->dev, a->lqpn, existing, &a->cntn);
		a->bound = !ret;
	}
	if (ret)
		return -ret;
	ret = one(a, fill_stat_set, false);
	/* No reply, no binding: the caller could not learn its counter. */
	if (ret && a->bound)
		rn_qp_counter_unbind(a->dev, a->lqpn, a->cntn);
	return ret;
}

/* STAT_DEL: a QP unbound from its counter; answered as STAT_SET is. */
static int stat_del(struct answer *a, struct nlattr **tb)
{
	int ret;

	if (!tb[RDMA_NLDEV_ATTR_STAT_RES] || !tb[RDMA_NLDEV_ATTR_PORT_INDEX] ||
	    !tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID] ||
	    !tb[RDMA_NLDEV_ATTR_RES_LQPN] ||
	    nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_RES]) != RDMA_NLDEV_ATTR_RES_QP)
		return -EINVAL;
	a->cntn = nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID]);
	a->lqpn = nla_get_u32(tb[RDMA_NLDEV_ATTR_RES_LQPN]);
	ret = rn_qp_counter_unbind(a->dev, a->lqpn, a->cntn);
	if (ret)
		return -ret;
	a->bound = true;
	a->reply_type = RDMA_NLDEV_CMD_STAT_SET;
	return one(a, fill_stat_set, false);
}

/*
 * The answer's messages for req but its end: 0 or a negative errno.
 * tb holds the request's attributes.
 */
static int serve(struct answer *a, struct nlattr **tb, bool dump)
{
	int cmd = RDMA_NL_GET_OP(a->req->nlmsg_type);
	const struct res_kind *k;

	/* A request for another device (the shim sends none) finds nothing. */
	if (tb[RDMA_NLDEV_ATTR_DEV_INDEX] &&
	    nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]) != a->nl->dev_index)
		return -ENODEV;
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX] &&
	    nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]) != 1)
		return -EINVAL;

	switch (cmd) {
	case RDMA_NLDEV_CMD_GET:
		return one(a, fill_dev, dump);
	case RDMA_NLDEV_CMD_PORT_GET:
		return one(a, fill_port, dump);
	case RDMA_NLDEV_CMD_RES_GET:
		return one(a, fill_summary, dump);
	case RDMA_NLDEV_CMD_SYS_GET:
		return dump ? -EOPNOTSUPP : one(a, fill_sys, false);
	case RDMA_NLDEV_CMD_STAT_GET:
		if (!tb[RDMA_NLDEV_ATTR_STAT_RES])
			return one(a, fill_hwcounters, dump);
		if (nla_get_u32(tb[RDMA_NLDEV_ATTR_STAT_RES]) !=
		    RDMA_NLDEV_ATTR_RES_QP)
			return -EINVAL;
		if (dump)
			break; /* the QP counters, below */
		if (tb[RDMA_NLDEV_ATTR_STAT_COUNTER_ID])
			return get_res(a, &counters, tb);
		if (!tb[RDMA_NLDEV_ATTR_STAT_MODE])
			return -EINVAL;
		return one(a, fill_stat_mode, false);
	case RDMA_NLDEV_CMD_STAT_SET:
		return a->nl->privileged ? stat_set(a, tb) : -EPERM;
	case RDMA_NLDEV_CMD_STAT_DEL:
		return a->nl->privileged ? stat_del(a, tb) : -EPERM;
	case RDMA_NLDEV_CMD_SET:
	case RDMA_NLDEV_CMD_NEWLINK:
	case RDMA_NLDEV_CMD_DELLINK:
	case RDMA_NLDEV_CMD_SYS_SET:
	case RDMA_NLDEV_CMD_RES_QP_GET_RAW:
	case RDMA_NLDEV_CMD_RES_CQ_GET_RAW:
	case RDMA_NLDEV_CMD_RES_MR_GET_RAW:
		return a->nl->privileged ? -EOPNOTSUPP : -EPERM;
	}
	k = cmd == RDMA_NLDEV_CMD_STAT_GET ? &counters : kind_of(cmd);
	if (!k)
		return -EOPNOTSUPP;
	if (!dump)
		return get_res(a, k, tb);
	/* A dump for one port: the kernel leaves out the objects of others
	 * (and those of none).
	 */
	if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
		a->port = nla_get_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]);
	return dump_res(a, k);
}

/*
 * The answer's end: a dump's NLMSG_DONE, with its error if it failed
 * (what it had sent stays sent, as the kernel's); else an NLMSG_ERROR for
 * an error or an asked-for ack.
 */
static int finish(struct answer *a, bool dump)
{
	struct nlmsgerr *err;
	int type = dump ? NLMSG_DONE : NLMSG_ERROR;

	if (a->msg) { /* a message left half built by an error */
		nlmsg_free(a->msg);
		a->msg = NULL;
	}
	if (type == NLMSG_ERROR && !a->error &&
	    !(a->req->nlmsg_flags & NLM_F_ACK))
		return 0;
	/* Acks hold the request's header alone (NETLINK_CAP_ACK). */
	a->msg = nlmsg_alloc_size(RN_NETLINK_MSG_MAX);
	if (!a->msg ||
	    !nlmsg_put(a->msg, a->req->nlmsg_pid, a->req->nlmsg_seq, type,
		       type == NLMSG_DONE ? sizeof(int) : sizeof(*err),
		       type == NLMSG_DONE ? NLM_F_MULTI : NLM_F_CAPPED)) {
		nlmsg_free(a->msg);
		a->msg = NULL;
		return -ENOMEM;
	}
	if (type == NLMSG_DONE) {
		*(int *)nlmsg_data(nlmsg_hdr(a->msg)) = a->error;
	} else {
		err = nlmsg_data(nlmsg_hdr(a->msg));
		err->error = a->error;
		err->msg = *a->req;
	}
	return emit(a);
}

/* One message of a request datagram. */
static int request(struct rn_client *client, const struct nlmsghdr *req)
{
	struct answer a = { .nl = client->nldev, .dev = client->dev, .req = req };
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX] = { 0 };
	/* Either bit asks for a dump, as the kernel reads it. */
	bool dump = req->nlmsg_flags & NLM_F_DUMP;
	int ret;

	/* Only requests are answered, and control messages not at all. */
	if (!(req->nlmsg_flags & NLM_F_REQUEST) ||
	    req->nlmsg_type < NLMSG_MIN_TYPE)
		return 0;
	if (RDMA_NL_GET_CLIENT(req->nlmsg_type) != RDMA_NL_NLDEV)
		a.error = -EINVAL;
	else if (nlmsg_parse((struct nlmsghdr *)req, 0, tb,
			     RDMA_NLDEV_ATTR_MAX - 1, policy))
		a.error = -EINVAL;
	else
		a.error = serve(&a, tb, dump);
	ret = finish(&a, dump);
	return ret;
}

/* ---- the connection --------------------------------------------------- */

int rn_nldev_start(struct rn_client *client, uint32_t dev_index)
{
	struct rn_nldev *nl;

	if (client->kctx)
		return EOPNOTSUPP;
	if (!dev_index)
		return EINVAL;
	nl = calloc(1, sizeof(*nl));
	if (!nl)
		return ENOMEM;
	nl->dev_index = dev_index;
	nl->privileged = client->uid == 0 || client->uid == geteuid();
	client->nldev = nl;
	return 0;
}

static void drop_answer(struct rn_nldev *nl)
{
	struct dgram *d;

	while ((d = nl->head)) {
		nl->head = d->next;
		free(d);
	}
	nl->tail = NULL;
}

void rn_nldev_stop(struct rn_client *client)
{
	if (!client->nldev)
		return;
	drop_answer(client->nldev);
	free(client->nldev);
	client->nldev = NULL;
}

/* Whether the connection waits for its socket to drain, or for requests. */
static void wait_out(struct rn_client *client, bool out)
{
	struct epoll_event ev = { .events = out ? EPOLLOUT : EPOLLIN,
				  .data.ptr = &client->watch };

	if (client->nldev->waiting_out == out)
		return;
	client->nldev->waiting_out = out;
	epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_MOD, client->fd, &ev);
}

bool rn_nldev_flush(struct rn_client *client)
{
	struct rn_nldev *nl = client->nldev;
	struct dgram *d;
	ssize_t n;

	if (!nl->head)
		return true;
	while ((d = nl->head)) {
		n = send(client->fd, d->buf, d->len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			wait_out(client, true);
			return true;
		}
		if (n != (ssize_t)d->len)
			return false;
		nl->head = d->next;
		free(d);
	}
	nl->tail = NULL;
	wait_out(client, false);
	return true;
}

bool rn_nldev_pending(const struct rn_client *client)
{
	return client->nldev->head;
}

bool rn_nldev_request(struct rn_client *client, const void *buf, size_t len)
{
	const struct nlmsghdr *req = buf;
	struct rn_netlink_hdr last = { .last = 1 };
	struct rn_nldev *nl = client->nldev;

	/* One message, the whole datagram (the shim splits the program's). */
	if (len < NLMSG_HDRLEN || req->nlmsg_len < NLMSG_HDRLEN ||
	    NLMSG_ALIGN(req->nlmsg_len) != NLMSG_ALIGN(len))
		return false;
	if (request(client, req)) {
		drop_answer(nl);
		return false;
	}
	/* Nothing to say (no ack asked): an empty last datagram says so. */
	if (!nl->tail) {
		nl->head = nl->tail = calloc(1, sizeof(*nl->head));
		if (!nl->head)
			return false;
		nl->tail->len = sizeof(last);
	}
	memcpy(nl->tail->buf, &last, sizeof(last));
	return rn_nldev_flush(client);
}
