// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_pid_reuse: once a client's process is gone, the device must not reach
 * whatever process its pid names next, even while a forked child keeps the
 * client's control socket open (so that no hang-up comes).
 *
 * Run as root in a pid namespace of its own, with ringnicd in the same
 * namespace (pid_reuse.sh), so that /proc/sys/kernel/ns_last_pid chooses
 * the next pid the device sees.  Processes, forked by the driver before any
 * device is opened:
 *   A  registers a buffer at a fixed address for remote writes and connects
 *      an RC QP to B; after one checked write from B it forks a child D that
 *      keeps A's control socket open, and then:
 *      exit  A exits and is reaped; D reports the hang-up the device must
 *            give it; a new process C gets A's pid (ns_last_pid) and maps
 *            memory at the same address;
 *      exec  A execs this program, which maps memory at the same address:
 *            the same pid, another address space (C again).
 *   B  then RDMA-WRITEs to A's MR again.
 * Each scenario passes when C's memory is untouched and B's write
 * completes in error.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#define BUF_ADDR ((void *)0x5a5a00000000ull) /* A's buffer, then C's */
#define BUF_LEN 4096
#define FILL 0xc3 /* C's memory */
#define FIRST 0x11 /* B's checked write, to A */
#define SECOND 0x77 /* B's write after A is gone */
#define WAIT_MS 20000
#define HANGUP_MS 5000 /* the device's notice of an exit */

static const char *role = "driver";

static int fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "pid_reuse: %s: ", role);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -1;
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond))                                                   \
			return fail(__VA_ARGS__);                              \
	} while (0)

/* ---- messages between the driver and the roles (SOCK_SEQPACKET) --------- */

struct endpoint {
	uint32_t qpn;
	uint32_t rkey;
	uint8_t gid[16];
};

struct msg {
	char what[16];
	int value;
	bool socket; /* "forked": A has a control socket (userspace mode) */
	struct endpoint ep;
};

/* The device to use, and the GID index (RINGNIC_TEST_GID, default 0). */
#define DEVICE "ringnic0"


static int send_msg(int fd, const struct msg *m)
{
	CHECK(send(fd, m, sizeof(*m), MSG_NOSIGNAL) == sizeof(*m), "send %s: %s",
	      m->what, strerror(errno));
	return 0;
}

static int put(int fd, const char *what, int value, const struct endpoint *ep)
{
	struct msg m = { .value = value };

	snprintf(m.what, sizeof(m.what), "%s", what);
	if (ep)
		m.ep = *ep;
	return send_msg(fd, &m);
}

/* The next message, within ms milliseconds. */
static int receive(int fd, struct msg *m, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	CHECK(poll(&p, 1, ms) == 1, "no message within %d ms", ms);
	CHECK(recv(fd, m, sizeof(*m), 0) == sizeof(*m), "recv: %s",
	      strerror(errno));
	return 0;
}

/* The next message, which must be 'what'. */
static int get(int fd, const char *what, struct msg *m)
{
	if (receive(fd, m, WAIT_MS))
		return fail("waiting for '%s'", what);
	CHECK(!strcmp(m->what, what), "got '%s', wanted '%s'", m->what, what);
	return 0;
}

/* ---- verbs ---------------------------------------------------------------- */

struct side {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	int gid_index;
	struct endpoint me;
};

static int side_open(struct side *s, void *buf, int access)
{
	struct ibv_qp_init_attr qa = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
			 .max_recv_sge = 1 },
	};
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_device **list = ibv_get_device_list(NULL);
	const char *gid_index = getenv("RINGNIC_TEST_GID");
	union ibv_gid gid;
	int i;

	CHECK(list, "ibv_get_device_list: %s", strerror(errno));
	for (i = 0; list[i] && strcmp(ibv_get_device_name(list[i]), DEVICE); i++)
		;
	s->ctx = list[i] ? ibv_open_device(list[i]) : NULL;
	ibv_free_device_list(list);
	CHECK(s->ctx, "cannot open %s: %s", DEVICE, strerror(errno));
	s->gid_index = gid_index ? atoi(gid_index) : 0;
	s->pd = ibv_alloc_pd(s->ctx);
	CHECK(s->pd, "ibv_alloc_pd: %s", strerror(errno));
	s->mr = ibv_reg_mr(s->pd, buf, BUF_LEN, access);
	CHECK(s->mr, "ibv_reg_mr: %s", strerror(errno));
	s->cq = ibv_create_cq(s->ctx, 4, NULL, NULL, 0);
	CHECK(s->cq, "ibv_create_cq: %s", strerror(errno));
	qa.send_cq = qa.recv_cq = s->cq;
	s->qp = ibv_create_qp(s->pd, &qa);
	CHECK(s->qp, "ibv_create_qp: %s", strerror(errno));
	CHECK(!ibv_modify_qp(s->qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
	      "modify_qp to INIT");
	CHECK(!ibv_query_gid(s->ctx, 1, s->gid_index, &gid), "ibv_query_gid");
	s->me.qpn = s->qp->qp_num;
	s->me.rkey = s->mr->rkey;
	memcpy(s->me.gid, gid.raw, sizeof(gid.raw));
	return 0;
}

