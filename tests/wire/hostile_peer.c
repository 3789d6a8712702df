// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_hostile_peer --netns B [--seed N] [--rounds N]: a peer on the wire
 * that lies, against ringnic0 of the two hosts of tests/wire (lib.sh).
 * Run as root in host A under ringnic-run, with 198.18.0.3 an address of
 * host B that ringnic1 does not take (hostile_peer.sh does both).
 *
 * One process plays every part.  Its two UDP sockets are made in host B
 * (setns), so that what they send crosses the veth pair as any peer's
 * packets do; they are built with the project's own packet code and
 * carry valid ICRCs, so that each gets past the parser:
 *   own    198.18.0.3:4791, an address of B that is no QP's peer but the
 *          victim QP's: the liar's own, where ringnic0's answers come
 *   spoof  198.18.0.2 (host B's own address: ringnic1's, the good pair's
 *          peer), an ephemeral port
 * The good pair runs verified traffic between ringnic0 and ringnic1 in a
 * thread of its own all along; the victim is a context of ringnic0 with an
 * RC QP connected to the liar (198.18.0.3, QPN LIAR_QPN), a UD QP, and
 * MRs around canary pages.
 *
 * Every attempt has an exact expected outcome (the NAK class rxe sends and
 * the QP state the IB spec leaves, or silence); at the end the good pair
 * must have seen no error, every byte it does not write (its sentinel
 * page) and every byte of the victim's buffer must be as they were, and
 * ringnic0 must still answer.  hostile_peer.sh then checks that the
 * counters put the drops in their classes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <infiniband/verbs.h>
#include <infiniband/ringnicdv.h>

#include "roce/icrc.h"
#include "roce/packet.h"

#define PAGE 4096u
#define LIAR_ADDR "198.18.0.3"
#define SPOOF_ADDR "198.18.0.2"
#define TARGET_ADDR "198.18.0.1"
#define LIAR_QPN 0xabcdeu
#define UD_QKEY 0x11111111u
#define GOOD_PSN 0x100u /* where both good QPs start */
#define QUIET_MS 10 /* how long silence must last to count as no answer */
#define ANSWER_MS 2000

/* ---- failures ---------------------------------------------------------- */

/* The first failure, from either thread; 'failed' is read without the lock. */
static pthread_mutex_t fail_lock = PTHREAD_MUTEX_INITIALIZER;
static char failure[512];
static int failed;

static bool has_failed(void)
{
	return __atomic_load_n(&failed, __ATOMIC_ACQUIRE);
}

static int fail_at(int line, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&fail_lock);
	if (!failed) {
		int n = snprintf(failure, sizeof(failure), "line %d: ", line);

		va_start(ap, fmt);
		vsnprintf(failure + n, sizeof(failure) - n, fmt, ap);
		va_end(ap);
		__atomic_store_n(&failed, 1, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&fail_lock);
	return -1;
}
#define FAIL(...) fail_at(__LINE__, __VA_ARGS__)
#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			return FAIL(__VA_ARGS__);                              \
	} while (0)
#define TRY(expr)                                                              \
	do {                                                                   \
		if ((expr))                                                    \
			return -1;                                             \
	} while (0)

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- the attempts, by class ----------------------------------------------- */

#define VARIANTS(X)                                                            \
	X(NOT_PEER, "packet for the good pair's QP from another address")      \
	X(SPOOF_PSN, "spoofed from the good peer, guessed PSN")                 \
	X(FOREIGN_KEY, "WRITE with another context's rkey")                    \
	X(OTHER_PD_KEY, "WRITE with the rkey of another PD")                   \
	X(STALE_KEY, "WRITE with a deregistered MR's rkey")                    \
	X(FORGED_TAG, "WRITE with a forged key byte")                          \
	X(BELOW_MR, "WRITE starting below the MR")                             \
	X(PAST_MR, "WRITE running past the MR's end")                          \
	X(WRAP, "WRITE whose address + length wraps")                         \
	X(NO_RIGHT, "WRITE to an MR without remote write")                     \
	X(READ_PAST, "READ running past the MR's end")                         \
	X(READ_FOREIGN, "READ with another context's rkey")                    \
	X(ATOMIC_MISALIGNED, "misaligned FETCH_ADD")                           \
	X(ATOMIC_PAST, "FETCH_ADD past the MR's end")                          \
	X(NO_FIRST, "WRITE_MIDDLE with no WRITE_FIRST")                        \
	X(FAR_PSN, "request far ahead of the expected PSN")                    \
	X(NO_RECEIVE, "SEND to a QP with no receive posted")                   \
	X(GHOST_ACK, "ACK for a PSN never sent")                               \
	X(GHOST_NAK, "NAK for a PSN never sent")                               \
	X(GHOST_READ_RESP, "READ response with nothing outstanding")           \
	X(GHOST_ATOMIC_ACK, "atomic ACK with nothing outstanding")             \
	X(UD_QKEY, "datagram with a Q_Key not the QP's")

