/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rn_hostile: hostile clients against a live ringnicd while a good pair of
 * processes keeps verified traffic running.
 *
 * Processes (all forked by main before any device is opened):
 *   good0, good1  the good pair: WRITE, READ, SEND, WRITE_WITH_IMM and
 *                 FETCH_ADD, every byte checked (good_pair.c)
 *   hostile       corrupts its own rings, speaks garbage on the control
 *                 socket, uses stale keys, unmapped memory and overflowing
 *                 ranges (attack_*.c)
 *   thief         uses the keys, handles and QPNs of the others
 *                 (attack_stolen.c)
 * They share one mapping (struct shared) for counters and the first
 * failure.  Every attempt has an exact expected outcome; a wrong one is
 * recorded with file:line, counted against its class, and fails the test.
 */
#ifndef HOSTILE_H
#define HOSTILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#include "have_uffd.h" /* rn_test_have_uffd(): ask before forking */

/* ---- classes and the variants tried in each ------------------------------- */

enum hclass {
	CL_RINGS, /* corruption of its own rings, doorbells, CQ words */
	CL_CONTROL, /* garbage on the control socket */
	CL_STOLEN, /* keys, handles and QPNs of other processes */
	CL_STALE, /* keys used after deregistration */
	CL_UNMAP, /* registered memory unmapped or moved */
	CL_RANGES, /* overflowing ranges and rights not granted */
	CL_COUNT,
};

