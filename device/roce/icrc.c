// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <endian.h>
#include <string.h>
#include <zlib.h>
#ifdef RN_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#include "roce/icrc.h"

/*
 * The CRC input: the LRH IB would have (masked: 8 bytes of 0xFF), the IP
 * header, the UDP header, the BTH with byte 4 masked, then the packet on
 * to the end of the pad.  Everything up to the BTH's end is assembled in a
 * small buffer; the rest is crc'd where it lies, in the same zlib pass.
 */
#define LRH_BYTES 8
#define BTH_MASKED 4 /* FECN, BECN, Resv6a */
#define IPV4_MAX_LEN (65535 - RN_PKT_IPV4_BYTES - RN_PKT_UDP_BYTES)
#define HEAD_MAX                                                               \
	(LRH_BYTES + RN_PKT_IPV6_BYTES + RN_PKT_UDP_BYTES + RN_PKT_BTH_BYTES)

/* Where the IPv4 flags are in the CRC input: right after the ID. */
#define IN_IPFLAGS (LRH_BYTES + 6)
#define IP_DF 0x40


/* UDP header and masked BTH at b; returns the bytes written. */
static size_t head_udp_bth(uint8_t *b, uint16_t sport, uint16_t dport,
			   const void *pkt, size_t len)
{
	rn_pkt_put16(b, sport);
	rn_pkt_put16(b + 2, dport);
	rn_pkt_put16(b + 4, RN_PKT_UDP_BYTES + len);
	b[6] = b[7] = 0xFF; /* checksum */
	memcpy(b + RN_PKT_UDP_BYTES, pkt, RN_PKT_BTH_BYTES);
	b[RN_PKT_UDP_BYTES + BTH_MASKED] = 0xFF;
	return RN_PKT_UDP_BYTES + RN_PKT_BTH_BYTES;
}

/*
 * The CRC-32 every packet's ICRC takes, continued from crc.  ISA-L's
 * crc32_gzip_refl is zlib's crc32, chained the same way, with carry-less
 * multiplication where the CPU has it: 15 against 121 ns for 48 bytes,
 * 119 against 618 ns for 1 KiB (measured here).  But where the CPU is
 * emulated (qemu's TCG), each carry-less multiply is a call into the
 * emulator and zlib's table lookups are the faster: an IPv4 ICRC takes
 * 2.1 against 2.8 us for 1 KiB of payload, 0.34 against 0.50 us for an
 * ACK (rn_bench_wire in bench/vm.sh's guest).  So ringnicd times both
 * when it starts (netio.c) and keeps the faster.
 */
static uint32_t crc_zlib(uint32_t crc, const uint8_t *buf, size_t len)
{
	return (uint32_t)crc32(crc, buf, (uInt)len);
}

#ifdef RN_HAVE_ISAL
static uint32_t crc_isal(uint32_t crc, const uint8_t *buf, size_t len)
{
	return crc32_gzip_refl(crc, buf, len);
}
#endif

static const struct {
	const char *name;
	uint32_t (*fn)(uint32_t crc, const uint8_t *buf, size_t len);
} crcs[] = {
	{ "zlib", crc_zlib },
#ifdef RN_HAVE_ISAL
	{ "isa-l", crc_isal },
#endif
};
#define NCRCS (sizeof(crcs) / sizeof(crcs[0]))

/* Set once, before any packet: by whoever starts the device. */
static uint32_t (*crc_more)(uint32_t crc, const uint8_t *buf,
			    size_t len) = crc_zlib;

const char *rn_icrc_crc_name(unsigned int i)
{
	return i < NCRCS ? crcs[i].name : NULL;
}

void rn_icrc_use_crc(unsigned int i)
{
	if (i < NCRCS)
		crc_more = crcs[i].fn;
}

/* The CRC of head[0, n) followed by the packet after its BTH, up to the
 * ICRC.
 */
static uint32_t crc_packet(const uint8_t *head, size_t n, const uint8_t *pkt,
			   size_t len)
{
	return crc_more(crc_more(0, head, n), pkt + RN_PKT_BTH_BYTES,
			len - RN_PKT_BTH_BYTES - RN_PKT_ICRC_BYTES);
}

