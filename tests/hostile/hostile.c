// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_hostile [--seed N] [--rounds N]: run under ringnic-run against a live
 * ringnicd (tests/with-device.sh exports RINGNICD_PID).  Forks the good
 * pair, the hostile and the thief, hands the thief what the others
 * published, stops the good pair when the attackers are done, prints what
 * was tried, and fails on any wrong outcome, any error the good pair saw,
 * a damaged canary, an untried class, or a dead ringnicd.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

struct loot_msg {
	uint32_t victim;
	uint32_t pad;
	struct loot loot;
};

static void usage(void)
{
	fprintf(stderr, "usage: rn_hostile [--seed N] [--rounds N]\n"
			"  --seed N    seed of every random choice (printed when omitted)\n"
			"  --rounds N  attempts per class and attacker (default 1000)\n");
	exit(2);
}

static pid_t spawn(const char *name, int (*body)(void *), void *arg)
{
	pid_t pid = fork();

	if (pid < 0) {
		perror("fork");
		exit(1);
	}
	if (!pid) {
		who = name;
		_exit(body(arg) ? 1 : 0);
	}
	return pid;
}

struct role_args {
	int role;
	int fds[3];
	uint64_t seed;
	unsigned int rounds;
};

static int run_good(void *p)
{
	struct role_args *a = p;

	return good_pair_run(a->role, a->fds[0], a->fds[1], a->seed);
}

static int run_hostile(void *p)
{
	struct role_args *a = p;

	return hostile_run(a->fds[0], a->seed, a->rounds);
}

static int run_thief(void *p)
{
	struct role_args *a = p;

	return thief_run(a->fds[0], a->seed, a->rounds);
}

/* Collect what the three victims published and pass it all to the thief. */
static int deal_loot(int from, int to)
{
	struct loot loot[VICTIM_COUNT];
	bool have[VICTIM_COUNT] = { false };
	int n = 0;

	memset(loot, 0, sizeof(loot));
	while (n < VICTIM_COUNT) {
		struct pollfd pfd = { .fd = from, .events = POLLIN };
		struct loot_msg m;

		HCHECK(poll(&pfd, 1, 60000) == 1, "nothing published in 60 s");
		HCHECK(read(from, &m, sizeof(m)) == sizeof(m),
		       "a victim died before publishing");
		HCHECK(m.victim < VICTIM_COUNT && !have[m.victim],
		       "bad loot message");
		have[m.victim] = true;
		loot[m.victim] = m.loot;
		n++;
	}
	HCHECK(write(to, loot, sizeof(loot)) == sizeof(loot), "loot to thief: %s",
	       strerror(errno));
	return 0;
}

static int reap(pid_t pid, const char *name)
{
	int status;

	HCHECK(waitpid(pid, &status, 0) == pid, "waitpid %s: %s", name,
	       strerror(errno));
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	if (WIFSIGNALED(status))
		return HFAIL("%s killed by signal %d", name, WTERMSIG(status));
	return HFAIL("%s exited with status %d", name, WEXITSTATUS(status));
}

static void report(void)
{
	uint64_t per_class[CL_COUNT] = { 0 };
	int v, c;

	for (v = 0; v < V_COUNT; v++)
		per_class[variants[v].cls] += sh->tried[v];
	printf("\nhostile: bad inputs tried per class\n");
	for (c = 0; c < CL_COUNT; c++) {
		printf("  %-30s %6" PRIu64 " tried, %" PRIu64 " wrong outcomes\n",
		       class_names[c], per_class[c], sh->wrong[c]);
		for (v = 0; v < V_COUNT; v++)
			if (variants[v].cls == (enum hclass)c)
				printf("      %-44s %6" PRIu64 "\n", variants[v].name,
				       sh->tried[v]);
	}
	for (c = 0; c < 2; c++) {
		const struct good_report *g = &sh->good[c];

		printf("good%d: %" PRIu64 " iterations, %" PRIu64 " ops, %" PRIu64
		       " bytes verified, %" PRIu64 " error completions, %" PRIu64
		       " async events%s\n",
		       c, g->iterations, g->ops, g->bytes_verified, g->error_cqes,
		       g->async_events, g->finished ? "" : ", DID NOT FINISH");
	}
	printf("canaries: %" PRIu64 " guarded buffers checked, %" PRIu64 " damaged\n",
	       sh->canary_regions, sh->canary_damaged);
}

