/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * RoCEv2 packets: what follows the UDP header (BTH, extension headers,
 * payload, pad, ICRC).  The opcode table, a parser that validates all a
 * packet says about itself, a builder, and the small pieces of arithmetic
 * the transport needs (PSNs, AETH syndromes).  They are
 * described in docs/wire.md, "Packets" and "Sockets".
 *
 * Nothing here keeps state or allocates; the ICRC is in icrc.h.
 */
#ifndef RN_ROCE_PACKET_H
#define RN_ROCE_PACKET_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define RN_PKT_UDP_DPORT 4791
/* The headers the kernel puts before the BTH (no IPv4 options). */
#define RN_PKT_IPV4_BYTES 20
#define RN_PKT_IPV6_BYTES 40
#define RN_PKT_UDP_BYTES 8
#define RN_PKT_BTH_BYTES 12
#define RN_PKT_ICRC_BYTES 4
/* A UDP payload (BTH ... ICRC) is this long at least, and at most. */
#define RN_PKT_MIN_LEN (RN_PKT_BTH_BYTES + RN_PKT_ICRC_BYTES)
#define RN_PKT_MAX_LEN (65535 - 8)
#define RN_PKT_PKEY_DEFAULT 0xFFFF
#define RN_PKT_MASK24 0xFFFFFFu

/* A 16-bit field of a header, big-endian, at any alignment. */
static inline void rn_pkt_put16(uint8_t *b, uint16_t v)
{
	v = htobe16(v);
	memcpy(b, &v, sizeof(v));
}

/* Transports: the top three bits of the opcode, as opcode bases. */
enum rn_pkt_transport {
	RN_PKT_RC = 0x00,
	RN_PKT_UC = 0x20,
	RN_PKT_UD = 0x60,
	RN_PKT_CN = 0x80, /* congestion notification */
	RN_PKT_XRC = 0xA0,
};

/* Operations: the low five bits of the opcode.  An opcode is transport |
 * operation, e.g. RN_PKT_RC | RN_PKT_OP_SEND_FIRST.  UC has 0x00-0x0B only,
 * UD SEND_ONLY and SEND_ONLY_IMM only, CN only the CNP.
 */
enum rn_pkt_opnum {
	RN_PKT_OP_SEND_FIRST = 0x00,
	RN_PKT_OP_SEND_MIDDLE = 0x01,
	RN_PKT_OP_SEND_LAST = 0x02,
	RN_PKT_OP_SEND_LAST_IMM = 0x03,
	RN_PKT_OP_SEND_ONLY = 0x04,
	RN_PKT_OP_SEND_ONLY_IMM = 0x05,
	RN_PKT_OP_WRITE_FIRST = 0x06,
	RN_PKT_OP_WRITE_MIDDLE = 0x07,
	RN_PKT_OP_WRITE_LAST = 0x08,
	RN_PKT_OP_WRITE_LAST_IMM = 0x09,
	RN_PKT_OP_WRITE_ONLY = 0x0A,
	RN_PKT_OP_WRITE_ONLY_IMM = 0x0B,
	RN_PKT_OP_READ_REQUEST = 0x0C,
	RN_PKT_OP_READ_RESP_FIRST = 0x0D,
	RN_PKT_OP_READ_RESP_MIDDLE = 0x0E,
	RN_PKT_OP_READ_RESP_LAST = 0x0F,
	RN_PKT_OP_READ_RESP_ONLY = 0x10,
	RN_PKT_OP_ACK = 0x11,
	RN_PKT_OP_ATOMIC_ACK = 0x12,
	RN_PKT_OP_COMPARE_SWAP = 0x13,
	RN_PKT_OP_FETCH_ADD = 0x14,
	RN_PKT_OP_SEND_LAST_INV = 0x16,
	RN_PKT_OP_SEND_ONLY_INV = 0x17,
	RN_PKT_OP_CNP = 0x01,
};

#define RN_PKT_OPCODE_CNP (RN_PKT_CN | RN_PKT_OP_CNP)

/* Extension headers.  When a packet has several, they follow the BTH in
 * the order of these bits (DETH and XRCETH never meet).
 */
enum rn_pkt_hdr {
	RN_PKT_H_DETH = 1 << 0, /* 8: Q_Key, reserved byte, SrcQP */
	RN_PKT_H_XRCETH = 1 << 1, /* 4: reserved byte, XRC SRQ number */
	RN_PKT_H_RETH = 1 << 2, /* 16: VA, R_Key, DMA length */
	RN_PKT_H_AETH = 1 << 3, /* 4: syndrome, MSN */
	RN_PKT_H_ATOMICETH = 1 << 4, /* 28: VA, R_Key, swap/add, compare */
	RN_PKT_H_ATOMICACKETH = 1 << 5, /* 8: original remote value */
	RN_PKT_H_IMMDT = 1 << 6, /* 4: immediate data */
	RN_PKT_H_IETH = 1 << 7, /* 4: R_Key to invalidate */
	RN_PKT_H_CNP = 1 << 8, /* 16 reserved bytes of a CNP */
};

