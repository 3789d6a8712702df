// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The IB CM protocol as Linux's rdma_cm speaks it on RoCEv2 (docs/rdma_cm.md,
 * "On the wire"): REQ / REP / RTU to connect, REJ to refuse, MRA to ask for
 * patience, DREQ / DREP to disconnect, SIDR REQ / REP to resolve a UD
 * service; each a 256-byte MAD in a UD datagram from QP1 to QP1, Q_Key
 * 0x80010000.
 * Requests are resent on Linux's timers until answered; a message from the
 * network is checked against the id it names (comm ID, state, sender)
 * before it changes anything, and an unknown one costs no memory: only a
 * REQ of a listener's port space makes an id, within the listener's
 * backlog and the device's limit on ids.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "cm/cm.h"
#include "cm/mad.h"
#include "wire/wire.h"

/* rdma_cm's constants (cma.c@6.1) */
#define CMA_CM_RESPONSE_TIMEOUT 20
#define CMA_MAX_CM_RETRIES 15
#define CMA_CM_MRA_SETTING 24
#define PATH_PACKET_LIFE_TIME 18
/* Our local_ca_ack_delay, as ibv_query_device reports it. */
#define CA_ACK_DELAY 0
#define IB_RATE_10_GBPS 3
#define SIDR_UNSUPPORTED 1

#define COMM_ID_HANDLE_MASK (RN_CM_MAX_IDS - 1)
_Static_assert((RN_CM_MAX_IDS & (RN_CM_MAX_IDS - 1)) == 0,
	       "comm IDs keep the handle in their low bits");

/* 4.096 us * 2^t, in ms, as cm.c rounds it (cm_convert_to_ms). */
static uint64_t ms_of(unsigned int t)
{
	return t < 8 ? 1 : 1ull << (t - 8);
}

/* The QP's ACK timeout from the peer's ACK delay and the path's life. */
static uint8_t ack_timeout(uint8_t ca_ack_delay, uint8_t packet_life)
{
	int t = packet_life + 1;

	if (t >= ca_ack_delay)
		t += ca_ack_delay >= t - 1;
	else
		t = ca_ack_delay + (t >= ca_ack_delay - 1);
	return t > 31 ? 31 : (uint8_t)t;
}

static uint32_t random24(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)getpid() * 2654435761u;
	return v & 0xffffff;
}

/* ---- sending ---------------------------------------------------------- */

static void gsi_send(struct rn_cm *cm, int gid_index, const uint8_t *dgid,
		     const uint8_t *mad)
{
	if (rn_log_debug())
		rn_dbg("cm: MAD %#x out, comm IDs %#x %#x\n",
		       (unsigned int)rn_mad_get(mad, 16, 2),
		       (uint32_t)rn_mad_get(mad, RN_MAD_HDR_LEN, 4),
		       (uint32_t)rn_mad_get(mad, RN_MAD_HDR_LEN + 4, 4));
	rn_wire_gsi_send(cm->dev, gid_index, dgid, 0, 0, 1, RN_GSI_QKEY,
			 mad, RN_CM_MAD_LEN);
}

static void send_mad(struct rn_cm_id *id)
{
	gsi_send(id->cm, id->gid_index, id->dgid, id->mad);
}

/* Send id->mad, and again every 'ms' until answered, 'retries' times. */
static void send_resent(struct rn_cm_id *id, uint64_t ms, uint32_t retries)
{
	send_mad(id);
	id->resend_ns = ms * 1000000ull;
	id->resends_left = retries;
	rn_timer_arm(&id->cm->dev->timers, &id->timer,
		     rn_now_ns() + id->resend_ns);
}

static void stop_resending(struct rn_cm_id *id)
{
	rn_timer_cancel(&id->cm->dev->timers, &id->timer);
}

static uint64_t new_tid(const struct rn_cm_id *id)
{
	return (uint64_t)id->cm->hi_tid << 32 | id->local_comm_id;
}

static void new_comm_id(struct rn_cm_id *id)
{
	struct rn_cm *cm = id->cm;

	do
		id->local_comm_id = ++cm->comm_gen << 12 | id->handle;
	while (!id->local_comm_id);
}

/* The message area of a fresh MAD in 'mad'. */
static uint8_t *mad_start(uint8_t *mad, uint16_t attr, uint64_t tid)
{
	rn_mad_hdr_build(mad, attr, tid, 0);
	memset(mad + RN_MAD_HDR_LEN, 0, RN_MAD_DATA_LEN);
	return mad + RN_MAD_HDR_LEN;
}

static void put_ids(uint8_t *d, uint32_t local, uint32_t remote)
{
	rn_mad_put(d, 0, 4, local);
	rn_mad_put(d, 4, 4, remote);
}

static uint64_t service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

