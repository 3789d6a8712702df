// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_send_wqe_fetch / rn_recv_wqe_fetch: WQEs are built here the way the
 * provider lays them out, written into a ring, then fetched and validated.
 * (Fetching in groups through the stage: test_chain.c.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "kernel-abi/ringnic-ring.h"
#include "engine/wqe.h"

#define NSLOTS 64
#define MAX_WQE_SLOTS RN_SEND_WQE_SLOTS(RN_MAX_INLINE)
#define GARBAGE 0xa5

static uint8_t ring[NSLOTS * RN_SLOT_SIZE];

/* The largest WQE this device allows. */
static const struct rn_wqe_limits full_lim = {
	.max_sge = RN_MAX_SGE,
	.max_inline = RN_MAX_INLINE,
	.max_slots = MAX_WQE_SLOTS,
};

/* Heads that put WQEs at the start, the middle, the last slot, and far on. */
static const uint64_t heads[] = {
	0, 5, NSLOTS - 3, NSLOTS - 1, NSLOTS, (1ull << 40) + NSLOTS - 2,
	(1ull << 48) - 1,
};
#define N_HEADS (sizeof(heads) / sizeof(heads[0]))

static void fill(uint8_t *p, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(seed + i * 13 + 3);
}

static void make_sges(struct rn_sge *sge, unsigned int n, unsigned int seed)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		sge[i].addr = 0x7f0000001000ull + seed * 0x10000ull + i * 0x111;
		sge[i].length = seed * 100 + i + 1;
		sge[i].lkey = (seed << 8) | i;
	}
}

/* A header whose every field holds a distinct, recognisable value. */
static bool has_data(uint8_t op)
{
	return op != RN_OP_LOCAL_INV && op != RN_OP_BIND_MW;
}

static struct rn_send_wqe send_hdr(uint8_t opcode, uint8_t flags,
				   uint8_t num_sge, uint32_t inline_len)
{
	struct rn_send_wqe h;
	uint64_t payload = flags & RN_WQE_INLINE ?
				   inline_len :
				   num_sge * sizeof(struct rn_sge);

	memset(&h, 0, sizeof(h));
	h.wr_id = 0x0123456789abcdefull ^ opcode;
	h.opcode = opcode;
	h.flags = flags;
	h.num_sge = num_sge;
	h.nslots = RN_SEND_WQE_SLOTS(payload);
	h.imm_data = 0xa1b2c3d4;
	h.remote_addr = 0xfedcba9876543210ull;
	h.rkey = 0x5a5a0102;
	h.inline_len = inline_len;
	h.compare_add = 0x1111222233334444ull;
	h.swap = 0x5555666677778888ull;
	return h;
}

/* Lay out header + payload as the provider does, write it at head. */
static void post_send(uint64_t head, const struct rn_send_wqe *h,
		      const void *payload, size_t len)
{
	uint8_t buf[MAX_WQE_SLOTS * RN_SLOT_SIZE + RN_SLOT_SIZE];

	assert_true(RN_SEND_HDR_SIZE + len <= sizeof(buf));
	memcpy(buf, h, RN_SEND_HDR_SIZE);
	memcpy(buf + RN_SEND_HDR_SIZE, payload, len);
	rn_ring_write(ring, NSLOTS, head, buf, RN_SEND_HDR_SIZE + len);
}

/* Fetch through a fresh stage, the chain being 'avail' slots from head. */
static int fetch_send(uint64_t head, uint64_t avail,
		      const struct rn_wqe_limits *lim, struct rn_wqe *w)
{
	static struct rn_stage st;

	rn_stage_reset(&st, head);
	return rn_send_wqe_fetch(&st, ring, NSLOTS, head,
				 (head + avail) & RN_DB_SEQ_MASK, lim, w);
}

