// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Injected faults on the local path: no packet is built, so a message
 * counts as the packets it would take on the wire (one per path MTU), each
 * an event of its sender's rules (engine/fault.h), and the faults drawn
 * become what those packets would have caused there.  A lost or corrupted
 * last packet leaves the message unanswered (the ACK timeout); a lost,
 * reordered or delayed earlier one lets the next arrive after a gap (a
 * sequence error NAK, or for responses an implied one: the requester goes
 * back at once); a delayed last one delays the message.  The receiver
 * counts a duplicate, a bad ICRC, a gap or a CE mark as it would count
 * the real one, and the CE mark's CNP reaches the requester.  Answers
 * (ACKs, READ responses, atomic ACKs) are the responder's packets, under
 * its own rules.  Unlike the wire, a reordered last packet (which there
 * would arrive behind the next message's first) changes nothing here.
 */
#include "engine/fault.h"
#include "local/local.h"

static uint64_t message_len(const struct rn_wqe *w)
{
	uint64_t len = 0;
	unsigned int i;

	if (w->flags & RN_WQE_INLINE)
		return w->inline_len;
	for (i = 0; i < w->num_sge; i++)
		len += w->sge[i].length;
	return len;
}

/*
 * The faults of n packets from 'from' to 'to' (NULL: nobody receives),
 * requests or (answers) responses; the first that changes the try
 * decides.  A delayed packet is overtaken by a later one that is less
 * late (a gap); one late as the rest is only late.  A CE mark counts
 * only on what the wire reacts to (requests and READ responses:
 * ce_counts).
 */
static struct rn_local_fault_result packet_faults(struct rn_qp *from,
						  struct rn_qp *to, uint32_t n,
						  bool answers, bool ce_counts)
{
	/* What the receiver counts for a gap and for a packet seen twice. */
	enum rn_counter gap = answers ? RN_CNT_IMPLIED_NAK : RN_CNT_OOS_REQ;
	enum rn_counter twice = answers ? RN_CNT_DUP_RESP : RN_CNT_DUP_REQ;
	struct rn_local_fault_result r = { .what = RN_LOCAL_FAULT_NONE };
	uint64_t held = 0; /* the longest delay so far, ns */
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct rn_fault f = rn_fault_draw(from, RN_FAULT_EV_PACKET);
		uint64_t late = f.kind == RN_FAULT_DELAY ? f.value * 1000ull : 0;
		bool last = i == n - 1;
		bool lost = false, overtakes = false;

		if (r.what != RN_LOCAL_FAULT_NONE)
			continue;
		switch (f.kind) {
		case RN_FAULT_CORRUPT_ICRC:
			/* Dropped where it arrives, as a lost one. */
			if (to)
				rn_engine_count(from->engine, RN_CNT_RX_ICRC);
			lost = true;
			break;
		case RN_FAULT_DROP:
			lost = true;
			break;
		case RN_FAULT_REORDER:
			/* Behind the next packet: behind the next message's
			 * first for the last one, which changes nothing here.
			 */
			if (!last) {
				held = UINT64_MAX;
				continue;
			}
			break;
		case RN_FAULT_DUPLICATE:
			if (to)
				rn_count_qp(to, twice);
			break;
		case RN_FAULT_MARK_CE:
			if (to && ce_counts) {
				rn_count_qp(to, RN_CNT_ECN_MARKED);
				rn_count_qp(to, RN_CNT_CNP_SENT);
				rn_count_qp(from, RN_CNT_CNP_HANDLED);
			}
			break;
		default:
			break;
		}
		overtakes = held > late;
		if (late > held)
			held = late;
		if (lost && (last || !to)) {
			/* No packet after it to find the gap: no answer. */
			r.what = RN_LOCAL_FAULT_LOST;
		} else if ((lost || overtakes) && to) {
			/* The next to arrive finds a gap; one held back
			 * arrives after it, a duplicate by then.
			 */
			r.what = RN_LOCAL_FAULT_SEQ;
			r.implied = answers;
			rn_count_qp(to, gap);
			if (overtakes)
				rn_count_qp(to, twice);
		} else if (lost || overtakes) {
			r.what = RN_LOCAL_FAULT_LOST;
		}
	}
	if (r.what == RN_LOCAL_FAULT_NONE && held && held != UINT64_MAX) {
		r.what = RN_LOCAL_FAULT_LATE;
		r.ns = held;
	}
	return r;
}

struct rn_local_fault_result rn_local_request_faults(struct rn_qp *qp,
						     struct rn_qp *dst,
						     const struct rn_wqe *w,
						     bool arrived)
{
	struct rn_local_fault_result r = { .what = RN_LOCAL_FAULT_NONE };
	struct rn_fault f;

	if (qp->faults && !arrived)
		r = packet_faults(qp, dst,
				  rn_op_read_or_atomic(w->opcode) ?
					  1 : rn_local_packets(qp, message_len(w)),
				  false, true);
	if (r.what != RN_LOCAL_FAULT_NONE || !dst || !dst->faults ||
	    qp->qp_type == IBV_QPT_UC)
		return r;
	f = rn_fault_draw(dst, RN_FAULT_EV_REQUEST);
	if (f.kind == RN_FAULT_RNR) {
		r.what = RN_LOCAL_FAULT_RNR;
	} else if (f.kind == RN_FAULT_NAK) {
		r.what = f.value == RN_FAULT_NAK_PSN_SEQ ? RN_LOCAL_FAULT_SEQ :
							 RN_LOCAL_FAULT_NAK;
		r.nak = f.value;
	}
	return r;
}

struct rn_local_fault_result rn_local_answer_faults(struct rn_qp *qp,
						    struct rn_qp *dst,
						    const struct rn_wqe *w,
						    uint64_t len)
{
	struct rn_local_fault_result none = { .what = RN_LOCAL_FAULT_NONE };
	bool read = w->opcode == RN_OP_READ;

	if (!dst->faults)
		return none;
	/* A READ's responses, or the one ACK or atomic ACK of the rest. */
	return packet_faults(dst, qp, read ? rn_local_packets(qp, len) : 1,
			     true, read);
}

unsigned int rn_local_datagram_copies(struct rn_qp *qp)
{
	struct rn_fault f = rn_fault_draw(qp, RN_FAULT_EV_PACKET);

	switch (f.kind) {
	case RN_FAULT_CORRUPT_ICRC:
		rn_engine_count(qp->engine, RN_CNT_RX_ICRC);
		return 0;
	case RN_FAULT_DROP:
		return 0;
	case RN_FAULT_DUPLICATE:
		return 2;
	default:
		return 1; /* a datagram has no order to lose, nor a rate */
	}
}
