// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The engine: finds rung doorbells, keeps the QPs that have send work on a
 * list and gives each its turn, runs their timers, and tells the clients
 * when the device sleeps.  What a turn does is the business of the QP's
 * transport (struct rn_transport_ops); the wire's own work (packets in,
 * responses out) comes through the network ops it registers.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/table.h"
#include "engine/datapath.h"

/* Put the QP on the list of QPs with work, unless it waits for a timer. */
void rn_engine_schedule(struct rn_qp *qp)
{
	if (!qp->active && !rn_timer_armed(&qp->wait_timer)) {
		qp->active = true;
		rn_list_add_tail(&qp->engine->active, &qp->active_link);
		/* By a holder while its engine sleeps: it must wake. */
		if (qp->engine->sleeping)
			qp->engine->nudged = true;
	}
}

void rn_engine_unschedule(struct rn_qp *qp)
{
	if (qp->active) {
		qp->active = false;
		rn_list_del(&qp->active_link);
	}
	if (qp->crossing) {
		qp->crossing = false;
		rn_list_del(&qp->crossing_link);
	}
}

/*
 * May qp's turn touch dst, a QP of another engine maybe?  Only while its
 * engine holds every engine (rn_engine_cross).  Otherwise the QP's turn
 * waits for the end of the pass, on the engine's crossing list: the
 * caller does nothing and returns.
 */
bool rn_engine_reaches(struct rn_qp *qp, const struct rn_qp *dst)
{
	struct rn_engine *e = qp->engine;

	if (dst->engine == e || e->visiting)
		return true;
	if (!qp->crossing) {
		qp->crossing = true;
		rn_list_add_tail(&e->crossing, &qp->crossing_link);
	}
	return false;
}


static void wait_over(struct rn_timer *t, uint64_t now)
{
	(void)now;
	rn_engine_schedule(rn_container_of(t, struct rn_qp, wait_timer));
}

/* A new QP: room for its timers.  Returns 0 or ENOMEM. */
int rn_engine_qp_add(struct rn_qp *qp)
{
	struct rn_engine *e = qp->engine;

	rn_list_init(&qp->active_link);
	rn_list_init(&qp->crossing_link);
	rn_timer_init(&qp->wait_timer, wait_over);
	if (rn_timers_reserve(&e->timers, e->ntimers + 1))
		return ENOMEM;
	e->ntimers++;
	return 0;
}

void rn_engine_qp_remove(struct rn_qp *qp)
{
	rn_engine_unschedule(qp);
	rn_engine_cancel_wait(qp);
	qp->engine->ntimers--;
}

/* The requester waits until 'until' (UINT64_MAX: until cancelled). */
void rn_engine_wait(struct rn_qp *qp, uint64_t until)
{
	rn_engine_unschedule(qp);
	rn_timer_arm(&qp->engine->timers, &qp->wait_timer, until);
}

void rn_engine_cancel_wait(struct rn_qp *qp)
{
	rn_timer_cancel(&qp->engine->timers, &qp->wait_timer);
}

/* Engine 'index' of dev: its state and working memory. */
static int engine_init(struct rn_device *dev, uint32_t index)
{
	struct epoll_event ev = { .events = EPOLLIN };
	struct rn_engine *e = calloc(1, sizeof(*e));

	if (!e)
		return ENOMEM;
	dev->engines[index] = e;
	e->dev = dev;
	e->index = index;
	rn_list_init(&e->contexts);
	rn_list_init(&e->crossing);
	rn_list_init(&e->active);
	e->bounce = aligned_alloc(4096, RN_BOUNCE_SIZE);
	/* aligned_alloc wants a size that is a multiple of the alignment. */
	e->stage = aligned_alloc(64, (sizeof(*e->stage) + 63) & ~(size_t)63);
	if (!e->bounce || !e->stage)
		return ENOMEM;
	e->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (e->epoll_fd < 0)
		return errno;
	e->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (e->kick_fd < 0)
		return errno;
	e->kick_watch = (struct rn_watch){ RN_WATCH_KICK, e };
	ev.data.ptr = &e->kick_watch;
	if (epoll_ctl(e->epoll_fd, EPOLL_CTL_ADD, e->kick_fd, &ev))
		return errno;
	return 0;
}

/* dev->nengines engines (0: one). */
int rn_engines_init(struct rn_device *dev)
{
	uint32_t i;
	int ret = 0;

	if (!dev->nengines)
		dev->nengines = 1;
	dev->engines = calloc(dev->nengines, sizeof(*dev->engines));
	if (!dev->engines)
		return ENOMEM;
	for (i = 0; !ret && i < dev->nengines; i++)
		ret = engine_init(dev, i);
	return ret;
}

/*
 * The engine a new context goes to: the one with the fewest.  It owns the
 * context's QPs, CQs and SRQs, scans its doorbells and sleeps on its
 * wake-up eventfd; an XRC target QP is engine 0's (verbs/qp.c).
 */
