// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The requester: send WQEs become packets.  Each WQE it starts takes its
 * PSNs (a packet each, a READ one per response, an atomic one) and a place
 * in the ring of started WQEs, where it stays until the completer retires
 * it; its packets go out as the window allows (RN_WIRE_WINDOW PSNs not yet
 * acknowledged), segmented at the path MTU, with AckReq on the last packet
 * of each message and every RN_WIRE_ACKREQ_EVERY packets in between.  A
 * READ is asked in parts of RN_WIRE_READ_PART responses, each part a
 * request of its own that waits for the window like a packet.
 *
 * Packets leave no faster than congestion.c's pacer allows, once the
 * QP has been told of congestion.
 *
 * Retransmission is go-back-N: rn_wire_requester_rewind moves the cursor
 * (cur, send_psn) back to a PSN and the packets from there go out again,
 * rebuilt from the WQE and from memory as rxe does; a READ half answered
 * is asked again for its remaining bytes only.  The WQE is fetched again
 * from the send queue (its slots are not free until it is retired) and
 * must be what it was.
 *
 * Completions come in order: a WQE that fails before its first packet
 * (a bad local key, an opcode the QP cannot post) waits until every WQE
 * before it is retired; so do local operations (LOCAL_INV, BIND_MW),
 * which act on this device alone.
 */
#include <arpa/inet.h>
#include <string.h>

#include "engine/fault.h"
#include "wire/internal.h"

static bool reliable(const struct rn_wire_qp *wq)
{
	return wq->transport != RN_PKT_UC;
}

static uint32_t ring_size(const struct rn_wire_qp *wq)
{
	return wq->sends_mask + 1;
}

static struct rn_wire_send *send_at(struct rn_wire_qp *wq, uint32_t i)
{
	return &wq->sends[i & wq->sends_mask];
}

uint32_t rn_wire_read_part_end(const struct rn_wire_send *s, uint32_t i)
{
	uint32_t end = i - i % RN_WIRE_READ_PART + RN_WIRE_READ_PART;

	return end < s->npsn ? end : s->npsn;
}

/* A max_rd_atomic of 0 is taken as 1, so that a READ is not stuck. */
static uint32_t max_rd_atomic(const struct rn_qp *qp)
{
	return qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
}

static int64_t send_of(const struct rn_wire_qp *wq, uint32_t psn)
{
	uint32_t i;

	for (i = wq->head; i != wq->tail; i++) {
		const struct rn_wire_send *s = &wq->sends[i & wq->sends_mask];

		if (rn_pkt_psn_sub(psn, s->first_psn) < s->npsn)
			return i;
	}
	return -1;
}

/* What each QP type may post on the wire; UD is datagram.c's. */
static bool op_allowed(const struct rn_qp *qp, uint8_t op)
{
	if (qp->qp_type == IBV_QPT_UC)
		return op == RN_OP_SEND || op == RN_OP_SEND_IMM ||
		       op == RN_OP_WRITE || op == RN_OP_WRITE_IMM ||
		       op == RN_OP_LOCAL_INV || op == RN_OP_BIND_MW;
	return op >= RN_OP_SEND && op <= RN_OP_MAX;
}

/* The WQE of started WQE s, into wq->wqe; false when the ring changed it. */
static bool load_wqe(struct rn_wire_qp *wq, const struct rn_wire_send *s)
{
	struct rn_qp *qp = wq->qp;

	if (wq->wqe_valid)
		return true;
	if (rn_sq_fetch_at(qp, s->pos, &wq->wqe) ||
	    wq->wqe.opcode != s->opcode || wq->wqe.nslots != s->nslots) {
		rn_warn("pid %d: QP %u: a send WQE changed while in flight\n",
			qp->client->pid, qp->qpn);
		rn_qp_fatal(qp, IBV_EVENT_QP_FATAL);
		return false;
	}
	wq->wqe_valid = true;
	return true;
}

/*
 * Retire the oldest started WQE with this status (the completer's, and
 * ours for UC).  Returns false when the QP failed meanwhile: it no longer
 * sends (not RTS or SQD), whether the WQE failed or its CQE overran the
 * send CQ (rn_sq_complete put the QP in ERR).  The caller stops then.
 */
