// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The RoCEv2 packet codec: the opcode table, build/parse of every opcode
 * with every field at its boundaries, each reason the parser rejects a
 * packet, golden layouts, and the PSN, AETH and UDP port helpers.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "roce/packet.h"

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

/* splitmix64: reproducible test data. */
static uint64_t rnd(void)
{
	uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint8_t buf[RN_PKT_MAX_LEN + 64];
static uint8_t payload[RN_PKT_MAX_LEN];

/* ---- the opcode table ---- */

/* Header bytes after the BTH of the RC operations 0x00-0x17 (-1: none). */
static const int rc_ext[0x18] = {
	0, 0, 0, 4, 0, 4, /* SEND */
	16, 0, 0, 4, 16, 20, /* WRITE */
	16, 4, 0, 4, 4, /* READ request, responses */
	4, 12, 28, 28, /* ACK, ATOMIC ACK, CMP_SWAP, FETCH_ADD */
	-1, 4, 4, /* reserved, SEND with invalidate */
};

static bool is_response(unsigned int op)
{
	return op >= RN_PKT_OP_READ_RESP_FIRST && op <= RN_PKT_OP_ATOMIC_ACK;
}

static int expected_hdr_len(unsigned int opcode)
{
	unsigned int op = opcode & 0x1F;

	switch (opcode & 0xE0) {
	case RN_PKT_RC:
		return op < 0x18 && rc_ext[op] >= 0 ? 12 + rc_ext[op] : 0;
	case RN_PKT_UC:
		return op <= RN_PKT_OP_WRITE_ONLY_IMM ? 12 + rc_ext[op] : 0;
	case RN_PKT_UD:
		return op == RN_PKT_OP_SEND_ONLY ? 20 :
		       op == RN_PKT_OP_SEND_ONLY_IMM ? 24 : 0;
	case RN_PKT_CN:
		return op == RN_PKT_OP_CNP ? 28 : 0;
	case RN_PKT_XRC:
		/* RC's operations; requests carry a 4-byte XRCETH. */
		if (op >= 0x18 || rc_ext[op] < 0)
			return 0;
		return 12 + rc_ext[op] + (is_response(op) ? 0 : 4);
	default:
		return 0;
	}
}

static void test_table(void **state)
{
	unsigned int opcode, accepted = 0;
	const struct rn_pkt_op *op;

	(void)state;
	for (opcode = 0; opcode < 256; opcode++) {
		op = rn_pkt_op(opcode);
		assert_int_equal(rn_pkt_hdr_len(opcode), expected_hdr_len(opcode));
		if (!expected_hdr_len(opcode)) {
			assert_null(op);
			continue;
		}
		accepted++;
		assert_non_null(op);
		assert_int_equal(op->hdr_len % 4, 0);
		/* Exactly one of request, response, CNP. */
		if (opcode == RN_PKT_OPCODE_CNP) {
			assert_int_equal(op->flags, 0);
			assert_int_equal(op->kind, RN_PKT_K_CNP);
		} else {
			assert_int_equal(!!(op->flags & RN_PKT_F_REQ),
					 !is_response(opcode & 0x1F));
			assert_int_equal(!!(op->flags & RN_PKT_F_RESP),
					 is_response(opcode & 0x1F));
		}
		/* XRCETH on exactly the XRC requests. */
		assert_int_equal(!!(op->hdrs & RN_PKT_H_XRCETH),
				 rn_pkt_transport(opcode) == RN_PKT_XRC &&
					 (op->flags & RN_PKT_F_REQ));
	}
	/* RC 23, UC 12, UD 2, CNP 1, XRC 23. */
	assert_int_equal(accepted, 61);

	/* Reserved and unimplemented: RESYNC/0x15, 0x18-0x1F (FLUSH 0x1C,
	 * ATOMIC_WRITE 0x1D), UC READ, RD, UD SEND_FIRST, other CN.
	 */
	assert_null(rn_pkt_op(0x15));
	assert_null(rn_pkt_op(0x1C));
	assert_null(rn_pkt_op(0x1D));
	assert_null(rn_pkt_op(0x2C));
	assert_null(rn_pkt_op(0x44));
	assert_null(rn_pkt_op(0x60));
	assert_null(rn_pkt_op(0x80));
	assert_null(rn_pkt_op(0xB5));
	assert_null(rn_pkt_op(0xE4));

	/* Kinds, places and payloads of a few. */
	op = rn_pkt_op(RN_PKT_RC | RN_PKT_OP_READ_RESP_MIDDLE);
	assert_int_equal(op->kind, RN_PKT_K_READ_RESP);
	assert_int_equal(op->place, RN_PKT_MIDDLE);
	assert_int_equal(op->flags, RN_PKT_F_RESP | RN_PKT_F_PAYLOAD);
	assert_int_equal(op->hdrs, 0);
	op = rn_pkt_op(RN_PKT_UC | RN_PKT_OP_WRITE_ONLY_IMM);
	assert_int_equal(op->kind, RN_PKT_K_WRITE);
	assert_int_equal(op->place, RN_PKT_ONLY);
	assert_int_equal(op->hdrs, RN_PKT_H_RETH | RN_PKT_H_IMMDT);
	op = rn_pkt_op(RN_PKT_RC | RN_PKT_OP_READ_REQUEST);
	assert_int_equal(op->kind, RN_PKT_K_READ_REQ);
	assert_int_equal(op->flags, RN_PKT_F_REQ);
	op = rn_pkt_op(RN_PKT_XRC | RN_PKT_OP_SEND_LAST_INV);
	assert_int_equal(op->kind, RN_PKT_K_SEND);
	assert_int_equal(op->place, RN_PKT_LAST);
	assert_int_equal(op->hdrs, RN_PKT_H_XRCETH | RN_PKT_H_IETH);
	op = rn_pkt_op(RN_PKT_UD | RN_PKT_OP_SEND_ONLY_IMM);
	assert_int_equal(op->hdrs, RN_PKT_H_DETH | RN_PKT_H_IMMDT);
	op = rn_pkt_op(RN_PKT_RC | RN_PKT_OP_ATOMIC_ACK);
	assert_int_equal(op->hdrs, RN_PKT_H_AETH | RN_PKT_H_ATOMICACKETH);
	assert_int_equal(op->flags, RN_PKT_F_RESP);
}

/* ---- build and parse ---- */

static uint32_t rnd24(void)
{
	return rnd() & RN_PKT_MASK24;
}

/* A valid syndrome: ACK, RNR NAK or NAK with any value. */
static uint8_t rnd_syndrome(void)
{
	static const uint8_t types[] = { 0x00, 0x20, 0x60 };

	return types[rnd() % 3] | (rnd() & 0x1F);
}

static void fill_random(struct rn_pkt *p, uint8_t opcode, uint32_t plen)
{
	*p = (struct rn_pkt){
		.opcode = opcode,
		.se = rnd() & 1,
		.mig = rnd() & 1,
		.fecn = rnd() & 1,
		.becn = rnd() & 1,
		.dqpn = rnd24(),
		.ackreq = rnd() & 1,
		.psn = rnd24(),
		.xrc_srqn = rnd24(),
		.deth = { .qkey = rnd(), .src_qpn = rnd24() },
		.reth = { .va = rnd(), .rkey = rnd(), .len = rnd() },
		.aeth = { .syndrome = rnd_syndrome(), .msn = rnd24() },
		.atomic = { .va = rnd(), .rkey = rnd(), .swap_add = rnd(),
			    .compare = rnd() },
		.atomic_ack = rnd(),
		.imm = rnd(),
		.ieth_rkey = rnd(),
		.payload = payload,
		.payload_len = plen,
	};
}

/* Every field at its smallest or largest. */
static void fill_extreme(struct rn_pkt *p, uint8_t opcode, uint32_t plen,
			 bool max)
{
	uint64_t m64 = max ? UINT64_MAX : 0;
	uint32_t m32 = max ? UINT32_MAX : 0, m24 = max ? RN_PKT_MASK24 : 0;

	*p = (struct rn_pkt){
		.opcode = opcode,
		.se = max,
		.mig = max,
		.fecn = max,
		.becn = max,
		.dqpn = m24,
		.ackreq = max,
		.psn = m24,
		.xrc_srqn = m24,
		.deth = { .qkey = m32, .src_qpn = m24 },
		.reth = { .va = m64, .rkey = m32, .len = m32 },
		/* The largest valid syndrome: NAK with value 0x1F. */
		.aeth = { .syndrome = max ? 0x7F : 0, .msn = m24 },
		.atomic = { .va = m64, .rkey = m32, .swap_add = m64,
			    .compare = m64 },
		.atomic_ack = m64,
		.imm = m32,
		.ieth_rkey = m32,
		.payload = payload,
		.payload_len = plen,
	};
}

/* Build *in, parse it back, and compare every field it carries. */
static void round_trip(const struct rn_pkt *in)
{
	const struct rn_pkt_op *op = rn_pkt_op(in->opcode);
	struct rn_pkt out;
	size_t len;
	unsigned int i, pad = -in->payload_len & 3;

	memset(buf, 0xA5, rn_pkt_len(in->opcode, in->payload_len) + 8);
	len = rn_pkt_build(in, buf, sizeof(buf));
	assert_int_equal(len, rn_pkt_len(in->opcode, in->payload_len));
	assert_int_equal(len, op->hdr_len + in->payload_len + pad + 4);
	/* Nothing written past the packet. */
	assert_int_equal(buf[len], 0xA5);

	assert_int_equal(rn_pkt_parse(buf, len, &out), RN_PKT_OK);
	assert_int_equal(out.opcode, in->opcode);
	assert_int_equal(out.se, in->se);
	assert_int_equal(out.mig, in->mig);
	assert_int_equal(out.padcnt, pad);
	assert_int_equal(out.tver, 0);
	assert_int_equal(out.pkey, 0xFFFF);
	assert_int_equal(out.fecn, in->fecn);
	assert_int_equal(out.becn, in->becn);
	assert_int_equal(out.dqpn, in->dqpn);
	assert_int_equal(out.ackreq, in->ackreq);
	assert_int_equal(out.psn, in->psn);
	assert_int_equal(out.hdrs, op->hdrs);
	assert_int_equal(out.hdr_len, op->hdr_len);
	if (op->hdrs & RN_PKT_H_DETH) {
		assert_int_equal(out.deth.qkey, in->deth.qkey);
		assert_int_equal(out.deth.src_qpn, in->deth.src_qpn);
	}
	if (op->hdrs & RN_PKT_H_XRCETH)
		assert_int_equal(out.xrc_srqn, in->xrc_srqn);
	if (op->hdrs & RN_PKT_H_RETH) {
		assert_int_equal(out.reth.va, in->reth.va);
		assert_int_equal(out.reth.rkey, in->reth.rkey);
		assert_int_equal(out.reth.len, in->reth.len);
	}
	if (op->hdrs & RN_PKT_H_AETH) {
		assert_int_equal(out.aeth.syndrome, in->aeth.syndrome);
		assert_int_equal(out.aeth.msn, in->aeth.msn);
	}
	if (op->hdrs & RN_PKT_H_ATOMICETH) {
		assert_int_equal(out.atomic.va, in->atomic.va);
		assert_int_equal(out.atomic.rkey, in->atomic.rkey);
		assert_int_equal(out.atomic.swap_add, in->atomic.swap_add);
		assert_int_equal(out.atomic.compare, in->atomic.compare);
	}
	if (op->hdrs & RN_PKT_H_ATOMICACKETH)
		assert_int_equal(out.atomic_ack, in->atomic_ack);
	if (op->hdrs & RN_PKT_H_IMMDT)
		assert_int_equal(out.imm, in->imm);
	if (op->hdrs & RN_PKT_H_IETH)
		assert_int_equal(out.ieth_rkey, in->ieth_rkey);
	assert_ptr_equal(out.payload, buf + op->hdr_len);
	assert_int_equal(out.payload_len, in->payload_len);
	assert_memory_equal(out.payload, in->payload, in->payload_len);
	for (i = 0; i < pad + 4; i++)
		assert_int_equal(buf[len - pad - 4 + i], 0);
	assert_int_equal(out.icrc, 0);
}

static void test_round_trip_every_opcode(void **state)
{
	static const uint32_t lens[] = { 0, 1, 2, 3, 4, 5, 7, 8, 255, 1024,
					 4095, 4096, 8192 };
	unsigned int opcode, i, n;
	struct rn_pkt p;

	(void)state;
	for (i = 0; i < sizeof(payload); i++)
		payload[i] = rnd();
	for (opcode = 0; opcode < 256; opcode++) {
		const struct rn_pkt_op *op = rn_pkt_op(opcode);

		if (!op)
			continue;
		for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			uint32_t plen = op->flags & RN_PKT_F_PAYLOAD ? lens[i] : 0;

			fill_extreme(&p, opcode, plen, false);
			round_trip(&p);
			fill_extreme(&p, opcode, plen, true);
			round_trip(&p);
			for (n = 0; n < 20; n++) {
				fill_random(&p, opcode, plen);
				round_trip(&p);
			}
		}
	}
}