#define VARIANT_ENUM(id, name) V_##id,
enum variant { VARIANTS(VARIANT_ENUM) V_COUNT };
#define VARIANT_NAME(id, name) name,
static const char *const variant_names[V_COUNT] = { VARIANTS(VARIANT_NAME) };
static uint64_t tried[V_COUNT];

/* ---- the liar's sockets ------------------------------------------------------ */

struct liar {
	int own; /* LIAR_ADDR:4791 */
	int spoof; /* SPOOF_ADDR:ephemeral */
	uint16_t own_port, spoof_port;
	uint8_t buf[PAGE * 2];
};

static int udp_socket(const char *addr, uint16_t port, uint16_t *bound)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	socklen_t len = sizeof(sa);
	int fd, pmtu = IP_PMTUDISC_DO;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	CHECK(fd >= 0, "socket: %s", strerror(errno));
	inet_pton(AF_INET, addr, &sa.sin_addr);
	/* DF and IP ID 0: the IP header rn_icrc_seal_ipv4 assumes. */
	CHECK(!setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)),
	      "IP_MTU_DISCOVER: %s", strerror(errno));
	CHECK(!bind(fd, (struct sockaddr *)&sa, sizeof(sa)), "bind %s:%u: %s",
	      addr, port, strerror(errno));
	CHECK(!getsockname(fd, (struct sockaddr *)&sa, &len), "getsockname");
	*bound = ntohs(sa.sin_port);
	return fd;
}

/* The sockets live in host B's network namespace; the rest of us in A's. */
static int liar_open(struct liar *l, const char *netns)
{
	char path[256];
	int home, there, ret;

	snprintf(path, sizeof(path), "/run/netns/%s", netns);
	home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	there = open(path, O_RDONLY | O_CLOEXEC);
	CHECK(home >= 0 && there >= 0, "network namespaces: %s", strerror(errno));
	CHECK(!setns(there, CLONE_NEWNET), "setns %s: %s", path, strerror(errno));
	l->own = udp_socket(LIAR_ADDR, RN_PKT_UDP_DPORT, &l->own_port);
	l->spoof = udp_socket(SPOOF_ADDR, 0, &l->spoof_port);
	ret = setns(home, CLONE_NEWNET);
	close(home);
	close(there);
	CHECK(!ret, "setns back: %s", strerror(errno));
	return l->own >= 0 && l->spoof >= 0 ? 0 : -1;
}

/* Build, seal and send *p to ringnic0 from the socket 'spoofed' says. */
static int liar_send(struct liar *l, const struct rn_pkt *p, bool spoofed)
{
	struct rn_icrc_flow4 f = { .dport = RN_PKT_UDP_DPORT };
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons(RN_PKT_UDP_DPORT) };
	size_t len = rn_pkt_build(p, l->buf, sizeof(l->buf));

	CHECK(len, "rn_pkt_build refused opcode %#x", p->opcode);
	inet_pton(AF_INET, spoofed ? SPOOF_ADDR : LIAR_ADDR, &f.saddr);
	inet_pton(AF_INET, TARGET_ADDR, &f.daddr);
	f.sport = spoofed ? l->spoof_port : l->own_port;
	rn_icrc_seal_ipv4(&f, 0, l->buf, len);
	to.sin_addr = f.daddr;
	CHECK(sendto(spoofed ? l->spoof : l->own, l->buf, len, 0,
		     (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len,
	      "sendto: %s", strerror(errno));
	return 0;
}

/*
 * The next packet ringnic0 sends the liar's QP within ms: 1 with *p
 * filled, 0 when none came.  Whatever else arrives is a failure.
 */
static int liar_answer(struct liar *l, struct rn_pkt *p, int ms)
{
	uint64_t deadline = now_ms() + ms;

	for (;;) {
		struct pollfd pfd = { .fd = l->own, .events = POLLIN };
		int64_t left = (int64_t)(deadline - now_ms());
		ssize_t n;

		if (left < 0)
			left = 0;
		if (poll(&pfd, 1, (int)left) != 1)
			return 0;
		n = recv(l->own, l->buf, sizeof(l->buf), 0);
		CHECK(n > 0, "recv: %s", strerror(errno));
		CHECK(rn_pkt_parse(l->buf, n, p) == RN_PKT_OK,
		      "ringnic0 sent a packet that does not parse");
		CHECK(p->dqpn == LIAR_QPN, "a packet for QPN %#x, not the liar's",
		      p->dqpn);
		return 1;
	}
}

/* ---- the victim: a context of ringnic0 ------------------------------------ */

/*
 * Its buffer: pages 0, 2 and 4 are canaries nothing registers; page 1 is
 * MR 'all' (every right) and, in another PD, MR 'other'; page 3 MR 'ro'
 * (remote read only); page 5 was MR 'dead', deregistered; page 6 is where
 * the UD QP's receives point, which no datagram may reach.  Nobody ever
 * writes any of it legitimately.
 */
#define VICTIM_PAGES 7
#define FILL 0x5a

struct victim {
	struct ibv_context *ctx;
	struct ibv_pd *pd, *other_pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp, *ud;
	uint8_t *buf;
	struct ibv_mr *all, *other, *ro, *ud_mr;
	uint32_t dead_rkey;
	uint64_t dead_addr;
	uint32_t epsn; /* what the QP expects next from the liar */
	union ibv_gid gid; /* ringnic0's GID 0 */
};

/*
 * The good pair: set up by main, then its thread's alone (contexts, QPs,
 * CQs, buffers) until main joins it; main reads 'iterations' and writes
 * 'stop', both atomically.
 */
struct good {
	struct ibv_context *ctx[2];
	struct ibv_pd *pd[2];
	struct ibv_cq *cq[2];
	struct ibv_qp *qp[2];
	struct ibv_mr *mr[2];
	uint8_t *buf[2]; /* [0, PAGE) data, [PAGE, 2 PAGE) readback,
			    [2 PAGE, 3 PAGE) sentinel, then the counter */
	int stop;
	uint64_t iterations, bytes_verified;
};

#define GOOD_LEN (3 * PAGE + 8)
#define SENTINEL 0xc3

static int open_named(const char *name, struct ibv_context **ctx)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int i;

	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	*ctx = NULL;
	for (i = 0; list[i] && !*ctx; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			*ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	CHECK(*ctx, "cannot open %s", name);
	return 0;
}

static int to_rts(struct ibv_qp *qp, const union ibv_gid *dgid, uint32_t dqpn,
		  uint32_t rq_psn, uint32_t sq_psn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };
	int ret;

	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	CHECK(!ret, "modify to RESET: %s", strerror(ret));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	CHECK(!ret, "modify to INIT: %s", strerror(ret));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = dqpn,
		.rq_psn = rq_psn,
		.max_dest_rd_atomic = 16,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = *dgid, .hop_limit = 64 } },
	};
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
					    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
					    IBV_QP_MAX_DEST_RD_ATOMIC |
					    IBV_QP_MIN_RNR_TIMER);
	CHECK(!ret, "modify to RTR: %s", strerror(ret));
	a = (struct ibv_qp_attr){
		.qp_state = IBV_QPS_RTS,
		.sq_psn = sq_psn,
		.timeout = 14,
		.retry_cnt = 7,
		.rnr_retry = 7,
		.max_rd_atomic = 16,
	};
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
					    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
					    IBV_QP_RNR_RETRY |
					    IBV_QP_MAX_QP_RD_ATOMIC);
	CHECK(!ret, "modify to RTS: %s", strerror(ret));
	return 0;
}