static void cma_hdr_of(const struct rn_cm_id *id, uint8_t *pd)
{
	struct rn_cma_hdr h = {
		.ip_version = id->src.ss_family == AF_INET ? 4 : 6,
		.port = rn_cm_addr_port((const void *)&id->src),
	};
	uint8_t gid[16];

	rn_gid_from_sockaddr(gid, (const void *)&id->src);
	memcpy(h.ip_version == 4 ? h.src + 12 : h.src,
	       h.ip_version == 4 ? gid + 12 : gid, h.ip_version == 4 ? 4 : 16);
	rn_gid_from_sockaddr(gid, (const void *)&id->dst);
	memcpy(h.ip_version == 4 ? h.dst + 12 : h.dst,
	       h.ip_version == 4 ? gid + 12 : gid, h.ip_version == 4 ? 4 : 16);
	rn_cma_hdr_build(pd, &h);
}

/* A REJ answering a message that has no id of ours (yet). */
static void send_rej(struct rn_cm *cm, int gid_index, const uint8_t *dgid,
		     uint64_t tid, uint32_t local, uint32_t remote,
		     unsigned int msg, uint16_t reason, const uint8_t *ari,
		     uint8_t ari_len, const uint8_t *pd, uint8_t pd_len)
{
	uint8_t mad[RN_CM_MAD_LEN];
	uint8_t *d = mad_start(mad, RN_CM_ATTR_REJ, tid);

	put_ids(d, local, remote);
	d[8] = (uint8_t)(msg << 6);
	d[9] = (uint8_t)(ari_len << 1);
	rn_mad_put(d, 10, 2, reason);
	if (ari_len) /* NULL with no length is not memcpy's to take */
		memcpy(d + 12, ari, ari_len);
	if (pd_len)
		memcpy(d + RN_CM_REJ_PD, pd, pd_len);
	gsi_send(cm, gid_index, dgid, mad);
}

static void send_mra(struct rn_cm_id *id, unsigned int msg)
{
	uint8_t mad[RN_CM_MAD_LEN];
	uint8_t *d = mad_start(mad, RN_CM_ATTR_MRA, id->tid);

	put_ids(d, id->local_comm_id, id->remote_comm_id);
	d[8] = (uint8_t)(msg << 6);
	d[9] = CMA_CM_MRA_SETTING << 3;
	gsi_send(id->cm, id->gid_index, id->dgid, mad);
}

static void send_drep(struct rn_cm *cm, int gid_index, const uint8_t *dgid,
		      uint64_t tid, uint32_t local, uint32_t remote)
{
	uint8_t mad[RN_CM_MAD_LEN];
	uint8_t *d = mad_start(mad, RN_CM_ATTR_DREP, tid);

	put_ids(d, local, remote);
	gsi_send(cm, gid_index, dgid, mad);
}

static void send_sidr_rep(struct rn_cm_id *id, uint8_t status, uint32_t qpn,
			  uint32_t qkey, const uint8_t *pd, uint8_t pd_len)
{
	uint8_t mad[RN_CM_MAD_LEN];
	uint8_t *d = mad_start(mad, RN_CM_ATTR_SIDR_REP, id->tid);

	rn_mad_put(d, 0, 4, id->remote_comm_id);
	d[4] = status;
	rn_mad_put(d, 8, 3, qpn);
	rn_mad_put(d, 12, 8,
		   service_id(id->ps, rn_cm_addr_port((const void *)&id->src)));
	rn_mad_put(d, 20, 4, qkey);
	if (pd_len)
		memcpy(d + RN_CM_SIDR_REP_PD, pd, pd_len);
	gsi_send(id->cm, id->gid_index, id->dgid, mad);
}

/* ---- events ----------------------------------------------------------- */

static struct rn_cm_event *conn_event(struct rn_cm_id *to, uint32_t event,
				      int32_t status,
				      const struct rn_cm_id *id,
				      const uint8_t *pd, uint8_t pd_len,
				      uint8_t flow_control)
{
	struct rn_cm_event *ev = rn_cm_event(to, event, status);
	struct rdma_ucm_conn_param *c;

	if (!ev)
		return NULL;
	c = &ev->resp.param.conn;
	c->qp_num = id->remote_qpn;
	memcpy(c->private_data, pd, pd_len);
	c->private_data_len = pd_len;
	c->srq = id->srq;
	c->responder_resources = id->responder_resources;
	c->initiator_depth = id->initiator_depth;
	c->flow_control = flow_control;
	c->retry_count = id->retry_count;
	c->rnr_retry_count = id->rnr_retry;
	return ev;
}

static void timewait(struct rn_cm_id *id)
{
	id->state = RN_CM_TIMEWAIT;
	rn_timer_arm(&id->cm->dev->timers, &id->timer,
		     rn_now_ns() + ms_of(id->local_ack_timeout) * 1000000ull);
}

