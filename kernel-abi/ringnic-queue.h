/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * Queues shared between the provider (in the application) and ringnicd (the
 * device): work queue descriptors, the QP and CQ control blocks, CQEs and the
 * CQ arm word.
 *
 * Ownership rules, which both sides rely on:
 *  - Each field is written by exactly one side; the comments say which.
 *    Provider-written and device-written fields sit in separate cache lines.
 *  - Indices are free-running counters; a ring index is (counter & (n - 1)).
 *  - The device never trusts a provider-written value: it masks every index,
 *    checks counters against its private copy, copies a descriptor out of the
 *    ring before using it and validates the copy.
 *  - Counters and the arm word are accessed with acquire/release atomics by
 *    both sides (the fields are plain integers so the kernel can include this
 *    file).
 */
#ifndef RINGNIC_QUEUE_H
#define RINGNIC_QUEUE_H

#include <linux/types.h>

#define RN_SLOT_SIZE 64
#define RN_SLOT_SHIFT 6

/* ---------------------------------------------------------------- WQEs -- */

enum rn_wqe_opcode {
	RN_OP_SEND = 1,
	RN_OP_SEND_IMM,
	RN_OP_WRITE,
	RN_OP_WRITE_IMM,
	RN_OP_READ,
	RN_OP_CMP_SWAP,
	RN_OP_FETCH_ADD,
	RN_OP_SEND_INV, /* a SEND that invalidates invalidate_rkey remotely */
	RN_OP_LOCAL_INV, /* invalidate the window invalidate_rkey names */
	RN_OP_BIND_MW, /* bind a memory window: see struct rn_send_wqe */
	RN_OP_MAX = RN_OP_BIND_MW,
};

enum rn_wqe_flags {
	RN_WQE_SIGNALED = 1 << 0,
	RN_WQE_SOLICITED = 1 << 1,
	RN_WQE_FENCE = 1 << 2,
	RN_WQE_INLINE = 1 << 3,
	RN_WQE_FLAGS_ALL = (1 << 4) - 1,
};

struct rn_sge {
	__u64 addr;
	__u32 length;
	__u32 lkey;
};

/*
 * A send WQE is a header of RN_SEND_HDR_SIZE bytes, then, on the QP types
 * that address each message (UD and XRC initiator QPs), a struct
 * rn_wqe_dest, then its payload: num_sge struct rn_sge, or inline_len bytes
 * of data when RN_WQE_INLINE is set.  What follows the header starts in the
 * header slot and continues in the next slots (wrapping at the end of the
 * ring), so a WQE takes RN_SEND_WQE_SLOTS(bytes after the header) slots;
 * nslots must say exactly that.
 *
 * BIND_MW binds the window whose rkey has the index of 'rkey' (the index is
 * the window's; the low 8 bits are its new key) to [remote_addr,
 * remote_addr + bind.length) of the MR bind.lkey names, with bind.access
 * (enum ibv_access_flags); a length of 0 unbinds it.  It has no payload.
 */
struct rn_send_wqe {
	__u64 wr_id;
	__u8 opcode; /* enum rn_wqe_opcode */
	__u8 flags; /* enum rn_wqe_flags */
	__u8 num_sge;
	__u8 nslots;
	union {
		__u32 imm_data; /* network byte order, as in ibv_send_wr */
		__u32 invalidate_rkey; /* SEND_INV, LOCAL_INV */
	};
	__u64 remote_addr;
	__u32 rkey;
	__u32 inline_len;
	union {
		struct {
			__u64 compare_add; /* CMP_SWAP: compare; FETCH_ADD: add */
			__u64 swap;
		};
		struct {
			__u64 length;
			__u32 lkey;
			__u32 access;
		} bind;
	};
	__u8 payload[16];
};

#define RN_SEND_HDR_SIZE 48
#define RN_SEND_WQE_SLOTS(after_hdr)                                           \
	((RN_SEND_HDR_SIZE + (after_hdr) + RN_SLOT_SIZE - 1) / RN_SLOT_SIZE)

/* Where a message of a UD or XRC initiator QP goes. */
struct rn_wqe_dest {
	__u32 ah; /* UD: the address handle */
	__u32 remote_qpn; /* UD */
	__u32 remote_qkey; /* UD: with bit 31 set, the QP's own Q_Key */
	__u32 remote_srqn; /* XRC: the SRQ the message is for */
};

/* A receive WQE: RN_RECV_HDR_SIZE bytes, then num_sge struct rn_sge. */
struct rn_recv_wqe {
	__u64 wr_id;
	__u8 num_sge;
	__u8 nslots;
	__u8 reserved[6];
	__u8 payload[48];
};

#define RN_RECV_HDR_SIZE 16
#define RN_RECV_WQE_SLOTS(nsge)                                                \
	((RN_RECV_HDR_SIZE + (nsge) * sizeof(struct rn_sge) + RN_SLOT_SIZE - 1) / \
	 RN_SLOT_SIZE)

