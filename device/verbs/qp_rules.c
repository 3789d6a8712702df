// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>

#include "verbs/qp_rules.h"

/* The QP types the table distinguishes. */
enum rn_qp_class {
	RC,
	UC,
	UD,
	XRC_INI,
	XRC_TGT,
	N_CLASSES
};

struct rn_transition {
	bool valid;
	uint32_t required[N_CLASSES];
	uint32_t optional[N_CLASSES];
};

#define N_STATES (IBV_QPS_ERR + 1)

#define PKEY IBV_QP_PKEY_INDEX
#define PORT IBV_QP_PORT
#define ACCESS IBV_QP_ACCESS_FLAGS
#define CUR IBV_QP_CUR_STATE
#define MIG IBV_QP_PATH_MIG_STATE
#define RNR_TIMER IBV_QP_MIN_RNR_TIMER
/* What RTR needs of a connected QP, and RTS of a reliable one. */
#define CONNECT (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RESPOND (IBV_QP_MAX_DEST_RD_ATOMIC | RNR_TIMER)
#define REQUEST (IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |         \
		 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

/*
 * The modify_qp table of the IB spec (11.2.4.2), which the kernel's
 * ib_modify_qp_is_ok also encodes, for the QP types ringnic offers; no
 * alternate paths.  IBV_QP_STATE itself is handled by the caller.  SQE is
 * a UD and UC state: the send queue failed, the receive queue goes on.
 */
static const struct rn_transition table[N_STATES][N_STATES] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.required = {
				[RC] = PKEY | PORT | ACCESS,
				[UC] = PKEY | PORT | ACCESS,
				[UD] = PKEY | PORT | IBV_QP_QKEY,
				[XRC_INI] = PKEY | PORT | ACCESS,
				[XRC_TGT] = PKEY | PORT | ACCESS,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = {
			.valid = true,
			.optional = {
				[RC] = PKEY | PORT | ACCESS,
				[UC] = PKEY | PORT | ACCESS,
				[UD] = PKEY | PORT | IBV_QP_QKEY,
				[XRC_INI] = PKEY | PORT | ACCESS,
				[XRC_TGT] = PKEY | PORT | ACCESS,
			},
		},
		[IBV_QPS_RTR] = {
			.valid = true,
			.required = {
				[RC] = CONNECT | RESPOND,
				[UC] = CONNECT,
				[XRC_INI] = CONNECT,
				[XRC_TGT] = CONNECT | RESPOND,
			},
			.optional = {
				[RC] = ACCESS | PKEY,
				[UC] = ACCESS | PKEY,
				[UD] = PKEY | IBV_QP_QKEY,
				[XRC_INI] = ACCESS | PKEY,
				[XRC_TGT] = ACCESS | PKEY,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.required = {
				[RC] = REQUEST,
				[UC] = IBV_QP_SQ_PSN,
				[UD] = IBV_QP_SQ_PSN,
				[XRC_INI] = REQUEST,
				[XRC_TGT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
			},
			.optional = {
				[RC] = CUR | ACCESS | RNR_TIMER | MIG,
				[UC] = CUR | ACCESS | MIG,
				[UD] = CUR | IBV_QP_QKEY,
				[XRC_INI] = CUR | ACCESS | MIG,
				[XRC_TGT] = CUR | ACCESS | RNR_TIMER | MIG,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.optional = {
				[RC] = CUR | ACCESS | RNR_TIMER | MIG,
				[UC] = CUR | ACCESS | MIG,
				[UD] = CUR | IBV_QP_QKEY,
				[XRC_INI] = CUR | ACCESS | MIG,
				[XRC_TGT] = CUR | ACCESS | RNR_TIMER | MIG,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.optional = {
				[RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[XRC_INI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[XRC_TGT] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.optional = {
				[RC] = CUR | ACCESS | RNR_TIMER | MIG,
				[UC] = CUR | ACCESS | MIG,
				[UD] = CUR | IBV_QP_QKEY,
				[XRC_INI] = CUR | ACCESS | MIG,
				[XRC_TGT] = CUR | ACCESS | RNR_TIMER | MIG,
			},
		},
		[IBV_QPS_SQD] = {
			.valid = true,
			.optional = {
				[RC] = PKEY | PORT | IBV_QP_AV | ACCESS |
				       IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |
				       IBV_QP_MAX_DEST_RD_ATOMIC | RNR_TIMER | MIG,
				[UC] = IBV_QP_AV | ACCESS | PKEY | MIG,
				[UD] = PKEY | IBV_QP_QKEY,
				[XRC_INI] = PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
					    IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC | ACCESS |
					    PKEY | MIG,
				[XRC_TGT] = PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
					    IBV_QP_MAX_DEST_RD_ATOMIC | ACCESS |
					    PKEY | RNR_TIMER | MIG,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_RTS] = {
			.valid = true,
			.optional = {
				[UC] = CUR | ACCESS,
				[UD] = CUR | IBV_QP_QKEY,
			},
		},
		[IBV_QPS_ERR] = { .valid = true },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

static int qp_class(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_RC:
		return RC;
	case IBV_QPT_UC:
		return UC;
	case IBV_QPT_UD:
		return UD;
	case IBV_QPT_XRC_SEND:
		return XRC_INI;
	case IBV_QPT_XRC_RECV:
		return XRC_TGT;
	default:
		return -1;
	}
}

/*
 * What a QP's access flags may hold: every flag of an MR, as rxe and mlx5
 * take them.  Only the remote ones mean something for a QP; the rest (a
 * QP of ODP MRs often passes ON_DEMAND) are kept and ignored.
 */
#define RN_QP_ACCESS_ALL                                                       \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |                    \
	 IBV_ACCESS_MW_BIND | IBV_ACCESS_ZERO_BASED | IBV_ACCESS_ON_DEMAND |    \
	 IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

static int check_values(const struct rn_qp_attr *a, uint32_t mask,
			uint32_t gid_mask)
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
		if (a->ah_attr.is_global && a->ah_attr.sgid_index >= RN_GID_TABLE_LEN)
			return EINVAL;
		/* An entry without an address: the kernel's answer. */
		if (a->ah_attr.is_global &&
		    !(gid_mask >> a->ah_attr.sgid_index & 1))
			return ENODATA;
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

int rn_qp_check_modify(enum ibv_qp_type type, enum ibv_qp_state cur,
		       const struct rn_qp_attr *attr, uint32_t mask,
		       uint32_t gid_mask, enum ibv_qp_state *next)
{
	const struct rn_transition *t;
	enum ibv_qp_state to = cur;
	uint32_t attrs = mask & ~IBV_QP_STATE;
	int c = qp_class(type), ret;

	if ((unsigned int)cur >= N_STATES || c < 0)
		return EINVAL;
	if (mask & IBV_QP_STATE) {
		if (attr->qp_state >= N_STATES)
			return EINVAL;
		to = attr->qp_state;
	}
	if (mask & IBV_QP_CUR_STATE && attr->cur_qp_state != cur)
		return EINVAL;

	/* SQE is a state of UD and UC QPs only. */
	if (cur == IBV_QPS_SQE && c != UD && c != UC)
		return EINVAL;
	t = &table[cur][to];
	if (!t->valid)
		return EINVAL;
	if ((attrs & t->required[c]) != t->required[c])
		return EINVAL;
	if (attrs & ~(t->required[c] | t->optional[c]))
		return EINVAL;
	ret = check_values(attr, attrs, gid_mask);
	if (ret)
		return ret;

	*next = to;
	return 0;
}