/* The payload may already be in place, or be supplied later. */
static void test_build_payload_in_place(void **state)
{
	uint8_t opcode = RN_PKT_RC | RN_PKT_OP_WRITE_ONLY;
	struct rn_pkt p, out;
	size_t len;

	(void)state;
	fill_random(&p, opcode, 5);
	memcpy(buf + 28, "hello", 5);
	p.payload = buf + 28;
	len = rn_pkt_build(&p, buf, sizeof(buf));
	assert_int_equal(len, 28 + 5 + 3 + 4);
	assert_int_equal(rn_pkt_parse(buf, len, &out), RN_PKT_OK);
	assert_memory_equal(out.payload, "hello", 5);

	p.payload = NULL;
	memcpy(buf + 28, "world", 5);
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), len);
	assert_int_equal(rn_pkt_parse(buf, len, &out), RN_PKT_OK);
	assert_memory_equal(out.payload, "world", 5);
}

static void test_build_rejects(void **state)
{
	uint8_t ack = RN_PKT_RC | RN_PKT_OP_ACK;
	uint8_t send = RN_PKT_RC | RN_PKT_OP_SEND_ONLY;
	struct rn_pkt p;
	size_t len;

	(void)state;
	fill_random(&p, 0x15, 0);
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	fill_random(&p, ack, 1);
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);

	/* 24-bit fields one past their range. */
	fill_random(&p, ack, 0);
	p.dqpn = 1u << 24;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	fill_random(&p, ack, 0);
	p.psn = 1u << 24;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	fill_random(&p, ack, 0);
	p.aeth.msn = 1u << 24;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	fill_random(&p, RN_PKT_UD | RN_PKT_OP_SEND_ONLY, 0);
	p.deth.src_qpn = 1u << 24;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	fill_random(&p, RN_PKT_XRC | RN_PKT_OP_SEND_ONLY, 0);
	p.xrc_srqn = 1u << 24;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	/* ...which do not matter where the opcode has no such header. */
	fill_random(&p, send, 0);
	p.xrc_srqn = p.deth.src_qpn = p.aeth.msn = UINT32_MAX;
	p.aeth.syndrome = 0x40;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 16);

	/* Reserved syndromes. */
	fill_random(&p, ack, 0);
	p.aeth.syndrome = 0x40;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	p.aeth.syndrome = 0x9F;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);

	/* Room: exactly enough, one byte short. */
	fill_random(&p, send, 1);
	len = rn_pkt_len(send, 1);
	assert_int_equal(len, 20);
	assert_int_equal(rn_pkt_build(&p, buf, len), len);
	assert_int_equal(rn_pkt_build(&p, buf, len - 1), 0);

	/* The largest packet (a whole number of words), and larger. */
	fill_random(&p, send, RN_PKT_MAX_LEN - 19);
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), RN_PKT_MAX_LEN - 3);
	p.payload_len++;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
	p.payload_len = UINT32_MAX;
	assert_int_equal(rn_pkt_build(&p, buf, sizeof(buf)), 0);
}

