// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * UD sends.  A datagram goes where its address handle and remote QPN say:
 * to a QP of this device directly (engine/ud.c receives it), or on the
 * wire, through the network's ud_send, when the destination GID is not
 * one of ours (or --local-on-wire).  Only what the sender got wrong itself
 * (a bad AH, a message larger than the path MTU, its own buffers) is an
 * error completion.
 *
 * But not a buffer its owner unmapped under a registered MR after posting
 * (core/guard.c): a NIC would send what the pages the MR pins held, which
 * ringnicd no longer has.  The datagram is lost instead, as UD allows, and
 * the send succeeds.  UCX's UD transport frees the buffers of sends it
 * still has queued when it destroys an endpoint, and treats an error
 * completion as fatal.
 */
#include <string.h>

#include "base/table.h"
#include "engine/capture.h"
#include "local/local.h"

#define RN_QKEY_OWN 0x80000000u /* "use the QP's own Q_Key" */

/* The datagram w of qp to a QP of this device, if one takes it. */
static enum ibv_wc_status deliver(struct rn_qp *qp, const struct rn_wqe *w,
				  const struct rn_ah *ah, int index,
				  const uint8_t *dgid, uint32_t qkey,
				  const struct rn_iovs *src, uint64_t len)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_recv_result res;
	struct rn_iovs payload;
	enum rn_dma_status dma;
	struct rn_ip_fields ip;
	struct rn_ud_rx rx;

	if (!rn_ud_receiver(qp->engine, w->dest.remote_qpn, qkey, len, &rx))
		return IBV_WC_SUCCESS;
	ip = (struct rn_ip_fields){
		.sgid = dev->port.gids[index].raw,
		.dgid = dgid,
		.tclass = ah->attr.traffic_class,
		.hop_limit = ah->attr.hop_limit,
		.flow_label = ah->attr.flow_label,
		/* As ringnicd sends it: ID 0; the UDP length counts BTH,
		 * DETH, the immediate, payload, pad and ICRC.
		 */
		.udp_len = (uint32_t)(RN_PKT_UDP_BYTES +
				      rn_pkt_len(rn_op_opcode(RN_PKT_UD, w->opcode),
						 len)),
	};
	dma = rn_ud_write_grh(&rx, &ip, &payload);
	if (!dma) {
		if (w->flags & RN_WQE_INLINE)
			dma = rn_dma_to(&payload, w->inline_data, len);
		else
			dma = rn_dma_copy(src, &payload, len, qp->engine->bounce,
					  RN_BOUNCE_SIZE);
	}
	/* A sender that cannot be read is the sender's error, unless its
	 * memory went under a guarded MR since it was checked.
	 */
	if (dma == RN_DMA_SRC_FAULT)
		return src->guarded ? IBV_WC_SUCCESS : IBV_WC_LOC_PROT_ERR;
	res = rn_recv_result_of(w, IBV_WC_RECV, len + RN_GRH_LEN, qp->qpn);
	rn_ud_complete(&rx, dma, &res, rn_gid_is_ipv4(ip.sgid) &&
					      rn_gid_is_ipv4(ip.dgid));
	return IBV_WC_SUCCESS;
}

enum ibv_wc_status rn_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
			      uint32_t *byte_len)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_ah *ah = rn_table_get(&qp->client->ctx->ahs, w->dest.ah);
	unsigned int i, copies;
	enum ibv_wc_status st;
	struct rn_iovs src;
	uint8_t dgid[16];
	uint32_t qkey;
	uint64_t len;
	bool gone;
	int index;

	if (!ah || ah->pd != qp->pd)
		return IBV_WC_LOC_QP_OP_ERR;
	st = rn_gather(qp, w, &src, &len);
	gone = st == IBV_WC_LOC_PROT_ERR && !(w->flags & RN_WQE_INLINE) &&
	       rn_sgl_gone(qp->client, qp->pd, w->sge, w->num_sge);
	if (gone) {
		for (len = 0, i = 0; i < w->num_sge; i++)
			len += w->sge[i].length;
		st = IBV_WC_SUCCESS;
	}
	if (st)
		return st;
	if (len > rn_port_mtu_bytes(dev))
		return IBV_WC_LOC_LEN_ERR;
	*byte_len = len;
	if (gone)
		return IBV_WC_SUCCESS;

	/* Every AH has a GRH (verbs/ah.c).  A source address that went away
	 * since the AH was made routes nowhere.
	 */
	index = ah->attr.sgid_index;
	if (!rn_port_gid_valid(dev, index)) {
		rn_engine_count(qp->engine, RN_CNT_NO_ROUTE);
		return IBV_WC_SUCCESS;
	}
	memcpy(dgid, ah->attr.dgid, 16);
	qkey = w->dest.remote_qkey & RN_QKEY_OWN ? qp->attr.qkey :
						  w->dest.remote_qkey;
	if (dev->local_on_wire || rn_port_gid_index(dev, dgid) < 0) {
		const struct rn_network_ops *net = qp->engine->network;

		if (!net) {
			rn_engine_count(qp->engine, RN_CNT_NO_ROUTE);
			return IBV_WC_SUCCESS;
		}
		return net->ud_send(qp, w, &ah->attr, index, dgid, qkey, &src,
				    len);
	}

	if (rn_capturing(dev))
		rn_local_capture_datagram(qp, w, &ah->attr, index, qkey, &src,
					  len);
	/* Its PSN, as the wire gives each datagram one. */
	qp->attr.sq_psn = rn_pkt_psn_add(qp->attr.sq_psn, 1);
	/* An injected fault (local/fault.c) may lose or double it. */
	copies = qp->faults ? rn_local_datagram_copies(qp) : 1;
	while (copies--) {
		st = deliver(qp, w, ah, index, dgid, qkey, &src, len);
		if (st)
			return st;
	}
	return IBV_WC_SUCCESS;
}
