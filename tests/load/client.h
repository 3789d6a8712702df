/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Inside a client process: its verbs objects, the two lanes of every QP
 * (tx: this client is the requester; rx: it is the responder) and the
 * messages the two clients of a pair exchange over their socket.
 */
#ifndef RN_LOAD_CLIENT_H
#define RN_LOAD_CLIENT_H

#include "load.h"

#define SQ_DEPTH (BATCH_MAX_OPS + 2) /* a batch and a probe */
#define RQ_DEPTH (2 * BATCH_MAX_OPS)
#define DRAIN_EXTRA_RECVS 2 /* receives posted after the peer died */
#define STALL_NS (15 * 1000000000ull) /* no progress for this long fails */

/* wr_id: QP index, batch number, op index (or a marker). */
#define WR_ID(q, batch, op) ((uint64_t)(q) << 56 | (uint64_t)(batch) << 8 | (op))
#define WR_QP(id) ((unsigned int)((id) >> 56))
#define WR_BATCH(id) ((uint32_t)((id) >> 8))
#define WR_OP(id) ((unsigned int)((id)&0xff))
#define OP_PROBE 0xff /* a SEND posted to find out that the peer is gone */
#define OP_EXTRA 0xfe /* a receive posted after the peer died */

struct tx_lane {
	struct lane_gen gen;
	struct batch b;
	bool active; /* b is posted and not yet both completed and acked */
	unsigned int posted; /* ops of b posted */
	unsigned int next; /* the first op of b without a known completion */
	bool acked; /* the responder verified b */
	bool finished; /* FIN sent: no more batches */
	uint32_t batches; /* batches completed and acked */
	/* After the peer died */
	bool errored;
	bool probe_posted;
	bool probe_done;
};

struct rx_lane {
	struct lane_gen gen;
	struct batch b; /* the batch whose receives are posted */
	unsigned int next; /* the op of b whose receive completes next */
	unsigned int recvs_out; /* receives posted, not completed */
	unsigned int extras_out; /* of them, posted after the peer died */
	bool extras_posted;
	bool posted; /* b's receives are posted */
	bool fin; /* the requester sent its last batch */
	bool errored;
};

struct qp_res {
	unsigned int idx;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* odd QPs post with the ibv_wr_* API */
	uint8_t *local; /* LOCAL_BYTES: sources, READ targets, receives */
	struct ibv_mr *lmr; /* local access only */
	uint8_t *win; /* WIN_BYTES: what the peer writes, reads, updates */
	struct ibv_mr *wmr;
	uint32_t peer_qpn;
	uint32_t peer_rkey;
	uint64_t peer_win;
	struct tx_lane tx;
	struct rx_lane rx;
};

struct client {
	const struct client_params *p;
	struct client_report *rep;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	union ibv_gid gid;
	uint8_t peer_gid[16];
	unsigned int nqps;
	struct qp_res q[LOAD_MAX_QPS];
	bool connected; /* the QPs reached RTS */
	bool peer_ready;
	bool peer_dead; /* the socket hung up, or a QP met the dead peer */
	bool sock_closed; /* the peer closed its end (after the end: normal) */
	uint64_t last_progress;
	uint64_t rng; /* choices that are not part of the batches */
	uint8_t *scratch; /* registered and deregistered now and then */
};

/* Socket messages. */
enum msg_type { WIRE_HELLO = 1, WIRE_READY, WIRE_ACK, WIRE_FIN };

struct msg_hello {
	uint32_t type;
	uint32_t nqps;
	uint8_t gid[16];
	struct {
		uint32_t qpn;
		uint32_t rkey;
		uint64_t addr;
	} qp[LOAD_MAX_QPS];
};

struct msg_lane {
	uint32_t type;
	uint32_t qp;
	uint32_t batch; /* ACK: the batch verified; FIN: batches sent */
	uint32_t pad;
};

/* client.c */
int send_msg(struct client *c, const void *m, size_t len);
/* 1 and its length if a message came within timeout_ms, else 0 (or -1). */
int recv_msg(struct client *c, void *buf, size_t size, size_t *len, int timeout_ms);
int read_msgs(struct client *c, int *got);
void note_progress(struct client *c);

/* setup.c */
int setup(struct client *c);
int connect_all(struct client *c);

/* requester.c, responder.c, lanes.c: batches and their checks */
int tx_start(struct client *c, struct qp_res *r);
int tx_completion(struct client *c, const struct ibv_wc *wc);
int rx_post_batch(struct qp_res *r);
int rx_completion(struct client *c, const struct ibv_wc *wc);
int on_lane_msg(struct client *c, const struct msg_lane *m);
int lanes_step(struct client *c, bool *done);
bool lanes_done(const struct client *c);
int poll_cqs(struct client *c, int *got);

/* drain.c: what a dead peer leaves behind */
int peer_died(struct client *c, const char *how);
int tx_error(struct client *c, struct qp_res *r, const struct ibv_wc *wc);
int rx_error(struct client *c, struct qp_res *r, const struct ibv_wc *wc);
int drain_step(struct client *c, bool *drained);
const char *status_name(enum ibv_wc_status s);

#endif
