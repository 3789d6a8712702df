/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ringnic direct verbs: what ringnic offers beyond the verbs API.
 * Link with -lringnic (pkg-config ringnic).  Every call takes a comp_mask
 * and the size of the structure the caller was built with (inlen), so that
 * the structures can grow without breaking binaries.
 */
#ifndef INFINIBAND_RINGNICDV_H
#define INFINIBAND_RINGNICDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which completions wake an armed CQ. */
enum ringnicdv_cq_arm {
	RINGNICDV_CQ_ARM_ANY = 0, /* any completion, as ibv_req_notify_cq(cq, 0) */
	RINGNICDV_CQ_ARM_SOLICITED = 1, /* solicited ones and errors */
	RINGNICDV_CQ_ARM_ERRORS = 2, /* error completions only */
};

struct ringnicdv_cq_notify_attr {
	uint64_t comp_mask; /* no bits defined yet: 0 */
	uint32_t arm; /* enum ringnicdv_cq_arm */
	uint32_t reserved; /* 0 */
};

/*
 * Arm a CQ for one notification on its completion channel.  Returns 0 or
 * an errno: EOPNOTSUPP if cq is not a ringnic CQ, EINVAL for an unknown
 * arm type, comp_mask bit or non-zero reserved byte.
 */
int ringnicdv_req_notify_cq(struct ibv_cq *cq,
			    const struct ringnicdv_cq_notify_attr *attr,
			    uint32_t inlen);

#ifdef __cplusplus
}
#endif

#endif
