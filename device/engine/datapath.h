/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the engine gives its transports (local/, wire/):
 *   sq.c      send queues: fetching WQEs, retiring and completing them
 *   rq.c      receive queues (a QP's or an SRQ's): taking receive WQEs,
 *             completing receives; what a request reaches at a responder
 *   access.c  a WQE's addresses resolved against MRs and windows
 *   mw.c      binding and invalidating memory windows
 *   ud.c      UD receives: Q_Keys, the GRH, the receive completion
 */
#ifndef RN_DATAPATH_H
#define RN_DATAPATH_H

#include "core/memory.h"
#include "engine/engine.h"
#include "engine/wqe.h"
#include "roce/ip.h"
#include "roce/packet.h"

/* An operation whose responder answers with data: a READ or an atomic. */
static inline bool rn_op_read_or_atomic(uint8_t op)
{
	return op == RN_OP_READ || op == RN_OP_CMP_SWAP || op == RN_OP_FETCH_ADD;
}

/* The transport, as opcodes name it, of a QP type's packets. */
static inline enum rn_pkt_transport rn_qp_transport(enum ibv_qp_type type)
{
	switch (type) {
	case IBV_QPT_UC:
		return RN_PKT_UC;
	case IBV_QPT_UD:
		return RN_PKT_UD;
	case IBV_QPT_XRC_SEND:
	case IBV_QPT_XRC_RECV:
		return RN_PKT_XRC;
	default:
		return RN_PKT_RC;
	}
}

/*
 * The opcode of the packet that carries operation op (RN_OP_*) as a
 * message by itself on transport t: SEND_ONLY, WRITE_ONLY_IMM,
 * READ_REQUEST, FETCH_ADD...; rn_pkt_message_opcode gives the others.
 */
static inline uint8_t rn_op_opcode(enum rn_pkt_transport t, uint8_t op)
{
	switch (op) {
	case RN_OP_SEND_IMM:
		return t | RN_PKT_OP_SEND_ONLY_IMM;
	case RN_OP_SEND_INV:
		return t | RN_PKT_OP_SEND_ONLY_INV;
	case RN_OP_WRITE:
		return t | RN_PKT_OP_WRITE_ONLY;
	case RN_OP_WRITE_IMM:
		return t | RN_PKT_OP_WRITE_ONLY_IMM;
	case RN_OP_READ:
		return t | RN_PKT_OP_READ_REQUEST;
	case RN_OP_CMP_SWAP:
		return t | RN_PKT_OP_COMPARE_SWAP;
	case RN_OP_FETCH_ADD:
		return t | RN_PKT_OP_FETCH_ADD;
	default:
		return t | RN_PKT_OP_SEND_ONLY;
	}
}

/* The AtomicETH of an atomic WQE. */
static inline struct rn_pkt_atomiceth rn_op_atomiceth(const struct rn_wqe *w)
{
	bool cas = w->opcode == RN_OP_CMP_SWAP;

	return (struct rn_pkt_atomiceth){
		.va = w->remote_addr,
		.rkey = w->rkey,
		.swap_add = cas ? w->swap : w->compare_add,
		.compare = cas ? w->compare_add : 0,
	};
}

/*
 * What a NAK that refuses a request means, as rxe gives it, by its AETH
 * code (enum rn_fault_nak's values; REM_OP and any other code: rxe's
 * "unexpected NAK"): the requester's completion status and counter, the
 * responder's async event.
 */
static inline enum ibv_wc_status rn_nak_status(unsigned int code)
{
	return code == RN_FAULT_NAK_INV_REQ    ? IBV_WC_REM_INV_REQ_ERR :
	       code == RN_FAULT_NAK_REM_ACCESS ? IBV_WC_REM_ACCESS_ERR :
						 IBV_WC_REM_OP_ERR;
}

static inline enum rn_counter rn_nak_counter(unsigned int code)
{
	return code == RN_FAULT_NAK_INV_REQ    ? RN_CNT_NAK_INV_REQ :
	       code == RN_FAULT_NAK_REM_ACCESS ? RN_CNT_NAK_ACCESS :
						 RN_CNT_NAK_OP;
}

static inline enum ibv_event_type rn_nak_event(unsigned int code)
{
	return code == RN_FAULT_NAK_INV_REQ    ? IBV_EVENT_QP_REQ_ERR :
	       code == RN_FAULT_NAK_REM_ACCESS ? IBV_EVENT_QP_ACCESS_ERR :
						 IBV_EVENT_QP_FATAL;
}

/* sq.c */
int rn_sq_fetch_at(struct rn_qp *qp, uint64_t pos, struct rn_wqe *w);
int rn_sq_fetch(struct rn_qp *qp, struct rn_wqe *w);
void rn_sq_complete(struct rn_qp *qp, const struct rn_wqe *w,
		    enum ibv_wc_status status, uint32_t byte_len);
void rn_sq_flush(struct rn_qp *qp);

/* Whose an rkey must be, and what the QP it arrives on allows. */
struct rn_target {
	struct rn_client *client;
	struct rn_pd *pd;
	uint32_t qp_access; /* the QP's qp_access_flags */
	uint32_t qpn; /* type 2 windows must be bound through this QP */
};

/* rq.c */
enum rn_rq_status { RN_RQ_OK, RN_RQ_EMPTY, RN_RQ_BAD };

/*
 * What a request reaches at the responder: the QP, where its receive WQEs
 * come from and complete, whose memory they describe, and the PDs that
 * receive buffers and rkeys are checked against.
 */
