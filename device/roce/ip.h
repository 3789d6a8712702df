/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The IP and UDP headers before a RoCEv2 packet, as Linux writes them for
 * the UDP sockets ringnicd sends through: IPv4 with no options, DF set and
 * the checksum; IPv6 with the flow label given; UDP with checksum 0, as
 * RoCEv2 allows and rxe sends.  They go where ringnicd shows a packet
 * with its headers: a UD receiver's GRH area, and packet captures.
 */
#ifndef RN_ROCE_IP_H
#define RN_ROCE_IP_H

#include <stddef.h>
#include <stdint.h>

/* A packet's IP header fields. */
struct rn_ip_fields {
	const uint8_t *sgid; /* GIDs: IPv4-mapped for IPv4 */
	const uint8_t *dgid;
	uint8_t tclass; /* IPv4 TOS, IPv6 traffic class (DSCP and ECN) */
	uint8_t hop_limit; /* IPv4 TTL */
	uint32_t flow_label; /* IPv6 only */
	uint16_t ip_id; /* IPv4 only */
	uint32_t udp_len; /* UDP header through ICRC */
};

/* Write the IPv4 header (20 bytes, when both GIDs are IPv4-mapped) or the
 * IPv6 header (40) at b; returns its length.
 */
size_t rn_ip_write(uint8_t *b, const struct rn_ip_fields *f);

/* Write the 8-byte UDP header of a datagram of udp_len bytes in all. */
void rn_udp_write(uint8_t *b, uint16_t sport, uint16_t dport, uint32_t udp_len);

#endif
