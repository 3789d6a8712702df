// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The random bytes of keys (base/random.c) and the keys of MRs and windows. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdbool.h>
#include <cmocka.h>

#include "base/random.h"
#include "device_fixture.h"

/* Never the last byte; every other byte comes; no counter. */
static void test_key_byte(void **state)
{
	unsigned int seen[256] = { 0 }, steps = 0, i;
	uint8_t last = 0, b;

	(void)state;
	for (i = 0; i < 256 * 64; i++) {
		b = rn_random_key_byte(last);
		assert_int_not_equal(b, last);
		steps += b == (uint8_t)(last + 1);
		seen[b]++;
		last = b;
	}
	for (i = 0; i < 256; i++)
		assert_true(seen[i] > 0);
	/* A counter steps by one every time; random bytes 1 time in 255. */
	assert_true(steps < 256 * 64 / 16);
}

/*
 * The key of each new MR and window has a random low byte: before, a key
 * table index's first key always ended in 0, and the next in 1.  48 draws
 * from 256 values give about 44 distinct ones; fewer than 24 would take a
 * counter or a constant.
 */
static void test_keys(void **state)
{
	bool seen[2][256] = { { false } };
	unsigned int distinct[2] = { 0, 0 }, i;
	struct fx *fx = fx_new();
	struct fx_mr mr;

	(void)state;
	for (i = 0; i < 48; i++) {
		struct rn_ctl_alloc_mw_req req = { .type = IBV_MW_TYPE_2 };
		struct rn_ctl_alloc_mw_resp resp;
		uint8_t b;

		fx_mr_new(fx, 4096, IBV_ACCESS_LOCAL_WRITE, 0, &mr);
		b = mr.lkey & 0xff;
		distinct[0] += !seen[0][b];
		seen[0][b] = true;
		req.pd = fx->pd;
		assert_int_equal(rn_mw_alloc(fx->client, &req, &resp), 0);
		b = resp.rkey & 0xff;
		distinct[1] += !seen[1][b];
		seen[1][b] = true;
	}
	assert_true(distinct[0] >= 24);
	assert_true(distinct[1] >= 24);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_key_byte),
		cmocka_unit_test(test_keys),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