bool rn_wire_complete_head(struct rn_wire_qp *wq, enum ibv_wc_status status,
			   uint32_t byte_len)
{
	struct rn_wire_send *s = send_at(wq, wq->head);
	struct rn_qp *qp = wq->qp;
	struct rn_wqe w;

	/* READ data staged for it lands before its buffer goes back. */
	if (status != IBV_WC_SUCCESS)
		rn_wire_write_settle(wq);

	if (rn_sq_fetch_at(qp, s->pos, &w) || w.opcode != s->opcode ||
	    s->pos != qp->sq_head) {
		rn_warn("pid %d: QP %u: a send WQE changed while in flight\n",
			qp->client->pid, qp->qpn);
		rn_qp_fatal(qp, IBV_EVENT_QP_FATAL);
		return false;
	}
	if (rn_op_read_or_atomic(s->opcode))
		wq->rd_atomic--;
	if (wq->cur == wq->head) {
		wq->cur++;
		wq->wqe_valid = false;
	}
	wq->head++;
	wq->blocked = false;
	rn_sq_complete(qp, &w, status, byte_len);
	if (status != IBV_WC_SUCCESS) {
		rn_qp_send_failed(qp);
		return false;
	}
	if (qp->attr.qp_state != IBV_QPS_RTS &&
	    qp->attr.qp_state != IBV_QPS_SQD)
		return false;
	rn_qp_sq_drain_check(qp);
	return true;
}

/* A WQE that ends before it starts (an error, a local operation). */
static void complete_unstarted(struct rn_wire_qp *wq, const struct rn_wqe *w,
			       enum ibv_wc_status status)
{
	struct rn_qp *qp = wq->qp;

	wq->sq_next = (wq->sq_next + w->nslots) & RN_DB_SEQ_MASK;
	rn_sq_complete(qp, w, status, 0);
	if (status != IBV_WC_SUCCESS)
		rn_qp_send_failed(qp);
}

enum start {
	STARTED,
	FINISHED, /* completed without packets */
	WAIT, /* nothing to start, or it must wait for completions */
};

/* The message length of w, or a local error status. */
static enum ibv_wc_status message_len(struct rn_wire_qp *wq,
				      const struct rn_wqe *w, uint64_t *len)
{
	struct rn_qp *qp = wq->qp;
	struct rn_iovs iovs;
	enum ibv_wc_status st;

	switch (w->opcode) {
	case RN_OP_READ:
		st = rn_sgl_resolve(qp->client, qp->pd, w->sge, w->num_sge,
				    IBV_ACCESS_LOCAL_WRITE, &iovs);
		*len = iovs.len;
		break;
	case RN_OP_CMP_SWAP:
	case RN_OP_FETCH_ADD:
		if (w->num_sge != 1 || w->sge[0].length != sizeof(uint64_t))
			return IBV_WC_LOC_LEN_ERR;
		st = rn_sgl_resolve(qp->client, qp->pd, w->sge, 1,
				    IBV_ACCESS_LOCAL_WRITE, &iovs);
		*len = sizeof(uint64_t);
		break;
	default:
		st = rn_gather(qp, w, &iovs, len);
		break;
	}
	if (!st && *len > RN_MAX_MSG_SZ)
		st = IBV_WC_LOC_LEN_ERR;
	return st;
}

/*
 * An injected fault (engine/fault.h) fails the WQE at sq_next with its
 * status, drawn once for the WQE however often it must wait to start
 * (again if the rules change meanwhile).
 */
static enum ibv_wc_status injected_status(struct rn_wire_qp *wq)
{
	struct rn_fault f;

	if (wq->fault_rules != rn_faults_generation(wq->qp) ||
	    wq->fault_pos != wq->sq_next) {
		f = rn_fault_draw(wq->qp, RN_FAULT_EV_WR);
		wq->fault_rules = rn_faults_generation(wq->qp);
		wq->fault_pos = wq->sq_next;
		wq->fault_status = f.kind == RN_FAULT_WR_ERROR ? f.value : 0;
	}
	return (enum ibv_wc_status)wq->fault_status;
}

/* Start the next WQE of the send queue, if it may start now. */
static enum start start_next(struct rn_wire_qp *wq)
{
	struct rn_qp *qp = wq->qp;
	bool idle = wq->head == wq->tail;
	struct rn_wqe *w = &wq->wqe;
	enum ibv_wc_status st;
	struct rn_wire_send *s;
	uint64_t len;