_Static_assert(sizeof(struct rn_sge) == 16, "sge layout");
_Static_assert(sizeof(struct rn_wqe_dest) == 16, "dest layout");
_Static_assert(sizeof(struct rn_send_wqe) == RN_SLOT_SIZE, "send wqe slot");
_Static_assert(__builtin_offsetof(struct rn_send_wqe, payload) == RN_SEND_HDR_SIZE,
	       "send wqe header");
_Static_assert(sizeof(struct rn_recv_wqe) == RN_SLOT_SIZE, "recv wqe slot");
_Static_assert(__builtin_offsetof(struct rn_recv_wqe, payload) == RN_RECV_HDR_SIZE,
	       "recv wqe header");

/* ----------------------------------------------------------------- QP --- */

/*
 * The SQ doorbell record: one 64-bit store of the QP's index in its context
 * (bits 63..48) and the SQ producer counter in slots (bits 47..0).  The
 * record names the chain of WQEs from the device's head to that sequence.
 * Sequences never restart: a reset moves the device's head to where the
 * provider is (struct rn_ctl_modify_qp_req), so a record written before it
 * is behind the head, stale, and is dropped instead of executed.
 *
 * The device fetches a chain in groups: copies of consecutive slots that
 * end at the chain's end, the end of a ring page (RN_GROUP_SLOTS slots; the
 * rings are page aligned) or the end of the ring, whichever comes first.
 */
#define RN_GROUP_SLOTS (4096 / RN_SLOT_SIZE)
#define RN_DB_SEQ_BITS 48
#define RN_DB_SEQ_MASK ((1ull << RN_DB_SEQ_BITS) - 1)
#define RN_DB_RECORD(qp_index, seq)                                            \
	(((__u64)(qp_index) << RN_DB_SEQ_BITS) | ((__u64)(seq) & RN_DB_SEQ_MASK))
#define RN_DB_QP_INDEX(rec) ((__u32)((rec) >> RN_DB_SEQ_BITS))
#define RN_DB_SEQ(rec) ((rec) & RN_DB_SEQ_MASK)

/*
 * QP memory: this control block at offset 0, the SQ ring at sq_offset and
 * the RQ ring at rq_offset (both given at creation), rings of 64-byte slots.
 * Besides the slots, both sides count WRs, so that a queue takes exactly
 * max_send_wr / max_recv_wr of them whatever their size.
 */
struct rn_qp_ctrl {
	/* written by the provider */
	__u64 sq_db; /* RN_DB_RECORD(qp index, SQ producer) */
	__u32 rq_prod; /* RQ slots posted */
	__u32 reserved0;
	__u8 pad0[48];
	/* written by the device */
	__u64 sq_cons; /* SQ slots retired (completed or flushed), 48 bits */
	__u32 rq_cons; /* RQ slots consumed */
	__u32 sq_wr_cons; /* SQ WRs retired */
	__u32 rq_wr_cons; /* RQ WRs consumed */
	__u8 state; /* enum ibv_qp_state value, as the device sees it */
	__u8 pad1[43];
	/* written by the device: what it did for this QP, never reset */
	__u64 doorbells; /* doorbell records read */
	__u64 groups; /* groups fetched */
	__u64 wqes; /* send WQEs fetched */
	__u64 stale; /* doorbell records dropped as stale */
	/*
	 * written by the device: this QP's outcomes on the wire, never reset
	 * (wrapping); the device's sums are its hw_counters, named as rxe's
	 */
	__u32 ack_timeouts; /* local_ack_timeout_err */
	__u32 seq_naks; /* rcvd_seq_err and implied_nak_seq_err */
	__u32 retries; /* completer_retry_err: go-back-N from either */
	__u32 rnr_naks; /* rcvd_rnr_err */
	__u32 remote_naks; /* req_remote_*: rejected by the target */
	__u32 duplicate_requests; /* duplicate_request (responder) */
	__u32 out_of_seq_requests; /* out_of_seq_request (responder) */
	__u32 naks_sent; /* resp_naks_sent and send_rnr_err (responder) */
	/* written by the device: faults injected (RN_CTL_FAULTS), apart */
	__u32 injected_faults;
	__u8 pad2[60];
};

_Static_assert(sizeof(struct rn_qp_ctrl) == 256, "qp ctrl layout");
_Static_assert(__builtin_offsetof(struct rn_qp_ctrl, sq_cons) == 64, "qp ctrl lines");

/* ----------------------------------------------------------------- CQ --- */

/*
 * What a UD receive reports in ibv_wc.sl, as RoCE NICs do (mlx5): which
 * header the 40-byte GRH area holds.  UCX's ud_verbs relies on it to find
 * the destination address there.
 */