static void assert_hdr_fields(const struct rn_send_wqe *h,
			      const struct rn_wqe *w)
{
	assert_int_equal(w->wr_id, h->wr_id);
	assert_int_equal(w->opcode, h->opcode);
	assert_int_equal(w->flags, h->flags);
	assert_int_equal(w->num_sge, h->num_sge);
	assert_int_equal(w->nslots, h->nslots);
	assert_int_equal(w->imm_data, h->imm_data);
	assert_int_equal(w->remote_addr, h->remote_addr);
	assert_int_equal(w->rkey, h->rkey);
	assert_int_equal(w->inline_len, h->inline_len);
	assert_int_equal(w->compare_add, h->compare_add);
	assert_int_equal(w->swap, h->swap);
}

/* Post a WQE with n SGEs at head, fetch it, compare everything. */
static void send_sge_round_trip(uint64_t head, uint8_t opcode, uint8_t flags,
				unsigned int n)
{
	struct rn_sge sge[RN_MAX_SGE] = { 0 };
	struct rn_send_wqe h = send_hdr(opcode, flags, n, 0);
	struct rn_wqe w;

	make_sges(sge, n, (unsigned int)head + opcode);
	memset(ring, GARBAGE, sizeof(ring));
	post_send(head, &h, sge, n * sizeof(sge[0]));
	memset(&w, 0, sizeof(w));
	assert_int_equal(fetch_send(head, h.nslots, &full_lim, &w), 0);
	assert_hdr_fields(&h, &w);
	if (n)
		assert_memory_equal(w.sge, sge, n * sizeof(sge[0]));
}

static void send_inline_round_trip(uint64_t head, uint8_t opcode,
				   uint32_t len)
{
	uint8_t data[RN_MAX_INLINE] = { 0 };
	struct rn_send_wqe h = send_hdr(opcode, RN_WQE_INLINE | RN_WQE_SIGNALED,
					0, len);
	struct rn_wqe w;

	fill(data, len, len + opcode);
	memset(ring, GARBAGE, sizeof(ring));
	post_send(head, &h, data, len);
	memset(&w, 0, sizeof(w));
	assert_int_equal(fetch_send(head, h.nslots, &full_lim, &w), 0);
	assert_hdr_fields(&h, &w);
	if (len)
		assert_memory_equal(w.inline_data, data, len);
}

/* Post h (with whatever payload its fields claim) and expect EINVAL. */
static void assert_send_rejected(const struct rn_send_wqe *h, uint64_t avail,
				 const struct rn_wqe_limits *lim)
{
	uint8_t payload[RN_MAX_INLINE + RN_SLOT_SIZE];
	size_t len = h->flags & RN_WQE_INLINE ? h->inline_len :
						h->num_sge * sizeof(struct rn_sge);
	struct rn_wqe w;
	size_t i;

	if (len > sizeof(payload))
		len = sizeof(payload);
	fill(payload, len, 1);
	for (i = 0; i < N_HEADS; i++) {
		memset(ring, GARBAGE, sizeof(ring));
		post_send(heads[i], h, payload, len);
		assert_int_equal(fetch_send(heads[i], avail, lim, &w), EINVAL);
	}
}

/* ---- send: accepted ----------------------------------------------------- */

static void test_slot_macros(void **state)
{
	(void)state;
	assert_int_equal(RN_SEND_WQE_SLOTS(0), 1);
	assert_int_equal(RN_SEND_WQE_SLOTS(16), 1);
	assert_int_equal(RN_SEND_WQE_SLOTS(17), 2);
	assert_int_equal(RN_SEND_WQE_SLOTS(80), 2);
	assert_int_equal(RN_SEND_WQE_SLOTS(81), 3);
	assert_int_equal(RN_SEND_WQE_SLOTS(32 * 16), 9);
	assert_int_equal(RN_SEND_WQE_SLOTS(1024), 17);
	assert_int_equal(RN_RECV_WQE_SLOTS(0), 1);
	assert_int_equal(RN_RECV_WQE_SLOTS(3), 1);
	assert_int_equal(RN_RECV_WQE_SLOTS(4), 2);
	assert_int_equal(RN_RECV_WQE_SLOTS(32), 9);
}

