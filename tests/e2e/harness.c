// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The harness: selects subtests by argv, forks the processes of each one
 * (before any of them opens the device), waits for them with a deadline and
 * prints one line per subtest.  Also the socket messages roles exchange.
 *
 * usage: rn_e2e [--list] [GROUP | GROUP/NAME | NAME]...   (default: all)
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "e2e.h"

#define E2E_DEFAULT_TIMEOUT_S 60
#define E2E_REASON_MAX 600

/* One failure reason per role, and one for the harness itself. */
struct e2e_results {
	char reason[E2E_MAX_ROLES + 1][E2E_REASON_MAX];
};

static struct e2e_results *results;
static char *my_reason; /* this process's slot in results */
static pid_t harness_pid;

static const char *const default_role_names[E2E_MAX_ROLES + 1] = {
	"requester", "responder", "role 2", "role 3", "harness",
};

int e2e_fail_at(const char *file, int line, const char *fmt, ...)
{
	const char *base = strrchr(file, '/');
	va_list ap;
	int n;

	if (!my_reason || my_reason[0])
		return -1;
	n = snprintf(my_reason, E2E_REASON_MAX, "%s:%d: ", base ? base + 1 : file,
		     line);
	if (n < 0 || n >= E2E_REASON_MAX)
		return -1;
	va_start(ap, fmt);
	vsnprintf(my_reason + n, E2E_REASON_MAX - n, fmt, ap);
	va_end(ap);
	return -1;
}

uint64_t e2e_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t e2e_now_ms(void)
{
	return e2e_now_us() / 1000;
}

void e2e_sleep_ms(unsigned int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- messages ------------------------------------------------------------- */

int msg_send(int fd, const void *buf, size_t len)
{
	ssize_t n;

	do
		n = send(fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)len)
		return FAIL("message to peer: %s", n < 0 ? strerror(errno) :
							   "short send");
	return 0;
}

int msg_recv(int fd, void *buf, size_t len, int timeout_ms)
{
	uint64_t deadline = e2e_now_ms() + timeout_ms;
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	ssize_t n;

	for (;;) {
		int64_t left = (int64_t)(deadline - e2e_now_ms());
		int r;

		if (left < 0)
			left = 0;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return FAIL("poll: %s", strerror(errno));
		if (r == 0)
			return FAIL("no message from peer within %d ms", timeout_ms);
		break;
	}
	do
		n = recv(fd, buf, len, MSG_TRUNC);
	while (n < 0 && errno == EINTR);
	if (n == 0 || (n < 0 && errno == ECONNRESET))
		return FAIL("peer went away (it failed or died)");
	if (n < 0)
		return FAIL("recv: %s", strerror(errno));
	if (n != (ssize_t)len)
		return FAIL("message of %zd bytes, expected %zu", n, len);
	return 0;
}

int msg_xchg(int fd, const void *mine, void *theirs, size_t len)
{
	TRY(msg_send(fd, mine, len));
	return msg_recv(fd, theirs, len, E2E_WAIT_MS);
}

int e2e_sync(struct e2e_proc *p, const char *tag)
{
	char mine[32] = { 0 }, theirs[32];

	snprintf(mine, sizeof(mine), "%s", tag);
	TRY(msg_xchg(p->peer, mine, theirs, sizeof(mine)));
	theirs[sizeof(theirs) - 1] = 0;
	CHECK(!strcmp(mine, theirs), "out of step: at '%s', peer at '%s'", mine,
	      theirs);
	return 0;
}

int send_u64(int fd, uint64_t v)
{
	return msg_send(fd, &v, sizeof(v));
}

int recv_u64(int fd, uint64_t *v, int timeout_ms)
{
	return msg_recv(fd, v, sizeof(*v), timeout_ms);
}

/* ---- running one subtest -------------------------------------------------- */

static void run_role(const struct e2e_test *t, int role, int peer, int ctl)
{
	struct e2e_proc p = { .role = role, .peer = peer, .ctl = ctl };
	int ret;

	/* Never outlive the harness, whatever happens to it. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != harness_pid)
		_exit(1);
	my_reason = results->reason[role];
	if (role % 2 && !t->one_device && getenv("RINGNIC_E2E_PEER_DEVICE"))
		e2e_device = getenv("RINGNIC_E2E_PEER_DEVICE");
	ret = t->role[role](&p);
	if (ret && !my_reason[0])
		FAIL("failed without a reason");
	exit(ret ? 1 : 0);
}

static void describe_status(int role, int status, bool killed)
{
	my_reason = results->reason[role];
	if (killed && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		; /* stopped by the harness after another failure */
	else if (WIFSIGNALED(status))
		FAIL("killed by signal %d (%s)", WTERMSIG(status),
		     strsignal(WTERMSIG(status)));
	else if (WIFEXITED(status) && WEXITSTATUS(status))
		FAIL("exited with status %d", WEXITSTATUS(status));
	my_reason = results->reason[E2E_MAX_ROLES];
}

/* Wait for every role still running, until the deadline. */
static void reap_all(pid_t *pids, int n, uint64_t deadline, int timeout_s,
		     bool killed)
{
	int left = 0, i, status;

	for (i = 0; i < n; i++)
		left += pids[i] > 0;
	while (left) {
		pid_t pid = waitpid(-1, &status, WNOHANG);

		if (pid < 0 && errno == EINTR)
			continue;
		if (pid < 0)
			break;
		if (pid == 0) {
			if (e2e_now_ms() > deadline) {
				FAIL("timed out after %d s", timeout_s);
				killed = false; /* the hang is what failed */
				for (i = 0; i < n; i++)
					if (pids[i] > 0)
						kill(pids[i], SIGKILL);
				deadline = UINT64_MAX;
			}
			e2e_sleep_ms(5);
			continue;
		}
		for (i = 0; i < n; i++) {
			if (pids[i] != pid)
				continue;
			pids[i] = 0;
			left--;
			describe_status(i, status, killed);
		}
	}
}

