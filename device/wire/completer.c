// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The completer: what the responder answers retires the requester's
 * started WQEs, in order.
 *
 *   ACK           everything up to its PSN arrived: SENDs and WRITEs that
 *                 end there complete (ACKs may be coalesced).  An ACK past
 *                 a READ or atomic whose responses have not all come
 *                 means they were lost: go back to them.
 *   NAK           sequence error: go back to its PSN (retry_cnt);
 *                 RNR: wait the timer its code names, then go back
 *                 (rnr_retry, 7 = forever); invalid request, remote
 *                 access, remote operational error: the WQE fails with
 *                 REM_INV_REQ_ERR / REM_ACCESS_ERR / REM_OP_ERR, the QP
 *                 goes to ERR and the rest is flushed: never retried.
 *   READ response data for the READ at its PSN, in order; a gap is an
 *                 implied NAK (go back to the first missing response).
 *   atomic ACK    the original value, for the atomic at its PSN.
 *
 * The retransmit timer (rxe's retrans_timer; docs/wire.md, "Requester and
 * completer"): one per QP, started when a packet goes out and it is not
 * running, never restarted by later packets; progress (an ACK that retires
 * or moves una) restarts it, nothing outstanding stops it.  When it
 * expires with packets still unacknowledged, the requester goes back to
 * the oldest (retry_cnt).
 * Timeout = 4.096 us * 2^timeout; 0 means no timer, as in rxe.
 */
#include "wire/internal.h"

/* The NAK meanings of engine/datapath.h are by the AETH's own codes. */
_Static_assert(RN_PKT_NAK_PSN_SEQ == (int)RN_FAULT_NAK_PSN_SEQ &&
		       RN_PKT_NAK_INV_REQ == (int)RN_FAULT_NAK_INV_REQ &&
		       RN_PKT_NAK_REM_ACCESS == (int)RN_FAULT_NAK_REM_ACCESS &&
		       RN_PKT_NAK_REM_OP == (int)RN_FAULT_NAK_REM_OP,
	       "NAK codes");

static struct rn_wire_send *head_send(struct rn_wire_qp *wq)
{
	return wq->head == wq->tail ? NULL :
				      &wq->sends[wq->head & wq->sends_mask];
}

static uint32_t last_psn(const struct rn_wire_send *s)
{
	return rn_pkt_psn_add(s->first_psn, s->npsn - 1);
}

/* ---- the retransmit timer ------------------------------------------------ */

static bool outstanding(const struct rn_wire_qp *wq)
{
	return wq->una != wq->sent_psn;
}

/* A packet went out: start the timer unless it runs. */
void rn_wire_retrans_start(struct rn_wire_qp *wq)
{
	uint64_t t = rn_ack_timeout_ns(wq->qp->attr.timeout);

	if (t == UINT64_MAX || rn_timer_armed(&wq->retrans_timer))
		return;
	rn_timer_arm(&wq->qp->engine->timers, &wq->retrans_timer, rn_now_ns() + t);
}

/* Progress: the timer runs again from now, or stops if all is answered. */
static void progress(struct rn_wire_qp *wq)
{
	struct rn_timers *ts = &wq->qp->engine->timers;
	uint64_t t = rn_ack_timeout_ns(wq->qp->attr.timeout);

	wq->retry_left = wq->qp->attr.retry_cnt;
	wq->rnr_left = wq->qp->attr.rnr_retry;
	if (!outstanding(wq) || t == UINT64_MAX)
		rn_timer_cancel(ts, &wq->retrans_timer);
	else
		rn_timer_arm(ts, &wq->retrans_timer, rn_now_ns() + t);
	rn_engine_schedule(wq->qp);
}

/* The oldest started WQE fails: it completes with status, the QP dies. */
static void fail(struct rn_wire_qp *wq, enum ibv_wc_status status)
{
	if (head_send(wq))
		rn_wire_complete_head(wq, status, 0);
	else
		rn_qp_to_error(wq->qp);
}

/* Go back to psn, if retry_cnt allows another try. */
static void retry(struct rn_wire_qp *wq, uint32_t psn)
{
	if (!wq->retry_left) {
		rn_count_qp(wq->qp, RN_CNT_RETRY_EXC);
		fail(wq, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	wq->retry_left--;
	rn_count_qp(wq->qp, RN_CNT_RETRIES);
	rn_wire_requester_rewind(wq, psn);
	/* Whatever the go-back resends (or cannot yet: the READ credits, the
	 * window), a timer runs while anything is unanswered: a lost resend
	 * must never leave the QP waiting for nothing.
	 */
	if (outstanding(wq))
		rn_wire_retrans_start(wq);
}

static void retrans_expired(struct rn_timer *t, uint64_t now)
{
	struct rn_wire_qp *wq = rn_container_of(t, struct rn_wire_qp, retrans_timer);

	(void)now;
	if (!outstanding(wq) || wq->rnr_wait)
		return;
	rn_count_qp(wq->qp, RN_CNT_ACK_TIMEOUT);
	retry(wq, wq->una);
}

static void rnr_expired(struct rn_timer *t, uint64_t now)
{
	struct rn_wire_qp *wq = rn_container_of(t, struct rn_wire_qp, rnr_timer);

	(void)now;
	wq->rnr_wait = false;
	rn_engine_schedule(wq->qp);
}

void rn_wire_timers_init(struct rn_wire_qp *wq)
{
	rn_timer_init(&wq->retrans_timer, retrans_expired);
	rn_timer_init(&wq->rnr_timer, rnr_expired);
}

/* ---- acknowledgement ------------------------------------------------------ */

enum acked {
	ACKED,
	LOST, /* a READ or atomic before psn has unanswered PSNs */
	BOGUS, /* psn was never sent */
	FAILED, /* a completion failed the QP (its CQ overran): stop */
};

/*
 * una moved past send_psn: an answer came late, after a timeout or a NAK
 * had sent the cursor back.  What it answered is not sent again, and the
 * cursor must not stay behind it: the window and the PSNs of what is sent
 * next count from send_psn.
 */
static void catch_up(struct rn_wire_qp *wq)
{
	if (rn_pkt_psn_cmp(wq->send_psn, wq->una) < 0)
		rn_wire_requester_rewind(wq, wq->una);
}

/*
 * The responder has every PSN up to and including psn: retire what that
 * completes, move una.
 */
static enum acked acknowledge(struct rn_wire_qp *wq, uint32_t psn)
{
	uint32_t next = rn_pkt_psn_add(psn, 1);
	bool moved = false, lost = false;
	struct rn_wire_send *s;

	if (rn_pkt_psn_cmp(next, wq->sent_psn) > 0)
		return BOGUS;
	if (rn_pkt_psn_cmp(next, wq->una) <= 0)
		return ACKED; /* old news */
	while ((s = head_send(wq)) && rn_pkt_psn_cmp(s->first_psn, psn) <= 0) {
		if (rn_op_read_or_atomic(s->opcode)) {
			/* Its responses are what acknowledge it; an ACK past
			 * its last PSN means some of them were lost.
			 */
			lost = rn_pkt_psn_cmp(last_psn(s), psn) <= 0;
			next = rn_pkt_psn_add(s->first_psn, s->done);
			break;
		}
		if (rn_pkt_psn_cmp(last_psn(s), psn) > 0)
			break;
		if (!rn_wire_complete_head(wq, IBV_WC_SUCCESS, (uint32_t)s->len))
			return FAILED;
		rn_count_qp(wq->qp, RN_CNT_REQ_COMPLETED);
		moved = true;
	}
	if (rn_pkt_psn_cmp(next, wq->una) > 0) {
		wq->una = next;
		moved = true;
	}
	catch_up(wq);
	if (moved)
		progress(wq);
	return lost ? LOST : ACKED;
}

/*
 * A response past a gap: counted, each one (mlx5's implied_nak_seq_err
 * counts the times the requester saw one), and dropped; the requester
 * goes back once, until the missing one comes.
 */
static void implied_nak(struct rn_wire_qp *wq, uint32_t expected)
{
	rn_count_qp(wq->qp, RN_CNT_IMPLIED_NAK);
	if (wq->implied_nak)
		return;
	wq->implied_nak = true;
	retry(wq, expected);
}

/* A response for a PSN never sent (or asked for): a lie, or a stray. */
static bool never_sent(struct rn_wire_qp *wq, uint32_t psn)
{
	if (rn_pkt_psn_cmp(psn, wq->sent_psn) < 0)
		return false;
	rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
	return true;
}

/*
 * Everything before psn is in: acknowledge it, report what was lost.
 * False when the packet is done with (lost, bogus, or the QP failed).
 */
static bool acknowledge_before(struct rn_wire_qp *wq, uint32_t psn)
{
	switch (acknowledge(wq, rn_pkt_psn_sub(psn, 1))) {
	case ACKED:
		return true;
	case LOST:
		implied_nak(wq, wq->una);
		return false;
	case BOGUS:
		rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
		return false;
	default:
		return false;
	}
}

/* An RNR NAK or a NAK at psn (inside what was sent). */
static void nak(struct rn_wire_qp *wq, uint8_t syndrome, uint32_t psn)
{
	unsigned int value = rn_pkt_aeth_value(syndrome);

	if (never_sent(wq, psn))
		return;
	if (rn_pkt_psn_cmp(psn, wq->una) < 0) {
		rn_count_qp(wq->qp, RN_CNT_DUP_RESP); /* old news */
		return;
	}
	if (!acknowledge_before(wq, psn))
		return;
	if (rn_pkt_aeth_type(syndrome) == RN_PKT_AETH_RNR_NAK) {
		rn_count_qp(wq->qp, RN_CNT_RCVD_RNR);
		if (wq->qp->attr.rnr_retry != 7 && !wq->rnr_left--) {
			rn_count_qp(wq->qp, RN_CNT_RNR_RETRY_EXC);
			fail(wq, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		rn_wire_requester_rewind(wq, psn);
		wq->rnr_wait = true;
		rn_timer_cancel(&wq->qp->engine->timers, &wq->retrans_timer);
		rn_timer_arm(&wq->qp->engine->timers, &wq->rnr_timer,
			     rn_now_ns() + rn_rnr_timer_ns(value));
		return;
	}
	if (value == RN_PKT_NAK_PSN_SEQ) {
		rn_count_qp(wq->qp, RN_CNT_RCVD_SEQ);
		retry(wq, psn);
		return;
	}
	/* Rejected by the target: reported, never retried. */
	rn_count_qp(wq->qp, rn_nak_counter(value));
	fail(wq, rn_nak_status(value));
}

/* An AETH that is not an ACK (in an ACK, a READ response, an atomic ACK). */
static bool aeth_is_nak(struct rn_wire_qp *wq, const struct rn_pkt *p)
{
	if (!(p->hdrs & RN_PKT_H_AETH) ||
	    rn_pkt_aeth_type(p->aeth.syndrome) == RN_PKT_AETH_ACK)
		return false;
	nak(wq, p->aeth.syndrome, p->psn);
	return true;
}

/* ---- responses that carry data ---------------------------------------------- */

/* The local buffers of WQE s at [off, off + len), into part. */
static enum ibv_wc_status local_part(struct rn_wire_qp *wq,
				     const struct rn_wire_send *s, uint64_t off,
				     uint32_t len, struct rn_iovs *part)
{
	struct rn_qp *qp = wq->qp;
	struct rn_iovs local;
	struct rn_wqe w;

	if (rn_sq_fetch_at(qp, s->pos, &w) || w.opcode != s->opcode)
		return IBV_WC_LOC_QP_OP_ERR;
	if (rn_sgl_resolve(qp->client, qp->pd, w.sge, w.num_sge,
			   IBV_ACCESS_LOCAL_WRITE, &local) ||
	    off + len > local.len)
		return IBV_WC_LOC_PROT_ERR;
	rn_iovs_sub(&local, off, len, part);
	return IBV_WC_SUCCESS;
}

static enum ibv_wc_status write_part(const struct rn_iovs *part,
				     const void *data, uint32_t len)
{
	switch (rn_dma_to(part, data, len)) {
	case RN_DMA_OK:
	case RN_DMA_GONE: /* its hang-up follows */
		return IBV_WC_SUCCESS;
	default:
		return IBV_WC_LOC_PROT_ERR;
	}
}

/* Write len bytes at offset off of the local buffers of WQE s. */
static enum ibv_wc_status deliver(struct rn_wire_qp *wq, struct rn_wire_send *s,
				  uint64_t off, const void *data, uint32_t len)
{
	struct rn_iovs part;
	enum ibv_wc_status st = local_part(wq, s, off, len, &part);

	return st ? st : write_part(&part, data, len);
}

/* The staged part of a READ's data could not be written: the READ fails. */
static void response_failed(struct rn_wire_qp *wq, uint32_t first_psn,
			    enum rn_dma_status status)
{
	(void)first_psn;
	if (status != RN_DMA_GONE)
		rn_wire_complete_head(wq, IBV_WC_LOC_PROT_ERR, 0);
}

/*
 * Place READ response p at offset off of WQE s (the head): staged, or
 * written at once when it is the last, after what was staged, since the
 * completion follows it.  False when the READ failed (it is completed).
 */
static bool place_response(struct rn_wire_qp *wq, struct rn_wire_send *s,
			   uint64_t off, const struct rn_pkt *p, bool last)
{
	struct rn_iovs part;
	enum ibv_wc_status st = local_part(wq, s, off, p->payload_len, &part);

	if (!st) {
		switch (rn_wire_write_stage(wq, RN_PKT_K_READ_RESP, &part, p,
					    response_failed, !last)) {
		case RN_WIRE_STAGED:
			return true;
		case RN_WIRE_STAGE_FAILED:
			return false;
		case RN_WIRE_NOT_STAGED:
			break;
		}
	}
	if (!st)
		st = write_part(&part, p->payload, p->payload_len);
	if (st) {
		rn_wire_complete_head(wq, st, 0);
		return false;
	}
	return true;
}

/*
 * Is a READ response of this placement right for response i of READ s?
 * Each part of s (requester.c) is a request of its own, answered FIRST
 * ... LAST or ONLY.  After a partial part was asked again, responders
 * answer either from a FIRST or, as rxe replays, from a MIDDLE: both are
 * taken.
 */
static bool read_place_ok(const struct rn_wire_send *s, uint8_t place,
			  uint32_t i)
{
	uint32_t end = rn_wire_read_part_end(s, i);
	bool last = i + 1 == end;

	switch (place) {
	case RN_PKT_FIRST:
		return !last;
	case RN_PKT_MIDDLE:
		return !last && i;
	case RN_PKT_LAST:
		return last && end - (i - i % RN_WIRE_READ_PART) > 1;
	default:
		return last;
	}
}

static void read_response(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	struct rn_wire_send *s;
	uint32_t i, expected;
	uint64_t want;

	if (never_sent(wq, p->psn) || !acknowledge_before(wq, p->psn) ||
	    aeth_is_nak(wq, p))
		return;
	s = head_send(wq);
	if (!s || s->opcode != RN_OP_READ ||
	    rn_pkt_psn_sub(p->psn, s->first_psn) >= s->npsn) {
		rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
		return;
	}
	expected = rn_pkt_psn_add(s->first_psn, s->done);
	if (p->psn != expected) {
		if (rn_pkt_psn_cmp(p->psn, expected) > 0)
			implied_nak(wq, expected);
		else
			rn_count_qp(wq->qp, RN_CNT_DUP_RESP);
		return;
	}
	i = s->done;
	want = s->len - (uint64_t)i * wq->mtu;
	if (want > wq->mtu)
		want = wq->mtu;
	if (!read_place_ok(s, pkt->op->place, i) || p->payload_len != want) {
		rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
		return;
	}
	wq->implied_nak = false;
	if (!place_response(wq, s, (uint64_t)i * wq->mtu, p, i + 1 == s->npsn))
		return;
	s->done++;
	wq->una = rn_pkt_psn_add(p->psn, 1);
	/* A part answered whole gives its READ credit back; the last
	 * part's goes with the WQE.
	 */
	if (s->done < s->npsn && s->done == rn_wire_read_part_end(s, i))
		wq->rd_atomic--;
	if (s->done == s->npsn) {
		if (!rn_wire_complete_head(wq, IBV_WC_SUCCESS, (uint32_t)s->len))
			return;
		rn_count_qp(wq->qp, RN_CNT_REQ_COMPLETED);
	}
	catch_up(wq);
	progress(wq);
}

static void atomic_ack(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	struct rn_wire_send *s;
	enum ibv_wc_status st;

	if (never_sent(wq, p->psn) || !acknowledge_before(wq, p->psn) ||
	    aeth_is_nak(wq, p))
		return;
	s = head_send(wq);
	if (!s || (s->opcode != RN_OP_CMP_SWAP && s->opcode != RN_OP_FETCH_ADD)) {
		rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
		return;
	}
	if (p->psn != s->first_psn) {
		if (rn_pkt_psn_cmp(p->psn, s->first_psn) > 0)
			implied_nak(wq, s->first_psn);
		else
			rn_count_qp(wq->qp, RN_CNT_DUP_RESP);
		return;
	}
	wq->implied_nak = false;
	/* The original value, in the requester's byte order. */
	st = deliver(wq, s, 0, &p->atomic_ack, sizeof(p->atomic_ack));
	if (st) {
		rn_wire_complete_head(wq, st, 0);
		return;
	}
	wq->una = rn_pkt_psn_add(p->psn, 1);
	if (!rn_wire_complete_head(wq, IBV_WC_SUCCESS, sizeof(uint64_t)))
		return;
	rn_count_qp(wq->qp, RN_CNT_REQ_COMPLETED);
	catch_up(wq);
	progress(wq);
}

void rn_wire_completer_recv(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt)
{
	const struct rn_pkt *p = &pkt->p;
	enum ibv_qp_state state = wq->qp->attr.qp_state;
	uint32_t una;

	if (state != IBV_QPS_RTS && state != IBV_QPS_SQD) {
		rn_count_qp(wq->qp, RN_CNT_NO_QP);
		return;
	}
	switch (pkt->op->kind) {
	case RN_PKT_K_ACK:
		if (aeth_is_nak(wq, p))
			return;
		/* Nothing new: what it acknowledges already was. */
		if (rn_pkt_psn_cmp(p->psn, wq->una) < 0) {
			rn_count_qp(wq->qp, RN_CNT_DUP_RESP);
			return;
		}
		una = wq->una;
		switch (acknowledge(wq, p->psn)) {
		case LOST:
			implied_nak(wq, wq->una);
			break;
		case BOGUS:
			rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
			break;
		case ACKED:
			/* Inside the PSNs of a READ or an atomic, which only
			 * their responses answer: it acknowledged nothing.
			 */
			if (wq->una == una)
				rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
			break;
		default:
			break;
		}
		return;
	case RN_PKT_K_READ_RESP:
		read_response(wq, pkt);
		return;
	case RN_PKT_K_ATOMIC_ACK:
		atomic_ack(wq, pkt);
		return;
	default:
		rn_count_qp(wq->qp, RN_CNT_RX_UNEXPECTED);
		return;
	}
}