/* RTR and RTS towards 'peer'; a lost peer fails within a few tries. */
static int side_connect(struct side *s, const struct endpoint *peer)
{
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR,
		.path_mtu = IBV_MTU_1024,
		.dest_qp_num = peer->qpn,
		.max_dest_rd_atomic = 1,
		.min_rnr_timer = 1,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .hop_limit = 64 } },
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS,
		.timeout = 14, /* 67 ms */
		.retry_cnt = 2,
		.rnr_retry = 2,
		.max_rd_atomic = 1,
	};

	rtr.ah_attr.grh.sgid_index = s->gid_index;
	memcpy(rtr.ah_attr.grh.dgid.raw, peer->gid, 16);
	CHECK(!ibv_modify_qp(s->qp, &rtr, IBV_QP_STATE | IBV_QP_AV |
			     IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
	      "modify_qp to RTR");
	CHECK(!ibv_modify_qp(s->qp, &rts, IBV_QP_STATE | IBV_QP_SQ_PSN |
			     IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC),
	      "modify_qp to RTS");
	return 0;
}

/* RDMA WRITE of the whole of buf to the peer's MR; the completion status. */
static int write_to(struct side *s, void *buf, const struct endpoint *peer,
		    enum ibv_wc_status *status)
{
	struct ibv_sge sge = { (uintptr_t)buf, BUF_LEN, s->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { (uintptr_t)BUF_ADDR, peer->rkey },
	}, *bad;
	struct timespec start, now;
	struct ibv_wc wc;
	int n;

	CHECK(!ibv_post_send(s->qp, &wr, &bad), "ibv_post_send");
	clock_gettime(CLOCK_MONOTONIC, &start);
	while (!(n = ibv_poll_cq(s->cq, 1, &wc))) {
		clock_gettime(CLOCK_MONOTONIC, &now);
		CHECK(now.tv_sec - start.tv_sec < WAIT_MS / 1000,
		      "no completion within %d ms", WAIT_MS);
		usleep(100);
	}
	CHECK(n == 1, "ibv_poll_cq: %d", n);
	*status = wc.status;
	return 0;
}

static void *map_fixed(void)
{
	void *p = mmap(BUF_ADDR, BUF_LEN, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);

	return p == BUF_ADDR ? p : NULL;
}

static bool all(const uint8_t *p, uint8_t byte)
{
	size_t i;

	for (i = 0; i < BUF_LEN; i++)
		if (p[i] != byte)
			return false;
	return true;
}

/* The device's control socket among our descriptors: named *.sock. */
static int control_socket(void)
{
	struct sockaddr_un sa;
	socklen_t len;
	size_t n;
	int fd;

	for (fd = 0; fd < 1024; fd++) {
		len = sizeof(sa);
		memset(&sa, 0, sizeof(sa));
		if (getpeername(fd, (struct sockaddr *)&sa, &len) ||
		    sa.sun_family != AF_UNIX)
			continue;
		n = strnlen(sa.sun_path, sizeof(sa.sun_path));
		if (n > 5 && !strcmp(sa.sun_path + n - 5, ".sock"))
			return fd;
	}
	return -1;
}

/* ---- the roles -------------------------------------------------------------- */

/*
 * D: holds A's descriptors; tells the driver when the device hangs up on
 * A's control socket.  In kernel mode A has none, only its uverbs file,
 * which the kernel keeps open: nothing to hang up.
 */
