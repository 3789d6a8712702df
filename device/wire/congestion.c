// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Congestion control, RoCEv2's: ECN marks become CNPs, CNPs become a
 * slower requester.  DCQCN's shape (Zhu et al., SIGCOMM 2015) with the
 * parameters below, which are ringnic's own (a software port's timers are
 * coarser than a NIC's):
 *
 *   notification point (where the data arrives): a request, or a READ
 *   response, that arrives CE-marked is counted, and the QP it came from
 *   is sent a CNP (opcode 0x81, BECN set, 16 reserved bytes), at most one
 *   per QP per RN_CC_CNP_GAP_NS;
 *
 *   reaction point (the QP that sends the data: requests, and READ
 *   responses, share one rate per QP): a QP starts unlimited.  Its first CNP
 *   starts pacing at the rate it was measured sending at (the "line" rate,
 *   where limiting ends again).  Each CNP, at most one per RN_CC_CUT_GAP_NS,
 *   sets the target rate Rt to the current rate Rc and cuts Rc by alpha/2;
 *   alpha, the estimate of how congested the path is, moves towards 1 with
 *   each cut and decays by (1 - g) each period without one.  Each period
 *   Rc moves half way to Rt: RN_CC_FAST_STAGES periods of fast recovery
 *   (Rt fixed), then additive increase (Rt += RN_CC_AI), then hyper
 *   increase (Rt += RN_CC_HAI).  Once Rc reaches the line rate the QP is
 *   unlimited again.  DCQCN's byte counter is not used: the period timer
 *   alone drives recovery.
 *
 * ACKs and atomic ACKs are not paced (they only keep their place behind
 * a held QP's READ responses), and CE marks on them make no CNP.  rxe 6.1
 * neither marks nor sends CNPs, and drops the CNPs it gets (docs/wire.md,
 * "Congestion control"): against rxe none of this acts.
 */
#include "wire/internal.h"

/* Notification point: CNPs to one QP at most this often. */
#define RN_CC_CNP_GAP_NS 50000ull
/* Reaction point: cuts at most this often; the period of alpha and rate. */
#define RN_CC_CUT_GAP_NS 50000ull
#define RN_CC_PERIOD_NS 100000ull
/* alpha in 1/RN_CC_ONE; g = 1/16. */
#define RN_CC_ONE 1024u
#define RN_CC_G_SHIFT 4
#define RN_CC_FAST_STAGES 5u
/* Rate increase steps and floor, bytes per second (5, 50 and 1 Mbit/s). */
#define RN_CC_AI (5000000ull / 8)
#define RN_CC_HAI (50000000ull / 8)
#define RN_CC_MIN_RATE (1000000ull / 8)
/* The pacer lets this much time's worth of packets go at once: what a
 * ringnicd that was not scheduled for a while may catch up on.
 */
#define RN_CC_BURST_NS 500000ull
/* The sending rate is measured over windows this long. */
#define RN_CC_METER_NS 1000000ull
/* A QP paced before any full window: assumed to send at 10 Gbit/s. */
#define RN_CC_DEFAULT_LINE (10000000000ull / 8)

/* ---- notification point -------------------------------------------------------- */

void rn_wire_cc_marked(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt,
		       uint64_t now)
{
	struct rn_wire *w = rn_wire_of(wq);
	struct rn_pkt cnp = {
		.opcode = RN_PKT_OPCODE_CNP,
		.becn = true,
		.dqpn = wq->qp->attr.dest_qp_num,
	};

	if (!(pkt->op->flags & RN_PKT_F_REQ) &&
	    pkt->op->kind != RN_PKT_K_READ_RESP)
		return;
	rn_wire_count(w, RN_CNT_ECN_MARKED);
	if (wq->cc.cnp_sent && now - wq->cc.cnp_sent < RN_CC_CNP_GAP_NS)
		return;
	wq->cc.cnp_sent = now;
	rn_wire_send(w, &wq->peer, &cnp, NULL, NULL);
	rn_wire_count(w, RN_CNT_CNP_SENT);
}

/* ---- reaction point ----------------------------------------------------------- */

static void unlimit(struct rn_wire_qp *wq)
{
	struct rn_timers *ts = &wq->qp->engine->timers;

	rn_timer_cancel(ts, &wq->cc.period_timer);
	rn_timer_cancel(ts, &wq->cc.pace_timer);
	wq->cc.rate = 0;
	wq->cc.paced = false;
}

/* One period's step: alpha decays unless a CNP came, Rc moves towards Rt. */
static void period_step(struct rn_wire_cc *cc)
{
	if (!cc->cut_in_period)
		cc->alpha -= cc->alpha >> RN_CC_G_SHIFT;
	cc->cut_in_period = false;
	cc->stage++;
	if (cc->stage > 2 * RN_CC_FAST_STAGES)
		cc->target += RN_CC_HAI;
	else if (cc->stage > RN_CC_FAST_STAGES)
		cc->target += RN_CC_AI;
	if (cc->target > cc->line)
		cc->target = cc->line;
	cc->rate = (cc->rate + cc->target) / 2;
}

static void period_over(struct rn_timer *t, uint64_t now)
{
	struct rn_wire_qp *wq = rn_container_of(t, struct rn_wire_qp,
						cc.period_timer);
	struct rn_wire_cc *cc = &wq->cc;
	/* A timer that fired late (ringnicd not scheduled: --no-realtime
	 * on a busy machine) makes up the periods it missed.
	 */
	uint64_t periods = 1 + (now - t->when) / RN_CC_PERIOD_NS;

	while (periods--) {
		period_step(cc);
		if (cc->rate + RN_CC_AI >= cc->line) {
			unlimit(wq);
			rn_engine_schedule(wq->qp);
			return;
		}
	}
	rn_timer_arm(&wq->qp->engine->timers, t, now + RN_CC_PERIOD_NS);
}

static void pace_over(struct rn_timer *t, uint64_t now)
{
	struct rn_wire_qp *wq = rn_container_of(t, struct rn_wire_qp,
						cc.pace_timer);

	(void)now;
	wq->cc.paced = false;
	rn_engine_schedule(wq->qp);
}

void rn_wire_cc_init(struct rn_wire_qp *wq)
{
	rn_timer_init(&wq->cc.period_timer, period_over);
	rn_timer_init(&wq->cc.pace_timer, pace_over);
}

void rn_wire_cc_reset(struct rn_wire_qp *wq)
{
	unlimit(wq);
	wq->cc.meter_start = wq->cc.meter_bytes = wq->cc.measured = 0;
	wq->cc.cnp_sent = 0;
}

/* The rate the QP sends at unlimited: the last full window's, else a guess. */
static uint64_t measured_rate(const struct rn_wire_cc *cc, uint64_t now)
{
	uint64_t span = now - cc->meter_start;

	if (cc->measured)
		return cc->measured;
	if (cc->meter_start && span >= RN_CC_METER_NS / 10)
		return cc->meter_bytes * 1000000000ull / span;
	return RN_CC_DEFAULT_LINE;
}

void rn_wire_cc_cut(struct rn_wire_qp *wq, uint64_t now)
{
	struct rn_wire_cc *cc = &wq->cc;

	cc->cut_in_period = true;
	if (cc->rate && now - cc->last_cut < RN_CC_CUT_GAP_NS)
		return;
	if (!cc->rate) {
		cc->line = measured_rate(cc, now);
		if (cc->line < 2 * RN_CC_MIN_RATE)
			cc->line = 2 * RN_CC_MIN_RATE;
		cc->rate = cc->line;
		cc->alpha = RN_CC_ONE;
		cc->next_send = now;
		rn_timer_arm(&wq->qp->engine->timers, &cc->period_timer,
			     now + RN_CC_PERIOD_NS);
	}
	cc->target = cc->rate;
	cc->rate -= cc->rate * cc->alpha / (2 * RN_CC_ONE);
	if (cc->rate < RN_CC_MIN_RATE)
		cc->rate = RN_CC_MIN_RATE;
	cc->alpha += (RN_CC_ONE - cc->alpha) >> RN_CC_G_SHIFT;
	cc->stage = 0;
	cc->last_cut = now;
}

bool rn_wire_cc_may_send(struct rn_wire_qp *wq, uint64_t now)
{
	struct rn_wire_cc *cc = &wq->cc;

	if (!cc->rate)
		return true;
	if (cc->paced)
		return false;
	if (cc->next_send <= now)
		return true;
	cc->paced = true;
	rn_timer_arm(&wq->qp->engine->timers, &cc->pace_timer, cc->next_send);
	return false;
}

void rn_wire_cc_sent(struct rn_wire_qp *wq, uint32_t bytes, uint64_t now)
{
	struct rn_wire_cc *cc = &wq->cc;

	if (!cc->meter_start || now - cc->meter_start >= RN_CC_METER_NS) {
		/* Only a busy, unlimited window says what the path carries. */
		if (cc->meter_start && !cc->rate &&
		    now - cc->meter_start < 2 * RN_CC_METER_NS)
			cc->measured = cc->meter_bytes * 1000000000ull /
				       (now - cc->meter_start);
		cc->meter_start = now;
		cc->meter_bytes = 0;
	}
	cc->meter_bytes += bytes;
	if (!cc->rate)
		return;
	if (cc->next_send + RN_CC_BURST_NS < now)
		cc->next_send = now - RN_CC_BURST_NS;
	cc->next_send += bytes * 1000000000ull / cc->rate;
}
