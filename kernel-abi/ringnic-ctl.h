/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * Control messages between the provider and ringnicd, one request and one
 * response per SOCK_SEQPACKET datagram on the device's control socket.
 * Every request starts with struct rn_ctl_req_hdr, every response with
 * struct rn_ctl_resp_hdr; status is 0 or a positive errno, and a failed
 * request has changed nothing.  File descriptors travel as SCM_RIGHTS where
 * a message says so.
 *
 * Handles are indices into per-context tables kept by ringnicd; a handle of
 * another context is simply not found.  Attribute masks and enum values are
 * those of libibverbs (enum ibv_qp_attr_mask, ibv_qp_state, ibv_access_flags,
 * ...), which are also the kernel's uverbs values.
 */
#ifndef RINGNIC_CTL_H
#define RINGNIC_CTL_H

#include <linux/types.h>

enum rn_ctl_op {
	RN_CTL_OPEN = 1,
	RN_CTL_ALLOC_PD,
	RN_CTL_DEALLOC_PD,
	RN_CTL_REG_MR,
	RN_CTL_DEREG_MR,
	RN_CTL_CREATE_CQ,
	RN_CTL_DESTROY_CQ,
	RN_CTL_CREATE_QP,
	RN_CTL_MODIFY_QP,
	RN_CTL_QUERY_QP,
	RN_CTL_DESTROY_QP,
	RN_CTL_QUERY_PORT,
	RN_CTL_CREATE_AH,
	RN_CTL_DESTROY_AH,
	RN_CTL_CREATE_SRQ,
	RN_CTL_MODIFY_SRQ,
	RN_CTL_QUERY_SRQ,
	RN_CTL_DESTROY_SRQ,
	RN_CTL_OPEN_XRCD,
	RN_CTL_CLOSE_XRCD,
	RN_CTL_OPEN_QP,
	RN_CTL_ALLOC_MW,
	RN_CTL_DEALLOC_MW,
	RN_CTL_REREG_MR,
	RN_CTL_RESIZE_CQ,
	RN_CTL_QUERY_PD,
	RN_CTL_QUERY_MR,
	RN_CTL_CAPTURE,
	RN_CTL_NETLINK,
	RN_CTL_FAULTS,
	RN_CTL_NAME_CONTEXT,
	RN_CTL_IMPORT,
	RN_CTL_GUARD,
	RN_CTL_OP_MAX = RN_CTL_GUARD,
};

/* The largest message either side sends; receivers size their buffer by it. */
#define RN_CTL_MSG_MAX 512
/* Descriptors one message carries, at most, either way. */
#define RN_CTL_MAX_FDS 2

struct rn_ctl_req_hdr {
	__u32 op; /* enum rn_ctl_op */
	__u32 len; /* bytes in the whole message */
};

struct rn_ctl_resp_hdr {
	__s32 status; /* 0 or a positive errno */
	__u32 len;
};

/* DEALLOC_PD, DEREG_MR, DESTROY_CQ, QUERY_QP, DESTROY_QP, DESTROY_AH,
 * QUERY_SRQ, DESTROY_SRQ, CLOSE_XRCD, DEALLOC_MW, QUERY_PD, QUERY_MR
 */
struct rn_ctl_handle_req {
	struct rn_ctl_req_hdr hdr;
	__u32 handle;
	__u32 reserved;
};

/* ---- OPEN: the first message on a connection -------------------------- */

/*
 * fds in: the write end of the context's async event pipe, then, where the
 * client can make one, a userfaultfd of its address space on which
 * UFFDIO_API has not been called (ringnicd enables the events it needs:
 * see device/guard.c).
 */
struct rn_ctl_open_req {
	struct rn_ctl_req_hdr hdr;
	__u32 version; /* RN_CTL_VERSION */
	__u32 reserved;
};

/*
 * NAME_CONTEXT (userspace mode, once, after OPEN): fds in: the context's
 * command fd, the file another process shows to share the context
 * (IMPORT).  A struct rn_ctl_handle_req whose fields are 0.
 *
 * IMPORT, the first message of another connection: the process joins the
 * context whose command fd it shows (ibv_import_device).  The request is
 * a struct rn_ctl_open_req; fds in: the write end of its async event
 * pipe, then the command fd.  The answer is OPEN's, the same device page
 * and wake-up eventfd.  A file that names no context: EBADF.
 *
 * GUARD (userspace mode, once, by a client that has none; after IMPORT,
 * which has no room for it): fds in: a userfaultfd of the process's
 * address space, as OPEN takes one.  A struct rn_ctl_handle_req whose
 * fields are 0.
 */

