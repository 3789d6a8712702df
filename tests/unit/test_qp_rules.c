// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The RC QP state machine (rn_qp_check_modify) and the IB timer encodings. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <errno.h>
#include <string.h>
#include <cmocka.h>

#include "verbs/qp_rules.h"

/* GID entries 0, 1 and 3 hold addresses; 2 is empty (its address went). */
#define GID_MASK 0xbu
#define N_STATES (IBV_QPS_ERR + 1)
#define NOT_A_STATE 0x5a5a

/*
 * The RC transitions of the IB spec's QP state table (IBA 11.2.4.2, as
 * the kernel's ib_modify_qp_is_ok also encodes it), written down here
 * independently of the device's table.  ALT_PATH is left out: the device
 * has no alternate path.
 */
struct transition {
	enum ibv_qp_state from;
	enum ibv_qp_state to;
	uint32_t required;
	uint32_t optional;
};

static const struct transition rc[] = {
	{ IBV_QPS_RESET, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_RESET, IBV_QPS_INIT,
	  IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, 0 },
	{ IBV_QPS_INIT, IBV_QPS_INIT, 0,
	  IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS },
	{ IBV_QPS_INIT, IBV_QPS_RTR,
	  IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
	  IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX },
	{ IBV_QPS_RTR, IBV_QPS_RTS,
	  IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		  IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC,
	  IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
		  IBV_QP_PATH_MIG_STATE },
	{ IBV_QPS_RTS, IBV_QPS_RTS, 0,
	  IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
		  IBV_QP_PATH_MIG_STATE },
	{ IBV_QPS_RTS, IBV_QPS_SQD, 0, IBV_QP_EN_SQD_ASYNC_NOTIFY },
	{ IBV_QPS_SQD, IBV_QPS_RTS, 0,
	  IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_MIN_RNR_TIMER |
		  IBV_QP_PATH_MIG_STATE },
	{ IBV_QPS_SQD, IBV_QPS_SQD, 0,
	  IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV | IBV_QP_ACCESS_FLAGS |
		  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
		  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
		  IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE },
	/* Every RC state may go to RESET and to ERR, with no attributes. */
	{ IBV_QPS_INIT, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_RTR, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_RTS, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_SQD, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_ERR, IBV_QPS_RESET, 0, 0 },
	{ IBV_QPS_RESET, IBV_QPS_ERR, 0, 0 },
	{ IBV_QPS_INIT, IBV_QPS_ERR, 0, 0 },
	{ IBV_QPS_RTR, IBV_QPS_ERR, 0, 0 },
	{ IBV_QPS_RTS, IBV_QPS_ERR, 0, 0 },
	{ IBV_QPS_SQD, IBV_QPS_ERR, 0, 0 },
	{ IBV_QPS_ERR, IBV_QPS_ERR, 0, 0 },
};
#define N_RC (sizeof(rc) / sizeof(rc[0]))

static const struct transition *find(enum ibv_qp_state from,
				     enum ibv_qp_state to)
{
	size_t i;

	for (i = 0; i < N_RC; i++)
		if (rc[i].from == from && rc[i].to == to)
			return &rc[i];
	return NULL;
}

/* Attributes with every value in range for this device. */
static struct rn_qp_attr good_attr(enum ibv_qp_state from,
				   enum ibv_qp_state to)
{
	struct rn_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = to;
	a.cur_qp_state = from;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	a.path_mtu = IBV_MTU_1024;
	a.ah_attr.is_global = 1;
	a.ah_attr.sgid_index = 3;
	a.ah_attr.port_num = 1;
	a.ah_attr.hop_limit = 64;
	a.dest_qp_num = 0xabcdef;
	a.rq_psn = 0x123456;
	a.sq_psn = 0x654321;
	a.max_dest_rd_atomic = RN_MAX_RD_ATOM;
	a.max_rd_atomic = RN_MAX_RD_ATOM;
	a.min_rnr_timer = 12;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.path_mig_state = IBV_MIG_MIGRATED;
	a.en_sqd_async_notify = 1;
	return a;
}

static int check(enum ibv_qp_state cur, const struct rn_qp_attr *a,
		 uint32_t mask, enum ibv_qp_state *next)
{
	*next = NOT_A_STATE;
	return rn_qp_check_modify(IBV_QPT_RC, cur, a, mask, GID_MASK, next);
}