uint32_t rn_icrc_ipv4(const struct rn_icrc_flow4 *f, uint16_t ip_id, bool df,
		      const void *pkt, size_t len)
{
	uint8_t head[HEAD_MAX];
	uint8_t *ip = head + LRH_BYTES;

	memset(head, 0xFF, LRH_BYTES);
	ip[0] = 0x45; /* version 4, 5 words: never IP options */
	ip[1] = 0xFF; /* TOS: DSCP and ECN */
	rn_pkt_put16(ip + 2, RN_PKT_IPV4_BYTES + RN_PKT_UDP_BYTES + len);
	rn_pkt_put16(ip + 4, ip_id);
	ip[6] = df ? IP_DF : 0; /* and no fragment */
	ip[7] = 0;
	ip[8] = 0xFF; /* TTL */
	ip[9] = IPPROTO_UDP;
	ip[10] = ip[11] = 0xFF; /* checksum */
	memcpy(ip + 12, &f->saddr, 4);
	memcpy(ip + 16, &f->daddr, 4);
	return crc_packet(head,
			  LRH_BYTES + RN_PKT_IPV4_BYTES +
				  head_udp_bth(ip + RN_PKT_IPV4_BYTES, f->sport,
					       f->dport, pkt, len),
			  pkt, len);
}

uint32_t rn_icrc_ipv6(const struct rn_icrc_flow6 *f, const void *pkt,
		      size_t len)
{
	uint8_t head[HEAD_MAX];
	uint8_t *ip = head + LRH_BYTES;

	memset(head, 0xFF, LRH_BYTES);
	/* Version 6; traffic class and flow label masked. */
	ip[0] = 0x6F;
	ip[1] = ip[2] = ip[3] = 0xFF;
	rn_pkt_put16(ip + 4, RN_PKT_UDP_BYTES + len);
	ip[6] = IPPROTO_UDP;
	ip[7] = 0xFF; /* hop limit */
	memcpy(ip + 8, &f->saddr, 16);
	memcpy(ip + 24, &f->daddr, 16);
	return crc_packet(head,
			  LRH_BYTES + RN_PKT_IPV6_BYTES +
				  head_udp_bth(ip + RN_PKT_IPV6_BYTES, f->sport,
					       f->dport, pkt, len),
			  pkt, len);
}

/* Little-endian on the wire: rxe stores the u32 in x86 order. */
uint32_t rn_icrc_get(const void *pkt, size_t len)
{
	uint32_t v;

	memcpy(&v, (const uint8_t *)pkt + len - RN_PKT_ICRC_BYTES, sizeof(v));
	return le32toh(v);
}

void rn_icrc_put(void *pkt, size_t len, uint32_t icrc)
{
	icrc = htole32(icrc);
	memcpy((uint8_t *)pkt + len - RN_PKT_ICRC_BYTES, &icrc, sizeof(icrc));
}

void rn_icrc_seal_ipv4(const struct rn_icrc_flow4 *f, uint16_t ip_id,
		       void *pkt, size_t len)
{
	rn_icrc_put(pkt, len, rn_icrc_ipv4(f, ip_id, true, pkt, len));
}

void rn_icrc_seal_ipv6(const struct rn_icrc_flow6 *f, void *pkt, size_t len)
{
	rn_icrc_put(pkt, len, rn_icrc_ipv6(f, pkt, len));
}

enum rn_pkt_status rn_icrc_check_ipv6(const struct rn_icrc_flow6 *f,
				      const void *pkt, size_t len)
{
	if (len < RN_PKT_MIN_LEN)
		return RN_PKT_TRUNCATED;
	if (len > RN_PKT_MAX_LEN)
		return RN_PKT_OVERSIZE;
	return rn_icrc_ipv6(f, pkt, len) == rn_icrc_get(pkt, len) ?
		       RN_PKT_OK :
		       RN_PKT_BAD_ICRC;
}