struct rn_device_attr {
	__u64 node_guid; /* network byte order */
	__u64 sys_image_guid; /* network byte order */
	__u64 max_mr_size;
	__u64 page_size_cap;
	__u32 vendor_id;
	__u32 vendor_part_id;
	__u32 hw_ver;
	__u32 max_qp;
	__u32 max_qp_wr;
	__u32 max_sge;
	__u32 max_inline;
	__u32 max_cq;
	__u32 max_cqe;
	__u32 max_mr;
	__u32 max_pd;
	__u32 max_qp_rd_atom;
	__u32 max_qp_init_rd_atom;
	__u32 max_res_rd_atom;
	__u32 max_srq;
	__u32 max_srq_wr;
	__u32 max_srq_sge;
	__u32 max_ah;
	__u32 max_mw;
	__u32 max_xrcd;
	char fw_ver[32];
};

/* fds out: the device page (memfd, RN_DEV_PAGE_SIZE), the wake-up eventfd */
struct rn_ctl_open_resp {
	struct rn_ctl_resp_hdr hdr;
	struct rn_device_attr attr;
};

/* ---- PD ----------------------------------------------------------------- */

struct rn_ctl_alloc_pd_req {
	struct rn_ctl_req_hdr hdr;
};

struct rn_ctl_alloc_pd_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 pd;
	__u32 reserved;
};

/* ---- MR ----------------------------------------------------------------- */

struct rn_ctl_reg_mr_req {
	struct rn_ctl_req_hdr hdr;
	__u64 addr; /* where the memory is in the caller */
	__u64 length;
	__u64 iova; /* the address work requests use */
	__u32 pd;
	__u32 access; /* enum ibv_access_flags */
};

struct rn_ctl_reg_mr_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 lkey;
	__u32 rkey;
	__u32 reserved;
};

/*
 * QUERY_PD answers with the header alone: whether the context has the PD
 * (ibv_import_pd).  QUERY_MR: what ibv_import_mr learns of an MR.
 */
struct rn_ctl_query_mr_resp {
	struct rn_ctl_resp_hdr hdr;
	__u64 iova;
	__u64 length;
	__u32 pd;
	__u32 access; /* enum ibv_access_flags */
	__u32 lkey;
	__u32 rkey;
};

/* ---- CQ ----------------------------------------------------------------- */

/* fds in: optionally, the write end of the CQ's completion channel */
struct rn_ctl_create_cq_req {
	struct rn_ctl_req_hdr hdr;
	__u64 user_handle; /* echoed in async events */
	__u32 cqe; /* minimum number of entries */
	__u32 reserved;
};

/* fds out: the CQ memory (memfd of mmap_size bytes) */
struct rn_ctl_create_cq_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 ring_entries; /* a power of two, >= the request */
	__u64 mmap_size;
};

/* ---- QP ----------------------------------------------------------------- */

struct rn_qp_cap {
	__u32 max_send_wr;
	__u32 max_recv_wr;
	__u32 max_send_sge;
	__u32 max_recv_sge;
	__u32 max_inline_data;
	__u32 reserved;
};

/*
 * Which handles a QP type uses (the others must be 0):
 *   RC, UC, UD    pd, send_cq, recv_cq, and srq when has_srq
 *   XRC_SEND      pd, send_cq (a send queue only)
 *   XRC_RECV      xrcd (no queues: its messages go to the XRC SRQs of
 *                 that domain the senders name)
 */
struct rn_ctl_create_qp_req {
	struct rn_ctl_req_hdr hdr;
	__u64 user_handle; /* echoed in async events */
	__u32 pd;
	__u32 send_cq;
	__u32 recv_cq;
	__u8 qp_type; /* enum ibv_qp_type */
	__u8 sq_sig_all;
	__u8 has_srq;
	__u8 reserved;
	__u32 srq;
	__u32 xrcd;
	struct rn_qp_cap cap; /* minimum capacities */
};

/* fds out: the QP memory (memfd of mmap_size bytes), see struct rn_qp_ctrl */
struct rn_ctl_create_qp_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle; /* also the QP's index in RN_DB_RECORD */
	__u32 qpn;
	struct rn_qp_cap cap; /* actual capacities, >= the request */
	__u32 sq_slots; /* powers of two */
	__u32 rq_slots;
	__u64 sq_offset;
	__u64 rq_offset;
	__u64 mmap_size;
};

