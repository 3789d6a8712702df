/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * The kernel stub (ringnic.ko): what passes between it and ringnicd, and
 * between it and the provider.
 *
 * In kernel mode the provider's control requests (ringnic-ctl.h) travel as
 * the driver data of the ordinary uverbs commands; the stub hands each one
 * to the ringnicd attached to the device and returns its answer as the
 * command's driver response.  The stub interprets nothing but the handles it
 * needs for its own objects; ringnicd serves the request exactly as it
 * serves one from its control socket.
 *
 * ringnicd's side is the character device RN_KDEV_PATH:
 *   ioctl(RN_KDEV_ATTACH)  become the engine of one ringnic ib_device
 *   read()                 one struct rn_kdev_req (blocks unless O_NONBLOCK;
 *                          poll() says when one waits)
 *   write()                one struct rn_kdev_reply, struct rn_kdev_event,
 *                          struct rn_kdev_counters,
 *                          struct rn_kdev_engine_counters,
 *                          struct rn_kdev_gsi or struct rn_kdev_port
 * Closing it (ringnicd exiting) detaches: every open context of the device
 * gets IBV_EVENT_DEVICE_FATAL and fails from then on.
 *
 * Descriptors: a request's fds are installed in ringnicd by the read() that
 * returns it; a reply's fds are ringnicd's own, taken by the write().  Each
 * reply fd is either memory (a memfd) that the stub offers the application
 * as an mmap of its uverbs file, or, where its bit is set in fd_pass, a
 * descriptor installed in the application (the wake-up eventfd).
 */
#ifndef RINGNIC_KDEV_H
#define RINGNIC_KDEV_H

#include <linux/ioctl.h>
#include <linux/types.h>
#include "ringnic-ctl.h"
#include "ringnic-counters.h"

#define RN_KDEV_PATH "/dev/ringnic"

/* In class/infiniband/<ibdev>/ of a kernel-registered device: the control
 * protocol version (RN_CTL_VERSION).  The provider's test for kernel mode.
 */
#define RN_SYSFS_KERNEL "ringnic_kernel"

#define RN_KDEV_IBDEV_MAX 64

struct rn_kdev_attach {
	char ibdev[RN_KDEV_IBDEV_MAX]; /* in: NUL-terminated device name */
	__u64 node_guid; /* out: network byte order, from the netdev's MAC */
	__u32 version; /* in: RN_CTL_VERSION */
	__u32 reserved;
};

#define RN_KDEV_ATTACH _IOWR('R', 1, struct rn_kdev_attach)

enum rn_kdev_req_type {
	RN_KDEV_REQUEST = 1, /* body is a control request; reply expected */
	RN_KDEV_CLOSE, /* the context is gone: free what it had; no reply */
	RN_KDEV_GSI_SEND, /* body is a struct rn_kdev_gsi to send; no reply */
};

struct rn_kdev_req {
	__u32 type; /* enum rn_kdev_req_type */
	__u32 ctx; /* the context, unique while ringnicd stays attached */
	__u64 seq; /* echoed in the reply */
	__s32 pid; /* the context's process, in ringnicd's pid namespace */
	__u32 uid;
	__s32 fds[RN_CTL_MAX_FDS];
	__u32 nfds;
	__u32 len; /* bytes of body */
	__u8 body[RN_CTL_MSG_MAX];
};

enum rn_kdev_out_type {
	RN_KDEV_REPLY = 1,
	RN_KDEV_EVENT,
	RN_KDEV_COUNTERS,
	RN_KDEV_GSI_RECV,
	RN_KDEV_PORT,
	RN_KDEV_ENGINE_COUNTERS,
};

struct rn_kdev_reply {
	__u32 type; /* RN_KDEV_REPLY */
	__u32 ctx;
	__u64 seq;
	__s32 fds[RN_CTL_MAX_FDS];
	__u32 nfds;
	__u32 fd_pass; /* bit i: fds[i] goes to the application as a descriptor */
	__u32 len; /* bytes of body: the control response */
	__u32 reserved;
	__u8 body[RN_CTL_MSG_MAX];
};

/*
 * An event for a context: IBV_EVENT_COMM_EST and the other QP events name a
 * QP handle, IBV_EVENT_CQ_ERR a CQ handle, RN_KDEV_COMP a completion
 * notification of a CQ (what ibv_get_cq_event returns).  Event values are
 * enum ibv_event_type, which the kernel's enum ib_event_type equals.
 */
#define RN_KDEV_COMP 0xffffffffu

struct rn_kdev_event {
	__u32 type; /* RN_KDEV_EVENT */
	__u32 ctx;
	__u32 event; /* enum ibv_event_type, or RN_KDEV_COMP */
	__u32 handle;
};

/*
 * The port's counters (ringnic-counters.h), now and then while they move:
 * what the stub reports as the device's hw_counters (`rdma statistic`).
 */
struct rn_kdev_counters {
	__u32 type; /* RN_KDEV_COUNTERS */
	__u32 count; /* RN_CNT_MAX */
	__u64 values[RN_CNT_MAX];
};

/*
 * What one engine of ringnicd (ringnicd --engines) counted of the port's
 * counters, which are the engines' sums; sent with them.  The stub shows
 * them in class/infiniband/<ibdev>/engines/K/hw_counters/, as ringnicd's
 * own tree does in userspace mode, until ringnicd detaches.
 */
#define RN_KDEV_ENGINES_MAX 64

struct rn_kdev_engine_counters {
	__u32 type; /* RN_KDEV_ENGINE_COUNTERS */
	__u32 count; /* RN_CNT_MAX */
	__u32 engine; /* K, below RN_KDEV_ENGINES_MAX */
	__u32 reserved; /* 0 */
	__u64 values[RN_CNT_MAX];
};