/*
 * IPv4 receive: recovering the IP ID (docs/wire.md, "ICRC").
 *
 * A UDP socket never shows the Identification of what it receives, nor
 * DF, and the ICRC covers both.  But a CRC is affine: for messages of one
 * length, crc(m ^ e) = crc(m) ^ L(e) with L linear over GF(2).  So the
 * received ICRC R of the packet sent with ID i and DF d, and the ICRC C0
 * computed here with ID 0 and DF set (as rxe and ringnicd send), differ
 * by D = C0 ^ R = L(e), e being the 17 bits (16 of ID, DF) where the two
 * IP headers differ.  L maps those 17 bits injectively (they lie within 24
 * consecutive bits and CRC-32 detects every burst up to 32 bits), onto a
 * 17-dimensional subspace of the 2^32 possible D.  Solving D = L(e)
 * yields ID and DF; a D outside the subspace means the packet was damaged.
 *
 * L(e) is the CRC difference right after the three bytes ID, ID, flags
 * (L3(e), the same for every packet), carried through the n bytes that
 * follow them: multiplied by x^(8n) modulo the CRC polynomial, a linear
 * map that depends on n and is invertible.  So D is first carried back,
 * through the inverse maps for the bits of n (x^(-8 * 2^k), one table
 * each), then a fixed matrix S, from Gauss-Jordan elimination of L3's
 * 32x17 matrix with the identity alongside, turns it into (e, 0) when
 * D = L(e) and into something with nonzero bits 17-31 (the syndrome)
 * otherwise.  Every map is kept as eight nibble tables: after the crc32
 * pass a packet costs 8 loads and XORs per set bit of n, plus 8; about
 * 300 instructions for an MTU-sized packet or an ACK (3 bits set),
 * against 4,100 for crc32() over 1 KiB.  A cache of per-length matrices
 * (one table lookup per packet) was measured first: each new length cost
 * 53,000 instructions to fill (17 crc32_combine()s and the elimination),
 * and lengths are not few when message sizes vary: each message's last
 * packet has its own.
 *
 * The price: a damaged packet whose error happens to equal L(e) for some
 * e passes as "sent with another ID/DF".  For errors that scramble the
 * CRC, that is 2^17 of the 2^32 differences: 2^-15 undetected, where a
 * full check has 2^-32 (measured: test_icrc).  Not even every single-bit
 * error is caught any more: whether one is depends only on its distance
 * from the ID field, and from the BTH on, bit 0x08 of byte 173 and bit
 * 0x40 of byte 1834 pass (10 bits in 64 KiB).  Both pass as DF clear, and
 * so do half the random errors: a receiver that insists on DF (rxe and
 * ringnicd always set it) halves the residual to 2^-16 and catches every
 * single-bit error in packets shorter than 26 KiB.  Known-ID schemes
 * would do better, but rxe and hardware pick their IDs freely.
 *
 * Why not read the IP header from an AF_PACKET (or AF_XDP) socket: that
 * needs CAP_NET_RAW, a second copy of every packet alongside the UDP
 * socket ringnicd needs anyway (the kernel still delivers there, or it
 * answers ICMP port unreachable), and a way to pair each capture with its
 * datagram.  The recovery checks every received packet's ICRC through the
 * plain UDP socket, at the cost of that 2^-15.
 */
#define UNKNOWNS 17
#define DF_UNKNOWN 16

/* A 32x32 matrix over GF(2) as nibble tables: t[m][n] is its product
 * with n << 4m.
 */
static uint32_t apply(const uint32_t t[8][16], uint32_t v)
{
	uint32_t y = 0;
	unsigned int m;

	for (m = 0; m < 8; m++)
		y ^= t[m][v >> (4 * m) & 15];
	return y;
}

/*
 * Given the ncols <= 32 independent columns of a 32 x ncols matrix A,
 * the tables of an invertible S with S.A = the identity on top of zeros:
 * Gauss-Jordan elimination of A's rows (bits 0-31) with the identity
 * alongside (bits 32-63), which records S.  For ncols = 32, S = A^-1.
 */
