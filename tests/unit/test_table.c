// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* rn_table: handle tables indexed by small integers. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/table.h"

#define N_OBJS 5000

/* Distinct, recognisable objects: the table stores pointers to these. */
static char objs[N_OBJS];

static void *obj(unsigned int i)
{
	return &objs[i];
}

/* Insert obj(i) and check that it landed at the expected index. */
static void insert_at(struct rn_table *t, unsigned int i, int64_t want)
{
	assert_int_equal(rn_table_insert(t, obj(i)), want);
	assert_ptr_equal(rn_table_get(t, want), obj(i));
}

static void test_first_index(void **state)
{
	struct rn_table t;

	(void)state;
	rn_table_init(&t, 1, 16, RN_REUSE_LATE);
	assert_null(rn_table_get(&t, 0));
	assert_null(rn_table_get(&t, 1));
	insert_at(&t, 0, 1);
	insert_at(&t, 1, 2);
	insert_at(&t, 2, 3);
	/* Index 0 is below 'first' and never handed out. */
	assert_null(rn_table_get(&t, 0));
	assert_int_equal(t.used, 3);
	rn_table_destroy(&t);

	rn_table_init(&t, 0, 16, RN_REUSE_LATE);
	insert_at(&t, 7, 0);
	insert_at(&t, 8, 1);
	rn_table_destroy(&t);
}

static void test_remove(void **state)
{
	struct rn_table t;

	(void)state;
	rn_table_init(&t, 1, 16, RN_REUSE_LATE);
	insert_at(&t, 0, 1);
	insert_at(&t, 1, 2);
	rn_table_remove(&t, 1);
	assert_null(rn_table_get(&t, 1));
	assert_ptr_equal(rn_table_get(&t, 2), obj(1));
	assert_int_equal(t.used, 1);

	/* Removing what is not there changes nothing. */
	rn_table_remove(&t, 1);
	rn_table_remove(&t, 0);
	rn_table_remove(&t, 9);
	rn_table_remove(&t, UINT32_MAX);
	assert_int_equal(t.used, 1);
	assert_ptr_equal(rn_table_get(&t, 2), obj(1));
	rn_table_destroy(&t);
	assert_null(rn_table_get(&t, 2));
}

/* first = 1, max = 8: indices 1..7, seven objects, then -1. */
static void test_full(void **state)
{
	struct rn_table t;
	unsigned int i;

	(void)state;
	rn_table_init(&t, 1, 8, RN_REUSE_LATE);
	for (i = 1; i < 8; i++)
		insert_at(&t, i, i);
	assert_int_equal(rn_table_insert(&t, obj(100)), -1);
	assert_int_equal(t.used, 7);
	assert_true(t.size <= t.max);

	rn_table_remove(&t, 4);
	insert_at(&t, 100, 4);
	assert_int_equal(rn_table_insert(&t, obj(101)), -1);
	for (i = 1; i < 8; i++)
		assert_non_null(rn_table_get(&t, i));
	rn_table_destroy(&t);
}

/* Removing twice must not free a second place in a full table. */
static void test_double_remove_keeps_limit(void **state)
{
	struct rn_table t;
	unsigned int i;

	(void)state;
	rn_table_init(&t, 0, 4, RN_REUSE_LATE);
	for (i = 0; i < 4; i++)
		insert_at(&t, i, i);
	rn_table_remove(&t, 2);
	rn_table_remove(&t, 2);
	insert_at(&t, 9, 2);
	assert_int_equal(rn_table_insert(&t, obj(10)), -1);
	rn_table_destroy(&t);
}

/* Growing past the initial allocation keeps every object in place. */
static void test_growth(void **state)
{
	const uint32_t max = 4000;
	struct rn_table t;
	unsigned int i;

	(void)state;
	rn_table_init(&t, 0, max, RN_REUSE_LATE);
	for (i = 0; i < max; i++)
		assert_int_equal(rn_table_insert(&t, obj(i)), i);
	assert_int_equal(rn_table_insert(&t, obj(max)), -1);
	assert_int_equal(t.used, max);
	assert_true(t.size <= max);
	for (i = 0; i < max; i++)
		assert_ptr_equal(rn_table_get(&t, i), obj(i));
	rn_table_destroy(&t);
}

/* A maximum that is not a power of two and not a multiple of the growth. */
static void test_odd_max(void **state)
{
	struct rn_table t;
	unsigned int i;

	(void)state;
	rn_table_init(&t, 3, 100, RN_REUSE_LATE);
	for (i = 3; i < 100; i++)
		insert_at(&t, i, i);
	assert_int_equal(rn_table_insert(&t, obj(0)), -1);
	assert_int_equal(t.size, 100);
	rn_table_destroy(&t);
}

