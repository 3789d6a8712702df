/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Small arithmetic every layer uses. */
#ifndef RN_BASE_UTIL_H
#define RN_BASE_UTIL_H

#include <stdint.h>

static inline uint32_t rn_min_u32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

/* The smallest power of two >= v (1 for 0); 0 when it does not fit. */
static inline uint32_t rn_roundup_pow2(uint64_t v)
{
	uint64_t p = 1;

	while (p < v)
		p <<= 1;
	return p > UINT32_MAX ? 0 : (uint32_t)p;
}

/* The smallest n with 1 << n >= v. */
static inline uint32_t rn_log2_ceil(uint32_t v)
{
	uint32_t n = 0;

	while ((1ull << n) < v)
		n++;
	return n;
}

#endif