static void cm_timer(struct rn_timer *t, uint64_t now)
{
	struct rn_cm_id *id = rn_container_of(t, struct rn_cm_id, timer);

	if (id->state == RN_CM_TIMEWAIT) {
		id->state = RN_CM_DISCONNECTED;
		rn_cm_event_post(id, rn_cm_event(id,
						 RN_CM_EVENT_TIMEWAIT_EXIT, 0));
		return;
	}
	if (id->resends_left) {
		id->resends_left--;
		send_mad(id);
		rn_timer_arm(&id->cm->dev->timers, &id->timer,
			     now + id->resend_ns);
		return;
	}
	switch (id->state) {
	case RN_CM_REQ_SENT:
	case RN_CM_REP_SENT:
		id->state = RN_CM_DISCONNECTED;
		rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_UNREACHABLE,
						 -ETIMEDOUT));
		break;
	case RN_CM_DREQ_SENT:
		timewait(id);
		rn_cm_event_post(id, rn_cm_event(id,
						 RN_CM_EVENT_DISCONNECTED,
						 -ETIMEDOUT));
		break;
	default:
		break;
	}
}

void rn_cm_id_init(struct rn_cm_id *id)
{
	rn_timer_init(&id->timer, cm_timer);
	/*
	 * Chosen now, as cma.c does: librdmacm takes the passive side's QP
	 * to RTR (INIT_QP_ATTR) before its ACCEPT sends the REP with it.
	 */
	id->local_psn = random24();
}

/* ---- what librdmacm asks for ------------------------------------------ */

int rn_cm_connect(struct rn_cm_id *id, const struct rdma_ucm_conn_param *p)
{
	struct rn_device *dev = id->cm->dev;
	uint16_t dport = rn_cm_addr_port((const void *)&id->dst);
	uint8_t *d;

	if (id->state != RN_CM_ROUTE_RESOLVED)
		return EINVAL;
	new_comm_id(id);
	id->tid = new_tid(id);
	if (id->qp_type == IBV_QPT_UD) {
		if (p->private_data_len > RN_CM_SIDR_REQ_PD_LEN - RN_CMA_HDR_LEN)
			return EINVAL;
		d = mad_start(id->mad, RN_CM_ATTR_SIDR_REQ, id->tid);
		rn_mad_put(d, 0, 4, id->local_comm_id);
		rn_mad_put(d, 4, 2, 0xffff);
		rn_mad_put(d, 8, 8, service_id(id->ps, dport));
		cma_hdr_of(id, d + RN_CM_SIDR_REQ_PD);
		memcpy(d + RN_CM_SIDR_REQ_PD + RN_CMA_HDR_LEN, p->private_data,
		       p->private_data_len);
		id->state = RN_CM_REQ_SENT;
		send_resent(id, ms_of(CMA_CM_RESPONSE_TIMEOUT),
			    CMA_MAX_CM_RETRIES);
		return 0;
	}
	if (p->private_data_len > RN_CM_REQ_PD_LEN - RN_CMA_HDR_LEN)
		return EINVAL;
	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->retry_count = p->retry_count > 7 ? 7 : p->retry_count;
	id->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;
	id->srq = p->srq ? 1 : 0;
	id->mtu = dev->port.active_mtu;

	d = mad_start(id->mad, RN_CM_ATTR_REQ, id->tid);
	rn_mad_put(d, 0, 4, id->local_comm_id);
	rn_mad_put(d, 8, 8, service_id(id->ps, dport));
	memcpy(d + 16, &dev->guid, 8);
	rn_mad_put(d, 32, 3, id->local_qpn);
	d[35] = id->responder_resources;
	d[39] = id->initiator_depth;
	d[43] = CMA_CM_RESPONSE_TIMEOUT << 3 | (p->flow_control & 1);
	rn_mad_put(d, 44, 3, id->local_psn);
	d[47] = (uint8_t)(CMA_CM_RESPONSE_TIMEOUT << 3 | id->retry_count);
	rn_mad_put(d, 48, 2, 0xffff);
	d[50] = (uint8_t)(id->mtu << 4 | id->rnr_retry);
	d[51] = (uint8_t)(CMA_MAX_CM_RETRIES << 4 | id->srq << 3);
	/* Routed (hop limit > 1): permissive LIDs, not subnet-local. */
	rn_mad_put(d, 52, 2, 0xffff);
	rn_mad_put(d, 54, 2, 0xffff);
	memcpy(d + 56, dev->port.gids[id->gid_index].raw, 16);
	memcpy(d + 72, id->dgid, 16);
	d[91] = IB_RATE_10_GBPS;
	d[92] = id->tos;
	d[93] = id->hop_limit;
	d[95] = (uint8_t)(ack_timeout(CA_ACK_DELAY, PATH_PACKET_LIFE_TIME) << 3);
	cma_hdr_of(id, d + RN_CM_REQ_PD);
	memcpy(d + RN_CM_REQ_PD + RN_CMA_HDR_LEN, p->private_data,
	       p->private_data_len);
	id->state = RN_CM_REQ_SENT;
	send_resent(id, 2 * ms_of(PATH_PACKET_LIFE_TIME) +
				ms_of(CMA_CM_RESPONSE_TIMEOUT),
		    CMA_MAX_CM_RETRIES);
	return 0;
}