/* With this many rounds, a variant never tried means one went missing. */
#define ROUNDS_FOR_EVERY_VARIANT 500

/* Every verdict is a real check: each can fail the run. */
static int verdict(unsigned int rounds)
{
	const char *pid_env = getenv("RINGNICD_PID");
	uint64_t per_class[CL_COUNT] = { 0 };
	int v, c, ret = 0;

	for (v = 0; v < V_COUNT; v++) {
		per_class[variants[v].cls] += sh->tried[v];
		if (rounds >= ROUNDS_FOR_EVERY_VARIANT && !sh->tried[v])
			ret = HFAIL("variant '%s' never tried in %u rounds",
				    variants[v].name, rounds);
	}
	for (c = 0; c < CL_COUNT; c++) {
		if (!per_class[c])
			ret = HFAIL("class '%s': nothing tried", class_names[c]);
		if (sh->wrong[c])
			ret = HFAIL("class '%s': %" PRIu64 " wrong outcomes",
				    class_names[c], sh->wrong[c]);
	}
	for (c = 0; c < 2; c++) {
		const struct good_report *g = &sh->good[c];

		if (!g->finished || !g->iterations || g->error_cqes ||
		    g->async_events)
			ret = HFAIL("good%d: finished %d, %" PRIu64
				    " iterations, %" PRIu64 " errors, %" PRIu64
				    " events", c, g->finished, g->iterations,
				    g->error_cqes, g->async_events);
	}
	if (sh->canary_damaged || !sh->canary_regions)
		ret = HFAIL("%" PRIu64 " of %" PRIu64 " canaries damaged",
			    sh->canary_damaged, sh->canary_regions);
	if (pid_env) {
		if (kill((pid_t)strtol(pid_env, NULL, 10), 0))
			ret = HFAIL("ringnicd (pid %s) is gone", pid_env);
		else
			printf("ringnicd (pid %s) is alive\n", pid_env);
	} else {
		printf("RINGNICD_PID not set: ringnicd's health not checked\n");
	}
	return ret;
}

int main(int argc, char **argv)
{
	uint64_t seed = (uint64_t)time(NULL) * 1000003u ^ (uint64_t)getpid();
	struct role_args good[2], hostile, thief;
	int pair[2], loot_up[2], to_thief[2], i;
	unsigned int rounds = 1000;
	pid_t gpid[2], hpid, tpid;
	int ret = 0;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = strtoul(argv[++i], NULL, 0);
		else
			usage();
	}
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	printf("hostile: seed %" PRIu64 ", %u rounds (rerun: rn_hostile --seed %"
	       PRIu64 " --rounds %u)\n", seed, rounds, seed, rounds);
	/* Asked before the fork: the children keep the answer. */
	printf("hostile: userfaultfd: %s\n",
	       rn_test_have_uffd() ? "yes" : "no (address-only checks)");
	fflush(stdout);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, pair) || pipe(loot_up) ||
	    pipe(to_thief)) {
		perror("socketpair/pipe");
		return 1;
	}

	/* No device is opened here: every child opens its own after fork. */
	for (i = 0; i < 2; i++) {
		good[i] = (struct role_args){ i, { pair[i], loot_up[1] },
					      seed ^ (0x600dull << (8 * i)), 0 };
		gpid[i] = spawn(i ? "good1" : "good0", run_good, &good[i]);
	}
	hostile = (struct role_args){ 2, { loot_up[1] }, seed ^ 0xbad, rounds };
	hpid = spawn("hostile", run_hostile, &hostile);
	thief = (struct role_args){ 3, { to_thief[0] }, seed ^ 0x7e1f, rounds };
	tpid = spawn("thief", run_thief, &thief);
	close(loot_up[1]);
	close(to_thief[0]);

	ret |= deal_loot(loot_up[0], to_thief[1]);
	ret |= reap(tpid, "thief");
	/* The hostile keeps what it published until the thief is done. */
	__atomic_store_n(&sh->thief_done, 1, __ATOMIC_RELEASE);
	ret |= reap(hpid, "hostile");
	__atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
	ret |= reap(gpid[0], "good0");
	ret |= reap(gpid[1], "good1");

	report();
	ret |= verdict(rounds);
	if (sh->failed)
		printf("FAILED (seed %" PRIu64 "): first failure: %s\n", seed,
		       sh->failure);
	else
		printf("PASSED\n");
	return ret || sh->failed ? 1 : 0;
}