	if (qp->attr.qp_state != IBV_QPS_RTS || wq->sq_next == qp->sq_prod)
		return WAIT;
	if (wq->tail - wq->head == ring_size(wq)) {
		wq->blocked = true;
		return WAIT;
	}
	wq->wqe_valid = false;
	if (rn_sq_fetch_at(qp, wq->sq_next, w)) {
		/* Fatal to the QP, once what came before it is done. */
		if (!idle) {
			wq->blocked = true;
			return WAIT;
		}
		rn_warn("pid %d: QP %u: malformed send WQE\n", qp->client->pid,
			qp->qpn);
		rn_qp_fatal(qp, IBV_EVENT_QP_FATAL);
		return WAIT;
	}
	st = op_allowed(qp, w->opcode) ? IBV_WC_SUCCESS : IBV_WC_LOC_QP_OP_ERR;
	if (!st && qp->faults)
		st = injected_status(wq);
	if (!st && w->opcode == RN_OP_LOCAL_INV)
		st = idle ? rn_local_invalidate(qp, w->imm_data) : st;
	else if (!st && w->opcode == RN_OP_BIND_MW)
		st = idle ? rn_mw_bind(qp, w) : st;
	if (!st && (w->opcode == RN_OP_LOCAL_INV || w->opcode == RN_OP_BIND_MW)) {
		if (!idle) {
			wq->blocked = true;
			return WAIT;
		}
		complete_unstarted(wq, w, IBV_WC_SUCCESS);
		return FINISHED;
	}
	if (!st)
		st = message_len(wq, w, &len);
	if (st) {
		if (!idle) {
			wq->blocked = true;
			return WAIT;
		}
		complete_unstarted(wq, w, st);
		return FINISHED;
	}
	/* FENCE: after every READ and atomic before it has completed. */
	if ((w->flags & RN_WQE_FENCE && wq->rd_atomic) ||
	    (rn_op_read_or_atomic(w->opcode) && wq->rd_atomic >= max_rd_atomic(qp))) {
		wq->blocked = true;
		return WAIT;
	}
	s = send_at(wq, wq->tail++);
	*s = (struct rn_wire_send){
		.pos = wq->sq_next,
		.len = len,
		.first_psn = wq->next_psn,
		.npsn = w->opcode == RN_OP_CMP_SWAP || w->opcode == RN_OP_FETCH_ADD ?
				1 :
				(uint32_t)(len ? (len + wq->mtu - 1) / wq->mtu : 1),
		.opcode = w->opcode,
		.nslots = w->nslots,
	};
	if (rn_op_read_or_atomic(w->opcode))
		wq->rd_atomic++;
	wq->next_psn = rn_pkt_psn_add(wq->next_psn, s->npsn);
	wq->sq_next = (wq->sq_next + w->nslots) & RN_DB_SEQ_MASK;
	wq->wqe_valid = true;
	return STARTED;
}

/* ---- packets ------------------------------------------------------------ */

/* Where a packet's payload comes from: the WQE's inline bytes or memory. */
struct gather {
	struct rn_wire_qp *wq;
	const struct rn_wire_send *s;
	uint64_t off;
	uint64_t ahead; /* bytes worth reading ahead */
};

/* The source of WQE w as one range of memory, if it is one. */
static bool one_range(struct rn_qp *qp, const struct rn_wqe *w,
		      struct rn_iovs *src)
{
	uint64_t total;

	return !(w->flags & RN_WQE_INLINE) && !rn_gather(qp, w, src, &total) &&
	       src->n == 1;
}

static bool stage_holds(const struct rn_wire_stage *st,
			const struct rn_wire_qp *wq, uint64_t pos, int mem,
			const struct iovec *range)
{
	uint64_t addr = (uintptr_t)range->iov_base;

	return st->wq == wq && st->mem == mem &&
	       ((pos - st->first_pos) & RN_DB_SEQ_MASK) <
		       ((st->end_pos - st->first_pos) & RN_DB_SEQ_MASK) &&
	       addr >= st->addr && addr - st->addr <= st->len &&
	       range->iov_len <= st->len - (addr - st->addr);
}

/*
 * Read ahead, in one call, from range (the rest of the source of WQE s, in
 * address space mem) over the WQEs posted after s whose sources follow on
 * in the same memory, into the
 * read stage.  Every WQE it covers was posted before the read, so its
 * source was final then and stays so until it completes: what the stage
 * holds is what it sends, retransmissions included.  False when there is
 * nothing to gain (range is all that follows on) or the read fails; the
 * packet is then read alone, which gives a failure its exact completion.
 */
