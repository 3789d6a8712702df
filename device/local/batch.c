// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Moving a small message costs a system call on each side, whatever its
 * size.  A run of SENDs and WRITEs of one QP (to one peer) is moved
 * together: their sources gathered into the staging buffer, their
 * destinations (remote ranges, or the receive WQEs SENDs and immediates
 * consume) scattered from it, one call per range (core/memory.c), adjacent
 * ranges merged, so that a run over consecutive addresses costs two calls
 * in all.  Only runs where every WQE is valid, every receive WQE is there
 * and the copy succeeds whole are done this way; anything else goes
 * through execute() one WQE at a time (local.c), which gives each error
 * its exact completion.  Nothing is consumed or completed before the copy
 * succeeded, and a copy can be redone, so falling back after a failed
 * batch copy is safe.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "local/local.h"

#define RN_BATCH_WQES 64
#define RN_BATCH_IOVS 1024 /* ranges gathered, and scattered */

struct rn_batch {
	struct rn_wqe w[RN_BATCH_WQES];
	struct rn_rwqe r[RN_BATCH_WQES]; /* the receive WQE a WQE consumes */
	uint64_t len[RN_BATCH_WQES];
	struct iovec src[RN_BATCH_IOVS];
	struct iovec dst[RN_BATCH_IOVS];
	unsigned int n, nsrc, ndst;
	/* The address spaces src and dst are in (struct rn_iovs' mem): a
	 * WQE whose memory is another process's starts a batch of its own.
	 */
	int src_mem, dst_mem;
	uint64_t bytes;
	struct rn_responder resp; /* what the requests reach */
	uint32_t rq_pos; /* the responder's next receive WQE */
	bool inline_data;
};

int rn_local_init(struct rn_engine *e)
{
	e->batch = malloc(sizeof(*e->batch));
	return e->batch ? 0 : ENOMEM;
}

/* Append to an iovec list, merging with the last entry when adjacent. */
static bool iov_append(struct iovec *v, unsigned int *n, void *base, size_t len)
{
	if (!len)
		return true;
	if (*n && (char *)v[*n - 1].iov_base + v[*n - 1].iov_len == base) {
		v[*n - 1].iov_len += len;
		return true;
	}
	if (*n == RN_BATCH_IOVS)
		return false;
	v[*n].iov_base = base;
	v[*n].iov_len = len;
	(*n)++;
	return true;
}

/* Append the first len bytes of a resolved list. */
static bool iovs_append(struct iovec *v, unsigned int *n,
			const struct rn_iovs *from, uint64_t len)
{
	unsigned int i;

	for (i = 0; i < from->n && len; i++) {
		size_t part = from->iov[i].iov_len < len ? from->iov[i].iov_len : len;

		if (!iov_append(v, n, from->iov[i].iov_base, part))
			return false;
		len -= part;
	}
	return true;
}

static bool consumes_receive(uint8_t op)
{
	return op == RN_OP_SEND || op == RN_OP_SEND_IMM || op == RN_OP_WRITE_IMM;
}

/* Where the data of w goes at the responder, if every check would pass. */
static bool batch_destination(struct rn_batch *b, const struct rn_wqe *w,
			      uint64_t len, struct rn_iovs *to)
{
	const struct rn_responder *resp = &b->resp;
	struct rn_rwqe *r = &b->r[b->n];

	if (consumes_receive(w->opcode) &&
	    rn_rq_at(resp->rq, b->rq_pos, r) != RN_RQ_OK)
		return false;
	if (w->opcode == RN_OP_SEND || w->opcode == RN_OP_SEND_IMM)
		return !rn_scatter_resolve(resp->client, resp->buf_pd, r->sge,
					   r->num_sge, len, to);
	return rn_remote_resolve(&resp->target, w->remote_addr, w->rkey, len,
				 IBV_ACCESS_REMOTE_WRITE, to);
}