int rn_cm_accept_conn(struct rn_cm_id *id, const struct rdma_ucm_conn_param *p)
{
	struct rn_device *dev = id->cm->dev;
	uint8_t *d;

	if (id->qp_type == IBV_QPT_UD) {
		if (p->private_data_len > RN_CM_SIDR_REP_PD_LEN)
			return EINVAL;
		send_sidr_rep(id, RN_CM_SIDR_SUCCESS, p->qp_num & 0xffffff,
			      p->qkey ?: RN_CM_UD_QKEY, p->private_data,
			      p->private_data_len);
		id->state = RN_CM_ESTABLISHED;
		return 0;
	}
	if (p->private_data_len > RN_CM_REP_PD_LEN)
		return EINVAL;
	new_comm_id(id);
	id->local_qpn = p->qp_num & 0xffffff;
	id->responder_resources = p->responder_resources;
	id->initiator_depth = p->initiator_depth;
	id->rnr_retry = p->rnr_retry_count > 7 ? 7 : p->rnr_retry_count;

	d = mad_start(id->mad, RN_CM_ATTR_REP, id->tid);
	put_ids(d, id->local_comm_id, id->remote_comm_id);
	rn_mad_put(d, 12, 3, id->local_qpn);
	rn_mad_put(d, 20, 3, id->local_psn);
	d[24] = id->responder_resources;
	d[25] = id->initiator_depth;
	d[26] = CA_ACK_DELAY << 3 | (p->flow_control & 1);
	d[27] = (uint8_t)(id->rnr_retry << 5 | (p->srq ? 1 : 0) << 4);
	memcpy(d + 28, &dev->guid, 8);
	memcpy(d + RN_CM_REP_PD, p->private_data, p->private_data_len);
	id->state = RN_CM_REP_SENT;
	send_resent(id, id->resend_ns / 1000000ull, id->resends_left);
	return 0;
}

void rn_cm_established(struct rn_cm_id *id)
{
	uint8_t *d;

	if (id->state == RN_CM_REP_RCVD) {
		/* Active: the RTU, kept to answer a repeated REP. */
		d = mad_start(id->mad, RN_CM_ATTR_RTU, id->tid);
		put_ids(d, id->local_comm_id, id->remote_comm_id);
		send_mad(id);
		id->state = RN_CM_ESTABLISHED;
		return;
	}
	stop_resending(id);
	id->state = RN_CM_ESTABLISHED;
	rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_ESTABLISHED, 0));
}

int rn_cm_reject(struct rn_cm_id *id, const uint8_t *pd, uint8_t pd_len,
		 uint16_t reason)
{
	if (id->qp_type == IBV_QPT_UD) {
		if (id->state != RN_CM_REQ_RCVD)
			return EINVAL;
		if (pd_len > RN_CM_SIDR_REP_PD_LEN)
			return EINVAL;
		send_sidr_rep(id, RN_CM_SIDR_REJECT, 0, 0, pd, pd_len);
		id->state = RN_CM_DISCONNECTED;
		return 0;
	}
	if (pd_len > RN_CM_REJ_PD_LEN)
		return EINVAL;
	switch (id->state) {
	case RN_CM_REQ_RCVD:
		send_rej(id->cm, id->gid_index, id->dgid, id->tid, 0,
			 id->remote_comm_id, RN_CM_MSG_REQ, reason, NULL, 0,
			 pd, pd_len);
		break;
	case RN_CM_REP_RCVD:
		send_rej(id->cm, id->gid_index, id->dgid, id->tid,
			 id->local_comm_id, id->remote_comm_id, RN_CM_MSG_REP,
			 reason, NULL, 0, pd, pd_len);
		break;
	default:
		return EINVAL;
	}
	id->state = RN_CM_DISCONNECTED;
	return 0;
}

