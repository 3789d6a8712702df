// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The local path in packet captures (engine/capture.h).  A WQE between two
 * QPs of this device moves no packets, so a capture gets the RoCEv2
 * packets its try would have been between two hosts: the requests at the
 * path MTU with the requester's PSNs, opcodes and extension headers, then
 * the responder's answer (an ACK with its MSN, a NAK, an RNR NAK, the
 * READ responses, an atomic ACK), each with IP and UDP headers from the
 * QPs' address vectors and a valid ICRC.  A retry shows its requests
 * again.  Payloads are read when the capture takes them: a SEND's or a
 * WRITE's from the requester's gather list, a READ's from where its
 * responses went.
 *
 * What a wire would add is not made up: every message is acknowledged
 * (no coalesced ACKs), and faults injected on the local path change how a
 * try ends, not which packets the capture shows.
 */
#include <string.h>

#include "engine/capture.h"
#include "local/local.h"
#include "roce/icrc.h"

/* Linux's default TTL, for an address vector that gives none. */
#define DEFAULT_HOP_LIMIT 64
/* A packet's BTH, extension headers, payload at the largest MTU, ICRC. */
#define PKT_MAX (64 + 4096 + RN_PKT_ICRC_BYTES)

/* Who a packet goes from and to, and its IP header. */
struct flow {
	uint32_t qpn; /* the sender, a QP of ours */
	uint32_t peer_qpn; /* the receiver, when it is ours */
	uint32_t keep; /* bytes from the IP header on that a capture keeps */
	uint8_t sgid[RN_GID_LEN];
	uint8_t dgid[RN_GID_LEN];
	struct rn_ip_fields ip;
};

/* The packets of a QP to its peer, addressed as its address vector says
 * (its source GID, else the port's first; its destination, else itself);
 * false when no capture keeps them.
 */
static bool flow_of(const struct rn_qp *qp, int sgid_index,
		    const struct rn_ah_attr *ah, uint32_t peer_qpn,
		    struct flow *f)
{
	struct rn_device *dev = qp->client->dev;

	if (sgid_index < 0)
		sgid_index = rn_port_gid_first(dev);
	if (sgid_index >= 0)
		memcpy(f->sgid, dev->port.gids[sgid_index].raw, RN_GID_LEN);
	else
		memset(f->sgid, 0, RN_GID_LEN);
	memcpy(f->dgid, rn_gid_is_zero(ah->dgid) ? f->sgid : ah->dgid,
	       RN_GID_LEN);
	f->qpn = qp->qpn;
	f->peer_qpn = peer_qpn;
	f->keep = rn_capture_wanted(dev, qp->qpn, peer_qpn);
	f->ip = (struct rn_ip_fields){
		.sgid = f->sgid,
		.dgid = f->dgid,
		.tclass = ah->traffic_class,
		.hop_limit = ah->hop_limit ? ah->hop_limit : DEFAULT_HOP_LIMIT,
		.flow_label = ah->flow_label,
	};
	return f->keep != 0;
}

static bool connected_flow(const struct rn_qp *qp, struct flow *f)
{
	return flow_of(qp, qp->sgid, &qp->attr.ah_attr, qp->attr.dest_qp_num,
		       f);
}

static bool ipv4(const struct flow *f)
{
	return rn_gid_is_ipv4(f->sgid) && rn_gid_is_ipv4(f->dgid);
}

/* The bytes of a packet's payload that a capture keeps. */
static uint32_t payload_kept(const struct flow *f, uint8_t opcode, uint32_t len)
{
	uint32_t head = (ipv4(f) ? RN_PKT_IPV4_BYTES : RN_PKT_IPV6_BYTES) +
			RN_PKT_UDP_BYTES + rn_pkt_hdr_len(opcode);

	return f->keep <= head ? 0 : f->keep - head < len ? f->keep - head : len;
}

/* The ICRC of a packet ringnicd would send: IPv4 ID 0 with DF. */
static void seal(const struct flow *f, uint8_t *buf, size_t len)
{
	if (ipv4(f)) {
		struct rn_icrc_flow4 f4 = { .sport = RN_PKT_UDP_DPORT,
					    .dport = RN_PKT_UDP_DPORT };

		memcpy(&f4.saddr, f->sgid + 12, 4);
		memcpy(&f4.daddr, f->dgid + 12, 4);
		rn_icrc_seal_ipv4(&f4, 0, buf, len);
	} else {
		struct rn_icrc_flow6 f6 = { .sport = RN_PKT_UDP_DPORT,
					    .dport = RN_PKT_UDP_DPORT };

		memcpy(&f6.saddr, f->sgid, RN_GID_LEN);
		memcpy(&f6.daddr, f->dgid, RN_GID_LEN);
		rn_icrc_seal_ipv6(&f6, buf, len);
	}
}

