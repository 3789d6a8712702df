/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rn_load: a bounded load test of ringnicd.
 *
 * A driver forks pairs of client processes.  The two clients of a pair
 * connect QP i to QP i and run, in both directions on every QP, batches of
 * mixed work requests (SEND, SEND_WITH_IMM, RDMA_WRITE, WRITE_WITH_IMM,
 * RDMA_READ, FETCH_ADD, CMP_SWP; 0 B to 65 KiB, up to 4 SGEs, some inline).
 * A batch is generated from a seed both sides share, so the side that can
 * see the result (the responder for SEND and WRITE, the requester for READ
 * and atomics) regenerates the expected bytes and compares every one, and
 * the bytes around every target must still hold a canary.  Stable pairs run
 * for the whole time and may see no error; victim pairs are spawned again
 * and again and the driver SIGKILLs one or both of their clients at a
 * random moment; the survivor must see exactly what a dead peer produces.
 * Before and after, the driver samples ringnicd's RSS, descriptors and
 * ring mappings.
 */
#ifndef RN_LOAD_H
#define RN_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

#define LOAD_DEVICE "ringnic0"
#define LOAD_MAX_QPS 32

/* ---- the shape of the traffic ------------------------------------------- */

#define BATCH_MAX_OPS 16 /* work requests in one batch */
#define OP_MAX_SGE 4
#define OP_MAX_LEN (64 * 1024 + 1024)
#define OP_MAX_INLINE 256
#define BATCH_BUDGET (192 * 1024) /* payload bytes of one batch */
#define PIECE_GAP_MAX 64 /* canary bytes between two pieces, at most */
#define RECV_SLACK_MAX 64 /* receive room beyond the message, at most */
#define ARENA_GUARD 64 /* canary checked after the last piece */
/* An arena holds one batch: its pieces, the gaps between them, a guard. */
#define ARENA_BYTES (BATCH_BUDGET + 32 * 1024)
#define READ_SRC_BYTES (OP_MAX_LEN + 4096)

/* The local buffer of one QP: what it sends from, reads into, receives into. */
#define LOCAL_SRC_OFF 0
#define LOCAL_RECV_OFF ARENA_BYTES
#define LOCAL_BYTES (2 * ARENA_BYTES)
/* The window of one QP that the peer writes, reads and updates atomically. */
#define WIN_WRITE_OFF 0
#define WIN_READ_OFF ARENA_BYTES
#define WIN_COUNTER_OFF (ARENA_BYTES + READ_SRC_BYTES)
#define WIN_BYTES (WIN_COUNTER_OFF + 4096)

/* A part of an arena: a gather or scatter element, or a write target. */
struct piece {
	uint32_t off;
	uint32_t len;
};

struct op {
	enum ibv_wr_opcode opcode;
	uint32_t len; /* bytes moved (8 for atomics) */
	bool inline_data;
	bool signaled;
	uint32_t imm; /* host order */
	/* Requester: sources, or where READ data and atomic results land. */
	unsigned int nsrc;
	struct piece src[OP_MAX_SGE];
	uint64_t remote_off; /* in the responder's window */
	uint64_t compare_add, swap;
	uint64_t old; /* what an atomic must return */
	/* Responder: the receive WQE this op consumes, if it consumes one. */
	unsigned int nrecv;
	struct piece recv[OP_MAX_SGE];
};

/* One batch of one lane (one direction of one QP). */
struct batch {
	uint32_t no;
	unsigned int n;
	struct op op[BATCH_MAX_OPS];
	/* Ends of the used parts of the arenas (guard included). */
	uint32_t src_end, recv_end, write_end;
	uint64_t counter; /* the responder's atomic word after the batch */
	uint8_t canary;
};

/* Generates the batches of one lane; both sides hold one per lane. */
struct lane_gen {
	uint64_t key;
	uint64_t counter; /* the model of the responder's atomic word */
	uint32_t next_no;
};

