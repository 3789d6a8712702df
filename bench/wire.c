// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_bench_wire: what the RoCEv2 packet codec costs per packet on this
 * machine: parsing, building, and the ICRC (IPv6 check, IPv4 seal, IPv4
 * check with the ID recovered) under each CRC-32 implementation, for RDMA
 * WRITE MIDDLE packets of 1 KiB and 4 KiB payload, next to zlib's bare
 * crc32() over the same bytes; and for an ACK.  Prints "name value unit"
 * lines.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "roce/icrc.h"
#include "roce/packet.h"

#define RUN_NS 200000000ull /* each measurement runs about 0.2 s */

static uint8_t pkt[4200];
static struct rn_icrc_solver solver;
static volatile uint32_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

enum what { PARSE, BUILD, CRC32, CHECK6, SEAL4, CHECK4 };

static struct rn_icrc_flow4 f4 = { .sport = 0xC132,
				   .dport = RN_PKT_UDP_DPORT };
static struct rn_icrc_flow6 f6 = { .sport = 0xC132,
				   .dport = RN_PKT_UDP_DPORT };

static uint32_t once(enum what w, struct rn_pkt *p, size_t len, uint64_t i)
{
	struct rn_pkt out;

	switch (w) {
	case PARSE:
		return rn_pkt_parse(pkt, len, &out) + out.payload_len;
	case BUILD:
		p->psn = i & RN_PKT_MASK24;
		return rn_pkt_build(p, pkt, sizeof(pkt));
	case CRC32:
		return crc32(0, pkt, len);
	case CHECK6:
		return rn_icrc_check_ipv6(&f6, pkt, len);
	case SEAL4:
		rn_icrc_seal_ipv4(&f4, i, pkt, len);
		return pkt[len - 1];
	case CHECK4:
		return rn_icrc_check_ipv4(&solver, &f4, pkt, len, NULL);
	}
	return 0;
}

static double measure(enum what w, struct rn_pkt *p, size_t len)
{
	uint64_t start = now_ns(), n = 0, t;
	uint32_t acc = 0;
	unsigned int k;

	do {
		for (k = 0; k < 256; k++, n++)
			acc += once(w, p, len, n);
		t = now_ns() - start;
	} while (t < RUN_NS);
	sink = acc;
	return (double)t / n;
}

int main(void)
{
	static const char *const names[] = { "parse", "build", "zlib_crc32",
					     "icrc_check_ipv6", "icrc_seal_ipv4",
					     "icrc_check_ipv4" };
	static const struct {
		const char *name;
		uint8_t opcode;
		uint32_t payload_len;
	} kinds[] = {
		{ "1k", RN_PKT_RC | RN_PKT_OP_WRITE_MIDDLE, 1024 },
		{ "4k", RN_PKT_RC | RN_PKT_OP_WRITE_MIDDLE, 4096 },
		{ "ack", RN_PKT_RC | RN_PKT_OP_ACK, 0 },
	};
	struct rn_pkt p = { .dqpn = 0x11, .aeth.syndrome = 0x1F };
	unsigned int k, w, c;
	const char *crc;
	size_t len;

	inet_pton(AF_INET, "198.18.0.1", &f4.saddr);
	inet_pton(AF_INET, "198.18.0.2", &f4.daddr);
	inet_pton(AF_INET6, "fd00::1", &f6.saddr);
	inet_pton(AF_INET6, "fd00::2", &f6.daddr);
	rn_icrc_solver_init(&solver);
	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		p.opcode = kinds[k].opcode;
		p.payload_len = kinds[k].payload_len;
		for (w = PARSE; w <= CHECK4; w++) {
			/* The ICRC's lines under each CRC-32 implementation. */
			for (c = 0; (crc = rn_icrc_crc_name(c)); c++) {
				bool icrc = w >= CHECK6;

				rn_icrc_use_crc(c);
				/* A valid packet: checks take their OK path. */
				len = rn_pkt_build(&p, pkt, sizeof(pkt));
				if (w == CHECK6)
					rn_icrc_seal_ipv6(&f6, pkt, len);
				else
					rn_icrc_seal_ipv4(&f4, 0x1234, pkt,
							  len);
				printf("%s_%s%s%s %.1f ns\n", names[w],
				       kinds[k].name, icrc ? "_" : "",
				       icrc ? crc : "", measure(w, &p, len));
				if (!icrc)
					break;
			}
		}
	}
	return 0;
}