/* ---- golden layouts, byte for byte ---- */

static void check_golden(const struct rn_pkt *p, const uint8_t *want,
			 size_t len)
{
	struct rn_pkt out;

	assert_int_equal(rn_pkt_build(p, buf, sizeof(buf)), len);
	assert_memory_equal(buf, want, len);
	assert_int_equal(rn_pkt_parse(want, len, &out), RN_PKT_OK);
}

static void test_golden(void **state)
{
	/* The ACK rxe sent (docs/wire.md); its ICRC is test_icrc's. */
	static const uint8_t ack[] = {
		0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x00, 0x00,
		0xff, 0xf0, 0x1f, 0x00, 0x00, 0x01, 0, 0, 0, 0,
	};
	static const uint8_t write_imm[] = {
		/* BTH: SE, pad 2, FECN, dqpn 0x010203, AckReq, psn 0xABCDEF */
		0x0b, 0xa0, 0xff, 0xff, 0x80, 0x01, 0x02, 0x03, 0x80, 0xab,
		0xcd, 0xef,
		/* RETH */
		0x00, 0x00, 0x7f, 0x12, 0x34, 0x56, 0x78, 0x9a, 0x11, 0x22,
		0x33, 0x44, 0x00, 0x00, 0x00, 0x02,
		/* ImmDt */
		0xde, 0xad, 0xbe, 0xef,
		/* payload, pad, ICRC */
		'h', 'i', 0, 0, 0, 0, 0, 0,
	};
	static const uint8_t ud_imm[] = {
		0x65, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00,
		0x00, 0x07,
		/* DETH: GSI Q_Key, reserved, SrcQP */
		0x80, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x11,
		0x01, 0x02, 0x03, 0x04, 'a', 'b', 'c', 'd', 0, 0, 0, 0,
	};
	static const uint8_t xrc_cas[] = {
		0xb3, 0x40, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42, 0x80, 0x00,
		0x00, 0x09,
		/* XRCETH: reserved, SRQ 0x123456 */
		0x00, 0x12, 0x34, 0x56,
		/* AtomicETH */
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0xaa, 0xbb,
		0xcc, 0xdd, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x05,
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03,
		0, 0, 0, 0,
	};
	static const uint8_t atomic_ack[] = {
		0x12, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x42, 0x00, 0x00,
		0x00, 0x09, 0x1f, 0x00, 0x00, 0x07, 0x01, 0x02, 0x03, 0x04,
		0x05, 0x06, 0x07, 0x08, 0, 0, 0, 0,
	};
	static const uint8_t cnp[] = {
		0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x00, 0x42, 0x00, 0x00,
		0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0,
	};

	(void)state;
	check_golden(&(struct rn_pkt){ .opcode = 0x11, .dqpn = 0x123,
				       .psn = 0xfff0,
				       .aeth = { 0x1f, 1 } },
		     ack, sizeof(ack));
	check_golden(&(struct rn_pkt){ .opcode = 0x0b, .se = true,
				       .fecn = true, .dqpn = 0x010203,
				       .ackreq = true, .psn = 0xabcdef,
				       .reth = { 0x7f123456789aull,
						 0x11223344, 2 },
				       .imm = 0xdeadbeef,
				       .payload = (const uint8_t *)"hi",
				       .payload_len = 2 },
		     write_imm, sizeof(write_imm));
	check_golden(&(struct rn_pkt){ .opcode = 0x65, .dqpn = 1, .psn = 7,
				       .deth = { 0x80010000, 0x11 },
				       .imm = 0x01020304,
				       .payload = (const uint8_t *)"abcd",
				       .payload_len = 4 },
		     ud_imm, sizeof(ud_imm));
	check_golden(&(struct rn_pkt){ .opcode = 0xb3, .mig = true,
				       .dqpn = 0x42, .ackreq = true, .psn = 9,
				       .xrc_srqn = 0x123456,
				       .atomic = { 0x1000, 0xaabbccdd, 5, 3 } },
		     xrc_cas, sizeof(xrc_cas));
	check_golden(&(struct rn_pkt){ .opcode = 0x12, .dqpn = 0x42, .psn = 9,
				       .aeth = { 0x1f, 7 },
				       .atomic_ack = 0x0102030405060708ull },
		     atomic_ack, sizeof(atomic_ack));
	check_golden(&(struct rn_pkt){ .opcode = 0x81, .becn = true,
				       .dqpn = 0x42 },
		     cnp, sizeof(cnp));
}

