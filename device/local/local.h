/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * local/: the transport for a QP whose peer is a QP of this device, and
 * for UD: a WQE executes whole, from the sender's memory into the
 * receiver's, with no packets (local.c); runs of SENDs and WRITEs move in
 * one copy (batch.c); UD datagrams go to a local QP or to the network
 * (ud.c).
 */
#ifndef RN_LOCAL_H
#define RN_LOCAL_H

#include "engine/datapath.h"

/* The local path's ops: every QP has them until it connects elsewhere. */
extern const struct rn_transport_ops rn_local_transport;

/* The engine's memory for the local path. */
int rn_local_init(struct rn_device *dev);

/* What the local path keeps of a QP (qp->local). */
struct rn_local_qp {
	uint8_t retry_left;
	uint8_t rnr_left;
	bool wqe_started; /* retry counters belong to the WQE at sq_head */
};

/* local.c: a QP's local state, from its creation to its end */
int rn_local_qp_add(struct rn_qp *qp);
void rn_local_qp_reset(struct rn_qp *qp);
void rn_local_qp_remove(struct rn_qp *qp);

/* local.c */
struct rn_qp *rn_local_peer(struct rn_qp *qp);
void rn_local_advance_psns(struct rn_qp *qp, struct rn_qp *dst, uint64_t len);

/* ud.c */
enum ibv_wc_status rn_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
			      uint32_t *byte_len);

/* batch.c */
bool rn_batchable(const struct rn_qp *qp, const struct rn_wqe *w);
unsigned int rn_batch_run(struct rn_qp *qp, unsigned int budget);

#endif