enum rn_cqe_roce_type {
	RN_ROCE_V1 = 0, /* a real GRH */
	RN_ROCE_V2_IPV6 = 1, /* an IPv6 header */
	RN_ROCE_V2_IPV4 = 2, /* 20 zero bytes, then an IPv4 header */
};

enum rn_cqe_flags {
	RN_CQE_WITH_IMM = 1 << 0, /* imm_data holds the immediate */
	RN_CQE_WITH_INV = 1 << 1, /* imm_data holds the invalidated rkey */
	RN_CQE_GRH = 1 << 2, /* a UD receive: the buffer starts with a GRH */
};

/*
 * A CQE is valid when (owner & 1) equals the phase of the pass the consumer
 * is on: 1 on the first pass over the ring, 0 on the second, and so on.  The
 * device writes every other field first and the owner byte last (release);
 * the consumer reads the owner byte (acquire) before anything else.
 * opcode and status hold enum ibv_wc_opcode / enum ibv_wc_status values,
 * which are also the kernel's uverbs values.
 */
struct rn_cqe {
	__u64 wr_id;
	__u32 byte_len;
	__u32 imm_data; /* network byte order; or the invalidated rkey */
	__u32 qp_num;
	__u32 src_qp;
	__u8 sl; /* UD over RoCE: the packet type (enum rn_cqe_roce_type) */
	__u8 reserved[3];
	__u8 opcode;
	__u8 status;
	__u8 flags; /* enum rn_cqe_flags */
	__u8 owner;
};

_Static_assert(sizeof(struct rn_cqe) == 32, "cqe layout");

#define RN_CQE_PHASE(counter, log2_n) ((((counter) >> (log2_n)) & 1) ^ 1)

/*
 * The arm word: bits 1..0 the requested notification level, bits 31..2 a
 * sequence the provider bumps on every arm, so that the device's clearing
 * compare-and-swap can never be confused by a re-arm (no ABA).
 * Levels are ordered ERRORS < SOLICITED < ANY; re-arming before the arm
 * fired keeps the larger level.  An ERRORS arm fires on an error
 * completion, SOLICITED on a solicited one or an error, ANY on any.
 * The device fires by clearing the level with a compare-and-swap.
 */
enum rn_arm_level {
	RN_ARM_NONE = 0,
	RN_ARM_ERRORS = 1,
	RN_ARM_SOLICITED = 2,
	RN_ARM_ANY = 3,
};
#define RN_ARM_LEVEL_MASK 3u
#define RN_ARM_SEQ_ONE 4u

/* The arm word after arming 'old' at 'level'. */
static inline __u32 rn_arm_raise(__u32 old, __u32 level)
{
	__u32 cur = old & RN_ARM_LEVEL_MASK;

	return ((old & ~RN_ARM_LEVEL_MASK) + RN_ARM_SEQ_ONE) |
	       (cur > level ? cur : level);
}

/*
 * CQ memory: this control block, then the ring of struct rn_cqe at
 * RN_CQ_RING_OFFSET.
 *
 * Notifications of one CQ never overlap: the device writes an event to the
 * CQ's completion channel only when the provider has consumed the previous
 * one (events_consumed, bumped when the application reads an event).  A
 * notification that fires meanwhile is held back and 'deferred' is set;
 * the provider then rings the CQ's doorbell after consuming an event, and
 * the device delivers it.  Both sides go seq_cst on these two fields.
 */
struct rn_cq_ctrl {
	/* written by the provider */
	__u32 cons; /* CQEs consumed */
	__u32 arm; /* arm word, see above */
	__u32 events_consumed; /* events the application has read */
	__u8 pad0[52];
	/* written by the device */
	__u32 overrun; /* nonzero once the device found the ring full */
	__u32 deferred; /* a fired notification waits for events_consumed */
	__u8 pad1[56];
};

#define RN_CQ_RING_OFFSET 128
_Static_assert(sizeof(struct rn_cq_ctrl) == RN_CQ_RING_OFFSET, "cq ctrl layout");

/* ---------------------------------------------------------------- SRQ --- */

/*
 * SRQ memory: this control block, then a ring of receive WQEs (struct
 * rn_recv_wqe) at RN_SRQ_RING_OFFSET.  Every QP attached to the SRQ takes
 * its receive WQEs from here, in order.  wr_prod is read only to tell when
 * the SRQ falls below its limit (IBV_EVENT_SRQ_LIMIT_REACHED).
 */
struct rn_srq_ctrl {
	/* written by the provider */
	__u32 prod; /* slots posted */
	__u32 wr_prod; /* WRs posted */
	__u8 pad0[56];
	/* written by the device */
	__u32 cons; /* slots consumed */
	__u32 wr_cons; /* WRs consumed */
	__u8 pad1[56];
};

#define RN_SRQ_RING_OFFSET 128
_Static_assert(sizeof(struct rn_srq_ctrl) == RN_SRQ_RING_OFFSET, "srq ctrl layout");

#endif
