// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The wire's packets to the device's captures (engine/capture.h), whole:
 * ringnicd sends and receives the UDP payload, so the IP and UDP headers
 * are written here as the kernel wrote or will write them (icrc.h says
 * how ringnicd knows them), and a packet's ICRC is valid in the capture.
 * The UDP checksum is 0, as RoCEv2 allows and rxe sends; an IPv6 flow
 * label, which the kernel picks, is 0.
 */
#include <endian.h>
#include <string.h>

#include "engine/capture.h"
#include "wire/internal.h"

#define IP_DF 0x4000

struct ip_head {
	uint8_t b[RN_PKT_IPV6_BYTES + RN_PKT_UDP_BYTES];
	size_t len;
};

/* The IPv4 header checksum (RFC 1071) of the 20 bytes at ip. */
static uint16_t ipv4_checksum(const uint8_t *ip)
{
	uint32_t sum = 0;
	int i;

	for (i = 0; i < RN_PKT_IPV4_BYTES; i += 2)
		sum += (uint32_t)ip[i] << 8 | ip[i + 1];
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void udp_head(uint8_t *b, uint16_t sport, uint16_t dport, size_t len)
{
	rn_pkt_put16(b, sport);
	rn_pkt_put16(b + 2, dport);
	rn_pkt_put16(b + 4, (uint16_t)(RN_PKT_UDP_BYTES + len));
	rn_pkt_put16(b + 6, 0);
}

static void ipv4_head(struct ip_head *h, const struct sockaddr_in *src,
		      const struct sockaddr_in *dst, uint8_t tos, uint8_t ttl,
		      uint16_t id, size_t len)
{
	uint8_t *ip = h->b;

	ip[0] = 0x45;
	ip[1] = tos;
	rn_pkt_put16(ip + 2, (uint16_t)(RN_PKT_IPV4_BYTES + RN_PKT_UDP_BYTES + len));
	rn_pkt_put16(ip + 4, id);
	rn_pkt_put16(ip + 6, IP_DF);
	ip[8] = ttl;
	ip[9] = IPPROTO_UDP;
	rn_pkt_put16(ip + 10, 0);
	memcpy(ip + 12, &src->sin_addr, 4);
	memcpy(ip + 16, &dst->sin_addr, 4);
	rn_pkt_put16(ip + 10, ipv4_checksum(ip));
	udp_head(ip + RN_PKT_IPV4_BYTES, ntohs(src->sin_port), ntohs(dst->sin_port),
		 len);
	h->len = RN_PKT_IPV4_BYTES + RN_PKT_UDP_BYTES;
}

static void ipv6_head(struct ip_head *h, const struct sockaddr_in6 *src,
		      const struct sockaddr_in6 *dst, uint8_t tclass,
		      uint8_t hop_limit, uint32_t flow_label, size_t len)
{
	uint8_t *ip = h->b;
	uint32_t first = htobe32(6u << 28 | (uint32_t)tclass << 20 |
				 (flow_label & 0xfffff));

	memcpy(ip, &first, 4);
	rn_pkt_put16(ip + 4, (uint16_t)(RN_PKT_UDP_BYTES + len));
	ip[6] = IPPROTO_UDP;
	ip[7] = hop_limit;
	memcpy(ip + 8, &src->sin6_addr, 16);
	memcpy(ip + 24, &dst->sin6_addr, 16);
	udp_head(ip + RN_PKT_IPV6_BYTES, ntohs(src->sin6_port), ntohs(dst->sin6_port),
		 len);
	h->len = RN_PKT_IPV6_BYTES + RN_PKT_UDP_BYTES;
}

void rn_wire_capture_tx(struct rn_device *dev, const struct rn_wire_sock *s,
			const struct rn_wire_tx *tx)
{
	uint8_t ttl = tx->ttl ? tx->ttl : s->ttl;
	struct ip_head h;
	struct rn_capture_pkt pkt = {
		.dir = RN_CAPTURE_TX,
		.qpn = tx->qpn,
		.head = h.b,
		.body = tx->buf,
		.body_len = tx->len,
	};

	if (s->family == AF_INET) {
		struct sockaddr_in src = s->local.v4;

		src.sin_port = htons(RN_PKT_UDP_DPORT);
		ipv4_head(&h, &src, &tx->to.v4, tx->tos, ttl, tx->seg, tx->len);
	} else {
		struct sockaddr_in6 src = s->local.v6;

		src.sin6_port = htons(RN_PKT_UDP_DPORT);
		ipv6_head(&h, &src, &tx->to.v6, tx->tos, ttl, 0, tx->len);
	}
	pkt.head_len = h.len;
	rn_capture_packet(dev, &pkt);
}

void rn_wire_capture_rx(struct rn_device *dev, const struct rn_wire_pkt *pkt,
			const uint8_t *buf, size_t len)
{
	const struct rn_wire_sock *s = pkt->sock;
	struct ip_head h;
	struct rn_capture_pkt cp = {
		.dir = RN_CAPTURE_RX,
		.qpn = pkt->p.dqpn,
		.head = h.b,
		.body = buf,
		.body_len = len,
	};

	if (s->family == AF_INET) {
		struct sockaddr_in dst = s->local.v4;

		dst.sin_port = htons(RN_PKT_UDP_DPORT);
		ipv4_head(&h, (const struct sockaddr_in *)pkt->from, &dst,
			  pkt->tos, pkt->ttl, pkt->ip_id, len);
	} else {
		struct sockaddr_in6 dst = s->local.v6;

		dst.sin6_port = htons(RN_PKT_UDP_DPORT);
		ipv6_head(&h, (const struct sockaddr_in6 *)pkt->from, &dst,
			  pkt->tos, pkt->ttl, pkt->flow_label, len);
	}
	cp.head_len = h.len;
	rn_capture_packet(dev, &cp);
}