int rn_cm_disconnect(struct rn_cm_id *id)
{
	uint8_t *d;

	switch (id->state) {
	case RN_CM_ESTABLISHED:
		if (id->qp_type == IBV_QPT_UD)
			return EINVAL;
		id->tid = new_tid(id);
		d = mad_start(id->mad, RN_CM_ATTR_DREQ, id->tid);
		put_ids(d, id->local_comm_id, id->remote_comm_id);
		rn_mad_put(d, 8, 3, id->remote_qpn);
		id->state = RN_CM_DREQ_SENT;
		send_resent(id, 2 * ms_of(PATH_PACKET_LIFE_TIME) +
					ms_of(CMA_CM_RESPONSE_TIMEOUT),
			    CMA_MAX_CM_RETRIES);
		return 0;
	case RN_CM_DREQ_RCVD:
		send_drep(id->cm, id->gid_index, id->dgid, id->tid,
			  id->local_comm_id, id->remote_comm_id);
		timewait(id);
		return 0;
	default:
		return EINVAL;
	}
}

void rn_cm_leave(struct rn_cm_id *id)
{
	uint8_t guid[8];

	stop_resending(id);
	memcpy(guid, &id->cm->dev->guid, sizeof(guid));
	switch (id->state) {
	case RN_CM_REQ_SENT:
		if (id->qp_type != IBV_QPT_UD)
			send_rej(id->cm, id->gid_index, id->dgid, id->tid,
				 id->local_comm_id, 0, RN_CM_MSG_REQ,
				 RN_CM_REJ_TIMEOUT, guid, sizeof(guid), NULL, 0);
		break;
	case RN_CM_REQ_RCVD:
	case RN_CM_REP_RCVD:
		rn_cm_reject(id, NULL, 0, RN_CM_REJ_CONSUMER_DEFINED);
		break;
	case RN_CM_REP_SENT:
		send_rej(id->cm, id->gid_index, id->dgid, id->tid,
			 id->local_comm_id, id->remote_comm_id, RN_CM_MSG_OTHER,
			 RN_CM_REJ_CONSUMER_DEFINED, NULL, 0, NULL, 0);
		break;
	case RN_CM_ESTABLISHED:
		/* Once: nobody is left to resend it. */
		if (!rn_cm_disconnect(id))
			stop_resending(id);
		break;
	case RN_CM_DREQ_RCVD:
		rn_cm_disconnect(id);
		stop_resending(id);
		break;
	default:
		break;
	}
	id->state = RN_CM_DISCONNECTED;
}

/* ---- receiving -------------------------------------------------------- */

struct mad_in {
	struct rn_cm *cm;
	int gid_index; /* ours, where it arrived */
	const uint8_t *sgid; /* the sender */
	const uint8_t *mad;
	const uint8_t *d; /* the message */
	uint64_t tid;
};

/* The id a message names by our comm ID, if it came from that id's peer. */
static struct rn_cm_id *addressed(const struct mad_in *in, unsigned int off)
{
	uint32_t comm = (uint32_t)rn_mad_get(in->d, off, 4);
	struct rn_cm_id *id =
		rn_table_get(&in->cm->ids, comm & COMM_ID_HANDLE_MASK);

	if (!id || id->local_comm_id != comm || !id->on_device ||
	    memcmp(id->dgid, in->sgid, 16))
		return NULL;
	return id;
}

static void sockaddr_of(const struct rn_cma_hdr *h, uint16_t port,
			const uint8_t *ip, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (h->ip_version == 4) {
		struct sockaddr_in *v4 = (struct sockaddr_in *)ss;

		v4->sin_family = AF_INET;
		memcpy(&v4->sin_addr, ip + 12, 4);
		v4->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;

		v6->sin6_family = AF_INET6;
		memcpy(&v6->sin6_addr, ip, 16);
		v6->sin6_port = htons(port);
	}
}

/*
 * A REQ or SIDR REQ for a listener: its new id, or NULL after answering
 * with the refusal Linux gives.  The REQ must be addressed, by its rdma_cm
 * header, to the address it arrived at.
 */
static struct rn_cm_id *new_request(const struct mad_in *in, uint64_t sid,
				    const uint8_t *pd, uint8_t qp_type,
				    struct rn_cma_hdr *h, uint16_t *reason)
{
	struct rn_device *dev = in->cm->dev;
	uint16_t ps = (uint16_t)(sid >> 16), port = (uint16_t)sid;
	struct sockaddr_storage dst, src;
	struct rn_cm_id *l, *id;
	uint8_t dgid[16];

