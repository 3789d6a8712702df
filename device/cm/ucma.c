// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The rdma_ucm commands (ABI 4) with the answers Linux 6.1's ucma.c and
 * cma.c give (docs/rdma_cm.md, "Userspace mode: the rdma_cm device").
 * ringnicd serves the legacy IP command set: librdmacm probes AF_IB with
 * BIND, which is not offered, and then uses BIND_IP, RESOLVE_IP and
 * QUERY_ROUTE for everything.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "cm/cm.h"
#include "cm/mad.h"
#include "kernel-abi/ringnic-cm.h"

/* What the route says of RoCE paths (cma.c@6.1 cma_resolve_iboe_route). */
#define PATH_PACKET_LIFE_TIME 18
#define IB_SELECTOR_EQ 2
#define IB_RATE_10_GBPS 3

struct rn_cm_id *rn_cm_id_new(struct rn_cm_channel *ch, uint16_t ps,
			      uint8_t qp_type)
{
	struct rn_cm *cm = ch->cm;
	struct rn_device *dev = cm->dev;
	struct rn_cm_id *id = calloc(1, sizeof(*id));
	int64_t handle;

	if (!id)
		return NULL;
	handle = rn_table_insert(&cm->ids, id);
	if (handle < 0 || rn_timers_reserve(&dev->timers, dev->ntimers + 1)) {
		if (handle >= 0)
			rn_table_remove(&cm->ids, (uint32_t)handle);
		free(id);
		return NULL;
	}
	dev->ntimers++;
	id->cm = cm;
	id->handle = (uint32_t)handle;
	id->ch = ch;
	rn_list_add_tail(&ch->ids, &id->ch_link);
	id->ps = ps;
	id->qp_type = qp_type;
	id->gid_index = -1;
	rn_cm_id_init(id);
	return id;
}

void rn_cm_id_destroy(struct rn_cm_id *id)
{
	struct rn_cm *cm = id->cm;
	uint32_t i;

	rn_cm_events_of(id, NULL);
	rn_cm_id_reveal(id);
	rn_cm_leave(id);
	/* Connect requests of a listener that goes stay with their ids. */
	for (i = 0; i < cm->ids.size; i++) {
		struct rn_cm_id *o = rn_table_get(&cm->ids, i);

		if (o && o->listener == id)
			o->listener = NULL;
	}
	rn_cm_release_port(id);
	rn_list_del(&id->ch_link);
	rn_table_remove(&cm->ids, id->handle);
	cm->dev->ntimers--;
	free(id);
}

/*
 * The connect request is delivered (or its id goes): it no longer counts
 * against its listener's backlog, as ucma.c counts it.
 */
void rn_cm_id_reveal(struct rn_cm_id *id)
{
	if (id->hidden && id->listener)
		id->listener->pending--;
	id->hidden = false;
}

static struct rn_cm_id *id_of(struct rn_cm_channel *ch, uint32_t handle,
			      int *err)
{
	struct rn_cm_id *id = rn_table_get(&ch->cm->ids, handle);

	/* A connect request not yet delivered is nobody's to name. */
	if (!id || id->hidden) {
		*err = ENOENT;
		return NULL;
	}
	if (id->ch != ch) {
		*err = EINVAL;
		return NULL;
	}
	return id;
}

static int create_id(struct rn_cm_channel *ch, const void *body,
		     uint8_t *resp, uint32_t *len)
{
	const struct rdma_ucm_create_id *cmd = body;
	struct rdma_ucm_create_id_resp *r = (void *)resp;
	struct rn_cm_id *id;
	uint8_t qp_type;

	switch (cmd->ps) {
	case RDMA_PS_TCP:
	case RDMA_PS_IB:
		qp_type = IBV_QPT_RC;
		break;
	case RDMA_PS_UDP:
	case RDMA_PS_IPOIB:
		qp_type = IBV_QPT_UD;
		break;
	default:
		return EINVAL;
	}
	if (cmd->qp_type != IBV_QPT_RC && cmd->qp_type != IBV_QPT_UD)
		return EINVAL;
	qp_type = cmd->qp_type;
	id = rn_cm_id_new(ch, cmd->ps, qp_type);
	if (!id)
		return ENOMEM;
	id->uid = cmd->uid;
	r->id = id->handle;
	*len = sizeof(*r);
	return 0;
}