struct rn_engine *rn_engine_for_context(struct rn_device *dev)
{
	struct rn_engine *best = dev->engines[0];
	uint32_t i;

	for (i = 1; i < dev->nengines; i++)
		if (dev->engines[i]->ncontexts < best->ncontexts)
			best = dev->engines[i];
	return best;
}

/* The wire registers the work it has for the engine (wire/netio.c). */
void rn_engine_set_network(struct rn_engine *e,
			   const struct rn_network_ops *ops)
{
	e->network = ops;
}

/* Packets built this pass leave. */
static void network_flush(struct rn_engine *e)
{
	if (e->network)
		e->network->flush(e);
}

/* ---- flushing -------------------------------------------------------------- */

void rn_engine_flush(struct rn_qp *qp)
{
	rn_engine_unschedule(qp);
	rn_sq_flush(qp);
	rn_rq_flush(qp);
}

/* ---- doorbells ------------------------------------------------------------- */

void rn_engine_doorbell(struct rn_qp *qp)
{
	uint64_t rec = __atomic_load_n(&qp->ctrl->sq_db, __ATOMIC_ACQUIRE);
	enum ibv_qp_state state;

	/* An XRC_RECV QP has no queue to ring for; it is engine 0's, though
	 * its creator's engine scans the bit: nothing more of it is read.
	 */
	if (!qp->sq_slots)
		return;
	state = qp->attr.qp_state;
	/* Only a QP that may send (or flushes, in ERR and SQE) listens to
	 * doorbells.
	 */
	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD &&
	    state != IBV_QPS_ERR && state != IBV_QPS_SQE)
		return;
	qp->ctrl->doorbells++;
	switch (rn_db_classify(rec, qp->handle, qp->sq_head, qp->sq_slots)) {
	case RN_DB_STALE:
		qp->ctrl->stale++;
		return;
	case RN_DB_BAD:
		rn_warn("pid %d: QP %u: bad doorbell record %#llx\n",
			qp->client->pid, qp->qpn, (unsigned long long)rec);
		rn_qp_fatal(qp, IBV_EVENT_QP_FATAL);
		return;
	case RN_DB_VALID:
		break;
	}
	qp->sq_prod = RN_DB_SEQ(rec);
	if (state == IBV_QPS_ERR)
		rn_engine_flush(qp);
	else if (state == IBV_QPS_SQE)
		rn_sq_flush(qp);
	else if (state == IBV_QPS_RTS)
		rn_engine_schedule(qp);
}

/*
 * The QP is about to be destroyed: the work its owner rang for before
 * asking goes out first, as it would from a NIC that had fetched it
 * already.  The destroy request can overtake the doorbell (the socket is
 * read before the next pass scans the pages), and ofi_rxd, for one, acks
 * its peer's last message and closes its endpoint straight away.  One turn
 * over the whole queue; RC work that waits for the window or an ACK goes
 * with the QP.
 */
void rn_engine_drain(struct rn_qp *qp)
{
	uint64_t now;

	rn_engine_doorbell(qp);
	if (!qp->active)
		return;
	now = rn_now_ns();
	/* The control thread holds every engine: the turn may reach any. */
	qp->engine->visiting = true;
	qp->transport->run(qp, now, qp->sq_slots);
	qp->engine->visiting = false;
	network_flush(qp->engine);
}

/* Take the rung doorbells of one bitmap; calls ring(table entry) for each. */
static bool scan(struct rn_doorbells *db, struct rn_table *objs,
		 void (*ring)(void *obj))
{
	uint64_t summary;

	/* A plain load first: the common idle case must not bounce the line. */
	if (!__atomic_load_n(&db->summary, __ATOMIC_RELAXED))
		return false;
	summary = __atomic_exchange_n(&db->summary, 0, __ATOMIC_SEQ_CST);
	while (summary) {
		unsigned int word = __builtin_ctzll(summary);
		uint64_t bits;

		summary &= summary - 1;
		if (word >= RN_PENDING_WORDS)
			continue;
		bits = __atomic_exchange_n(&db->pending[word], 0, __ATOMIC_SEQ_CST);
		while (bits) {
			void *obj = rn_table_get(objs, word * 64 + __builtin_ctzll(bits));

			bits &= bits - 1;
			if (obj)
				ring(obj);
		}
	}
	return true;
}

static void ring_qp(void *qp)
{
	rn_engine_doorbell(qp);
}

static void ring_cq(void *cq)
{
	rn_cq_ring(cq);
}

static bool scan_doorbells(struct rn_context *ctx)
{
	bool qps = scan(&ctx->dev_page->qp, &ctx->qps, ring_qp);
	bool cqs = scan(&ctx->dev_page->cq, &ctx->cqs, ring_cq);

	return qps || cqs;
}

/* ---- the pass ----------------------------------------------------------------- */