/* Indices come from clients: anything must be safe to look up. */
static void test_get_garbage(void **state)
{
	static const uint64_t garbage[] = {
		5, 63, 64, 65, 1000, UINT32_MAX, 1ull << 32, (1ull << 32) | 1,
		UINT64_MAX, UINT64_MAX - 63,
	};
	struct rn_table t;
	size_t i;

	(void)state;
	rn_table_init(&t, 1, 1 << 20, RN_REUSE_LATE);
	/* Nothing allocated yet. */
	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
		assert_null(rn_table_get(&t, garbage[i]));
	assert_null(rn_table_get(&t, 0));

	insert_at(&t, 0, 1);
	for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++)
		assert_null(rn_table_get(&t, garbage[i]));
	assert_null(rn_table_get(&t, 0));
	assert_ptr_equal(rn_table_get(&t, 1), obj(0));
	rn_table_destroy(&t);
}

/* A freed index is handed out again only after the unused ones. */
static void test_late_reuse(void **state)
{
	struct rn_table t;

	(void)state;
	rn_table_init(&t, 1, 8, RN_REUSE_LATE);
	insert_at(&t, 1, 1);
	insert_at(&t, 2, 2);
	insert_at(&t, 3, 3);
	rn_table_remove(&t, 2);
	insert_at(&t, 4, 4);
	insert_at(&t, 5, 5);
	rn_table_remove(&t, 1);
	insert_at(&t, 6, 6);
	insert_at(&t, 7, 7);
	/* The end is reached: wrap to 'first' and take the free ones. */
	insert_at(&t, 8, 1);
	insert_at(&t, 9, 2);
	assert_int_equal(rn_table_insert(&t, obj(10)), -1);
	/* After a wrap the search goes on from where it stopped. */
	rn_table_remove(&t, 6);
	rn_table_remove(&t, 3);
	insert_at(&t, 11, 3);
	insert_at(&t, 12, 6);
	rn_table_destroy(&t);
}

/*
 * Late reuse must not depend on how much of the table happens to be
 * allocated: while never-used indices below max remain, a freed index stays
 * unused, even when the search reaches the end of the current allocation.
 */
static void test_late_reuse_across_growth(void **state)
{
	struct rn_table t;
	uint32_t i, end;

	(void)state;
	rn_table_init(&t, 1, 4096, RN_REUSE_LATE);
	insert_at(&t, 1, 1);
	end = t.size;
	for (i = 2; i < end; i++)
		insert_at(&t, i, i);
	rn_table_remove(&t, 5);
	/* Every allocated slot but 5 is in use: the next one is 'end'. */
	insert_at(&t, end, end);
	insert_at(&t, end + 1, end + 1);
	assert_null(rn_table_get(&t, 5));
	rn_table_destroy(&t);
}

/*
 * Insert/remove churn with one live object (how MR keys and QPNs are used):
 * every index below max is handed out once before any comes back.  Keys
 * and QPNs rely on this: their tag/generation bits only tell reuses apart.
 */
static void test_churn_cycles_through_max(void **state)
{
	const uint32_t max = 1000;
	struct rn_table t;
	uint32_t i;

	(void)state;
	rn_table_init(&t, 1, max, RN_REUSE_LATE);
	for (i = 1; i < max; i++) {
		insert_at(&t, i, i);
		rn_table_remove(&t, i);
	}
	insert_at(&t, 0, 1);
	rn_table_destroy(&t);
}

/* A client's handles: the lowest free index, at once. */
static void test_lowest_reuse(void **state)
{
	struct rn_table t;
	unsigned int i;

	(void)state;
	rn_table_init(&t, 1, 1000, RN_REUSE_LOWEST);
	for (i = 0; i < 10; i++)
		insert_at(&t, i, i + 1);
	rn_table_remove(&t, 7);
	rn_table_remove(&t, 3);
	insert_at(&t, 20, 3);
	insert_at(&t, 21, 7);
	insert_at(&t, 22, 11);
	/* Churn with one live object never leaves the first slots. */
	for (i = 0; i < 100000; i++) {
		int64_t h = rn_table_insert(&t, obj(30));

		assert_int_equal(h, 12);
		rn_table_remove(&t, h);
	}
	assert_int_equal(t.size, 64);
	rn_table_destroy(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_first_index),
		cmocka_unit_test(test_remove),
		cmocka_unit_test(test_full),
		cmocka_unit_test(test_double_remove_keeps_limit),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_odd_max),
		cmocka_unit_test(test_get_garbage),
		cmocka_unit_test(test_late_reuse),
		cmocka_unit_test(test_late_reuse_across_growth),
		cmocka_unit_test(test_churn_cycles_through_max),
		cmocka_unit_test(test_lowest_reuse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
