/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The RoCEv2 transport: what ringnicd does for a QP whose other end is
 * not a QP of this device (or every connected QP, with --local-on-wire).
 * Split as the IB spec and rxe split it:
 *
 *   netio.c      the port's UDP sockets (one per GID, port 4791): batches
 *                of packets out (GSO), batches in (GRO), the ICRC both
 *                ways, and the dispatch of what arrives
 *   requester.c  send WQEs -> packets: PSNs, segmentation by path MTU,
 *                AckReq, the window of unacknowledged packets, go-back-N
 *   completer.c  ACKs, NAKs, READ responses and atomic ACKs -> CQEs; the
 *                retransmit timer, retry_cnt and rnr_retry
 *   responder.c  requests -> validation -> memory and receive WQEs ->
 *                ACK/NAK, READ responses, atomic ACKs; duplicates and the
 *                READ/atomic replay resources
 *   datagram.c   UD on the wire
 *   congestion.c ECN marks -> CNPs -> a paced requester (DCQCN's shape)
 *   stage.c      the payload of a run of packets to memory in one call
 *   fault.c      injected faults on the packets a QP sends (engine/fault.h)
 *
 * packet.c and icrc.c are the codec all of them share.  Everything here
 * runs on the engine's thread.  wire/wire.h is what the layers above see.
 */
#ifndef RN_WIRE_INTERNAL_H
#define RN_WIRE_INTERNAL_H

#include <netinet/in.h>
#include <sys/socket.h>

#include "engine/datapath.h"
#include "wire/wire.h"
#include "roce/icrc.h"
#include "roce/packet.h"

/*
 * PSNs a requester may have sent and not seen acknowledged.  rxe keeps
 * 128; with 1 KiB packets that is 128 KiB per round trip, and a round trip
 * between two ringnicd includes their wake-ups: 512 took ib_write_bw 64 KiB
 * over a veth pair from about 55 to about 280 MB/s (1024: 10 % more).
 */
#define RN_WIRE_WINDOW 512u
/*
 * Responses a READ request asks for at most.  A READ longer than this is
 * asked a part at a time, each part a request of its own that waits for
 * the window as a packet does (and, past the first, for a READ credit),
 * so that a large READ has at most this many responses beyond the
 * window: a 1 MiB READ came as 1024 responses in one burst, more than a
 * receiver under TCG could take, and went into go-back-N again and again.
 * Half the window keeps two parts in flight.
 */
#define RN_WIRE_READ_PART (RN_WIRE_WINDOW / 2)
/* Packets of a message after which the requester asks for an ACK. */
#define RN_WIRE_ACKREQ_EVERY 64u
/* Bytes a packet buffer holds: the largest IB MTU and every header. */
#define RN_WIRE_PKT_MAX (4096 + 64 + RN_PKT_ICRC_BYTES)

/* The ECN field of the IP header (the low 2 bits of TOS / traffic class). */
#define RN_WIRE_ECN_MASK 3u
#define RN_WIRE_ECN_ECT0 2u
#define RN_WIRE_ECN_CE 3u

/* Congestion control state of a QP (congestion.c). */
struct rn_wire_cc {
	/* reaction point: Rc (0: unlimited), Rt, where limiting ends */
	uint64_t rate; /* bytes per second */
	uint64_t target;
	uint64_t line;
	uint32_t alpha; /* in 1/1024 */
	uint32_t stage; /* periods since the last cut */
	bool cut_in_period; /* a CNP came in this period */
	uint64_t last_cut; /* ns */
	uint64_t next_send; /* the pacer: ns the next packet may leave */
	bool paced; /* waits for pace_timer */
	struct rn_timer period_timer;
	struct rn_timer pace_timer;
	/* the unlimited sending rate, measured */
	uint64_t meter_start;
	uint64_t meter_bytes;
	uint64_t measured;
	/* notification point: when the last CNP went to the peer */
	uint64_t cnp_sent;
};

/* Where packets of a QP go and must come from. */
struct rn_wire_peer {
	sa_family_t family; /* AF_INET or AF_INET6 */
	uint8_t sgid_index; /* our address: the socket they leave from */
	/* The GRH's traffic class: the IP header's DSCP (its ECN bits are
	 * the transport's), and hop limit: the TTL, 0 for the socket's.
	 */
	uint8_t tclass;
	uint8_t hop_limit;
	union rn_sockaddr addr; /* the remote address, port 4791 */
	uint32_t qpn; /* our QP that sends to it (a capture's filter) */
};

/* A send WQE the requester has started (its PSNs are assigned). */
struct rn_wire_send {
	uint64_t pos; /* slot counter of the WQE in the SQ */
	uint64_t len; /* message length */
	uint32_t first_psn;
	uint32_t npsn; /* PSNs it takes: packets, or a READ's responses */
	uint32_t done; /* READ: responses received */
	uint32_t asked; /* READ: responses asked for (parts requested) */
	uint8_t opcode; /* RN_OP_* */
	uint8_t nslots;
};

/* A READ or atomic the responder executed, kept to answer duplicates. */
struct rn_wire_res {
	uint8_t kind; /* 0 (free), RN_PKT_K_READ_REQ or RN_PKT_K_ATOMIC */
	uint32_t first_psn;
	uint32_t npsn;
	uint64_t va; /* the RETH or AtomicETH of the request */
	uint32_t rkey;
	uint32_t len;
	uint32_t srqn; /* XRC: the SRQ (and so the PD) it was checked against */
	uint64_t orig; /* atomic: the value it found */
	/* replying: the next response PSN; the first one a replay sent */
	bool replying;
	uint32_t next_psn;
	uint32_t start_psn;
};

struct rn_wire_qp {
	struct rn_qp *qp;
	struct rn_wire_peer peer;
	uint32_t mtu; /* path MTU, bytes */
	uint8_t transport; /* RN_PKT_RC, _UC or _XRC: its packets' opcodes */

	/* ---- requester ---- */
	uint32_t next_psn; /* the first PSN no WQE has taken yet */
	uint32_t una; /* the oldest PSN not acknowledged */
	uint32_t send_psn; /* the next PSN to (re)send */
	uint32_t sent_psn; /* one past the highest PSN sent */
	uint64_t sq_next; /* slot counter of the first WQE not started */
	struct rn_wire_send *sends; /* ring of started WQEs, oldest first */
	uint32_t sends_mask;
	uint32_t head; /* oldest started WQE not completed */
	uint32_t cur; /* the one send_psn is in (head <= cur <= tail) */
	uint32_t tail;
	uint32_t rd_atomic; /* READ requests (parts) and atomics unanswered */
	uint32_t noack; /* packets since the last AckReq */
	uint8_t retry_left;
	uint8_t rnr_left;
	bool blocked; /* the next WQE waits for completions (order, FENCE) */
	bool rnr_wait; /* an RNR NAK's timer runs: send nothing */
	bool implied_nak; /* a response gap was seen, a retry is under way */
	struct rn_timer retrans_timer;
	struct rn_timer rnr_timer;
	struct rn_wqe wqe; /* the WQE at cur, fetched */
	bool wqe_valid;
	/* what the rules of generation fault_rules (0: none drawn yet) drew
	 * for the WQE at fault_pos: an injected WR_ERROR's status, or 0
	 */
	uint64_t fault_rules;
	uint64_t fault_pos;
	uint32_t fault_status;

	/* ---- responder ---- */
	uint32_t epsn; /* expected PSN */
	uint32_t msn; /* messages completed, 24 bits */
	bool nak_sent; /* a sequence NAK for epsn is out: drop until it comes */
	bool in_msg; /* between the FIRST and the LAST of a message */
	uint8_t msg_kind; /* its RN_PKT_K_SEND or RN_PKT_K_WRITE */
	uint32_t msg_srqn; /* XRC: the SRQ the message's receive comes from */
	uint64_t msg_off; /* bytes of the message so far */
	uint64_t msg_va; /* WRITE: from the RETH */
	uint32_t msg_rkey;
	uint32_t msg_len;
	struct rn_rwqe rwqe; /* SEND: the receive WQE it fills */
	bool have_rwqe;
	bool drop_msg; /* UC: the message lost a packet; wait for a FIRST/ONLY */
	struct rn_wire_res *res; /* max_dest_rd_atomic entries */
	uint32_t nres;
	uint32_t res_next; /* the entry the next READ or atomic takes */
	uint32_t replying; /* entries with responses to send */
	/* the ACK or NAK to send once the responses before it are out */
	bool ack_pending;
	uint8_t ack_syndrome;
	uint32_t ack_psn;
	struct rn_list ack_link; /* on the device's list of pending ACKs */

	struct rn_list work_link; /* on the device's list of replying QPs */
	bool on_work;

	struct rn_wire_cc cc;
};

/* One of the port's UDP sockets: GID table entry 'gid_index'. */
struct rn_wire_sock {
	int fd; /* -1: none */
	sa_family_t family;
	uint8_t gid_index;
	uint32_t qps; /* connected QPs sending from it: every pass reads it */
	bool gso; /* the kernel takes UDP_SEGMENT runs on it (netio.c) */
	uint8_t ttl; /* its default TTL (hop limit), for captures */
	union rn_sockaddr local;
	struct rn_watch watch;
};

#define RN_WIRE_TX_BATCH 64
#define RN_WIRE_RX_BATCH 64

struct rn_wire_tx {
	uint8_t buf[RN_WIRE_PKT_MAX];
	size_t len;
	/* Its place in a run of packets sent as one UDP GSO datagram (0: the
	 * first, or alone), which is the IPv4 ID the kernel gives it.
	 */
	uint16_t seg;
	uint8_t tos; /* the IP TOS or traffic class byte, with the ECN */
	uint8_t ttl; /* 0: the socket's */
	union rn_sockaddr to;
	socklen_t tolen;
	uint32_t qpn; /* our QP that sent it */
	uint32_t dqpn; /* the QP it is for: a run goes to one (netio.c) */
	bool bad_icrc; /* an injected fault: sealed with a wrong ICRC */
};

/*
 * Payload bytes of a run of packets moved with one system call: a
 * client's memory costs a call per range (core/memory.c), whatever its size.
 * The requester reads ahead over a message and the WQEs posted after it
 * while their sources are adjacent (requester.c), the responder reads a
 * READ's data ahead (responder.c), and in-order WRITEs, SENDs and READ
 * responses to adjacent addresses are written together (stage.c).
 */
#define RN_WIRE_STAGE_SIZE (64u * 1024)
struct rn_wire_qp;
/* A staged write failed (status): the owner fails the QP at first_psn. */
typedef void (*rn_wire_stage_failed_fn)(struct rn_wire_qp *wq,
					uint32_t first_psn,
					enum rn_dma_status status);
/* A SEND's receive completion, held until its payload has landed. */
struct rn_wire_stage_recv {
	struct rn_responder r;
	uint64_t wr_id;
	struct rn_recv_result res;
};
#define RN_WIRE_STAGE_RECVS 64
/* The receive completions the write stage holds, [0, nlanded) landed. */
struct rn_wire_stage_recvs {
	struct rn_wire_stage_recv held[RN_WIRE_STAGE_RECVS];
	unsigned int n, nlanded;
};
struct rn_wire_stage {
	struct rn_wire_qp *wq; /* NULL: empty, and no receive held */
	int mem; /* the address space it is of: an MR maker's mem_fd */
	uint64_t addr; /* where buf[0] is in it */
	uint32_t len;
	/* requester's read: valid for the send WQEs at slots [first_pos,
	 * end_pos)
	 */
	uint64_t first_pos, end_pos;
	/* write: the kind of its packets (RN_PKT_K_*), the first one's PSN */
	uint8_t kind;
	uint32_t first_psn;
	/* WRITEs into guarded MRs only: a fault is memory unmapped since
	 * (rn_remote_resolve), where they go nowhere.
	 */
	bool vanish;
	rn_wire_stage_failed_fn failed;
	uint8_t buf[RN_WIRE_STAGE_SIZE];
};

/* What one received datagram holds: GRO merges up to 64 KiB of packets. */
#define RN_WIRE_RX_MAX 65536
struct rn_wire_rx {
	uint8_t buf[RN_WIRE_RX_MAX];
	union rn_sockaddr from;
	_Alignas(struct cmsghdr) uint8_t cmsg[128];
};

/* An engine's share of the transport: its sockets, batches and stages. */
struct rn_wire {
	struct rn_device *dev;
	struct rn_engine *engine;
	struct rn_wire_sock socks[RN_GID_TABLE_LEN];
	struct rn_icrc_solver solver;
	uint32_t nqps; /* QPs on the wire: while any, every pass reads */
	struct rn_list acks; /* QPs with an ACK or NAK to send */
	struct rn_list work; /* QPs with READ or atomic responses to send */
	uint32_t gsi_psn; /* of QP1's datagrams */
	rn_wire_gsi_fn gsi_recv; /* who takes them, or NULL: dropped */

	/* packets built and waiting for sendmmsg, all from one socket */
	struct rn_wire_tx tx[RN_WIRE_TX_BATCH];
	unsigned int ntx;
	int tx_sock;

	struct rn_wire_rx rx[RN_WIRE_RX_BATCH];

	struct rn_wire_stage read_stage; /* the requester's */
	struct rn_wire_stage write_stage; /* stage.c */
	struct rn_wire_stage_recvs write_recvs; /* of its SENDs */
	struct rn_wire_stage reply_stage; /* the responder's READ data */

	/* packets an injected fault holds back (fault.c) */
	struct rn_list held;
	uint32_t nheld;
	struct rn_timer held_timer;
};

/* What a received packet is, beyond what its headers say. */
struct rn_wire_pkt {
	struct rn_pkt p;
	const struct rn_pkt_op *op;
	struct rn_wire_sock *sock; /* it arrived on */
	const struct sockaddr *from;
	uint8_t ttl; /* of its IP header (hop limit), for a UD GRH */
	uint8_t tos; /* traffic class */
	uint16_t ip_id; /* IPv4: recovered from its ICRC */
	uint32_t flow_label; /* IPv6 */
	size_t udp_len; /* UDP header, BTH .. ICRC */
};

/* The device a wire QP belongs to. */
static inline struct rn_device *rn_wire_dev(const struct rn_wire_qp *wq)
{
	return wq->qp->client->dev;
}

/* The wire of the engine that owns wq's QP. */
static inline struct rn_wire *rn_wire_of(const struct rn_wire_qp *wq)
{
	return wq->qp->engine->wire;
}

/* One more of the port's counter c (per-QP ones: rn_count_qp). */
static inline void rn_wire_count(struct rn_wire *w, enum rn_counter c)
{
	rn_engine_count(w->engine, c);
}

void rn_wire_flush(struct rn_wire *w);
/* Steer a group of n engines' sockets, fd's among them (netio.c). */
int rn_wire_steer(int fd, uint32_t n);
/*
 * One packet off a socket (netio.c), buf[0, len): parsed, its ICRC checked
 * against pkt's addresses, counted and handed to the QP it names.  pkt
 * says how it came (socket, sender, TTL, TOS); its parsed fields are set
 * here.  The end of a receive batch (rn_wire_write_flush, then
 * rn_wire_send_acks) is the caller's.
 */
void rn_wire_receive_packet(struct rn_wire *w, struct rn_wire_pkt pkt,
			    uint8_t *buf, size_t len);
socklen_t rn_wire_gid_addr(const struct rn_device *dev, const uint8_t *gid,
			   struct sockaddr_in6 *v6, struct sockaddr_in *v4);
/* Writes len payload bytes at dst (of a packet being built). */
typedef enum rn_dma_status (*rn_wire_fill_fn)(void *arg, uint8_t *dst,
					      uint32_t len);
enum rn_dma_status rn_wire_send(struct rn_wire *w,
				const struct rn_wire_peer *peer,
				const struct rn_pkt *p, rn_wire_fill_fn fill,
				void *arg);
/* A packet built before (held back by a fault) goes out from socket si. */
void rn_wire_send_again(struct rn_wire *w, unsigned int si,
			const struct rn_wire_tx *tx);

/* fault.c: what the sending QP's rules (engine/fault.h) make of a packet */
enum rn_wire_fault_tx {
	RN_WIRE_TX_AS_IS,
	RN_WIRE_TX_TAKEN, /* lost, or held back to go later */
	RN_WIRE_TX_TWICE, /* it goes, and a copy after it */
};
/* tx, built from socket si and not yet queued; marks and ICRCs in place. */
enum rn_wire_fault_tx rn_wire_fault_tx(struct rn_wire *w,
				       struct rn_wire_tx *tx, unsigned int si);
/* A packet of QP qpn went: what waited to follow it goes too. */
void rn_wire_fault_sent(struct rn_wire *w, uint32_t qpn);
void rn_wire_fault_init(struct rn_wire *w);
void rn_wire_fault_free(struct rn_wire *w);

/* capture.c: a packet to the device's captures, while rn_capturing */
void rn_wire_capture_tx(struct rn_device *dev, const struct rn_wire_sock *s,
			const struct rn_wire_tx *tx);
void rn_wire_capture_rx(struct rn_device *dev, const struct rn_wire_pkt *pkt,
			const uint8_t *buf, size_t len);

/* connection.c */
extern const struct rn_transport_ops rn_wire_transport;
/* The peer at dgid, reached from our GID sgid_index; false if none can be. */
void rn_wire_peer_grh(struct rn_wire_peer *peer, const struct rn_ah_attr *av);
bool rn_wire_peer_of(const struct rn_device *dev, unsigned int sgid_index,
		     const uint8_t *dgid, struct rn_wire_peer *peer);

/* stage.c */
/* May packet pkt for wq join the payload staged now? */
bool rn_wire_write_joins(const struct rn_wire *w,
			 const struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt);
/* The staged payload to memory, then the receive completions it holds;
 * returns the QP whose write failed (or that failed meanwhile), or NULL.
 */
struct rn_wire_qp *rn_wire_write_flush(struct rn_wire *w);
/* The payload alone, before packets leave: a failure, and the receive
 * completions, wait for the next flush.
 */
void rn_wire_write_out(struct rn_wire *w);
/* wq fails (an error completion follows): what it staged is written, come
 * what may, before the completion hands the buffer back, and the receives
 * it held complete (LOC_PROT_ERR where the write failed).
 */
void rn_wire_write_settle(struct rn_wire_qp *wq);
enum rn_wire_staged {
	RN_WIRE_STAGED,
	RN_WIRE_NOT_STAGED, /* the stage is empty: write it now, directly */
	/* what wq staged before failed, or a receive it held overran its CQ
	 * (the QP is in ERR): stop
	 */
	RN_WIRE_STAGE_FAILED,
};
/* Stage the payload of packet p (of this kind) for dst; with !may_stage
 * (a completion follows p) only flush what is staged, for p to go after.
 */
enum rn_wire_staged rn_wire_write_stage(struct rn_wire_qp *wq, uint8_t kind,
					const struct rn_iovs *dst,
					const struct rn_pkt *p,
					rn_wire_stage_failed_fn failed,
					bool may_stage);
/* May wq's next SEND hand the stage its receive completion? */
bool rn_wire_write_recv_room(const struct rn_wire_qp *wq);
/* The receive completion of the SEND whose last payload wq just staged:
 * pushed once that payload has landed (with an error if it cannot).
 */
void rn_wire_write_stage_recv(struct rn_wire_qp *wq,
			      const struct rn_responder *r, uint64_t wr_id,
			      const struct rn_recv_result *res);

/* requester.c */
bool rn_wire_requester_run(struct rn_wire_qp *wq, uint64_t now,
			   unsigned int budget);
bool rn_wire_requester_busy(const struct rn_wire_qp *wq);
void rn_wire_requester_start(struct rn_wire_qp *wq);
void rn_wire_requester_stop(struct rn_wire_qp *wq);
/* Send again from psn, or skip forward to it. */
void rn_wire_requester_rewind(struct rn_wire_qp *wq, uint32_t psn);
/* Where the READ part of response i of READ s ends (an index past it). */
uint32_t rn_wire_read_part_end(const struct rn_wire_send *s, uint32_t i);
/* Retire the oldest started WQE; false when the QP failed meanwhile. */
bool rn_wire_complete_head(struct rn_wire_qp *wq, enum ibv_wc_status status,
			   uint32_t byte_len);

/* completer.c */
void rn_wire_completer_recv(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt);
void rn_wire_timers_init(struct rn_wire_qp *wq);
void rn_wire_retrans_start(struct rn_wire_qp *wq);

/* congestion.c */
void rn_wire_cc_init(struct rn_wire_qp *wq);
void rn_wire_cc_reset(struct rn_wire_qp *wq);
/* A CE-marked packet arrived for wq: a CNP back if it is a request or a
 * READ response.  The caller tests the mark, so that the packets that
 * carry none (nearly all) cost no clock read.
 */
void rn_wire_cc_marked(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt,
		       uint64_t now);
/* A CNP for wq arrived: it slows down. */
void rn_wire_cc_cut(struct rn_wire_qp *wq, uint64_t now);
/* The pacer: false (and the QP waits for its timer) when it must wait. */
bool rn_wire_cc_may_send(struct rn_wire_qp *wq, uint64_t now);
void rn_wire_cc_sent(struct rn_wire_qp *wq, uint32_t bytes, uint64_t now);

/* responder.c */
int rn_wire_responder_init(struct rn_wire_qp *wq);
void rn_wire_responder_stop(struct rn_wire_qp *wq);
void rn_wire_responder_free(struct rn_wire_qp *wq);
void rn_wire_responder_recv(struct rn_wire_qp *wq, const struct rn_wire_pkt *pkt);
void rn_wire_send_acks(struct rn_wire *w);
bool rn_wire_reply(struct rn_wire *w, uint64_t now);

/* datagram.c */
void rn_wire_ud_recv(struct rn_wire *w, const struct rn_wire_pkt *pkt);
enum ibv_wc_status rn_wire_ud_send(struct rn_qp *qp, const struct rn_wqe *w,
				   const struct rn_ah_attr *av,
				   unsigned int sgid_index, const uint8_t *dgid,
				   uint32_t qkey, const struct rn_iovs *src,
				   uint64_t len);

#endif