static void test_send_every_opcode(void **state)
{
	static const uint8_t flag_sets[] = {
		0, RN_WQE_SIGNALED, RN_WQE_SOLICITED, RN_WQE_FENCE,
		RN_WQE_SIGNALED | RN_WQE_SOLICITED | RN_WQE_FENCE,
	};
	uint8_t op;
	size_t f, i;

	(void)state;
	for (op = RN_OP_SEND; op <= RN_OP_MAX; op++)
		for (f = 0; f < sizeof(flag_sets); f++)
			for (i = 0; i < N_HEADS; i++)
				send_sge_round_trip(heads[i], op, flag_sets[f],
						    has_data(op) ? 1 : 0);
}

/* LOCAL_INV and BIND_MW carry nothing: an SGE or inline data is malformed. */
static void test_no_data_ops(void **state)
{
	static const uint8_t ops[] = { RN_OP_LOCAL_INV, RN_OP_BIND_MW };
	struct rn_sge sge[1] = { { 0x1000, 8, 0x100 } };
	struct rn_send_wqe h;
	struct rn_wqe w;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ops); i++) {
		h = send_hdr(ops[i], RN_WQE_SIGNALED, 1, 0);
		memset(ring, GARBAGE, sizeof(ring));
		post_send(0, &h, sge, sizeof(sge));
		assert_int_equal(fetch_send(0, h.nslots, &full_lim, &w), EINVAL);
		h = send_hdr(ops[i], RN_WQE_INLINE, 0, 8);
		post_send(0, &h, sge, 8);
		assert_int_equal(fetch_send(0, h.nslots, &full_lim, &w), EINVAL);
	}
}

/*
 * On a UD or XRC initiator QP a destination follows the header: the slot
 * count includes it, and it comes back as written, before the payload.
 */
static void test_send_with_dest(void **state)
{
	struct rn_wqe_limits lim = full_lim;
	struct rn_wqe_dest d = { 0x11223344, 0x00abcdef, 0x80010000, 0x00765432 };
	/* Five SGEs: 3 slots with the destination, 2 without. */
	uint8_t after[sizeof(d) + 5 * sizeof(struct rn_sge)];
	struct rn_sge sge[5];
	struct rn_send_wqe h;
	struct rn_wqe w;
	size_t i;

	(void)state;
	lim.has_dest = true;
	for (i = 0; i < N_HEADS; i++) {
		make_sges(sge, 5, (unsigned int)heads[i]);
		h = send_hdr(RN_OP_SEND, RN_WQE_SIGNALED, 5, 0);
		h.nslots = RN_SEND_WQE_SLOTS(sizeof(after));
		memcpy(after, &d, sizeof(d));
		memcpy(after + sizeof(d), sge, sizeof(sge));
		memset(ring, GARBAGE, sizeof(ring));
		post_send(heads[i], &h, after, sizeof(after));
		memset(&w, 0, sizeof(w));
		assert_int_equal(fetch_send(heads[i], h.nslots, &lim, &w), 0);
		assert_memory_equal(&w.dest, &d, sizeof(d));
		assert_memory_equal(w.sge, sge, sizeof(sge));
		/* The same slots without the destination do not add up. */
		assert_int_equal(fetch_send(heads[i], h.nslots, &full_lim, &w),
				 EINVAL);
	}
}

static void test_send_sge_counts(void **state)
{
	unsigned int n;
	size_t i;

	(void)state;
	for (n = 0; n <= RN_MAX_SGE; n++)
		for (i = 0; i < N_HEADS; i++)
			send_sge_round_trip(heads[i], RN_OP_WRITE,
					    RN_WQE_SIGNALED, n);
}

