/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RoCEv2 ICRC (docs/wire.md, "ICRC"): zlib's CRC-32 over 8 bytes of
 * 0xFF, the IP header, the UDP header and the packet from the BTH through
 * the pad, with the fields routers may change masked to ones; stored
 * little-endian in the packet's last 4 bytes.
 *
 * ringnicd sends and receives through ordinary UDP sockets, so the IP and
 * UDP headers are the kernel's: these functions rebuild them from what the
 * socket knows (addresses, ports, the UDP length) and, for IPv4, the
 * Identification and DF bit, which a socket does not show.  Sending on an
 * unconnected socket with IP_PMTUDISC_DO makes the kernel write ID 0 and
 * DF; UDP GSO segments carry IDs 0, 1, 2, ...  Receiving, the ID is
 * recovered from the ICRC itself (rn_icrc_check_ipv4).
 *
 * 'pkt' and 'len' are always the UDP payload, BTH through ICRC, with
 * RN_PKT_MIN_LEN <= len <= RN_PKT_MAX_LEN (IPv4: 65535 - 28) for the
 * functions that do not check (a packet rn_pkt_parse accepted qualifies).
 */
#ifndef RN_ROCE_ICRC_H
#define RN_ROCE_ICRC_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roce/packet.h"

/*
 * The CRC-32 has one implementation per library the build has: 0 is zlib's
 * (the default), then ISA-L's.  rn_icrc_crc_name(i) is NULL past the last.
 * rn_icrc_use_crc is called before any packet is built or checked, never
 * while another thread does so.
 */
const char *rn_icrc_crc_name(unsigned int i);
void rn_icrc_use_crc(unsigned int i);

/* The IPv4 and UDP fields a packet's ICRC covers that the kernel writes. */
struct rn_icrc_flow4 {
	struct in_addr saddr;
	struct in_addr daddr;
	uint16_t sport; /* host byte order */
	uint16_t dport;
};

struct rn_icrc_flow6 {
	struct in6_addr saddr;
	struct in6_addr daddr;
	uint16_t sport; /* host byte order */
	uint16_t dport;
};

/* The ICRC of a packet sent with IPv4 Identification 'ip_id' and DF 'df'. */
uint32_t rn_icrc_ipv4(const struct rn_icrc_flow4 *f, uint16_t ip_id, bool df,
		      const void *pkt, size_t len);

uint32_t rn_icrc_ipv6(const struct rn_icrc_flow6 *f, const void *pkt,
		      size_t len);

/* Read or write the ICRC field, the last 4 bytes of the packet. */
uint32_t rn_icrc_get(const void *pkt, size_t len);
void rn_icrc_put(void *pkt, size_t len, uint32_t icrc);

/* Fill in the ICRC of a packet about to be sent: IPv4 with DF set and the
 * ID the kernel will write (0, or a GSO segment's index).
 */
void rn_icrc_seal_ipv4(const struct rn_icrc_flow4 *f, uint16_t ip_id,
		       void *pkt, size_t len);
void rn_icrc_seal_ipv6(const struct rn_icrc_flow6 *f, void *pkt, size_t len);

/*
 * Tables of the IPv4 ID recovery (icrc.c): about 9 KiB, the same for
 * every packet and flow, written once by rn_icrc_solver_init and only read
 * after that, so one can serve every receive thread.
 */
struct rn_icrc_solver {
	/* unshift[k] takes back 2^k bytes after the ID: x^(-8 * 2^k). */
	uint32_t unshift[16][8][16];
	/* From the CRC difference at the ID to the unknowns (bits 0-15 the
	 * ID, 16 DF clear) and the syndrome (17-31).
	 */
	uint32_t solve[8][16];
};

void rn_icrc_solver_init(struct rn_icrc_solver *s);

/* What rn_icrc_check_ipv4 found the sender's IP header to have had. */
struct rn_icrc_ipid {
	uint16_t id;
	bool df;
};

/*
 * Check the ICRC of a received packet.  Any len is accepted (a length out
 * of range is RN_PKT_TRUNCATED or RN_PKT_OVERSIZE); RN_PKT_BAD_ICRC when
 * it does not match.  For IPv4, the packet passes when some IP ID and DF
 * bit give its ICRC, and *ipid (if not NULL) gets them.  That misses
 * 2^-15 of random errors; rejecting DF clear where peers are known to set
 * it (rxe does) makes that 2^-16 and catches all single-bit errors in
 * packets of any RoCE MTU (icrc.c).
 */
enum rn_pkt_status rn_icrc_check_ipv6(const struct rn_icrc_flow6 *f,
				      const void *pkt, size_t len);
enum rn_pkt_status rn_icrc_check_ipv4(const struct rn_icrc_solver *s,
				      const struct rn_icrc_flow4 *f,
				      const void *pkt, size_t len,
				      struct rn_icrc_ipid *ipid);

#endif
