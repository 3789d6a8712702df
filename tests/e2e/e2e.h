/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rn_e2e: end-to-end tests of ringnic through plain libibverbs.
 *
 * Every subtest runs in fresh processes forked by the harness before any
 * device is opened: usually a requester (role 0) and a responder (role 1),
 * each opening ringnic0 itself, talking over a SOCK_SEQPACKET socketpair.
 * A role function returns 0 or -1; the first failure of a process is
 * recorded (file:line and reason) in memory shared with the harness, which
 * prints one line per subtest.  Every wait has a deadline.
 */
#ifndef RN_E2E_H
#define RN_E2E_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "have_uffd.h" /* rn_test_have_uffd(): ask before forking */

#define E2E_MAX_ROLES 4
#define E2E_DEVICE "ringnic0"
/*
 * The device this role opens: E2E_DEVICE, or for the odd roles (responders)
 * RINGNIC_E2E_PEER_DEVICE when it is set, so that pairs cross two devices,
 * e.g. two ringnicd in two network namespaces talking RoCEv2 (tests/wire).
 */
extern const char *e2e_device;

/* How long one expected event (a message, a completion) may take. */
#define E2E_WAIT_MS 10000

/* ---- harness.c ------------------------------------------------------------ */

struct e2e_proc {
	int role;
	int peer; /* socket to the partner role (0<->1, 2<->3), or -1 */
	int ctl; /* socket to the harness */
};

typedef int (*e2e_role_fn)(struct e2e_proc *p);

/*
 * Runs in the harness while the roles run, with their pids and harness-side
 * control sockets; it may reap a role itself (then it sets its pid to 0).
 */
typedef int (*e2e_orchestrate_fn)(pid_t *pids, const int *ctl, int n);

struct e2e_test {
	const char *group;
	const char *name;
	int nroles;
	e2e_role_fn role[E2E_MAX_ROLES];
	e2e_orchestrate_fn orchestrate; /* optional */
	int timeout_s; /* 0: the default */
	const char *role_names[E2E_MAX_ROLES]; /* optional, for reports */
	bool one_device; /* never across two (RINGNIC_E2E_PEER_DEVICE) */
};

extern const struct e2e_test e2e_data_tests[];
extern const struct e2e_test e2e_error_tests[];
extern const struct e2e_test e2e_kill_tests[];
extern const struct e2e_test e2e_unmap_tests[];
extern const struct e2e_test e2e_ud_tests[];
extern const struct e2e_test e2e_srq_tests[];
extern const struct e2e_test e2e_uc_tests[];
extern const struct e2e_test e2e_xrc_tests[];
extern const struct e2e_test e2e_mw_tests[];
extern const struct e2e_test e2e_memory_tests[];
extern const struct e2e_test e2e_object_tests[];
extern const struct e2e_test e2e_import_tests[];
extern const struct e2e_test e2e_fault_tests[];

/* Record the first failure of this process; returns -1. */
int e2e_fail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define FAIL(...) e2e_fail_at(__FILE__, __LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			return FAIL(__VA_ARGS__);                              \
	} while (0)
/* A helper that failed has recorded why: just pass the failure on. */
#define TRY(expr)                                                              \
	do {                                                                   \
		if ((expr))                                                    \
			return -1;                                             \
	} while (0)

uint64_t e2e_now_ms(void);
uint64_t e2e_now_us(void);
void e2e_sleep_ms(unsigned int ms);

/* One datagram each way; a receive fails after timeout_ms or on EOF. */
int msg_send(int fd, const void *buf, size_t len);
int msg_recv(int fd, void *buf, size_t len, int timeout_ms);
/* Send ours, receive theirs (same length). */
int msg_xchg(int fd, const void *mine, void *theirs, size_t len);
/* Both sides reach the same named point. */
int e2e_sync(struct e2e_proc *p, const char *tag);
int send_u64(int fd, uint64_t v);
int recv_u64(int fd, uint64_t *v, int timeout_ms);

/* ---- verbs.c ---------------------------------------------------------------- */

struct e2e_opts {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline;
	int cqe;
	bool sig_all;
	bool qp_ex; /* ibv_create_qp_ex with every send op */
	bool cq_ex; /* ibv_create_cq_ex with every wc field */
	bool channel; /* both CQs on a completion channel of their own */
	unsigned int qp_access; /* the QP's qp_access_flags */
	unsigned int mr_access; /* the buffer's access flags */
	size_t buf_len;
	bool iova; /* register the buffer at E2E_IOVA instead of its address */
	uint32_t srq_max_wr; /* non-zero: the QP receives from an SRQ this big */
	uint32_t srq_max_sge;
	enum ibv_mtu mtu;
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint32_t psn;
	enum ibv_qp_state state; /* where e2e_connect leaves the QP */
	enum ibv_qp_type qp_type; /* RC (the default), UC or UD */
};

/* The Q_Key of UD QPs the harness makes. */
#define E2E_QKEY 0x11223344u

#define E2E_IOVA 0x00007e5700000000ull
#define E2E_ACCESS_ALL                                                         \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* What one side tells the other. */
struct e2e_remote {
	uint32_t qpn;
	uint32_t rkey;
	uint64_t addr; /* the address remote WRs name (iova) */
	uint64_t len;
	uint32_t psn;
	uint8_t gid[16];
};

