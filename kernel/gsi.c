// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The kernel's own objects: the GSI QP (QP1) over which the kernel's MAD
 * layer runs its CM, and the PD, CQs and address handles it makes with
 * it (docs/rdma_cm.md, "Kernel mode").  This is what lets the kernel's
 * rdma_cm serve ringnic0 in kernel mode.
 *
 * The stub keeps those queues itself; it runs no protocol.  A send copies
 * the MAD out of the caller's buffers (DMA addresses are kernel virtual
 * addresses: the device has no DMA device) and hands it to ringnicd, which
 * sends it as a RoCEv2 UD packet from QP 1; it completes at once, as a
 * NIC's does once the packet left its buffers.  A datagram to QP 1 that
 * ringnicd received lands in the next posted receive buffer, behind the
 * 40-byte GRH area the kernel reads the sender's address from.
 *
 * Any other QP type of a kernel consumer is not offered (EOPNOTSUPP).
 */
#include <linux/if_vlan.h>
#include <linux/ip.h>
#include <linux/slab.h>
#include <net/ip.h>
#include <rdma/ib_cache.h>
#include <rdma/ib_mad.h>

#include "ringnic.h"

#define RN_GSI_MAX_WR 8192 /* ib_mad's queue sizes go up to IB_MAD_QP_MAX_SIZE */
#define RN_GSI_MAX_SEND_SGE 4
/* A RoCEv2 packet's bytes around the payload: UDP, BTH, DETH and ICRC. */
#define RN_GSI_UDP_OVERHEAD (8 + 12 + 8 + 4)

struct rn_kcq {
	spinlock_t lock; /* taken with interrupts off: post_send runs so */
	u32 size;
	u32 head;
	u32 count;
	u32 armed; /* 0, IB_CQ_SOLICITED or IB_CQ_NEXT_COMP */
	struct ib_wc wc[];
};

struct rn_gsi_recv {
	u64 wr_id;
	u64 addr;
	u32 length;
};

struct rn_gsi {
	struct rn_dev *dev;
	spinlock_t lock; /* the state and the receive queue */
	enum ib_qp_state state;
	bool sig_all;
	u32 qkey;
	u32 rq_size;
	u32 rq_head;
	u32 rq_count;
	struct rn_gsi_recv rq[];
};

static struct rn_cq *to_cq(struct ib_cq *ibcq)
{
	return container_of(ibcq, struct rn_cq, ibcq);
}

static struct rn_qp *to_qp(struct ib_qp *ibqp)
{
	return container_of(ibqp, struct rn_qp, ibqp);
}

/* ---- CQ --------------------------------------------------------------- */

int rn_kcq_create(struct rn_cq *cq, const struct ib_cq_init_attr *attr)
{
	struct rn_kcq *k;

	if (attr->flags || !attr->cqe || attr->cqe > RN_MAX_CQE)
		return -EINVAL;
	k = kvzalloc(struct_size(k, wc, attr->cqe), GFP_KERNEL);
	if (!k)
		return -ENOMEM;
	spin_lock_init(&k->lock);
	k->size = attr->cqe;
	cq->ibcq.cqe = attr->cqe;
	cq->kcq = k;
	return 0;
}

void rn_kcq_destroy(struct rn_cq *cq)
{
	kvfree(cq->kcq);
	cq->kcq = NULL;
}

/*
 * Queue a completion and notify the consumer if it asked to be.  Callers
 * may hold rn_lock or the QP's lock: the handler must not post, which
 * holds for ib_alloc_cq's, the only CQs the MAD layer makes (they queue
 * their polling).
 */
static void kcq_push(struct ib_cq *ibcq, const struct ib_wc *wc,
		     bool solicited)
{
	struct rn_kcq *k = to_cq(ibcq)->kcq;
	unsigned long flags;
	bool notify = false;

	spin_lock_irqsave(&k->lock, flags);
	if (k->count == k->size) {
		spin_unlock_irqrestore(&k->lock, flags);
		/* The consumer sized the CQ below its queues: its loss. */
		pr_warn_ratelimited("ringnic: kernel CQ overrun, completion lost\n");
		return;
	}
	k->wc[(k->head + k->count) % k->size] = *wc;
	k->count++;
	if (k->armed == IB_CQ_NEXT_COMP || (k->armed && solicited)) {
		k->armed = 0;
		notify = true;
	}
	spin_unlock_irqrestore(&k->lock, flags);
	if (notify && ibcq->comp_handler)
		ibcq->comp_handler(ibcq, ibcq->cq_context);
}

