// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * QP counters, as `rdma statistic qp` makes and reads them (the kernel's
 * rdma_counter, which RDMA netlink shows: daemon/nldev.c).  A counter sums
 * what each QP counts of itself (rn_qp.counts, the engine's own copy:
 * timeouts, NAKs, retries, duplicates, gaps, injected faults) over the QPs
 * bound to it, each from the moment it was bound, plus what QPs unbound
 * since had added.  It goes with its last QP.
 *
 * The port has one mode, as the kernel's: NONE; AUTO (by type and/or
 * process, RDMA_COUNTER_MASK_*), which binds QPs as they leave RESET to
 * the counter of QPs alike, made for them if there is none; MANUAL, in
 * which QPs are bound by hand, to a new counter or to one named.  Auto
 * mode is set only while no counter exists; turned off, it leaves its
 * counters to manual mode, which ends with the last counter.
 */
#include <errno.h>
#include <stdlib.h>
#include <rdma/rdma_netlink.h>

#include "verbs/verbs.h"

/* mlx5's and rxe's names where the meaning is the same, else ringnic's. */
const char *const rn_qp_count_names[RN_QP_COUNTS] = {
	[RN_QPC_ACK_TIMEOUTS] = "local_ack_timeout_err",
	[RN_QPC_SEQ_NAKS] = "packet_seq_err",
	[RN_QPC_RETRIES] = "completer_retry_err",
	[RN_QPC_RNR_NAKS] = "rnr_nak_retry_err",
	[RN_QPC_REMOTE_NAKS] = "req_remote_naks",
	[RN_QPC_DUP_REQUESTS] = "duplicate_request",
	[RN_QPC_OOS_REQUESTS] = "out_of_sequence",
	[RN_QPC_NAKS_SENT] = "resp_naks_sent",
	[RN_QPC_INJECTED] = "injected_faults",
};

void rn_qp_counters_init(struct rn_device *dev)
{
	rn_list_init(&dev->qp_counters.list);
	dev->qp_counters.mode = RDMA_COUNTER_MODE_NONE;
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

static struct rn_qp_counter *counter_new(struct rn_device *dev,
					 const struct rn_qp *qp,
					 uint32_t auto_mask)
{
	struct rn_qp_counter *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->id = dev->qp_counters.next_id++;
	c->auto_mask = auto_mask;
	c->qp_type = qp->qp_type;
	c->pid = qp->client->pid;
	rn_list_init(&c->qps);
	rn_list_add_tail(&dev->qp_counters.list, &c->link);
	dev->qp_counters.count++;
	return c;
}

static void bind_to(struct rn_qp *qp, struct rn_qp_counter *c)
{
	unsigned int i;

	for (i = 0; i < RN_QP_COUNTS; i++)
		qp->counter_base[i] = qp->counts[i];
	qp->counter = c;
	rn_list_add_tail(&c->qps, &qp->counter_link);
}

/* The QP's counts since it was bound stay with the counter. */
static void unbind_from(struct rn_qp *qp)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_qp_counter *c = qp->counter;
	unsigned int i;

	for (i = 0; i < RN_QP_COUNTS; i++)
		c->left[i] += qp->counts[i] - qp->counter_base[i];
	rn_list_del(&qp->counter_link);
	qp->counter = NULL;
	if (!rn_list_empty(&c->qps))
		return;
	rn_list_del(&c->link);
	free(c);
	if (!--dev->qp_counters.count &&
	    dev->qp_counters.mode == RDMA_COUNTER_MODE_MANUAL)
		dev->qp_counters.mode = RDMA_COUNTER_MODE_NONE;
}

int rn_qp_counter_set_auto(struct rn_device *dev, uint32_t mask)
{
	if (mask & ~(uint32_t)(RDMA_COUNTER_MASK_QP_TYPE | RDMA_COUNTER_MASK_PID))
		return EINVAL;
	if (!mask) {
		if (dev->qp_counters.mode != RDMA_COUNTER_MODE_AUTO)
			return EINVAL;
		dev->qp_counters.mode = dev->qp_counters.count ?
						RDMA_COUNTER_MODE_MANUAL :
						RDMA_COUNTER_MODE_NONE;
		dev->qp_counters.auto_mask = 0;
		return 0;
	}
	if (dev->qp_counters.mode == RDMA_COUNTER_MODE_AUTO &&
	    dev->qp_counters.auto_mask == mask)
		return 0;
	if (dev->qp_counters.count)
		return EBUSY;
	dev->qp_counters.mode = RDMA_COUNTER_MODE_AUTO;
	dev->qp_counters.auto_mask = mask;
	return 0;
}

int rn_qp_counter_bind(struct rn_device *dev, uint32_t qpn, bool existing,
		       uint32_t *id)
{
	struct rn_qp *qp = rn_qp_by_qpn(dev, qpn);
	struct rn_qp_counter *c;

	if (!qp)
		return ENOENT;
	if (qp->counter || dev->qp_counters.mode == RDMA_COUNTER_MODE_AUTO)
		return EINVAL;
	if (existing) {
		c = rn_qp_counter_by_id(dev, *id);
		if (!c)
			return ENOENT;
	} else {
		c = counter_new(dev, qp, 0);
		if (!c)
			return ENOMEM;
		*id = c->id;
	}
	dev->qp_counters.mode = RDMA_COUNTER_MODE_MANUAL;
	bind_to(qp, c);
	return 0;
}

int rn_qp_counter_unbind(struct rn_device *dev, uint32_t qpn, uint32_t id)
{
	struct rn_qp *qp = rn_qp_by_qpn(dev, qpn);

	if (dev->qp_counters.mode != RDMA_COUNTER_MODE_MANUAL)
		return EINVAL;
	if (!qp || !rn_qp_counter_by_id(dev, id))
		return ENOENT;
	if (!qp->counter || qp->counter->id != id)
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

	if (dev->qp_counters.mode != RDMA_COUNTER_MODE_AUTO || qp->counter)
		return;
	rn_list_for_each_safe(pos, tmp, &dev->qp_counters.list) {
		c = rn_container_of(pos, struct rn_qp_counter, link);
		if ((!(mask & RDMA_COUNTER_MASK_QP_TYPE) ||
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

void rn_qp_counter_values(const struct rn_qp_counter *c,
			  uint64_t v[RN_QP_COUNTS])
{
	struct rn_list *pos, *tmp;
	unsigned int i;

	for (i = 0; i < RN_QP_COUNTS; i++)
		v[i] = c->left[i];
	rn_list_for_each_safe(pos, tmp, (struct rn_list *)&c->qps) {
		const struct rn_qp *qp =
			rn_container_of(pos, struct rn_qp, counter_link);

		for (i = 0; i < RN_QP_COUNTS; i++)
			v[i] += qp->counts[i] - qp->counter_base[i];
	}
}
