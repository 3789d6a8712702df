// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Injected faults on the packets a QP sends (engine/fault.h): lost,
 * doubled, marked CE, sealed with a wrong ICRC, or held back, for a time
 * (DELAY) or until the QP's next packet has gone (REORDER).  A packet
 * held back goes out with the addresses it was built with, whatever has
 * become of its QP meanwhile, as a packet in a network does.
 */
#include <stdlib.h>
#include <string.h>

#include "engine/fault.h"
#include "wire/internal.h"

/* Packets held at most: one more lets the oldest go first. */
#define RN_WIRE_HELD_MAX 1024
/* A reordered packet whose QP sends nothing more goes after this. */
#define RN_WIRE_REORDER_NS 1000000ull

struct held {
	struct rn_list link; /* on rn_wire.held, oldest first */
	uint64_t when; /* it goes then at the latest */
	bool after_next; /* or once its QP's next packet has gone */
	unsigned int si; /* the socket it leaves from */
	struct rn_wire_tx tx;
};

/* The held timer exists (room reserved for it) while packets are held. */
static void none_held(struct rn_wire *w)
{
	struct rn_engine *e = w->engine;

	rn_timer_cancel(&e->timers, &w->held_timer);
	e->ntimers--;
}

static void release(struct rn_wire *w, struct held *h)
{
	rn_list_del(&h->link);
	rn_wire_send_again(w, h->si, &h->tx);
	free(h);
	if (!--w->nheld)
		none_held(w);
}

/* The held timer runs for the earliest 'when'. */
static void rearm(struct rn_wire *w)
{
	struct rn_timers *ts = &w->engine->timers;
	uint64_t first = UINT64_MAX;
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &w->held) {
		struct held *h = rn_container_of(pos, struct held, link);

		if (h->when < first)
			first = h->when;
	}
	if (first != UINT64_MAX)
		rn_timer_arm(ts, &w->held_timer, first);
}

static void held_due(struct rn_timer *t, uint64_t now)
{
	struct rn_wire *w = rn_container_of(t, struct rn_wire, held_timer);
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &w->held) {
		struct held *h = rn_container_of(pos, struct held, link);

		if (h->when <= now)
			release(w, h);
	}
	rearm(w);
}

static bool hold(struct rn_wire *w, const struct rn_wire_tx *tx,
		 unsigned int si, uint64_t delay_ns, bool after_next)
{
	struct rn_engine *e = w->engine;
	struct held *h = malloc(sizeof(*h));

	if (!h)
		return false;
	/* Copied first: what goes out now is built where tx is. */
	memcpy(&h->tx, tx, sizeof(*tx));
	if (w->nheld >= RN_WIRE_HELD_MAX)
		release(w, rn_container_of(w->held.next, struct held, link));
	if (!w->nheld) {
		if (rn_timers_reserve(&e->timers, e->ntimers + 1)) {
			free(h);
			return false;
		}
		e->ntimers++;
	}
	h->when = rn_now_ns() + delay_ns;
	h->after_next = after_next;
	h->si = si;
	rn_list_add_tail(&w->held, &h->link);
	w->nheld++;
	rearm(w);
	return true;
}

enum rn_wire_fault_tx rn_wire_fault_tx(struct rn_wire *w,
				       struct rn_wire_tx *tx, unsigned int si)
{
	struct rn_qp *qp = rn_qp_by_qpn(w->dev, tx->qpn);
	struct rn_fault f;

	if (!qp || !qp->faults)
		return RN_WIRE_TX_AS_IS;
	f = rn_fault_draw(qp, RN_FAULT_EV_PACKET);
	switch (f.kind) {
	case RN_FAULT_DROP:
		return RN_WIRE_TX_TAKEN;
	case RN_FAULT_DUPLICATE:
		return RN_WIRE_TX_TWICE;
	case RN_FAULT_DELAY:
		return hold(w, tx, si, f.value * 1000ull, false) ?
			       RN_WIRE_TX_TAKEN : RN_WIRE_TX_AS_IS;
	case RN_FAULT_REORDER:
		return hold(w, tx, si, RN_WIRE_REORDER_NS, true) ?
			       RN_WIRE_TX_TAKEN : RN_WIRE_TX_AS_IS;
	case RN_FAULT_CORRUPT_ICRC:
		tx->bad_icrc = true;
		return RN_WIRE_TX_AS_IS;
	case RN_FAULT_MARK_CE:
		tx->tos |= RN_WIRE_ECN_CE;
		return RN_WIRE_TX_AS_IS;
	default:
		return RN_WIRE_TX_AS_IS;
	}
}

void rn_wire_fault_sent(struct rn_wire *w, uint32_t qpn)
{
	struct rn_list *pos, *tmp;
	bool any = false;

	rn_list_for_each_safe(pos, tmp, &w->held) {
		struct held *h = rn_container_of(pos, struct held, link);

		if (h->after_next && h->tx.qpn == qpn) {
			release(w, h);
			any = true;
		}
	}
	if (any)
		rearm(w);
}

void rn_wire_fault_init(struct rn_wire *w)
{
	rn_list_init(&w->held);
	rn_timer_init(&w->held_timer, held_due);
}

void rn_wire_fault_free(struct rn_wire *w)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &w->held) {
		rn_list_del(pos);
		free(rn_container_of(pos, struct held, link));
	}
	if (w->nheld)
		none_held(w);
	w->nheld = 0;
}
