/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The device's clock: CLOCK_MONOTONIC in nanoseconds. */
#ifndef RN_BASE_CLOCK_H
#define RN_BASE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t rn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

#endif