static void expect_ok(enum ibv_qp_state from, const struct rn_qp_attr *a,
		      uint32_t mask, enum ibv_qp_state want)
{
	enum ibv_qp_state next;

	assert_int_equal(check(from, a, mask, &next), 0);
	assert_int_equal(next, want);
}

static void expect_einval(enum ibv_qp_state from, const struct rn_qp_attr *a,
			  uint32_t mask)
{
	enum ibv_qp_state next;

	assert_int_equal(check(from, a, mask, &next), EINVAL);
}

/* from -> to with its required attributes and 'extra', values from *a. */
static int transit(enum ibv_qp_state from, enum ibv_qp_state to,
		   uint32_t extra, const struct rn_qp_attr *a)
{
	const struct transition *t = find(from, to);
	enum ibv_qp_state next;
	int ret;

	assert_non_null(t);
	ret = check(from, a, IBV_QP_STATE | t->required | extra, &next);
	if (!ret)
		assert_int_equal(next, to);
	return ret;
}

/* ---- the table ------------------------------------------------------------ */

static void test_valid_transitions(void **state)
{
	size_t i;

	(void)state;
	for (i = 0; i < N_RC; i++) {
		struct rn_qp_attr a = good_attr(rc[i].from, rc[i].to);
		uint32_t mask = IBV_QP_STATE | rc[i].required;

		expect_ok(rc[i].from, &a, mask, rc[i].to);
		expect_ok(rc[i].from, &a, mask | rc[i].optional, rc[i].to);
	}
}

/* Each optional attribute alone on top of the required ones. */
static void test_each_optional(void **state)
{
	uint32_t bit;
	size_t i;

	(void)state;
	for (i = 0; i < N_RC; i++) {
		struct rn_qp_attr a = good_attr(rc[i].from, rc[i].to);

		for (bit = 1; bit; bit <<= 1)
			if (rc[i].optional & bit)
				assert_int_equal(transit(rc[i].from, rc[i].to,
							 bit, &a), 0);
	}
}

static void test_missing_required(void **state)
{
	uint32_t bit;
	size_t i;

	(void)state;
	for (i = 0; i < N_RC; i++) {
		struct rn_qp_attr a = good_attr(rc[i].from, rc[i].to);
		uint32_t mask = IBV_QP_STATE | rc[i].required | rc[i].optional;

		for (bit = 1; bit; bit <<= 1)
			if (rc[i].required & bit)
				expect_einval(rc[i].from, &a, mask & ~bit);
	}
}

/* Every other mask bit, known to verbs or not, is refused. */
static void test_attr_not_allowed(void **state)
{
	uint32_t bit;
	size_t i;

	(void)state;
	for (i = 0; i < N_RC; i++) {
		struct rn_qp_attr a = good_attr(rc[i].from, rc[i].to);
		uint32_t allowed = IBV_QP_STATE | rc[i].required |
				   rc[i].optional;

		for (bit = 1; bit; bit <<= 1)
			if (!(allowed & bit))
				assert_int_equal(transit(rc[i].from, rc[i].to,
							 bit, &a), EINVAL);
	}
}

/* The attributes of RC QPs that have no place in any RC transition. */
static void test_never_allowed_attrs(void **state)
{
	static const uint32_t never[] = {
		IBV_QP_QKEY, IBV_QP_ALT_PATH, IBV_QP_CAP, IBV_QP_RATE_LIMIT,
		1u << 31,
	};
	size_t i, j;

	(void)state;
	for (i = 0; i < N_RC; i++) {
		struct rn_qp_attr a = good_attr(rc[i].from, rc[i].to);

		for (j = 0; j < sizeof(never) / sizeof(never[0]); j++)
			assert_int_equal(transit(rc[i].from, rc[i].to,
						 never[j], &a), EINVAL);
	}
}

static void test_invalid_transitions(void **state)
{
	uint32_t all = 0;
	unsigned int from, to;
	size_t i;

	(void)state;
	for (i = 0; i < N_RC; i++)
		all |= rc[i].required | rc[i].optional;
	for (from = 0; from < N_STATES; from++) {
		for (to = 0; to < N_STATES; to++) {
			struct rn_qp_attr a = good_attr(from, to);

			if (find(from, to))
				continue;
			expect_einval(from, &a, IBV_QP_STATE);
			expect_einval(from, &a, IBV_QP_STATE | all);
		}
	}
}

