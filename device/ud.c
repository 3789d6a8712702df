// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD sends.  A datagram goes where its address handle and remote QPN say:
 * to a QP of this device directly, or on the wire (wire/datagram.c) when
 * the destination GID is not one of ours (or --local-on-wire).  The
 * receiver takes it only with the right Q_Key and a receive WQE, and gets
 * the 40-byte GRH area first, filled as rxe fills it from the packet's IP
 * header (docs/wire.md, "UD"): for IPv4 20 zero bytes then the IPv4
 * header, for IPv6 the IPv6 header.  UD is unreliable: whatever the
 * receiver cannot take is dropped there and counted, and the sender
 * completes successfully.  Only what the sender got wrong itself (a bad
 * AH, a message larger than the path MTU, its own buffers) is an error
 * completion.
 */
#include <arpa/inet.h>
#include <string.h>

#include "datapath.h"
#include "table.h"

#define RN_QKEY_OWN 0x80000000u /* "use the QP's own Q_Key" */

/* Bytes a UD packet adds to its payload after the IP header. */
#define RN_UD_HDRS (8 /* UDP */ + 12 /* BTH */ + 8 /* DETH */)
#define RN_ICRC_LEN 4

bool rn_gid_is_ipv4(const uint8_t *gid)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	return !memcmp(gid, prefix, sizeof(prefix));
}