static int rn_poll_cq(struct ib_cq *ibcq, int n, struct ib_wc *wc)
{
	struct rn_kcq *k = to_cq(ibcq)->kcq;
	unsigned long flags;
	int i;

	if (!k)
		return -EOPNOTSUPP; /* an application's: it polls its ring */
	spin_lock_irqsave(&k->lock, flags);
	for (i = 0; i < n && k->count; i++) {
		wc[i] = k->wc[k->head];
		k->head = (k->head + 1) % k->size;
		k->count--;
	}
	spin_unlock_irqrestore(&k->lock, flags);
	return i;
}

static int rn_req_notify_cq(struct ib_cq *ibcq, enum ib_cq_notify_flags flags)
{
	struct rn_kcq *k = to_cq(ibcq)->kcq;
	unsigned long irq;
	int missed;

	if (!k)
		return -EOPNOTSUPP;
	spin_lock_irqsave(&k->lock, irq);
	k->armed = flags & IB_CQ_SOLICITED_MASK;
	missed = (flags & IB_CQ_REPORT_MISSED_EVENTS) && k->count;
	spin_unlock_irqrestore(&k->lock, irq);
	return missed;
}

/* ---- AH --------------------------------------------------------------- */

/* The MAD layer makes them in atomic context: nothing here sleeps. */
int rn_kah_init(struct rn_ah *ah, const struct rdma_ah_attr *a)
{
	const struct ib_global_route *grh = rdma_ah_read_grh(a);

	if (a->type != RDMA_AH_ATTR_TYPE_ROCE ||
	    !(rdma_ah_get_ah_flags(a) & IB_AH_GRH))
		return -EINVAL;
	ah->uc = NULL;
	memcpy(ah->kernel.dgid, grh->dgid.raw, sizeof(ah->kernel.dgid));
	ah->kernel.sgid_index = grh->sgid_index;
	ah->kernel.flow_label = grh->flow_label;
	ah->kernel.traffic_class = grh->traffic_class;
	ah->kernel.hop_limit = grh->hop_limit;
	return 0;
}

/* ---- the GSI QP ------------------------------------------------------- */

int rn_gsi_create(struct rn_qp *qp, struct ib_qp_init_attr *init)
{
	struct rn_dev *dev = to_rn_dev(qp->ibqp.device);
	struct ib_qp_cap *cap = &init->cap;
	struct rn_gsi *gsi;
	int ret = 0;

	if (init->port_num != 1 || init->srq || init->create_flags ||
	    !init->send_cq || !init->recv_cq ||
	    !to_cq(init->send_cq)->kcq || !to_cq(init->recv_cq)->kcq)
		return -EINVAL;
	if (cap->max_send_wr > RN_GSI_MAX_WR || cap->max_recv_wr > RN_GSI_MAX_WR ||
	    cap->max_send_sge > RN_GSI_MAX_SEND_SGE || cap->max_recv_sge > 1 ||
	    cap->max_inline_data)
		return -EINVAL;
	gsi = kvzalloc(struct_size(gsi, rq, max(cap->max_recv_wr, 1u)),
		       GFP_KERNEL);
	if (!gsi)
		return -ENOMEM;
	spin_lock_init(&gsi->lock);
	gsi->dev = dev;
	gsi->state = IB_QPS_RESET;
	gsi->sig_all = init->sq_sig_type == IB_SIGNAL_ALL_WR;
	gsi->rq_size = max(cap->max_recv_wr, 1u);
	cap->max_recv_sge = 1;
	qp->gsi = gsi;
	qp->ibqp.qp_num = 1;

	spin_lock(&rn_lock);
	if (dev->gsi)
		ret = -EBUSY;
	else
		dev->gsi = qp;
	spin_unlock(&rn_lock);
	if (ret) {
		kvfree(gsi);
		qp->gsi = NULL;
	}
	return ret;
}