static int destroy_id(struct rn_cm_channel *ch, const void *body,
		      uint8_t *resp, uint32_t *len)
{
	const struct rdma_ucm_destroy_id *cmd = body;
	struct rdma_ucm_destroy_id_resp *r = (void *)resp;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	r->events_reported = id->events_reported;
	*len = sizeof(*r);
	rn_cm_id_destroy(id);
	return 0;
}

static int bind_ip(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_bind_ip *cmd = body;
	struct sockaddr_storage sa = { 0 };
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	memcpy(&sa, &cmd->addr, sizeof(cmd->addr));
	return rn_cm_bind(id, (struct sockaddr *)&sa);
}

static int resolve_ip(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_resolve_ip *cmd = body;
	struct sockaddr_storage src = { 0 }, dst = { 0 };
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	memcpy(&src, &cmd->src_addr, sizeof(cmd->src_addr));
	memcpy(&dst, &cmd->dst_addr, sizeof(cmd->dst_addr));
	return rn_cm_resolve_addr(id, (struct sockaddr *)&src,
				  (struct sockaddr *)&dst);
}

static int resolve_route(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_resolve_route *cmd = body;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	if (id->state != RN_CM_ADDR_RESOLVED &&
	    id->state != RN_CM_ROUTE_RESOLVED)
		return EINVAL;
	if (id->loopback)
		return ENODEV; /* no netdev of the port leads there */
	id->state = RN_CM_ROUTE_RESOLVED;
	rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_ROUTE_RESOLVED, 0));
	return 0;
}

static bool routed(const struct rn_cm_id *id)
{
	return id->state >= RN_CM_ROUTE_RESOLVED && id->state != RN_CM_LISTEN;
}

static void path_rec(const struct rn_cm_id *id, struct ib_user_path_rec *p)
{
	const struct rn_device *dev = id->cm->dev;

	memcpy(p->sgid, dev->port.gids[id->gid_index].raw, 16);
	memcpy(p->dgid, id->dgid, 16);
	p->reversible = 1;
	p->mtu = dev->port.active_mtu;
	p->pkey = htons(0xffff);
	p->hop_limit = id->hop_limit;
	p->traffic_class = id->tos;
	p->numb_path = 1;
	p->mtu_selector = IB_SELECTOR_EQ;
	p->rate_selector = IB_SELECTOR_EQ;
	p->rate = IB_RATE_10_GBPS;
	p->packet_life_time_selector = IB_SELECTOR_EQ;
	p->packet_life_time = PATH_PACKET_LIFE_TIME;
}

static int query_route(struct rn_cm_channel *ch, const void *body,
		       uint8_t *resp, uint32_t *len)
{
	const struct rdma_ucm_query *cmd = body;
	struct rdma_ucm_query_route_resp *r = (void *)resp;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	memset(r, 0, sizeof(*r));
	memcpy(&r->src_addr, &id->src,
	       rn_cm_addr_len((const void *)&id->src));
	memcpy(&r->dst_addr, &id->dst,
	       rn_cm_addr_len((const void *)&id->dst));
	r->ibdev_index = UINT32_MAX; /* librdmacm then matches the GUID */
	if (id->on_device) {
		r->node_guid = id->cm->dev->guid;
		r->port_num = 1;
		if (routed(id)) {
			r->num_paths = 1;
			path_rec(id, &r->ib_route[0]);
		} else {
			/* Before the route: the GIDs and P_Key alone. */
			memcpy(r->ib_route[0].sgid,
			       id->cm->dev->port.gids[id->gid_index].raw, 16);
			memcpy(r->ib_route[0].dgid, id->dgid, 16);
			r->ib_route[0].pkey = htons(0xffff);
		}
	}
	*len = sizeof(*r);
	return 0;
}

static uint32_t backlog_of(uint32_t asked)
{
	return asked > 0 && asked < RN_CM_MAX_BACKLOG ? asked :
							 RN_CM_MAX_BACKLOG;
}

