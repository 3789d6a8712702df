/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ringnicd: the software RDMA NIC.  One process is one device.  Two
 * threads run its code, the control thread (requests, rdma_cm, netlink)
 * and the engine (the data path), one at a time: they take turns through
 * the gate (engine/gate.c), so no object needs a lock.
 */
#ifndef RN_CORE_TYPES_H
#define RN_CORE_TYPES_H

#include <limits.h>
#include <net/if.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "kernel-abi/ringnic-abi.h"
#include "kernel-abi/ringnic-counters.h"
#include "kernel-abi/ringnic-ctl.h"
#include "kernel-abi/ringnic-devpage.h"
#include "kernel-abi/ringnic-queue.h"
#include "base/clock.h"
#include "base/gid.h"
#include "base/list.h"
#include "base/log.h"
#include "base/table.h"
#include "base/timer.h"

struct rn_device;
struct rn_client;
struct rn_context;
struct rn_engine;
struct rn_transport_ops;
struct rn_wire_qp;
struct rn_local_qp;
struct rn_cm;
struct rn_capture;
struct rn_nldev;

#define RN_NAME_MAX 32

/* What an epoll event belongs to. */
/* What an epoll event is about.  The engine thread's epoll (struct
 * rn_engine) watches WAKE, WIRE and KICK; the control thread's the rest.
 */
enum rn_watch_kind {
	RN_WATCH_LISTEN,
	RN_WATCH_SIGNAL,
	RN_WATCH_CLIENT,
	RN_WATCH_WAKE, /* a context's wake-up eventfd */
	RN_WATCH_NETLINK,
	RN_WATCH_NETDEV_TIMER,
	RN_WATCH_GUARD,
	RN_WATCH_KDEV,
	RN_WATCH_WIRE,
	RN_WATCH_EXIT, /* a client's pidfd */
	RN_WATCH_CM_LISTEN, /* rdma_cm's socket (cm/) */
	RN_WATCH_CM_CHANNEL, /* an rdma_cm event channel */
	RN_WATCH_KICK, /* the engine's: the control thread has work for it */
	RN_WATCH_RELAY, /* the control thread's: the engine has work for it */
};

struct rn_watch {
	enum rn_watch_kind kind;
	void *obj;
};

struct rn_pd {
	struct rn_client *client;
	uint32_t handle;
	uint32_t pdn; /* device-wide, for RDMA netlink (dev->next_resn) */
	uint32_t refs; /* MRs, MWs, AHs, SRQs and QPs using it */
};

struct rn_mr {
	struct rn_client *client;
	struct rn_pd *pd;
	uint32_t handle;
	uint32_t key; /* lkey == rkey */
	uint64_t iova; /* first address work requests may name */
	uint64_t length;
	uint64_t addr; /* where iova is in the owner's address space */
	uint32_t access; /* enum ibv_access_flags */
	uint32_t windows; /* memory windows bound to it */
	bool guarded; /* its pages are registered with the client's uffd */
	bool unmapped; /* the client unmapped or moved it: unusable */
	/* With unmapped: the owner's addresses that went (all of them lie in
	 * [gone_start, gone_end), which may hold pages that did not go).
	 */
	uint64_t gone_start, gone_end;
};

/*
 * A memory window: an rkey for part of an MR, with rights of its own.  Its
 * key has RN_MW_KEY_BIT set, so that one key space serves MRs and windows.
 * Type 1 windows are bound by any QP of their PD; a type 2 window belongs,
 * while bound, to the QP that bound it.
 */
struct rn_mw {
	struct rn_client *client;
	struct rn_pd *pd;
	uint32_t handle;
	uint32_t key;
	uint8_t type; /* enum ibv_mw_type */
	struct rn_mr *mr; /* bound to, or NULL */
	uint32_t qpn; /* type 2: the QP that bound it */
	uint64_t addr; /* first address of the window (the MR's iova space) */
	uint64_t length;
	uint32_t access; /* remote rights of the window */
};

#define RN_MW_KEY_BIT 0x80000000u