/*
 * Build *p at buf, its payload already at buf + its headers (as much as a
 * capture keeps), seal it if a capture keeps its ICRC, and hand it to the
 * captures.
 */
static void emit(struct rn_device *dev, const struct flow *f, struct rn_pkt *p,
		 uint8_t *buf)
{
	struct rn_capture_pkt cp = {
		.dir = RN_CAPTURE_LOCAL,
		.qpn = f->qpn,
		.peer_qpn = f->peer_qpn,
		.ip = f->ip,
		.sport = RN_PKT_UDP_DPORT,
		.dport = RN_PKT_UDP_DPORT,
		.body = buf,
	};
	size_t len;

	p->payload = NULL;
	len = rn_pkt_build(p, buf, PKT_MAX);
	if (!len)
		return;
	if (payload_kept(f, p->opcode, p->payload_len) == p->payload_len)
		seal(f, buf, len);
	cp.body_len = len;
	rn_capture_packet(dev, &cp);
}

/* Where payloads come from: inline bytes, or memory (zeros if it went). */
struct source {
	const uint8_t *inline_data;
	struct rn_iovs iovs;
};

/* Packet p carries len bytes of s from off: those a capture keeps are
 * read.
 */
static void payload(const struct flow *f, struct rn_pkt *p, uint8_t *buf,
		    const struct source *s, uint64_t off, uint32_t len)
{
	uint8_t *at = buf + rn_pkt_hdr_len(p->opcode);
	uint32_t n = payload_kept(f, p->opcode, len);
	struct rn_iovs part;

	p->payload_len = len;
	if (s->inline_data) {
		memcpy(at, s->inline_data + off, n);
		return;
	}
	rn_iovs_sub(&s->iovs, off, n, &part);
	if (rn_dma_from(&part, at, n))
		memset(at, 0, n);
}

/* A message of len bytes as packets i = 0..n-1 of at most mtu bytes each,
 * at PSNs psn, psn + 1...: tmpl has every header any of them carries, and
 * each gets those its opcode has.
 */
static void message(struct rn_device *dev, const struct flow *f,
		    const struct rn_pkt *tmpl, uint8_t only, uint32_t psn,
		    uint64_t len, uint32_t mtu, const struct source *s)
{
	uint32_t n = len ? (uint32_t)((len + mtu - 1) / mtu) : 1, i;
	uint8_t buf[PKT_MAX];

	for (i = 0; i < n; i++) {
		uint64_t off = (uint64_t)i * mtu;
		struct rn_pkt p = *tmpl;

		p.opcode = rn_pkt_message_opcode(only, i, n);
		p.psn = rn_pkt_psn_add(psn, i);
		/* As the requester sends them: SE and AckReq on the last. */
		p.se = tmpl->se && i + 1 == n;
		p.ackreq = tmpl->ackreq && i + 1 == n;
		payload(f, &p, buf, s, off,
			(uint32_t)(len - off < mtu ? len - off : mtu));
		emit(dev, f, &p, buf);
	}
}

/* The answer of dst to a request at psn: an ACK, NAK or RNR NAK. */
static void acknowledge(struct rn_device *dev, struct rn_qp *dst,
			uint8_t syndrome, uint32_t psn)
{
	struct rn_pkt p = {
		.opcode = rn_qp_transport(dst->qp_type) | RN_PKT_OP_ACK,
		.dqpn = dst->attr.dest_qp_num,
		.psn = psn,
		.aeth = { syndrome, dst->local->msn },
	};
	uint8_t buf[PKT_MAX];
	struct flow f;

	if (connected_flow(dst, &f))
		emit(dev, &f, &p, buf);
}

static uint64_t sge_bytes(const struct rn_wqe *w)
{
	uint64_t len = 0;
	unsigned int i;

	for (i = 0; i < w->num_sge; i++)
		len += w->sge[i].length;
	return len;
}

/* A READ's or an atomic's responses, from what it wrote at the requester. */
static void respond(struct rn_qp *qp, struct rn_qp *dst, const struct rn_wqe *w,
		    uint32_t psn)
{
	struct rn_device *dev = qp->client->dev;
	uint8_t syndrome = rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT);
	struct source s = { 0 };
	struct flow f;

	if (!connected_flow(dst, &f) ||
	    rn_sgl_resolve(qp->client, qp->pd, w->sge, w->num_sge,
			   IBV_ACCESS_LOCAL_WRITE, &s.iovs))
		return;
	if (w->opcode == RN_OP_READ) {
		struct rn_pkt p = { .dqpn = dst->attr.dest_qp_num,
				    .aeth = { syndrome, dst->local->msn } };

		message(dev, &f, &p,
			rn_qp_transport(dst->qp_type) | RN_PKT_OP_READ_RESP_ONLY,
			psn, s.iovs.len, 128u << qp->attr.path_mtu, &s);
	} else {
		struct rn_pkt p = {
			.opcode = rn_qp_transport(dst->qp_type) |
				  RN_PKT_OP_ATOMIC_ACK,
			.dqpn = dst->attr.dest_qp_num,
			.psn = psn,
			.aeth = { syndrome, dst->local->msn },
		};
		uint8_t buf[PKT_MAX];

		if (rn_dma_from(&s.iovs, &p.atomic_ack, sizeof(p.atomic_ack)))
			return;
		emit(dev, &f, &p, buf);
	}
}