#define HOSTILE_VARIANTS(X)                                                    \
	X(CL_RINGS, RING_BAD_OPCODE, "WQE with an unknown opcode")             \
	X(CL_RINGS, RING_BAD_FLAGS, "WQE with unknown flags")                  \
	X(CL_RINGS, RING_BAD_NUM_SGE, "WQE with too many SGEs")                \
	X(CL_RINGS, RING_BAD_NSLOTS, "WQE whose slot count lies")              \
	X(CL_RINGS, RING_BAD_INLINE, "WQE with a bad inline size")             \
	X(CL_RINGS, RING_RANDOM_WQE, "random garbage WQE")                     \
	X(CL_RINGS, RING_HUGE_SGE, "WQE with a 4 GiB SGE length")              \
	X(CL_RINGS, RING_CHAIN_SHORT, "WQE running past its chain")            \
	X(CL_RINGS, RING_GOOD_THEN_BAD, "valid WQE, then garbage")             \
	X(CL_RINGS, RING_DB_PAST_RING, "doorbell past the ring")               \
	X(CL_RINGS, RING_DB_OVER_ZEROS, "doorbell over empty slots")           \
	X(CL_RINGS, RING_DB_BACKWARDS, "doorbell behind the head (stale)")     \
	X(CL_RINGS, RING_DB_RANDOM, "random doorbell record")                  \
	X(CL_RINGS, RING_DB_OTHER_QP, "doorbell naming another QP")            \
	X(CL_RINGS, RING_QP_CTRL_SCRIBBLE, "QP control block scribbled")       \
	X(CL_RINGS, RING_RQ_GARBAGE, "garbage receive WQE")                    \
	X(CL_RINGS, RING_RQ_PROD_JUMP, "receive producer past the ring")       \
	X(CL_RINGS, RING_CQ_ARM_GARBAGE, "garbage CQ arm word")                \
	X(CL_RINGS, RING_CQ_CONS_GARBAGE, "garbage CQ consumer index")         \
	X(CL_RINGS, RING_CQ_CTRL_SCRIBBLE, "CQ control block scribbled")       \
	X(CL_RINGS, RING_DEVPAGE_SCRIBBLE, "doorbell bitmaps scribbled")       \
	X(CL_CONTROL, CTL_BEFORE_OPEN, "request before OPEN")                  \
	X(CL_CONTROL, CTL_EMPTY, "empty datagram")                             \
	X(CL_CONTROL, CTL_TRUNCATED_HDR, "shorter than a header")              \
	X(CL_CONTROL, CTL_LEN_MISMATCH, "header length not the datagram's")    \
	X(CL_CONTROL, CTL_WRONG_SIZE, "wrong size for the opcode")             \
	X(CL_CONTROL, CTL_OVERSIZED, "longer than RN_CTL_MSG_MAX")             \
	X(CL_CONTROL, CTL_BAD_OPCODE, "unknown opcode")                        \
	X(CL_CONTROL, CTL_OPEN_VERSION, "OPEN with a wrong version")           \
	X(CL_CONTROL, CTL_OPEN_FDS, "OPEN without or with a wrong fd")         \
	X(CL_CONTROL, CTL_OPEN_TOO_MANY_FDS, "OPEN with three fds")            \
	X(CL_CONTROL, CTL_OPEN_TWICE, "OPEN twice")                            \
	X(CL_CONTROL, CTL_BAD_IMPORT, "IMPORT, NAME_CONTEXT, GUARD done wrong") \
	X(CL_CONTROL, CTL_CAPTURE_OPENED, "CAPTURE on an opened context")      \
	X(CL_CONTROL, CTL_AFTER_CAPTURE, "request on a packet capture")        \
	X(CL_CONTROL, CTL_UNEXPECTED_FD, "fd with a request taking none")      \
	X(CL_CONTROL, CTL_BAD_HANDLE, "handle that does not exist")            \
	X(CL_CONTROL, CTL_FOREIGN_HANDLE, "handle of another client")          \
	X(CL_CONTROL, CTL_BAD_REG_MR, "REG_MR with bad fields")                \
	X(CL_CONTROL, CTL_BAD_CREATE, "CREATE_CQ/QP with bad fields")          \
	X(CL_CONTROL, CTL_BAD_MODIFY, "MODIFY_QP breaking the rules")          \
	X(CL_CONTROL, CTL_RANDOM, "random bytes")                              \
	X(CL_CONTROL, CTL_FLOOD, "requests without reading answers")           \
	X(CL_CONTROL, CTL_NETLINK, "RDMA netlink garbage, dumps unread")        \
	X(CL_CONTROL, CTL_ABANDON, "connection dropped holding objects")       \
	X(CL_STOLEN, STOLEN_RKEY_WRITE, "WRITE with a stolen rkey")            \
	X(CL_STOLEN, STOLEN_RKEY_READ, "READ with a stolen rkey")              \
	X(CL_STOLEN, STOLEN_RKEY_ATOMIC, "atomic with a stolen rkey")          \
	X(CL_STOLEN, STOLEN_LKEY_SEND, "SEND from a stolen lkey")              \
	X(CL_STOLEN, STOLEN_LKEY_READ, "READ into a stolen lkey")              \
	X(CL_STOLEN, STOLEN_OTHER_PD, "own key of another PD")                 \
	X(CL_STOLEN, STOLEN_FORGED_TAG, "key with a forged tag byte")          \
	X(CL_STOLEN, STOLEN_QPN_SEND, "SEND to a stolen QPN")                  \
	X(CL_STOLEN, STOLEN_QPN_WRITE, "WRITE to a stolen QPN and rkey")       \
	X(CL_STOLEN, STOLEN_QPN_READ, "READ from a stolen QPN and rkey")       \
	X(CL_STALE, STALE_RKEY, "rkey after dereg")                            \
	X(CL_STALE, STALE_LKEY_SEND, "lkey after dereg, SEND source")          \
	X(CL_STALE, STALE_LKEY_RECV, "lkey after dereg, RECV target")          \
	X(CL_STALE, STALE_LKEY_READ, "lkey after dereg, READ target")          \
	X(CL_STALE, STALE_REREGISTERED, "old key of a re-registered buffer")   \
	X(CL_STALE, STALE_DEREG_IN_FLIGHT, "dereg while a WRITE waits")        \
	X(CL_STALE, STALE_CLOSED_CONTEXT, "key of a closed context")           \
	X(CL_UNMAP, UNMAP_HOLE, "munmap, left unmapped")                       \
	X(CL_UNMAP, UNMAP_REMAP, "munmap, then mmap at the same address")      \
	X(CL_UNMAP, UNMAP_MAP_FIXED, "mmap MAP_FIXED over the region")         \
	X(CL_UNMAP, UNMAP_MREMAP, "mremap elsewhere")                          \
	X(CL_UNMAP, UNMAP_MREMAP_REFILL, "mremap, then mmap at the old place") \
	X(CL_UNMAP, UNMAP_SHRINK, "mremap shrinking it")                       \
	X(CL_UNMAP, UNMAP_IN_FLIGHT, "remapped while a WRITE waits")           \
	X(CL_RANGES, RANGE_REMOTE_END_PLUS_1, "remote range 1 byte past the end") \
	X(CL_RANGES, RANGE_REMOTE_BELOW, "remote address below the MR")        \
	X(CL_RANGES, RANGE_REMOTE_WRAP, "remote address + length wraps")       \
	X(CL_RANGES, RANGE_LOCAL_END_PLUS_1, "local SGE 1 byte past the end")  \
	X(CL_RANGES, RANGE_LOCAL_BELOW, "local SGE below the MR")              \
	X(CL_RANGES, RANGE_LOCAL_WRAP, "local address + length wraps")         \
	X(CL_RANGES, RANGE_SECOND_SGE, "second SGE out of range")              \
	X(CL_RANGES, RANGE_TOO_LONG, "message over 2 GiB")                     \
	X(CL_RANGES, RANGE_NO_REMOTE_WRITE, "WRITE without REMOTE_WRITE")      \
	X(CL_RANGES, RANGE_NO_REMOTE_READ, "READ without REMOTE_READ")         \
	X(CL_RANGES, RANGE_NO_REMOTE_ATOMIC, "atomic without REMOTE_ATOMIC")   \
	X(CL_RANGES, RANGE_NO_LOCAL_WRITE_RECV, "RECV into an MR without LOCAL_WRITE") \
	X(CL_RANGES, RANGE_NO_LOCAL_WRITE_READ, "READ into an MR without LOCAL_WRITE") \
	X(CL_RANGES, RANGE_QP_NO_REMOTE_WRITE, "WRITE to a QP not allowing it") \
	X(CL_RANGES, RANGE_ATOMIC_MISALIGNED, "misaligned atomic")             \
	X(CL_RANGES, RANGE_SEND_TOO_LONG, "SEND longer than the receive")      \
	X(CL_RANGES, RANGE_IN_BATCH, "bad WRITE amid a batch of good ones")    \
	X(CL_RANGES, RANGE_EXACT_FIT, "control: exactly the MR's edges")