struct e2e_side {
	struct e2e_proc *p;
	struct e2e_opts o;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *scq, *rcq;
	struct ibv_cq_ex *scqx, *rcqx; /* when o.cq_ex */
	struct ibv_comp_channel *channel; /* when o.channel */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx; /* when o.qp_ex */
	struct ibv_ah *ah; /* UD: towards the peer, made by e2e_connect */
	struct ibv_qp_cap cap; /* what create_qp granted */
	struct ibv_srq *srq; /* when o.srq_max_wr */
	struct ibv_srq_attr srq_attr; /* what create_srq granted */
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t base; /* the address WRs name for buf[0] (addr or iova) */
	union ibv_gid gid;
	struct e2e_remote rem;
};

void e2e_default_opts(struct e2e_opts *o);
int e2e_open_device(struct ibv_context **ctx);
enum ibv_mtu e2e_port_mtu(struct ibv_context *ctx);
/* Device, PD, CQs, QP in RESET and the buffer. */
int e2e_open(struct e2e_side *s, struct e2e_proc *p, const struct e2e_opts *o);
/* Exchange QPN, PSN, GID and buffer with the peer over p->peer. */
int e2e_exchange(struct e2e_side *s);
/* RESET -> INIT -> RTR [-> RTS], towards s->rem. */
int e2e_connect(struct e2e_side *s);
/* All three, then wait for the peer to have done the same. */
int e2e_setup(struct e2e_side *s, struct e2e_proc *p, const struct e2e_opts *o);
int e2e_close(struct e2e_side *s);
/*
 * Another RC QP like s->qp (its CQs and caps) but in pd, connected to the
 * QP the peer makes at the same step: both sides call it.
 */
int e2e_extra_qp(struct e2e_side *s, struct ibv_pd *pd, struct ibv_qp **qp,
		 uint32_t *dest_qpn);
/* A QP (after an error, say) through RESET back to RTS towards dest_qpn. */
int e2e_reset_qp(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn);
/*
 * After an error that put the QP in ERR (and its peer's: both sides call
 * it): back to RTS, and both sides meet there.
 */
int e2e_recover(struct e2e_side *s, struct ibv_qp *qp, uint32_t dest_qpn);

int qp_to_init(struct ibv_qp *qp, unsigned int access);
struct ibv_ah *e2e_ah(struct ibv_pd *pd, const uint8_t *gid);
int qp_to_rtr(struct e2e_side *s, uint32_t dest_qpn, uint32_t rq_psn);
int qp_to_rts(struct e2e_side *s);
int qp_to_state(struct ibv_qp *qp, enum ibv_qp_state state);
int expect_qp_state(struct ibv_qp *qp, enum ibv_qp_state want);

uint8_t *e2e_alloc(size_t len);
struct ibv_mr *e2e_reg(struct ibv_pd *pd, void *addr, size_t len,
		       unsigned int access);

/* Deterministic contents: byte i of pattern 'seed'. */
uint8_t pat(uint32_t seed, size_t i);
void fill(void *buf, size_t len, uint32_t seed);
/* 0, or a failure naming the first byte that differs from the pattern. */
int check_fill(const void *buf, size_t len, uint32_t seed, const char *what);
int check_bytes(const void *got, const void *want, size_t len, const char *what);

/* Posting, failing the test if the provider refuses. */
int post_send1(struct ibv_qp *qp, struct ibv_send_wr *wr);
int post_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int n);
int post_recv_buf(struct e2e_side *s, uint64_t wr_id, size_t off, size_t len);
struct ibv_sge sge_of(struct e2e_side *s, size_t off, size_t len);

/*
 * Completions.  A CQ is either a plain ibv_cq or an ibv_cq_ex (cqx set);
 * the ibv_cq_ex is read with start_poll/next_poll/end_poll and ibv_wc_read_*.
 */
struct e2e_cq {
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;
};
struct e2e_cq scq_of(struct e2e_side *s);
struct e2e_cq rcq_of(struct e2e_side *s);
/* Up to max completions; 0 if none; -1 (recorded) on a poll error. */
int poll_some(struct e2e_cq cq, struct ibv_wc *wc, int max);
/* Exactly one completion within timeout_ms. */
int poll_one(struct e2e_cq cq, struct ibv_wc *wc, int timeout_ms);
/* No completion shows up for ms milliseconds. */
int expect_no_wc(struct e2e_cq cq, unsigned int ms, const char *what);

/* Every field of a completion the verbs define for it. */
struct wc_want {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	uint32_t qp_num;
	bool recv; /* check src_qp */
	uint32_t src_qp;
	bool imm;
	uint32_t imm_data; /* network byte order */
	unsigned int flags; /* wc_flags besides WITH_IMM and WITH_INV */
	bool inv; /* IBV_WC_WITH_INV: check invalidated_rkey */
	uint32_t invalidated_rkey;
	bool flush; /* only status, wr_id and qp_num are defined */
};
int check_wc(const struct ibv_wc *wc, const struct wc_want *w, const char *what);
int expect_wc(struct e2e_cq cq, const struct wc_want *w, const char *what);

/* Requester side: the successful completion of a signaled WR. */
int expect_send_ok(struct e2e_side *s, uint64_t wr_id, enum ibv_wc_opcode op,
		   uint32_t byte_len);
/* Responder side: a receive completion from the peer. */
int expect_recv_ok(struct e2e_side *s, uint64_t wr_id, enum ibv_wc_opcode op,
		   uint32_t byte_len, bool imm, uint32_t imm_data);
/* An error completion (send or recv CQ). */
int expect_err(struct e2e_cq cq, uint64_t wr_id, enum ibv_wc_status status,
	       uint32_t qpn, const char *what);

/* An affiliated async event of the QP within timeout_ms. */
int expect_async(struct ibv_context *ctx, struct ibv_qp *qp,
		 enum ibv_event_type type, int timeout_ms);

const char *wc_status_name(int status);

#endif
