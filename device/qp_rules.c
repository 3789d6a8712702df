// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>

#include "qp_rules.h"

struct rn_transition {
	uint32_t required;
	uint32_t optional;
	bool valid;
};

#define N_STATES (IBV_QPS_ERR + 1)

/* The modify_qp table of the IB spec (11.2.4.2) for RC QPs; SQE is not an
 * RC state.  IBV_QP_STATE itself is handled by the caller.
 */
static const struct rn_transition rc_table[N_STATES][N_STATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.required = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS,
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				    IBV_QP_ACCESS_FLAGS,
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.required = IBV_QP_AV | IBV_QP_PATH_MTU |
				    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER,
			.optional = IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.required = IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC,
			.optional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
				    IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.optional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
				    IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.optional = IBV_QP_EN_SQD_ASYNC_NOTIFY,
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.optional = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS |
				    IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.optional = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_AV |
				    IBV_QP_ACCESS_FLAGS | IBV_QP_TIMEOUT |
				    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				    IBV_QP_MAX_QP_RD_ATOMIC |
				    IBV_QP_MAX_DEST_RD_ATOMIC |
				    IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE,
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

#define RN_QP_ACCESS_ALL                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static int check_values(const struct rn_qp_attr *a, uint32_t mask,
			uint32_t gid_count)
{
	if (mask & IBV_QP_PORT && a->port_num != 1)
		return EINVAL;
	if (mask & IBV_QP_PKEY_INDEX && a->pkey_index >= RN_PKEY_TABLE_LEN)
		return EINVAL;
	if (mask & IBV_QP_ACCESS_FLAGS && a->qp_access_flags & ~RN_QP_ACCESS_ALL)
		return EINVAL;
	if (mask & IBV_QP_PATH_MTU &&
	    (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if (mask & IBV_QP_AV) {
		if (a->ah_attr.port_num > 1)
			return EINVAL;
		if (a->ah_attr.is_global && a->ah_attr.sgid_index >= gid_count)
			return EINVAL;
	}
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC && a->max_rd_atomic > RN_MAX_RD_ATOM)
		return EINVAL;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC &&
	    a->max_dest_rd_atomic > RN_MAX_RD_ATOM)
		return EINVAL;
	if (mask & IBV_QP_MIN_RNR_TIMER && a->min_rnr_timer > 31)
		return EINVAL;
	if (mask & IBV_QP_TIMEOUT && a->timeout > 31)
		return EINVAL;
	if (mask & IBV_QP_RETRY_CNT && a->retry_cnt > 7)
		return EINVAL;
	if (mask & IBV_QP_RNR_RETRY && a->rnr_retry > 7)
		return EINVAL;
	if (mask & IBV_QP_RQ_PSN && a->rq_psn >> 24)
		return EINVAL;
	if (mask & IBV_QP_SQ_PSN && a->sq_psn >> 24)
		return EINVAL;
	if (mask & IBV_QP_DEST_QPN && a->dest_qp_num >> 24)
		return EINVAL;
	/* No alternate path: only the migrated state exists. */
	if (mask & IBV_QP_PATH_MIG_STATE && a->path_mig_state != IBV_MIG_MIGRATED)
		return EINVAL;
	return 0;
}

int rn_qp_check_modify(enum ibv_qp_state cur, const struct rn_qp_attr *attr,
		       uint32_t mask, uint32_t gid_count,
		       enum ibv_qp_state *next)
{
	const struct rn_transition *t;
	enum ibv_qp_state to = cur;
	uint32_t attrs = mask & ~IBV_QP_STATE;

	if ((unsigned int)cur >= N_STATES)
		return EINVAL;
	if (mask & IBV_QP_STATE) {
		if (attr->qp_state >= N_STATES)
			return EINVAL;
		to = attr->qp_state;
	}
	if (mask & IBV_QP_CUR_STATE && attr->cur_qp_state != cur)
		return EINVAL;

	t = &rc_table[cur][to];
	if (!t->valid)
		return EINVAL;
	if ((attrs & t->required) != t->required)
		return EINVAL;
	if (attrs & ~(t->required | t->optional))
		return EINVAL;
	if (check_values(attr, attrs, gid_count))
		return EINVAL;

	*next = to;
	return 0;
}

uint64_t rn_rnr_timer_ns(uint8_t code)
{
	/* IB spec table 45, in units of 10 us; code 0 is the longest. */
	static const uint32_t units[32] = {
		65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
		256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192,
		12288, 16384, 24576, 32768, 49152,
	};

	return (uint64_t)units[code & 31] * 10000;
}

uint64_t rn_ack_timeout_ns(uint8_t timeout)
{
	if (!timeout)
		return UINT64_MAX;
	/* 4.096 us * 2^timeout = 4096 ns << timeout */
	return 4096ull << (timeout & 31);
}