struct rn_ah_attr {
	__u8 dgid[16];
	__u32 flow_label;
	__u16 dlid;
	__u8 sgid_index;
	__u8 hop_limit;
	__u8 traffic_class;
	__u8 sl;
	__u8 src_path_bits;
	__u8 static_rate;
	__u8 is_global;
	__u8 port_num;
	__u8 reserved[2];
};

struct rn_qp_attr {
	__u32 qp_state;
	__u32 cur_qp_state;
	__u32 path_mtu;
	__u32 path_mig_state;
	__u32 qkey;
	__u32 rq_psn;
	__u32 sq_psn;
	__u32 dest_qp_num;
	__u32 qp_access_flags;
	__u16 pkey_index;
	__u8 en_sqd_async_notify;
	__u8 sq_draining;
	__u8 max_rd_atomic;
	__u8 max_dest_rd_atomic;
	__u8 min_rnr_timer;
	__u8 port_num;
	__u8 timeout;
	__u8 retry_cnt;
	__u8 rnr_retry;
	__u8 reserved;
	struct rn_ah_attr ah_attr;
	struct rn_qp_cap cap;
};

struct rn_ctl_modify_qp_req {
	struct rn_ctl_req_hdr hdr;
	__u32 handle;
	__u32 attr_mask; /* enum ibv_qp_attr_mask */
	struct rn_qp_attr attr;
	/* To RESET: where the provider's producers are, in slots and in WRs;
	 * the emptied queues restart there (see RN_DB_RECORD).
	 */
	__u64 sq_seq;
	__u32 rq_seq;
	__u32 sq_wr_seq;
	__u32 rq_wr_seq;
	__u32 reserved;
};

struct rn_ctl_query_qp_resp {
	struct rn_ctl_resp_hdr hdr;
	struct rn_qp_attr attr; /* every attribute; attr.cap are the actual caps */
	__u8 sq_sig_all;
	__u8 reserved[7];
};

/* ---- QUERY_PORT: the port's state and counters ------------------------ */

struct rn_ctl_query_port_req {
	struct rn_ctl_req_hdr hdr;
	__u32 port;
	__u32 reserved;
};

struct rn_port_attr {
	__u32 state; /* enum ibv_port_state */
	__u32 phys_state;
	__u32 max_mtu; /* enum ibv_mtu */
	__u32 active_mtu;
	__u32 gid_tbl_len;
	__u32 max_msg_sz;
	__u32 bad_pkey_cntr;
	__u32 qkey_viol_cntr;
	__u8 active_width;
	__u8 active_speed;
	__u8 reserved[6];
};

struct rn_ctl_query_port_resp {
	struct rn_ctl_resp_hdr hdr;
	struct rn_port_attr attr;
};

/* ---- AH: an address vector for UD sends --------------------------------- */

struct rn_ctl_create_ah_req {
	struct rn_ctl_req_hdr hdr;
	__u32 pd;
	__u32 reserved;
	struct rn_ah_attr attr;
};

struct rn_ctl_create_ah_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 reserved;
};

/* ---- SRQ ----------------------------------------------------------------- */

/* XRC SRQs (srq_type IBV_SRQT_XRC) also name their domain and CQ. */
struct rn_ctl_create_srq_req {
	struct rn_ctl_req_hdr hdr;
	__u64 user_handle; /* echoed in async events */
	__u32 pd;
	__u32 srq_type; /* enum ibv_srq_type: BASIC or XRC */
	__u32 xrcd;
	__u32 cq;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 reserved;
};

/* fds out: the SRQ memory (memfd of mmap_size bytes), see rn_srq_ctrl */
struct rn_ctl_create_srq_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 srqn; /* the SRQ number XRC senders name */
	__u32 max_wr; /* actual, >= the request */
	__u32 max_sge;
	__u32 ring_slots; /* a power of two */
	__u32 reserved;
	__u64 mmap_size;
};

/*
 * attr_mask: IBV_SRQ_MAX_WR resizes the SRQ (never below the WRs it holds);
 * IBV_SRQ_LIMIT arms the limit event (0 disarms).  A resize answers with
 * new memory (one fd, as CREATE_SRQ) holding the same WRs at the same
 * counters; the provider must not post while it waits for the answer.
 */