/* ---- what the parser rejects ---- */

/* A valid packet of 'opcode' with 'plen' payload bytes in buf. */
static size_t valid(uint8_t opcode, uint32_t plen)
{
	struct rn_pkt p;

	fill_random(&p, opcode, plen);
	return rn_pkt_build(&p, buf, sizeof(buf));
}

static enum rn_pkt_status parse(size_t len)
{
	struct rn_pkt p;

	return rn_pkt_parse(buf, len, &p);
}

static void test_reject_length(void **state)
{
	uint8_t ack = RN_PKT_RC | RN_PKT_OP_ACK;
	uint8_t read = RN_PKT_RC | RN_PKT_OP_READ_REQUEST;
	uint8_t send = RN_PKT_RC | RN_PKT_OP_SEND_ONLY;
	size_t len, n;
	uint8_t *copy;

	(void)state;
	len = valid(ack, 0);
	assert_int_equal(parse(0), RN_PKT_TRUNCATED);
	assert_int_equal(parse(15), RN_PKT_TRUNCATED);
	/* 16 bytes: a BTH and an ICRC, but no AETH. */
	assert_int_equal(parse(16), RN_PKT_TRUNCATED);
	assert_int_equal(parse(len), RN_PKT_OK);
	len = valid(read, 0);
	assert_int_equal(parse(len - 4), RN_PKT_TRUNCATED);
	assert_int_equal(parse(len), RN_PKT_OK);
	/* An empty SEND is BTH + ICRC. */
	assert_int_equal(valid(send, 0), 16);
	assert_int_equal(parse(16), RN_PKT_OK);

	len = valid(send, RN_PKT_MAX_LEN - 19);
	assert_int_equal(parse(len), RN_PKT_OK);
	assert_int_equal(parse(RN_PKT_MAX_LEN), RN_PKT_MISALIGNED);
	assert_int_equal(parse(RN_PKT_MAX_LEN + 1), RN_PKT_OVERSIZE);
	assert_int_equal(parse(SIZE_MAX), RN_PKT_OVERSIZE);

	/* Every prefix of a packet, each in a buffer of exactly its size
	 * (AddressSanitizer sees any read past it).  Some are packets with
	 * less payload.
	 */
	len = valid(RN_PKT_XRC | RN_PKT_OP_WRITE_ONLY_IMM, 9);
	for (n = 0; n <= len; n++) {
		struct rn_pkt p;

		copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		if (rn_pkt_parse(copy, n, &p) == RN_PKT_OK)
			assert_ptr_equal(p.payload + p.payload_len + p.padcnt +
						 RN_PKT_ICRC_BYTES,
					 copy + n);
		else
			assert_true(n < len);
		free(copy);
	}
}