static int listen_id(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_listen *cmd = body;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	if (id->state == RN_CM_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		err = rn_cm_bind(id, (struct sockaddr *)&any);
		if (err)
			return err;
	}
	if (id->state == RN_CM_LISTEN) {
		id->backlog = backlog_of(cmd->backlog);
		return 0;
	}
	if (id->state != RN_CM_BOUND)
		return EINVAL;
	/* Listening takes the port alone, reuseaddr or not. */
	id->state = RN_CM_LISTEN;
	if (rn_cm_find_listener(id->cm, id->ps, (void *)&id->src) != id) {
		id->state = RN_CM_BOUND;
		return EADDRINUSE;
	}
	id->backlog = backlog_of(cmd->backlog);
	rn_dbg("cm: id %u listens on port %u\n", id->handle,
	       rn_cm_addr_port((const void *)&id->src));
	return 0;
}

static int connect_id(struct rn_cm_channel *ch, const void *body, size_t in)
{
	const struct rdma_ucm_connect *cmd = body;
	struct rn_cm_id *id;
	int err;

	if (in < offsetof(struct rdma_ucm_connect, reserved) + 4 ||
	    !cmd->conn_param.valid)
		return EINVAL;
	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	return rn_cm_connect(id, &cmd->conn_param);
}

static int accept_id(struct rn_cm_channel *ch, const void *body, size_t in)
{
	const struct rdma_ucm_accept *cmd = body;
	struct rn_cm_id *id;
	int err;

	if (in < offsetof(struct rdma_ucm_accept, reserved) + 4)
		return EINVAL;
	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	if (!cmd->conn_param.valid) {
		/* The active side after CONNECT_RESPONSE: the RTU. */
		if (id->state != RN_CM_REP_RCVD)
			return EINVAL;
		rn_cm_established(id);
		return 0;
	}
	if (id->state != RN_CM_REQ_RCVD)
		return EINVAL;
	id->uid = cmd->uid;
	return rn_cm_accept_conn(id, &cmd->conn_param);
}

static int reject_id(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_reject *cmd = body;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	/* Reason 0: librdmacm's rdma_reject, consumer-defined. */
	return rn_cm_reject(id, cmd->private_data, cmd->private_data_len,
			    cmd->reason ?: RN_CM_REJ_CONSUMER_DEFINED);
}

static int disconnect_id(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_disconnect *cmd = body;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	return rn_cm_disconnect(id);
}

/* The attributes cm.c@6.1 gives for each transition (docs/rdma_cm.md). */
static int init_qp_attr(struct rn_cm_channel *ch, const void *body,
			uint8_t *resp, uint32_t *len)
{
	const struct rdma_ucm_init_qp_attr *cmd = body;
	struct ib_uverbs_qp_attr *a = (void *)resp;
	struct rn_cm_id *id;
	bool exchanged;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	if (!id->on_device)
		return EINVAL;
	exchanged = id->state >= RN_CM_REQ_SENT && id->state != RN_CM_LISTEN &&
		    id->state != RN_CM_REQ_SENT;
	memset(a, 0, sizeof(*a));
	a->qp_state = cmd->qp_state;
	switch (cmd->qp_state) {
	case IBV_QPS_INIT:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->port_num = 1;
		if (id->qp_type == IBV_QPT_UD) {
			a->qp_attr_mask |= IBV_QP_QKEY;
			a->qkey = RN_CM_UD_QKEY;
		} else {
			a->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
			if (exchanged) {
				a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
				if (id->responder_resources)
					a->qp_access_flags |=
						IBV_ACCESS_REMOTE_READ |
						IBV_ACCESS_REMOTE_ATOMIC;
			}
		}
		break;
	case IBV_QPS_RTR:
		if (id->qp_type == IBV_QPT_UD) {
			a->qp_attr_mask = IBV_QP_STATE;
			break;
		}
		if (!exchanged)
			return EINVAL;
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER;
		a->path_mtu = id->mtu;
		a->dest_qp_num = id->remote_qpn;
		a->rq_psn = id->local_psn;
		a->max_dest_rd_atomic = id->responder_resources;
		memcpy(a->ah_attr.grh.dgid, id->dgid, 16);
		a->ah_attr.grh.sgid_index = (uint8_t)id->gid_index;
		a->ah_attr.grh.hop_limit = id->hop_limit;
		a->ah_attr.grh.traffic_class = id->tos;
		a->ah_attr.is_global = 1;
		a->ah_attr.port_num = 1;
		break;
	case IBV_QPS_RTS:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		if (id->qp_type == IBV_QPT_UD)
			break;
		if (!exchanged)
			return EINVAL;
		a->qp_attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		a->sq_psn = id->remote_psn;
		a->timeout = id->ack_timeout ?: id->local_ack_timeout;
		a->retry_cnt = id->retry_count;
		a->rnr_retry = id->rnr_retry;
		a->max_rd_atomic = id->initiator_depth;
		break;
	default:
		return EINVAL;
	}
	*len = sizeof(*a);
	return 0;
}

