// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The direct verbs of include/infiniband/ringnicdv.h. */
#include <errno.h>
#include <stddef.h>
#include <infiniband/ringnicdv.h>

#include "ringnic.h"

#define end_of(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * The caller's structure may be older (shorter) or newer (longer) than
 * ours: it must reach 'needed', and whatever we do not know must be zero.
 */
static bool attr_ok(const void *attr, uint32_t inlen, size_t ours, size_t needed)
{
	const uint8_t *p = attr;
	size_t i;

	if (inlen < needed)
		return false;
	for (i = ours; i < inlen; i++)
		if (p[i])
			return false;
	return true;
}

int ringnicdv_req_notify_cq(struct ibv_cq *ibcq,
			    const struct ringnicdv_cq_notify_attr *attr,
			    uint32_t inlen)
{
	static const uint32_t level[] = {
		[RINGNICDV_CQ_ARM_ANY] = RN_ARM_ANY,
		[RINGNICDV_CQ_ARM_SOLICITED] = RN_ARM_SOLICITED,
		[RINGNICDV_CQ_ARM_ERRORS] = RN_ARM_ERRORS,
	};

	if (!rn_is_ringnic(ibcq->context))
		return EOPNOTSUPP;
	if (!attr_ok(attr, inlen, sizeof(*attr),
		     end_of(struct ringnicdv_cq_notify_attr, arm)) ||
	    attr->comp_mask || attr->arm > RINGNICDV_CQ_ARM_ERRORS ||
	    (inlen >= end_of(struct ringnicdv_cq_notify_attr, reserved) &&
	     attr->reserved))
		return EINVAL;
	return rn_arm_cq(to_rn_cq(ibcq), level[attr->arm]);
}
