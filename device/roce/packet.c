// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <endian.h>
#include <string.h>

#include "roce/packet.h"

#define HLEN(h)                                                                \
	(RN_PKT_BTH_BYTES + ((h) & RN_PKT_H_DETH ? 8 : 0) +                    \
	 ((h) & RN_PKT_H_XRCETH ? 4 : 0) + ((h) & RN_PKT_H_RETH ? 16 : 0) +    \
	 ((h) & RN_PKT_H_AETH ? 4 : 0) + ((h) & RN_PKT_H_ATOMICETH ? 28 : 0) + \
	 ((h) & RN_PKT_H_ATOMICACKETH ? 8 : 0) +                               \
	 ((h) & RN_PKT_H_IMMDT ? 4 : 0) + ((h) & RN_PKT_H_IETH ? 4 : 0) +      \
	 ((h) & RN_PKT_H_CNP ? 16 : 0))

#define OP(opcode, k, pl, fl, h)                                               \
	[opcode] = { .hdr_len = HLEN(h), .kind = RN_PKT_K_##k,                 \
		     .place = RN_PKT_##pl, .flags = (fl), .hdrs = (h) }

#define REQ (RN_PKT_F_REQ)
#define REQ_PL (RN_PKT_F_REQ | RN_PKT_F_PAYLOAD)
#define RESP (RN_PKT_F_RESP)
#define RESP_PL (RN_PKT_F_RESP | RN_PKT_F_PAYLOAD)

/* SEND and RDMA WRITE requests, the operations RC, UC and XRC share; 'x' is
 * the header every request of the transport carries after the BTH.
 */
#define SEND_WRITE_OPS(t, x)                                                   \
	OP((t) | RN_PKT_OP_SEND_FIRST, SEND, FIRST, REQ_PL, (x)),              \
	OP((t) | RN_PKT_OP_SEND_MIDDLE, SEND, MIDDLE, REQ_PL, (x)),            \
	OP((t) | RN_PKT_OP_SEND_LAST, SEND, LAST, REQ_PL, (x)),                \
	OP((t) | RN_PKT_OP_SEND_LAST_IMM, SEND, LAST, REQ_PL,                  \
	   (x) | RN_PKT_H_IMMDT),                                              \
	OP((t) | RN_PKT_OP_SEND_ONLY, SEND, ONLY, REQ_PL, (x)),                \
	OP((t) | RN_PKT_OP_SEND_ONLY_IMM, SEND, ONLY, REQ_PL,                  \
	   (x) | RN_PKT_H_IMMDT),                                              \
	OP((t) | RN_PKT_OP_WRITE_FIRST, WRITE, FIRST, REQ_PL,                  \
	   (x) | RN_PKT_H_RETH),                                               \
	OP((t) | RN_PKT_OP_WRITE_MIDDLE, WRITE, MIDDLE, REQ_PL, (x)),          \
	OP((t) | RN_PKT_OP_WRITE_LAST, WRITE, LAST, REQ_PL, (x)),              \
	OP((t) | RN_PKT_OP_WRITE_LAST_IMM, WRITE, LAST, REQ_PL,                \
	   (x) | RN_PKT_H_IMMDT),                                              \
	OP((t) | RN_PKT_OP_WRITE_ONLY, WRITE, ONLY, REQ_PL,                    \
	   (x) | RN_PKT_H_RETH),                                               \
	OP((t) | RN_PKT_OP_WRITE_ONLY_IMM, WRITE, ONLY, REQ_PL,                \
	   (x) | RN_PKT_H_RETH | RN_PKT_H_IMMDT)

/* The reliable operations beyond SEND and WRITE (RC and XRC).  Responses
 * carry no XRCETH: it names the target's SRQ, which only requests need.
 */
#define RELIABLE_OPS(t, x)                                                     \
	OP((t) | RN_PKT_OP_READ_REQUEST, READ_REQ, ONLY, REQ,                  \
	   (x) | RN_PKT_H_RETH),                                               \
	OP((t) | RN_PKT_OP_READ_RESP_FIRST, READ_RESP, FIRST, RESP_PL,         \
	   RN_PKT_H_AETH),                                                     \
	OP((t) | RN_PKT_OP_READ_RESP_MIDDLE, READ_RESP, MIDDLE, RESP_PL, 0),   \
	OP((t) | RN_PKT_OP_READ_RESP_LAST, READ_RESP, LAST, RESP_PL,           \
	   RN_PKT_H_AETH),                                                     \
	OP((t) | RN_PKT_OP_READ_RESP_ONLY, READ_RESP, ONLY, RESP_PL,           \
	   RN_PKT_H_AETH),                                                     \
	OP((t) | RN_PKT_OP_ACK, ACK, ONLY, RESP, RN_PKT_H_AETH),               \
	OP((t) | RN_PKT_OP_ATOMIC_ACK, ATOMIC_ACK, ONLY, RESP,                 \
	   RN_PKT_H_AETH | RN_PKT_H_ATOMICACKETH),                             \
	OP((t) | RN_PKT_OP_COMPARE_SWAP, ATOMIC, ONLY, REQ,                    \
	   (x) | RN_PKT_H_ATOMICETH),                                          \
	OP((t) | RN_PKT_OP_FETCH_ADD, ATOMIC, ONLY, REQ,                       \
	   (x) | RN_PKT_H_ATOMICETH),                                          \
	OP((t) | RN_PKT_OP_SEND_LAST_INV, SEND, LAST, REQ_PL,                  \
	   (x) | RN_PKT_H_IETH),                                               \
	OP((t) | RN_PKT_OP_SEND_ONLY_INV, SEND, ONLY, REQ_PL,                  \
	   (x) | RN_PKT_H_IETH)

/*
 * Headers per opcode as rxe 6.1 lays them out (rxe_opcode.c; docs/wire.md).
 * XRC is not in rxe 6.1 nor in mainline ib_pack.h; its layout was checked
 * in the XRC series posted for rxe (linux-rdma, 2021-2022: XRCETH at
 * offset 12 of every request, before RETH, AtomicETH, ImmDt or IETH;
 * responses as RC's) and in an independent IB packet library (a libtins
 * fork's BTH, which writes RDETH, DETH, XRCETH, then RETH, AETH, ...):
 * both put the transport's own ETHs (RDETH, DETH, XRCETH) right after the
 * BTH and the operation's after them.
 */
const struct rn_pkt_op rn_pkt_ops[256] = {
	SEND_WRITE_OPS(RN_PKT_RC, 0),
	RELIABLE_OPS(RN_PKT_RC, 0),
	SEND_WRITE_OPS(RN_PKT_UC, 0),
	OP(RN_PKT_UD | RN_PKT_OP_SEND_ONLY, SEND, ONLY, REQ_PL, RN_PKT_H_DETH),
	OP(RN_PKT_UD | RN_PKT_OP_SEND_ONLY_IMM, SEND, ONLY, REQ_PL,
	   RN_PKT_H_DETH | RN_PKT_H_IMMDT),
	/* BTH (the QP to notify, BECN set) and 16 reserved bytes. */
	OP(RN_PKT_OPCODE_CNP, CNP, ONLY, 0, RN_PKT_H_CNP),
	SEND_WRITE_OPS(RN_PKT_XRC, RN_PKT_H_XRCETH),
	RELIABLE_OPS(RN_PKT_XRC, RN_PKT_H_XRCETH),
};

/* ---- big-endian fields ---- */

static inline uint16_t get16(const uint8_t *b)
{
	uint16_t v;

	memcpy(&v, b, sizeof(v));
	return be16toh(v);
}

static inline uint32_t get24(const uint8_t *b)
{
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static inline uint32_t get32(const uint8_t *b)
{
	uint32_t v;

	memcpy(&v, b, sizeof(v));
	return be32toh(v);
}

static inline uint64_t get64(const uint8_t *b)
{
	uint64_t v;

	memcpy(&v, b, sizeof(v));
	return be64toh(v);
}


static inline void put24(uint8_t *b, uint32_t v)
{
	b[0] = v >> 16;
	b[1] = v >> 8;
	b[2] = v;
}

static inline void put32(uint8_t *b, uint32_t v)
{
	v = htobe32(v);
	memcpy(b, &v, sizeof(v));
}

static inline void put64(uint8_t *b, uint64_t v)
{
	v = htobe64(v);
	memcpy(b, &v, sizeof(v));
}

/* BTH byte 1 and its neighbours. */
#define BTH_SE 0x80
#define BTH_MIG 0x40
#define BTH_PAD_SHIFT 4
#define BTH_TVER 0x0F
#define BTH_FECN 0x80
#define BTH_BECN 0x40
#define BTH_ACKREQ 0x80
/* The low 15 bits of a P_Key are the key, the top bit full membership. */
#define PKEY_KEY 0x7FFF

/* Syndrome types rxe knows (bits 7..5 after its 0xE0 mask): ACK, RNR NAK
 * and NAK; 0x40 and anything with bit 7 are reserved.
 */
static inline bool aeth_syndrome_valid(uint8_t syn)
{
	uint8_t t = syn & 0xE0;

	return t == RN_PKT_AETH_ACK || t == RN_PKT_AETH_RNR_NAK ||
	       t == RN_PKT_AETH_NAK;
}

enum rn_pkt_status rn_pkt_parse(const void *buf, size_t len, struct rn_pkt *p)
{
	const uint8_t *b = buf;
	const struct rn_pkt_op *op;
	const uint8_t *h;
	size_t room;
	unsigned int pad;
	uint16_t pkey;

	if (len < RN_PKT_MIN_LEN)
		return RN_PKT_TRUNCATED;
	if (len > RN_PKT_MAX_LEN)
		return RN_PKT_OVERSIZE;
	op = &rn_pkt_ops[b[0]];
	if (!op->hdr_len)
		return RN_PKT_BAD_OPCODE;
	if (b[1] & BTH_TVER)
		return RN_PKT_BAD_TVER;
	pkey = get16(b + 2);
	if ((pkey & PKEY_KEY) != PKEY_KEY)
		return RN_PKT_BAD_PKEY;
	if (len < (size_t)op->hdr_len + RN_PKT_ICRC_BYTES)
		return RN_PKT_TRUNCATED;
	/* Headers are whole words and IB packets are (PadCnt makes them). */
	if (len & 3)
		return RN_PKT_MISALIGNED;
	room = len - op->hdr_len - RN_PKT_ICRC_BYTES;
	pad = b[1] >> BTH_PAD_SHIFT & 3;
	if (!(op->flags & RN_PKT_F_PAYLOAD)) {
		if (room)
			return RN_PKT_EXTRA_BYTES;
		if (pad)
			return RN_PKT_BAD_PAD;
	} else if (pad > room) {
		return RN_PKT_BAD_PAD;
	}
	if ((op->hdrs & RN_PKT_H_AETH) &&
	    !aeth_syndrome_valid(b[RN_PKT_BTH_BYTES]))
		return RN_PKT_BAD_AETH;

	/* The packet is well formed: fill the view in one pass. */
	*p = (struct rn_pkt){
		.opcode = b[0],
		.se = b[1] & BTH_SE,
		.mig = b[1] & BTH_MIG,
		.padcnt = pad,
		.pkey = pkey,
		.fecn = b[4] & BTH_FECN,
		.becn = b[4] & BTH_BECN,
		.dqpn = get24(b + 5),
		.ackreq = b[8] & BTH_ACKREQ,
		.psn = get24(b + 9),
		.hdrs = op->hdrs,
		.hdr_len = op->hdr_len,
		.payload = b + op->hdr_len,
		.payload_len = room - pad,
	};
	h = b + RN_PKT_BTH_BYTES;
	if (op->hdrs & RN_PKT_H_DETH) {
		p->deth.qkey = get32(h);
		p->deth.src_qpn = get24(h + 5);
		h += 8;
	}
	if (op->hdrs & RN_PKT_H_XRCETH) {
		p->xrc_srqn = get24(h + 1);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_RETH) {
		p->reth.va = get64(h);
		p->reth.rkey = get32(h + 8);
		p->reth.len = get32(h + 12);
		h += 16;
	}
	if (op->hdrs & RN_PKT_H_AETH) {
		p->aeth.syndrome = h[0];
		p->aeth.msn = get24(h + 1);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_ATOMICETH) {
		p->atomic.va = get64(h);
		p->atomic.rkey = get32(h + 8);
		p->atomic.swap_add = get64(h + 12);
		p->atomic.compare = get64(h + 20);
		h += 28;
	}
	if (op->hdrs & RN_PKT_H_ATOMICACKETH) {
		p->atomic_ack = get64(h);
		h += 8;
	}
	if (op->hdrs & RN_PKT_H_IMMDT) {
		p->imm = get32(h);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_IETH)
		p->ieth_rkey = get32(h);
	/* CNP: 16 reserved bytes, ignored. */
	memcpy(&p->icrc, b + len - RN_PKT_ICRC_BYTES, sizeof(p->icrc));
	p->icrc = le32toh(p->icrc);
	return RN_PKT_OK;
}

/* Whether the builder can write *p as a packet the parser accepts. */
static bool buildable(const struct rn_pkt *p, const struct rn_pkt_op *op)
{
	uint32_t wide = p->dqpn | p->psn;

	if (!op->hdr_len)
		return false;
	if (!(op->flags & RN_PKT_F_PAYLOAD) && p->payload_len)
		return false;
	if (op->hdrs & RN_PKT_H_DETH)
		wide |= p->deth.src_qpn;
	if (op->hdrs & RN_PKT_H_XRCETH)
		wide |= p->xrc_srqn;
	if (op->hdrs & RN_PKT_H_AETH) {
		if (!aeth_syndrome_valid(p->aeth.syndrome))
			return false;
		wide |= p->aeth.msn;
	}
	return !(wide & ~RN_PKT_MASK24);
}

size_t rn_pkt_build(const struct rn_pkt *p, void *buf, size_t cap)
{
	const struct rn_pkt_op *op = &rn_pkt_ops[p->opcode];
	uint8_t *b = buf;
	unsigned int pad;
	size_t len;
	uint8_t *h;

	if (!buildable(p, op) || p->payload_len > RN_PKT_MAX_LEN)
		return 0;
	len = rn_pkt_len(p->opcode, p->payload_len);
	if (len > RN_PKT_MAX_LEN || len > cap)
		return 0;
	pad = -p->payload_len & 3;

	b[0] = p->opcode;
	b[1] = (p->se ? BTH_SE : 0) | (p->mig ? BTH_MIG : 0) |
	       pad << BTH_PAD_SHIFT;
	rn_pkt_put16(b + 2, RN_PKT_PKEY_DEFAULT);
	b[4] = (p->fecn ? BTH_FECN : 0) | (p->becn ? BTH_BECN : 0);
	put24(b + 5, p->dqpn);
	b[8] = p->ackreq ? BTH_ACKREQ : 0;
	put24(b + 9, p->psn);
	h = b + RN_PKT_BTH_BYTES;
	if (op->hdrs & RN_PKT_H_DETH) {
		put32(h, p->deth.qkey);
		h[4] = 0;
		put24(h + 5, p->deth.src_qpn);
		h += 8;
	}
	if (op->hdrs & RN_PKT_H_XRCETH) {
		h[0] = 0;
		put24(h + 1, p->xrc_srqn);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_RETH) {
		put64(h, p->reth.va);
		put32(h + 8, p->reth.rkey);
		put32(h + 12, p->reth.len);
		h += 16;
	}
	if (op->hdrs & RN_PKT_H_AETH) {
		h[0] = p->aeth.syndrome;
		put24(h + 1, p->aeth.msn);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_ATOMICETH) {
		put64(h, p->atomic.va);
		put32(h + 8, p->atomic.rkey);
		put64(h + 12, p->atomic.swap_add);
		put64(h + 20, p->atomic.compare);
		h += 28;
	}
	if (op->hdrs & RN_PKT_H_ATOMICACKETH) {
		put64(h, p->atomic_ack);
		h += 8;
	}
	if (op->hdrs & RN_PKT_H_IMMDT) {
		put32(h, p->imm);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_IETH) {
		put32(h, p->ieth_rkey);
		h += 4;
	}
	if (op->hdrs & RN_PKT_H_CNP) {
		memset(h, 0, 16);
		h += 16;
	}
	if (p->payload && p->payload != h)
		memmove(h, p->payload, p->payload_len);
	memset(h + p->payload_len, 0, pad + RN_PKT_ICRC_BYTES);
	return len;
}

uint8_t rn_pkt_message_opcode(uint8_t only, uint32_t i, uint32_t n)
{
	uint8_t t = only & 0xE0, first, middle, last;

	if (n <= 1)
		return only;
	switch (only & 0x1F) {
	case RN_PKT_OP_WRITE_ONLY:
	case RN_PKT_OP_WRITE_ONLY_IMM:
		first = RN_PKT_OP_WRITE_FIRST;
		middle = RN_PKT_OP_WRITE_MIDDLE;
		last = (only & 0x1F) == RN_PKT_OP_WRITE_ONLY ?
			       RN_PKT_OP_WRITE_LAST :
			       RN_PKT_OP_WRITE_LAST_IMM;
		break;
	case RN_PKT_OP_READ_RESP_ONLY:
		first = RN_PKT_OP_READ_RESP_FIRST;
		middle = RN_PKT_OP_READ_RESP_MIDDLE;
		last = RN_PKT_OP_READ_RESP_LAST;
		break;
	default:
		first = RN_PKT_OP_SEND_FIRST;
		middle = RN_PKT_OP_SEND_MIDDLE;
		last = (only & 0x1F) == RN_PKT_OP_SEND_ONLY_IMM ?
			       RN_PKT_OP_SEND_LAST_IMM :
		       (only & 0x1F) == RN_PKT_OP_SEND_ONLY_INV ?
			       RN_PKT_OP_SEND_LAST_INV :
			       RN_PKT_OP_SEND_LAST;
		break;
	}
	return t | (i == 0 ? first : i + 1 < n ? middle : last);
}