static void test_send_inline_lengths(void **state)
{
	static const uint8_t ops[] = {
		RN_OP_SEND, RN_OP_SEND_IMM, RN_OP_WRITE, RN_OP_WRITE_IMM,
	};
	uint32_t len;
	size_t o, i;

	(void)state;
	for (o = 0; o < sizeof(ops); o++)
		for (len = 0; len <= RN_MAX_INLINE; len++)
			send_inline_round_trip(heads[len % N_HEADS], ops[o], len);
	for (i = 0; i < N_HEADS; i++) {
		send_inline_round_trip(heads[i], RN_OP_SEND, 16);
		send_inline_round_trip(heads[i], RN_OP_SEND, 17);
		send_inline_round_trip(heads[i], RN_OP_SEND, RN_MAX_INLINE);
	}
}

/* A 9-slot WQE starting in the last slot: 8 slots of it are at the start. */
static void test_send_wrap(void **state)
{
	struct rn_sge sge[RN_MAX_SGE] = { 0 };
	struct rn_send_wqe h = send_hdr(RN_OP_SEND, 0, RN_MAX_SGE, 0);
	struct rn_wqe w;

	(void)state;
	make_sges(sge, RN_MAX_SGE, 7);
	memset(ring, GARBAGE, sizeof(ring));
	post_send(NSLOTS - 1, &h, sge, sizeof(sge));
	/* SGE 0 shares the header slot, SGE 1..4 fill slot 0. */
	assert_memory_equal(ring + (NSLOTS - 1) * RN_SLOT_SIZE + RN_SEND_HDR_SIZE,
			    &sge[0], sizeof(sge[0]));
	assert_memory_equal(ring, &sge[1], RN_SLOT_SIZE);
	assert_int_equal(fetch_send(NSLOTS - 1, 9, &full_lim, &w), 0);
	assert_hdr_fields(&h, &w);
	assert_memory_equal(w.sge, sge, sizeof(sge));
}

/* The limits are those of the QP: exactly at each limit is fine. */
static void test_send_at_limits(void **state)
{
	const struct rn_wqe_limits lim = {
		.max_sge = 3, .max_inline = 80, .max_slots = 2,
	};
	struct rn_sge sge[3];
	uint8_t data[80];
	struct rn_send_wqe h;
	struct rn_wqe w;

	(void)state;
	make_sges(sge, 3, 1);
	h = send_hdr(RN_OP_SEND, 0, 3, 0);
	memset(ring, GARBAGE, sizeof(ring));
	post_send(NSLOTS - 1, &h, sge, sizeof(sge));
	assert_int_equal(fetch_send(NSLOTS - 1, 2, &lim, &w), 0);
	assert_memory_equal(w.sge, sge, sizeof(sge));

	fill(data, sizeof(data), 2);
	h = send_hdr(RN_OP_WRITE, RN_WQE_INLINE, 0, sizeof(data));
	post_send(3, &h, data, sizeof(data));
	assert_int_equal(fetch_send(3, 100, &lim, &w), 0);
	assert_memory_equal(w.inline_data, data, sizeof(data));
}

/* Extreme values of the fields the device passes on untouched. */
static void test_send_extreme_fields(void **state)
{
	struct rn_send_wqe h = send_hdr(RN_OP_CMP_SWAP, RN_WQE_FLAGS_ALL &
					~RN_WQE_INLINE, 1, 0);
	struct rn_sge sge = { UINT64_MAX, UINT32_MAX, UINT32_MAX };
	struct rn_wqe w;

	(void)state;
	h.wr_id = UINT64_MAX;
	h.imm_data = UINT32_MAX;
	h.remote_addr = UINT64_MAX;
	h.rkey = UINT32_MAX;
	h.compare_add = UINT64_MAX;
	h.swap = UINT64_MAX - 1;
	memset(ring, GARBAGE, sizeof(ring));
	post_send(0, &h, &sge, sizeof(sge));
	assert_int_equal(fetch_send(0, 1, &full_lim, &w), 0);
	assert_hdr_fields(&h, &w);
	assert_memory_equal(&w.sge[0], &sge, sizeof(sge));
}

/* ---- send: rejected ----------------------------------------------------- */