#define HOSTILE_VARIANT_ENUM(cls, id, name) V_##id,
enum variant { HOSTILE_VARIANTS(HOSTILE_VARIANT_ENUM) V_COUNT };

struct variant_info {
	enum hclass cls;
	const char *name;
};
extern const struct variant_info variants[V_COUNT];
extern const char *const class_names[CL_COUNT];

/* ---- what the processes share ------------------------------------------------ */

struct good_report {
	uint64_t iterations;
	uint64_t ops; /* work requests completed */
	uint64_t bytes_verified;
	uint64_t error_cqes;
	uint64_t async_events;
	int finished;
};

struct shared {
	uint64_t tried[V_COUNT];
	uint64_t wrong[CL_COUNT];
	uint64_t canary_regions; /* guarded buffers checked */
	uint64_t canary_damaged;
	struct good_report good[2];
	int stop; /* the hostiles are done: the good pair winds down */
	int thief_done; /* the hostile keeps its published MR until then */
	int failed;
	char failure[512];
};

extern struct shared *sh;
extern const char *who; /* this process's name, for messages */

/*
 * What a victim shows the thief: each victim writes its loot into a pipe
 * to main, which hands all of it to the thief through another.
 */
enum victim { VICTIM_GOOD0, VICTIM_GOOD1, VICTIM_HOSTILE, VICTIM_COUNT };

