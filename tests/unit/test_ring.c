// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rn_ring_write / rn_ring_read: WQEs in a ring of 64-byte slots. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "kernel-abi/ringnic-ring.h"

#define NSLOTS 8
#define RING_BYTES (NSLOTS * RN_SLOT_SIZE)
#define FILL 0xee

/* A guard slot on each side catches writes outside the ring. */
struct guarded_ring {
	uint8_t before[RN_SLOT_SIZE];
	uint8_t ring[RING_BYTES];
	uint8_t after[RN_SLOT_SIZE];
};

static void pattern(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + 1);
}

static void reset(struct guarded_ring *g)
{
	memset(g, FILL, sizeof(*g));
}

static void assert_filled(const uint8_t *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		assert_int_equal(p[i], FILL);
}

/* Where byte 'off' of a WQE starting at counter 'head' must be. */
static size_t ring_pos(uint64_t head, size_t off)
{
	return (((head & (NSLOTS - 1)) << RN_SLOT_SHIFT) + off) % RING_BYTES;
}

/*
 * Write len bytes at head, check their place in the ring byte by byte, that
 * nothing else changed, and that reading them back gives the same bytes.
 */
static void round_trip(uint64_t head, size_t len)
{
	struct guarded_ring g;
	uint8_t src[RING_BYTES], dst[RING_BYTES];
	uint8_t touched[RING_BYTES] = { 0 };
	size_t i;

	reset(&g);
	pattern(src, len, (unsigned int)head);
	rn_ring_write(g.ring, NSLOTS, head, src, len);

	for (i = 0; i < len; i++) {
		assert_int_equal(g.ring[ring_pos(head, i)], src[i]);
		touched[ring_pos(head, i)] = 1;
	}
	for (i = 0; i < RING_BYTES; i++)
		if (!touched[i])
			assert_int_equal(g.ring[i], FILL);
	assert_filled(g.before, sizeof(g.before));
	assert_filled(g.after, sizeof(g.after));

	memset(dst, 0, sizeof(dst));
	rn_ring_read(g.ring, NSLOTS, head, dst, len);
	assert_memory_equal(dst, src, len);
	/* A read writes exactly len bytes. */
	for (i = len; i < sizeof(dst); i++)
		assert_int_equal(dst[i], 0);
}

static void test_tail_room(void **state)
{
	(void)state;
	assert_int_equal(rn_ring_tail_room(NSLOTS, 0), RING_BYTES);
	assert_int_equal(rn_ring_tail_room(NSLOTS, 5), 3 * RN_SLOT_SIZE);
	assert_int_equal(rn_ring_tail_room(NSLOTS, 7), RN_SLOT_SIZE);
	assert_int_equal(rn_ring_tail_room(NSLOTS, 8), RING_BYTES);
	assert_int_equal(rn_ring_tail_room(NSLOTS, UINT64_MAX), RN_SLOT_SIZE);
	assert_int_equal(rn_ring_tail_room(1, 12345), RN_SLOT_SIZE);
	assert_int_equal(rn_ring_tail_room(1u << 20, (1ull << 20) - 2),
			 2 * RN_SLOT_SIZE);
}

/* Every start slot, every length from 1 byte to the whole ring. */
static void test_round_trip_all_positions(void **state)
{
	uint64_t head;
	size_t len;

	(void)state;
	for (head = 0; head < 2 * NSLOTS; head++)
		for (len = 1; len <= RING_BYTES; len += 13)
			round_trip(head, len);
	for (head = 0; head < NSLOTS; head++) {
		round_trip(head, RN_SLOT_SIZE);
		round_trip(head, RING_BYTES);
	}
}

/* A 3-slot WQE at the last slot: its tail is in slots 0 and 1. */
static void test_wrap_layout(void **state)
{
	struct guarded_ring g;
	uint8_t src[3 * RN_SLOT_SIZE], dst[3 * RN_SLOT_SIZE];

	(void)state;
	reset(&g);
	pattern(src, sizeof(src), 3);
	rn_ring_write(g.ring, NSLOTS, NSLOTS - 1, src, sizeof(src));
	assert_memory_equal(g.ring + (NSLOTS - 1) * RN_SLOT_SIZE, src,
			    RN_SLOT_SIZE);
	assert_memory_equal(g.ring, src + RN_SLOT_SIZE, 2 * RN_SLOT_SIZE);
	assert_filled(g.ring + 2 * RN_SLOT_SIZE, (NSLOTS - 3) * RN_SLOT_SIZE);
	assert_filled(g.after, sizeof(g.after));

	rn_ring_read(g.ring, NSLOTS, NSLOTS - 1, dst, sizeof(dst));
	assert_memory_equal(dst, src, sizeof(dst));
}

/* Counters run free far beyond the ring size: only the low bits count. */
static void test_free_running_counters(void **state)
{
	static const uint64_t heads[] = {
		1ull << 32, (1ull << 32) + 7, (1ull << 48) - 1, 1ull << 48,
		(1ull << 48) + 5, UINT64_MAX, UINT64_MAX - 8, 0xdeadbeefcafef00dull,
	};
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(heads) / sizeof(heads[0]); i++) {
		round_trip(heads[i], RN_SLOT_SIZE);
		round_trip(heads[i], 2 * RN_SLOT_SIZE + 17);
		round_trip(heads[i], RING_BYTES);
	}
}

/* Written at one counter, read at another with the same low bits. */
static void test_alias(void **state)
{
	struct guarded_ring g;
	uint8_t src[200], dst[200];

	(void)state;
	reset(&g);
	pattern(src, sizeof(src), 9);
	rn_ring_write(g.ring, NSLOTS, 6, src, sizeof(src));
	rn_ring_read(g.ring, NSLOTS, (1ull << 40) + 6, dst, sizeof(dst));
	assert_memory_equal(dst, src, sizeof(dst));
}

static void test_single_slot_ring(void **state)
{
	uint8_t ring[RN_SLOT_SIZE], src[RN_SLOT_SIZE], dst[RN_SLOT_SIZE];

	(void)state;
	pattern(src, sizeof(src), 5);
	rn_ring_write(ring, 1, 77, src, sizeof(src));
	assert_memory_equal(ring, src, sizeof(src));
	rn_ring_read(ring, 1, 3, dst, sizeof(dst));
	assert_memory_equal(dst, src, sizeof(dst));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_tail_room),
		cmocka_unit_test(test_round_trip_all_positions),
		cmocka_unit_test(test_wrap_layout),
		cmocka_unit_test(test_free_running_counters),
		cmocka_unit_test(test_alias),
		cmocka_unit_test(test_single_slot_ring),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