/* A few by name, as applications get them wrong. */
static void test_invalid_transitions_named(void **state)
{
	struct rn_qp_attr a;

	(void)state;
	a = good_attr(IBV_QPS_RESET, IBV_QPS_RTR);
	expect_einval(IBV_QPS_RESET, &a, IBV_QP_STATE | find(IBV_QPS_INIT,
					  IBV_QPS_RTR)->required);
	a = good_attr(IBV_QPS_INIT, IBV_QPS_RTS);
	expect_einval(IBV_QPS_INIT, &a, IBV_QP_STATE | find(IBV_QPS_RTR,
					 IBV_QPS_RTS)->required);
	a = good_attr(IBV_QPS_RTR, IBV_QPS_SQD);
	expect_einval(IBV_QPS_RTR, &a, IBV_QP_STATE);
	a = good_attr(IBV_QPS_ERR, IBV_QPS_RTS);
	expect_einval(IBV_QPS_ERR, &a, IBV_QP_STATE);
	a = good_attr(IBV_QPS_ERR, IBV_QPS_INIT);
	expect_einval(IBV_QPS_ERR, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	a = good_attr(IBV_QPS_RTS, IBV_QPS_SQE);
	expect_einval(IBV_QPS_RTS, &a, IBV_QP_STATE);
}

static void test_bad_state_values(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RESET, IBV_QPS_INIT);
	uint32_t init = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			IBV_QP_ACCESS_FLAGS;

	(void)state;
	a.qp_state = IBV_QPS_UNKNOWN;
	expect_einval(IBV_QPS_RESET, &a, init);
	a.qp_state = 1000;
	expect_einval(IBV_QPS_RESET, &a, init);
	a.qp_state = UINT32_MAX;
	expect_einval(IBV_QPS_RESET, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_ERR;
	expect_einval(IBV_QPS_UNKNOWN, &a, IBV_QP_STATE);
	expect_einval((enum ibv_qp_state)77, &a, IBV_QP_STATE);
}

/* Without IBV_QP_STATE the QP stays where it is; qp_state is not read. */
static void test_modify_without_state(void **state)
{
	struct rn_qp_attr a;

	(void)state;
	a = good_attr(IBV_QPS_INIT, IBV_QPS_INIT);
	a.qp_state = IBV_QPS_RTS;
	expect_ok(IBV_QPS_INIT, &a, IBV_QP_ACCESS_FLAGS, IBV_QPS_INIT);
	expect_ok(IBV_QPS_INIT, &a, IBV_QP_PKEY_INDEX | IBV_QP_PORT,
		  IBV_QPS_INIT);
	expect_einval(IBV_QPS_INIT, &a, IBV_QP_TIMEOUT);

	a = good_attr(IBV_QPS_RTS, IBV_QPS_RTS);
	a.qp_state = NOT_A_STATE;
	expect_ok(IBV_QPS_RTS, &a, IBV_QP_MIN_RNR_TIMER, IBV_QPS_RTS);
	expect_ok(IBV_QPS_RTS, &a, 0, IBV_QPS_RTS);
	expect_einval(IBV_QPS_RTS, &a, IBV_QP_SQ_PSN);

	a = good_attr(IBV_QPS_SQD, IBV_QPS_SQD);
	a.qp_state = IBV_QPS_RESET;
	expect_ok(IBV_QPS_SQD, &a, IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT,
		  IBV_QPS_SQD);

	a = good_attr(IBV_QPS_RESET, IBV_QPS_RESET);
	a.qp_state = IBV_QPS_INIT;
	expect_ok(IBV_QPS_RESET, &a, 0, IBV_QPS_RESET);
	expect_einval(IBV_QPS_RESET, &a, IBV_QP_PKEY_INDEX);

	a = good_attr(IBV_QPS_ERR, IBV_QPS_ERR);
	expect_ok(IBV_QPS_ERR, &a, 0, IBV_QPS_ERR);
	expect_einval(IBV_QPS_ERR, &a, IBV_QP_ACCESS_FLAGS);

	/* RTR -> RTR is no transition of the table. */
	a = good_attr(IBV_QPS_RTR, IBV_QPS_RTR);
	expect_einval(IBV_QPS_RTR, &a, IBV_QP_ACCESS_FLAGS);
}

static void test_cur_state(void **state)
{
	struct rn_qp_attr a;

	(void)state;
	a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_CUR_STATE,
				 &a), 0);
	a.cur_qp_state = IBV_QPS_INIT;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, IBV_QP_CUR_STATE,
				 &a), EINVAL);
	/* Without the mask bit cur_qp_state is not looked at. */
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), 0);

	a = good_attr(IBV_QPS_RTS, IBV_QPS_RTS);
	expect_ok(IBV_QPS_RTS, &a, IBV_QP_CUR_STATE, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_SQD;
	expect_einval(IBV_QPS_RTS, &a, IBV_QP_CUR_STATE);
	a.cur_qp_state = 999;
	expect_einval(IBV_QPS_RTS, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);

	a = good_attr(IBV_QPS_SQD, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_RTS;
	expect_einval(IBV_QPS_SQD, &a, IBV_QP_STATE | IBV_QP_CUR_STATE);
}

/* ---- value ranges ------------------------------------------------------- */

static void test_port(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RESET, IBV_QPS_INIT);

	(void)state;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), 0);
	a.port_num = 0;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), EINVAL);
	a.port_num = 2;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), EINVAL);
	a.port_num = 255;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_INIT, IBV_QP_PORT, &a),
			 EINVAL);
	assert_int_equal(transit(IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_PORT, &a),
			 EINVAL);
}

