// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD on the wire: one SEND_ONLY (or SEND_ONLY_WITH_IMMEDIATE) packet per
 * datagram, BTH + DETH (Q_Key, source QPN), no AckReq (as Debian's rxe),
 * a PSN that counts and is ignored on receive.  A received datagram gets
 * the GRH area rxe gives it: its real IPv4 or IPv6 header, rebuilt from
 * what the socket saw (addresses, TTL/hop limit, TOS/traffic class) and,
 * for IPv4, the Identification recovered from the ICRC.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "wire/internal.h"

struct ud_src {
	const struct rn_wqe *w;
	const struct rn_iovs *src;
};

static enum rn_dma_status fill_datagram(void *arg, uint8_t *dst, uint32_t len)
{
	struct ud_src *u = arg;

	if (u->w->flags & RN_WQE_INLINE) {
		memcpy(dst, u->w->inline_data, len);
		return RN_DMA_OK;
	}
	return rn_dma_from(u->src, dst, len);
}

enum ibv_wc_status rn_wire_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
				   const struct rn_ah_attr *av,
				   unsigned int sgid_index, const uint8_t *dgid,
				   uint32_t qkey, const struct rn_iovs *src,
				   uint64_t len)
{
	struct rn_device *dev = qp->client->dev;
	struct ud_src u = { w, src };
	struct rn_wire_peer peer;
	struct rn_pkt p = {
		.opcode = rn_op_opcode(RN_PKT_UD, w->opcode),
		.se = w->flags & RN_WQE_SOLICITED,
		.dqpn = w->dest.remote_qpn & RN_PKT_MASK24,
		.psn = qp->attr.sq_psn & RN_PKT_MASK24,
		.deth = { qkey, qp->qpn },
		.imm = ntohl(w->imm_data),
		.payload_len = (uint32_t)len,
	};

	if (!rn_wire_peer_of(dev, sgid_index, dgid, &peer)) {
		rn_wire_count(qp->engine->wire, RN_CNT_NO_ROUTE);
		return IBV_WC_SUCCESS;
	}
	rn_wire_peer_grh(&peer, av);
	peer.qpn = qp->qpn;
	switch (rn_wire_send(qp->engine->wire, &peer, &p, fill_datagram, &u)) {
	case RN_DMA_OK:
	case RN_DMA_GONE:
		break;
	default:
		/* Unmapped under a guarded MR since it was checked: the
		 * datagram is lost (rn_ud_send).
		 */
		if (src->guarded)
			return IBV_WC_SUCCESS;
		return IBV_WC_LOC_PROT_ERR;
	}
	qp->attr.sq_psn = rn_pkt_psn_add(qp->attr.sq_psn, 1);
	return IBV_WC_SUCCESS;
}

void rn_wire_gsi_send(struct rn_device *dev, int sgid_index,
		      const uint8_t *dgid, uint8_t tclass, uint8_t hop_limit,
		      uint32_t dqpn, uint32_t qkey, const uint8_t *mad,
		      uint32_t len)
{
	/* QP1's datagrams leave from engine 0, held by the control thread. */
	struct rn_wire *w = dev->engines[0]->wire;
	struct rn_wire_peer peer;
	struct rn_pkt p = {
		.opcode = RN_PKT_UD | RN_PKT_OP_SEND_ONLY,
		.dqpn = dqpn,
		.psn = w->gsi_psn++ & RN_PKT_MASK24,
		.deth = { qkey, 1 },
		.payload = mad,
		.payload_len = len,
	};

	if (sgid_index < 0 ||
	    !rn_wire_peer_of(dev, (unsigned int)sgid_index, dgid, &peer)) {
		rn_wire_count(w, RN_CNT_NO_ROUTE);
		return;
	}
	peer.tclass = tclass;
	peer.hop_limit = hop_limit;
	peer.qpn = 1;
	rn_wire_send(w, &peer, &p, NULL, NULL);
	rn_wire_flush(w);
}

/* A datagram to QP1: to whoever took QP1 (rn_wire_set_gsi). */
static void gsi_recv(struct rn_wire *w, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	struct rn_wire_gsi g = {
		.gid_index = pkt->sock->gid_index,
		.src_qpn = p->deth.src_qpn,
		.qkey = p->deth.qkey,
		.flow_label = pkt->flow_label,
		.tclass = pkt->tos,
		.hop_limit = pkt->ttl,
		.ipv4 = pkt->sock->family == AF_INET,
		.mad = p->payload,
		.len = p->payload_len,
	};
	rn_wire_gsi_fn fn = w->gsi_recv;

	if (!fn)
		return;
	rn_gid_from_sockaddr(g.sgid, pkt->from);
	rn_gid_from_sockaddr(g.dgid, &pkt->sock->local.sa);
	fn(w->dev, &g);
}

void rn_wire_ud_recv(struct rn_wire *w, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	uint8_t sgid[16], dgid[16];
	struct rn_recv_result res;
	struct rn_iovs payload;
	enum rn_dma_status st;
	struct rn_ip_fields ip;
	struct rn_ud_rx rx;
	bool ipv4 = pkt->sock->family == AF_INET;

	/* QP1 is the CM's: ringnicd's own (cm/), or in kernel mode the
	 * kernel's, whose QP1 the stub keeps (daemon/kdev.c).
	 */
	if (p->dqpn == 1) {
		if (p->deth.qkey != RN_GSI_QKEY) {
			rn_wire_count(w, RN_CNT_QKEY_VIOLATIONS);
			return;
		}
		gsi_recv(w, pkt);
		return;
	}
	if (!rn_ud_receiver(w->engine, p->dqpn, p->deth.qkey, p->payload_len, &rx))
		return;
	rn_gid_from_sockaddr(sgid, pkt->from);
	rn_gid_from_sockaddr(dgid, (const struct sockaddr *)&pkt->sock->local);
	ip = (struct rn_ip_fields){
		.sgid = sgid,
		.dgid = dgid,
		.tclass = pkt->tos,
		.hop_limit = pkt->ttl,
		.ip_id = pkt->ip_id,
		.udp_len = (uint32_t)pkt->udp_len,
	};
	st = rn_ud_write_grh(&rx, &ip, &payload);
	if (!st)
		st = rn_dma_to(&payload, p->payload, p->payload_len);
	res = (struct rn_recv_result){
		.status = IBV_WC_SUCCESS,
		.opcode = IBV_WC_RECV,
		.byte_len = RN_GRH_LEN + p->payload_len,
		.src_qp = p->deth.src_qpn,
		.solicited = p->se,
	};
	if (p->hdrs & RN_PKT_H_IMMDT) {
		res.imm_or_key = htonl(p->imm);
		res.flags = RN_CQE_WITH_IMM;
	}
	rn_ud_complete(&rx, st, &res, ipv4);
}