void rn_local_capture(struct rn_qp *qp, const struct rn_wqe *w,
		      const struct rn_local_try *t)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_qp *dst = rn_qp_by_qpn(dev, qp->attr.dest_qp_num);
	enum rn_pkt_transport tr = rn_qp_transport(qp->qp_type);
	bool reliable = qp->qp_type != IBV_QPT_UC;
	uint32_t mtu = 128u << qp->attr.path_mtu, last = t->psn;
	uint8_t buf[PKT_MAX];
	struct rn_pkt p = {
		.opcode = rn_op_opcode(tr, w->opcode),
		.dqpn = qp->attr.dest_qp_num,
		.psn = t->psn,
		.ackreq = reliable,
		.xrc_srqn = w->dest.remote_srqn,
	};
	struct flow f;

	if (!connected_flow(qp, &f))
		return;
	switch (w->opcode) {
	case RN_OP_READ:
		p.reth = (struct rn_pkt_reth){ w->remote_addr, w->rkey,
					       (uint32_t)sge_bytes(w) };
		emit(dev, &f, &p, buf);
		break;
	case RN_OP_CMP_SWAP:
	case RN_OP_FETCH_ADD:
		p.atomic = rn_op_atomiceth(w);
		emit(dev, &f, &p, buf);
		break;
	default: {
		struct source s = { 0 };
		uint64_t len;

		if (w->flags & RN_WQE_INLINE)
			s.inline_data = w->inline_data;
		if (rn_gather(qp, w, &s.iovs, &len))
			return;
		p.reth = (struct rn_pkt_reth){ w->remote_addr, w->rkey,
					       (uint32_t)len };
		p.imm = be32toh(w->imm_data);
		p.ieth_rkey = w->imm_data;
		p.se = w->flags & RN_WQE_SOLICITED;
		message(dev, &f, &p, p.opcode, t->psn, len, mtu, &s);
		last = rn_pkt_psn_add(t->psn, rn_local_packets(qp, len) - 1);
		break;
	}
	}
	/* The answer comes from the QP connected back to this one (in the
	 * retry of a late answer, it may have been reconnected since).
	 */
	if (!t->answered || !reliable || !dst || !dst->local ||
	    dst->attr.dest_qp_num != qp->qpn)
		return;
	if (rn_pkt_aeth_type(t->syndrome) == RN_PKT_AETH_RNR_NAK &&
	    w->opcode == RN_OP_WRITE_IMM)
		/* A WRITE's receive WQE is taken at its last packet. */
		acknowledge(dev, dst, t->syndrome, last);
	else if (rn_pkt_aeth_type(t->syndrome) != RN_PKT_AETH_ACK)
		acknowledge(dev, dst, t->syndrome, t->psn);
	else if (rn_op_read_or_atomic(w->opcode))
		respond(qp, dst, w, t->psn);
	else
		acknowledge(dev, dst, t->syndrome, last);
}

void rn_local_capture_datagram(struct rn_qp *qp, const struct rn_wqe *w,
			       const struct rn_ah_attr *ah, int sgid_index,
			       uint32_t qkey, const struct rn_iovs *src,
			       uint64_t len)
{
	struct source s = { 0 };
	uint8_t buf[PKT_MAX];
	uint32_t dqpn = w->dest.remote_qpn & RN_PKT_MASK24;
	struct rn_pkt p = {
		.opcode = rn_op_opcode(RN_PKT_UD, w->opcode),
		.se = w->flags & RN_WQE_SOLICITED,
		.dqpn = dqpn,
		.psn = qp->attr.sq_psn,
		.deth = { qkey, qp->qpn },
		.imm = be32toh(w->imm_data),
	};
	struct flow f;

	if (len > PKT_MAX - 64 - RN_PKT_ICRC_BYTES)
		return;
	if (w->flags & RN_WQE_INLINE)
		s.inline_data = w->inline_data;
	else
		s.iovs = *src;
	if (!flow_of(qp, sgid_index, ah, dqpn, &f))
		return;
	payload(&f, &p, buf, &s, 0, (uint32_t)len);
	emit(qp->client->dev, &f, &p, buf);
}