static void test_pkey_index(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RESET, IBV_QPS_INIT);

	(void)state;
	a.pkey_index = RN_PKEY_TABLE_LEN - 1;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), 0);
	a.pkey_index = RN_PKEY_TABLE_LEN;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), EINVAL);
	a.pkey_index = 0xffff;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), EINVAL);
	a = good_attr(IBV_QPS_INIT, IBV_QPS_RTR);
	a.pkey_index = 1;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, IBV_QP_PKEY_INDEX,
				 &a), EINVAL);
}

static void test_access_flags(void **state)
{
	/* Bits no ibv_access_flags defines; an MR's flags are taken. */
	static const uint32_t bad[] = { 1u << 10, 1u << 31 };
	static const uint32_t mr_only[] = {
		IBV_ACCESS_MW_BIND, IBV_ACCESS_ZERO_BASED, IBV_ACCESS_ON_DEMAND,
		IBV_ACCESS_HUGETLB, IBV_ACCESS_RELAXED_ORDERING,
	};
	struct rn_qp_attr a = good_attr(IBV_QPS_RESET, IBV_QPS_INIT);
	size_t i;

	(void)state;
	a.qp_access_flags = 0;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), 0);
	a.qp_access_flags = IBV_ACCESS_REMOTE_READ;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), 0);
	for (i = 0; i < sizeof(mr_only) / sizeof(mr_only[0]); i++) {
		struct rn_qp_attr r = good_attr(IBV_QPS_RTS, IBV_QPS_RTS);

		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | mr_only[i];
		assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a),
				 0);
		r.qp_access_flags = a.qp_access_flags;
		assert_int_equal(transit(IBV_QPS_RTS, IBV_QPS_RTS,
					 IBV_QP_ACCESS_FLAGS, &r), 0);
	}
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rn_qp_attr r = good_attr(IBV_QPS_RTS, IBV_QPS_RTS);

		a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | bad[i];
		assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a),
				 EINVAL);
		r.qp_access_flags = a.qp_access_flags;
		assert_int_equal(transit(IBV_QPS_RTS, IBV_QPS_RTS,
					 IBV_QP_ACCESS_FLAGS, &r), EINVAL);
	}
}

static void test_path_mtu(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_INIT, IBV_QPS_RTR);
	uint32_t mtu;

	(void)state;
	for (mtu = IBV_MTU_256; mtu <= IBV_MTU_4096; mtu++) {
		a.path_mtu = mtu;
		assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), 0);
	}
	a.path_mtu = 0;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.path_mtu = IBV_MTU_4096 + 1;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.path_mtu = UINT32_MAX;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
}

