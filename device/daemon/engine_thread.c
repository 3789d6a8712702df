// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine thread: it polls while there is work and for a short while
 * after (--poll-us), then announces in every device page that it sleeps
 * and blocks in its own epoll until a client rings (an eventfd), a packet
 * arrives, a timer is due or the control thread kicks it.  It has the
 * device while it polls and gives it up through the gate
 * (engine/gate.c) when it sleeps and when the control thread asks.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "daemon/daemon.h"

/*
 * Busy passes between two looks at the engine's descriptors, and the
 * longest time between two: packets for no QP on the wire (rdma_cm's)
 * wait for them while the local path keeps the engine busy.  A look also
 * yields the CPU where the control thread has the engine's priority
 * (main.c); otherwise the control thread preempts, or the scheduler
 * shares the CPU out.
 */
#define RN_LOOK_EVERY 64
#define RN_LOOK_NS 1000000ull
/* Busy passes between two looks at whether the counters changed. */
#define RN_COUNTERS_EVERY 65536

/* Take what the engine's epoll reports now, without waiting. */
static void take_events(struct rn_engine *e)
{
	struct epoll_event ev[32];
	uint64_t count;
	int i, n;

	n = epoll_wait(e->epoll_fd, ev, 32, 0);
	for (i = 0; i < n; i++) {
		struct rn_watch *w = ev[i].data.ptr;

		switch (w->kind) {
		case RN_WATCH_WAKE:
			if (read(((struct rn_context *)w->obj)->wake_fd, &count,
				 sizeof(count)) < 0)
				count = 0;
			break;
		case RN_WATCH_KICK:
			if (read(e->kick_fd, &count, sizeof(count)) < 0)
				count = 0;
			break;
		case RN_WATCH_WIRE:
			rn_wire_readable(e, w->obj);
			break;
		default: /* the control thread's */
			break;
		}
	}
}

/*
 * Sleep until the engine's epoll has something or timeout_ns passed
 * (UINT64_MAX: no timer).  Outside the gate: what epoll reports is taken
 * only once through it again, since the control thread may have freed
 * the object meanwhile.
 */
static void sleep_for_work(struct rn_engine *e, uint64_t timeout_ns)
{
	struct epoll_event ev;
	struct timespec ts, *tsp = NULL;

	if (timeout_ns != UINT64_MAX) {
		ts.tv_sec = timeout_ns / 1000000000ull;
		ts.tv_nsec = timeout_ns % 1000000000ull;
		tsp = &ts;
	}
	epoll_pwait2(e->epoll_fd, &ev, 1, tsp, NULL);
}

/*
 * Tell the control thread, which publishes them, when the engine's
 * counters changed since it last did (seen: what they were then).
 */
static void counters_news(struct rn_engine *e, uint64_t *seen)
{
	if (!memcmp(seen, e->counters, sizeof(e->counters)))
		return;
	memcpy(seen, e->counters, sizeof(e->counters));
	rn_relay_counters(e->dev);
}

/* SCHED_FIFO at 'priority' for the calling thread: 0 or -1 (errno). */
int rn_go_realtime(int priority)
{
	struct sched_param sp = { .sched_priority = priority };

	return sched_setscheduler(0, SCHED_FIFO | SCHED_RESET_ON_FORK, &sp);
}

static void *engine_main(void *arg)
{
	struct rn_engine *e = arg;
	struct rn_device *dev = e->dev;
	struct rn_daemon *d = rn_daemon_of(dev);
	uint64_t idle_since = 0, passes = 0, looked = 0;
	uint64_t seen[RN_CNT_MAX] = { 0 };

	if (d->realtime && rn_go_realtime(RN_ENGINE_PRIORITY))
		rn_warn("the engine thread has no realtime priority: %s\n",
			strerror(errno));

	while (!e->stop) {
		uint64_t now = rn_now_ns(), next;
		bool progress = rn_engine_pass(e, now);

		if (!rn_list_empty(&e->crossing))
			progress |= rn_gate_visit(e, now);

		/* Only after a pass: each turn at the gate makes one. */
		if (rn_gate_wanted(e)) {
			rn_gate_leave(e);
			rn_gate_enter(e);
			continue;
		}
		if (progress) {
			idle_since = 0;
			if (++passes % RN_LOOK_EVERY == 0 ||
			    now - looked >= RN_LOOK_NS) {
				take_events(e);
				if (d->engine_yields)
					sched_yield();
				looked = now;
			}
			if (passes % RN_COUNTERS_EVERY == 0)
				counters_news(e, seen);
			continue;
		}
		if (!idle_since)
			idle_since = now;
		if (now - idle_since < d->idle_poll_ns) {
			if (++passes % RN_LOOK_EVERY == 0)
				take_events(e);
			sched_yield();
			continue;
		}
		next = rn_engine_next_timer(e);
		if (next <= now) {
			take_events(e);
			continue;
		}
		if (!rn_engine_sleep_prepare(e))
			continue;
		counters_news(e, seen);
		e->sleeping = true;
		rn_gate_leave(e);
		sleep_for_work(e, next == UINT64_MAX ? UINT64_MAX : next - now);
		rn_gate_enter(e);
		e->sleeping = false;
		rn_engine_wake(e);
		take_events(e);
		idle_since = 0;
	}
	rn_gate_leave(e);
	return NULL;
}

/* Start a thread per engine; from now on the control thread holds the
 * gates for its work.  On failure none runs.
 */
int rn_engine_threads_start(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	char name[16];
	int ret = 0;

	d->engine_threads = calloc(dev->nengines, sizeof(*d->engine_threads));
	if (!d->engine_threads)
		return ENOMEM;
	for (d->nthreads = 0; d->nthreads < dev->nengines; d->nthreads++) {
		struct rn_engine *e = dev->engines[d->nthreads];

		rn_gate_open_thread(e);
		ret = pthread_create(&d->engine_threads[d->nthreads], NULL,
				     engine_main, e);
		if (ret) {
			rn_gate_close_thread(e);
			rn_engine_threads_stop(dev);
			break;
		}
		/* What top -H and ps -L show: "ringnicd" is the control thread. */
		snprintf(name, sizeof(name), "rn-engine%u", d->nthreads);
		pthread_setname_np(d->engine_threads[d->nthreads], name);
	}
	return ret;
}

/* End them: the device is the calling thread's alone afterwards. */
void rn_engine_threads_stop(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	uint32_t i;

	rn_gate_hold(dev);
	for (i = 0; i < d->nthreads; i++)
		dev->engines[i]->stop = true;
	rn_gate_release(dev);
	for (i = 0; i < d->nthreads; i++)
		pthread_join(d->engine_threads[i], NULL);
	for (i = 0; i < d->nthreads; i++)
		rn_gate_close_thread(dev->engines[i]);
	d->nthreads = 0;
	free(d->engine_threads);
	d->engine_threads = NULL;
}