/*
 * What ringnicd can do with the port's GIDs, when that changes: none of
 * them is reachable (their UDP port 4791 cannot be bound: another RoCE
 * stack, such as rdma_rxe, holds it) and the stub reports the port INIT
 * rather than ACTIVE while its link is up.  Until ringnicd says so, and
 * once it detaches, the stub assumes it can.
 */
struct rn_kdev_port {
	__u32 type; /* RN_KDEV_PORT */
	__u32 no_gid; /* 1: ringnicd can use none of the port's GIDs */
};

/*
 * A datagram of QP1, the GSI QP over which the kernel's MAD layer runs its
 * CM (rdma_cm in kernel mode).  The stub keeps that QP and its queues; the
 * datagrams go through ringnicd, which sends and receives them as RoCEv2
 * UD packets from and to QP 1 (docs/rdma_cm.md, "Kernel mode").
 *   RN_KDEV_GSI_SEND (a request's body): send mad from our GID sgid_index
 *     to QP remote_qpn at gid, under qkey.
 *   RN_KDEV_GSI_RECV (written, type set): mad arrived from QP remote_qpn
 *     at gid, to our GID sgid_index, under qkey; ipv4 says which IP
 *     version carried it (the stub rebuilds the header the kernel reads).
 */
#define RN_KDEV_MAD_MAX 256

struct rn_kdev_gsi {
	__u32 type; /* RN_KDEV_GSI_RECV when written; 0 in a request body */
	__u32 len; /* bytes of mad */
	__u8 gid[16]; /* the peer's */
	__u8 local_gid[16]; /* RECV: ours it came to (SEND: unused) */
	__u32 sgid_index;
	__u32 remote_qpn;
	__u32 qkey;
	__u32 flow_label;
	__u8 traffic_class;
	__u8 hop_limit;
	__u8 ipv4;
	__u8 reserved;
	__u32 reserved2;
	__u8 mad[RN_KDEV_MAD_MAX];
};

/* ---- the provider's side: driver data of the uverbs commands ---------- */

/*
 * Every command's driver data is a struct rn_kdev_cmd followed by the
 * control request; the driver response a struct rn_kdev_cmd_resp followed
 * by the control response.  fds in: only OPEN's, the userfaultfd (see
 * rn_ctl_open_req; the async pipe of userspace mode is the kernel's own
 * async event file here).  fds out: in the order of the socket protocol,
 * each an mmap offset on the uverbs file or, for the eventfd, a descriptor.
 *
 * Both are 4-byte aligned on purpose: some uverbs responses (ALLOC_PD,
 * REG_MR) end on a 4-byte boundary and driver data follows immediately.
 *
 * Where the kernel passes the driver no command, the stub makes the
 * request itself: CREATE_AH (libibverbs' create_ah command has no driver
 * data in; the answer is still the driver response) and CREATE_QP of an
 * XRC target QP (created without udata, and a QP of the stub's own context
 * with ringnicd).  Commands the kernel serves alone reach neither: opening
 * an XRC domain another process opened, ibv_open_qp, QUERY_PORT.
 */
struct rn_kdev_u64 {
	__u32 lo;
	__u32 hi;
};

struct rn_kdev_cmd {
	__s32 fds[RN_CTL_MAX_FDS];
	__u32 nfds;
	__u32 reserved;
};

struct rn_kdev_cmd_resp {
	struct rn_kdev_u64 fds[RN_CTL_MAX_FDS]; /* mmap offset, or descriptor */
	__u32 nfds;
	__u32 reserved;
	struct rn_kdev_u64 status; /* OPEN: mmap offset of the status page */
};

/*
 * MODIFY_SRQ: its uverbs command has no response, so its driver data ends
 * with where the driver response goes (as rxe's modify_srq does): the stub
 * writes a struct rn_kdev_cmd_resp and the control response at addr, in
 * the caller's memory, before the command returns.
 */
struct rn_kdev_resp_at {
	struct rn_kdev_u64 addr;
	__u32 len; /* bytes at addr: sizeof(struct rn_kdev_cmd_resp) + response */
	__u32 reserved;
};

/*
 * The status page: one per context, the kernel's own, mapped read-only.
 * dead becomes 1 when ringnicd detaches: the provider fails polls and posts
 * from then on without a system call.
 */
struct rn_kdev_status {
	__u32 dead;
};

_Static_assert(sizeof(struct rn_kdev_attach) == 80, "attach layout");
_Static_assert(sizeof(struct rn_kdev_req) == 40 + RN_CTL_MSG_MAX, "req layout");
_Static_assert(sizeof(struct rn_kdev_reply) == 40 + RN_CTL_MSG_MAX, "reply layout");
_Static_assert(sizeof(struct rn_kdev_event) == 16, "event layout");
_Static_assert(sizeof(struct rn_kdev_counters) == 8 + 8 * RN_CNT_MAX,
	       "counters layout");
_Static_assert(sizeof(struct rn_kdev_engine_counters) == 16 + 8 * RN_CNT_MAX,
	       "engine counters layout");
_Static_assert(sizeof(struct rn_kdev_gsi) == 320, "gsi layout");
_Static_assert(sizeof(struct rn_kdev_gsi) <= RN_CTL_MSG_MAX, "gsi in a req");
_Static_assert(sizeof(struct rn_kdev_cmd) == 16, "cmd layout");
_Static_assert(sizeof(struct rn_kdev_cmd_resp) == 32, "cmd resp layout");
_Static_assert(_Alignof(struct rn_kdev_cmd_resp) == 4, "4-byte aligned");
_Static_assert(sizeof(struct rn_kdev_resp_at) == 16, "resp_at layout");

#endif