struct rn_ctl_modify_srq_req {
	struct rn_ctl_req_hdr hdr;
	__u32 handle;
	__u32 attr_mask; /* enum ibv_srq_attr_mask */
	__u32 max_wr;
	__u32 srq_limit;
};

struct rn_ctl_modify_srq_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 max_wr;
	__u32 ring_slots;
	__u64 mmap_size; /* 0: the memory did not change */
};

struct rn_ctl_query_srq_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 max_wr;
	__u32 max_sge;
	__u32 srq_limit;
	__u32 reserved;
};

/* ---- XRC domains ------------------------------------------------------- */

/*
 * fds in: none for a domain of this context alone, or a file whose inode
 * names a domain shared by every context that opens it: oflags O_CREAT
 * makes it if it does not exist (else EAGAIN), O_EXCL with it refuses an
 * existing one (EINVAL), as the kernel's uverbs do.
 */
struct rn_ctl_open_xrcd_req {
	struct rn_ctl_req_hdr hdr;
	__u32 oflags;
	__u32 reserved;
};

struct rn_ctl_open_xrcd_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 reserved;
};

/* Open the XRC_RECV QP qpn of the domain xrcd (a handle of this context). */
struct rn_ctl_open_qp_req {
	struct rn_ctl_req_hdr hdr;
	__u64 user_handle;
	__u32 xrcd;
	__u32 qpn;
};

struct rn_ctl_open_qp_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 reserved;
};

/* ---- memory windows -------------------------------------------------- */

struct rn_ctl_alloc_mw_req {
	struct rn_ctl_req_hdr hdr;
	__u32 pd;
	__u32 type; /* enum ibv_mw_type */
};

struct rn_ctl_alloc_mw_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 handle;
	__u32 rkey; /* unbound; a bind gives it a new key byte */
};

/* ---- rereg MR, resize CQ ------------------------------------------------- */

/* flags: enum ibv_rereg_mr_flags; the fields of what does not change are 0. */
struct rn_ctl_rereg_mr_req {
	struct rn_ctl_req_hdr hdr;
	__u32 handle;
	__u32 flags;
	__u64 addr;
	__u64 length;
	__u64 iova;
	__u32 pd;
	__u32 access;
};

struct rn_ctl_rereg_mr_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 lkey;
	__u32 rkey;
};

/*
 * The CQ moves to new memory (fds out: one, as CREATE_CQ) holding the CQEs
 * not yet polled, first at counter 0; its arm and event state carry over.
 * The provider must not poll or arm while it waits for the answer.
 */
struct rn_ctl_resize_cq_req {
	struct rn_ctl_req_hdr hdr;
	__u32 handle;
	__u32 cqe; /* minimum number of entries */
};

struct rn_ctl_resize_cq_resp {
	struct rn_ctl_resp_hdr hdr;
	__u32 ring_entries;
	__u32 reserved;
	__u64 mmap_size;
};

/* ---- CAPTURE: the first message of a packet capture's connection ------ */

/*
 * Sent instead of OPEN (ringnic-dump(1)), it makes the connection a capture
 * of the device's packets and nothing else: after the answer, ringnicd
 * sends one record per packet, each one datagram, and takes no more
 * requests; the capture ends when the connection closes.  A record that
 * does not fit the socket's buffer is dropped and counted in the next
 * one's 'dropped'.
 *
 * Root and ringnicd's own user see every packet; any other user only the
 * packets of QPs that processes of theirs created.
 */
#define RN_CAPTURE_ANY_QP 0xffffffffu

struct rn_ctl_capture_req {
	struct rn_ctl_req_hdr hdr;
	__u32 qpn; /* the QP of ours a packet is to or from, or RN_CAPTURE_ANY_QP */
	__u32 snaplen; /* bytes of each packet kept, from its IP header */
	__u32 pid; /* only QPs that this process created; 0: any */
	__u32 reserved;
};

enum rn_capture_dir {
	RN_CAPTURE_TX = 1, /* sent by the device */
	RN_CAPTURE_RX, /* received by it */
	/* Between two QPs of the device (the local path): the packet the
	 * message would have been, which nothing sent; qpn is its sender.
	 */
	RN_CAPTURE_LOCAL,
};

/*
 * A record: this header, then the packet from its IP header (IPv4 or IPv6,
 * as LINKTYPE_RAW takes it), cut to the snap length.  ringnicd sends
 * packets through UDP sockets, so it writes the IP and UDP headers as the
 * kernel writes them (the IPv6 flow label excepted: 0).
 */