static void test_retry_counts(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);
	unsigned int v;

	(void)state;
	for (v = 0; v <= 7; v++) {
		a.retry_cnt = v;
		a.rnr_retry = 7 - v;
		assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), 0);
	}
	a.retry_cnt = 8;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
	a.retry_cnt = 255;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
	a.retry_cnt = 7;
	a.rnr_retry = 8;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
	assert_int_equal(transit(IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_RNR_RETRY,
				 &a), EINVAL);
}

static void test_timers(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);
	unsigned int v;

	(void)state;
	for (v = 0; v <= 31; v++) {
		a.timeout = v;
		a.min_rnr_timer = 31 - v;
		assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS,
					 IBV_QP_MIN_RNR_TIMER, &a), 0);
	}
	a.timeout = 32;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
	a.timeout = 0;
	a.min_rnr_timer = 32;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS,
				 IBV_QP_MIN_RNR_TIMER, &a), EINVAL);
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.min_rnr_timer = 255;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
}

static void test_rd_atomic(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);

	(void)state;
	a.max_rd_atomic = 0;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), 0);
	a.max_rd_atomic = RN_MAX_RD_ATOM + 1;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);

	a = good_attr(IBV_QPS_INIT, IBV_QPS_RTR);
	a.max_dest_rd_atomic = 0;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), 0);
	a.max_dest_rd_atomic = RN_MAX_RD_ATOM + 1;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.max_dest_rd_atomic = 255;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
}

/* PSNs and QPNs are 24-bit numbers. */
static void test_24_bit_fields(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_INIT, IBV_QPS_RTR);

	(void)state;
	a.rq_psn = 0xffffff;
	a.dest_qp_num = 0xffffff;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), 0);
	a.rq_psn = 1u << 24;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.rq_psn = 0;
	a.dest_qp_num = 1u << 24;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.dest_qp_num = UINT32_MAX;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);

	a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);
	a.sq_psn = 0xffffff;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), 0);
	a.sq_psn = 1u << 24;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
	a.sq_psn = 0x80000000u;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), EINVAL);
}

static void test_address_vector(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_INIT, IBV_QPS_RTR);
	uint32_t rtr = IBV_QP_STATE | find(IBV_QPS_INIT, IBV_QPS_RTR)->required;
	enum ibv_qp_state next;

	(void)state;
	/* Empty entries, a hole and past the last address, as the kernel
	 * answers: ENODATA; past the table: EINVAL.
	 */
	a.ah_attr.sgid_index = 2;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), ENODATA);
	a.ah_attr.sgid_index = 4;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), ENODATA);
	a.ah_attr.sgid_index = RN_GID_TABLE_LEN;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.ah_attr.sgid_index = 255;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	a.ah_attr.sgid_index = 1;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), 0);
	/* Without a GRH the GID index means nothing. */
	a.ah_attr.is_global = 0;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), 0);
	a.ah_attr.is_global = 1;
	a.ah_attr.sgid_index = 0;
	/* A device without GIDs has no source GID to name. */
	assert_int_equal(rn_qp_check_modify(IBV_QPT_RC, IBV_QPS_INIT, &a, rtr, 0, &next),
			 ENODATA);
	a.ah_attr.port_num = 2;
	assert_int_equal(transit(IBV_QPS_INIT, IBV_QPS_RTR, 0, &a), EINVAL);
	assert_int_equal(transit(IBV_QPS_SQD, IBV_QPS_SQD, IBV_QP_AV, &a),
			 EINVAL);
}

/* Only the migrated state exists: no alternate path. */
static void test_path_mig_state(void **state)
{
	struct rn_qp_attr a = good_attr(IBV_QPS_RTR, IBV_QPS_RTS);

	(void)state;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS,
				 IBV_QP_PATH_MIG_STATE, &a), 0);
	a.path_mig_state = IBV_MIG_REARM;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS,
				 IBV_QP_PATH_MIG_STATE, &a), EINVAL);
	a.path_mig_state = IBV_MIG_ARMED;
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS,
				 IBV_QP_PATH_MIG_STATE, &a), EINVAL);
	/* Not in the mask: not looked at. */
	assert_int_equal(transit(IBV_QPS_RTR, IBV_QPS_RTS, 0, &a), 0);
}