	*reason = RN_CM_REJ_CONSUMER_DEFINED;
	if (!rn_cma_hdr_parse(pd, h))
		return NULL;
	sockaddr_of(h, port, h->dst, &dst);
	rn_gid_from_sockaddr(dgid, (struct sockaddr *)&dst);
	if (memcmp(dgid, dev->port.gids[in->gid_index].raw, 16))
		return NULL;
	l = sid >> 32 ? NULL :
			rn_cm_find_listener(in->cm, ps, (struct sockaddr *)&dst);
	if (!l || l->qp_type != qp_type) {
		*reason = RN_CM_REJ_INVALID_SID;
		return NULL;
	}
	if (l->pending >= l->backlog)
		return NULL;
	id = rn_cm_id_new(l->ch, l->ps, qp_type);
	if (!id)
		return NULL;
	id->hidden = true;
	id->passive = true;
	id->listener = l;
	l->pending++;
	id->state = RN_CM_REQ_RCVD;
	sockaddr_of(h, h->port, h->src, &src);
	memcpy(&id->src, &dst, sizeof(dst));
	memcpy(&id->dst, &src, sizeof(src));
	id->on_device = true;
	id->gid_index = in->gid_index;
	memcpy(id->dgid, in->sgid, 16);
	id->tos = l->tos;
	id->tid = in->tid;
	return id;
}

static struct rn_cm_id *duplicate(const struct mad_in *in, uint32_t comm,
				  uint64_t guid)
{
	uint32_t i;

	for (i = 0; i < in->cm->ids.size; i++) {
		struct rn_cm_id *o = rn_table_get(&in->cm->ids, i);

		if (o && o->remote_comm_id == comm && o->passive &&
		    o->remote_guid == guid && !memcmp(o->dgid, in->sgid, 16))
			return o;
	}
	return NULL;
}

static void req_recv(const struct mad_in *in)
{
	const uint8_t *d = in->d;
	uint32_t comm = (uint32_t)rn_mad_get(d, 0, 4);
	struct rn_device *dev = in->cm->dev;
	uint16_t reason = RN_CM_REJ_CONSUMER_DEFINED;
	struct rn_cma_hdr h;
	struct rn_cm_event *ev;
	struct rn_cm_id *id;
	uint64_t guid;
	uint8_t fc;

	memcpy(&guid, d + 16, 8);
	id = duplicate(in, comm, guid);
	if (id) {
		/* Linux's lazy MRA: sent when the REQ comes again. */
		if (id->state == RN_CM_REQ_RCVD)
			send_mra(id, RN_CM_MSG_REQ);
		else if (id->state == RN_CM_TIMEWAIT)
			send_rej(in->cm, in->gid_index, in->sgid, in->tid,
				 id->local_comm_id, comm, RN_CM_MSG_REQ,
				 RN_CM_REJ_STALE_CONN, NULL, 0, NULL, 0);
		return;
	}
	/* Only RC: rdma_cm makes no UC connections. */
	if (((d[43] >> 1) & 3) != 0 ||
	    !(id = new_request(in, rn_mad_get(d, 8, 8), d + RN_CM_REQ_PD,
			       IBV_QPT_RC, &h, &reason))) {
		send_rej(in->cm, in->gid_index, in->sgid, in->tid, 0, comm,
			 RN_CM_MSG_REQ, reason, NULL, 0, NULL, 0);
		return;
	}
	new_comm_id(id);
	id->remote_comm_id = comm;
	id->remote_guid = guid;
	id->remote_qpn = (uint32_t)rn_mad_get(d, 32, 3);
	id->initiator_depth = d[35]; /* theirs, seen from here */
	id->responder_resources = d[39];
	fc = d[43] & 1;
	id->remote_psn = (uint32_t)rn_mad_get(d, 44, 3);
	id->retry_count = d[47] & 7;
	id->mtu = d[50] >> 4;
	if (id->mtu > dev->port.active_mtu || id->mtu < IBV_MTU_256)
		id->mtu = dev->port.active_mtu;
	id->rnr_retry = d[50] & 7;
	id->srq = (d[51] >> 3) & 1;
	id->tos = d[92];
	id->hop_limit = d[93];
	id->local_ack_timeout = d[95] >> 3;
	/* The REP's resends: the REQ's CM response timeout and retries. */
	id->resend_ns = ms_of(d[47] >> 3) * 1000000ull;
	id->resends_left = d[51] >> 4;
	ev = conn_event(id->listener, RN_CM_EVENT_CONNECT_REQUEST, 0, id,
			d + RN_CM_REQ_PD + RN_CMA_HDR_LEN,
			RN_CM_REQ_PD_LEN - RN_CMA_HDR_LEN, fc);
	if (ev) {
		ev->resp.id = id->handle;
		ev->new_id = id;
		ev->resp.ece.vendor_id = (uint32_t)rn_mad_get(d, 5, 3);
		ev->resp.ece.attr_mod = (uint32_t)rn_mad_get(in->mad, 20, 4);
		rn_cm_event_post(id->listener, ev);
	} else {
		rn_cm_id_destroy(id);
	}
}