struct rn_capture_rec {
	__u64 time_ns; /* CLOCK_REALTIME */
	__u32 len; /* the packet's length; the record holds min(len, snaplen) */
	__u32 qpn; /* our QP it is to or from (RN_CAPTURE_LOCAL: from); 0 for none */
	__u32 dropped; /* records dropped since the previous one */
	__u8 dir; /* enum rn_capture_dir */
	__u8 reserved[3];
};

/* ---- NETLINK: the first message of an RDMA netlink connection -------- */

/*
 * Sent instead of OPEN by ringnic-run's shim for a program that opens an
 * RDMA netlink socket (iproute2's rdma tool), it makes the connection
 * answer RDMA netlink (RDMA_NL_NLDEV) about this device as the kernel
 * answers on a NETLINK_RDMA socket.  After the answer to NETLINK, each
 * datagram the client sends is one netlink request of at most
 * RN_CTL_MSG_MAX bytes (nlmsghdr, then attributes), and nothing else: a
 * datagram that is not one message ends the connection.  ringnicd answers
 * it with datagrams of at most RN_NETLINK_DGRAM_MAX bytes, each a struct
 * rn_netlink_hdr and then whole netlink messages as the kernel would send
 * them, each at most RN_NETLINK_MSG_MAX bytes: the replies, then
 * NLMSG_DONE for a dump, an NLMSG_ERROR for an error or an asked-for ack.
 * Requests wait while an answer is being sent.  What the caller may see
 * is the kernel's rule: root and ringnicd's own user the keys of memory,
 * any other user none.
 */
struct rn_ctl_netlink_req {
	struct rn_ctl_req_hdr hdr;
	__u32 dev_index; /* the device's RDMA_NLDEV_ATTR_DEV_INDEX, not 0 */
	__u32 reserved;
};

#define RN_NETLINK_DGRAM_MAX 32768
/*
 * The kernel's NLMSG_GOODSIZE with 4 KiB pages: a dump's messages are cut
 * to it, and programs read with 4 KiB buffers (libmnl's default).
 */
#define RN_NETLINK_MSG_MAX 3776

struct rn_netlink_hdr {
	__u32 last; /* 1: the last datagram of the answer to one request */
	__u32 reserved;
};

/* ---- FAULTS: fault injection for one QP ------------------------------ */

/*
 * The rules replace those the QP had (none: it has none left).  On a
 * context's connection, for a QP of that context (ringnicdv_set_qp_faults);
 * as the first message of a connection (ringnic-fault(1)), for a QP of a
 * process of the caller's user, or of anyone's for root and ringnicd's
 * own user: that connection takes nothing more.  The kinds and their
 * values are ringnicdv.h's (enum ringnicdv_fault_kind), which documents
 * them; a rule's events are counted from the moment it is set.
 */
#define RN_FAULTS_MAX 8

enum rn_fault_kind {
	/* Packets the QP sends: requests, ACKs, READ responses. */
	RN_FAULT_DROP = 1,
	RN_FAULT_DUPLICATE,
	RN_FAULT_DELAY, /* value: microseconds */
	RN_FAULT_REORDER,
	RN_FAULT_CORRUPT_ICRC,
	RN_FAULT_MARK_CE,
	/* Requests the QP receives. */
	RN_FAULT_RNR,
	RN_FAULT_NAK, /* value: enum rn_fault_nak */
	/* Send WRs of the QP. */
	RN_FAULT_WR_ERROR, /* value: an enum ibv_wc_status but SUCCESS */
	RN_FAULT_KIND_MAX = RN_FAULT_WR_ERROR,
};

/* RN_FAULT_NAK's values: the AETH's NAK codes (IB spec 9.7.5.2.4). */
enum rn_fault_nak {
	RN_FAULT_NAK_PSN_SEQ,
	RN_FAULT_NAK_INV_REQ,
	RN_FAULT_NAK_REM_ACCESS,
	RN_FAULT_NAK_REM_OP,
};

struct rn_fault_rule {
	__u32 kind; /* enum rn_fault_kind */
	__u32 nth; /* the rule's nth event (1: the first); 0: by share */
	__u32 share; /* with nth 0: each event with this chance in 10^6 */
	__u32 count; /* hits at most; 0: no limit */
	__u32 value;
	__u32 reserved;
};

