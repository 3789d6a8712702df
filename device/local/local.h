/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * local/: the transport for a QP whose peer is a QP of this device, and
 * for UD: a WQE executes whole, from the sender's memory into the
 * receiver's, with no packets (local.c); runs of SENDs and WRITEs move in
 * one copy (batch.c); UD datagrams go to a local QP or to the network
 * (ud.c).  Injected faults (engine/fault.h) become what the packets of a
 * message would have met (fault.c); captures get the packets a message
 * would have been (capture.c).
 */
#ifndef RN_LOCAL_H
#define RN_LOCAL_H

#include "engine/datapath.h"

/* The local path's ops: every QP has them until it connects elsewhere. */
extern const struct rn_transport_ops rn_local_transport;

/* The engine's memory for the local path. */
int rn_local_init(struct rn_engine *e);

/* What the local path keeps of a QP (qp->local). */
struct rn_local_qp {
	uint8_t retry_left;
	uint8_t rnr_left;
	bool wqe_started; /* retry counters belong to the WQE at sq_head */
	/* The WQE at sq_head executed, and an injected fault held back its
	 * answer: the next try completes it with this outcome (a duplicate
	 * request to the responder, if the answer was lost).
	 */
	bool late;
	bool late_duplicate;
	/* The request itself is late: the next try is its arrival. */
	bool request_late;
	uint8_t late_status; /* enum ibv_wc_status */
	uint32_t late_len;
	/* The first PSN of the WQE at sq_head, for captures of its tries. */
	uint32_t try_psn;
	/* As a responder: the messages it took (the AETH's MSN), 24 bits. */
	uint32_t msn;
};

/* local.c: a QP's local state, from its creation to its end */
int rn_local_qp_add(struct rn_qp *qp);
void rn_local_qp_reset(struct rn_qp *qp);
void rn_local_qp_remove(struct rn_qp *qp);

/* local.c */
struct rn_qp *rn_local_peer(struct rn_qp *qp);
/* The packets a message of len bytes takes at qp's path MTU: at least one. */
uint32_t rn_local_packets(const struct rn_qp *qp, uint64_t len);
void rn_local_advance_psns(struct rn_qp *qp, struct rn_qp *dst, uint64_t len);

/* fault.c: what injected faults make of one try of a message */
enum rn_local_fault {
	RN_LOCAL_FAULT_NONE,
	RN_LOCAL_FAULT_LOST, /* nothing answers: the ACK timeout */
	RN_LOCAL_FAULT_SEQ, /* a sequence error: the requester goes back now */
	RN_LOCAL_FAULT_LATE, /* it arrives 'ns' late */
	RN_LOCAL_FAULT_RNR, /* the responder answers RNR */
	RN_LOCAL_FAULT_NAK, /* the responder refuses it: NAK code 'nak' */
};

struct rn_local_fault_result {
	enum rn_local_fault what;
	uint64_t ns;
	uint32_t nak; /* enum rn_pkt_nak's values */
	bool implied; /* SEQ: a gap in responses, not a NAK */
};

/* The request packets of a try of w from qp to dst (NULL: nobody), unless
 * they arrived already (late), then dst's taking it.
 */
struct rn_local_fault_result rn_local_request_faults(struct rn_qp *qp,
						     struct rn_qp *dst,
						     const struct rn_wqe *w,
						     bool arrived);
/* The answers dst sends once it executed w (len bytes): its ACK, READ
 * responses or atomic ACK; NONE, LOST, SEQ or LATE.
 */
struct rn_local_fault_result rn_local_answer_faults(struct rn_qp *qp,
						    struct rn_qp *dst,
						    const struct rn_wqe *w,
						    uint64_t len);
/* A UD datagram of qp: how many copies arrive (0, 1 or 2). */
unsigned int rn_local_datagram_copies(struct rn_qp *qp);

/* capture.c: what a try of w put on the wire it did not use, for the
 * device's captures (engine/capture.h)
 */
struct rn_local_try {
	uint32_t psn; /* the first PSN of its requests */
	bool answered; /* the responder answered them, with this AETH */
	uint8_t syndrome;
};

void rn_local_capture(struct rn_qp *qp, const struct rn_wqe *w,
		      const struct rn_local_try *t);
void rn_local_capture_datagram(struct rn_qp *qp, const struct rn_wqe *w,
			       const struct rn_ah_attr *ah, int sgid_index,
			       uint32_t qkey, const struct rn_iovs *src,
			       uint64_t len);

/* ud.c */
enum ibv_wc_status rn_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
			      uint32_t *byte_len);

/* batch.c */
bool rn_batchable(const struct rn_qp *qp, const struct rn_wqe *w);
unsigned int rn_batch_run(struct rn_qp *qp, unsigned int budget);

#endif
