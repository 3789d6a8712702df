/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the files that post work share: post.c builds send WQEs and rings
 * (ibv_post_send), wr.c is the ibv_wr_* API on top of the same builder,
 * recv.c posts receive WQEs (ibv_post_recv).
 */
#ifndef RINGNIC_POST_H
#define RINGNIC_POST_H

#include <infiniband/ringnicdv.h>

#include "kernel-abi/ringnic-ring.h"
#include "ringnic.h"

#define RN_SEND_FLAGS                                                          \
	(IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_FENCE |              \
	 IBV_SEND_INLINE | RINGNICDV_SEND_DEFER)

struct rn_context *rn_qp_ctx(struct rn_qp *qp);
enum ibv_qp_state rn_qp_state(const struct rn_qp *qp);
bool rn_sq_open(enum ibv_qp_state s);
uint8_t rn_wqe_flags(unsigned int send_flags);
int rn_fill_payload(struct rn_send_wqe *hdr, uint8_t *payload,
		    const struct ibv_sge *sge, int num_sge);
int rn_wqe_check(const struct rn_qp *qp, const uint8_t *buf,
		 const struct ibv_sge *sge);
uint8_t *rn_wqe_payload(const struct rn_qp *qp, uint8_t *buf);
void rn_wqe_set_bind(struct rn_send_wqe *hdr, uint32_t new_rkey,
		     const struct ibv_mw_bind_info *info);
void rn_wqe_write(struct rn_qp *qp, uint8_t *buf, unsigned int nslots);
bool rn_op_allowed(const struct rn_qp *qp, uint8_t op);
bool rn_sq_has_room(const struct rn_qp *qp, uint32_t nslots);
void rn_post_done(struct rn_qp *qp, bool ring);

#endif
