// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * An engine's gate between its thread and the control thread (struct
 * rn_gate).  Either may run the engine's code, one at a time, so no
 * object needs a lock against the control plane:
 *
 * - The engine enters before its passes and leaves when it sleeps, or at
 *   the end of a pass when the control thread waits (rn_gate_wanted):
 *   one load per pass, and nothing more while nobody waits.
 * - The control thread holds the gate for each batch of its work.
 *
 * Entering and holding are the two halves of Dekker's handshake: the
 * engine stores 'inside' then loads 'held', the control thread stores
 * 'held' then loads 'inside', both sequentially consistent, so one of them
 * sees the other and steps back.  Whoever steps back sleeps on 'moved'.
 *
 * Turns: an engine that waited for a batch gets in before the control
 * thread holds again, and makes a pass before it looks whether it is
 * wanted (daemon/engine_thread.c), so a burst of requests cannot keep the
 * data path from running, nor a busy data path the requests (the control
 * thread runs at a higher priority, and takes the gate within a pass).
 *
 * With several engines, a holder holds every engine's gate.  Holders take
 * turns on dev->hold_lock: the control thread, and an engine whose turns
 * reach another engine's objects (rn_gate_visit), which first steps out
 * of its own gate, so that two of them never wait for each other.
 *
 * Neither thread may act on what its epoll reported before it came
 * through the gate: the other may have freed the object meanwhile.  Each
 * asks epoll again once through (daemon/).
 */
#include "engine/engine.h"

/* An engine thread is about to start: from now on the gate is in use. */
void rn_gate_open_thread(struct rn_engine *e)
{
	struct rn_gate *g = &e->gate;

	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->moved, NULL);
	g->threaded = true;
	g->inside = true; /* until it first sleeps: it starts with a pass */
}

/* No engine thread after all (it could not start): the gate opens. */
void rn_gate_close_thread(struct rn_engine *e)
{
	e->gate.threaded = false;
	e->gate.inside = false;
}

/* Out, and tell a control thread that waits for it. */
static void step_back(struct rn_gate *g)
{
	__atomic_store_n(&g->inside, false, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&g->held, __ATOMIC_SEQ_CST)) {
		/* Under the lock: the waiter checks 'inside' under it too,
		 * so this wake-up cannot fall between its check and its wait.
		 */
		pthread_mutex_lock(&g->lock);
		pthread_cond_broadcast(&g->moved);
		pthread_mutex_unlock(&g->lock);
	}
}

/* The engine thread takes the device. */
void rn_gate_enter(struct rn_engine *e)
{
	struct rn_gate *g = &e->gate;
	bool waited = false;

	for (;;) {
		__atomic_store_n(&g->inside, true, __ATOMIC_SEQ_CST);
		if (!__atomic_load_n(&g->held, __ATOMIC_SEQ_CST))
			break;
		step_back(g);
		pthread_mutex_lock(&g->lock);
		g->waiting = true;
		while (__atomic_load_n(&g->held, __ATOMIC_ACQUIRE))
			pthread_cond_wait(&g->moved, &g->lock);
		g->waiting = false;
		pthread_mutex_unlock(&g->lock);
		waited = true;
	}
	if (waited) {
		/* A control thread that owes us the turn waits for this. */
		pthread_mutex_lock(&g->lock);
		g->entries++;
		pthread_cond_broadcast(&g->moved);
		pthread_mutex_unlock(&g->lock);
	}
}

/* The engine thread gives the device up (to sleep, or to the control
 * thread that waits), after at least one pass since it entered.
 */
void rn_gate_leave(struct rn_engine *e)
{
	step_back(&e->gate);
}

/* A holder takes engine e: it lets e in first if e waited, then waits
 * for e's pass to end.
 */
static void hold(struct rn_engine *e)
{
	struct rn_gate *g = &e->gate;

	if (!g->threaded)
		return;
	if (g->owed) {
		pthread_mutex_lock(&g->lock);
		while (g->entries == g->owed_entries)
			pthread_cond_wait(&g->moved, &g->lock);
		pthread_mutex_unlock(&g->lock);
		g->owed = false;
	}
	__atomic_store_n(&g->held, true, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(&g->inside, __ATOMIC_SEQ_CST))
		return;
	pthread_mutex_lock(&g->lock);
	while (__atomic_load_n(&g->inside, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&g->moved, &g->lock);
	pthread_mutex_unlock(&g->lock);
}

/*
 * A holder gives engine e back.  An engine asleep in epoll is woken for a
 * pass after the control thread's work, as the one loop before it ran one
 * after each control request: a request may have given it work (a QP to
 * run, a packet to send, an earlier timer) that no doorbell announces.
 * After a visiting engine's turns only if they gave it a QP to run.
 */
static void release(struct rn_engine *e, bool wake)
{
	struct rn_gate *g = &e->gate;

	if (!g->threaded)
		return;
	if (e->sleeping && (wake || e->nudged))
		rn_engine_kick(e);
	e->nudged = false;
	pthread_mutex_lock(&g->lock);
	g->owed = g->waiting;
	g->owed_entries = g->entries;
	__atomic_store_n(&g->held, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&g->moved);
	pthread_mutex_unlock(&g->lock);
}

/* The control thread, or a visiting engine, takes the whole device. */
void rn_gate_hold(struct rn_device *dev)
{
	uint32_t i;

	pthread_mutex_lock(&dev->hold_lock);
	for (i = 0; i < dev->nengines; i++)
		hold(dev->engines[i]);
}

static void release_all(struct rn_device *dev, bool wake)
{
	uint32_t i;

	for (i = 0; i < dev->nengines; i++)
		release(dev->engines[i], wake);
	pthread_mutex_unlock(&dev->hold_lock);
}

/* The control thread gives the device back. */
void rn_gate_release(struct rn_device *dev)
{
	release_all(dev, true);
}

/*
 * Engine e's turns that reach other engines' objects (e->crossing), at
 * the end of a pass: it steps out of its own gate, holds the device, runs
 * them and comes back in.  True on progress.
 */
bool rn_gate_visit(struct rn_engine *e, uint64_t now)
{
	bool progress;

	step_back(&e->gate);
	rn_gate_hold(e->dev);
	progress = rn_engine_cross(e, now);
	release_all(e->dev, false);
	rn_gate_enter(e);
	return progress;
}
