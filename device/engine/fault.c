// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Fault injection: the rules of each QP, and the draws the transports make. */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "engine/fault.h"

struct rn_fault_plan {
	uint64_t seed;
	uint64_t generation; /* of the device's plans: a new one, a new number */
	uint32_t nrules;
	struct rn_fault_rule rules[RN_FAULTS_MAX];
	uint64_t seen[RN_FAULTS_MAX]; /* events of the rule's kind so far */
	uint32_t hits[RN_FAULTS_MAX];
};

static enum rn_fault_event event_of(uint32_t kind)
{
	switch (kind) {
	case RN_FAULT_RNR:
	case RN_FAULT_NAK:
		return RN_FAULT_EV_REQUEST;
	case RN_FAULT_WR_ERROR:
		return RN_FAULT_EV_WR;
	default:
		return RN_FAULT_EV_PACKET;
	}
}

static bool rule_valid(const struct rn_fault_rule *r)
{
	if (r->kind < RN_FAULT_DROP || r->kind > RN_FAULT_KIND_MAX ||
	    r->reserved || (r->nth && r->share) ||
	    (!r->nth && (!r->share || r->share > 1000000)))
		return false;
	switch (r->kind) {
	case RN_FAULT_DELAY:
		/* Within what a retransmit timer waits: up to 1 s. */
		return r->value && r->value <= 1000000;
	case RN_FAULT_NAK:
		return r->value <= RN_FAULT_NAK_REM_OP;
	case RN_FAULT_WR_ERROR:
		return r->value > IBV_WC_SUCCESS &&
		       r->value <= IBV_WC_TM_RNDV_INCOMPLETE;
	default:
		return !r->value;
	}
}

/* May caller set the rules of qp?  Its own, or its user's, or any. */
static bool may_set(const struct rn_client *caller, const struct rn_qp *qp,
		    bool own)
{
	if (own)
		return qp->client->ctx == caller->ctx;
	return caller->uid == 0 || caller->uid == geteuid() ||
	       qp->client->uid == caller->uid;
}

int rn_faults_set(struct rn_client *caller, const struct rn_ctl_faults_req *req,
		  bool own)
{
	struct rn_qp *qp = rn_qp_by_qpn(caller->dev, req->qpn);
	struct rn_fault_plan *plan = NULL;
	uint32_t i;

	if (!qp || !may_set(caller, qp, own))
		return EINVAL; /* not told apart: no QPN is revealed */
	if (req->nrules > RN_FAULTS_MAX)
		return EINVAL;
	for (i = 0; i < req->nrules; i++)
		if (!rule_valid(&req->rules[i]))
			return EINVAL;
	if (req->nrules) {
		plan = calloc(1, sizeof(*plan));
		if (!plan)
			return ENOMEM;
		static uint64_t generations;

		plan->seed = req->seed;
		plan->generation = ++generations;
		plan->nrules = req->nrules;
		for (i = 0; i < req->nrules; i++)
			plan->rules[i] = req->rules[i];
	}
	if (!qp->faults != !plan)
		qp->client->dev->faulty_qps += plan ? 1 : -1;
	free(qp->faults);
	qp->faults = plan;
	/* Worth a notice when it comes from another process (ringnic-fault). */
	rn_log(own ? 7 : 6, "QP %u of pid %d: %u fault rules set by pid %d\n",
	       qp->qpn, qp->client->pid, req->nrules, caller->pid);
	return 0;
}

void rn_faults_free(struct rn_qp *qp)
{
	if (qp->faults)
		qp->client->dev->faulty_qps--;
	free(qp->faults);
	qp->faults = NULL;
}

uint64_t rn_faults_generation(const struct rn_qp *qp)
{
	return qp->faults ? qp->faults->generation : 0;
}

/*
 * Rule i's draw for its nth event, in [0, 10^6): splitmix64's output for
 * a state made of the seed, the rule and the event alone, so that what
 * one rule draws never depends on the events of another (whose number
 * on the wire may depend on timing: ACKs, retries, CNPs).
 */
static uint32_t draw_share(const struct rn_fault_plan *plan, uint32_t i,
			   uint64_t nth)
{
	uint64_t z = plan->seed + (i + 1) * 0x9e3779b97f4a7c15ull +
		     nth * 0xd1b54a32d192ed03ull;

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (uint32_t)(z % 1000000u);
}

struct rn_fault rn_fault_draw(struct rn_qp *qp, enum rn_fault_event ev)
{
	struct rn_fault_plan *plan = qp->faults;
	struct rn_fault f = { 0 };
	uint32_t i;

	for (i = 0; i < plan->nrules; i++) {
		const struct rn_fault_rule *r = &plan->rules[i];
		bool hit;

		if (event_of(r->kind) != ev)
			continue;
		plan->seen[i]++;
		if (r->count && plan->hits[i] >= r->count)
			continue;
		hit = r->nth ? plan->seen[i] == r->nth :
			       draw_share(plan, i, plan->seen[i]) < r->share;
		if (!hit || f.kind)
			continue;
		plan->hits[i]++;
		f.kind = r->kind;
		f.value = r->value;
	}
	if (f.kind) {
		rn_engine_count(qp->engine, RN_CNT_INJ_DROP + f.kind -
						    RN_FAULT_DROP);
		rn_qp_count(qp, RN_QPC_INJECTED);
	}
	return f;
}
