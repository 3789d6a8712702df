// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The gate between the engine thread and the control thread (struct
 * rn_gate).  Either may run the device's code, one at a time, so no
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

/* The control thread takes the device: it lets an engine that waited in
 * first, then waits for the engine's pass to end.
 */
void rn_gate_hold(struct rn_device *dev)
{
	struct rn_gate *g = &dev->engine->gate;

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
 * The control thread gives the device back.  An engine asleep in epoll is
 * woken for a pass, as the one loop before it ran one after each control
 * request: what the request did may have given it work (a QP to run, a
 * packet to send, an earlier timer) that no doorbell announces.
 */
void rn_gate_release(struct rn_device *dev)
{
	struct rn_engine *e = dev->engine;
	struct rn_gate *g = &e->gate;

	if (!g->threaded)
		return;
	if (e->sleeping)
		rn_engine_kick(e);
	pthread_mutex_lock(&g->lock);
	g->owed = g->waiting;
	g->owed_entries = g->entries;
	__atomic_store_n(&g->held, false, __ATOMIC_RELEASE);
	pthread_cond_broadcast(&g->moved);
	pthread_mutex_unlock(&g->lock);
}