static void test_reject_opcode(void **state)
{
	unsigned int opcode;
	size_t len;

	(void)state;
	len = valid(RN_PKT_RC | RN_PKT_OP_SEND_ONLY, 64);
	for (opcode = 0; opcode < 256; opcode++) {
		buf[0] = opcode;
		if (!rn_pkt_op(opcode))
			assert_int_equal(parse(len), RN_PKT_BAD_OPCODE);
	}
}

static void test_reject_tver_pkey(void **state)
{
	static const uint16_t bad[] = { 0x0000, 0x0001, 0x7FFE, 0x8000,
					0xFFFE, 0xBFFF };
	unsigned int t, i;
	size_t len;

	(void)state;
	len = valid(RN_PKT_RC | RN_PKT_OP_SEND_ONLY, 8);
	for (t = 1; t < 16; t++) {
		buf[1] = (buf[1] & 0xF0) | t;
		assert_int_equal(parse(len), RN_PKT_BAD_TVER);
	}
	buf[1] &= 0xF0;
	assert_int_equal(parse(len), RN_PKT_OK);

	/* rxe accepts a P_Key whose low 15 bits are all ones. */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		buf[2] = bad[i] >> 8;
		buf[3] = bad[i];
		assert_int_equal(parse(len), RN_PKT_BAD_PKEY);
	}
	for (i = 0; i < 2; i++) {
		struct rn_pkt p;

		buf[2] = i ? 0x7F : 0xFF;
		buf[3] = 0xFF;
		assert_int_equal(rn_pkt_parse(buf, len, &p), RN_PKT_OK);
		assert_int_equal(p.pkey, i ? 0x7FFF : 0xFFFF);
	}
}

