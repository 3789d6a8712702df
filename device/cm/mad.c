// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The CM MAD header and rdma_cm's private-data header (docs/rdma_cm.md). */
#include <string.h>

#include "cm/mad.h"
#include "cm/cm.h"

void rn_mad_hdr_build(uint8_t *mad, uint16_t attr_id, uint64_t tid,
		      uint32_t attr_mod)
{
	memset(mad, 0, RN_MAD_HDR_LEN);
	mad[0] = RN_MAD_BASE_VERSION;
	mad[1] = RN_MAD_CLASS_CM;
	mad[2] = RN_MAD_CLASS_VERSION_CM;
	mad[3] = RN_MAD_METHOD_SEND;
	rn_mad_put(mad, 8, 8, tid);
	rn_mad_put(mad, 16, 2, attr_id);
	rn_mad_put(mad, 20, 4, attr_mod);
}

bool rn_mad_hdr_parse(const uint8_t *mad, uint32_t len, uint16_t *attr_id,
		      uint64_t *tid)
{
	/* What Linux's MAD layer and CM accept (mad.c validate_mad). */
	if (len != RN_CM_MAD_LEN || mad[0] != RN_MAD_BASE_VERSION ||
	    mad[1] != RN_MAD_CLASS_CM || mad[2] != RN_MAD_CLASS_VERSION_CM ||
	    mad[3] != RN_MAD_METHOD_SEND)
		return false;
	*tid = rn_mad_get(mad, 8, 8);
	*attr_id = (uint16_t)rn_mad_get(mad, 16, 2);
	return true;
}

void rn_cma_hdr_build(uint8_t *pd, const struct rn_cma_hdr *h)
{
	memset(pd, 0, RN_CMA_HDR_LEN);
	pd[0] = h->version;
	pd[1] = (uint8_t)(h->ip_version << 4);
	rn_mad_put(pd, 2, 2, h->port);
	memcpy(pd + 4, h->src, 16);
	memcpy(pd + 20, h->dst, 16);
}

static bool all_zero(const uint8_t *a, unsigned int len)
{
	while (len--)
		if (*a++)
			return false;
	return true;
}

bool rn_cma_hdr_parse(const uint8_t *pd, struct rn_cma_hdr *h)
{
	h->version = pd[0];
	h->ip_version = pd[1] >> 4;
	h->port = (uint16_t)rn_mad_get(pd, 2, 2);
	memcpy(h->src, pd + 4, 16);
	memcpy(h->dst, pd + 20, 16);
	if (h->version != 0 || (h->ip_version != 4 && h->ip_version != 6))
		return false;
	if (h->ip_version == 4)
		return !all_zero(h->src + 12, 4) && !all_zero(h->dst + 12, 4);
	return !all_zero(h->src, 16) && !all_zero(h->dst, 16);
}