static void rep_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);
	const uint8_t *d = in->d;

	if (!id)
		return;
	switch (id->state) {
	case RN_CM_REQ_SENT:
		break;
	case RN_CM_REP_RCVD:
		send_mra(id, RN_CM_MSG_REP);
		return;
	case RN_CM_ESTABLISHED:
		/* Our RTU was lost: id->mad is still the RTU. */
		if (rn_mad_get(id->mad, 16, 2) == RN_CM_ATTR_RTU)
			send_mad(id);
		return;
	default:
		return;
	}
	stop_resending(id);
	id->remote_comm_id = (uint32_t)rn_mad_get(d, 0, 4);
	id->remote_qpn = (uint32_t)rn_mad_get(d, 12, 3);
	id->remote_psn = (uint32_t)rn_mad_get(d, 20, 3);
	id->initiator_depth = d[24];
	id->responder_resources = d[25];
	id->local_ack_timeout = ack_timeout(d[26] >> 3, PATH_PACKET_LIFE_TIME);
	id->rnr_retry = d[27] >> 5;
	id->srq = (d[27] >> 4) & 1;
	memcpy(&id->remote_guid, d + 28, 8);
	id->state = RN_CM_REP_RCVD;
	rn_cm_event_post(id, conn_event(id, RN_CM_EVENT_CONNECT_RESPONSE, 0,
					id, d + RN_CM_REP_PD, RN_CM_REP_PD_LEN,
					d[26] & 1));
}

static void rtu_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);

	if (id && id->state == RN_CM_REP_SENT)
		rn_cm_established(id);
}

static void rej_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);
	const uint8_t *d = in->d;
	uint16_t reason = (uint16_t)rn_mad_get(d, 10, 2);
	struct rn_cm_event *ev;

	if (!id)
		return;
	switch (id->state) {
	case RN_CM_REQ_SENT:
	case RN_CM_REQ_RCVD:
	case RN_CM_REP_SENT:
	case RN_CM_REP_RCVD:
	case RN_CM_ESTABLISHED:
		break;
	default:
		return;
	}
	stop_resending(id);
	id->state = RN_CM_DISCONNECTED;
	ev = conn_event(id, RN_CM_EVENT_REJECTED, reason, id,
			d + RN_CM_REJ_PD, RN_CM_REJ_PD_LEN, 0);
	rn_cm_event_post(id, ev);
}

static void mra_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);
	unsigned int msg = in->d[8] >> 6;
	uint64_t wait;

	if (!id || !((id->state == RN_CM_REQ_SENT && msg == RN_CM_MSG_REQ) ||
		     (id->state == RN_CM_REP_SENT && msg == RN_CM_MSG_REP)))
		return;
	/* The peer needs time: wait for it, then resume resending. */
	wait = (ms_of(in->d[9] >> 3) + ms_of(PATH_PACKET_LIFE_TIME)) * 1000000ull;
	rn_timer_arm(&id->cm->dev->timers, &id->timer, rn_now_ns() + wait);
}

static void dreq_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);
	const uint8_t *d = in->d;
	uint32_t local = (uint32_t)rn_mad_get(d, 4, 4);
	uint32_t remote = (uint32_t)rn_mad_get(d, 0, 4);

	if (id && (uint32_t)rn_mad_get(d, 8, 3) != id->local_qpn)
		return;
	if (!id || id->state == RN_CM_TIMEWAIT ||
	    id->state == RN_CM_DISCONNECTED) {
		/* Gone or going: say so, as cm_issue_drep does. */
		send_drep(in->cm, in->gid_index, in->sgid, in->tid, local,
			  remote);
		return;
	}
	switch (id->state) {
	case RN_CM_ESTABLISHED:
	case RN_CM_REP_SENT:
	case RN_CM_DREQ_SENT:
		break;
	default:
		return;
	}
	stop_resending(id);
	id->tid = in->tid;
	id->state = RN_CM_DREQ_RCVD;
	rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_DISCONNECTED, 0));
}

static void drep_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 4);

	if (!id || id->state != RN_CM_DREQ_SENT)
		return;
	stop_resending(id);
	timewait(id);
	rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_DISCONNECTED, 0));
}