static bool run_test(const struct e2e_test *t)
{
	int timeout_s = t->timeout_s ? t->timeout_s : E2E_DEFAULT_TIMEOUT_S;
	int peer[E2E_MAX_ROLES], ctl[E2E_MAX_ROLES], child_ctl[E2E_MAX_ROLES];
	pid_t pids[E2E_MAX_ROLES] = { 0 };
	uint64_t start = e2e_now_ms();
	bool ok = true, killed = false;
	int i, sv[2];

	memset(results, 0, sizeof(*results));
	my_reason = results->reason[E2E_MAX_ROLES];
	for (i = 0; i < E2E_MAX_ROLES; i++)
		peer[i] = ctl[i] = child_ctl[i] = -1;
	for (i = 0; i + 1 < t->nroles; i += 2) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
			FAIL("socketpair: %s", strerror(errno));
			goto out;
		}
		peer[i] = sv[0];
		peer[i + 1] = sv[1];
	}
	for (i = 0; i < t->nroles; i++) {
		if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
			FAIL("socketpair: %s", strerror(errno));
			goto out;
		}
		ctl[i] = sv[0];
		child_ctl[i] = sv[1];
	}

	fflush(stdout);
	fflush(stderr);
	for (i = 0; i < t->nroles; i++) {
		pids[i] = fork();
		if (pids[i] < 0) {
			pids[i] = 0;
			FAIL("fork: %s", strerror(errno));
			break;
		}
		if (pids[i] == 0) {
			int j;

			/* Keep only this role's own ends. */
			for (j = 0; j < t->nroles; j++) {
				if (j != i) {
					if (peer[j] >= 0)
						close(peer[j]);
					close(child_ctl[j]);
				}
				close(ctl[j]);
			}
			run_role(t, i, peer[i], child_ctl[i]);
		}
	}
	for (i = 0; i < t->nroles; i++) {
		close(child_ctl[i]);
		child_ctl[i] = -1;
		if (peer[i] >= 0)
			close(peer[i]);
		peer[i] = -1;
	}
	/* A failed orchestration ends the subtest at once. */
	if (!results->reason[E2E_MAX_ROLES][0] && t->orchestrate &&
	    t->orchestrate(pids, ctl, t->nroles)) {
		for (i = 0; i < t->nroles; i++)
			if (pids[i] > 0)
				kill(pids[i], SIGKILL);
		killed = true;
	}
	reap_all(pids, t->nroles, start + (uint64_t)timeout_s * 1000, timeout_s,
		 killed);

out:
	for (i = 0; i < E2E_MAX_ROLES; i++) {
		if (ctl[i] >= 0)
			close(ctl[i]);
		if (child_ctl[i] >= 0)
			close(child_ctl[i]);
		if (peer[i] >= 0)
			close(peer[i]);
	}
	for (i = 0; i <= E2E_MAX_ROLES; i++)
		ok &= !results->reason[i][0];
	printf("%s/%s: %s", t->group, t->name, ok ? "ok" : "FAILED");
	if (ok) {
		printf(" (%.2f s)\n", (e2e_now_ms() - start) / 1000.0);
		return true;
	}
	for (i = 0; i <= E2E_MAX_ROLES; i++)
		if (results->reason[i][0])
			printf("\n    %s: %s",
			       i < E2E_MAX_ROLES && t->role_names[i] ?
				       t->role_names[i] : default_role_names[i],
			       results->reason[i]);
	printf("\n");
	return false;
}

/* ---- selection ------------------------------------------------------------ */

static const struct e2e_test *const tables[] = {
	e2e_data_tests,
	e2e_error_tests,
	e2e_kill_tests,
	e2e_unmap_tests,
	e2e_ud_tests,
	e2e_srq_tests,
	e2e_uc_tests,
	e2e_xrc_tests,
	e2e_mw_tests,
	e2e_memory_tests,
	e2e_object_tests,
	e2e_import_tests,
	e2e_fault_tests,
};

static bool selected(const struct e2e_test *t, int argc, char **argv)
{
	char full[128];
	int i;

	if (argc < 2)
		return true;
	snprintf(full, sizeof(full), "%s/%s", t->group, t->name);
	for (i = 1; i < argc; i++)
		if (!strcmp(argv[i], "all") || !strcmp(argv[i], t->group) ||
		    !strcmp(argv[i], t->name) || !strcmp(argv[i], full))
			return true;
	return false;
}

int main(int argc, char **argv)
{
	unsigned int run = 0, failed = 0, k;
	const struct e2e_test *t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc > 1 && !strcmp(argv[1], "--list")) {
		for (k = 0; k < sizeof(tables) / sizeof(tables[0]); k++)
			for (t = tables[k]; t->name; t++)
				printf("%s/%s\n", t->group, t->name);
		return 0;
	}
	harness_pid = getpid();
	printf("userfaultfd: %s\n",
	       rn_test_have_uffd() ? "yes" : "no (address-only checks)");
	results = mmap(NULL, sizeof(*results), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (results == MAP_FAILED) {
		perror("mmap");
		return 2;
	}
	for (k = 0; k < sizeof(tables) / sizeof(tables[0]); k++) {
		for (t = tables[k]; t->name; t++) {
			if (!selected(t, argc, argv))
				continue;
			run++;
			failed += !run_test(t);
		}
	}
	if (!run) {
		fprintf(stderr, "rn_e2e: no subtest matches\n");
		return 2;
	}
	printf("%u subtests, %u failed\n", run, failed);
	return failed ? 1 : 0;
}