static struct ibv_qp *rc_qp(struct ibv_pd *pd, struct ibv_cq *cq)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};

	return ibv_create_qp(pd, &ia);
}

#define RIGHTS                                                                 \
	(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |                     \
	 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

/* The liar's gid: 198.18.0.3 as an IPv4-mapped GID. */
static void liar_gid(union ibv_gid *g)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = g->raw[11] = 0xff;
	inet_pton(AF_INET, LIAR_ADDR, &g->raw[12]);
}

static int victim_connect(struct victim *v, uint32_t epsn)
{
	union ibv_gid g;

	liar_gid(&g);
	v->epsn = epsn & RN_PKT_MASK24;
	return to_rts(v->qp, &g, LIAR_QPN, v->epsn, 0);
}

static int victim_open(struct victim *v)
{
	struct ibv_qp_init_attr ia = {
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 1, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qkey = UD_QKEY };
	struct ibv_mr *dead;
	int i, ret;

	TRY(open_named("ringnic0", &v->ctx));
	CHECK(!ibv_query_gid(v->ctx, 1, 0, &v->gid), "query_gid");
	v->pd = ibv_alloc_pd(v->ctx);
	v->other_pd = ibv_alloc_pd(v->ctx);
	v->cq = ibv_create_cq(v->ctx, 64, NULL, NULL, 0);
	CHECK(v->pd && v->other_pd && v->cq, "victim objects: %s",
	      strerror(errno));
	CHECK(!posix_memalign((void **)&v->buf, PAGE, VICTIM_PAGES * PAGE),
	      "memory");
	memset(v->buf, FILL, VICTIM_PAGES * PAGE);
	v->all = ibv_reg_mr(v->pd, v->buf + PAGE, PAGE, RIGHTS);
	v->other = ibv_reg_mr(v->other_pd, v->buf + PAGE, PAGE, RIGHTS);
	v->ro = ibv_reg_mr(v->pd, v->buf + 3 * PAGE, PAGE, IBV_ACCESS_REMOTE_READ);
	dead = ibv_reg_mr(v->pd, v->buf + 5 * PAGE, PAGE, RIGHTS);
	CHECK(v->all && v->other && v->ro && dead, "victim MRs: %s",
	      strerror(errno));
	v->dead_rkey = dead->rkey;
	v->dead_addr = (uintptr_t)dead->addr;
	CHECK(!ibv_dereg_mr(dead), "dereg");
	v->qp = rc_qp(v->pd, v->cq);
	CHECK(v->qp, "victim RC QP: %s", strerror(errno));
	TRY(victim_connect(v, 0x200));

	/* The UD QP: receives posted, so that only the Q_Key stops a datagram. */
	ia.send_cq = ia.recv_cq = v->cq;
	v->ud = ibv_create_qp(v->pd, &ia);
	v->ud_mr = ibv_reg_mr(v->pd, v->buf + 6 * PAGE, PAGE,
			      IBV_ACCESS_LOCAL_WRITE);
	CHECK(v->ud && v->ud_mr, "victim UD QP: %s", strerror(errno));
	ret = ibv_modify_qp(v->ud, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
					       IBV_QP_PORT | IBV_QP_QKEY);
	a.qp_state = IBV_QPS_RTR;
	ret = ret ?: ibv_modify_qp(v->ud, &a, IBV_QP_STATE);
	a.qp_state = IBV_QPS_RTS;
	ret = ret ?: ibv_modify_qp(v->ud, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	CHECK(!ret, "UD QP to RTS: %s", strerror(ret));
	for (i = 0; i < 8; i++) {
		struct ibv_sge sge = { (uintptr_t)v->ud_mr->addr, PAGE,
				       v->ud_mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 },
				   *bad;

		CHECK(!ibv_post_recv(v->ud, &wr, &bad), "UD post_recv");
	}
	return 0;
}

static enum ibv_qp_state qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia))
		return (enum ibv_qp_state)-1;
	return a.qp_state;
}