struct rn_responder {
	struct rn_qp *qp; /* the receiving QP: qp_num of its CQEs */
	struct rn_srq *srq; /* the SRQ its receives come from, or NULL */
	struct rn_rq *rq; /* qp->rq or &srq->rq */
	struct rn_cq *cq;
	struct rn_client *client; /* the owner of the buffers */
	struct rn_pd *buf_pd; /* receive buffers */
	struct rn_target target; /* RDMA and atomics */
};

/* The responder a request for dst reaches (srqn: XRC's SRQ number). */
bool rn_responder_of(struct rn_qp *dst, uint32_t srqn, struct rn_responder *r);
enum rn_rq_status rn_rq_at(const struct rn_rq *rq, uint32_t pos,
			   struct rn_rwqe *r);
enum rn_rq_status rn_rq_next(const struct rn_rq *rq, struct rn_rwqe *r);

/* A receive completion, from what the message said. */
struct rn_recv_result {
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t src_qp;
	uint32_t imm_or_key; /* the immediate, or the invalidated rkey */
	uint8_t flags; /* enum rn_cqe_flags */
	uint8_t sl;
	bool solicited;
};

/* Take the receive WQE r (the next one) and write its completion. */
void rn_recv_complete(const struct rn_responder *resp, const struct rn_rwqe *r,
		      const struct rn_recv_result *res);
/* The same in two steps, for a message that arrives in several packets. */
void rn_rq_consume(const struct rn_responder *resp, const struct rn_rwqe *r);
void rn_recv_finish(const struct rn_responder *resp, const struct rn_rwqe *r,
		    const struct rn_recv_result *res);
/* The result of a message that carried w (its immediate, solicitation). */
struct rn_recv_result rn_recv_result_of(const struct rn_wqe *w,
					enum ibv_wc_opcode opcode,
					uint32_t byte_len, uint32_t src_qp);
void rn_rq_flush(struct rn_qp *qp);

/* access.c */
struct rn_mr *rn_mr_lookup(struct rn_device *dev, uint32_t key);
struct rn_mw *rn_mw_lookup(struct rn_device *dev, uint32_t key);
enum ibv_wc_status rn_sgl_resolve(struct rn_client *client, struct rn_pd *pd,
				  const struct rn_sge *sge, unsigned int n,
				  uint32_t access, struct rn_iovs *out);
/* The list fails only because it lies in memory unmapped under its MRs. */
bool rn_sgl_gone(struct rn_client *client, struct rn_pd *pd,
		 const struct rn_sge *sge, unsigned int n);
enum ibv_wc_status rn_scatter_resolve(struct rn_client *client,
				      struct rn_pd *pd,
				      const struct rn_sge *sge, unsigned int n,
				      uint64_t reach, struct rn_iovs *out);
/*
 * The responder's range for an RDMA access, false when refused.  A WRITE
 * into memory unmapped under an MR succeeds there and goes nowhere
 * (RN_MEM_NOWHERE).  out->guarded says whether a fault in the copy that
 * follows is such memory too, unmapped since: the caller's to take alike.
 */
bool rn_remote_resolve(const struct rn_target *t, uint64_t addr, uint32_t rkey,
		       uint64_t len, uint32_t access, struct rn_iovs *out);
enum ibv_wc_status rn_gather(struct rn_qp *qp, const struct rn_wqe *w,
			     struct rn_iovs *src, uint64_t *len);
/*
 * An atomic at the responder, on the 8 bytes 'remote' names: fetch and
 * add 'operand', or compare with 'operand' and swap in 'swap'.  *old gets
 * what was there.  Atomic with respect to every atomic of the device, on
 * whichever engine (IBV_ATOMIC_HCA).
 */
enum rn_dma_status rn_atomic_apply(struct rn_device *dev,
				   const struct rn_iovs *remote, bool fetch_add,
				   uint64_t operand, uint64_t swap, uint64_t *old);

/* mw.c */
/*
 * With several engines a window's state is changed (bind, invalidation)
 * and read (an rkey through it) under dev->mw_lock: an XRC target, engine
 * 0's, reaches the windows of its SRQ's context, which another engine
 * binds.  One engine needs no lock.
 */
static inline void rn_windows_lock(struct rn_device *dev)
{
	if (dev->nengines > 1)
		pthread_mutex_lock(&dev->mw_lock);
}

static inline void rn_windows_unlock(struct rn_device *dev)
{
	if (dev->nengines > 1)
		pthread_mutex_unlock(&dev->mw_lock);
}

enum ibv_wc_status rn_mw_bind(struct rn_qp *qp, const struct rn_wqe *w);
enum ibv_wc_status rn_local_invalidate(struct rn_qp *qp, uint32_t rkey);
/* SEND_WITH_INV at the responder: 0, or -1 when the key is not valid. */
int rn_remote_invalidate(const struct rn_responder *resp, uint32_t rkey);

/* ud.c: rn_ud_write_grh takes the IP header the datagram had (or would
 * have had) on the wire.
 */
#define RN_GRH_LEN 40

/* Where a datagram goes at its receiver. */
struct rn_ud_rx {
	struct rn_responder resp;
	struct rn_rwqe rwqe;
	struct rn_iovs dsts;
};

/*
 * The UD QP qpn, taking a datagram of len bytes with this Q_Key now: its
 * receive WQE, resolved.  False when it is dropped (counted).
 */
bool rn_ud_receiver(struct rn_engine *e, uint32_t qpn, uint32_t qkey,
		    uint64_t len, struct rn_ud_rx *rx);
/* Write the GRH area; *payload is where the datagram goes after it. */
enum rn_dma_status rn_ud_write_grh(struct rn_ud_rx *rx,
				   const struct rn_ip_fields *h,
				   struct rn_iovs *payload);
/* The receive completes (st: how writing it went). */
void rn_ud_complete(struct rn_ud_rx *rx, enum rn_dma_status st,
		    struct rn_recv_result *res, bool ipv4);

#endif