/* Values of attributes outside the mask are never checked. */
static void test_unmasked_values_ignored(void **state)
{
	struct rn_qp_attr a;

	(void)state;
	memset(&a, 0xff, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.pkey_index = 0;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	assert_int_equal(transit(IBV_QPS_RESET, IBV_QPS_INIT, 0, &a), 0);
	a.qp_state = IBV_QPS_ERR;
	assert_int_equal(transit(IBV_QPS_RTS, IBV_QPS_ERR, 0, &a), 0);
	a.qp_state = IBV_QPS_RESET;
	assert_int_equal(transit(IBV_QPS_SQD, IBV_QPS_RESET, 0, &a), 0);
}

/* ---- timer encodings ------------------------------------------------------ */

/*
 * IB spec table "RNR NAK timer field encoding", in units of 10 us: code 0
 * is 655.36 ms; codes 1..4 are 1..4 units; from there an even code 2m is
 * 2^m units and an odd code 2m+1 is 3 * 2^(m-1) units, up to 491.52 ms.
 */
static uint64_t rnr_units(unsigned int code)
{
	unsigned int m = code / 2;

	if (code == 0)
		return 65536;
	if (code <= 4)
		return code;
	return code % 2 ? 3ull << (m - 1) : 1ull << m;
}

static void test_rnr_timer(void **state)
{
	unsigned int code;

	(void)state;
	assert_int_equal(rn_rnr_timer_ns(0), 655360000);
	assert_int_equal(rn_rnr_timer_ns(1), 10000);
	assert_int_equal(rn_rnr_timer_ns(2), 20000);
	assert_int_equal(rn_rnr_timer_ns(5), 60000);
	assert_int_equal(rn_rnr_timer_ns(12), 640000);
	assert_int_equal(rn_rnr_timer_ns(14), 1280000);
	assert_int_equal(rn_rnr_timer_ns(15), 1920000);
	assert_int_equal(rn_rnr_timer_ns(22), 20480000);
	assert_int_equal(rn_rnr_timer_ns(31), 491520000);
	for (code = 0; code < 32; code++)
		assert_int_equal(rn_rnr_timer_ns(code), rnr_units(code) * 10000);
	/* Strictly increasing from code 1 on. */
	for (code = 2; code < 32; code++)
		assert_true(rn_rnr_timer_ns(code) > rn_rnr_timer_ns(code - 1));
}

static void test_ack_timeout(void **state)
{
	unsigned int t;

	(void)state;
	assert_int_equal(rn_ack_timeout_ns(0), UINT64_MAX);
	assert_int_equal(rn_ack_timeout_ns(1), 8192);
	assert_int_equal(rn_ack_timeout_ns(14), 4096ull * 16384);
	assert_int_equal(rn_ack_timeout_ns(31), 4096ull << 31);
	for (t = 1; t <= 31; t++)
		assert_int_equal(rn_ack_timeout_ns(t), 4096ull << t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_valid_transitions),
		cmocka_unit_test(test_each_optional),
		cmocka_unit_test(test_missing_required),
		cmocka_unit_test(test_attr_not_allowed),
		cmocka_unit_test(test_never_allowed_attrs),
		cmocka_unit_test(test_invalid_transitions),
		cmocka_unit_test(test_invalid_transitions_named),
		cmocka_unit_test(test_bad_state_values),
		cmocka_unit_test(test_modify_without_state),
		cmocka_unit_test(test_cur_state),
		cmocka_unit_test(test_port),
		cmocka_unit_test(test_pkey_index),
		cmocka_unit_test(test_access_flags),
		cmocka_unit_test(test_path_mtu),
		cmocka_unit_test(test_retry_counts),
		cmocka_unit_test(test_timers),
		cmocka_unit_test(test_rd_atomic),
		cmocka_unit_test(test_24_bit_fields),
		cmocka_unit_test(test_address_vector),
		cmocka_unit_test(test_path_mig_state),
		cmocka_unit_test(test_unmasked_values_ignored),
		cmocka_unit_test(test_rnr_timer),
		cmocka_unit_test(test_ack_timeout),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
