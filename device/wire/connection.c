// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A connected QP's life on the wire.  At RTR its address vector decides:
 * a destination GID of this device keeps today's local path (both ends
 * executed at once, the fastest), anything else (or every QP, with
 * --local-on-wire) gets a transport state and a peer, the address its
 * packets go to and the only one they are taken from.  RTS starts the
 * requester at sq_psn; ERR stops both sides (the queues flush as ever);
 * RESET and destroy free it.
 */
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>

#include "wire/internal.h"

/* Started WQEs a QP may have: each takes a PSN at least. */
#define RN_WIRE_MAX_SENDS RN_WIRE_WINDOW

bool rn_wire_peer_of(const struct rn_device *dev, unsigned int sgid_index,
		     const uint8_t *dgid, struct rn_wire_peer *peer)
{
	const uint8_t *sgid;

	/* In kernel mode too: an entry the kernel has but the wire cannot
	 * reach fails here, not in a timeout.
	 */
	if (!rn_port_gid_valid(dev, sgid_index))
		return false;
	sgid = dev->port.gids[sgid_index].raw;
	if (rn_gid_is_zero(dgid) || rn_gid_is_ipv4(sgid) != rn_gid_is_ipv4(dgid))
		return false;
	memset(peer, 0, sizeof(*peer));
	peer->sgid_index = sgid_index;
	rn_wire_gid_addr(dev, dgid, &peer->addr.v6, &peer->addr.v4);
	peer->family = peer->addr.v4.sin_family;
	return true;
}

/* The GRH's traffic class and hop limit, when the address vector has one. */
void rn_wire_peer_grh(struct rn_wire_peer *peer, const struct rn_ah_attr *av)
{
	if (!av->is_global)
		return;
	peer->tclass = av->traffic_class;
	peer->hop_limit = av->hop_limit;
}

static struct rn_wire_qp *wire_alloc(struct rn_qp *qp)
{
	struct rn_engine *e = qp->engine;
	struct rn_wire_qp *wq;
	uint32_t n = 1;

	if (rn_timers_reserve(&e->timers, e->ntimers + 4))
		return NULL;
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return NULL;
	if (qp->sq_slots) {
		while (n < qp->cap.max_send_wr && n < RN_WIRE_MAX_SENDS)
			n <<= 1;
		wq->sends = calloc(n, sizeof(*wq->sends));
		if (!wq->sends) {
			free(wq);
			return NULL;
		}
		wq->sends_mask = n - 1;
	}
	wq->qp = qp;
	rn_wire_timers_init(wq);
	rn_wire_cc_init(wq);
	rn_list_init(&wq->ack_link);
	rn_list_init(&wq->work_link);
	e->ntimers += 4;
	e->wire->nqps++;
	return wq;
}

static void wire_release(struct rn_qp *qp)
{
	struct rn_wire_qp *wq = qp->wire;
	struct rn_engine *e = qp->engine;

	if (!wq)
		return;
	rn_wire_requester_stop(wq);
	rn_wire_responder_stop(wq);
	rn_wire_responder_free(wq);
	e->wire->socks[wq->peer.sgid_index].qps--;
	free(wq->sends);
	free(wq);
	qp->wire = NULL;
	e->ntimers -= 4;
	e->wire->nqps--;
}

int rn_wire_qp_connect(struct rn_qp *qp, unsigned int sgid_index,
		       const uint8_t *dgid)
{
	struct rn_device *dev = qp->client->dev;
	struct rn_wire_peer peer;

	if (!rn_wire_peer_of(dev, sgid_index, dgid, &peer))
		return EINVAL;
	rn_wire_peer_grh(&peer, &qp->attr.ah_attr);
	peer.qpn = qp->qpn;
	if (qp->wire)
		qp->engine->wire->socks[qp->wire->peer.sgid_index].qps--;
	else if (!(qp->wire = wire_alloc(qp)))
		return ENOMEM;
	qp->transport = &rn_wire_transport;
	qp->wire->peer = peer;
	qp->engine->wire->socks[peer.sgid_index].qps++;
	qp->wire->mtu = 128u << qp->attr.path_mtu;
	qp->wire->transport = rn_qp_transport(qp->qp_type);
	return rn_wire_responder_init(qp->wire);
}

/* RTR to RTS: the requester starts at sq_psn. */
static void wire_start(struct rn_qp *qp)
{
	if (qp->wire && qp->wire->sends)
		rn_wire_requester_start(qp->wire);
}

/* Send WQEs started on the wire and not completed yet. */
static bool wire_in_flight(const struct rn_qp *qp)
{
	return qp->wire && qp->wire->sends && qp->wire->head != qp->wire->tail;
}

/*
 * The send queue failed (ERR, or SQE on UC) or the whole QP did (ERR):
 * the transport lets go of what it held; the queues flush as ever.
 * query_qp shows the PSNs where they stopped.
 */
static void wire_stop(struct rn_qp *qp, bool responder_too)
{
	struct rn_wire_qp *wq = qp->wire;

	if (!wq)
		return;
	/* What it staged lands before its queues flush their buffers back. */
	rn_wire_write_settle(wq);
	if (wq->sends) {
		qp->attr.sq_psn = wq->next_psn;
		rn_wire_requester_stop(wq);
	}
	if (responder_too) {
		qp->attr.rq_psn = wq->epsn;
		rn_wire_responder_stop(wq);
	}
}

static bool wire_busy(const struct rn_qp *qp)
{
	return qp->wire->sends && rn_wire_requester_busy(qp->wire);
}

static bool wire_run(struct rn_qp *qp, uint64_t now, unsigned int budget)
{
	return qp->wire->sends && rn_wire_requester_run(qp->wire, now, budget);
}

const struct rn_transport_ops rn_wire_transport = {
	.run = wire_run,
	.busy = wire_busy,
	.start = wire_start,
	.in_flight = wire_in_flight,
	.stop = wire_stop,
	.release = wire_release,
	/* Packets a QP may send before the next QP gets its turn: a whole
	 * batch, so that a run of equal packets leaves as one UDP GSO
	 * datagram.
	 */
	.budget = RN_WIRE_TX_BATCH,
};
