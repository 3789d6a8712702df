/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ringnicd: the software RDMA NIC.  One process is one device.  A single
 * thread owns all state: it serves the control socket and runs the data
 * path (the engine) in the same loop, so no object needs a lock.
 */
#ifndef RINGNICD_H
#define RINGNICD_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "kernel-abi/ringnic-abi.h"
#include "kernel-abi/ringnic-ctl.h"
#include "kernel-abi/ringnic-devpage.h"
#include "kernel-abi/ringnic-queue.h"
#include "list.h"
#include "table.h"

struct rn_device;
struct rn_client;
struct batch;

#define RN_RUNTIME_DIR_MAX 96
#define RN_NAME_MAX 32

/* What an epoll event belongs to. */
enum rn_watch_kind {
	RN_WATCH_LISTEN,
	RN_WATCH_SIGNAL,
	RN_WATCH_CLIENT,
	RN_WATCH_WAKE,
	RN_WATCH_NETLINK,
	RN_WATCH_GUARD,
	RN_WATCH_KDEV,
};

struct rn_watch {
	enum rn_watch_kind kind;
	void *obj;
};

struct rn_pd {
	struct rn_client *client;
	uint32_t handle;
	uint32_t refs; /* MRs and QPs using it */
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
	bool guarded; /* its pages are registered with the client's uffd */
	bool unmapped; /* the client unmapped or moved it: unusable */
};

struct rn_cq {
	struct rn_client *client;
	uint32_t handle;
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

	/* Notifications (notify.c) */
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
	uint32_t imm_data; /* network byte order */
	uint64_t remote_addr;
	uint32_t rkey;
	uint32_t inline_len;
	uint64_t compare_add;
	uint64_t swap;
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

struct rn_qp {
	struct rn_client *client;
	uint32_t handle; /* index in the client's QP table and doorbells */
	uint32_t qpn;
	uint64_t user_handle;
	struct rn_pd *pd;
	struct rn_cq *send_cq;
	struct rn_cq *recv_cq;
	bool sq_sig_all;
	struct rn_qp_cap cap;
	struct rn_qp_attr attr; /* attr.qp_state is the authoritative state */

	void *mem;
	size_t mem_size;
	struct rn_qp_ctrl *ctrl;
	uint8_t *sq;
	uint8_t *rq;
	uint32_t sq_slots;
	uint32_t rq_slots;
	uint32_t sq_wqe_slots; /* largest send WQE the caps allow */
	uint32_t rq_wqe_slots;

	/* Private progress; shared counters are only ever compared to these. */
	uint64_t sq_prod; /* the chain's end, from the last valid doorbell */
	uint64_t sq_head; /* next WQE to execute; slots before it are retired */
	uint32_t rq_head; /* next receive WQE to consume */

	/* Requester waiting for an RNR timer or an ACK timeout. */
	uint64_t wait_until_ns; /* 0: not waiting */
	uint8_t retry_left;
	uint8_t rnr_left;
	bool wqe_started; /* retry counters belong to the WQE at sq_head */

	bool comm_est; /* IBV_EVENT_COMM_EST sent for this connection */