static bool stage_read(struct rn_wire_qp *wq, const struct rn_wire_send *s,
		       int mem, const struct iovec *range, uint32_t len,
		       uint64_t ahead)
{
	struct rn_wire_stage *st = &rn_wire_of(wq)->read_stage;
	struct rn_qp *qp = wq->qp;
	uint64_t start = (uintptr_t)range->iov_base;
	uint64_t end = start + range->iov_len;
	uint64_t pos = (s->pos + s->nslots) & RN_DB_SEQ_MASK;
	struct rn_iovs src;
	struct iovec all;
	struct rn_wqe w;

	if (ahead > RN_WIRE_STAGE_SIZE)
		ahead = RN_WIRE_STAGE_SIZE;
	if (end - start > ahead)
		end = start + (ahead > len ? ahead : len);
	/* A fenced WQE's source may be what a READ or atomic still brings. */
	while (end - start < ahead && pos != qp->sq_prod &&
	       !rn_sq_fetch_at(qp, pos, &w) && !(w.flags & RN_WQE_FENCE) &&
	       (w.opcode == RN_OP_SEND || w.opcode == RN_OP_SEND_IMM ||
		w.opcode == RN_OP_SEND_INV || w.opcode == RN_OP_WRITE ||
		w.opcode == RN_OP_WRITE_IMM) &&
	       one_range(qp, &w, &src) && src.mem == mem &&
	       (uintptr_t)src.iov[0].iov_base == end &&
	       src.len <= ahead - (end - start)) {
		end += src.len;
		pos = (pos + w.nslots) & RN_DB_SEQ_MASK;
	}
	st->wq = NULL;
	if (end - start <= len)
		return false;
	all = (struct iovec){ range->iov_base, end - start };
	if (rn_mem_read(mem, &all, 1, st->buf))
		return false;
	st->wq = wq;
	st->mem = mem;
	st->addr = start;
	st->len = (uint32_t)(end - start);
	st->first_pos = s->pos;
	st->end_pos = pos;
	return true;
}

static enum rn_dma_status fill_payload(void *arg, uint8_t *dst, uint32_t len)
{
	struct gather *g = arg;
	struct rn_wire_qp *wq = g->wq;
	const struct rn_wqe *w = &wq->wqe;
	const struct rn_wire_stage *st = &rn_wire_of(wq)->read_stage;
	struct rn_iovs src, part;
	uint64_t total;

	if (w->flags & RN_WQE_INLINE) {
		memcpy(dst, w->inline_data + g->off, len);
		return RN_DMA_OK;
	}
	/* Resolved again for every packet: the MR may be gone since. */
	if (rn_gather(wq->qp, w, &src, &total) || g->off + len > total)
		return RN_DMA_SRC_FAULT;
	if (src.n == 1) {
		struct iovec rest = {
			(uint8_t *)src.iov[0].iov_base + g->off, total - g->off
		};
		struct iovec packet = { rest.iov_base, len };

		if (stage_holds(st, wq, g->s->pos, src.mem, &packet) ||
		    stage_read(wq, g->s, src.mem, &rest, len, g->ahead)) {
			memcpy(dst, st->buf + ((uintptr_t)packet.iov_base - st->addr),
			       len);
			return RN_DMA_OK;
		}
	}
	rn_iovs_sub(&src, g->off, len, &part);
	return rn_dma_from(&part, dst, len);
}