static int set_option(struct rn_cm_channel *ch, const void *body, size_t in,
		      const uint8_t *optval, size_t optlen)
{
	const struct rdma_ucm_set_option *cmd = body;
	struct rn_cm_id *id;
	int err, value = 0;

	(void)in;
	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	if (cmd->optlen != optlen)
		return EINVAL;
	if (cmd->level != RDMA_OPTION_ID)
		return ENOSYS;
	switch (cmd->optname) {
	case RDMA_OPTION_ID_TOS:
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (optlen != 1)
			return EINVAL;
		if (cmd->optname == RDMA_OPTION_ID_TOS)
			id->tos = optval[0];
		else
			id->ack_timeout = optval[0] > 31 ? 31 : optval[0];
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (optlen != sizeof(int))
			return EINVAL;
		memcpy(&value, optval, sizeof(value));
		if (id->state != RN_CM_IDLE)
			return EINVAL;
		if (cmd->optname == RDMA_OPTION_ID_REUSEADDR)
			id->reuseaddr = value != 0;
		else
			id->afonly = value != 0;
		return 0;
	default:
		return ENOSYS;
	}
}

static int notify(struct rn_cm_channel *ch, const void *body)
{
	const struct rdma_ucm_notify *cmd = body;
	struct rn_cm_id *id;
	int err;

	id = id_of(ch, cmd->id, &err);
	if (!id)
		return err;
	/* A QP that received before the RTU: the connection is up. */
	if (cmd->event == IBV_EVENT_COMM_EST && id->state == RN_CM_REP_SENT)
		rn_cm_established(id);
	return 0;
}

static int migrate_id(struct rn_cm_channel *ch, const void *body,
		      const uint8_t *extra, size_t extra_len, uint8_t *resp,
		      uint32_t *len)
{
	const struct rdma_ucm_migrate_id *cmd = body;
	struct rdma_ucm_migrate_resp *r = (void *)resp;
	struct rn_cm_channel *from;
	struct rn_cm_id *id;
	uint64_t token;
	int err;

	if (extra_len != sizeof(token))
		return EINVAL;
	memcpy(&token, extra, sizeof(token));
	from = rn_cm_channel_of(ch->cm, token);
	if (!from)
		return EBADF;
	id = id_of(from, cmd->id, &err);
	if (!id)
		return err;
	if (from != ch) {
		rn_cm_events_of(id, ch);
		rn_list_del(&id->ch_link);
		rn_list_add_tail(&ch->ids, &id->ch_link);
		id->ch = ch;
	}
	r->events_reported = id->events_reported;
	*len = sizeof(*r);
	return 0;
}

/* The size of each command's struct: shorter input reads as zeros. */
static size_t cmd_size(uint32_t cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return sizeof(struct rdma_ucm_create_id);
	case RDMA_USER_CM_CMD_DESTROY_ID:
		return sizeof(struct rdma_ucm_destroy_id);
	case RDMA_USER_CM_CMD_BIND_IP:
		return sizeof(struct rdma_ucm_bind_ip);
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		return sizeof(struct rdma_ucm_resolve_ip);
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		return sizeof(struct rdma_ucm_resolve_route);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return sizeof(struct rdma_ucm_query);
	case RDMA_USER_CM_CMD_CONNECT:
		return sizeof(struct rdma_ucm_connect);
	case RDMA_USER_CM_CMD_LISTEN:
		return sizeof(struct rdma_ucm_listen);
	case RDMA_USER_CM_CMD_ACCEPT:
		return sizeof(struct rdma_ucm_accept);
	case RDMA_USER_CM_CMD_REJECT:
		return sizeof(struct rdma_ucm_reject);
	case RDMA_USER_CM_CMD_DISCONNECT:
		return sizeof(struct rdma_ucm_disconnect);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return sizeof(struct rdma_ucm_init_qp_attr);
	case RDMA_USER_CM_CMD_SET_OPTION:
		return sizeof(struct rdma_ucm_set_option);
	case RDMA_USER_CM_CMD_NOTIFY:
		return sizeof(struct rdma_ucm_notify);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return sizeof(struct rdma_ucm_migrate_id);
	default:
		return 0;
	}
}

