// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Descriptor chains: groups that never cross a ring page, fetching through
 * the stage across page ends and ring wraps, and doorbell records that are
 * valid, stale (from before a reset) or bad.
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

#define BIG 256 /* a ring of four pages */

static uint8_t ring[BIG * RN_SLOT_SIZE];
static struct rn_stage st;

static const struct rn_wqe_limits lim = {
	.max_sge = RN_MAX_SGE,
	.max_inline = RN_MAX_INLINE,
	.max_slots = RN_SEND_WQE_MAX_SLOTS,
};

static void test_group_bounds(void **state)
{
	(void)state;
	/* Up to the end of the page the head is in. */
	assert_int_equal(rn_chain_group(0, 1000, BIG), RN_GROUP_SLOTS);
	assert_int_equal(rn_chain_group(10, 1000, BIG), RN_GROUP_SLOTS - 10);
	assert_int_equal(rn_chain_group(63, 1000, BIG), 1);
	assert_int_equal(rn_chain_group(64, 1000, BIG), RN_GROUP_SLOTS);
	/* Or the end of the chain. */
	assert_int_equal(rn_chain_group(10, 15, BIG), 5);
	assert_int_equal(rn_chain_group(10, 10, BIG), 0);
	/* Or the end of the ring, for rings smaller than a page. */
	assert_int_equal(rn_chain_group(5, 1000, 16), 11);
	assert_int_equal(rn_chain_group(16, 1000, 16), 16);
	/* Counters wrap at 48 bits; the ring position is what matters. */
	assert_int_equal(rn_chain_group(RN_DB_SEQ_MASK - 2, 5, BIG), 3);
	assert_int_equal(rn_chain_group((1ull << 40) + 200, (1ull << 40) + 300,
					BIG), RN_GROUP_SLOTS - 200 % RN_GROUP_SLOTS);
}

/* A WQE of n inline bytes at head, its payload counting from seed. */
static uint32_t put_inline(uint64_t head, uint32_t n, uint8_t seed)
{
	uint8_t buf[RN_SEND_HDR_SIZE + RN_MAX_INLINE];
	struct rn_send_wqe *h = (void *)buf;
	uint32_t i;

	memset(buf, 0, RN_SEND_HDR_SIZE);
	h->wr_id = head;
	h->opcode = RN_OP_SEND;
	h->flags = RN_WQE_INLINE;
	h->inline_len = n;
	h->nslots = RN_SEND_WQE_SLOTS(n);
	for (i = 0; i < n; i++)
		buf[RN_SEND_HDR_SIZE + i] = (uint8_t)(seed + i);
	rn_ring_write(ring, BIG, head, buf, RN_SEND_HDR_SIZE + n);
	return h->nslots;
}

static void check(const struct rn_wqe *w, uint64_t head, uint32_t n,
		  uint8_t seed)
{
	uint32_t i;

	assert_int_equal(w->wr_id, head);
	assert_int_equal(w->inline_len, n);
	for (i = 0; i < n; i++)
		assert_int_equal(w->inline_data[i], (uint8_t)(seed + i));
}

/*
 * A chain of WQEs of many sizes, starting anywhere, around the ring twice:
 * each one comes out whole, including those that straddle a page end or
 * the ring's end, and the slots are copied a group at a time.
 */
static void test_chain_across_pages_and_wrap(void **state)
{
	static const uint64_t starts[] = { 0, 1, 60, 250, (1ull << 44) + 7 };
	unsigned int s;

	(void)state;
	for (s = 0; s < sizeof(starts) / sizeof(starts[0]); s++) {
		uint64_t head = starts[s], prod = head, pos;
		uint32_t sizes[64], nslots = 0, i, n = 0;
		uint64_t groups = st.groups;
		struct rn_wqe w;

		/* Fill a ring's worth: the producer never laps the head. */
		while (n < 64) {
			uint32_t len = (n * 97) % (RN_MAX_INLINE + 1);
			uint32_t k = RN_SEND_WQE_SLOTS(len);

			if (nslots + k > BIG)
				break;
			sizes[n++] = len;
			prod += put_inline(prod, len, (uint8_t)n);
			nslots += k;
		}
		rn_stage_reset(&st, head);
		for (i = 0, pos = head; i < n; i++) {
			assert_int_equal(rn_send_wqe_fetch(&st, ring, BIG, pos, prod,
							   &lim, &w), 0);
			check(&w, pos, sizes[i], (uint8_t)(i + 1));
			pos += w.nslots;
		}
		assert_int_equal(pos, prod);
		/* Nothing past the chain. */
		assert_int_equal(rn_send_wqe_fetch(&st, ring, BIG, pos, prod, &lim,
						   &w), EINVAL);
		/* Each group is at most a page: at least nslots / 64 of
		 * them, and the stage never copies a slot twice.
		 */
		assert_true(st.groups - groups >= (nslots + RN_GROUP_SLOTS - 1) /
							  RN_GROUP_SLOTS);
		assert_true(st.groups - groups <= nslots);
	}
}

/* A WQE that claims more slots than were posted is not executed. */
static void test_chain_truncated(void **state)
{
	uint32_t k = put_inline(60, 600, 1); /* 10 slots from slot 60 */
	struct rn_wqe w;

	(void)state;
	rn_stage_reset(&st, 60);
	assert_int_equal(rn_send_wqe_fetch(&st, ring, BIG, 60, 60 + k - 1, &lim,
					   &w), EINVAL);
	rn_stage_reset(&st, 60);
	assert_int_equal(rn_send_wqe_fetch(&st, ring, BIG, 60, 60 + k, &lim, &w),
			 0);
	check(&w, 60, 600, 1);
}

static void test_doorbell_classes(void **state)
{
	uint64_t head = 1000;

	(void)state;
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, head), 7, head, BIG),
			 RN_DB_VALID);
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, head + BIG), 7, head, BIG),
			 RN_DB_VALID);
	/* A chain longer than the ring. */
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, head + BIG + 1), 7, head,
					BIG), RN_DB_BAD);
	/* Another QP's record. */
	assert_int_equal(rn_db_classify(RN_DB_RECORD(8, head), 7, head, BIG),
			 RN_DB_BAD);
	/* From before a reset that moved the head on. */
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, head - 1), 7, head, BIG),
			 RN_DB_STALE);
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, head - 100000), 7, head,
					BIG), RN_DB_STALE);
	/* Around the 48-bit wrap. */
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, 3), 7, RN_DB_SEQ_MASK - 2,
					BIG), RN_DB_VALID);
	assert_int_equal(rn_db_classify(RN_DB_RECORD(7, RN_DB_SEQ_MASK), 7, 3, BIG),
			 RN_DB_STALE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_group_bounds),
		cmocka_unit_test(test_chain_across_pages_and_wrap),
		cmocka_unit_test(test_chain_truncated),
		cmocka_unit_test(test_doorbell_classes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