/* Under gsi->lock: complete every posted receive with status. */
static void gsi_flush_locked(struct rn_qp *qp, enum ib_wc_status status)
{
	struct rn_gsi *gsi = qp->gsi;

	while (gsi->rq_count) {
		struct ib_wc wc = {
			.wr_id = gsi->rq[gsi->rq_head].wr_id,
			.status = status,
			.opcode = IB_WC_RECV,
			.qp = &qp->ibqp,
		};

		gsi->rq_head = (gsi->rq_head + 1) % gsi->rq_size;
		gsi->rq_count--;
		kcq_push(qp->ibqp.recv_cq, &wc, false);
	}
}

int rn_gsi_modify(struct rn_qp *qp, const struct ib_qp_attr *attr, int mask)
{
	struct rn_gsi *gsi = qp->gsi;
	unsigned long flags;

	if (mask & ~(IB_QP_STATE | IB_QP_CUR_STATE | IB_QP_PKEY_INDEX |
		     IB_QP_PORT | IB_QP_QKEY | IB_QP_SQ_PSN))
		return -EOPNOTSUPP;
	if ((mask & IB_QP_PKEY_INDEX && attr->pkey_index >= RN_PKEY_TABLE_LEN) ||
	    (mask & IB_QP_PORT && attr->port_num != 1))
		return -EINVAL;
	spin_lock_irqsave(&gsi->lock, flags);
	if (mask & IB_QP_QKEY)
		gsi->qkey = attr->qkey;
	if (mask & IB_QP_STATE) {
		gsi->state = attr->qp_state;
		if (gsi->state == IB_QPS_ERR)
			gsi_flush_locked(qp, IB_WC_WR_FLUSH_ERR);
		else if (gsi->state == IB_QPS_RESET)
			gsi->rq_count = 0;
	}
	spin_unlock_irqrestore(&gsi->lock, flags);
	return 0;
}

/* For `rdma resource show qp`, which asks every QP. */
int rn_gsi_query(struct rn_qp *qp, struct ib_qp_attr *attr,
		 struct ib_qp_init_attr *init)
{
	struct rn_gsi *gsi = qp->gsi;
	unsigned long flags;

	spin_lock_irqsave(&gsi->lock, flags);
	attr->qp_state = gsi->state;
	attr->cur_qp_state = gsi->state;
	attr->qkey = gsi->qkey;
	attr->port_num = 1;
	attr->cap.max_recv_wr = gsi->rq_size;
	attr->cap.max_recv_sge = 1;
	spin_unlock_irqrestore(&gsi->lock, flags);
	init->qp_type = IB_QPT_GSI;
	init->send_cq = qp->ibqp.send_cq;
	init->recv_cq = qp->ibqp.recv_cq;
	init->cap = attr->cap;
	init->sq_sig_type = gsi->sig_all ? IB_SIGNAL_ALL_WR : IB_SIGNAL_REQ_WR;
	return 0;
}

void rn_gsi_destroy(struct rn_qp *qp)
{
	struct rn_dev *dev = to_rn_dev(qp->ibqp.device);

	/* No datagram reaches it once it is not the device's (daemon.c). */
	spin_lock(&rn_lock);
	dev->gsi = NULL;
	spin_unlock(&rn_lock);
	kvfree(qp->gsi);
	qp->gsi = NULL;
}

