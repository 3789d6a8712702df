/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ringnic direct verbs: what ringnic offers beyond the verbs API.
 * Link with -lringnic (pkg-config ringnic).  Every call takes a comp_mask
 * and the size of the structure the caller was built with (inlen), so that
 * the structures can grow without breaking binaries.
 */
#ifndef INFINIBAND_RINGNICDV_H
#define INFINIBAND_RINGNICDV_H

#include <stdint.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which completions wake an armed CQ. */
enum ringnicdv_cq_arm {
	RINGNICDV_CQ_ARM_ANY = 0, /* any completion, as ibv_req_notify_cq(cq, 0) */
	RINGNICDV_CQ_ARM_SOLICITED = 1, /* solicited ones and errors */
	RINGNICDV_CQ_ARM_ERRORS = 2, /* error completions only */
};

struct ringnicdv_cq_notify_attr {
	uint64_t comp_mask; /* no bits defined yet: 0 */
	uint32_t arm; /* enum ringnicdv_cq_arm */
	uint32_t reserved; /* 0 */
};

/*
 * Arm a CQ for one notification on its completion channel.  Returns 0 or
 * an errno: EOPNOTSUPP if cq is not a ringnic CQ, EINVAL for an unknown
 * arm type, comp_mask bit or non-zero reserved byte.
 */
int ringnicdv_req_notify_cq(struct ibv_cq *cq,
			    const struct ringnicdv_cq_notify_attr *attr,
			    uint32_t inlen);

/*
 * A send flag for ibv_send_wr.send_flags and ibv_qp_ex.wr_flags: the WR is
 * queued, but the device need not be told yet.  The next post without it
 * rings once for everything queued; a post that fails, polling or arming
 * the QP's send CQ, ibv_modify_qp and ibv_destroy_qp ring too.  Deferral
 * never changes which completions a WR produces.
 */
#define RINGNICDV_SEND_DEFER (1u << 30)

/*
 * The send queue as a window of bytes and a count of WRs, for an
 * application that counts its own credits: a WR with n SGEs takes
 *	roundup(op_size + iov_size * n, op_alignment)
 * bytes, an inline WR roundup(op_size + inline bytes, op_alignment), and
 * one of the max_wr WRs; posting fails with ENOMEM exactly when that is
 * more than 'free' or free_wr is 0.  Room comes back when the WR completes
 * (polled or not).
 */
struct ringnicdv_sq_window {
	uint64_t comp_mask; /* out: no bits defined yet */
	uint32_t size; /* bytes in the window */
	uint32_t op_size; /* bytes every WR takes */
	uint32_t iov_size; /* bytes each SGE takes */
	uint32_t iov_limit; /* SGEs a WR may have */
	uint32_t op_alignment; /* a WR takes a multiple of this */
	uint32_t inline_limit; /* inline bytes a WR may carry */
	uint32_t free; /* bytes free now */
	uint32_t free_wr; /* WRs that may be posted now */
	uint32_t max_wr; /* WRs the queue holds: the QP's max_send_wr */
	uint32_t reserved;
};

int ringnicdv_query_sq_window(struct ibv_qp *qp,
			      struct ringnicdv_sq_window *window,
			      uint32_t inlen);

/* What posting cost for one QP, since it was created. */
struct ringnicdv_qp_counters {
	uint64_t comp_mask; /* out: no bits defined yet */
	uint64_t doorbells; /* doorbell records the provider wrote */
	uint64_t wakeups; /* of them, those that woke a sleeping device */
	uint64_t device_doorbells; /* doorbell records the device read */
	uint64_t groups; /* descriptor groups the device fetched */
	uint64_t wqes; /* send WQEs the device fetched */
	uint64_t stale; /* doorbell records it dropped as stale */
	/* On the wire (RoCEv2), as the device's hw_counters of the same
	 * names count them for all QPs; 32 bits, wrapping.
	 */
	uint64_t ack_timeouts; /* local_ack_timeout_err */
	uint64_t seq_naks; /* rcvd_seq_err + implied_nak_seq_err */
	uint64_t retries; /* completer_retry_err */
	uint64_t rnr_naks; /* rcvd_rnr_err */
	uint64_t remote_naks; /* req_remote_invalid_request + _access_errors +
			       * _operation_errors */
	uint64_t duplicate_requests; /* duplicate_request */
	uint64_t out_of_seq_requests; /* out_of_seq_request */
	uint64_t naks_sent; /* resp_naks_sent + send_rnr_err */
};

int ringnicdv_query_qp_counters(struct ibv_qp *qp,
				struct ringnicdv_qp_counters *counters,
				uint32_t inlen);

#ifdef __cplusplus
}
#endif

#endif