static void test_send_bad_opcode(void **state)
{
	static const uint8_t bad[] = { 0, RN_OP_MAX + 1, 0x7f, 0x80, 0xff };
	struct rn_send_wqe h;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad); i++) {
		h = send_hdr(bad[i], 0, 1, 0);
		assert_send_rejected(&h, h.nslots, &full_lim);
	}
}

static void test_send_bad_flags(void **state)
{
	unsigned int bit;
	struct rn_send_wqe h;

	(void)state;
	for (bit = 4; bit < 8; bit++) {
		h = send_hdr(RN_OP_SEND, RN_WQE_SIGNALED | 1u << bit, 1, 0);
		assert_send_rejected(&h, h.nslots, &full_lim);
	}
}

static void test_send_too_many_sges(void **state)
{
	const struct rn_wqe_limits lim = {
		.max_sge = 4, .max_inline = 0, .max_slots = MAX_WQE_SLOTS,
	};
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, 0, 5, 0);
	assert_send_rejected(&h, h.nslots, &lim);
	h = send_hdr(RN_OP_WRITE, 0, RN_MAX_SGE + 1, 0);
	assert_send_rejected(&h, h.nslots, &full_lim);
	h = send_hdr(RN_OP_WRITE, 0, 255, 0);
	assert_send_rejected(&h, h.nslots, &full_lim);
}

static void test_send_inline_too_long(void **state)
{
	const struct rn_wqe_limits lim = {
		.max_sge = 4, .max_inline = 100, .max_slots = MAX_WQE_SLOTS,
	};
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, 101);
	assert_send_rejected(&h, h.nslots, &lim);
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, RN_MAX_INLINE + 1);
	assert_send_rejected(&h, NSLOTS, &full_lim);
	/* Lengths whose slot count would wrap the 8-bit nslots field. */
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, UINT32_MAX);
	assert_send_rejected(&h, NSLOTS, &full_lim);
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, 256 * RN_SLOT_SIZE);
	h.nslots = 1;
	assert_send_rejected(&h, NSLOTS, &full_lim);
}

static void test_send_inline_not_allowed(void **state)
{
	static const uint8_t ops[] = {
		RN_OP_READ, RN_OP_CMP_SWAP, RN_OP_FETCH_ADD,
	};
	struct rn_send_wqe h;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(ops); i++) {
		h = send_hdr(ops[i], RN_WQE_INLINE, 0, 8);
		assert_send_rejected(&h, h.nslots, &full_lim);
		h = send_hdr(ops[i], RN_WQE_INLINE, 0, 0);
		assert_send_rejected(&h, h.nslots, &full_lim);
	}
}

static void test_send_inline_with_sges(void **state)
{
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 1, 32);
	assert_send_rejected(&h, h.nslots, &full_lim);
	h = send_hdr(RN_OP_WRITE, RN_WQE_INLINE, RN_MAX_SGE, 0);
	assert_send_rejected(&h, h.nslots, &full_lim);
}

static void test_send_inline_len_without_inline(void **state)
{
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, 0, 1, 0);
	h.inline_len = 1;
	assert_send_rejected(&h, h.nslots, &full_lim);
	h = send_hdr(RN_OP_READ, 0, 0, 0);
	h.inline_len = 0x80000000u;
	assert_send_rejected(&h, h.nslots, &full_lim);
}

static void test_send_wrong_nslots(void **state)
{
	static const unsigned int sges[] = { 0, 1, 2, 5, RN_MAX_SGE };
	struct rn_send_wqe h;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(sges) / sizeof(sges[0]); i++) {
		h = send_hdr(RN_OP_SEND, 0, sges[i], 0);
		h.nslots++;
		assert_send_rejected(&h, NSLOTS, &full_lim);
		h.nslots -= 2;
		assert_send_rejected(&h, NSLOTS, &full_lim);
		h.nslots = 255;
		assert_send_rejected(&h, NSLOTS, &full_lim);
	}
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, 17);
	h.nslots = 1;
	assert_send_rejected(&h, NSLOTS, &full_lim);
}