static int gsi_post_send_one(struct rn_qp *qp, const struct ib_send_wr *wr)
{
	const struct ib_ud_wr *ud = ud_wr(wr);
	struct rn_gsi *gsi = qp->gsi;
	struct rn_kdev_gsi g = {};
	struct rn_ah *ah;
	int i;

	if (READ_ONCE(gsi->state) != IB_QPS_RTS || wr->opcode != IB_WR_SEND ||
	    wr->num_sge > RN_GSI_MAX_SEND_SGE || !ud->ah ||
	    ud->remote_qpn & ~IB_QPN_MASK)
		return -EINVAL;
	for (i = 0; i < wr->num_sge; i++) {
		const struct ib_sge *sge = &wr->sg_list[i];

		if (sge->length > RN_KDEV_MAD_MAX - g.len)
			return -EINVAL;
		/* A virtual-DMA device: the address is the kernel's own. */
		memcpy(g.mad + g.len, (void *)(uintptr_t)sge->addr, sge->length);
		g.len += sge->length;
	}
	ah = container_of(ud->ah, struct rn_ah, ibah);
	memcpy(g.gid, ah->kernel.dgid, sizeof(g.gid));
	g.sgid_index = ah->kernel.sgid_index;
	g.flow_label = ah->kernel.flow_label;
	g.traffic_class = ah->kernel.traffic_class;
	g.hop_limit = ah->kernel.hop_limit;
	g.remote_qpn = ud->remote_qpn;
	/* A Q_Key with its high bit set means the QP's own (IBA 10.2.5). */
	g.qkey = (int)ud->remote_qkey < 0 ? READ_ONCE(gsi->qkey) : ud->remote_qkey;
	rn_daemon_gsi_send(gsi->dev, &g);

	if (gsi->sig_all || wr->send_flags & IB_SEND_SIGNALED) {
		struct ib_wc wc = {
			.wr_id = wr->wr_id,
			.status = IB_WC_SUCCESS,
			.opcode = IB_WC_SEND,
			.byte_len = g.len,
			.qp = &qp->ibqp,
		};

		kcq_push(qp->ibqp.send_cq, &wc, false);
	}
	return 0;
}

static int rn_post_send(struct ib_qp *ibqp, const struct ib_send_wr *wr,
			const struct ib_send_wr **bad)
{
	struct rn_qp *qp = to_qp(ibqp);
	int ret = 0;

	if (!qp->gsi) {
		*bad = wr; /* an application's: it posts to its ring */
		return -EOPNOTSUPP;
	}
	for (; wr; wr = wr->next) {
		ret = gsi_post_send_one(qp, wr);
		if (ret) {
			*bad = wr;
			break;
		}
	}
	return ret;
}

static int rn_post_recv(struct ib_qp *ibqp, const struct ib_recv_wr *wr,
			const struct ib_recv_wr **bad)
{
	struct rn_gsi *gsi = to_qp(ibqp)->gsi;
	unsigned long flags;
	int ret = 0;

	if (!gsi) {
		*bad = wr;
		return -EOPNOTSUPP;
	}
	spin_lock_irqsave(&gsi->lock, flags);
	for (; wr; wr = wr->next) {
		struct rn_gsi_recv *r;

		if (gsi->state == IB_QPS_RESET || wr->num_sge != 1) {
			ret = -EINVAL;
		} else if (gsi->rq_count == gsi->rq_size) {
			ret = -ENOMEM;
		}
		if (ret) {
			*bad = wr;
			break;
		}
		r = &gsi->rq[(gsi->rq_head + gsi->rq_count) % gsi->rq_size];
		r->wr_id = wr->wr_id;
		r->addr = wr->sg_list[0].addr;
		r->length = wr->sg_list[0].length;
		gsi->rq_count++;
	}
	spin_unlock_irqrestore(&gsi->lock, flags);
	return ret;
}

/*
 * The 40-byte area before the MAD: the IPv6 header, which has a GRH's
 * layout, or 20 zero bytes and the IPv4 header.  ib_init_ah_attr_from_wc
 * reads the addresses from it to answer the sender.
 */