static void eliminate(const uint32_t *col, unsigned int ncols,
		      uint32_t t[8][16])
{
	uint32_t scol[32] = { 0 };
	uint64_t row[32], tmp;
	unsigned int k, r, j, m, n;

	for (r = 0; r < 32; r++) {
		row[r] = (uint64_t)1 << (32 + r);
		for (k = 0; k < ncols; k++)
			row[r] |= (uint64_t)(col[k] >> r & 1) << k;
	}
	for (k = 0; k < ncols; k++) {
		/* The columns are independent, so a pivot exists. */
		for (r = k; r < 32 && !(row[r] >> k & 1); r++)
			;
		if (r == 32)
			continue;
		tmp = row[k];
		row[k] = row[r];
		row[r] = tmp;
		for (r = 0; r < 32; r++)
			if (r != k && (row[r] >> k & 1))
				row[r] ^= row[k];
	}
	/* Row r of S is row[r] >> 32: its columns, then the tables. */
	for (r = 0; r < 32; r++)
		for (j = 0; j < 32; j++)
			scol[j] |= (uint32_t)(row[r] >> (32 + j) & 1) << r;
	for (m = 0; m < 8; m++)
		for (n = 0; n < 16; n++) {
			t[m][n] = 0;
			for (j = 0; j < 4; j++)
				if (n >> j & 1)
					t[m][n] ^= scol[4 * m + j];
		}
}

void rn_icrc_solver_init(struct rn_icrc_solver *s)
{
	static const uint8_t zero[3];
	const uLong crc0 = crc32(0, zero, 3);
	uint32_t col[32];
	unsigned int k, m, n;

	/* One zero byte more multiplies the CRC state by x^8: that map's
	 * columns, its inverse, then the inverse's powers 2, 4, 8...
	 */
	for (k = 0; k < 32; k++)
		col[k] = crc32_combine(1ul << k, 0, 1);
	eliminate(col, 32, s->unshift[0]);
	for (k = 1; k < 16; k++)
		for (m = 0; m < 8; m++)
			for (n = 0; n < 16; n++)
				s->unshift[k][m][n] =
					apply(s->unshift[k - 1],
					      s->unshift[k - 1][m][n]);

	/* L3: what each unknown bit alone does to the CRC state after the
	 * three bytes ID, ID, flags.
	 */
	for (k = 0; k < UNKNOWNS; k++) {
		uint8_t q[3] = { 0 };

		if (k == DF_UNKNOWN)
			q[2] = IP_DF;
		else
			q[1 - k / 8] = 1u << (k % 8);
		col[k] = crc32(0, q, 3) ^ crc0;
	}
	eliminate(col, UNKNOWNS, s->solve);
}

enum rn_pkt_status rn_icrc_check_ipv4(const struct rn_icrc_solver *s,
				      const struct rn_icrc_flow4 *f,
				      const void *pkt, size_t len,
				      struct rn_icrc_ipid *ipid)
{
	uint32_t d, y, n;

	if (len < RN_PKT_MIN_LEN)
		return RN_PKT_TRUNCATED;
	if (len > IPV4_MAX_LEN)
		return RN_PKT_OVERSIZE;
	d = rn_icrc_ipv4(f, 0, true, pkt, len) ^ rn_icrc_get(pkt, len);
	/* The bytes of CRC input after the flags byte: all of it (LRH, IP,
	 * UDP, the packet less its ICRC) but the flags and what precedes.
	 */
	n = LRH_BYTES + RN_PKT_IPV4_BYTES + RN_PKT_UDP_BYTES + len -
	    RN_PKT_ICRC_BYTES - (IN_IPFLAGS + 1);
	for (; n; n &= n - 1)
		d = apply(s->unshift[__builtin_ctz(n)], d);
	y = apply(s->solve, d);
	if (y >> UNKNOWNS)
		return RN_PKT_BAD_ICRC;
	if (ipid) {
		ipid->id = y;
		ipid->df = !(y >> DF_UNKNOWN & 1);
	}
	return RN_PKT_OK;
}