static void role_d(int fd, int ctl)
{
	struct pollfd p = { .fd = ctl, .events = POLLRDHUP };

	if (ctl >= 0 && poll(&p, 1, -1) == 1 &&
	    p.revents & (POLLHUP | POLLRDHUP))
		put(fd, "hangup", 0, NULL);
	for (;;)
		pause(); /* killed by the driver, or with the namespace */
}

/* C: memory at A's address, in a process with A's pid. */
static int role_c(int fd)
{
	uint8_t *buf = map_fixed();
	struct msg m;

	CHECK(buf, "cannot map %p", BUF_ADDR);
	memset(buf, FILL, BUF_LEN);
	if (put(fd, "mapped", getpid(), NULL) || get(fd, "check", &m))
		return -1;
	return put(fd, "untouched", all(buf, FILL), NULL);
}

static int role_a(int fd, bool exec_after)
{
	struct side s = { 0 };
	uint8_t *buf = map_fixed();
	struct msg m, forked = { .what = "forked" };
	char self[32], fdarg[16];
	pid_t d;
	int ctl;

	CHECK(buf, "cannot map %p", BUF_ADDR);
	memset(buf, 0, BUF_LEN);
	if (side_open(&s, buf, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE) ||
	    put(fd, "endpoint", 0, &s.me) || get(fd, "peer", &m) ||
	    side_connect(&s, &m.ep) || put(fd, "connected", 0, NULL) ||
	    get(fd, "check", &m))
		return -1;
	CHECK(all(buf, FIRST), "B's first write did not arrive");
	ctl = control_socket();
	/* D holds a copy of every descriptor of A, the control socket too. */
	d = fork();
	CHECK(d >= 0, "fork: %s", strerror(errno));
	if (d == 0) {
		role = "D";
		role_d(fd, ctl);
	}
	forked.value = d;
	forked.socket = ctl >= 0;
	if (send_msg(fd, &forked))
		return -1;
	if (!exec_after)
		_exit(0); /* closing nothing: the device sees no hang-up */
	/* The same pid, a new address space: C, talking on the same socket. */
	snprintf(self, sizeof(self), "/proc/%d/exe", (int)getpid());
	snprintf(fdarg, sizeof(fdarg), "%d", fd);
	CHECK(!fcntl(fd, F_SETFD, 0), "fcntl: %s", strerror(errno));
	execl(self, self, "--exec-image", fdarg, (char *)NULL);
	return fail("exec %s: %s", self, strerror(errno));
}

static int role_a_exit(int fd)
{
	return role_a(fd, false);
}

static int role_a_exec(int fd)
{
	return role_a(fd, true);
}

static int role_b(int fd)
{
	static uint8_t buf[BUF_LEN];
	enum ibv_wc_status st;
	struct side s = { 0 };
	struct msg m;

	if (side_open(&s, buf, IBV_ACCESS_LOCAL_WRITE) ||
	    put(fd, "endpoint", 0, &s.me) || get(fd, "peer", &m) ||
	    side_connect(&s, &m.ep) || put(fd, "connected", 0, NULL) ||
	    get(fd, "write", &m))
		return -1;
	memset(buf, FIRST, BUF_LEN);
	if (write_to(&s, buf, &m.ep, &st))
		return -1;
	CHECK(st == IBV_WC_SUCCESS, "first write: %s", ibv_wc_status_str(st));
	if (put(fd, "written", 0, NULL) || get(fd, "write", &m))
		return -1;
	memset(buf, SECOND, BUF_LEN);
	if (write_to(&s, buf, &m.ep, &st))
		return -1;
	return put(fd, "status", st, NULL);
}

/* ---- the driver ------------------------------------------------------------ */

/* Fork a role with a socket to the driver; returns the driver's end. */
static int spawn(const char *name, int (*fn)(int), pid_t *pid)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return fail("socketpair: %s", strerror(errno));
	*pid = fork();
	if (*pid < 0)
		return fail("fork: %s", strerror(errno));
	if (*pid == 0) {
		role = name;
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(sv[0]);
		_exit(fn(sv[1]) ? 1 : 0);
	}
	close(sv[1]);
	return sv[0];
}

