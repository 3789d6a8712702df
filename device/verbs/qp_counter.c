// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * QP counters, as `rdma statistic qp` makes and reads them (the kernel's
 * rdma_counter, which RDMA netlink shows: daemon/nldev.c).  A counter sums
 * the counts each QP keeps of itself (struct rn_qp_ctrl: timeouts, NAKs,
 * retries, duplicates, injected faults) over the QPs bound to it, each
 * from the moment it was bound, plus what QPs unbound since had added.
 *
 * A QP is bound by hand (manual mode: to a new counter, or to one of its
 * own process's), or in auto mode when it leaves RESET, to the counter of
 * its type and/or its process (made for it if there is none).  A counter
 * goes with its last QP.  The port has one mode: auto while a mask is
 * set, manual while counters bound by hand exist; neither while the
 * other holds.
 */
#include <errno.h>
#include <stdlib.h>
#include <rdma/rdma_netlink.h>

#include "verbs/verbs.h"

/* mlx5's and rxe's names where the meaning is the same, else ringnic's. */
const char *const rn_qp_count_names[RN_QP_COUNTS] = {
	"local_ack_timeout_err", "packet_seq_err", "completer_retry_err",
	"rnr_nak_retry_err", "req_remote_naks", "duplicate_request",
	"out_of_sequence", "resp_naks_sent", "injected_faults",
};

/* The QP's counts now (32 bits each, wrapping), in rn_qp_count_names' order. */
static void counts_of(const struct rn_qp *qp, uint32_t v[RN_QP_COUNTS])
{
	const struct rn_qp_ctrl *c = qp->ctrl;

	v[0] = c->ack_timeouts;
	v[1] = c->seq_naks;
	v[2] = c->retries;
	v[3] = c->rnr_naks;
	v[4] = c->remote_naks;
	v[5] = c->duplicate_requests;
	v[6] = c->out_of_seq_requests;
	v[7] = c->naks_sent;
	v[8] = c->injected_faults;
}

void rn_qp_counters_init(struct rn_device *dev)
{
	rn_list_init(&dev->qp_counters.list);
}

struct rn_qp_counter *rn_qp_counter_by_id(struct rn_device *dev, uint32_t id)
{
	struct rn_list *pos, *tmp;

	rn_list_for_each_safe(pos, tmp, &dev->qp_counters.list) {
		struct rn_qp_counter *c =
			rn_container_of(pos, struct rn_qp_counter, link);

		if (c->id == id)
			return c;
	}
	return NULL;
}

uint32_t rn_qp_counter_mode(const struct rn_device *dev)
{
	struct rn_list *pos, *tmp;

	if (dev->qp_counters.auto_mask)
		return RDMA_COUNTER_MODE_AUTO;
	rn_list_for_each_safe(pos, tmp, &dev->qp_counters.list)
		if (!rn_container_of(pos, struct rn_qp_counter, link)->auto_mask)
			return RDMA_COUNTER_MODE_MANUAL;
	return RDMA_COUNTER_MODE_NONE;
}

static struct rn_qp_counter *counter_new(struct rn_device *dev,
					 const struct rn_qp *qp, uint32_t auto_mask)
{
	struct rn_qp_counter *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = dev->qp_counters.next_id++;
	c->auto_mask = auto_mask;
	c->qp_type = qp->qp_type;
	c->pid = qp->client->pid;
	rn_list_add_tail(&dev->qp_counters.list, &c->link);
	return c;
}

static void bind_to(struct rn_qp *qp, struct rn_qp_counter *c)
{
	counts_of(qp, qp->counter_base);
	qp->counter = c;
	c->nqps++;
}

/* The QP's counts since it was bound stay with the counter. */
static void unbind_from(struct rn_qp *qp)
{
	struct rn_qp_counter *c = qp->counter;
	uint32_t now[RN_QP_COUNTS];
	unsigned int i;

	counts_of(qp, now);
	for (i = 0; i < RN_QP_COUNTS; i++)
		c->left[i] += (uint32_t)(now[i] - qp->counter_base[i]);
	qp->counter = NULL;
	if (!--c->nqps) {
		rn_list_del(&c->link);
		free(c);
	}
}

int rn_qp_counter_set_auto(struct rn_device *dev, uint32_t mask)
{
	if (mask & ~(uint32_t)(RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID))
		return EINVAL;
	if (mask && rn_qp_counter_mode(dev) == RDMA_COUNTER_MODE_MANUAL)
		return EBUSY;
	dev->qp_counters.auto_mask = mask;
	return 0;
}

int rn_qp_counter_bind(struct rn_device *dev, uint32_t qpn, bool existing,
		       uint32_t *id)
{
	struct rn_qp *qp = rn_qp_by_qpn(dev, qpn);
	struct rn_qp_counter *c = NULL;

	if (!qp || qp->attr.qp_state == IBV_QPS_RESET || qp->counter)
		return EINVAL; /* no QP on the port, or one bound already */
	if (dev->qp_counters.auto_mask)
		return EBUSY;
	if (existing) {
		c = rn_qp_counter_by_id(dev, *id);
		/* A counter counts the QPs of one process. */
		if (!c || c->auto_mask || c->pid != qp->client->pid)
			return EINVAL;
	} else {
		c = counter_new(dev, qp, 0);
		if (!c)
			return ENOMEM;
		*id = c->id;
	}
	bind_to(qp, c);
	return 0;
}

int rn_qp_counter_unbind(struct rn_device *dev, uint32_t qpn, uint32_t id)
{
	struct rn_qp *qp = rn_qp_by_qpn(dev, qpn);

	if (!qp || !qp->counter || qp->counter->id != id)
		return EINVAL;
	unbind_from(qp);
	return 0;
}

void rn_qp_counter_qp_ready(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;
	uint32_t mask = dev->qp_counters.auto_mask;
	struct rn_list *pos, *tmp;
	struct rn_qp_counter *c;

	if (!mask || qp->counter)
		return;
	rn_list_for_each_safe(pos, tmp, &dev->qp_counters.list) {
		c = rn_container_of(pos, struct rn_qp_counter, link);
		if (c->auto_mask == mask &&
		    (!(mask & RDMA_COUNTER_MASK_QP_TYPE) ||
		     c->qp_type == qp->qp_type) &&
		    (!(mask & RDMA_COUNTER_MASK_PID) ||
		     c->pid == qp->client->pid)) {
			bind_to(qp, c);
			return;
		}
	}
	/* None yet: a QP that finds no memory for one is not counted. */
	c = counter_new(dev, qp, mask);
	if (c)
		bind_to(qp, c);
}

void rn_qp_counter_qp_gone(struct rn_qp *qp)
{
	if (qp->counter)
		unbind_from(qp);
}

void rn_qp_counter_values(struct rn_device *dev, const struct rn_qp_counter *c,
			  uint64_t v[RN_QP_COUNTS])
{
	uint32_t now[RN_QP_COUNTS];
	const struct rn_qp *qp;
	unsigned int i;
	uint32_t index;

	for (i = 0; i < RN_QP_COUNTS; i++)
		v[i] = c->left[i];
	for (index = 0; index < dev->qpns.size; index++) {
		qp = rn_table_get(&dev->qpns, index);
		if (!qp || qp->counter != c)
			continue;
		counts_of(qp, now);
		for (i = 0; i < RN_QP_COUNTS; i++)
			v[i] += (uint32_t)(now[i] - qp->counter_base[i]);
	}
}