/* An address handle: where a UD send goes. */
struct rn_ah {
	struct rn_client *client;
	struct rn_pd *pd;
	uint32_t handle;
	struct rn_ah_attr attr;
};

/* An XRC domain: device-wide, since processes share one (verbs/xrcd.c). */
struct rn_xrcd {
	uint32_t id; /* index in dev->xrcds */
	uint32_t opens; /* by contexts */
	uint32_t users; /* XRC SRQs and XRC_RECV QPs in it */
	bool named; /* by the inode below, else private to one opener */
	dev_t file_dev;
	ino_t file_ino;
};

struct rn_cq {
	struct rn_client *client;
	uint32_t handle;
	uint32_t cqn; /* device-wide, for RDMA netlink (dev->next_resn) */
	uint64_t user_handle;
	uint32_t refs; /* QPs completing into it */
	void *mem;
	size_t mem_size;
	struct rn_cq_ctrl *ctrl;
	struct rn_cqe *ring;
	uint32_t entries; /* power of two */
	uint32_t log2_entries;
	uint32_t prod; /* CQEs written */
	bool overrun; /* the CQ is in error and takes no more CQEs */
	/* Engines other than its context's complete into it (an XRC SRQ's
	 * CQ): whoever writes it or its notifications holds 'lock' then.
	 * Set by the control thread, holding every engine; never cleared.
	 */
	bool shared;
	pthread_mutex_t lock;

	/* Notifications (engine/notify.c) */
	int channel_fd; /* write end of the completion channel, or -1 */
	uint32_t notified_prod; /* prod when the last notification fired */
	uint32_t last_err_end; /* prod just after the latest error CQE */
	uint32_t last_sol_end; /* prod after the latest solicited or error CQE */
	bool have_err;
	bool have_sol;
	uint32_t events_written; /* events delivered to the channel */
	bool deferred; /* a notification waits for the previous one */
};

/* A send WQE copied out of the ring and validated. */
struct rn_wqe {
	uint64_t wr_id;
	uint8_t opcode;
	uint8_t flags;
	uint8_t num_sge;
	uint8_t nslots;
	uint32_t imm_data; /* network byte order; SEND_INV, LOCAL_INV: a key */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t inline_len;
	union { /* as in struct rn_send_wqe */
		struct {
			uint64_t compare_add;
			uint64_t swap;
		};
		struct {
			uint64_t length;
			uint32_t lkey;
			uint32_t access;
		} bind;
	};
	struct rn_wqe_dest dest; /* UD, XRC_SEND */
	union {
		struct rn_sge sge[RN_MAX_SGE];
		uint8_t inline_data[RN_MAX_INLINE];
	};
};

/* A receive WQE copied out of the ring and validated. */
struct rn_rwqe {
	uint64_t wr_id;
	uint8_t num_sge;
	uint8_t nslots;
	struct rn_sge sge[RN_MAX_SGE];
};

/*
 * A receive queue: a QP's own, or an SRQ's.  The ring and the counters
 * live in memory shared with the provider; head and wr_cons are the
 * private progress the shared counters are compared to.
 */
struct rn_rq {
	uint8_t *ring;
	uint32_t slots; /* power of two, or 0: no queue */
	uint32_t wqe_slots; /* the largest receive WQE */
	uint32_t max_sge;
	uint32_t head; /* slot counter of the next receive WQE */
	uint32_t wr_cons; /* WRs consumed */
	uint32_t *prod; /* the provider's slot counter */
	uint32_t *shared_cons; /* where head is published */
	uint32_t *shared_wr_cons; /* where wr_cons is published */
};

struct rn_srq {
	struct rn_client *client;
	uint32_t handle;
	uint32_t srqn; /* device-wide: what XRC senders name */
	uint64_t user_handle;
	uint8_t type; /* enum ibv_srq_type */
	struct rn_pd *pd;
	struct rn_cq *cq; /* XRC: where its receives complete */
	struct rn_xrcd *xrcd; /* XRC */
	uint32_t refs; /* QPs attached */
	void *mem;
	size_t mem_size;
	struct rn_srq_ctrl *ctrl;
	struct rn_rq rq;
	uint32_t max_wr;
	uint32_t limit; /* the limit event is armed while nonzero */
};

