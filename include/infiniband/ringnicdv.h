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
	/* Faults injected (ringnicdv_set_qp_faults), never counted above. */
	uint64_t injected_faults;
};

int ringnicdv_query_qp_counters(struct ibv_qp *qp,
				struct ringnicdv_qp_counters *counters,
				uint32_t inlen);

/*
 * Fault injection: a QP meets the faults its rules choose, as if its
 * network, its peer or the device had them, with the effects the IB spec
 * gives them (retries, RNR waits, go-back-N, NAKs, error completions), on
 * the wire and on the local path alike: ringnicdv_set_qp_faults(3).
 */
enum ringnicdv_fault_kind {
	/* Packets the QP sends: requests, ACKs, READ responses. */
	RINGNICDV_FAULT_DROP = 1, /* lost */
	RINGNICDV_FAULT_DUPLICATE, /* arrives twice */
	RINGNICDV_FAULT_DELAY, /* arrives 'value' microseconds late */
	RINGNICDV_FAULT_REORDER, /* arrives after the QP's next packet */
	RINGNICDV_FAULT_CORRUPT_ICRC, /* arrives with a wrong ICRC */
	RINGNICDV_FAULT_MARK_CE, /* arrives marked ECN Congestion Experienced */
	/* Requests the QP receives, as their responder. */
	RINGNICDV_FAULT_RNR, /* answered with an RNR NAK */
	RINGNICDV_FAULT_NAK, /* answered with a NAK of class 'value' */
	/* Send WRs of the QP. */
	RINGNICDV_FAULT_WR_ERROR, /* completes with status 'value', unexecuted */
};

/* The NAK classes of RINGNICDV_FAULT_NAK: the AETH's NAK codes. */
enum ringnicdv_nak {
	RINGNICDV_NAK_PSN_SEQUENCE = 0,
	RINGNICDV_NAK_INVALID_REQUEST = 1,
	RINGNICDV_NAK_REMOTE_ACCESS = 2,
	RINGNICDV_NAK_REMOTE_OPERATION = 3,
};

struct ringnicdv_fault {
	uint32_t kind; /* enum ringnicdv_fault_kind */
	/* Which of the events of its kind (packets sent, requests received
	 * or WRs, counted from when the rules are set) it hits: the nth
	 * (1: the first), or with nth 0 each one with the chance
	 * share / 1000000, drawn from the seed.
	 */
	uint32_t nth;
	uint32_t share;
	uint32_t count; /* hits at most; 0: no limit */
	uint32_t value; /* DELAY: us; NAK: enum ringnicdv_nak; WR_ERROR: the
			 * enum ibv_wc_status (not IBV_WC_SUCCESS) */
	uint32_t reserved; /* 0 */
};

#define RINGNICDV_MAX_FAULTS 8

struct ringnicdv_faults {
	uint64_t comp_mask; /* no bits defined yet: 0 */
	uint64_t seed; /* the same seed and events: the same faults */
	uint32_t num_faults; /* rules in faults[]; 0 clears the QP's */
	uint32_t reserved; /* 0 */
	struct ringnicdv_fault faults[RINGNICDV_MAX_FAULTS];
};

/*
 * Replace the QP's fault rules.  Returns 0 or an errno: EOPNOTSUPP if qp
 * is not a ringnic QP, EINVAL for an unknown kind, value, comp_mask bit or
 * non-zero reserved field, or more than RINGNICDV_MAX_FAULTS rules.
 */
int ringnicdv_set_qp_faults(struct ibv_qp *qp,
			    const struct ringnicdv_faults *faults,
			    uint32_t inlen);

#ifdef __cplusplus
}
#endif

#endif