	bool active; /* on dev->active: may have SQ work */
	struct rn_list active_link;
};

struct rn_client {
	struct rn_device *dev;
	struct rn_list link;
	struct rn_watch watch; /* control socket */
	struct rn_watch wake_watch; /* wake-up eventfd */
	struct rn_watch guard_watch; /* uffd */
	int fd; /* control socket, or -1 for a kernel context */
	uint32_t kctx; /* the kernel's context id (kdev.c), or 0 */
	pid_t pid;
	uid_t uid;
	bool opened; /* OPEN succeeded */
	int async_fd; /* write end of the context's async event pipe */
	int wake_fd;
	int uffd; /* userfaultfd of its address space, or -1: see guard.c */
	struct rn_dev_page *dev_page;
	struct rn_table pds;
	struct rn_table mrs;
	struct rn_table cqs;
	struct rn_table qps;
	uint64_t shared_bytes; /* rings and device page, see rn_charge */
	uint32_t channels; /* completion channels ringnicd holds for it */
};

/*
 * What one client may hold.  QPs and CQs are bounded by the device page's
 * doorbell bitmaps (RN_CTX_MAX_QP/CQ); shared memory and descriptors here.
 */
#define RN_CLIENT_MAX_PD 4096
#define RN_CLIENT_MAX_MR 65536
#define RN_CLIENT_MAX_CHANNELS 64
#define RN_CLIENT_MEM_MAX (256ull << 20)
/* Descriptors a client may make ringnicd hold: socket, async, wake-up,
 * userfaultfd and its channels. */
#define RN_CLIENT_FDS (4 + RN_CLIENT_MAX_CHANNELS)

struct rn_device {
	char name[RN_NAME_MAX + 1];
	char uverbs_name[IBV_SYSFS_NAME_MAX];
	/* The control socket path must fit in sun_path (108 bytes): that
	 * bounds the runtime dir, and so every path below.
	 */
	char runtime_dir[RN_RUNTIME_DIR_MAX];
	char sysfs_root[RN_RUNTIME_DIR_MAX + 8];
	char ctl_path[108];
	char lock_path[RN_RUNTIME_DIR_MAX + IBV_SYSFS_NAME_MAX + 8];
	char dev_node[IBV_SYSFS_NAME_MAX + 32];
	bool published;
	uint64_t guid; /* network byte order */
	struct rn_device_attr attr;

	int epoll_fd;
	int listen_fd;
	int kdev_fd; /* kernel mode: RN_KDEV_PATH attached to our ib_device */
	struct rn_watch kdev_watch;
	int signal_fd;
	int lock_fd;
	bool locked; /* we hold lock_path: the name is ours in runtime_dir */
	bool listening; /* ctl_path is our socket */
	struct rn_watch listen_watch;
	struct rn_watch signal_watch;
	struct rn_watch netlink_watch;
	void *netlink; /* struct nl_sock * for address changes, or NULL */
	bool stop;
	uint64_t idle_poll_ns; /* polling after the last work, then sleep */

	struct rn_list clients;
	uint32_t nclients;
	uint32_t max_clients; /* from the descriptor limit */
	uint64_t shared_bytes; /* charged by all clients */
	uint64_t max_shared_bytes;
	uint32_t ncqs; /* device-wide counts against attr limits */
	uint32_t npds;
	struct rn_table mr_keys; /* key >> 8 -> struct rn_mr */
	uint8_t *mr_tags; /* low byte of the next key at each index */
	struct rn_table qpns; /* qpn & RN_QPN_INDEX_MASK -> struct rn_qp */
	uint16_t *qpn_gens;