/* A context holding an XRC_RECV QP: its creator, or one that opened it. */
struct rn_qp_opener {
	struct rn_client *client;
	uint32_t handle;
	uint64_t user_handle;
};

/*
 * What a QP counts of itself: the engine's own copy (rn_qp.counts) of what
 * struct rn_qp_ctrl shows the client (who may write there), and what QP
 * counters sum (verbs/qp_counter.c, `rdma statistic qp`).
 */
enum rn_qp_count {
	RN_QPC_ACK_TIMEOUTS,
	RN_QPC_SEQ_NAKS,
	RN_QPC_RETRIES,
	RN_QPC_RNR_NAKS,
	RN_QPC_REMOTE_NAKS,
	RN_QPC_DUP_REQUESTS,
	RN_QPC_OOS_REQUESTS,
	RN_QPC_NAKS_SENT,
	RN_QPC_INJECTED,
	RN_QP_COUNTS
};

/*
 * A QP counter (`rdma statistic qp`, the kernel's rdma_counter): the
 * counts of the QPs bound to it, each from the moment it was bound, and
 * what QPs since unbound added.  verbs/qp_counter.c keeps them; the
 * engine's thread owns them.
 */
struct rn_qp_counter {
	struct rn_list link; /* on dev->qp_counters.list, oldest first */
	uint32_t id;
	/* made by auto mode, for QPs alike in what its mask says
	 * (RDMA_COUNTER_MASK_*); 0: made by hand
	 */
	uint32_t auto_mask;
	uint8_t qp_type; /* its first QP's */
	pid_t pid; /* its first QP's process */
	struct rn_list qps; /* bound now (rn_qp.counter_link); it goes with
			     * the last
			     */
	uint64_t left[RN_QP_COUNTS]; /* what QPs unbound since had added */
};

struct rn_qp {
	struct rn_client *client; /* XRC_RECV: one of its openers */
	/* The engine that owns it: set at creation, never changed.  Its
	 * data path runs there alone (engine/engine.h).
	 */
	struct rn_engine *engine;
	uint32_t handle; /* index in the client's QP table and doorbells */
	uint32_t qpn;
	uint64_t user_handle;
	uint8_t qp_type; /* enum ibv_qp_type */
	struct rn_pd *pd; /* NULL for XRC_RECV */
	struct rn_cq *send_cq; /* NULL without a send queue */
	struct rn_cq *recv_cq; /* NULL without receives of its own */
	struct rn_srq *srq; /* where its receive WQEs come from, if shared */
	struct rn_xrcd *xrcd; /* XRC_RECV */
	bool sq_sig_all;
	bool has_dest; /* its send WQEs carry a struct rn_wqe_dest */
	struct rn_qp_cap cap;
	struct rn_qp_attr attr; /* attr.qp_state is the authoritative state */
	int sgid; /* the GID entry its address vector names (held), or -1 */

	void *mem;
	size_t mem_size;
	struct rn_qp_ctrl *ctrl;
	uint8_t *sq;
	uint32_t sq_slots; /* 0: no send queue */
	uint32_t sq_wqe_slots; /* largest send WQE the caps allow */
	struct rn_rq rq; /* its own receive queue (rq.slots 0: none) */

	/* Private progress; shared counters are only ever compared to these. */
	uint64_t sq_prod; /* the chain's end, from the last valid doorbell */
	uint64_t sq_head; /* next WQE to execute; slots before it are retired */
	uint32_t sq_wr_cons; /* WRs retired */

	/* XRC_RECV: the contexts holding it (the QP goes with the last). */
	struct rn_qp_opener *openers;
	uint32_t nopeners;