bool rn_engine_pass(struct rn_engine *e, uint64_t now)
{
	const struct rn_network_ops *net = e->network;
	struct rn_list *pos, *tmp;
	bool progress = false;

	rn_list_for_each_safe(pos, tmp, &e->contexts)
		progress |= scan_doorbells(
			rn_container_of(pos, struct rn_context, engine_link));
	progress |= rn_timers_run(&e->timers, now);
	if (net) {
		progress |= net->receive(e);
		progress |= net->reply(e, now);
	}
	rn_list_for_each_safe(pos, tmp, &e->active) {
		struct rn_qp *qp = rn_container_of(pos, struct rn_qp, active_link);

		const struct rn_transport_ops *t = qp->transport;

		progress |= t->run(qp, now, t->budget);
		if (qp->active && !t->busy(qp))
			rn_engine_unschedule(qp);
		/* run_sq may have moved the responder into ERR, taking it off
		 * the list; if that was the next node, end this walk here.
		 */
		if (tmp != &e->active &&
		    !rn_container_of(tmp, struct rn_qp, active_link)->active)
			break;
	}
	network_flush(e);
	return progress;
}

/* Turns a QP gets in one visit (rn_engine_cross). */
#define RN_CROSS_TURNS 8

/*
 * The turns that reach other engines' objects, while e holds every
 * engine (rn_gate_visit): true on progress.
 */
bool rn_engine_cross(struct rn_engine *e, uint64_t now)
{
	bool progress = false;

	e->visiting = true;
	while (!rn_list_empty(&e->crossing)) {
		struct rn_qp *qp = rn_container_of(e->crossing.next,
						   struct rn_qp, crossing_link);
		const struct rn_transport_ops *t = qp->transport;

		unsigned int turns;

		qp->crossing = false;
		rn_list_del(&qp->crossing_link);
		/* Several turns: the other engines wait meanwhile, but a
		 * visit per turn would cost them more.
		 */
		for (turns = 0; turns < RN_CROSS_TURNS && qp->active; turns++) {
			if (!t->run(qp, now, t->budget))
				break;
			progress = true;
		}
		if (qp->active && !t->busy(qp))
			rn_engine_unschedule(qp);
	}
	e->visiting = false;
	network_flush(e);
	return progress;
}

/* When the engine has work next: 0 when some QP can run now. */
uint64_t rn_engine_next_timer(struct rn_engine *e)
{
	if (!rn_list_empty(&e->active) || (e->network && e->network->pending(e)))
		return 0;
	return rn_timers_next(&e->timers);
}

/*
 * Announce sleep in every device page, then look once more for doorbells
 * rung before the announcement became visible.  Returns false (and does not
 * sleep) if there are some.
 */
bool rn_engine_sleep_prepare(struct rn_engine *e)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &e->contexts) {
		struct rn_context *c =
			rn_container_of(pos, struct rn_context, engine_link);

		__atomic_store_n(&c->dev_page->asleep, 1, __ATOMIC_SEQ_CST);
	}
	rn_list_for_each_safe(pos, tmp, &e->contexts) {
		struct rn_context *c =
			rn_container_of(pos, struct rn_context, engine_link);

		if (__atomic_load_n(&c->dev_page->qp.summary, __ATOMIC_SEQ_CST) ||
		    __atomic_load_n(&c->dev_page->cq.summary, __ATOMIC_SEQ_CST)) {
			rn_engine_wake(e);
			return false;
		}
	}
	return true;
}

/* A new context's page says what the others say: whether the engine
 * sleeps, so that its first doorbell wakes it if so.
 */
void rn_engine_context_added(struct rn_context *ctx)
{
	struct rn_engine *e = ctx->engine;

	rn_list_add_tail(&e->contexts, &ctx->engine_link);
	e->ncontexts++;
	__atomic_store_n(&ctx->dev_page->asleep, e->sleeping, __ATOMIC_SEQ_CST);
}

void rn_engine_context_removed(struct rn_context *ctx)
{
	rn_list_del(&ctx->engine_link);
	ctx->engine->ncontexts--;
}

void rn_engine_wake(struct rn_engine *e)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &e->contexts) {
		struct rn_context *c =
			rn_container_of(pos, struct rn_context, engine_link);

		__atomic_store_n(&c->dev_page->asleep, 0, __ATOMIC_RELAXED);
	}
}

void rn_port_counters(const struct rn_device *dev, uint64_t out[RN_CNT_MAX])
{
	unsigned int c, i;

	for (c = 0; c < RN_CNT_MAX; c++) {
		out[c] = 0;
		for (i = 0; i < dev->nengines; i++)
			out[c] += __atomic_load_n(&dev->engines[i]->counters[c],
						  __ATOMIC_RELAXED);
	}
}

/* Wake the engine thread from its epoll (the control thread, through the
 * gate).
 */
void rn_engine_kick(struct rn_engine *e)
{
	uint64_t one = 1;

	if (write(e->kick_fd, &one, sizeof(one)) < 0)
		rn_warn("cannot wake the engine: %s\n", strerror(errno));
}