struct rn_ctl_faults_req {
	struct rn_ctl_req_hdr hdr;
	__u32 qpn;
	__u32 nrules;
	__u64 seed; /* of the rules' chances */
	struct rn_fault_rule rules[RN_FAULTS_MAX];
};

_Static_assert(sizeof(struct rn_device_attr) == 144, "device attr layout");
_Static_assert(sizeof(struct rn_ah_attr) == 32, "ah attr layout");
_Static_assert(sizeof(struct rn_qp_attr) == 104, "qp attr layout");
_Static_assert(sizeof(struct rn_ctl_create_qp_resp) == 72, "create qp resp layout");
_Static_assert(sizeof(struct rn_ctl_create_qp_req) == 64, "create qp req layout");
_Static_assert(sizeof(struct rn_port_attr) == 40, "port attr layout");
_Static_assert(sizeof(struct rn_ctl_create_srq_req) == 48, "create srq req layout");
_Static_assert(sizeof(struct rn_ctl_create_srq_resp) == 40, "create srq resp layout");
_Static_assert(sizeof(struct rn_ctl_rereg_mr_req) == 48, "rereg mr req layout");
_Static_assert(sizeof(struct rn_ctl_query_mr_resp) == 40, "query mr resp layout");
_Static_assert(sizeof(struct rn_capture_rec) == 24, "capture record layout");
_Static_assert(sizeof(struct rn_ctl_faults_req) == 216, "faults req layout");
_Static_assert(sizeof(struct rn_ctl_modify_qp_req) <= RN_CTL_MSG_MAX, "msg max");
_Static_assert(sizeof(struct rn_ctl_open_resp) <= RN_CTL_MSG_MAX, "msg max");

/* The one size a request of each op has (0: no such op). */
static inline __u32 rn_ctl_req_size(__u32 op)
{
	switch (op) {
	case RN_CTL_OPEN:
	case RN_CTL_IMPORT:
		return sizeof(struct rn_ctl_open_req);
	case RN_CTL_ALLOC_PD:
		return sizeof(struct rn_ctl_alloc_pd_req);
	case RN_CTL_REG_MR:
		return sizeof(struct rn_ctl_reg_mr_req);
	case RN_CTL_CREATE_CQ:
		return sizeof(struct rn_ctl_create_cq_req);
	case RN_CTL_CREATE_QP:
		return sizeof(struct rn_ctl_create_qp_req);
	case RN_CTL_MODIFY_QP:
		return sizeof(struct rn_ctl_modify_qp_req);
	case RN_CTL_QUERY_PORT:
		return sizeof(struct rn_ctl_query_port_req);
	case RN_CTL_CREATE_AH:
		return sizeof(struct rn_ctl_create_ah_req);
	case RN_CTL_CREATE_SRQ:
		return sizeof(struct rn_ctl_create_srq_req);
	case RN_CTL_MODIFY_SRQ:
		return sizeof(struct rn_ctl_modify_srq_req);
	case RN_CTL_OPEN_XRCD:
		return sizeof(struct rn_ctl_open_xrcd_req);
	case RN_CTL_OPEN_QP:
		return sizeof(struct rn_ctl_open_qp_req);
	case RN_CTL_ALLOC_MW:
		return sizeof(struct rn_ctl_alloc_mw_req);
	case RN_CTL_REREG_MR:
		return sizeof(struct rn_ctl_rereg_mr_req);
	case RN_CTL_RESIZE_CQ:
		return sizeof(struct rn_ctl_resize_cq_req);
	case RN_CTL_CAPTURE:
		return sizeof(struct rn_ctl_capture_req);
	case RN_CTL_NETLINK:
		return sizeof(struct rn_ctl_netlink_req);
	case RN_CTL_FAULTS:
		return sizeof(struct rn_ctl_faults_req);
	case RN_CTL_DEALLOC_PD:
	case RN_CTL_DEREG_MR:
	case RN_CTL_DESTROY_CQ:
	case RN_CTL_QUERY_QP:
	case RN_CTL_DESTROY_QP:
	case RN_CTL_DESTROY_AH:
	case RN_CTL_QUERY_SRQ:
	case RN_CTL_DESTROY_SRQ:
	case RN_CTL_CLOSE_XRCD:
	case RN_CTL_DEALLOC_MW:
	case RN_CTL_QUERY_PD:
	case RN_CTL_QUERY_MR:
	case RN_CTL_NAME_CONTEXT:
	case RN_CTL_GUARD:
		return sizeof(struct rn_ctl_handle_req);
	}
	return 0;
}

#endif