	/* The engine's: the QP waits (a transport asked, rn_engine_wait) for
	 * an RNR timer or an ACK timeout, armed at UINT64_MAX for an ACK
	 * timeout of 0, which never expires.
	 */
	struct rn_timer wait_timer;
	/* The engine's: its fault rules (engine/fault.c); NULL: none. */
	struct rn_fault_plan *faults;
	/* The engine's: what it counts of itself (enum rn_qp_count). */
	uint64_t counts[RN_QP_COUNTS];
	/* The QP counter it is bound to, or NULL, and its counts then. */
	struct rn_qp_counter *counter;
	struct rn_list counter_link;
	uint64_t counter_base[RN_QP_COUNTS];

	bool comm_est; /* IBV_EVENT_COMM_EST sent for this connection */
	bool sqd_notify; /* in SQD: IBV_EVENT_SQ_DRAINED once nothing is in flight */
	/* The transport that runs it (engine/engine.h), and the wire's state of it
	 * when that is the wire.
	 */
	const struct rn_transport_ops *transport;
	struct rn_wire_qp *wire;
	struct rn_local_qp *local; /* the local path's, from creation on */

	bool active; /* on its engine's 'active': may have SQ work */
	struct rn_list active_link;
	/* Its turn reaches objects of another engine (a local peer there):
	 * it is on its engine's 'crossing', to run while it holds them all.
	 */
	bool crossing;
	struct rn_list crossing_link;
};

/*
 * A verbs context: what OPEN made, and every object made in it.  The
 * processes that share it (ibv_import_device of its command fd) are its
 * members, a client each; objects stay their creator's, whose address
 * space their memory is in.  The context goes with the last member that
 * lives: one that goes before is retired (its process and descriptors
 * released, the struct kept for its objects) until then, as a uverbs
 * file keeps what any of its users made until the last one closes it.
 */
struct rn_context {
	struct rn_device *dev;
	struct rn_list link; /* on dev->contexts */
	/* The engine that scans its doorbells and owns its QPs, and its place
	 * on that engine's list of contexts.
	 */
	struct rn_engine *engine;
	struct rn_list engine_link;
	uint32_t ctxn; /* device-wide, for RDMA netlink (dev->next_resn) */
	struct rn_list members; /* its clients (link: ctx_link), retired too */
	uint32_t live; /* members not retired */
	struct rn_watch wake_watch;
	int wake_fd;
	/* The opener's command fd, which an importer shows to name the
	 * context (userspace mode, from NAME_CONTEXT on), or -1.
	 */
	int cmd_fd;
	struct rn_dev_page *dev_page;
	int dev_page_fd; /* its memfd, for the members to map */
	struct rn_table pds;
	struct rn_table mrs;
	struct rn_table mws;
	struct rn_table cqs;
	struct rn_table qps;
	struct rn_table ahs;
	struct rn_table srqs;
	struct rn_table xrcds; /* the domains it opened (struct rn_xrcd) */
	uint64_t shared_bytes; /* rings and device page, see rn_charge */
	uint32_t channels; /* completion channels ringnicd holds for it */
};

/* A connection: a process's membership of a context, or a tool's. */
struct rn_client {
	struct rn_device *dev;
	struct rn_list link; /* on dev->clients, until it is retired */
	struct rn_watch watch; /* control socket */
	struct rn_watch guard_watch; /* uffd */
	struct rn_watch exit_watch; /* pidfd */
	int fd; /* control socket, or -1 for a kernel context */
	uint32_t kctx; /* the kernel's context id (daemon/kdev.c), or 0 */
	pid_t pid; /* its process: see process.c before trusting it; 0 once retired */
	uid_t uid;
	int pidfd; /* the process, from OPEN on (process.c), or -1 */
	int mem_fd; /* its address space: /proc/PID/mem, or -1 */
	bool opened; /* OPEN or IMPORT succeeded: ctx is set */
	bool confirmed; /* the pidfd is known to name the client (process.c) */
	bool retired; /* gone, kept by its context for its objects */
	int async_fd; /* write end of its async event pipe */
	int uffd; /* userfaultfd of its address space, or -1: see guard.c */
	struct rn_context *ctx; /* the context it is a member of, or NULL */
	struct rn_list ctx_link; /* on ctx->members */
	/* The connection is a packet capture, not a context (engine/capture.c). */
	struct rn_capture *capture;
	/* The connection answers RDMA netlink, not a context (daemon/nldev.c). */
	struct rn_nldev *nldev;
};