/* ---- the good pair ------------------------------------------------------------ */

static int good_open(struct good *g)
{
	union ibv_gid gid[2];
	int i;

	for (i = 0; i < 2; i++) {
		TRY(open_named(i ? "ringnic1" : "ringnic0", &g->ctx[i]));
		CHECK(!ibv_query_gid(g->ctx[i], 1, 0, &gid[i]), "query_gid");
		g->pd[i] = ibv_alloc_pd(g->ctx[i]);
		g->cq[i] = ibv_create_cq(g->ctx[i], 64, NULL, NULL, 0);
		CHECK(!posix_memalign((void **)&g->buf[i], PAGE, 4 * PAGE),
		      "memory");
		memset(g->buf[i], SENTINEL, 4 * PAGE);
		memset(g->buf[i] + 3 * PAGE, 0, 8);
		g->mr[i] = g->pd[i] ? ibv_reg_mr(g->pd[i], g->buf[i], GOOD_LEN,
						 RIGHTS) :
				      NULL;
		g->qp[i] = g->pd[i] && g->cq[i] ? rc_qp(g->pd[i], g->cq[i]) :
						  NULL;
		CHECK(g->mr[i] && g->qp[i], "good pair objects: %s",
		      strerror(errno));
	}
	for (i = 0; i < 2; i++)
		TRY(to_rts(g->qp[i], &gid[!i], g->qp[!i]->qp_num, GOOD_PSN,
			   GOOD_PSN));
	return 0;
}

static int good_post(struct ibv_qp *qp, enum ibv_wr_opcode op, void *local,
		     uint32_t len, uint32_t lkey, uint64_t remote,
		     uint32_t rkey, uint32_t imm, uint64_t add)
{
	struct ibv_sge sge = { (uintptr_t)local, len, lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htonl(imm),
	}, *bad;
	int ret;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = remote;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = add;
	} else {
		wr.wr.rdma.remote_addr = remote;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(qp, &wr, &bad);
	CHECK(!ret, "good pair post_send: %s", strerror(ret));
	return 0;
}

/* What the device did with a QP's doorbells and packets: for a stall. */
static void qp_report(struct ibv_qp *qp, const char *who)
{
	struct ringnicdv_qp_counters c;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ringnicdv_query_qp_counters(qp, &c, sizeof(c)) ||
	    ibv_query_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RQ_PSN,
			 &ia)) {
		fprintf(stderr, "%s: cannot query QP %#x\n", who, qp->qp_num);
		return;
	}
	fprintf(stderr,
		"%s: QP %#x state %d, doorbells %" PRIu64 " (device read %" PRIu64
		", stale %" PRIu64 "), WQEs fetched %" PRIu64
		", ACK timeouts %" PRIu64 ", retries %" PRIu64
		", sequence NAKs %" PRIu64 ", RNR NAKs %" PRIu64
		", duplicates %" PRIu64 ", out of sequence %" PRIu64 "\n",
		who, qp->qp_num, a.qp_state, c.doorbells, c.device_doorbells,
		c.stale, c.wqes, c.ack_timeouts, c.retries, c.seq_naks,
		c.rnr_naks, c.duplicate_requests, c.out_of_seq_requests);
}

/* The next completion of good'side' must be a successful 'op'. */
static int good_wait(struct good *g, int side, enum ibv_wc_opcode op)
{
	uint64_t deadline = now_ms() + 30000;
	struct ibv_wc wc;
	int n;

	while (!(n = ibv_poll_cq(g->cq[side], 1, &wc))) {
		if (now_ms() < deadline)
			continue;
		qp_report(g->qp[0], "good0");
		qp_report(g->qp[1], "good1");
		return FAIL("good pair: no completion (opcode %d) in 30 s", op);
	}
	CHECK(n == 1 && wc.status == IBV_WC_SUCCESS && wc.opcode == op,
	      "good pair: completion '%s', opcode %d",
	      ibv_wc_status_str(wc.status), wc.opcode);
	return 0;
}