/* Add w (fetched into b->w[b->n]) if it fits and every check would pass. */
static bool batch_add(struct rn_batch *b, struct rn_qp *qp, const struct rn_wqe *w)
{
	unsigned int nsrc = b->nsrc, ndst = b->ndst;
	struct rn_iovs src, to;
	uint64_t len;

	if (!rn_batchable(qp, w) ||
	    (b->n && !(w->flags & RN_WQE_INLINE) != !b->inline_data))
		return false;
	if (rn_gather(qp, w, &src, &len) || b->bytes + len > RN_BOUNCE_SIZE ||
	    !batch_destination(b, w, len, &to))
		return false;
	if (b->n && ((!b->inline_data && src.mem != b->src_mem) ||
		     to.mem != b->dst_mem))
		return false;
	if (!(w->flags & RN_WQE_INLINE) && !iovs_append(b->src, &nsrc, &src, len))
		return false;
	if (!iovs_append(b->dst, &ndst, &to, len))
		return false;
	b->nsrc = nsrc;
	b->ndst = ndst;
	b->src_mem = src.mem;
	b->dst_mem = to.mem;
	b->inline_data = w->flags & RN_WQE_INLINE;
	b->len[b->n] = len;
	b->bytes += len;
	if (consumes_receive(w->opcode))
		b->rq_pos += b->r[b->n].nslots;
	b->n++;
	return true;
}

/* Gather everything into the bounce buffer, scatter it out. */
static bool batch_copy(struct rn_batch *b, struct rn_qp *qp)
{
	uint8_t *bounce = qp->engine->bounce;
	uint64_t off = 0;
	unsigned int i;

	if (!b->bytes)
		return true;
	if (b->inline_data) {
		for (i = 0; i < b->n; i++) {
			memcpy(bounce + off, b->w[i].inline_data, b->len[i]);
			off += b->len[i];
		}
	} else if (rn_mem_read(b->src_mem, b->src, b->nsrc, bounce)) {
		return false;
	}
	return !rn_mem_write(b->dst_mem, b->dst, b->ndst, bounce);
}

/* SENDs and WRITEs of connected QPs that need no more than their peer. */
bool rn_batchable(const struct rn_qp *qp, const struct rn_wqe *w)
{
	return (qp->qp_type == IBV_QPT_RC || qp->qp_type == IBV_QPT_UC) &&
	       w->opcode <= RN_OP_WRITE_IMM;
}

/*
 * Execute the run of SENDs and WRITEs at sq_head as one batch, up to
 * 'budget' WQEs.  Returns how many were completed; 0 leaves them to
 * execute().  Completions come in the order execute() would give them.
 * A completion can fail either QP (its CQ overran): a QP in ERR has
 * flushed its queues, so the batch ends after that WQE.  The rest is the
 * flush's, or execute()'s when only the responder failed (it then finds
 * no responder, as it would have for them one at a time).
 */
unsigned int rn_batch_run(struct rn_qp *qp, unsigned int budget)
{
	struct rn_batch *b = qp->engine->batch;
	struct rn_qp *dst = rn_local_peer(qp);
	uint64_t pos = qp->sq_head;
	unsigned int i;

	if (!dst || !rn_responder_of(dst, 0, &b->resp))
		return 0;
	b->n = b->nsrc = b->ndst = 0;
	b->bytes = 0;
	b->rq_pos = b->resp.rq->head;
	while (b->n < RN_BATCH_WQES && b->n < budget && pos != qp->sq_prod) {
		struct rn_wqe *w = &b->w[b->n];

		if (rn_sq_fetch_at(qp, pos, w) || !batch_add(b, qp, w))
			break;
		pos = (pos + w->nslots) & RN_DB_SEQ_MASK;
	}
	if (b->n < 2 || !batch_copy(b, qp))
		return 0;
	for (i = 0; i < b->n; i++) {
		const struct rn_wqe *w = &b->w[i];

		rn_local_advance_psns(qp, dst, b->len[i]);
		if (consumes_receive(w->opcode)) {
			struct rn_recv_result res = rn_recv_result_of(
				w, w->opcode == RN_OP_WRITE_IMM ?
					   IBV_WC_RECV_RDMA_WITH_IMM :
					   IBV_WC_RECV,
				b->len[i], qp->qpn);

			rn_recv_complete(&b->resp, &b->r[i], &res);
		}
		/* dst may be qp: then its flush retired w already. */
		if (qp->attr.qp_state == IBV_QPS_RTS)
			rn_sq_complete(qp, w, IBV_WC_SUCCESS, b->len[i]);
		if (qp->attr.qp_state != IBV_QPS_RTS || !rn_qp_receiving(dst))
			return i + 1;
	}
	return b->n;
}