/*
 * What one context may hold.  QPs and CQs are bounded by the device page's
 * doorbell bitmaps (RN_CTX_MAX_QP/CQ); shared memory and descriptors here.
 */
#define RN_CONTEXT_MAX_PD 4096
#define RN_CONTEXT_MAX_MR 65536
#define RN_CONTEXT_MAX_MW 65536
#define RN_CONTEXT_MAX_AH 65536
#define RN_CONTEXT_MAX_SRQ 4096
#define RN_CONTEXT_MAX_XRCD 64
#define RN_CONTEXT_MAX_CHANNELS 64
#define RN_CONTEXT_MEM_MAX (256ull << 20)
/* Descriptors a client may make ringnicd hold: socket, async, userfaultfd,
 * pidfd, address space, and its context's device page, wake-up, command fd
 * and channels.
 */
#define RN_CLIENT_FDS (8 + RN_CONTEXT_MAX_CHANNELS)

/*
 * What daemon/netdev.c sees of the interface the port is bound to: its
 * identity, link, MTU, and its addresses (those --address allows) as GIDs.
 */
struct rn_link {
	int ifindex; /* 0: no such interface (now) */
	char ifname[IF_NAMESIZE];
	bool running; /* up and running (carrier, or lo up) */
	uint32_t mtu;
	uint32_t naddrs;
	union ibv_gid addrs[RN_GID_TABLE_LEN];
};

/*
 * Port 1 (core/port.c): bound to one network device, as rxe's port is.
 * The interface's addresses are the GIDs, its link the port state, its MTU
 * the active MTU.  daemon/netdev.c keeps the binding current; the
 * transport reads it.
 */
struct rn_port {
	int ifindex; /* 0: the interface is gone, the port is down */
	char ifname[IF_NAMESIZE];
	bool link_up; /* up and running: the port is ACTIVE or INIT */
	uint32_t netdev_mtu; /* bytes, IP packets */
	enum ibv_mtu active_mtu; /* the largest IB MTU netdev_mtu carries */
	/*
	 * GID table, as the kernel's GID cache keeps it: an entry keeps its
	 * index while its address exists; an entry whose address went away
	 * reads as all zeros, and is free again once no QP or AH names it.
	 */
	union ibv_gid gids[RN_GID_TABLE_LEN]; /* all zeros: no address */
	uint32_t gid_users[RN_GID_TABLE_LEN]; /* QPs and AHs naming the entry */
	/*
	 * 0, or why the wire has no socket for the entry's address (an errno
	 * of binding its UDP port): such an entry keeps its address but is
	 * no GID (rn_port_gid_valid).  The wire sets them.
	 */
	int gid_errors[RN_GID_TABLE_LEN];
	uint64_t published[RN_CNT_MAX]; /* what the published files say */
};

_Static_assert(RN_GID_TABLE_LEN <= 32, "GID validity fits a 32-bit mask");

/* What rn_port_set_link / rn_port_set_gids changed. */
enum {
	RN_PORT_NETDEV = 1 << 0, /* ifindex or name */
	RN_PORT_STATE = 1 << 1,
	RN_PORT_MTU = 1 << 2,
	RN_PORT_GIDS = 1 << 3,
	RN_PORT_UNBOUND = 1 << 4, /* the addresses that are no GID, or why */
};

struct rn_device {
	char name[RN_NAME_MAX + 1];
	uint64_t guid; /* network byte order */
	struct rn_device_attr attr;
	struct rn_port port;
	/* The control thread's event loop (struct rn_watch tells its
	 * descriptors apart): clients, rdma_cm, netlink, the kernel device.
	 * Doorbells and packets wake the engine's (struct rn_engine).
	 */
	int epoll_fd;
	/* The control thread's timers: rdma_cm's, the port's, the counters'.
	 * The engine's (the QPs') are its own.
	 */
	struct rn_timers timers;
	uint32_t ntimers; /* room reserved in 'timers' */
	int kdev_fd; /* kernel mode: RN_KDEV_PATH attached to our ib_device */