struct loot {
	uint32_t qpn;
	uint32_t rkey;
	uint32_t lkey;
	uint32_t pd_handle;
	uint32_t mr_handle;
	uint32_t cq_handle;
	uint32_t qp_handle;
	uint32_t reserved;
	uint64_t addr;
	uint64_t len;
};

/* ---- util.c --------------------------------------------------------------------- */

/* Record the first failure (all processes); returns -1. */
int hfail_at(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define HFAIL(...) hfail_at(__FILE__, __LINE__, __VA_ARGS__)
/* -1 spelled out: callers' HTRY relies on it (gcc 14 checks, inlining). */
#define HCHECK(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			HFAIL(__VA_ARGS__);                                    \
			return -1;                                             \
		}                                                              \
	} while (0)
#define HTRY(expr)                                                             \
	do {                                                                   \
		if ((expr))                                                    \
			return -1;                                             \
	} while (0)

void count_try(enum variant v);

/* A seeded generator (splitmix64), one per process. */
void rng_seed(uint64_t seed);
uint64_t rng_next(void);
uint64_t rng_below(uint64_t n); /* [0, n) */
uint64_t rng_range(uint64_t lo, uint64_t hi); /* [lo, hi] */

/* Deterministic contents: the same (seed, len) always gives the same bytes. */
void fill_pattern(void *buf, size_t len, uint64_t seed);
/* 0, or a recorded failure naming the first byte that differs. */
int check_pattern(const void *buf, size_t len, uint64_t seed, const char *what);

uint64_t now_ms(void);
void sleep_us(unsigned int us);
/* Spin politely: a yield, and a short nap every so often. */
void backoff(unsigned int *spins);

/*
 * A guarded buffer: data lies between canary bytes that fill the rest of
 * its mapping (a whole page before and after, plus whatever the data
 * leaves of its first and last pages).  misalign puts data at that offset
 * into its first page.
 */
struct gbuf {
	uint8_t *map;
	size_t map_len;
	uint8_t *data;
	size_t len;
	uint64_t canary_seed;
};

int gbuf_alloc(struct gbuf *g, size_t len, size_t misalign);
/* Page aligned, never touched but for the canary pages (MAP_NORESERVE). */
int gbuf_alloc_sparse(struct gbuf *g, size_t len);
/* Every canary byte as written: counted in sh; a recorded failure if not. */
int gbuf_check(const struct gbuf *g, const char *what);
void gbuf_free(struct gbuf *g);
size_t page_size(void);

/* ---- verbs.c ---------------------------------------------------------------------- */

#define HOSTILE_WAIT_MS 20000 /* an expected completion or event; generous */

int open_device(struct ibv_context **ctx);
int nonblocking_async(struct ibv_context *ctx);
struct ibv_mr *reg_mr(struct ibv_pd *pd, void *addr, size_t len, int access);

#define ACCESS_ALL                                                             \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct qp_params {
	unsigned int access; /* qp_access_flags */
	uint8_t timeout;
	uint8_t retry_cnt;
	uint8_t rnr_retry;
};

/* RESET -> INIT -> RTR -> RTS towards dest (from any state). */
int qp_connect(struct ibv_qp *qp, uint32_t dest, const struct qp_params *p);
int qp_state(struct ibv_qp *qp, enum ibv_qp_state *state);
int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr);
int post_recv(struct ibv_qp *qp, uint64_t wr_id, uint64_t addr, uint32_t len,
	      uint32_t lkey);
const char *wc_status_name(int status);

/*
 * The hostile processes' playground: two RC QPs a (0) and b (1) of one
 * context, connected to each other, each with its own send and receive
 * CQ; a local buffer and a target buffer, both guarded and registered
 * with every right in pd; pd2 is a second PD of the same context.
 */
