/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Fault injection (RN_CTL_FAULTS, kernel-abi/ringnic-ctl.h): a QP's rules
 * choose which of its events meet a fault, and the transports make the
 * fault as a network, a peer or the device would: the wire on the packets
 * themselves (wire/netio.c, wire/responder.c, wire/requester.c), the local
 * path as the completions those packets would have produced
 * (local/local.c).  Events are of three kinds: packets the QP sends,
 * requests it receives, and its send WRs.
 *
 * The control thread sets the plans, holding every engine; the transports
 * draw from them on the engine that runs the QP's turn.  With no rules on the
 * device, the transports test one count (dev->faulty_qps); while some
 * QP has rules, every packet sent looks its QP up, and the local path
 * runs the QPs concerned without batching.
 */
#ifndef RN_ENGINE_FAULT_H
#define RN_ENGINE_FAULT_H

#include "engine/engine.h"

enum rn_fault_event {
	/* a packet the QP sends: requests, ACKs and NAKs, READ responses,
	 * CNPs
	 */
	RN_FAULT_EV_PACKET,
	RN_FAULT_EV_REQUEST, /* a request it receives */
	RN_FAULT_EV_WR, /* a send WR it starts */
};

/* A fault drawn: what, and its rule's value. */
struct rn_fault {
	enum rn_fault_kind kind; /* 0: none */
	uint32_t value;
};

/*
 * The rules of req->qpn become req's.  own: the caller's own context's
 * connection, where only its QPs are found; else a connection made for
 * this (ringnic-fault), which reaches the QPs of the caller's user, or
 * every QP for root and ringnicd's user.  0 or an errno.
 */
int rn_faults_set(struct rn_client *caller, const struct rn_ctl_faults_req *req,
		  bool own);
/* The QP goes: its rules too. */
void rn_faults_free(struct rn_qp *qp);
/* Which rules the QP has: a number no other setting had; 0 for none. */
uint64_t rn_faults_generation(const struct rn_qp *qp);
/*
 * The QP's next event of this kind: the fault its first rule to hit
 * makes, counted (apart from real faults), or none.  Every rule of the
 * event's kind counts the event.
 */
struct rn_fault rn_fault_draw(struct rn_qp *qp, enum rn_fault_event ev);

#endif
