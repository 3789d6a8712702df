// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The arm types end to end, through a real completion channel: an
 * ERRORS-armed CQ sleeps through thousands of successful completions and
 * wakes on the first error; SOLICITED ignores unsolicited completions;
 * ANY wakes on anything; and ringnicdv_req_notify_cq checks its input.
 */
#include <infiniband/ringnicdv.h>

#include "common.h"

#define SUCCESSES 5000

static void arm(struct pair *p, uint32_t type)
{
	struct ringnicdv_cq_notify_attr attr = { .arm = type };
	int ret = ringnicdv_req_notify_cq(p->cq, &attr, sizeof(attr));

	if (ret)
		die("ringnicdv_req_notify_cq: %s", strerror(ret));
}

static void errors_only(struct pair *p)
{
	int i;

	arm(p, RINGNICDV_CQ_ARM_ERRORS);
	for (i = 0; i < SUCCESSES; i++) {
		pair_write(p, p->mr->rkey, 64);
		pair_poll(p->cq, 1, IBV_WC_SUCCESS);
	}
	if (pair_event(p, 200))
		die("an ERRORS arm fired on successful completions");
	/* A bad rkey: the first error completion. */
	pair_write(p, p->mr->rkey ^ 0x100, 64);
	if (!pair_event(p, 5000))
		die("an ERRORS arm missed an error completion");
	pair_poll(p->cq, 1, IBV_WC_REM_ACCESS_ERR);
	printf("errors arm: silent through %d successes, woke on the error\n",
	       SUCCESSES);
}

static void solicited_and_any(struct pair *p)
{
	arm(p, RINGNICDV_CQ_ARM_SOLICITED);
	pair_send(p, false);
	pair_poll(p->cq, 1, IBV_WC_SUCCESS);
	if (pair_event(p, 200))
		die("a SOLICITED arm fired on an unsolicited receive");
	pair_send(p, true);
	if (!pair_event(p, 5000))
		die("a SOLICITED arm missed a solicited receive");
	pair_poll(p->cq, 1, IBV_WC_SUCCESS);

	/* The verbs call arms for ANY. */
	if (ibv_req_notify_cq(p->cq, 0))
		die("ibv_req_notify_cq");
	pair_write(p, p->mr->rkey, 8);
	if (!pair_event(p, 5000))
		die("an ANY arm missed a completion");
	pair_poll(p->cq, 1, IBV_WC_SUCCESS);
	printf("solicited and any arms: ok\n");
}

static void bad_input(struct pair *p)
{
	struct {
		struct ringnicdv_cq_notify_attr attr;
		uint64_t future;
	} big = { .attr.arm = RINGNICDV_CQ_ARM_ANY };
	struct ringnicdv_cq_notify_attr attr = { .arm = RINGNICDV_CQ_ARM_ANY };

	attr.comp_mask = 1;
	if (ringnicdv_req_notify_cq(p->cq, &attr, sizeof(attr)) != EINVAL)
		die("unknown comp_mask accepted");
	attr.comp_mask = 0;
	attr.arm = 3;
	if (ringnicdv_req_notify_cq(p->cq, &attr, sizeof(attr)) != EINVAL)
		die("unknown arm type accepted");
	attr.arm = RINGNICDV_CQ_ARM_ANY;
	attr.reserved = 1;
	if (ringnicdv_req_notify_cq(p->cq, &attr, sizeof(attr)) != EINVAL)
		die("non-zero reserved accepted");
	if (ringnicdv_req_notify_cq(p->cq, &big.attr, 8) != EINVAL)
		die("a structure without arm accepted");
	if (ringnicdv_req_notify_cq(p->cq, &big.attr, sizeof(big)))
		die("a longer structure with zero tail refused");
	big.future = 1;
	if (ringnicdv_req_notify_cq(p->cq, &big.attr, sizeof(big)) != EINVAL)
		die("a longer structure with unknown bytes accepted");
	/* The accepted arm above fires on the next completion. */
	pair_write(p, p->mr->rkey, 8);
	if (!pair_event(p, 5000))
		die("the arm of a longer structure did not fire");
	pair_poll(p->cq, 1, IBV_WC_SUCCESS);
	printf("ringnicdv_req_notify_cq input checks: ok\n");
}

int main(void)
{
	struct pair p;

	pair_open(&p, 4096);
	solicited_and_any(&p);
	bad_input(&p);
	errors_only(&p); /* last: the error puts the QP in ERR */
	pair_close(&p);
	return 0;
}