/* The next process forked in this pid namespace gets 'pid'. */
static int next_pid_is(pid_t pid)
{
	FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");

	CHECK(f, "ns_last_pid: %s (run as root in a pid namespace of its own)",
	      strerror(errno));
	fprintf(f, "%d", (int)pid - 1);
	CHECK(!fclose(f), "ns_last_pid: %s", strerror(errno));
	return 0;
}

enum { A, B, C, D, NPROC };

/*
 * A and B connected, one write checked, A forked D.  'exec_after': A
 * becomes C by exec, else C is a new process with A's pid.  Returns 0 when
 * the device kept out of C.
 */
static int scenario(bool exec_after, pid_t *pid)
{
	int fa, fb, fc, status, failed = 0;
	struct endpoint ea, eb;
	bool userspace;
	struct msg m;
	pid_t a_pid;

	fa = spawn("A", exec_after ? role_a_exec : role_a_exit, &pid[A]);
	fb = spawn("B", role_b, &pid[B]);
	if (fa < 0 || fb < 0 || get(fa, "endpoint", &m))
		return -1;
	ea = m.ep;
	if (get(fb, "endpoint", &m))
		return -1;
	eb = m.ep;
	if (put(fa, "peer", 0, &eb) || put(fb, "peer", 0, &ea) ||
	    get(fa, "connected", &m) || get(fb, "connected", &m))
		return -1;
	/* One write that must arrive: the pair works. */
	if (put(fb, "write", 0, &ea) || get(fb, "written", &m) ||
	    put(fa, "check", 0, NULL) || get(fa, "forked", &m))
		return -1;
	pid[D] = m.value;
	userspace = m.socket;
	a_pid = pid[A];

	if (exec_after) {
		fc = fa;
	} else {
		CHECK(waitpid(pid[A], &status, 0) == pid[A] &&
		      WIFEXITED(status) && !WEXITSTATUS(status), "A failed");
		pid[A] = 0;
		printf("A (pid %d) exited and was reaped; D (pid %d) holds its "
		       "%s\n", (int)a_pid, (int)pid[D],
		       userspace ? "control socket" : "uverbs file");
		/* In kernel mode the kernel holds the file: no hang-up. */
		if (userspace &&
		    (receive(fa, &m, HANGUP_MS) || strcmp(m.what, "hangup")))
			failed = fail("the device kept A's client after A exited");
		if (next_pid_is(a_pid))
			return -1;
		fc = spawn("C", role_c, &pid[C]);
		if (fc < 0)
			return -1;
	}
	if (get(fc, "mapped", &m))
		return -1;
	CHECK(m.value == a_pid, "C has pid %d, not A's %d", m.value, (int)a_pid);
	printf("C has A's pid %d and memory at %p\n", (int)a_pid, BUF_ADDR);

	if (put(fb, "write", 0, &ea) || get(fb, "status", &m))
		return -1;
	status = m.value;
	if (put(fc, "check", 0, NULL) || get(fc, "untouched", &m))
		return -1;
	printf("B's write to A's MR: %s; C's memory %s\n",
	       ibv_wc_status_str((enum ibv_wc_status)status),
	       m.value ? "untouched" : "WRITTEN");
	if (!m.value)
		failed = fail("the device wrote into C, not A");
	if (status == IBV_WC_SUCCESS)
		failed = fail("B's write to the gone A completed successfully");
	return failed;
}

static int run(bool exec_after)
{
	pid_t pid[NPROC] = { 0 };
	int i, ret;

	printf("-- A %s\n", exec_after ? "execs" : "exits, its pid reused");
	ret = scenario(exec_after, pid);
	for (i = 0; i < NPROC; i++) {
		if (pid[i] <= 0)
			continue;
		kill(pid[i], SIGKILL);
		waitpid(pid[i], NULL, 0); /* D is not ours: it went to init */
	}
	return ret;
}

int main(int argc, char **argv)
{
	int ret;

	/* A after its exec: C, on the socket it kept. */
	if (argc == 3 && !strcmp(argv[1], "--exec-image")) {
		role = "C (A after exec)";
		return role_c(atoi(argv[2])) ? 1 : 0;
	}
	ret = run(false);
	ret |= run(true);
	printf("pid_reuse: %s\n", ret ? "FAILED" : "passed");
	return ret ? 1 : 0;
}
