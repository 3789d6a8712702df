// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire's packets to the device's captures (engine/capture.h), whole:
 * ringnicd sends and receives the UDP payload, so the IP and UDP headers
 * are written as the kernel wrote or will write them (roce/icrc.h says
 * how ringnicd knows them), and a packet's ICRC is valid in the capture.
 * An IPv6 flow label, which the kernel picks, is 0.
 */
#include "engine/capture.h"
#include "wire/internal.h"

void rn_wire_capture_tx(struct rn_device *dev, const struct rn_wire_sock *s,
			const struct rn_wire_tx *tx)
{
	uint8_t sgid[RN_GID_LEN], dgid[RN_GID_LEN];
	struct rn_capture_pkt pkt = {
		.dir = RN_CAPTURE_TX,
		.qpn = tx->qpn,
		.ip = {
			.sgid = sgid,
			.dgid = dgid,
			.tclass = tx->tos,
			.hop_limit = tx->ttl ? tx->ttl : s->ttl,
			.ip_id = tx->seg,
		},
		.sport = RN_PKT_UDP_DPORT,
		.body = tx->buf,
		.body_len = tx->len,
	};

	rn_gid_from_sockaddr(sgid, &s->local.sa);
	rn_gid_from_sockaddr(dgid, &tx->to.sa);
	pkt.dport = ntohs(s->family == AF_INET ? tx->to.v4.sin_port :
						 tx->to.v6.sin6_port);
	rn_capture_packet(dev, &pkt);
}

void rn_wire_capture_rx(struct rn_device *dev, const struct rn_wire_pkt *pkt,
			const uint8_t *buf, size_t len)
{
	const struct rn_wire_sock *s = pkt->sock;
	uint8_t sgid[RN_GID_LEN], dgid[RN_GID_LEN];
	struct rn_capture_pkt cp = {
		.dir = RN_CAPTURE_RX,
		.qpn = pkt->p.dqpn,
		.ip = {
			.sgid = sgid,
			.dgid = dgid,
			.tclass = pkt->tos,
			.hop_limit = pkt->ttl,
			.flow_label = pkt->flow_label,
			.ip_id = pkt->ip_id,
		},
		.dport = RN_PKT_UDP_DPORT,
		.body = buf,
		.body_len = len,
	};

	rn_gid_from_sockaddr(sgid, pkt->from);
	rn_gid_from_sockaddr(dgid, &s->local.sa);
	cp.sport = ntohs(s->family == AF_INET ?
				 ((const struct sockaddr_in *)pkt->from)->sin_port :
				 ((const struct sockaddr_in6 *)pkt->from)->sin6_port);
	rn_capture_packet(dev, &cp);
}