static void set_pad(unsigned int pad)
{
	buf[1] = (buf[1] & ~0x30) | pad << 4;
}

static void test_reject_pad_payload(void **state)
{
	uint8_t send = RN_PKT_RC | RN_PKT_OP_SEND_ONLY;
	uint8_t ack = RN_PKT_RC | RN_PKT_OP_ACK;
	struct rn_pkt p;
	unsigned int pad;
	size_t len;

	(void)state;
	/* Lengths that are not whole words. */
	len = valid(send, 4);
	for (pad = 1; pad < 4; pad++)
		assert_int_equal(parse(len + pad), RN_PKT_MISALIGNED);

	/* Pad beyond the payload: 0 bytes + 1..3 pad. */
	len = valid(send, 0);
	for (pad = 1; pad < 4; pad++) {
		set_pad(pad);
		assert_int_equal(parse(len), RN_PKT_BAD_PAD);
	}
	/* 4 bytes room: pad 3 leaves a 1-byte payload. */
	len = valid(send, 4);
	set_pad(3);
	assert_int_equal(rn_pkt_parse(buf, len, &p), RN_PKT_OK);
	assert_int_equal(p.payload_len, 1);
	assert_int_equal(p.padcnt, 3);

	/* No payload, no pad, nothing after the headers. */
	len = valid(ack, 0);
	set_pad(1);
	assert_int_equal(parse(len), RN_PKT_BAD_PAD);
	set_pad(0);
	assert_int_equal(parse(len + 4), RN_PKT_EXTRA_BYTES);
	len = valid(RN_PKT_OPCODE_CNP, 0);
	assert_int_equal(parse(len + 4), RN_PKT_EXTRA_BYTES);
	len = valid(RN_PKT_XRC | RN_PKT_OP_FETCH_ADD, 0);
	assert_int_equal(parse(len + 8), RN_PKT_EXTRA_BYTES);
	assert_int_equal(parse(len), RN_PKT_OK);
}

