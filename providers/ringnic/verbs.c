// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The device and port queries, protection domains and address handles. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ringnic.h"

/* ---- device and port ----------------------------------------------------- */

#define RN_ODP_RELIABLE                                                        \
	(IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV | IBV_ODP_SUPPORT_WRITE |  \
	 IBV_ODP_SUPPORT_READ | IBV_ODP_SUPPORT_ATOMIC)

int rn_query_device_ex(struct ibv_context *context,
		       const struct ibv_query_device_ex_input *input,
		       struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct rn_context *ctx = to_rn_ctx(context);
	const struct rn_device_attr *d = &ctx->attr;
	struct ibv_device_attr_ex a = {};

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;

	memcpy(a.orig_attr.fw_ver, d->fw_ver, sizeof(d->fw_ver));
	a.orig_attr.node_guid = d->node_guid;
	a.orig_attr.sys_image_guid = d->sys_image_guid;
	a.orig_attr.max_mr_size = d->max_mr_size;
	a.orig_attr.page_size_cap = d->page_size_cap;
	a.orig_attr.vendor_id = d->vendor_id;
	a.orig_attr.vendor_part_id = d->vendor_part_id;
	a.orig_attr.hw_ver = d->hw_ver;
	a.orig_attr.max_qp = d->max_qp;
	a.orig_attr.max_qp_wr = d->max_qp_wr;
	a.orig_attr.device_cap_flags = RN_DEVICE_CAP_FLAGS;
	a.orig_attr.max_sge = d->max_sge;
	a.orig_attr.max_sge_rd = d->max_sge;
	a.orig_attr.max_cq = d->max_cq;
	a.orig_attr.max_cqe = d->max_cqe;
	a.orig_attr.max_mr = d->max_mr;
	a.orig_attr.max_pd = d->max_pd;
	a.orig_attr.max_srq = d->max_srq;
	a.orig_attr.max_srq_wr = d->max_srq_wr;
	a.orig_attr.max_srq_sge = d->max_srq_sge;
	a.orig_attr.max_ah = d->max_ah;
	a.orig_attr.max_mw = d->max_mw;
	a.orig_attr.max_qp_rd_atom = d->max_qp_rd_atom;
	a.orig_attr.max_qp_init_rd_atom = d->max_qp_init_rd_atom;
	a.orig_attr.max_res_rd_atom = d->max_res_rd_atom;
	a.orig_attr.atomic_cap = IBV_ATOMIC_HCA;
	a.orig_attr.max_pkeys = RN_PKEY_TABLE_LEN;
	a.orig_attr.phys_port_cnt = RN_NUM_PORTS;
	/*
	 * Memory is never pinned: the device faults pages in as it copies,
	 * whatever the operation, and an implicit MR covers everything.
	 */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps = RN_ODP_RELIABLE;
	a.odp_caps.per_transport_caps.uc_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
		IBV_ODP_SUPPORT_WRITE;
	a.odp_caps.per_transport_caps.ud_odp_caps =
		IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	a.xrc_odp_caps = RN_ODP_RELIABLE;
	a.phys_port_cnt_ex = RN_NUM_PORTS;

	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

/* The port's state, MTU and counters are the device's. */
int rn_query_port(struct ibv_context *context, uint8_t port,
		  struct ibv_port_attr *attr)
{
	struct rn_ctl_query_port_req req = {
		.hdr.op = RN_CTL_QUERY_PORT,
		.port = port,
	};
	struct rn_ctl_query_port_resp resp;
	const struct rn_port_attr *p = &resp.attr;
	int ret;

	if (port != 1)
		return EINVAL;
	if (rn_kernel_mode(context))
		return rn_kernel_query_port(context, port, attr);
	ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
			  sizeof(resp), NULL, 0, NULL, 0);
	if (ret)
		return ret;
	memset(attr, 0, sizeof(*attr));
	attr->state = p->state;
	attr->phys_state = p->phys_state;
	attr->max_mtu = p->max_mtu;
	attr->active_mtu = p->active_mtu;
	attr->gid_tbl_len = p->gid_tbl_len;
	attr->max_msg_sz = p->max_msg_sz;
	attr->bad_pkey_cntr = p->bad_pkey_cntr;
	attr->qkey_viol_cntr = p->qkey_viol_cntr;
	attr->active_width = p->active_width;
	attr->active_speed = p->active_speed;
	attr->pkey_tbl_len = RN_PKEY_TABLE_LEN;
	attr->max_vl_num = 1;
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* ---- PD ------------------------------------------------------------------ */

struct ibv_pd *rn_alloc_pd(struct ibv_context *context)
{
	struct rn_ctl_alloc_pd_req req = { .hdr.op = RN_CTL_ALLOC_PD };
	struct rn_ctl_alloc_pd_resp resp;
	struct rn_pd *pd;
	int ret;

	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	if (rn_kernel_mode(context)) {
		ret = rn_kernel_alloc_pd(context, pd);
	} else {
		ret = rn_ctl_call(to_rn_ctx(context), &req, sizeof(req), &resp,
				  sizeof(resp), NULL, 0, NULL, 0);
		pd->handle = resp.pd;
		pd->ibv_pd.handle = resp.pd;
	}
	if (ret) {
		free(pd);
		errno = ret;
		return NULL;
	}
	return &pd->ibv_pd;
}

/* ibv_import_pd: a PD of the context, which ringnicd confirms it has. */
struct ibv_pd *rn_import_pd(struct ibv_context *context, uint32_t handle)
{
	struct rn_pd *pd;
	int ret;

	if (rn_kernel_mode(context)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	ret = rn_ctl_handle_call(context, RN_CTL_QUERY_PD, handle);
	if (ret) {
		errno = ret;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pd->handle = handle;
	pd->ibv_pd.handle = handle;
	pd->ibv_pd.context = context;
	return &pd->ibv_pd;
}

/* The PD stays in the context: only this process's object goes. */
void rn_unimport_pd(struct ibv_pd *ibpd)
{
	free(to_rn_pd(ibpd));
}

int rn_dealloc_pd(struct ibv_pd *ibpd)
{
	struct rn_pd *pd = to_rn_pd(ibpd);
	int ret = rn_kernel_mode(ibpd->context) ?
			  ibv_cmd_dealloc_pd(ibpd) :
			  rn_destroy_result(rn_ctl_handle_call(ibpd->context,
						     RN_CTL_DEALLOC_PD, pd->handle));

	if (!ret)
		free(pd);
	return ret;
}

/* ---- AH ------------------------------------------------------------------ */

struct ibv_ah *rn_create_ah(struct ibv_pd *ibpd, struct ibv_ah_attr *attr)
{
	struct rn_ctl_create_ah_req req = {
		.hdr.op = RN_CTL_CREATE_AH,
		.pd = to_rn_pd(ibpd)->handle,
		.attr = {
			.flow_label = attr->grh.flow_label,
			.dlid = attr->dlid,
			.sgid_index = attr->grh.sgid_index,
			.hop_limit = attr->grh.hop_limit,
			.traffic_class = attr->grh.traffic_class,
			.sl = attr->sl,
			.src_path_bits = attr->src_path_bits,
			.static_rate = attr->static_rate,
			.is_global = attr->is_global,
			.port_num = attr->port_num,
		},
	};
	struct rn_ctl_create_ah_resp resp;
	struct rn_ah *ah;
	int ret;

	memcpy(req.attr.dgid, attr->grh.dgid.raw, sizeof(req.attr.dgid));
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	if (rn_kernel_mode(ibpd->context))
		ret = rn_kernel_create_ah(ibpd, attr, ah, &req);
	else
		ret = rn_ctl_call(to_rn_ctx(ibpd->context), &req, sizeof(req),
				  &resp, sizeof(resp), NULL, 0, NULL, 0);
	if (ret) {
		free(ah);
		errno = ret;
		return NULL;
	}
	if (!rn_kernel_mode(ibpd->context))
		ah->handle = resp.handle;
	return &ah->ibv_ah;
}

int rn_destroy_ah(struct ibv_ah *ibah)
{
	struct rn_ah *ah = to_rn_ah(ibah);
	int ret = rn_kernel_mode(ibah->context) ?
			  rn_kernel_destroy_ah(ibah) :
			  rn_destroy_result(rn_ctl_handle_call(ibah->context,
							       RN_CTL_DESTROY_AH,
							       ah->handle));

	if (!ret)
		free(ah);
	return ret;
}
