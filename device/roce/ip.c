// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <netinet/in.h>
#include <string.h>

#include "base/gid.h"
#include "roce/ip.h"
#include "roce/packet.h"

#define IP_DF 0x4000

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

size_t rn_ip_write(uint8_t *b, const struct rn_ip_fields *f)
{
	if (rn_gid_is_ipv4(f->sgid) && rn_gid_is_ipv4(f->dgid)) {
		memset(b, 0, RN_PKT_IPV4_BYTES);
		b[0] = 0x45;
		b[1] = f->tclass;
		rn_pkt_put16(b + 2, (uint16_t)(RN_PKT_IPV4_BYTES + f->udp_len));
		rn_pkt_put16(b + 4, f->ip_id);
		rn_pkt_put16(b + 6, IP_DF);
		b[8] = f->hop_limit;
		b[9] = IPPROTO_UDP;
		memcpy(b + 12, f->sgid + 12, 4);
		memcpy(b + 16, f->dgid + 12, 4);
		rn_pkt_put16(b + 10, ipv4_checksum(b));
		return RN_PKT_IPV4_BYTES;
	}
	b[0] = 0x60 | f->tclass >> 4;
	b[1] = (uint8_t)(f->tclass << 4) | ((f->flow_label >> 16) & 0xf);
	b[2] = (f->flow_label >> 8) & 0xff;
	b[3] = f->flow_label & 0xff;
	rn_pkt_put16(b + 4, (uint16_t)f->udp_len);
	b[6] = IPPROTO_UDP;
	b[7] = f->hop_limit;
	memcpy(b + 8, f->sgid, 16);
	memcpy(b + 24, f->dgid, 16);
	return RN_PKT_IPV6_BYTES;
}

void rn_udp_write(uint8_t *b, uint16_t sport, uint16_t dport, uint32_t udp_len)
{
	rn_pkt_put16(b, sport);
	rn_pkt_put16(b + 2, dport);
	rn_pkt_put16(b + 4, (uint16_t)udp_len);
	rn_pkt_put16(b + 6, 0);
}
