// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include "base/timer.h"

static void place(struct rn_timers *ts, struct rn_timer *t, uint32_t i)
{
	ts->heap[i] = t;
	t->slot = i;
}

static void sift_up(struct rn_timers *ts, uint32_t i)
{
	struct rn_timer *t = ts->heap[i];

	while (i) {
		uint32_t parent = (i - 1) / 2;

		if (ts->heap[parent]->when <= t->when)
			break;
		place(ts, ts->heap[parent], i);
		i = parent;
	}
	place(ts, t, i);
}

static void sift_down(struct rn_timers *ts, uint32_t i)
{
	struct rn_timer *t = ts->heap[i];

	for (;;) {
		uint32_t child = 2 * i + 1;

		if (child >= ts->n)
			break;
		if (child + 1 < ts->n &&
		    ts->heap[child + 1]->when < ts->heap[child]->when)
			child++;
		if (t->when <= ts->heap[child]->when)
			break;
		place(ts, ts->heap[child], i);
		i = child;
	}
	place(ts, t, i);
}

int rn_timers_reserve(struct rn_timers *ts, uint32_t count)
{
	struct rn_timer **heap;
	uint32_t cap = ts->cap ? ts->cap : 64;

	while (cap < count)
		cap *= 2;
	if (cap == ts->cap)
		return 0;
	heap = realloc(ts->heap, (size_t)cap * sizeof(*heap));
	if (!heap)
		return ENOMEM;
	ts->heap = heap;
	ts->cap = cap;
	return 0;
}

void rn_timer_arm(struct rn_timers *ts, struct rn_timer *t, uint64_t when)
{
	if (rn_timer_armed(t)) {
		uint64_t old = t->when;

		t->when = when;
		if (when < old)
			sift_up(ts, t->slot);
		else
			sift_down(ts, t->slot);
		return;
	}
	t->when = when;
	place(ts, t, ts->n++);
	sift_up(ts, t->slot);
}

void rn_timer_cancel(struct rn_timers *ts, struct rn_timer *t)
{
	uint32_t i = t->slot;
	struct rn_timer *last;

	if (!rn_timer_armed(t))
		return;
	t->slot = RN_TIMER_IDLE;
	last = ts->heap[--ts->n];
	if (last == t)
		return;
	place(ts, last, i);
	if (i && ts->heap[(i - 1) / 2]->when > last->when)
		sift_up(ts, i);
	else
		sift_down(ts, i);
}

bool rn_timers_run(struct rn_timers *ts, uint64_t now)
{
	bool fired = false;

	while (ts->n && ts->heap[0]->when <= now) {
		struct rn_timer *t = ts->heap[0];

		rn_timer_cancel(ts, t);
		t->fire(t, now);
		fired = true;
	}
	return fired;
}

uint64_t rn_timers_next(const struct rn_timers *ts)
{
	return ts->n ? ts->heap[0]->when : UINT64_MAX;
}