/* Build and queue the packet at send_psn of started WQE s. */
static enum rn_dma_status send_packet(struct rn_wire_qp *wq,
				      struct rn_wire_send *s, uint64_t now,
				      unsigned int budget)
{
	struct rn_qp *qp = wq->qp;
	const struct rn_wqe *w = &wq->wqe;
	uint32_t i = rn_pkt_psn_sub(wq->send_psn, s->first_psn);
	uint64_t off = (uint64_t)i * wq->mtu;
	/* A paced QP sends a few packets a turn: it reads no further ahead
	 * (other QPs' turns come between, and take the stage).
	 */
	struct gather g = { wq, s, off,
			    wq->cc.rate ? (uint64_t)budget * wq->mtu :
					  RN_WIRE_STAGE_SIZE };
	rn_wire_fill_fn fill = NULL;
	struct rn_pkt p = {
		.dqpn = qp->attr.dest_qp_num,
		.psn = wq->send_psn,
		.xrc_srqn = w->dest.remote_srqn,
	};
	uint32_t advance = 1;
	bool last = true;

	switch (w->opcode) {
	case RN_OP_READ:
		/* One request for the responses still missing of this part. */
		advance = rn_wire_read_part_end(s, i) - i;
		p.opcode = rn_op_opcode(wq->transport, RN_OP_READ);
		p.reth = (struct rn_pkt_reth){
			w->remote_addr + off, w->rkey,
			(uint32_t)(s->len - off < (uint64_t)advance * wq->mtu ?
					   s->len - off :
					   (uint64_t)advance * wq->mtu)
		};
		break;
	case RN_OP_CMP_SWAP:
	case RN_OP_FETCH_ADD:
		p.opcode = rn_op_opcode(wq->transport, w->opcode);
		p.atomic = rn_op_atomiceth(w);
		break;
	default:
		last = i == s->npsn - 1;
		p.opcode = rn_pkt_message_opcode(rn_op_opcode(wq->transport,
							      w->opcode),
						 i, s->npsn);
		p.payload_len = (uint32_t)(s->len - off < wq->mtu ? s->len - off :
								      wq->mtu);
		fill = fill_payload;
		if (i == 0)
			p.reth = (struct rn_pkt_reth){ w->remote_addr, w->rkey,
						       (uint32_t)s->len };
		if (last) {
			/* The WQE holds the immediate in network byte order. */
			p.imm = ntohl(w->imm_data);
			p.ieth_rkey = w->imm_data;
			p.se = w->flags & RN_WQE_SOLICITED;
		}
		break;
	}
	/* A paced QP's packets are spread out in time: each asks for its
	 * ACK, or the retransmit timer would run out before a message's last.
	 */
	if (reliable(wq) && (last || ++wq->noack >= RN_WIRE_ACKREQ_EVERY ||
			     wq->cc.rate)) {
		p.ackreq = true;
		wq->noack = 0;
	}
	switch (rn_wire_send(rn_wire_of(wq), &wq->peer, &p, fill, &g)) {
	case RN_DMA_OK:
		break;
	case RN_DMA_GONE:
		return RN_DMA_GONE;
	default:
		return RN_DMA_SRC_FAULT;
	}
	/* A part asked for the first time takes a READ credit; the first
	 * part's was taken when the READ started.
	 */
	if (w->opcode == RN_OP_READ && i >= s->asked) {
		if (i)
			wq->rd_atomic++;
		s->asked = i + advance;
	}
	rn_wire_cc_sent(wq, (uint32_t)rn_pkt_len(p.opcode, p.payload_len), now);
	wq->send_psn = rn_pkt_psn_add(wq->send_psn, advance);
	if (rn_pkt_psn_cmp(wq->send_psn, wq->sent_psn) > 0)
		wq->sent_psn = wq->send_psn;
	if (rn_pkt_psn_sub(wq->send_psn, s->first_psn) >= s->npsn) {
		wq->cur++;
		wq->wqe_valid = false;
	}
	if (reliable(wq))
		rn_wire_retrans_start(wq);
	return RN_DMA_OK;
}

/*
 * May the next packet of started WQE s (at send_psn) go now?  Not while
 * the window is full, nor, for a READ part asked for the first time,
 * while max_rd_atomic requests are unanswered.  A READ request goes when
 * the window has room for one more PSN, as a packet does: waiting for
 * room for all of its part kept fewer responses in flight, and cost
 * ib_read_bw 64 KiB a fifth of its rate.
 */
static bool may_send(const struct rn_wire_qp *wq, const struct rn_wire_send *s)
{
	uint32_t i = rn_pkt_psn_sub(wq->send_psn, s->first_psn);

	if (s->opcode == RN_OP_READ && i && i >= s->asked &&
	    wq->rd_atomic >= max_rd_atomic(wq->qp))
		return false;
	return !reliable(wq) ||
	       rn_pkt_psn_sub(wq->send_psn, wq->una) < RN_WIRE_WINDOW;
}

