// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Completion notifications: when an armed CQ gets a completion of the
 * armed kind, the device clears the arm and writes the CQ's handle into its
 * completion channel, which is what ibv_get_cq_event reads.
 *
 *  - One notification per arm: firing clears the arm by compare-and-swap,
 *    so a re-arm racing with it is never lost nor fired twice.
 *  - Arming while completions wait in the CQ fires at once if one of them
 *    came after the last notification (and is of the armed kind); if all
 *    were there at the last notification it does not fire.
 *  - Never two in flight: an event is written only after the application
 *    consumed the previous one (see struct rn_cq_ctrl); one that fires
 *    meanwhile is delivered when that happens.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "kernel-abi/ringnic-kdev.h"
#include "base/util.h"
#include "engine/engine.h"

/*
 * Is there, among the CQEs still in the ring, one written since the last
 * notification that the arm level asks for?
 */
static bool triggered(const struct rn_cq *cq, uint32_t level)
{
	uint32_t cons = __atomic_load_n(&cq->ctrl->cons, __ATOMIC_SEQ_CST);
	/* The newest 'window' CQEs are both unpolled and fresh. */
	uint32_t window = rn_min_u32(cq->prod - cons, cq->prod - cq->notified_prod);

	switch (level) {
	case RN_ARM_ANY:
		return window > 0;
	case RN_ARM_SOLICITED:
		return cq->have_sol && cq->prod - cq->last_sol_end < window;
	case RN_ARM_ERRORS:
		return cq->have_err && cq->prod - cq->last_err_end < window;
	default:
		return false;
	}
}

static void deliver(struct rn_cq *cq)
{
	if (cq->client->kctx) {
		/* The kernel signals its completion channel, if it has one. */
		rn_kdev_event(cq->client, cq->handle, RN_KDEV_COMP);
		cq->events_written++;
		return;
	}
	/* Non-blocking: the pipe holds thousands of events, and at most one
	 * per CQ is ever waiting in it.
	 */
	if (write(cq->channel_fd, &cq->user_handle, sizeof(cq->user_handle)) ==
	    sizeof(cq->user_handle))
		cq->events_written++;
	else
		rn_warn("pid %d: CQ %u: event lost: %s\n", cq->client->pid,
			cq->handle, errno == EAGAIN ? "channel full" : "write failed");
}

static bool previous_consumed(const struct rn_cq *cq)
{
	return __atomic_load_n(&cq->ctrl->events_consumed, __ATOMIC_SEQ_CST) ==
	       cq->events_written;
}

static void set_deferred(struct rn_cq *cq, bool deferred)
{
	cq->deferred = deferred;
	__atomic_store_n(&cq->ctrl->deferred, deferred, __ATOMIC_SEQ_CST);
}

static void fire(struct rn_cq *cq)
{
	cq->notified_prod = cq->prod;
	if (cq->channel_fd < 0 && !cq->client->kctx)
		return;
	if (!previous_consumed(cq)) {
		set_deferred(cq, true);
		/* The provider rings only if it sees 'deferred': look again
		 * in case it consumed before our store became visible.
		 */
		if (!previous_consumed(cq))
			return;
		set_deferred(cq, false);
	}
	deliver(cq);
}

/* Fire if the CQ is armed and has what the arm waits for. */
static void check_arm(struct rn_cq *cq)
{
	uint32_t arm = __atomic_load_n(&cq->ctrl->arm, __ATOMIC_SEQ_CST);

	for (;;) {
		uint32_t level = arm & RN_ARM_LEVEL_MASK;

		if (!triggered(cq, level))
			return;
		/* On failure arm is reloaded: the provider re-armed. */
		if (__atomic_compare_exchange_n(&cq->ctrl->arm, &arm,
						arm & ~RN_ARM_LEVEL_MASK, false,
						__ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
			fire(cq);
			return;
		}
	}
}

/* A CQE was just written (cq->prod counts it): note its kind, then fire. */
void rn_cq_note(struct rn_cq *cq, bool error, bool solicited)
{
	if (error || solicited) {
		cq->last_sol_end = cq->prod;
		cq->have_sol = true;
	}
	if (error) {
		cq->last_err_end = cq->prod;
		cq->have_err = true;
	}
	/* The arm may have been raised with the CQ looking empty to the
	 * provider; this fence pairs with its seq_cst arm-then-look (the
	 * CQE's owner byte, already stored, then the arm).
	 */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	check_arm(cq);
}

static void ring(struct rn_cq *cq)
{
	if (cq->deferred && previous_consumed(cq)) {
		set_deferred(cq, false);
		deliver(cq);
	}
	check_arm(cq);
}

/* The CQ's doorbell: an arm over waiting CQEs, or a consumed event. */
void rn_cq_ring(struct rn_cq *cq)
{
	if (!cq->shared) {
		ring(cq);
		return;
	}
	pthread_mutex_lock(&cq->lock);
	ring(cq);
	pthread_mutex_unlock(&cq->lock);
}
