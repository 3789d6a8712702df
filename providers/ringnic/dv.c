// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The direct verbs of include/infiniband/ringnicdv.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <infiniband/ringnicdv.h>

#include "ringnic.h"

#define end_of(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

/*
 * The caller's structure may be older (shorter) or newer (longer) than
 * ours: it must reach 'needed', and whatever we do not know must be zero.
 */
static bool attr_ok(const void *attr, uint32_t inlen, size_t ours, size_t needed)
{
	const uint8_t *p = attr;
	size_t i;

	if (inlen < needed)
		return false;
	for (i = ours; i < inlen; i++)
		if (p[i])
			return false;
	return true;
}

int ringnicdv_req_notify_cq(struct ibv_cq *ibcq,
			    const struct ringnicdv_cq_notify_attr *attr,
			    uint32_t inlen)
{
	static const uint32_t level[] = {
		[RINGNICDV_CQ_ARM_ANY] = RN_ARM_ANY,
		[RINGNICDV_CQ_ARM_SOLICITED] = RN_ARM_SOLICITED,
		[RINGNICDV_CQ_ARM_ERRORS] = RN_ARM_ERRORS,
	};

	if (!rn_is_ringnic(ibcq->context))
		return EOPNOTSUPP;
	if (!attr_ok(attr, inlen, sizeof(*attr),
		     end_of(struct ringnicdv_cq_notify_attr, arm)) ||
	    attr->comp_mask || attr->arm > RINGNICDV_CQ_ARM_ERRORS ||
	    (inlen >= end_of(struct ringnicdv_cq_notify_attr, reserved) &&
	     attr->reserved))
		return EINVAL;
	return rn_arm_cq(to_rn_cq(ibcq), level[attr->arm]);
}

/* Output structures: we fill ours, the caller gets what it has room for. */
static void copy_out(void *dst, uint32_t inlen, const void *src, size_t ours)
{
	memset(dst, 0, inlen);
	memcpy(dst, src, inlen < ours ? inlen : ours);
}

int ringnicdv_query_sq_window(struct ibv_qp *ibqp,
			      struct ringnicdv_sq_window *window,
			      uint32_t inlen)
{
	struct ringnicdv_sq_window w = { 0 };
	struct rn_qp *qp;

	if (!rn_is_ringnic(ibqp->context))
		return EOPNOTSUPP;
	if (inlen < end_of(struct ringnicdv_sq_window, free))
		return EINVAL;
	qp = to_rn_qp(ibqp);
	w.size = qp->sq_slots * RN_SLOT_SIZE;
	w.op_size = RN_SEND_HDR_SIZE;
	w.iov_size = sizeof(struct rn_sge);
	w.iov_limit = qp->cap.max_send_sge;
	w.op_alignment = RN_SLOT_SIZE;
	w.inline_limit = qp->cap.max_inline_data;
	/* A snapshot, taken without the SQ lock: this may be called between
	 * ibv_wr_start and ibv_wr_complete, which hold it.
	 */
	w.free = rn_sq_free_slots(qp) * RN_SLOT_SIZE;
	w.max_wr = qp->cap.max_send_wr;
	w.free_wr = w.max_wr -
		    (__atomic_load_n(&qp->sq_wr_prod, __ATOMIC_RELAXED) -
		     __atomic_load_n(&qp->ctrl->sq_wr_cons, __ATOMIC_ACQUIRE));
	copy_out(window, inlen, &w, sizeof(w));
	return 0;
}

int ringnicdv_query_qp_counters(struct ibv_qp *ibqp,
				struct ringnicdv_qp_counters *counters,
				uint32_t inlen)
{
	struct ringnicdv_qp_counters c = { 0 };
	struct rn_qp *qp;

	if (!rn_is_ringnic(ibqp->context))
		return EOPNOTSUPP;
	if (inlen < end_of(struct ringnicdv_qp_counters, wakeups))
		return EINVAL;
	qp = to_rn_qp(ibqp);
	/* Snapshots, without the SQ lock (see ringnicdv_query_sq_window). */
	c.doorbells = __atomic_load_n(&qp->doorbells, __ATOMIC_RELAXED);
	c.wakeups = __atomic_load_n(&qp->wakeups, __ATOMIC_RELAXED);
	c.device_doorbells = __atomic_load_n(&qp->ctrl->doorbells, __ATOMIC_RELAXED);
	c.groups = __atomic_load_n(&qp->ctrl->groups, __ATOMIC_RELAXED);
	c.wqes = __atomic_load_n(&qp->ctrl->wqes, __ATOMIC_RELAXED);
	c.stale = __atomic_load_n(&qp->ctrl->stale, __ATOMIC_RELAXED);
#define WIRE(f) c.f = __atomic_load_n(&qp->ctrl->f, __ATOMIC_RELAXED)
	WIRE(ack_timeouts);
	WIRE(seq_naks);
	WIRE(retries);
	WIRE(rnr_naks);
	WIRE(remote_naks);
	WIRE(duplicate_requests);
	WIRE(out_of_seq_requests);
	WIRE(naks_sent);
	WIRE(injected_faults);
#undef WIRE
	copy_out(counters, inlen, &c, sizeof(c));
	return 0;
}

/* The public rules are the control message's, field for field. */
_Static_assert(sizeof(struct ringnicdv_fault) == sizeof(struct rn_fault_rule),
	       "fault rule layout");
_Static_assert(RINGNICDV_MAX_FAULTS == RN_FAULTS_MAX, "fault rules");
_Static_assert((int)RINGNICDV_FAULT_DROP == (int)RN_FAULT_DROP &&
		       (int)RINGNICDV_FAULT_CORRUPT_ICRC ==
			       (int)RN_FAULT_CORRUPT_ICRC &&
		       (int)RINGNICDV_FAULT_WR_ERROR == (int)RN_FAULT_WR_ERROR,
	       "fault kinds");
_Static_assert((int)RINGNICDV_NAK_PSN_SEQUENCE == (int)RN_FAULT_NAK_PSN_SEQ &&
		       (int)RINGNICDV_NAK_REMOTE_OPERATION ==
			       (int)RN_FAULT_NAK_REM_OP,
	       "NAK classes");

int ringnicdv_set_qp_faults(struct ibv_qp *ibqp,
			    const struct ringnicdv_faults *faults,
			    uint32_t inlen)
{
	struct rn_ctl_faults_req req = {
		.hdr = { .op = RN_CTL_FAULTS },
		.qpn = ibqp->qp_num,
	};
	struct rn_ctl_resp_hdr resp;
	uint32_t i;

	if (!rn_is_ringnic(ibqp->context) || rn_kernel_mode(ibqp->context))
		return EOPNOTSUPP;
	if (inlen < end_of(struct ringnicdv_faults, reserved) ||
	    faults->comp_mask || faults->reserved ||
	    faults->num_faults > RINGNICDV_MAX_FAULTS ||
	    !attr_ok(faults, inlen, sizeof(*faults),
		     offsetof(struct ringnicdv_faults, faults) +
			     faults->num_faults * sizeof(faults->faults[0])))
		return EINVAL;
	req.seed = faults->seed;
	req.nrules = faults->num_faults;
	for (i = 0; i < faults->num_faults; i++)
		memcpy(&req.rules[i], &faults->faults[i], sizeof(req.rules[i]));
	return rn_ctl_call(to_rn_ctx(ibqp->context), &req, sizeof(req), &resp,
			   sizeof(resp), NULL, 0, NULL, 0);
}