static uint8_t good_byte(uint64_t k, uint32_t i)
{
	return (uint8_t)(k * 7 + i * 13 + 1);
}

/*
 * Iteration k: good1 writes PAGE bytes of pattern k into good0's data
 * page (WRITE_WITH_IMM k); good0 checks them, READs them back from good1's
 * source, checks again, and adds 1 to good1's counter (which must answer
 * k).  Nothing ever writes the sentinel pages.
 */
static int good_iteration(struct good *g, uint64_t k)
{
	struct ibv_recv_wr rwr = { .wr_id = k }, *rbad;
	uint64_t *old = (uint64_t *)(g->buf[0] + 3 * PAGE);
	uint32_t i;

	CHECK(!ibv_post_recv(g->qp[0], &rwr, &rbad), "good0 post_recv");
	for (i = 0; i < PAGE; i++)
		g->buf[1][i] = good_byte(k, i);
	TRY(good_post(g->qp[1], IBV_WR_RDMA_WRITE_WITH_IMM, g->buf[1], PAGE,
		      g->mr[1]->lkey, (uintptr_t)g->buf[0], g->mr[0]->rkey,
		      (uint32_t)k, 0));
	TRY(good_wait(g, 1, IBV_WC_RDMA_WRITE));
	TRY(good_wait(g, 0, IBV_WC_RECV_RDMA_WITH_IMM));
	for (i = 0; i < PAGE; i++)
		CHECK(g->buf[0][i] == good_byte(k, i),
		      "good pair: byte %u of iteration %" PRIu64 " wrong", i, k);
	memset(g->buf[0] + PAGE, 0, PAGE);
	TRY(good_post(g->qp[0], IBV_WR_RDMA_READ, g->buf[0] + PAGE, PAGE,
		      g->mr[0]->lkey, (uintptr_t)g->buf[1], g->mr[1]->rkey, 0, 0));
	TRY(good_wait(g, 0, IBV_WC_RDMA_READ));
	CHECK(!memcmp(g->buf[0], g->buf[0] + PAGE, PAGE),
	      "good pair: READ of iteration %" PRIu64 " wrong", k);
	TRY(good_post(g->qp[0], IBV_WR_ATOMIC_FETCH_AND_ADD, old, 8,
		      g->mr[0]->lkey, (uintptr_t)(g->buf[1] + 3 * PAGE),
		      g->mr[1]->rkey, 0, 1));
	TRY(good_wait(g, 0, IBV_WC_FETCH_ADD));
	CHECK(*old == k, "good pair: FETCH_ADD answered %" PRIu64 ", not %" PRIu64,
	      *old, k);
	g->bytes_verified += 2 * PAGE + 8;
	return 0;
}