static void test_reject_aeth(void **state)
{
	static const uint8_t aeth_ops[] = {
		RN_PKT_RC | RN_PKT_OP_ACK,
		RN_PKT_RC | RN_PKT_OP_ATOMIC_ACK,
		RN_PKT_RC | RN_PKT_OP_READ_RESP_FIRST,
		RN_PKT_XRC | RN_PKT_OP_READ_RESP_ONLY,
	};
	unsigned int i, syn;
	size_t len;

	(void)state;
	for (i = 0; i < sizeof(aeth_ops); i++) {
		len = valid(aeth_ops[i], 0);
		for (syn = 0; syn < 256; syn++) {
			bool ok = syn < 0x40 || (syn >= 0x60 && syn < 0x80);

			buf[12] = syn;
			assert_int_equal(parse(len),
					 ok ? RN_PKT_OK : RN_PKT_BAD_AETH);
		}
	}
}

/* Reserved bits are ignored, as rxe and the IBA's receivers do; M too. */
static void test_reserved_ignored(void **state)
{
	struct rn_pkt p;
	size_t len;

	(void)state;
	len = valid(RN_PKT_UD | RN_PKT_OP_SEND_ONLY, 4);
	buf[4] |= 0x3F; /* Resv6a */
	buf[8] |= 0x7F; /* Resv7 */
	buf[16] = 0xFF; /* DETH's reserved byte */
	buf[1] |= 0x40; /* M */
	assert_int_equal(rn_pkt_parse(buf, len, &p), RN_PKT_OK);
	assert_true(p.mig);
	assert_int_equal(p.deth.src_qpn, buf[17] << 16 | buf[18] << 8 | buf[19]);

	len = valid(RN_PKT_XRC | RN_PKT_OP_SEND_ONLY, 4);
	buf[12] = 0xFF; /* XRCETH's reserved byte */
	assert_int_equal(rn_pkt_parse(buf, len, &p), RN_PKT_OK);
	assert_int_equal(p.xrc_srqn, buf[13] << 16 | buf[14] << 8 | buf[15]);

	len = valid(RN_PKT_OPCODE_CNP, 0);
	memset(buf + 12, 0xFF, 16);
	assert_int_equal(rn_pkt_parse(buf, len, &p), RN_PKT_OK);
}