static void gsi_write_grh(void *area, const struct rn_kdev_gsi *g)
{
	u16 ip_payload = RN_GSI_UDP_OVERHEAD + g->len;

	memset(area, 0, sizeof(struct ib_grh));
	if (g->ipv4) {
		struct iphdr *ip = area + sizeof(struct ib_grh) - sizeof(*ip);

		ip->version = 4;
		ip->ihl = 5;
		ip->tos = g->traffic_class;
		ip->tot_len = cpu_to_be16(sizeof(*ip) + ip_payload);
		ip->ttl = g->hop_limit;
		ip->protocol = IPPROTO_UDP;
		memcpy(&ip->saddr, g->gid + 12, 4);
		memcpy(&ip->daddr, g->local_gid + 12, 4);
		ip->check = ip_fast_csum(ip, ip->ihl);
	} else {
		struct ib_grh *grh = area;

		grh->version_tclass_flow =
			cpu_to_be32(6 << 28 | g->traffic_class << 20 |
				    (g->flow_label & 0xfffff));
		grh->paylen = cpu_to_be16(ip_payload);
		grh->next_hdr = IPPROTO_UDP;
		grh->hop_limit = g->hop_limit;
		memcpy(grh->sgid.raw, g->gid, sizeof(grh->sgid.raw));
		memcpy(grh->dgid.raw, g->local_gid, sizeof(grh->dgid.raw));
	}
}

/*
 * The VLAN of the GID a datagram came to, as the core reads it back from
 * the completion to find that GID (ib_init_ah_attr_from_wc).
 */
static void gsi_wc_vlan(struct rn_dev *dev, const struct rn_kdev_gsi *g,
			struct ib_wc *wc)
{
	const struct ib_gid_attr *attr;
	u16 vlan_id = 0xffff;

	attr = rdma_get_gid_attr(&dev->ibdev, 1, g->sgid_index);
	if (IS_ERR(attr))
		return;
	if (!rdma_read_gid_l2_fields(attr, &vlan_id, NULL) && vlan_id < VLAN_N_VID) {
		wc->wc_flags |= IB_WC_WITH_VLAN;
		wc->vlan_id = vlan_id;
	}
	rdma_put_gid_attr(attr);
}

/*
 * Under rn_lock (daemon.c): a datagram ringnicd received for QP 1.  With
 * no receive posted it is dropped, as a NIC drops it.
 */
void rn_gsi_recv_locked(struct rn_dev *dev, const struct rn_kdev_gsi *g)
{
	struct rn_qp *qp = dev->gsi;
	struct rn_gsi_recv r;
	struct ib_wc wc = {
		.opcode = IB_WC_RECV,
		.byte_len = sizeof(struct ib_grh) + g->len,
		.src_qp = g->remote_qpn,
		.wc_flags = IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE,
		.network_hdr_type = g->ipv4 ? RDMA_NETWORK_IPV4 :
					      RDMA_NETWORK_IPV6,
		.port_num = 1,
	};
	unsigned long flags;

	if (!qp)
		return;
	spin_lock_irqsave(&qp->gsi->lock, flags);
	if (qp->gsi->state < IB_QPS_RTR || qp->gsi->state == IB_QPS_ERR ||
	    !qp->gsi->rq_count || g->qkey != qp->gsi->qkey) {
		spin_unlock_irqrestore(&qp->gsi->lock, flags);
		return;
	}
	r = qp->gsi->rq[qp->gsi->rq_head];
	qp->gsi->rq_head = (qp->gsi->rq_head + 1) % qp->gsi->rq_size;
	qp->gsi->rq_count--;
	spin_unlock_irqrestore(&qp->gsi->lock, flags);

	wc.wr_id = r.wr_id;
	wc.qp = &qp->ibqp;
	gsi_wc_vlan(dev, g, &wc);
	if (r.length < wc.byte_len) {
		wc.status = IB_WC_LOC_LEN_ERR;
	} else {
		gsi_write_grh((void *)(uintptr_t)r.addr, g);
		memcpy((void *)(uintptr_t)r.addr + sizeof(struct ib_grh),
		       g->mad, g->len);
		wc.status = IB_WC_SUCCESS;
	}
	kcq_push(qp->ibqp.recv_cq, &wc, false);
}

const struct ib_device_ops rn_kernel_ops = {
	.poll_cq = rn_poll_cq,
	.post_recv = rn_post_recv,
	.post_send = rn_post_send,
	.req_notify_cq = rn_req_notify_cq,
};