static void *good_run(void *arg)
{
	struct good *g = arg;

	while (!__atomic_load_n(&g->stop, __ATOMIC_ACQUIRE) && !has_failed())
		if (!good_iteration(g, g->iterations))
			__atomic_add_fetch(&g->iterations, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int no_async_events(struct ibv_context *ctx, const char *who)
{
	struct ibv_async_event ev;
	int flags = fcntl(ctx->async_fd, F_GETFL);

	CHECK(!fcntl(ctx->async_fd, F_SETFL, flags | O_NONBLOCK), "async fd");
	if (!ibv_get_async_event(ctx, &ev)) {
		int type = ev.event_type;

		ibv_ack_async_event(&ev);
		return FAIL("%s got async event %s", who, ibv_event_type_str(type));
	}
	return 0;
}

/* ---- the attempts ---------------------------------------------------------------- */

struct env {
	struct liar *liar;
	struct victim *v;
	struct good *g;
	uint64_t rng;
};

static uint32_t rnd(struct env *e)
{
	/* xorshift64*: reproducible from --seed */
	e->rng ^= e->rng >> 12;
	e->rng ^= e->rng << 25;
	e->rng ^= e->rng >> 27;
	return (uint32_t)((e->rng * 0x2545F4914F6CDD1Dull) >> 32);
}

/* A PSN ahead of the victim's send PSN, 0: one it never sent. */
static uint32_t ghost_psn(struct env *e)
{
	return 1 + rnd(e) % (1u << 22);
}

static struct rn_pkt request(uint8_t op, uint32_t dqpn, uint32_t psn)
{
	return (struct rn_pkt){ .opcode = RN_PKT_RC | op, .dqpn = dqpn,
				.psn = psn & RN_PKT_MASK24, .ackreq = true };
}

static struct rn_pkt write_req(uint32_t psn, uint64_t va, uint32_t rkey,
			       uint32_t len, const uint8_t *data)
{
	struct rn_pkt p = request(RN_PKT_OP_WRITE_ONLY, 0, psn);

	p.reth = (struct rn_pkt_reth){ va, rkey, len };
	p.payload = data;
	p.payload_len = len;
	return p;
}

/* Drain what an earlier attempt left (a late answer counts as none). */
static void liar_drain(struct liar *l)
{
	while (recv(l->own, l->buf, sizeof(l->buf), MSG_DONTWAIT) > 0)
		;
}

/* Read the victim's async events: exactly 'want' (0: none). */
static int victim_events(struct victim *v, enum ibv_event_type want)
{
	struct ibv_async_event ev;
	struct pollfd pfd = { .fd = v->ctx->async_fd, .events = POLLIN };
	int n = 0;

	while (poll(&pfd, 1, want && !n ? ANSWER_MS : 0) == 1 &&
	       !ibv_get_async_event(v->ctx, &ev)) {
		int type = ev.event_type;

		ibv_ack_async_event(&ev);
		CHECK(want && type == (int)want && !n,
		      "victim: async event %s", ibv_event_type_str(type));
		n++;
	}
	CHECK(!want || n, "victim: no async event %s", ibv_event_type_str(want));
	return 0;
}

/*
 * The victim's QP got request *p (its PSN the expected one): it must answer
 * a NAK of class 'code' at that PSN, go to ERR with the event rxe's class
 * gives, and write nothing; then it is connected afresh.
 */
static int expect_nak(struct env *e, struct rn_pkt *p, enum rn_pkt_nak code,
		      enum ibv_event_type event)
{
	struct rn_pkt a;

	p->dqpn = e->v->qp->qp_num;
	p->psn = e->v->epsn;
	TRY(liar_send(e->liar, p, false));
	CHECK(liar_answer(e->liar, &a, ANSWER_MS) == 1, "no answer to %#x",
	      p->opcode);
	CHECK(a.opcode == (RN_PKT_RC | RN_PKT_OP_ACK) &&
		      rn_pkt_aeth_type(a.aeth.syndrome) == RN_PKT_AETH_NAK &&
		      rn_pkt_aeth_value(a.aeth.syndrome) == code &&
		      a.psn == p->psn,
	      "request %#x: answered opcode %#x syndrome %#x PSN %#x, not NAK %d at %#x",
	      p->opcode, a.opcode, a.aeth.syndrome, a.psn, code, p->psn);
	CHECK(liar_answer(e->liar, &a, QUIET_MS) == 0, "a second answer");
	CHECK(qp_state(e->v->qp) == IBV_QPS_ERR, "victim QP not in ERR");
	TRY(victim_events(e->v, event));
	return victim_connect(e->v, rnd(e));
}

/* A packet the victim's QP must take no notice of: no answer, still RTS. */
static int expect_ignored(struct env *e, struct rn_pkt *p)
{
	struct rn_pkt a;

	p->dqpn = e->v->qp->qp_num;
	TRY(liar_send(e->liar, p, false));
	CHECK(liar_answer(e->liar, &a, QUIET_MS) == 0,
	      "packet %#x answered with %#x", p->opcode, a.opcode);
	CHECK(qp_state(e->v->qp) == IBV_QPS_RTS, "victim QP left RTS");
	return victim_events(e->v, 0);
}

static int attempt(struct env *e, enum variant var)
{
	struct victim *v = e->v;
	struct good *g = e->g;
	uint8_t data[64];
	uint64_t all = (uintptr_t)v->all->addr;
	uint32_t off = (rnd(e) % (PAGE / 64)) * 64;
	struct rn_pkt p, a;

	memset(data, 0xee, sizeof(data));
	switch (var) {
	case V_NOT_PEER:
	case V_SPOOF_PSN: {
		/* Aimed at good0's sentinel: executed, it would show there.
		 * A spoofed PSN at least 2^22 from where the pair's PSNs are
		 * (a run sends far fewer packets): ahead, a sequence NAK
		 * goes to the good peer; behind, a duplicate is answered and
		 * never executed.
		 */
		uint64_t sentinel = (uintptr_t)g->buf[0] + 2 * PAGE + off;
		uint32_t psn = var == V_SPOOF_PSN ?
				       GOOD_PSN + (1u << 22) + rnd(e) % (3u << 22) :
				       rnd(e);

		switch (rnd(e) % 4) {
		case 0:
			p = write_req(psn, sentinel, g->mr[0]->rkey, 64, data);
			break;
		case 1:
			p = request(RN_PKT_OP_READ_REQUEST, 0, psn);
			p.reth = (struct rn_pkt_reth){ sentinel, g->mr[0]->rkey, 64 };
			break;
		case 2:
			p = request(RN_PKT_OP_FETCH_ADD, 0, psn);
			p.atomic = (struct rn_pkt_atomiceth){
				.va = sentinel, .rkey = g->mr[0]->rkey,
				.swap_add = 0x0101010101010101ull };
			break;
		default:
			p = request(RN_PKT_OP_SEND_ONLY, 0, psn);
			p.payload = data;
			p.payload_len = 64;
			break;
		}
		p.dqpn = g->qp[0]->qp_num;
		TRY(liar_send(e->liar, &p, var == V_SPOOF_PSN));
		/* Nothing may come to the liar, whose address is no peer's. */
		CHECK(liar_answer(e->liar, &a, QUIET_MS) == 0,
		      "ringnic0 answered a packet for the good QP");
		return 0;
	}
	case V_FOREIGN_KEY:
		p = write_req(0, (uintptr_t)g->buf[0] + 2 * PAGE + off,
			      g->mr[0]->rkey, 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_OTHER_PD_KEY:
		p = write_req(0, all + off, v->other->rkey, 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_STALE_KEY:
		p = write_req(0, v->dead_addr + off, v->dead_rkey, 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_FORGED_TAG:
		p = write_req(0, all + off,
			      v->all->rkey ^ (1 + rnd(e) % 255), 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_BELOW_MR:
		p = write_req(0, all - 1 - rnd(e) % 64, v->all->rkey, 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_PAST_MR:
		p = write_req(0, all + PAGE - 63 + rnd(e) % 63, v->all->rkey, 64,
			      data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_WRAP:
		p = write_req(0, UINT64_MAX - rnd(e) % 63, v->all->rkey, 64, data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_NO_RIGHT:
		p = write_req(0, (uintptr_t)v->ro->addr + off, v->ro->rkey, 64,
			      data);
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_READ_PAST:
	case V_READ_FOREIGN:
		p = request(RN_PKT_OP_READ_REQUEST, 0, 0);
		p.reth = var == V_READ_PAST ?
				 (struct rn_pkt_reth){ all + off, v->all->rkey,
						       PAGE - off + 1 } :
				 (struct rn_pkt_reth){
					 (uintptr_t)g->buf[0] + 2 * PAGE,
					 g->mr[0]->rkey, 64 };
		return expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
				  IBV_EVENT_QP_ACCESS_ERR);
	case V_ATOMIC_MISALIGNED:
	case V_ATOMIC_PAST:
		p = request(RN_PKT_OP_FETCH_ADD, 0, 0);
		p.atomic = (struct rn_pkt_atomiceth){
			.va = var == V_ATOMIC_PAST ? all + PAGE : all + off + 4,
			.rkey = v->all->rkey, .swap_add = 1 };
		return var == V_ATOMIC_PAST ?
			       expect_nak(e, &p, RN_PKT_NAK_REM_ACCESS,
					  IBV_EVENT_QP_ACCESS_ERR) :
			       expect_nak(e, &p, RN_PKT_NAK_INV_REQ,
					  IBV_EVENT_QP_REQ_ERR);
	case V_NO_FIRST:
		p = request(RN_PKT_OP_WRITE_MIDDLE, 0, 0);
		p.payload = data;
		p.payload_len = 64;
		return expect_nak(e, &p, RN_PKT_NAK_INV_REQ, IBV_EVENT_QP_REQ_ERR);
	case V_FAR_PSN:
		/* Valid but for its PSN: one sequence NAK at the expected PSN,
		 * nothing written.  A fresh connection, so that the NAK (sent
		 * once per gap) is due.
		 */
		p = write_req(v->epsn + 1 + rnd(e) % (1u << 22), all + off,
			      v->all->rkey, 64, data);
		p.dqpn = v->qp->qp_num;
		TRY(liar_send(e->liar, &p, false));
		CHECK(liar_answer(e->liar, &a, ANSWER_MS) == 1 &&
			      a.aeth.syndrome ==
				      rn_pkt_aeth_nak(RN_PKT_NAK_PSN_SEQ) &&
			      a.psn == v->epsn,
		      "far PSN: no sequence NAK at the expected PSN");
		CHECK(qp_state(v->qp) == IBV_QPS_RTS, "far PSN: QP left RTS");
		TRY(victim_events(v, 0));
		return victim_connect(v, rnd(e));
	case V_NO_RECEIVE:
		/* RNR NAK; the QP stays, its expected PSN unmoved.  What
		 * follows is dropped until the requester comes back at that
		 * PSN, so a fresh connection for the next attempt.
		 */
		p = request(RN_PKT_OP_SEND_ONLY, v->qp->qp_num, v->epsn);
		p.payload = data;
		p.payload_len = 64;
		TRY(liar_send(e->liar, &p, false));
		CHECK(liar_answer(e->liar, &a, ANSWER_MS) == 1 &&
			      rn_pkt_aeth_type(a.aeth.syndrome) ==
				      RN_PKT_AETH_RNR_NAK &&
			      a.psn == v->epsn,
		      "SEND with no receive: no RNR NAK");
		CHECK(qp_state(v->qp) == IBV_QPS_RTS, "RNR: QP left RTS");
		TRY(victim_events(v, 0));
		return victim_connect(v, rnd(e));
	case V_GHOST_ACK:
	case V_GHOST_NAK:
		/* Responses name PSNs the victim never sent (it sends nothing;
		 * its send PSN is 0): each is counted as unexpected.
		 */
		p = request(RN_PKT_OP_ACK, 0, ghost_psn(e));
		p.ackreq = false;
		p.aeth.syndrome = var == V_GHOST_ACK ?
					  rn_pkt_aeth_ack(RN_PKT_AETH_NO_CREDIT) :
					  rn_pkt_aeth_nak(RN_PKT_NAK_REM_ACCESS);
		return expect_ignored(e, &p);
	case V_GHOST_READ_RESP:
		p = request(RN_PKT_OP_READ_RESP_ONLY, 0, ghost_psn(e));
		p.ackreq = false;
		p.payload = data;
		p.payload_len = 64;
		return expect_ignored(e, &p);
	case V_GHOST_ATOMIC_ACK:
		p = request(RN_PKT_OP_ATOMIC_ACK, 0, ghost_psn(e));
		p.ackreq = false;
		p.atomic_ack = 0x4141414141414141ull;
		return expect_ignored(e, &p);
	case V_UD_QKEY: {
		struct ibv_wc wc;

		p = (struct rn_pkt){ .opcode = RN_PKT_UD | RN_PKT_OP_SEND_ONLY,
				     .dqpn = v->ud->qp_num,
				     .psn = rnd(e) & RN_PKT_MASK24 };
		p.deth = (struct rn_pkt_deth){ UD_QKEY ^ (1 + rnd(e)), LIAR_QPN };
		p.payload = data;
		p.payload_len = 64;
		TRY(liar_send(e->liar, &p, false));
		usleep(QUIET_MS * 1000);
		CHECK(ibv_poll_cq(v->cq, 1, &wc) == 0,
		      "a datagram with a wrong Q_Key completed a receive");
		return 0;
	}
	case V_COUNT:
		break;
	}
	return FAIL("no such variant");
}

/* Every byte nobody could write legitimately is as it was. */
static int check_memory(const struct victim *v, const struct good *g)
{
	uint32_t i;

	for (i = 0; i < VICTIM_PAGES * PAGE; i++)
		CHECK(v->buf[i] == FILL, "victim byte %u (page %u) changed", i,
		      i / PAGE);
	for (i = 0; i < 2; i++) {
		const uint8_t *s = g->buf[i] + 2 * PAGE;
		uint32_t j;

		for (j = 0; j < PAGE; j++)
			CHECK(s[j] == SENTINEL, "good%u's sentinel byte %u changed",
			      i, j);
	}
	return 0;
}

static void usage(void)
{
	fprintf(stderr, "usage: rn_hostile_peer --netns B [--seed N] [--rounds N]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static struct liar liar;
	struct victim v = { 0 };
	struct good g = { 0 };
	struct env e = { &liar, &v, &g, 0 };
	const char *netns = NULL;
	unsigned int rounds = 40, r, i;
	uint64_t seed = (uint64_t)time(NULL) ^ getpid();
	pthread_t good_thread;
	struct ibv_device_attr attr;

	for (i = 1; i < (unsigned int)argc; i++) {
		if (!strcmp(argv[i], "--netns") && i + 1 < (unsigned int)argc)
			netns = argv[++i];
		else if (!strcmp(argv[i], "--seed") && i + 1 < (unsigned int)argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < (unsigned int)argc)
			rounds = strtoul(argv[++i], NULL, 0);
		else
			usage();
	}
	if (!netns)
		usage();
	printf("rn_hostile_peer --seed %" PRIu64 " --rounds %u\n", seed, rounds);
	e.rng = seed | 1;
	if (liar_open(&liar, netns) || victim_open(&v) || good_open(&g))
		goto out;
	if (pthread_create(&good_thread, NULL, good_run, &g)) {
		FAIL("pthread_create");
		goto out;
	}
	/* Attack while the good pair is busy. */
	while (!__atomic_load_n(&g.iterations, __ATOMIC_ACQUIRE) && !has_failed())
		usleep(1000);
	for (r = 0; r < rounds && !has_failed(); r++) {
		enum variant order[V_COUNT];

		for (i = 0; i < V_COUNT; i++)
			order[i] = (enum variant)i;
		for (i = V_COUNT - 1; i > 0; i--) {
			uint32_t j = rnd(&e) % (i + 1);
			enum variant t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (i = 0; i < V_COUNT && !has_failed(); i++) {
			liar_drain(&liar);
			if (attempt(&e, order[i]))
				fprintf(stderr, "  during: %s\n",
					variant_names[order[i]]);
			tried[order[i]]++;
		}
	}
	__atomic_store_n(&g.stop, 1, __ATOMIC_RELEASE);
	pthread_join(good_thread, NULL);
	if (has_failed())
		goto out;
	if (!check_memory(&v, &g) && !no_async_events(g.ctx[0], "good0") &&
	    !no_async_events(g.ctx[1], "good1") &&
	    ibv_query_device(v.ctx, &attr))
		FAIL("ringnic0 no longer answers");
out:
	printf("\nhostile peer: packets tried per kind\n");
	for (i = 0; i < V_COUNT; i++)
		printf("  %-52s %6" PRIu64 "\n", variant_names[i], tried[i]);
	printf("good pair: %" PRIu64 " iterations, %" PRIu64
	       " bytes verified\n", g.iterations, g.bytes_verified);
	if (has_failed()) {
		printf("FAIL %s\n", failure);
		return 1;
	}
	printf("ok: every attempt had its expected outcome, no byte outside "
	       "what the good pair wrote changed, the good pair saw no error\n");
	return 0;
}
