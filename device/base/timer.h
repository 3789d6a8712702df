/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The device's timers: RNR waits, ACK timeouts, retransmissions.  All of
 * them sit in one binary heap ordered by deadline, so arming, cancelling
 * and finding the next deadline cost O(log n) or O(1) however many QPs
 * wait: the loop never walks the QPs to find out which timer is due.
 */
#ifndef RN_TIMER_H
#define RN_TIMER_H

#include <stdbool.h>
#include <stdint.h>

struct rn_timer;
typedef void (*rn_timer_fn)(struct rn_timer *t, uint64_t now);

struct rn_timer {
	uint64_t when; /* CLOCK_MONOTONIC ns */
	uint32_t slot; /* index in the heap, or RN_TIMER_IDLE */
	rn_timer_fn fire;
};

#define RN_TIMER_IDLE UINT32_MAX

struct rn_timers {
	struct rn_timer **heap;
	uint32_t n; /* armed */
	uint32_t cap; /* room reserved: at least the timers that exist */
};

static inline void rn_timer_init(struct rn_timer *t, rn_timer_fn fire)
{
	t->when = 0;
	t->slot = RN_TIMER_IDLE;
	t->fire = fire;
}

static inline bool rn_timer_armed(const struct rn_timer *t)
{
	return t->slot != RN_TIMER_IDLE;
}

/*
 * Room for 'count' timers in all (their owners reserve it when they are
 * created), so that arming never fails.  Returns 0 or ENOMEM.
 */
int rn_timers_reserve(struct rn_timers *ts, uint32_t count);
/* (Re)arm t for 'when'. */
void rn_timer_arm(struct rn_timers *ts, struct rn_timer *t, uint64_t when);
void rn_timer_cancel(struct rn_timers *ts, struct rn_timer *t);
/* Fire every timer due at 'now' (each is disarmed before its call). */
bool rn_timers_run(struct rn_timers *ts, uint64_t now);
/* The earliest deadline, or UINT64_MAX when no timer is armed. */
uint64_t rn_timers_next(const struct rn_timers *ts);

#endif