/* What kind of packet an opcode makes. */
enum rn_pkt_kind {
	RN_PKT_K_SEND,
	RN_PKT_K_WRITE,
	RN_PKT_K_READ_REQ,
	RN_PKT_K_READ_RESP,
	RN_PKT_K_ACK,
	RN_PKT_K_ATOMIC, /* COMPARE_SWAP, FETCH_ADD */
	RN_PKT_K_ATOMIC_ACK,
	RN_PKT_K_CNP,
};

/* Its place in a message.  A packet that is a message by itself (READ
 * request, atomic, ACK, UD send, CNP) is ONLY.
 */
enum rn_pkt_place {
	RN_PKT_FIRST,
	RN_PKT_MIDDLE,
	RN_PKT_LAST,
	RN_PKT_ONLY,
};

enum rn_pkt_flag {
	RN_PKT_F_PAYLOAD = 1 << 0, /* carries a payload, which may be empty */
	RN_PKT_F_REQ = 1 << 1, /* a request (the responder takes it) */
	RN_PKT_F_RESP = 1 << 2, /* a response (the completer takes it) */
};

/* One entry of the opcode table; hdr_len 0 marks an opcode that is
 * rejected (reserved, or not implemented: RD, FLUSH, ATOMIC_WRITE).
 */
struct rn_pkt_op {
	uint8_t hdr_len; /* BTH and extension headers, bytes */
	uint8_t kind; /* enum rn_pkt_kind */
	uint8_t place; /* enum rn_pkt_place */
	uint8_t flags; /* enum rn_pkt_flag */
	uint16_t hdrs; /* enum rn_pkt_hdr */
};

extern const struct rn_pkt_op rn_pkt_ops[256];

/* The table entry of an opcode, or NULL when it is rejected. */
static inline const struct rn_pkt_op *rn_pkt_op(uint8_t opcode)
{
	return rn_pkt_ops[opcode].hdr_len ? &rn_pkt_ops[opcode] : NULL;
}

static inline enum rn_pkt_transport rn_pkt_transport(uint8_t opcode)
{
	return (enum rn_pkt_transport)(opcode & 0xE0);
}

/* Why the parser (or an ICRC check) rejected a packet; one counter each. */
enum rn_pkt_status {
	RN_PKT_OK,
	RN_PKT_TRUNCATED, /* shorter than BTH + ICRC, or than its headers + ICRC */
	RN_PKT_OVERSIZE, /* longer than a UDP datagram's payload */
	RN_PKT_BAD_OPCODE, /* reserved or unsupported opcode */
	RN_PKT_BAD_TVER, /* TVer != 0 */
	RN_PKT_BAD_PKEY, /* P_Key other than 0xFFFF or 0x7FFF */
	RN_PKT_MISALIGNED, /* length not a multiple of 4 */
	RN_PKT_BAD_PAD, /* PadCnt beyond the payload, or on an opcode without */
	RN_PKT_EXTRA_BYTES, /* bytes after the headers of an opcode without payload */
	RN_PKT_BAD_AETH, /* AETH syndrome of a reserved type */
	RN_PKT_BAD_ICRC, /* from icrc.h */
	RN_PKT_NSTATUS
};

struct rn_pkt_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t len; /* of the whole message, in FIRST and ONLY packets */
};

struct rn_pkt_aeth {
	uint8_t syndrome; /* see rn_pkt_aeth_* below */
	uint32_t msn; /* 24 bits */
};

struct rn_pkt_atomiceth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add; /* swap value, or the value to add */
	uint64_t compare; /* 0 in FETCH_ADD */
};

struct rn_pkt_deth {
	uint32_t qkey;
	uint32_t src_qpn; /* 24 bits */
};

/*
 * A packet: what the parser found, in host byte order, or what the builder
 * is to write.  Only the headers named in 'hdrs' are meaningful.
 */
struct rn_pkt {
	/* BTH */
	uint8_t opcode;
	bool se; /* solicited event */
	bool mig; /* M, MigReq */
	uint8_t padcnt;
	uint8_t tver;
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint32_t dqpn; /* 24 bits */
	bool ackreq;
	uint32_t psn; /* 24 bits */
	/* from the opcode table */
	uint16_t hdrs;
	uint8_t hdr_len;
	/* extension headers */
	uint32_t xrc_srqn; /* 24 bits */
	struct rn_pkt_deth deth;
	struct rn_pkt_reth reth;
	struct rn_pkt_aeth aeth;
	struct rn_pkt_atomiceth atomic;
	uint64_t atomic_ack; /* AtomicAckETH */
	uint32_t imm; /* ImmDt: its 4 wire bytes read as a big-endian number */
	uint32_t ieth_rkey;
	/* payload, without the pad */
	const uint8_t *payload;
	uint32_t payload_len;
	uint32_t icrc; /* as received (the wire carries it little-endian) */
};