enum { QA, QB };

struct hp_event {
	enum ibv_event_type type;
	void *element; /* the QP or CQ */
};

struct hpair {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	struct ibv_cq *scq[2], *rcq[2];
	struct ibv_qp *qp[2];
	struct qp_params params[2];
	uint32_t dest[2]; /* where each QP points */
	struct gbuf local, target;
	struct ibv_mr *local_mr, *target_mr;
	struct hp_event events[32];
	int nevents;
};

int hp_open(struct hpair *hp);
int hp_close(struct hpair *hp);
/* Both QPs back to RTS towards dest[], queues, CQs and events emptied. */
int hp_reset(struct hpair *hp);
/* Throw the CQs and QPs away and make new ones (after a CQ overrun). */
int hp_rebuild_queues(struct hpair *hp);

/* The CQs, numbered for expectations. */
enum { SCQ_A, SCQ_B, RCQ_A, RCQ_B, NCQ };

struct want_wc {
	int cq;
	uint64_t wr_id;
	enum ibv_wc_status status;
};

struct want_ev {
	enum ibv_event_type type;
	int qp; /* QA or QB; -1: the CQ of want_ev.cq */
	int cq;
};

/*
 * Wait until every wanted completion has come (exact status and wr_id),
 * then check that nothing else came but flushes, and that the async events
 * are exactly the wanted ones.
 */
int hp_expect(struct hpair *hp, const struct want_wc *wcs, int nwcs,
	      const struct want_ev *evs, int nevs, const char *what);
/* Wait for one async event (when no completion comes with it). */
int hp_wait_event(struct hpair *hp, enum ibv_event_type type, void *element,
		  const char *what);
int hp_expect_state(struct hpair *hp, int q, enum ibv_qp_state want,
		    const char *what);
/*
 * One WR from a: opcode, one local SGE, the remote address and key (for
 * atomics: add 1, or compare 0 and swap 1).  Signaled.
 */
void make_wr(struct ibv_send_wr *wr, struct ibv_sge *sge, uint64_t id,
	     enum ibv_wr_opcode op, uint64_t laddr, uint32_t len, uint32_t lkey,
	     uint64_t raddr, uint32_t rkey);
/* The common outcomes of one WR a -> b, then the pair reset. */
int expect_remote_access_err(struct hpair *hp, uint64_t id, const char *what);
int expect_local_err(struct hpair *hp, uint64_t id, enum ibv_wc_status st,
		     const char *what);
/* A SEND whose receive WQE on b cannot take it: recv_st there, st at a. */
int expect_recv_err(struct hpair *hp, uint64_t id, enum ibv_wc_status st,
		    uint64_t recv_id, enum ibv_wc_status recv_st,
		    const char *what);
/* The buffers of the pair still have their canaries. */
int hp_check_canaries(struct hpair *hp, const char *what);
/* A WRITE a -> b within the target buffer works: the QPs are fine. */
int hp_probe(struct hpair *hp, const char *what);

/* ---- the attacks: each runs one randomly chosen variant of its class ----- */

struct attack_env {
	struct hpair *hp;
	const struct loot *loot; /* [VICTIM_COUNT] */
	pid_t ringnicd;
	const char *ctl_path; /* the device's control socket */
};

int attack_rings(struct attack_env *env);
int attack_control(struct attack_env *env, bool foreign_handles);
int attack_stolen(struct attack_env *env);
int attack_stale(struct attack_env *env);
int attack_unmap(struct attack_env *env);
int attack_ranges(struct attack_env *env);

/* raw_ctl.c: the device's control socket, found as the provider finds it. */
int find_ctl_path(char *buf, size_t len);

/* ---- the roles ---------------------------------------------------------------------- */

int good_pair_run(int role, int peer_fd, int loot_fd, uint64_t seed);
int hostile_run(int loot_out, uint64_t seed, unsigned int rounds);
int thief_run(int loot_in, uint64_t seed, unsigned int rounds);

#endif