/* Bytes of the response the command needs room for, at least. */
static size_t resp_size(uint32_t cmd)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return sizeof(struct rdma_ucm_create_id_resp);
	case RDMA_USER_CM_CMD_DESTROY_ID:
		return sizeof(struct rdma_ucm_destroy_id_resp);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return sizeof(struct rdma_ucm_query_route_resp);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return sizeof(struct ib_uverbs_qp_attr);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return sizeof(struct rdma_ucm_migrate_resp);
	default:
		return 0;
	}
}

int rn_cm_command(struct rn_cm_channel *ch, const uint8_t *msg, size_t len,
		  uint8_t *resp, uint32_t *resp_len)
{
	const struct rdma_ucm_cmd_hdr *hdr = (const void *)msg;
	union {
		struct rdma_ucm_accept accept; /* the largest */
		struct rdma_ucm_reject reject;
		struct rdma_ucm_resolve_ip resolve_ip;
		uint8_t bytes[1];
	} cmd;
	size_t size = cmd_size(hdr->cmd), in = hdr->in;
	const uint8_t *extra = msg + sizeof(*hdr) + in;
	size_t extra_len;

	if (sizeof(*hdr) + in > len)
		return EINVAL;
	extra_len = len - sizeof(*hdr) - in;
	if (!size)
		return ENOSYS; /* not offered: see the comment on top */
	if (hdr->out < resp_size(hdr->cmd))
		return ENOSPC;
	memset(&cmd, 0, sizeof(cmd));
	memcpy(cmd.bytes, msg + sizeof(*hdr), in < size ? in : size);
	if (extra_len && hdr->cmd != RDMA_USER_CM_CMD_SET_OPTION &&
	    hdr->cmd != RDMA_USER_CM_CMD_MIGRATE_ID)
		return EINVAL;

	switch (hdr->cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:
		return create_id(ch, &cmd, resp, resp_len);
	case RDMA_USER_CM_CMD_DESTROY_ID:
		return destroy_id(ch, &cmd, resp, resp_len);
	case RDMA_USER_CM_CMD_BIND_IP:
		return bind_ip(ch, &cmd);
	case RDMA_USER_CM_CMD_RESOLVE_IP:
		return resolve_ip(ch, &cmd);
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE:
		return resolve_route(ch, &cmd);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:
		return query_route(ch, &cmd, resp, resp_len);
	case RDMA_USER_CM_CMD_CONNECT:
		return connect_id(ch, &cmd, in);
	case RDMA_USER_CM_CMD_LISTEN:
		return listen_id(ch, &cmd);
	case RDMA_USER_CM_CMD_ACCEPT:
		return accept_id(ch, &cmd, in);
	case RDMA_USER_CM_CMD_REJECT:
		return reject_id(ch, &cmd);
	case RDMA_USER_CM_CMD_DISCONNECT:
		return disconnect_id(ch, &cmd);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:
		return init_qp_attr(ch, &cmd, resp, resp_len);
	case RDMA_USER_CM_CMD_SET_OPTION:
		if (extra_len > RN_CM_OPTVAL_MAX)
			return EINVAL;
		return set_option(ch, &cmd, in, extra, extra_len);
	case RDMA_USER_CM_CMD_NOTIFY:
		return notify(ch, &cmd);
	case RDMA_USER_CM_CMD_MIGRATE_ID:
		return migrate_id(ch, &cmd, extra, extra_len, resp, resp_len);
	default:
		return ENOSYS;
	}
}