static void sidr_req_recv(const struct mad_in *in)
{
	const uint8_t *d = in->d;
	uint32_t comm = (uint32_t)rn_mad_get(d, 0, 4);
	uint16_t reason = RN_CM_REJ_CONSUMER_DEFINED;
	struct rn_cm_event *ev;
	struct rn_cma_hdr h;
	struct rn_cm_id *id;
	uint32_t i;

	for (i = 0; i < in->cm->ids.size; i++) {
		id = rn_table_get(&in->cm->ids, i);
		if (id && id->qp_type == IBV_QPT_UD && id->passive &&
		    id->remote_comm_id == comm && !memcmp(id->dgid, in->sgid, 16))
			return; /* a repeat: the answer is on its way */
	}
	id = new_request(in, rn_mad_get(d, 8, 8), d + RN_CM_SIDR_REQ_PD,
			 IBV_QPT_UD, &h, &reason);
	if (!id) {
		uint8_t mad[RN_CM_MAD_LEN];
		uint8_t *r = mad_start(mad, RN_CM_ATTR_SIDR_REP, in->tid);

		rn_mad_put(r, 0, 4, comm);
		r[4] = SIDR_UNSUPPORTED;
		rn_mad_put(r, 12, 8, rn_mad_get(d, 8, 8));
		gsi_send(in->cm, in->gid_index, in->sgid, mad);
		return;
	}
	id->remote_comm_id = comm;
	id->hop_limit = 64;
	ev = rn_cm_event(id->listener, RN_CM_EVENT_CONNECT_REQUEST, 0);
	if (!ev) {
		rn_cm_id_destroy(id);
		return;
	}
	ev->resp.id = id->handle;
	ev->new_id = id;
	memcpy(ev->resp.param.ud.private_data,
	       d + RN_CM_SIDR_REQ_PD + RN_CMA_HDR_LEN,
	       RN_CM_SIDR_REQ_PD_LEN - RN_CMA_HDR_LEN);
	ev->resp.param.ud.private_data_len =
		RN_CM_SIDR_REQ_PD_LEN - RN_CMA_HDR_LEN;
	rn_cm_event_post(id->listener, ev);
}

static void sidr_rep_recv(const struct mad_in *in)
{
	struct rn_cm_id *id = addressed(in, 0);
	const uint8_t *d = in->d;
	struct rdma_ucm_ud_param *ud;
	struct rn_cm_event *ev;

	if (!id || id->qp_type != IBV_QPT_UD || id->state != RN_CM_REQ_SENT)
		return;
	stop_resending(id);
	if (d[4] != RN_CM_SIDR_SUCCESS) {
		id->state = RN_CM_DISCONNECTED;
		rn_cm_event_post(id, rn_cm_event(id, RN_CM_EVENT_UNREACHABLE,
						 d[4]));
		return;
	}
	id->state = RN_CM_ESTABLISHED;
	ev = rn_cm_event(id, RN_CM_EVENT_ESTABLISHED, 0);
	if (!ev)
		return;
	ud = &ev->resp.param.ud;
	ud->qp_num = (uint32_t)rn_mad_get(d, 8, 3);
	ud->qkey = (uint32_t)rn_mad_get(d, 20, 4);
	memcpy(ud->ah_attr.grh.dgid, id->dgid, 16);
	ud->ah_attr.grh.sgid_index = (uint8_t)id->gid_index;
	ud->ah_attr.grh.hop_limit = id->hop_limit;
	ud->ah_attr.grh.traffic_class = id->tos;
	ud->ah_attr.is_global = 1;
	ud->ah_attr.port_num = 1;
	memcpy(ud->private_data, d + RN_CM_SIDR_REP_PD, RN_CM_SIDR_REP_PD_LEN);
	ud->private_data_len = RN_CM_SIDR_REP_PD_LEN;
	rn_cm_event_post(id, ev);
}

void rn_cm_mad_recv(struct rn_device *dev, unsigned int gid_index,
		    const uint8_t *sgid, const uint8_t *mad, uint32_t len)
{
	struct mad_in in = {
		.cm = dev->cm,
		.gid_index = (int)gid_index,
		.sgid = sgid,
		.mad = mad,
		.d = mad + RN_MAD_HDR_LEN,
	};
	uint16_t attr;

	if (!in.cm || !rn_mad_hdr_parse(mad, len, &attr, &in.tid))
		return;
	if (rn_log_debug())
		rn_dbg("cm: MAD %#x in, comm IDs %#x %#x\n", attr,
		       (uint32_t)rn_mad_get(in.d, 0, 4),
		       (uint32_t)rn_mad_get(in.d, 4, 4));
	switch (attr) {
	case RN_CM_ATTR_REQ:
		req_recv(&in);
		break;
	case RN_CM_ATTR_REP:
		rep_recv(&in);
		break;
	case RN_CM_ATTR_RTU:
		rtu_recv(&in);
		break;
	case RN_CM_ATTR_REJ:
		rej_recv(&in);
		break;
	case RN_CM_ATTR_MRA:
		mra_recv(&in);
		break;
	case RN_CM_ATTR_DREQ:
		dreq_recv(&in);
		break;
	case RN_CM_ATTR_DREP:
		drep_recv(&in);
		break;
	case RN_CM_ATTR_SIDR_REQ:
		sidr_req_recv(&in);
		break;
	case RN_CM_ATTR_SIDR_REP:
		sidr_rep_recv(&in);
		break;
	default:
		break; /* LAP, APR: rdma_cm never sends them */
	}
}