	struct rn_list clients; /* connections, but retired members */
	struct rn_list contexts; /* struct rn_context */
	uint32_t nclients;
	uint32_t max_clients; /* from the descriptor limit */
	uint64_t shared_bytes; /* charged by all clients */
	uint64_t max_shared_bytes;
	uint32_t ncqs; /* device-wide counts against attr limits */
	uint32_t npds;
	struct rn_table mr_keys; /* key >> 8 -> struct rn_mr */
	uint8_t *mr_tags; /* low byte of the last key at each index (random) */
	struct rn_table mw_keys; /* (key & ~RN_MW_KEY_BIT) >> 8 -> struct rn_mw */
	uint8_t *mw_tags; /* the same for windows */
	struct rn_table qpns; /* qpn & RN_QPN_INDEX_MASK -> struct rn_qp */
	uint16_t *qpn_gens;
	struct rn_table srqns; /* srqn -> struct rn_srq */
	struct rn_table xrcds; /* id -> struct rn_xrcd */
	uint32_t nahs; /* device-wide counts against attr limits */
	uint32_t nmws;
	/* The next number of each kind of object that RDMA netlink names by
	 * a device-wide number of its own (contexts, PDs, CQs), as the
	 * kernel's resource tracking does: they only grow, so none repeats.
	 */
	struct {
		uint32_t ctx, pd, cq;
	} next_resn;
	/* QP counters (verbs/qp_counter.c) and the port's one mode of them. */
	struct {
		struct rn_list list; /* by id */
		uint32_t count;
		uint32_t next_id;
		uint32_t mode; /* RDMA_COUNTER_MODE_* */
		uint32_t auto_mask; /* in auto mode: RDMA_COUNTER_MASK_* */
	} qp_counters;

	bool local_on_wire; /* connect local QPs over the wire too */
	/* QPs with fault rules (engine/fault.c), any engine's: 0, no test.
	 * Written by the control thread, holding every engine.
	 */
	uint32_t faulty_qps;
	/* Packet captures running (engine/capture.c): started and stopped by
	 * the control thread holding every engine, read by the engines.
	 */
	struct rn_list captures;
	struct rn_cm *cm; /* rdma_cm, userspace mode (cm/) */
	/* Its data path (engine/): nengines engines, each owning the QPs of
	 * the contexts it was given, and the holders of their gates (the
	 * control thread, an engine that reaches into another's objects)
	 * taking turns on hold_lock (engine/gate.c).
	 */
	struct rn_engine **engines;
	uint32_t nengines;
	pthread_mutex_t hold_lock;
	/* Atomics of two engines on one address go one at a time
	 * (rn_atomic_apply).
	 */
	pthread_mutex_t atomic_lock;
	/* Windows: a context's engine binds them while engine 0's XRC
	 * targets resolve and invalidate them (rn_windows_lock).
	 */
	pthread_mutex_t mw_lock;
};

/* QPN = generation (10 bits) << 14 | table index; QPNs 0 and 1 are IB's. */
#define RN_QPN_INDEX_BITS 14
#define RN_QPN_INDEX_MASK ((1u << RN_QPN_INDEX_BITS) - 1)
#define RN_QPN_GENS (1u << (24 - RN_QPN_INDEX_BITS))
_Static_assert(RN_MAX_QP <= (1u << RN_QPN_INDEX_BITS), "QPN index bits");

/*
 * The staging buffer of a copy, and so the most bytes one batch moves.
 * Data crosses it twice (in, out): large buffers make the system calls
 * rare, so that a copy costs what its bytes cost.
 */
#define RN_BOUNCE_SIZE (1024u << 10)

/* The counter files are rewritten at most this often, and at the latest
 * this long after a counter changed.
 */
#define RN_COUNTERS_PERIOD_NS 100000000ull

#endif
