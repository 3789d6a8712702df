// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD receives, wherever the datagram comes from (local/ud.c, or the wire's
 * wire/datagram.c).  The receiver takes it only with the right Q_Key and a receive WQE, and gets
 * the 40-byte GRH area first, filled as rxe fills it from the packet's IP
 * header (docs/wire.md, "UD"): for IPv4 20 zero bytes then the IPv4
 * header, for IPv6 the IPv6 header.  UD is unreliable: whatever the
 * receiver cannot take is dropped there and counted, and the sender
 * completes successfully.  Only what the sender got wrong itself (a bad
 * AH, a message larger than the path MTU, its own buffers) is an error
 * completion.
 */
#include <string.h>

#include "engine/datapath.h"
#include "base/table.h"

/* The GRH area as rxe fills it: IPv4's header in its last 20 bytes. */
static void fill_grh(uint8_t *grh, const struct rn_ip_fields *h)
{
	memset(grh, 0, RN_GRH_LEN);
	if (rn_gid_is_ipv4(h->sgid) && rn_gid_is_ipv4(h->dgid))
		rn_ip_write(grh + RN_GRH_LEN - RN_PKT_IPV4_BYTES, h);
	else
		rn_ip_write(grh, h);
}

/* The datagram went nowhere, or the receiver dropped it. */
static bool dropped(struct rn_engine *e, enum rn_counter c)
{
	rn_engine_count(e, c);
	return false;
}

bool rn_ud_receiver(struct rn_engine *e, uint32_t qpn, uint32_t qkey,
		    uint64_t len, struct rn_ud_rx *rx)
{
	struct rn_qp *dst = rn_qp_by_qpn(e->dev, qpn);

	/* Another engine's QP takes it only from a visit (rn_gate_visit). */
	if (!dst || (dst->engine != e && !e->visiting) ||
	    dst->qp_type != IBV_QPT_UD || !rn_qp_receiving(dst))
		return dropped(e, RN_CNT_NO_QP);
	if (qkey != dst->attr.qkey)
		return dropped(e, RN_CNT_QKEY_VIOLATIONS);
	rn_responder_of(dst, 0, &rx->resp);
	switch (rn_rq_next(rx->resp.rq, &rx->rwqe)) {
	case RN_RQ_EMPTY:
		return dropped(e, RN_CNT_OUT_OF_BUFFER);
	case RN_RQ_BAD:
		rn_qp_fatal(dst, IBV_EVENT_QP_FATAL);
		return false;
	case RN_RQ_OK:
		break;
	}
	switch (rn_scatter_resolve(rx->resp.client, rx->resp.buf_pd,
				   rx->rwqe.sge, rx->rwqe.num_sge,
				   RN_GRH_LEN + len, &rx->dsts)) {
	case IBV_WC_SUCCESS:
		return true;
	case IBV_WC_LOC_LEN_ERR:
		return dropped(e, RN_CNT_RX_LENGTH_ERRORS);
	default: {
		struct rn_recv_result res = {
			.status = IBV_WC_LOC_PROT_ERR,
			.opcode = IBV_WC_RECV,
		};

		rn_recv_complete(&rx->resp, &rx->rwqe, &res);
		rn_qp_to_error(dst);
		return false;
	}
	}
}

enum rn_dma_status rn_ud_write_grh(struct rn_ud_rx *rx,
				   const struct rn_ip_fields *h,
				   struct rn_iovs *payload)
{
	uint8_t grh[RN_GRH_LEN];
	struct rn_iovs part;

	fill_grh(grh, h);
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