static uint16_t ipv4_checksum(const uint8_t *hdr)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < 20; i += 2)
		sum += (uint32_t)hdr[i] << 8 | hdr[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

void rn_ud_grh(uint8_t *grh, const struct rn_ud_ip *h)
{
	uint8_t *ip = grh + 20;

	memset(grh, 0, RN_GRH_LEN);
	if (rn_gid_is_ipv4(h->sgid) && rn_gid_is_ipv4(h->dgid)) {
		uint16_t total = (uint16_t)(20 + h->udp_len), csum;

		ip[0] = 0x45;
		ip[1] = h->tclass;
		ip[2] = total >> 8;
		ip[3] = total & 0xff;
		ip[4] = h->ip_id >> 8;
		ip[5] = h->ip_id & 0xff;
		ip[6] = 0x40; /* DF */
		ip[8] = h->hop_limit;
		ip[9] = 17; /* UDP */
		memcpy(ip + 12, h->sgid + 12, 4);
		memcpy(ip + 16, h->dgid + 12, 4);
		csum = ipv4_checksum(ip);
		ip[10] = csum >> 8;
		ip[11] = csum & 0xff;
		return;
	}
	grh[0] = 0x60 | h->tclass >> 4;
	grh[1] = (uint8_t)(h->tclass << 4) | ((h->flow_label >> 16) & 0xf);
	grh[2] = (h->flow_label >> 8) & 0xff;
	grh[3] = h->flow_label & 0xff;
	grh[4] = h->udp_len >> 8;
	grh[5] = h->udp_len & 0xff;
	grh[6] = 17; /* next header: UDP */
	grh[7] = h->hop_limit;
	memcpy(grh + 8, h->sgid, 16);
	memcpy(grh + 24, h->dgid, 16);
}

/* The datagram went nowhere, or the receiver dropped it. */
static bool dropped(struct rn_device *dev, enum rn_counter c)
{
	dev->port.counters[c]++;
	return false;
}

bool rn_ud_receiver(struct rn_device *dev, uint32_t qpn, uint32_t qkey,
		    uint64_t len, struct rn_ud_rx *rx)
{
	struct rn_qp *dst = rn_qp_by_qpn(dev, qpn);

	if (!dst || dst->qp_type != IBV_QPT_UD || !rn_qp_receiving(dst))
		return dropped(dev, RN_CNT_NO_QP);
	if (qkey != dst->attr.qkey)
		return dropped(dev, RN_CNT_QKEY_VIOLATIONS);
	rn_responder_of(dst, 0, &rx->resp);
	switch (rn_rq_next(rx->resp.rq, &rx->rwqe)) {
	case RN_RQ_EMPTY:
		return dropped(dev, RN_CNT_OUT_OF_BUFFER);
	case RN_RQ_BAD:
		rn_qp_fatal(dst, IBV_EVENT_QP_FATAL);
		return false;
	case RN_RQ_OK:
		break;
	}
	if (rn_sgl_resolve(rx->resp.client, rx->resp.buf_pd, rx->rwqe.sge,
			   rx->rwqe.num_sge, IBV_ACCESS_LOCAL_WRITE, &rx->dsts)) {
		struct rn_recv_result res = {
			.status = IBV_WC_LOC_PROT_ERR,
			.opcode = IBV_WC_RECV,
		};

		rn_recv_complete(&rx->resp, &rx->rwqe, &res);
		rn_qp_to_error(dst);
		return false;
	}
	if (rx->dsts.len < RN_GRH_LEN + len)
		return dropped(dev, RN_CNT_RX_LENGTH_ERRORS);
	return true;
}

enum rn_dma_status rn_ud_write_grh(struct rn_ud_rx *rx,
				   const struct rn_ud_ip *h,
				   struct rn_iovs *payload)
{
	uint8_t grh[RN_GRH_LEN];
	struct rn_iovs part;

	rn_ud_grh(grh, h);
	rn_iovs_sub(&rx->dsts, 0, RN_GRH_LEN, &part);
	rn_iovs_sub(&rx->dsts, RN_GRH_LEN, rx->dsts.len - RN_GRH_LEN, payload);
	return rn_dma_to(&part, grh, RN_GRH_LEN);
}

void rn_ud_complete(struct rn_ud_rx *rx, enum rn_dma_status st,
		    struct rn_recv_result *res, bool ipv4)
{
	switch (st) {
	case RN_DMA_GONE:
		return;
	case RN_DMA_OK:
		res->flags |= RN_CQE_GRH;
		res->sl = ipv4 ? RN_ROCE_V2_IPV4 : RN_ROCE_V2_IPV6;
		rn_recv_complete(&rx->resp, &rx->rwqe, res);
		return;
	default:
		res->status = IBV_WC_LOC_PROT_ERR;
		rn_recv_complete(&rx->resp, &rx->rwqe, res);
		rn_qp_to_error(rx->resp.qp);
		return;
	}
}

enum ibv_wc_status rn_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
			      uint32_t *byte_len)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_ah *ah = rn_table_get(&qp->client->ahs, w->dest.ah);
	struct rn_recv_result res;
	struct rn_iovs src, payload;
	enum ibv_wc_status st;
	enum rn_dma_status dma;
	struct rn_ud_ip ip;
	struct rn_ud_rx rx;
	uint8_t dgid[16];
	uint32_t qkey;
	uint64_t len;
	int index;

	if (!ah || ah->pd != qp->pd)
		return IBV_WC_LOC_QP_OP_ERR;
	st = rn_gather(qp, w, &src, &len);
	if (st)
		return st;
	if (len > rn_port_mtu_bytes(dev))
		return IBV_WC_LOC_LEN_ERR;
	*byte_len = len;

	/* Without a GRH the AH can only mean this port, by its first GID.
	 * A source address that went away since the AH was made routes
	 * nowhere.
	 */
	index = ah->attr.is_global ? ah->attr.sgid_index :
				     rn_port_gid_first(dev);
	if (index < 0 || !rn_port_gid_valid(dev, index)) {
		dropped(dev, RN_CNT_NO_ROUTE);
		return IBV_WC_SUCCESS;
	}
	if (ah->attr.is_global)
		memcpy(dgid, ah->attr.dgid, 16);
	else
		memcpy(dgid, dev->port.gids[index].raw, 16);
	qkey = w->dest.remote_qkey & RN_QKEY_OWN ? qp->attr.qkey :
						  w->dest.remote_qkey;
	if (dev->local_on_wire || rn_port_gid_index(dev, dgid) < 0)
		return rn_wire_ud_send(qp, w, &ah->attr, index, dgid, qkey,
				       &src, len);

	if (!rn_ud_receiver(dev, w->dest.remote_qpn, qkey, len, &rx))
		return IBV_WC_SUCCESS;
	ip = (struct rn_ud_ip){
		.sgid = dev->port.gids[index].raw,
		.dgid = dgid,
		.tclass = ah->attr.traffic_class,
		.hop_limit = ah->attr.hop_limit,
		.flow_label = ah->attr.flow_label,
		/* As ringnicd sends it: ID 0; the UDP length counts BTH,
		 * DETH, the immediate, payload, pad and ICRC.
		 */
		.udp_len = RN_UD_HDRS + (w->opcode == RN_OP_SEND_IMM ? 4 : 0) +
			   len + (-len & 3) + RN_ICRC_LEN,
	};
	dma = rn_ud_write_grh(&rx, &ip, &payload);
	if (!dma) {
		if (w->flags & RN_WQE_INLINE)
			dma = rn_dma_to(&payload, w->inline_data, len);
		else
			dma = rn_dma_copy(&src, &payload, len, dev->bounce,
					  RN_BOUNCE_SIZE);
	}
	/* A sender that cannot be read is the sender's error. */
	if (dma == RN_DMA_SRC_FAULT)
		return IBV_WC_LOC_PROT_ERR;
	res = rn_recv_result_of(w, IBV_WC_RECV, len + RN_GRH_LEN, qp->qpn);
	rn_ud_complete(&rx, dma, &res, rn_gid_is_ipv4(ip.sgid) &&
					      rn_gid_is_ipv4(ip.dgid));
	return IBV_WC_SUCCESS;
}