	struct rn_list active; /* QPs that may have send work */
	uint8_t *bounce; /* staging buffer for process_vm_readv/writev */
	struct batch *batch; /* a run of WRITEs being moved (engine.c) */
	struct rn_stage *stage; /* the SQ slots last fetched (wqe.h) */
	struct rn_qp *stage_qp; /* whose they are */
};

/* QPN = generation (10 bits) << 14 | table index; QPNs 0 and 1 are IB's. */
#define RN_QPN_INDEX_BITS 14
#define RN_QPN_INDEX_MASK ((1u << RN_QPN_INDEX_BITS) - 1)
#define RN_QPN_GENS (1u << (24 - RN_QPN_INDEX_BITS))
_Static_assert(RN_MAX_QP <= (1u << RN_QPN_INDEX_BITS), "QPN index bits");

/*
 * The staging buffer of a copy, and so the most bytes one batch moves.
 * Data crosses it twice (in, out): large buffers make the two system calls
 * rare, so a copy costs what two memcpys cost.
 */
#define RN_BOUNCE_SIZE (1024u << 10)

/* log.c */
void rn_log_init(bool to_stderr, bool debug);
bool rn_log_debug(void);
void rn_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rn_err(...) rn_log(3, __VA_ARGS__)
#define rn_warn(...) rn_log(4, __VA_ARGS__)
#define rn_info(...) rn_log(6, __VA_ARGS__)
#define rn_dbg(...) rn_log(7, __VA_ARGS__)

/* publish.c: the sysfs-style tree, the /dev node, GIDs */
int rn_publish(struct rn_device *dev);
void rn_unpublish(struct rn_device *dev);
void rn_publish_gids_refresh(struct rn_device *dev);
int rn_gid_watch_start(struct rn_device *dev);
int rn_gid_watch_fd(struct rn_device *dev);
void rn_gid_watch_event(struct rn_device *dev);
void rn_gid_watch_stop(struct rn_device *dev);

/* control.c: the control socket */
int rn_control_listen(struct rn_device *dev);
void rn_control_accept(struct rn_device *dev);
void rn_control_readable(struct rn_client *client);
void rn_client_destroy(struct rn_client *client);

/* kdev.c: kernel mode */
bool rn_kdev_present(const char *name);
int rn_kdev_attach(struct rn_device *dev);
void rn_kdev_readable(struct rn_device *dev);
void rn_kdev_event(struct rn_client *client, uint32_t handle, uint32_t event);

/* guard.c: noticing registered memory being unmapped or moved */
int rn_guard_open(struct rn_client *client, int uffd);
void rn_guard_close(struct rn_client *client);
int rn_guard_mr(struct rn_mr *mr);
void rn_unguard_mr(struct rn_mr *mr);
void rn_guard_readable(struct rn_client *client);

/* objects.c: the device, a client, its PDs, MRs and CQs, what they cost */
int rn_device_init(struct rn_device *dev, uint64_t guid);
void rn_client_init(struct rn_client *client, struct rn_device *dev, pid_t pid,
		    uid_t uid);
void rn_client_release(struct rn_client *client);
void rn_client_objects_destroy(struct rn_client *client);
int rn_charge(struct rn_client *client, uint64_t bytes);
void rn_uncharge(struct rn_client *client, uint64_t bytes);
int rn_pd_alloc(struct rn_client *client, uint32_t *handle);
int rn_pd_dealloc(struct rn_client *client, uint32_t handle);
int rn_mr_reg(struct rn_client *client, const struct rn_ctl_reg_mr_req *req,
	      struct rn_ctl_reg_mr_resp *resp);
int rn_mr_dereg(struct rn_client *client, uint32_t handle);
int rn_cq_create(struct rn_client *client, const struct rn_ctl_create_cq_req *req,
		 struct rn_ctl_create_cq_resp *resp, int *channel, int *memfd);
int rn_cq_destroy(struct rn_client *client, uint32_t handle);
void *rn_shared_alloc(size_t size, int *memfd);
void rn_async_event(struct rn_client *client, uint32_t handle,
		    uint64_t user_handle, uint32_t type);

/* cq.c */
bool rn_cq_push(struct rn_cq *cq, const struct rn_cqe *cqe, bool solicited);

/* notify.c */
void rn_cq_note(struct rn_cq *cq, bool error, bool solicited);
void rn_cq_ring(struct rn_cq *cq);

/* qp.c */
int rn_qp_create(struct rn_client *client, const struct rn_ctl_create_qp_req *req,
		 struct rn_ctl_create_qp_resp *resp, int *memfd);
int rn_qp_modify(struct rn_client *client, const struct rn_ctl_modify_qp_req *req);
int rn_qp_query(struct rn_client *client, uint32_t handle,
		struct rn_ctl_query_qp_resp *resp);
int rn_qp_destroy(struct rn_client *client, uint32_t handle);
void rn_qp_free(struct rn_qp *qp);
struct rn_qp *rn_qp_by_qpn(struct rn_device *dev, uint32_t qpn);
void rn_qp_set_state(struct rn_qp *qp, enum ibv_qp_state state);
void rn_qp_to_error(struct rn_qp *qp);

/* engine.c */
int rn_engine_init(struct rn_device *dev);
bool rn_engine_pass(struct rn_device *dev, uint64_t now_ns);
void rn_engine_doorbell(struct rn_qp *qp);
void rn_engine_schedule(struct rn_qp *qp);
void rn_engine_unschedule(struct rn_qp *qp);
void rn_engine_flush(struct rn_qp *qp);
void rn_engine_forget(struct rn_qp *qp);
uint64_t rn_engine_next_timer(struct rn_device *dev);
bool rn_engine_sleep_prepare(struct rn_device *dev);
void rn_engine_wake(struct rn_device *dev);

uint64_t rn_now_ns(void);

#endif