/*
 * Parse and validate the UDP payload of a RoCEv2 packet, 'len' bytes at
 * 'buf' (the length comes from the UDP header; a datagram that arrived
 * truncated must not get here).  Checks, in this order: length, opcode,
 * TVer, P_Key (low 15 bits all ones, as rxe), the opcode's headers and the
 * ICRC fit, 4-byte alignment, pad and payload, AETH syndrome type.
 * Reserved bits are ignored, as rxe and the IBA's receivers do.  On
 * RN_PKT_OK fills *p, whose payload points into buf; otherwise *p is
 * unspecified.  Does not check the ICRC.
 */
enum rn_pkt_status rn_pkt_parse(const void *buf, size_t len, struct rn_pkt *p);

/* BTH and extension headers of an opcode, bytes; 0 when it is rejected. */
static inline unsigned int rn_pkt_hdr_len(uint8_t opcode)
{
	return rn_pkt_ops[opcode].hdr_len;
}

/* UDP payload length of a packet with 'payload_len' bytes of payload. */
static inline size_t rn_pkt_len(uint8_t opcode, size_t payload_len)
{
	return rn_pkt_hdr_len(opcode) + payload_len + (-payload_len & 3) +
	       RN_PKT_ICRC_BYTES;
}

/*
 * Write the packet *p at buf: the BTH (P_Key 0xFFFF, TVer 0, PadCnt from
 * payload_len; SE, M, FECN, BECN, AckReq as *p says; reserved bits 0), the
 * extension headers of p->opcode, the payload (copied from p->payload
 * unless NULL or already at buf + rn_pkt_hdr_len()), zero pad and a zero
 * ICRC for rn_icrc_seal_*() to fill.  p's pkey, tver, padcnt, hdrs,
 * hdr_len and icrc are not read.  Returns the UDP payload length,
 * rn_pkt_len(), or 0 when the opcode is rejected, the packet would not
 * parse (payload on an opcode without, a 24-bit field out of range, a
 * reserved AETH syndrome) or does not fit in 'cap' bytes.
 */
size_t rn_pkt_build(const struct rn_pkt *p, void *buf, size_t cap);

/*
 * The opcode of packet i of the n packets of a message whose one-packet
 * form is 'only' (SEND_ONLY, SEND_ONLY_IMM, SEND_ONLY_INV, WRITE_ONLY,
 * WRITE_ONLY_IMM or READ_RESP_ONLY, of any transport): FIRST, MIDDLE,
 * LAST (with the immediate or invalidation), or 'only' when n is 1.
 */
uint8_t rn_pkt_message_opcode(uint8_t only, uint32_t i, uint32_t n);

/* ---- PSNs: 24-bit sequence numbers ---- */

static inline uint32_t rn_pkt_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & RN_PKT_MASK24;
}

/* a - b, modulo 2^24. */
static inline uint32_t rn_pkt_psn_sub(uint32_t a, uint32_t b)
{
	return (a - b) & RN_PKT_MASK24;
}

/*
 * Negative, zero or positive as a is before, equal to or after b, within
 * half the PSN space (2^23) of each other: rxe's psn_compare.
 */
static inline int32_t rn_pkt_psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

/* ---- AETH syndromes: type in bits 6..5, value in bits 4..0 ---- */

enum rn_pkt_aeth_type {
	RN_PKT_AETH_ACK = 0x00, /* value: credit count */
	RN_PKT_AETH_RNR_NAK = 0x20, /* value: RNR timer code (docs/wire.md) */
	RN_PKT_AETH_NAK = 0x60, /* value: enum rn_pkt_nak */
};

enum rn_pkt_nak {
	RN_PKT_NAK_PSN_SEQ = 0x00,
	RN_PKT_NAK_INV_REQ = 0x01,
	RN_PKT_NAK_REM_ACCESS = 0x02,
	RN_PKT_NAK_REM_OP = 0x03,
	RN_PKT_NAK_INV_RD_REQ = 0x04,
};

/* The credit count of an ACK that grants no end-to-end credits ("invalid",
 * i.e. unlimited): what rxe always sends.
 */
#define RN_PKT_AETH_NO_CREDIT 0x1F

static inline uint8_t rn_pkt_aeth_ack(unsigned int credit)
{
	return RN_PKT_AETH_ACK | (credit & 0x1F);
}

static inline uint8_t rn_pkt_aeth_rnr_nak(unsigned int timer)
{
	return RN_PKT_AETH_RNR_NAK | (timer & 0x1F);
}

static inline uint8_t rn_pkt_aeth_nak(enum rn_pkt_nak code)
{
	return RN_PKT_AETH_NAK | (code & 0x1F);
}

/* The type of a syndrome the parser accepted (it rejects bit 7 and type
 * 0x40), and its value.
 */
static inline enum rn_pkt_aeth_type rn_pkt_aeth_type(uint8_t syndrome)
{
	return (enum rn_pkt_aeth_type)(syndrome & 0x60);
}

static inline unsigned int rn_pkt_aeth_value(uint8_t syndrome)
{
	return syndrome & 0x1F;
}

#endif
