// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Injected faults on the local path: no packet is built, so a message
 * counts as the packets it would take on the wire (one per path MTU), each
 * an event of its sender's rules (engine/fault.h), and the faults drawn
 * become what those packets would have caused there.  A lost or corrupted
 * last packet leaves the message unanswered (the ACK timeout); a lost or
 * reordered earlier one makes the next arrive after a gap (a sequence
 * error NAK: the requester goes back at once); a delayed one delays the
 * message.  The receiver counts a duplicate, a bad ICRC, a gap or a CE
 * mark as it would count the real one, and the CE mark's CNP reaches the
 * requester.  Answers (ACKs, READ responses, atomic ACKs) are the
 * responder's packets, under its own rules.
 */
#include "engine/fault.h"
#include "local/local.h"
#include "wire/packet.h"

/* The packets of len bytes at qp's path MTU: at least one. */
static uint32_t packets(const struct rn_qp *qp, uint64_t len)
{
	uint32_t mtu = 128u << qp->attr.path_mtu;

	return len ? (uint32_t)((len + mtu - 1) / mtu) : 1;
}

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

static bool read_or_atomic(uint8_t op)
{
	return op == RN_OP_READ || op == RN_OP_CMP_SWAP ||
	       op == RN_OP_FETCH_ADD;
}

/*
 * The faults of n packets from 'from' to 'to' (NULL: nobody receives),
 * requests or (answers) responses; the first that changes the try decides.
 */
static struct rn_local_fault_result packet_faults(struct rn_qp *from,
						  struct rn_qp *to, uint32_t n,
						  bool answers)
{
	/* What the receiver counts for a gap and for a packet seen twice. */
	enum rn_counter gap = answers ? RN_CNT_IMPLIED_NAK : RN_CNT_OOS_REQ;
	enum rn_counter twice = answers ? RN_CNT_DUP_RESP : RN_CNT_DUP_REQ;
	struct rn_local_fault_result r = { RN_LOCAL_FAULT_NONE };
	struct rn_device *dev = from->client->dev;
	uint32_t i;

	for (i = 0; i < n; i++) {
		struct rn_fault f = rn_fault_draw(from, RN_FAULT_EV_PACKET);
		bool last = i == n - 1;

		if (!f.kind || r.what != RN_LOCAL_FAULT_NONE)
			continue;
		switch (f.kind) {
		case RN_FAULT_CORRUPT_ICRC:
			/* Dropped where it arrives, as a lost one. */
			if (to)
				dev->port.counters[RN_CNT_RX_ICRC]++;
			/* fall through */
		case RN_FAULT_DROP:
			r.what = last ? RN_LOCAL_FAULT_LOST : RN_LOCAL_FAULT_SEQ;
			if (!last && to)
				rn_count_qp(to, gap);
			break;
		case RN_FAULT_REORDER:
			/* Behind the next message's first packet: no gap here. */
			if (last)
				break;
			r.what = RN_LOCAL_FAULT_SEQ;
			if (to)
				rn_count_qp(to, gap);
			break;
		case RN_FAULT_DELAY:
			r.what = RN_LOCAL_FAULT_LATE;
			r.ns = f.value * 1000ull;
			break;
		case RN_FAULT_DUPLICATE:
			if (to)
				rn_count_qp(to, twice);
			break;
		case RN_FAULT_MARK_CE:
			if (to) {
				rn_count_qp(to, RN_CNT_ECN_MARKED);
				rn_count_qp(to, RN_CNT_CNP_SENT);
				rn_count_qp(from, RN_CNT_CNP_HANDLED);
			}
			break;
		default:
			break;
		}
	}
	return r;
}

struct rn_local_fault_result rn_local_request_faults(struct rn_qp *qp,
						     struct rn_qp *dst,
						     const struct rn_wqe *w)
{
	struct rn_local_fault_result r = { RN_LOCAL_FAULT_NONE };
	struct rn_fault f;

	if (qp->faults)
		r = packet_faults(qp, dst,
				  read_or_atomic(w->opcode) ?
					  1 : packets(qp, message_len(w)),
				  false);
	if (r.what != RN_LOCAL_FAULT_NONE || !dst || !dst->faults ||
	    qp->qp_type == IBV_QPT_UC)
		return r;
	f = rn_fault_draw(dst, RN_FAULT_EV_REQUEST);
	if (f.kind == RN_FAULT_RNR) {
		r.what = RN_LOCAL_FAULT_RNR;
	} else if (f.kind == RN_FAULT_NAK) {
		r.what = f.value == RN_PKT_NAK_PSN_SEQ ? RN_LOCAL_FAULT_SEQ :
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
	struct rn_local_fault_result none = { RN_LOCAL_FAULT_NONE };

	if (!dst->faults)
		return none;
	/* A READ's responses, or the one ACK or atomic ACK of the rest. */
	return packet_faults(dst, qp,
			     w->opcode == RN_OP_READ ? packets(qp, len) : 1,
			     true);
}

unsigned int rn_local_datagram_copies(struct rn_qp *qp)
{
	struct rn_fault f = rn_fault_draw(qp, RN_FAULT_EV_PACKET);

	switch (f.kind) {
	case RN_FAULT_DROP:
	case RN_FAULT_CORRUPT_ICRC:
		return 0;
	case RN_FAULT_DUPLICATE:
		return 2;
	default:
		return 1; /* a datagram has no order to lose, nor a rate */
	}
}