static void test_send_beyond_avail(void **state)
{
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, 0, RN_MAX_SGE, 0);
	assert_send_rejected(&h, h.nslots - 1, &full_lim);
	assert_send_rejected(&h, 1, &full_lim);
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, RN_MAX_INLINE);
	assert_send_rejected(&h, h.nslots - 1, &full_lim);
}

static void test_send_beyond_max_slots(void **state)
{
	const struct rn_wqe_limits lim = {
		.max_sge = RN_MAX_SGE, .max_inline = RN_MAX_INLINE,
		.max_slots = 2,
	};
	struct rn_send_wqe h;

	(void)state;
	h = send_hdr(RN_OP_SEND, 0, 6, 0);
	assert_int_equal(h.nslots, 3);
	assert_send_rejected(&h, NSLOTS, &lim);
	h = send_hdr(RN_OP_SEND, RN_WQE_INLINE, 0, 81);
	assert_send_rejected(&h, NSLOTS, &lim);
}

static void test_send_nothing_posted(void **state)
{
	struct rn_send_wqe h = send_hdr(RN_OP_SEND, 0, 1, 0);

	(void)state;
	assert_send_rejected(&h, 0, &full_lim);
}

/* ---- receive ------------------------------------------------------------ */

static struct rn_recv_wqe recv_hdr(uint8_t num_sge)
{
	struct rn_recv_wqe h;

	memset(&h, 0, sizeof(h));
	h.wr_id = 0xc0ffee0000000000ull | num_sge;
	h.num_sge = num_sge;
	h.nslots = RN_RECV_WQE_SLOTS(num_sge);
	return h;
}

static void post_recv(uint64_t head, const struct rn_recv_wqe *h,
		      const struct rn_sge *sge, unsigned int n)
{
	uint8_t buf[RN_RECV_HDR_SIZE + 255 * sizeof(struct rn_sge)];

	memcpy(buf, h, RN_RECV_HDR_SIZE);
	memcpy(buf + RN_RECV_HDR_SIZE, sge, n * sizeof(*sge));
	rn_ring_write(ring, NSLOTS, head, buf,
		      RN_RECV_HDR_SIZE + n * sizeof(*sge));
}

static const struct rn_wqe_limits recv_lim = {
	.max_sge = RN_MAX_SGE,
	.max_slots = RN_RECV_WQE_SLOTS(RN_MAX_SGE),
};

static void recv_round_trip(uint64_t head, unsigned int n)
{
	struct rn_sge sge[RN_MAX_SGE] = { 0 };
	struct rn_recv_wqe h = recv_hdr(n);
	struct rn_rwqe w;

	make_sges(sge, n, n + 3);
	memset(ring, GARBAGE, sizeof(ring));
	post_recv(head, &h, sge, n);
	memset(&w, 0, sizeof(w));
	assert_int_equal(rn_recv_wqe_fetch(ring, NSLOTS, head, h.nslots,
					   &recv_lim, &w), 0);
	assert_int_equal(w.wr_id, h.wr_id);
	assert_int_equal(w.num_sge, n);
	assert_int_equal(w.nslots, h.nslots);
	if (n)
		assert_memory_equal(w.sge, sge, n * sizeof(sge[0]));
}

static void assert_recv_rejected(const struct rn_recv_wqe *h, uint64_t avail,
				 const struct rn_wqe_limits *lim)
{
	struct rn_sge sge[255];
	struct rn_rwqe w;
	size_t i;

	make_sges(sge, h->num_sge, 1);
	for (i = 0; i < N_HEADS; i++) {
		memset(ring, GARBAGE, sizeof(ring));
		post_recv(heads[i], h, sge, h->num_sge);
		assert_int_equal(rn_recv_wqe_fetch(ring, NSLOTS, heads[i],
						   avail, lim, &w), EINVAL);
	}
}

