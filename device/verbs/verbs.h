/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * verbs/: the objects' control operations, as the control socket and the
 * kernel device ask for them: what ibv_alloc_pd .. ibv_destroy_qp do.
 */
#ifndef RN_VERBS_H
#define RN_VERBS_H

#include "engine/engine.h"

/* device.c: the device's layers set up; a client's objects torn down */
int rn_device_setup(struct rn_device *dev, uint64_t guid);
bool rn_client_release(struct rn_client *client);
/* Free the retired members of ctx that no object names any more. */
void rn_context_prune(struct rn_context *ctx);

/* pd.c */
int rn_pd_alloc(struct rn_client *client, uint32_t *handle);
int rn_pd_dealloc(struct rn_client *client, uint32_t handle);
int rn_pd_query(struct rn_client *client, uint32_t handle);

/* mr.c: memory regions and windows */
int rn_mr_reg(struct rn_client *client, const struct rn_ctl_reg_mr_req *req,
	      struct rn_ctl_reg_mr_resp *resp);
int rn_mr_rereg(struct rn_client *client, const struct rn_ctl_rereg_mr_req *req,
		struct rn_ctl_rereg_mr_resp *resp);
int rn_mr_dereg(struct rn_client *client, uint32_t handle);
int rn_mr_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_mr_resp *resp);
void rn_mr_release(struct rn_mr *mr);
int rn_mw_alloc(struct rn_client *client, const struct rn_ctl_alloc_mw_req *req,
		struct rn_ctl_alloc_mw_resp *resp);
int rn_mw_dealloc(struct rn_client *client, uint32_t handle);
void rn_mw_release(struct rn_mw *mw);

/* cq.c */
int rn_cq_create(struct rn_client *client, const struct rn_ctl_create_cq_req *req,
		 struct rn_ctl_create_cq_resp *resp, int *channel, int *memfd);
int rn_cq_resize(struct rn_client *client, const struct rn_ctl_resize_cq_req *req,
		 struct rn_ctl_resize_cq_resp *resp, int *memfd);
int rn_cq_destroy(struct rn_client *client, uint32_t handle);
void rn_cq_release(struct rn_cq *cq);

/* ah.c */
int rn_ah_create(struct rn_client *client, const struct rn_ctl_create_ah_req *req,
		 struct rn_ctl_create_ah_resp *resp);
int rn_ah_destroy(struct rn_client *client, uint32_t handle);

/* srq.c */
int rn_srq_create(struct rn_client *client, const struct rn_ctl_create_srq_req *req,
		  struct rn_ctl_create_srq_resp *resp, int *memfd);
int rn_srq_modify(struct rn_client *client, const struct rn_ctl_modify_srq_req *req,
		  struct rn_ctl_modify_srq_resp *resp, int *memfd);
int rn_srq_query(struct rn_client *client, uint32_t handle,
		 struct rn_ctl_query_srq_resp *resp);
int rn_srq_destroy(struct rn_client *client, uint32_t handle);
void rn_srq_release(struct rn_srq *srq);

/* xrcd.c */
int rn_xrcd_open(struct rn_client *client, const struct rn_ctl_open_xrcd_req *req,
		 int fd, struct rn_ctl_open_xrcd_resp *resp);
int rn_xrcd_close(struct rn_client *client, uint32_t handle);
void rn_xrcd_release(struct rn_client *client, uint32_t handle);
struct rn_xrcd *rn_xrcd_of(struct rn_client *client, uint32_t handle);
void rn_xrcd_get(struct rn_xrcd *x);
void rn_xrcd_put(struct rn_device *dev, struct rn_xrcd *x);

/* qp.c */
int rn_qp_create(struct rn_client *client, const struct rn_ctl_create_qp_req *req,
		 struct rn_ctl_create_qp_resp *resp, int *memfd);
int rn_qp_open(struct rn_client *client, const struct rn_ctl_open_qp_req *req,
	       struct rn_ctl_open_qp_resp *resp);
int rn_qp_modify(struct rn_client *client, const struct rn_ctl_modify_qp_req *req);
int rn_qp_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_qp_resp *resp);
int rn_qp_destroy(struct rn_client *client, uint32_t handle);
void rn_qp_release(struct rn_client *client, uint32_t handle);

/* qp_counter.c: QP counters (rdma statistic qp) */
extern const char *const rn_qp_count_names[RN_QP_COUNTS];
void rn_qp_counters_init(struct rn_device *dev);
/* Auto mode for QPs that leave RESET from now: RDMA_COUNTER_MASK_*, 0 off. */
int rn_qp_counter_set_auto(struct rn_device *dev, uint32_t mask);
/* QP qpn to counter *id (existing), or to a new one: then its id in *id. */
int rn_qp_counter_bind(struct rn_device *dev, uint32_t qpn, bool existing,
		       uint32_t *id);
int rn_qp_counter_unbind(struct rn_device *dev, uint32_t qpn, uint32_t id);
struct rn_qp_counter *rn_qp_counter_by_id(struct rn_device *dev, uint32_t id);
/* The QP left RESET (auto mode binds it), or goes. */
void rn_qp_counter_qp_ready(struct rn_qp *qp);
void rn_qp_counter_qp_gone(struct rn_qp *qp);
/* The counter's sums, in rn_qp_count_names' order. */
void rn_qp_counter_values(const struct rn_qp_counter *c,
			  uint64_t v[RN_QP_COUNTS]);

#endif