/* ---- PSNs, AETH syndromes, ports ---- */

static void test_psn(void **state)
{
	(void)state;
	assert_int_equal(rn_pkt_psn_add(0xFFFFFF, 1), 0);
	assert_int_equal(rn_pkt_psn_add(0xFFFFF0, 0x20), 0x10);
	assert_int_equal(rn_pkt_psn_add(5, 0), 5);
	assert_int_equal(rn_pkt_psn_sub(0x10, 0xFFFFF0), 0x20);
	assert_int_equal(rn_pkt_psn_sub(0, 1), 0xFFFFFF);

	assert_true(rn_pkt_psn_cmp(7, 7) == 0);
	assert_true(rn_pkt_psn_cmp(8, 7) > 0);
	assert_true(rn_pkt_psn_cmp(7, 8) < 0);
	/* Across the wrap. */
	assert_true(rn_pkt_psn_cmp(0, 0xFFFFFF) > 0);
	assert_true(rn_pkt_psn_cmp(0xFFFFFF, 0) < 0);
	assert_true(rn_pkt_psn_cmp(0x10, 0xFFFFF0) > 0);
	/* Half the space ahead is after; further is before. */
	assert_true(rn_pkt_psn_cmp(0x7FFFFF, 0) > 0);
	assert_true(rn_pkt_psn_cmp(0x800000, 0) < 0);
	assert_true(rn_pkt_psn_cmp(rn_pkt_psn_add(0xFFFF00, 0x7FFFFF),
				   0xFFFF00) > 0);
}

static void test_aeth(void **state)
{
	unsigned int v;

	(void)state;
	assert_int_equal(rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT), 0x1F);
	assert_int_equal(rn_pkt_aeth_rnr_nak(12), 0x2C);
	assert_int_equal(rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ), 0x60);
	assert_int_equal(rn_pkt_aeth_nak(RN_PKT_NAK_INV_REQ), 0x61);
	assert_int_equal(rn_pkt_aeth_nak(RN_PKT_NAK_REM_ACCESS), 0x62);
	assert_int_equal(rn_pkt_aeth_nak(RN_PKT_NAK_REM_OP), 0x63);
	assert_int_equal(rn_pkt_aeth_nak(RN_PKT_NAK_INV_RD_REQ), 0x64);
	for (v = 0; v < 32; v++) {
		assert_int_equal(rn_pkt_aeth_type(rn_pkt_aeth_ack(v)),
				 RN_PKT_AETH_ACK);
		assert_int_equal(rn_pkt_aeth_value(rn_pkt_aeth_ack(v)), v);
		assert_int_equal(rn_pkt_aeth_type(rn_pkt_aeth_rnr_nak(v)),
				 RN_PKT_AETH_RNR_NAK);
		assert_int_equal(rn_pkt_aeth_value(rn_pkt_aeth_rnr_nak(v)), v);
		assert_int_equal(rn_pkt_aeth_type(RN_PKT_AETH_NAK | v),
				 RN_PKT_AETH_NAK);
		assert_int_equal(rn_pkt_aeth_value(RN_PKT_AETH_NAK | v), v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_round_trip_every_opcode),
		cmocka_unit_test(test_build_payload_in_place),
		cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_golden),
		cmocka_unit_test(test_reject_length),
		cmocka_unit_test(test_reject_opcode),
		cmocka_unit_test(test_reject_tver_pkey),
		cmocka_unit_test(test_reject_pad_payload),
		cmocka_unit_test(test_reject_aeth),
		cmocka_unit_test(test_reserved_ignored),
		cmocka_unit_test(test_psn),
		cmocka_unit_test(test_aeth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
