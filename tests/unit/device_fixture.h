/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A whole device in the test process: no daemon, no control socket, no
 * second process.  The device is set up through its own functions (as
 * daemon/main.c and daemon/netdev.c do), the test process is its one
 * client (as control.c and requests.c's OPEN make one), and objects are
 * made through the control operations of device/verbs/.  What the device
 * hands back as memfds is mapped again here, as the provider maps it, and
 * work is posted into those mappings with the formats of kernel-abi/.
 *
 * The port is bound to "lo" with one GID, ::ffff:127.0.0.1 (index 0).  A
 * QP connected to that GID takes the local path; one connected to any
 * other (FX_REMOTE_GID, 198.18.0.2) is on the wire.  The wire has no UDP
 * socket: GID 0's socket is an unbound AF_UNIX datagram socket, so that
 * rn_wire_send queues packets into dev->engines[0]->wire->tx[] (it drops them without
 * a socket) and a flush, if one ever happens, sends nothing anywhere (every
 * sendmmsg fails, counted in RN_CNT_SEND_ERR).  fx_wire_take reads the
 * queued packets and empties the batch before anything flushes it.
 *
 * Every helper fails the running cmocka test when the device refuses.
 */
#ifndef RN_DEVICE_FIXTURE_H
#define RN_DEVICE_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <netinet/in.h>

#include "kernel-abi/ringnic-ring.h"
#include "engine/datapath.h"
#include "verbs/verbs.h"
#include "wire/internal.h"

/* The device's GID (index 0) and a peer's that is not the device's. */
extern const uint8_t FX_LOCAL_GID[16];
extern const uint8_t FX_REMOTE_GID[16];

#define FX_MAPS 64

struct fx {
	struct rn_device dev;
	struct rn_client *client;
	int async_rd; /* read end of the client's async event pipe */
	struct rn_dev_page *page; /* the provider's mapping of the device page */
	uint32_t pd; /* a PD every helper uses */
	struct { void *addr; size_t len; } maps[FX_MAPS]; /* unmapped at the end */
	unsigned int nmaps;
	void *bufs[FX_MAPS]; /* MR buffers, freed at the end */
	unsigned int nbufs;
};

/* A registered buffer. */
struct fx_mr {
	uint8_t *buf;
	uint64_t len;
	uint32_t handle;
	uint32_t lkey;
	uint32_t rkey;
};

/* A CQ as the provider holds it. */
struct fx_cq {
	uint32_t handle;
	struct rn_cq_ctrl *ctrl;
	struct rn_cqe *ring;
	uint32_t entries;
	uint32_t log2_entries;
	uint32_t cons; /* CQEs polled */
};

/* A QP as the provider holds it, and the device's object behind it. */
struct fx_qp {
	struct fx *fx;
	uint32_t handle;
	uint32_t qpn;
	struct rn_qp_cap cap;
	struct rn_qp_ctrl *ctrl;
	uint8_t *sq;
	uint32_t sq_slots;
	uint64_t sq_prod; /* slots written */
	uint8_t *rq;
	uint32_t rq_slots;
	uint32_t rq_prod;
	struct rn_qp *dq; /* the device's: for assertions on its state */
};

/* What fx_qp_connect gives the QP (fx_conn_default: a working RC QP). */
struct fx_conn {
	uint32_t dest_qpn;
	const uint8_t *dgid; /* FX_LOCAL_GID: the local path */
	uint32_t sq_psn;
	uint32_t rq_psn;
	uint8_t path_mtu; /* enum ibv_mtu */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	uint32_t access; /* qp_access_flags */
	uint32_t qkey; /* UD */
};

struct fx *fx_new(void);
void fx_free(struct fx *fx);

/* Register len bytes (page aligned, filled with 'fill') with these rights;
 * the buffer lives until fx_free.
 */
void fx_mr_new(struct fx *fx, uint64_t len, uint32_t access, uint8_t fill,
	       struct fx_mr *mr);
/* Register [addr, addr + len) of the caller's memory in PD pd. */
void fx_mr_reg(struct fx *fx, uint32_t pd, void *addr, uint64_t len,
	       uint32_t access, struct fx_mr *mr);
/* Deregister it (its buffer stays). */
void fx_mr_dereg(struct fx *fx, struct fx_mr *mr);
/* The SGE of [off, off + len) of mr. */
struct rn_sge fx_sge(const struct fx_mr *mr, uint64_t off, uint32_t len);

void fx_cq_new(struct fx *fx, uint32_t entries, struct fx_cq *cq);
/* The next CQE, consumed as the provider consumes it; false if none. */
bool fx_poll(struct fx_cq *cq, struct rn_cqe *cqe);

/* A QP as req asks (its user_handle is filled in). */
void fx_qp_create(struct fx *fx, struct rn_ctl_create_qp_req req,
		  struct fx_qp *qp);
/* An RC QP with these caps (0: 16 WRs, 4 SGEs each way, 64 inline). */
void fx_qp_new(struct fx *fx, struct fx_cq *send_cq, struct fx_cq *recv_cq,
	       const struct rn_qp_cap *cap, struct fx_qp *qp);
struct fx_conn fx_conn_default(uint32_t dest_qpn);
/* To state with the attributes mask names, as ibv_modify_qp. */
void fx_qp_modify(struct fx_qp *qp, enum ibv_qp_state state, uint32_t mask,
		  const struct rn_qp_attr *attr);
/* RESET -> INIT -> RTR -> RTS with what of c the QP's type takes. */
void fx_qp_connect(struct fx_qp *qp, const struct fx_conn *c);
/* Two QPs connected to each other on the local path. */
void fx_qp_pair(struct fx_qp *a, struct fx_qp *b);
enum ibv_qp_state fx_qp_state(const struct fx_qp *qp);

/*
 * Write a send WQE at the SQ's producer: hdr's fields, then hdr->num_sge
 * SGEs from sge.  nslots is computed unless hdr->nslots is set (to post
 * a malformed WQE).  Returns the slot counter it starts at.  Nothing is
 * rung: fx_ring.
 */
uint64_t fx_post_send(struct fx_qp *qp, const struct rn_send_wqe *hdr,
		      const struct rn_sge *sge);
/* The same with inline data. */
uint64_t fx_post_inline(struct fx_qp *qp, const struct rn_send_wqe *hdr,
			const void *data, uint32_t len);
/* Ring the SQ doorbell for everything written (provider's ring_sq). */
void fx_ring(struct fx_qp *qp);
/* Ring with an arbitrary doorbell record. */
void fx_ring_record(struct fx_qp *qp, uint64_t record);
/* Post a receive WQE of n SGEs. */
void fx_post_recv(struct fx_qp *qp, uint64_t wr_id, const struct rn_sge *sge,
		  unsigned int n);

/* An SRQ as the provider holds it. */
struct fx_srq {
	uint32_t handle;
	uint32_t srqn;
	struct rn_srq_ctrl *ctrl;
	uint8_t *ring;
	uint32_t slots;
	uint32_t prod; /* slots posted */
	uint32_t wr_prod;
};

/* An SRQ as req asks (its user_handle is filled in). */
void fx_srq_new(struct fx *fx, struct rn_ctl_create_srq_req req,
		struct fx_srq *srq);
void fx_post_srq_recv(struct fx_srq *srq, uint64_t wr_id,
		      const struct rn_sge *sge, unsigned int n);

/* One engine pass, now. */
bool fx_pass(struct fx *fx);
/* The next async event; false if none is waiting. */
bool fx_event(struct fx *fx, uint32_t *type, uint64_t *element);
/* The next async event is of this type, for this object (its user handle). */
void fx_assert_event(struct fx *fx, uint32_t want, const void *element);
void fx_assert_no_event(struct fx *fx);
/* The port's counter c. */
uint64_t fx_counter(struct fx *fx, enum rn_counter c);

/* ---- the wire ------------------------------------------------------------- */

/* A packet taken from the transmit batch; p.payload points into buf. */
struct fx_pkt {
	uint8_t buf[RN_WIRE_PKT_MAX];
	size_t len;
	struct rn_pkt p;
};

/* Parse the packets queued in dev->engines[0]->wire->tx[] into out (at most max) and
 * empty the batch.  Returns how many there were (all must fit).
 */
unsigned int fx_wire_take(struct fx *fx, struct fx_pkt *out, unsigned int max);
/* Packet p, built with packet.c's builder and its ICRC sealed, arrives on
 * GID 0's socket from 'from' with this traffic class, through the entry
 * point of the sockets (rn_wire_receive_packet): the QP its BTH names
 * takes it if 'from' is that QP's peer.  False if the builder refused p.
 */
bool fx_wire_arrive(struct fx *fx, const struct sockaddr_in *from, uint8_t tos,
		    const struct rn_pkt *p);
/* The same from qp's peer, to qp (p->dqpn is qp's): the responder or the
 * completer takes it.  fx_wire_batch_end ends the receive batch as netio.c
 * does (staged payload to memory, the ACKs coalesced out); fx_wire_deliver
 * is both.
 */
void fx_wire_recv(struct fx_qp *qp, const struct rn_pkt *p);
void fx_wire_batch_end(struct fx *fx);
void fx_wire_deliver(struct fx_qp *qp, const struct rn_pkt *p);
/* The requester of a wire QP: its doorbell read, then up to budget packets. */
bool fx_wire_run(struct fx_qp *qp, unsigned int budget);

#endif