static void test_recv_sge_counts(void **state)
{
	unsigned int n;
	size_t i;

	(void)state;
	for (n = 0; n <= RN_MAX_SGE; n++)
		for (i = 0; i < N_HEADS; i++)
			recv_round_trip(heads[i], n);
}

static void test_recv_wrap(void **state)
{
	struct rn_sge sge[RN_MAX_SGE] = { 0 };
	struct rn_recv_wqe h = recv_hdr(RN_MAX_SGE);
	struct rn_rwqe w;

	(void)state;
	make_sges(sge, RN_MAX_SGE, 9);
	memset(ring, GARBAGE, sizeof(ring));
	post_recv(NSLOTS - 1, &h, sge, RN_MAX_SGE);
	/* SGE 0..2 share the header slot, SGE 3.. continue in slot 0. */
	assert_memory_equal(ring, &sge[3], RN_SLOT_SIZE);
	assert_int_equal(rn_recv_wqe_fetch(ring, NSLOTS, NSLOTS - 1, 9,
					   &recv_lim, &w), 0);
	assert_int_equal(w.wr_id, h.wr_id);
	assert_memory_equal(w.sge, sge, sizeof(sge));
}

static void test_recv_malformed(void **state)
{
	const struct rn_wqe_limits lim = { .max_sge = 4, .max_slots = 2 };
	const struct rn_wqe_limits one = { .max_sge = 4, .max_slots = 1 };
	struct rn_recv_wqe h;

	(void)state;
	/* Too many SGEs for the QP, for the device, for any QP. */
	h = recv_hdr(5);
	assert_recv_rejected(&h, NSLOTS, &lim);
	h = recv_hdr(RN_MAX_SGE + 1);
	assert_recv_rejected(&h, NSLOTS, &recv_lim);
	h = recv_hdr(255);
	assert_recv_rejected(&h, NSLOTS, &recv_lim);
	/* nslots not matching num_sge. */
	h = recv_hdr(4);
	h.nslots = 1;
	assert_recv_rejected(&h, NSLOTS, &recv_lim);
	h.nslots = 3;
	assert_recv_rejected(&h, NSLOTS, &recv_lim);
	h = recv_hdr(0);
	h.nslots = 0;
	assert_recv_rejected(&h, NSLOTS, &recv_lim);
	/* More slots than posted, than the QP's largest WQE, or none posted. */
	h = recv_hdr(RN_MAX_SGE);
	assert_recv_rejected(&h, h.nslots - 1, &recv_lim);
	h = recv_hdr(4);
	assert_int_equal(h.nslots, 2);
	assert_recv_rejected(&h, 1, &lim);
	h = recv_hdr(3);
	assert_recv_rejected(&h, 0, &lim);
	h = recv_hdr(4);
	assert_recv_rejected(&h, NSLOTS, &one);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_slot_macros),
		cmocka_unit_test(test_send_every_opcode),
		cmocka_unit_test(test_no_data_ops),
		cmocka_unit_test(test_send_with_dest),
		cmocka_unit_test(test_send_sge_counts),
		cmocka_unit_test(test_send_inline_lengths),
		cmocka_unit_test(test_send_wrap),
		cmocka_unit_test(test_send_at_limits),
		cmocka_unit_test(test_send_extreme_fields),
		cmocka_unit_test(test_send_bad_opcode),
		cmocka_unit_test(test_send_bad_flags),
		cmocka_unit_test(test_send_too_many_sges),
		cmocka_unit_test(test_send_inline_too_long),
		cmocka_unit_test(test_send_inline_not_allowed),
		cmocka_unit_test(test_send_inline_with_sges),
		cmocka_unit_test(test_send_inline_len_without_inline),
		cmocka_unit_test(test_send_wrong_nslots),
		cmocka_unit_test(test_send_beyond_avail),
		cmocka_unit_test(test_send_beyond_max_slots),
		cmocka_unit_test(test_send_nothing_posted),
		cmocka_unit_test(test_recv_sge_counts),
		cmocka_unit_test(test_recv_wrap),
		cmocka_unit_test(test_recv_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