/* schedule.c */
void lane_gen_init(struct lane_gen *g, uint64_t key);
void lane_gen_next(struct lane_gen *g, struct batch *b);
uint64_t lane_key(uint64_t pair_seed, int sender_side, unsigned int qp);
uint64_t lane_counter0(uint64_t key);
bool op_consumes_recv(enum ibv_wr_opcode op);
/* The first op at or after 'from' that consumes a receive (or b->n). */
unsigned int batch_next_consumer(const struct batch *b, unsigned int from);
bool op_is_write(enum ibv_wr_opcode op);
bool op_is_send(enum ibv_wr_opcode op);
bool op_is_atomic(enum ibv_wr_opcode op);
enum ibv_wc_opcode op_wc_opcode(enum ibv_wr_opcode op);
const char *op_name(enum ibv_wr_opcode op);

/* pattern.c: the bytes of a payload stream, canaries, a small PRNG */
uint64_t mix64(uint64_t x);
uint64_t rng_next(uint64_t *state);
uint32_t rng_below(uint64_t *state, uint32_t n); /* [0, n) */
/* The payload of op i of batch no of a lane, and a lane's READ source. */
uint64_t payload_key(uint64_t lane, uint32_t batch, unsigned int op);
uint64_t read_src_key(uint64_t lane);
void pattern_fill(uint8_t *dst, size_t len, uint64_t key, uint64_t at);
/* Offset of the first byte that differs, or -1. */
ptrdiff_t pattern_diff(const uint8_t *buf, size_t len, uint64_t key, uint64_t at);
ptrdiff_t canary_diff(const uint8_t *buf, size_t len, uint8_t canary);
uint64_t now_ns(void);

/* ---- clients ---------------------------------------------------------------- */

/* What a client tells the driver, in memory shared with it. */
struct client_report {
	uint64_t ops[IBV_WR_ATOMIC_FETCH_AND_ADD + 1]; /* verified, by opcode */
	uint64_t bytes; /* payload bytes compared with what was sent */
	uint64_t completions; /* CQEs checked field by field */
	uint64_t batches; /* batches verified as responder */
	uint64_t retry_exc; /* IBV_WC_RETRY_EXC_ERR after the peer died */
	uint64_t flushed; /* IBV_WC_WR_FLUSH_ERR after that */
	uint64_t mr_churn; /* scratch MRs registered and deregistered */
	uint64_t qp_churn; /* scratch QPs created and destroyed */
	uint64_t mrs; /* MRs registered, all told */
	uint64_t qps; /* QPs created, all told */
	uint32_t phase; /* enum client_phase reached */
	uint32_t peer_died; /* enum client_phase in which the peer vanished */
	uint32_t finished; /* 1 once it has cleaned up and is about to exit 0 */
	char why[256]; /* the first failure */
};

enum client_phase {
	PHASE_NONE,
	PHASE_SETUP, /* device, PD, CQs, QPs, MRs */
	PHASE_CONNECT, /* exchanging, modifying QPs to RTS */
	PHASE_TRAFFIC,
	PHASE_DRAIN, /* the peer died: collecting the errors it leaves */
	PHASE_TEARDOWN,
};

struct client_params {
	int side; /* 0 or 1 */
	int sock; /* SOCK_SEQPACKET to the other side */
	unsigned int nqps;
	uint64_t pair_seed;
	uint64_t deadline_ns; /* no batch starts after it (CLOCK_MONOTONIC) */
	bool victim_pair; /* the peer may be killed */
	struct client_report *rep;
};

/* client.c: the whole life of a client process; returns its exit status. */
int client_main(const struct client_params *p);

/* Record the first failure of this client; returns -1. */
int client_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			return client_fail(__VA_ARGS__);                       \
	} while (0)
#define TRY(expr)                                                              \
	do {                                                                   \
		if ((expr))                                                    \
			return -1;                                             \
	} while (0)

/* ---- the driver's view of ringnicd --------------------------------------- */

struct daemon_sample {
	uint64_t rss_kib;
	unsigned int fds;
	unsigned int ring_maps; /* mappings of client rings (memfd "ringnic") */
	unsigned int runtime_entries; /* files under the runtime dir */
};

/* daemon_watch.c */
int daemon_sample(pid_t pid, const char *runtime_dir, struct daemon_sample *s);
void daemon_peak(struct daemon_sample *peak, const struct daemon_sample *s);
void daemon_print_fds(pid_t pid);

#endif