bool rn_wire_requester_run(struct rn_wire_qp *wq, uint64_t now,
			   unsigned int budget)
{
	struct rn_qp *qp = wq->qp;
	bool progress = false;

	while (budget && !wq->rnr_wait &&
	       (qp->attr.qp_state == IBV_QPS_RTS ||
		qp->attr.qp_state == IBV_QPS_SQD)) {
		struct rn_wire_send *s;

		if (wq->cur == wq->tail) {
			enum start r = start_next(wq);

			if (r == WAIT)
				break;
			progress = true;
			if (r == FINISHED)
				continue;
		}
		s = send_at(wq, wq->cur);
		if (!may_send(wq, s) || !rn_wire_cc_may_send(wq, now))
			break;
		if (!load_wqe(wq, s))
			return true;
		switch (send_packet(wq, s, now, budget)) {
		case RN_DMA_OK:
			break;
		case RN_DMA_GONE:
			return progress;
		default:
			/* Its local buffer is bad: it fails, in its turn. */
			if (wq->cur != wq->head) {
				wq->blocked = true;
				return progress;
			}
			rn_wire_complete_head(wq, IBV_WC_LOC_PROT_ERR, 0);
			return true;
		}
		budget--;
		progress = true;
		/* UC has nothing to wait for: sent is done. */
		if (!reliable(wq) && wq->cur != wq->head &&
		    !rn_wire_complete_head(wq, IBV_WC_SUCCESS,
					   (uint32_t)send_at(wq, wq->head)->len))
			return true;
	}
	return progress;
}

bool rn_wire_requester_busy(const struct rn_wire_qp *wq)
{
	const struct rn_qp *qp = wq->qp;

	if (wq->rnr_wait || wq->cc.paced ||
	    (qp->attr.qp_state != IBV_QPS_RTS &&
			     qp->attr.qp_state != IBV_QPS_SQD))
		return false;
	if (wq->cur != wq->tail)
		return may_send(wq, &wq->sends[wq->cur & wq->sends_mask]);
	return !wq->blocked && qp->attr.qp_state == IBV_QPS_RTS &&
	       wq->sq_next != qp->sq_prod;
}

/* Go back to psn (go-back-N), or forward to it after a late ACK. */
void rn_wire_requester_rewind(struct rn_wire_qp *wq, uint32_t psn)
{
	int64_t i = send_of(wq, psn);

	/* The first packet sent again asks for its ACK: one that arrives
	 * is progress at once (retry_cnt starts over), however much of the
	 * rest is lost again.
	 */
	wq->noack = RN_WIRE_ACKREQ_EVERY - 1;
	if (i < 0) {
		/* Past every started WQE: nothing of theirs to send. */
		wq->cur = wq->tail;
		wq->send_psn = wq->next_psn;
	} else {
		struct rn_wire_send *s = send_at(wq, (uint32_t)i);

		/* A READ is asked again from its first missing response. */
		if (s->opcode == RN_OP_READ &&
		    rn_pkt_psn_cmp(psn, rn_pkt_psn_add(s->first_psn, s->done)) < 0)
			psn = rn_pkt_psn_add(s->first_psn, s->done);
		if (wq->cur != (uint32_t)i)
			wq->wqe_valid = false;
		wq->cur = (uint32_t)i;
		wq->send_psn = psn;
	}
	rn_engine_schedule(wq->qp);
}

/* The slots the read stage is valid for mean other WQEs from now on. */
static void forget_stage(struct rn_wire_qp *wq)
{
	struct rn_wire_stage *st = &rn_wire_of(wq)->read_stage;

	if (st->wq == wq)
		st->wq = NULL;
}

void rn_wire_requester_start(struct rn_wire_qp *wq)
{
	struct rn_qp *qp = wq->qp;

	wq->next_psn = qp->attr.sq_psn & RN_PKT_MASK24;
	wq->una = wq->send_psn = wq->sent_psn = wq->next_psn;
	wq->sq_next = qp->sq_head;
	wq->head = wq->cur = wq->tail = 0;
	wq->rd_atomic = 0;
	wq->noack = 0;
	wq->blocked = false;
	wq->wqe_valid = false;
	wq->rnr_wait = false;
	wq->implied_nak = false;
	wq->retry_left = qp->attr.retry_cnt;
	wq->rnr_left = qp->attr.rnr_retry;
	rn_wire_cc_reset(wq);
	forget_stage(wq);
}

/* The QP left RTS/SQD for good: what was started is flushed by the SQ. */
void rn_wire_requester_stop(struct rn_wire_qp *wq)
{
	struct rn_timers *ts = &wq->qp->engine->timers;

	rn_timer_cancel(ts, &wq->retrans_timer);
	rn_timer_cancel(ts, &wq->rnr_timer);
	rn_wire_cc_reset(wq);
	wq->head = wq->cur = wq->tail = 0;
	wq->rd_atomic = 0;
	wq->rnr_wait = false;
	wq->wqe_valid = false;
	forget_stage(wq);
}
