// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_load [--pairs N] [--victims N] [--qps N] [--seconds N] [--seed N]
 *         [--rss-bound-mib N]
 *
 * Run under with-device.sh and ringnic-run (RINGNICD_PID and
 * RINGNIC_RUNTIME_DIR name the device).  The environment overrides the
 * arguments: RN_LOAD_PAIRS, RN_LOAD_VICTIMS, RN_LOAD_QPS, RN_LOAD_SECONDS,
 * RN_LOAD_SEED.
 *
 * --pairs stable pairs run for --seconds and must see no error at all.
 * Each of --victims slots spawns a pair again and again until then, and
 * SIGKILLs one of its clients (one time in eight both) at a random moment,
 * from device opening to full traffic; the survivor must drain exactly the
 * errors of a dead peer and exit cleanly.  Afterwards ringnicd must be back
 * to the descriptors, ring mappings and runtime files it had before, with
 * its RSS grown by less than --rss-bound-mib.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "load.h"

#define NOPS (IBV_WR_ATOMIC_FETCH_AND_ADD + 1)
#define KILL_SETUP_MS 40 /* one kill in five lands in the first 40 ms */
#define KILL_MAX_MS 1200
#define VICTIM_LIFE_S 120 /* victims never end on their own */
#define GRACE_S 90 /* after the deadline, everything must be over */
#define SETTLE_MS 10000 /* for ringnicd to take in the last hang-ups */

struct config {
	unsigned int pairs, victims, qps, seconds, rss_bound_mib;
	uint64_t seed;
};

struct pair {
	pid_t pid[2];
	int status[2];
	struct client_report *rep; /* two, in shared memory */
	bool running, victim;
	unsigned int index, round;
	uint64_t seed;
	uint64_t kill_at;
	unsigned int kill_mask; /* sides to kill */
	bool killed;
};

struct totals {
	uint64_t ops[NOPS], bytes, completions, batches;
	uint64_t retry_exc, flushed, mr_churn, qp_churn, mrs, qps;
	unsigned int clients, rounds, kills, kills_setup, kills_traffic, both;
	unsigned int survivors, survivor_saw_in_setup;
};

static const char *phase_names[] = { "start", "setup", "connect", "traffic",
				     "drain", "teardown" };

static int failures;

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fail(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "load: FAIL: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	failures++;
}

static unsigned int knob(const char *env, unsigned int v)
{
	const char *s = getenv(env);

	return s && *s ? (unsigned int)strtoul(s, NULL, 0) : v;
}

static int parse(int argc, char **argv, struct config *cfg)
{
	static const struct option opts[] = {
		{ "pairs", required_argument, NULL, 'p' },
		{ "victims", required_argument, NULL, 'v' },
		{ "qps", required_argument, NULL, 'q' },
		{ "seconds", required_argument, NULL, 's' },
		{ "seed", required_argument, NULL, 'S' },
		{ "rss-bound-mib", required_argument, NULL, 'r' },
		{}
	};
	const char *seed;
	int c;

	*cfg = (struct config){ .pairs = 3, .victims = 2, .qps = 6, .seconds = 30,
				.rss_bound_mib = 4 };
	cfg->seed = mix64((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		unsigned long v = strtoul(optarg ? optarg : "0", NULL, 0);

		switch (c) {
		case 'p': cfg->pairs = v; break;
		case 'v': cfg->victims = v; break;
		case 'q': cfg->qps = v; break;
		case 's': cfg->seconds = v; break;
		case 'S': cfg->seed = strtoull(optarg, NULL, 0); break;
		case 'r': cfg->rss_bound_mib = v; break;
		default: return -1;
		}
	}
	cfg->pairs = knob("RN_LOAD_PAIRS", cfg->pairs);
	cfg->victims = knob("RN_LOAD_VICTIMS", cfg->victims);
	cfg->qps = knob("RN_LOAD_QPS", cfg->qps);
	cfg->seconds = knob("RN_LOAD_SECONDS", cfg->seconds);
	seed = getenv("RN_LOAD_SEED");
	if (seed && *seed)
		cfg->seed = strtoull(seed, NULL, 0);
	if (optind != argc || !cfg->qps || cfg->qps > LOAD_MAX_QPS ||
	    !(cfg->pairs + cfg->victims))
		return -1;
	return 0;
}

/* ---- clients ------------------------------------------------------------------ */

static int spawn(struct pair *p, const struct config *cfg, uint64_t deadline)
{
	int sv[2], side;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv)) {
		fail("socketpair: %s", strerror(errno));
		return -1;
	}
	memset(p->rep, 0, 2 * sizeof(*p->rep));
	p->seed = mix64(cfg->seed ^ mix64((uint64_t)p->index << 32 | p->round));
	fflush(NULL);
	for (side = 0; side < 2; side++) {
		pid_t pid = fork();

		if (pid < 0) {
			fail("fork: %s", strerror(errno));
			p->pid[side] = 0;
			continue;
		}
		if (!pid) {
			struct client_params cp = {
				.side = side,
				.sock = sv[side],
				.nqps = cfg->qps,
				.pair_seed = p->seed,
				.deadline_ns = deadline,
				.victim_pair = p->victim,
				.rep = &p->rep[side],
			};

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(sv[!side]);
			_exit(client_main(&cp));
		}
		p->pid[side] = pid;
		p->status[side] = -1;
	}
	/* Only the clients may hold the socket: a hang-up means death. */
	close(sv[0]);
	close(sv[1]);
	p->running = true;
	p->killed = false;
	return p->pid[0] && p->pid[1] ? 0 : -1;
}

static void reap(struct pair *p)
{
	int side;

	for (side = 0; side < 2; side++)
		if (p->pid[side] && waitpid(p->pid[side], &p->status[side], WNOHANG) ==
					    p->pid[side])
			p->pid[side] = 0;
}

static const char *describe(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
	else
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	return buf;
}

static void add_report(struct totals *t, const struct client_report *r)
{
	int i;

	for (i = 0; i < NOPS; i++)
		t->ops[i] += r->ops[i];
	t->bytes += r->bytes;
	t->completions += r->completions;
	t->batches += r->batches;
	t->retry_exc += r->retry_exc;
	t->flushed += r->flushed;
	t->mr_churn += r->mr_churn;
	t->qp_churn += r->qp_churn;
	t->mrs += r->mrs;
	t->qps += r->qps;
	t->clients++;
}

/* A pair that has ended entirely: was it the end it had to have? */
static void judge(struct pair *p, struct totals *t)
{
	int side;
	char how[64];

	for (side = 0; side < 2; side++) {
		const struct client_report *r = &p->rep[side];
		int st = p->status[side];
		bool killed = p->kill_mask >> side & 1 && p->killed;
		const char *kind = p->victim ? "victim pair" : "pair";

		add_report(t, r);
		if (killed && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) {
			t->kills++;
			if (r->phase <= PHASE_CONNECT)
				t->kills_setup++;
			else
				t->kills_traffic++;
			continue;
		}
		if (WIFEXITED(st) && !WEXITSTATUS(st) && r->finished &&
		    !(p->killed && !r->peer_died)) {
			if (p->killed) {
				t->survivors++;
				t->survivor_saw_in_setup += r->peer_died &&
							    r->peer_died <= PHASE_CONNECT;
			}
			continue;
		}
		fail("%s %u round %u side %d (seed %#llx): %s in phase %s%s%s%s", kind,
		     p->index, p->round, side, (unsigned long long)p->seed,
		     describe(st, how, sizeof(how)), phase_names[r->phase % 6],
		     killed ? " (meant to be killed)" : "", r->why[0] ? ": " : "",
		     r->why[0] ? r->why : r->finished ? ": the survivor never noticed the death" : "");
	}
	if (p->victim && p->killed)
		t->rounds++;
	t->both += p->victim && p->killed && p->kill_mask == 3;
	p->running = false;
}

static void kill_all(struct pair *pairs, unsigned int n)
{
	unsigned int i;
	int side;

	for (i = 0; i < n; i++)
		for (side = 0; side < 2; side++)
			if (pairs[i].pid[side]) {
				kill(pairs[i].pid[side], SIGKILL);
				waitpid(pairs[i].pid[side], &pairs[i].status[side], 0);
				pairs[i].pid[side] = 0;
			}
}

/* Spawn, kill at the chosen moment, judge when both are gone, again. */
static void victim_step(struct pair *p, const struct config *cfg, uint64_t now,
			uint64_t deadline, uint64_t *rng, struct totals *t)
{
	int side;

	if (!p->running) {
		uint64_t ms = rng_below(rng, 5) ? KILL_SETUP_MS +
					 rng_below(rng, KILL_MAX_MS - KILL_SETUP_MS) :
					 rng_below(rng, KILL_SETUP_MS);
		uint32_t who = rng_below(rng, 8);

		if (now >= deadline)
			return;
		p->round++;
		p->kill_mask = who ? 1u << (who & 1) : 3;
		p->kill_at = now + ms * 1000000;
		if (spawn(p, cfg, now + VICTIM_LIFE_S * 1000000000ull))
			return;
	}
	if (!p->killed && now >= p->kill_at) {
		for (side = 0; side < 2; side++)
			if (p->kill_mask >> side & 1 && p->pid[side])
				kill(p->pid[side], SIGKILL);
		p->killed = true;
	}
	reap(p);
	if (!p->pid[0] && !p->pid[1])
		judge(p, t);
}

/* ---- the run ---------------------------------------------------------------------- */

static void print_totals(const struct totals *t, double secs)
{
	static const enum ibv_wr_opcode order[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP,
	};
	uint64_t all = 0;
	unsigned int i;

	for (i = 0; i < NOPS; i++)
		all += t->ops[i];
	printf("load: operations done and verified: %llu in %.1f s (%llu completions checked, %llu batches)\n",
	       (unsigned long long)all, secs, (unsigned long long)t->completions,
	       (unsigned long long)t->batches);
	printf("load:  ");
	for (i = 0; i < NOPS; i++)
		printf(" %s %llu", op_name(order[i]), (unsigned long long)t->ops[order[i]]);
	printf("\nload: bytes verified: %llu (%.1f MiB)\n", (unsigned long long)t->bytes,
	       t->bytes / 1048576.0);
	printf("load: clients killed: %u (%u in setup/connect, %u in traffic; %u rounds, %u with both sides killed); %u survivors drained (%u saw it before traffic): %llu retry-exceeded, %llu flushed\n",
	       t->kills, t->kills_setup, t->kills_traffic, t->rounds, t->both, t->survivors,
	       t->survivor_saw_in_setup, (unsigned long long)t->retry_exc,
	       (unsigned long long)t->flushed);
	printf("load: clients run: %u; churn: %llu MRs registered and deregistered, %llu QPs created and destroyed\n",
	       t->clients, (unsigned long long)t->mr_churn, (unsigned long long)t->qp_churn);
}

static bool same_holdings(const struct daemon_sample *a, const struct daemon_sample *b)
{
	return a->fds == b->fds && a->ring_maps == b->ring_maps &&
	       a->runtime_entries == b->runtime_entries;
}

/*
 * Wait for ringnicd to have taken in every hang-up, then sample: its
 * holdings must be back to what they were and stay so over three samples
 * in a row (a descriptor held for a moment, as the netlink socket of a
 * route lookup, is not a leak), else the last sample at the deadline.
 */
static void settle(pid_t daemon, const char *dir, const struct daemon_sample *before,
		   struct daemon_sample *after)
{
	uint64_t until = now_ns() + SETTLE_MS * 1000000ull;
	struct timespec ts = { 0, 50 * 1000000 };
	struct daemon_sample s;
	unsigned int same = 0;

	*after = *before;
	while (same < 3 && now_ns() < until) {
		if (daemon_sample(daemon, dir, &s)) {
			fail("cannot sample ringnicd (pid %d) after the load", (int)daemon);
			return;
		}
		*after = s;
		same = same_holdings(after, before) ? same + 1 : 0;
		nanosleep(&ts, NULL);
	}
}

/*
 * How much ringnicd may keep after the load.  A fixed part: its staging
 * buffer (1 MiB, touched by the first large copies), the high-water mark
 * of its heap, and under ASan the quarantine of freed memory.  And a part
 * that grows with the work, by design: MR keys and QPNs are handed out
 * round robin so that stale ones find nothing, so the key and QPN tables
 * grow with every registration until they reach their maxima, doubling as
 * they go: up to 16 B of table and 1 B of tag per key, 16 + 2 B per QPN
 * (a kill may cost one uncounted registration).
 */
static uint64_t rss_bound_kib(const struct config *cfg, const struct totals *t,
			      uint64_t *tables_kib)
{
	*tables_kib = ((t->mrs + t->kills) * 17 + (t->qps + t->kills) * 18 + 1023) / 1024;
	return (uint64_t)cfg->rss_bound_mib * 1024 + *tables_kib;
}

static void check_daemon(pid_t daemon, const struct config *cfg, const struct totals *t,
			 const struct daemon_sample *b, const struct daemon_sample *peak,
			 const struct daemon_sample *a)
{
	uint64_t tables, bound = rss_bound_kib(cfg, t, &tables);

	printf("load: ringnicd RSS: before %llu KiB, peak %llu KiB, after %llu KiB (growth %lld KiB, bound %llu KiB = %u MiB + %llu KiB for %llu MR keys and %llu QPNs)\n",
	       (unsigned long long)b->rss_kib, (unsigned long long)peak->rss_kib,
	       (unsigned long long)a->rss_kib, (long long)(a->rss_kib - b->rss_kib),
	       (unsigned long long)bound, cfg->rss_bound_mib, (unsigned long long)tables,
	       (unsigned long long)t->mrs, (unsigned long long)t->qps);
	printf("load: ringnicd fds: before %u, peak %u, after %u; ring mappings: before %u, peak %u, after %u; runtime dir entries: before %u, after %u\n",
	       b->fds, peak->fds, a->fds, b->ring_maps, peak->ring_maps, a->ring_maps,
	       b->runtime_entries, a->runtime_entries);
	if (peak->fds <= b->fds || peak->ring_maps <= b->ring_maps)
		fail("the samples never saw a client in ringnicd: the check is blind");
	if (a->fds != b->fds) {
		fail("ringnicd has %u descriptors after the load, %u before", a->fds, b->fds);
		daemon_print_fds(daemon);
	}
	if (a->ring_maps != b->ring_maps)
		fail("ringnicd maps %u client rings after the load, %u before", a->ring_maps,
		     b->ring_maps);
	if (a->runtime_entries != b->runtime_entries)
		fail("the runtime dir has %u entries after the load, %u before",
		     a->runtime_entries, b->runtime_entries);
	if (a->rss_kib > b->rss_kib + bound)
		fail("ringnicd's RSS grew by %llu KiB (bound %llu KiB)",
		     (unsigned long long)(a->rss_kib - b->rss_kib), (unsigned long long)bound);
}

int main(int argc, char **argv)
{
	const char *pid_s = getenv("RINGNICD_PID"), *dir = getenv("RINGNIC_RUNTIME_DIR");
	struct daemon_sample before, peak, now_s, after;
	struct totals t = { 0 };
	struct client_report *reps;
	uint64_t start, deadline, last_sample = 0, rng;
	struct pair *pairs;
	struct config cfg;
	unsigned int i, n;
	pid_t daemon;

	if (parse(argc, argv, &cfg)) {
		fprintf(stderr, "usage: rn_load [--pairs N] [--victims N] [--qps N(1..%d)] [--seconds N] [--seed N] [--rss-bound-mib N]\n",
			LOAD_MAX_QPS);
		return 2;
	}
	if (!pid_s || !dir) {
		fprintf(stderr, "load: run under tests/with-device.sh (RINGNICD_PID, RINGNIC_RUNTIME_DIR)\n");
		return 2;
	}
	daemon = (pid_t)atoi(pid_s);
	n = cfg.pairs + cfg.victims;
	pairs = calloc(n, sizeof(*pairs));
	reps = mmap(NULL, 2 * n * sizeof(*reps), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (!pairs || reps == MAP_FAILED) {
		fprintf(stderr, "load: out of memory\n");
		return 1;
	}
	if (daemon_sample(daemon, dir, &before)) {
		fprintf(stderr, "load: cannot sample ringnicd (pid %d) in /proc\n", (int)daemon);
		return 1;
	}
	peak = before;
	printf("load: %u stable pairs and %u victim slots, %u RC QPs per client, %u s, seed %#llx\n",
	       cfg.pairs, cfg.victims, cfg.qps, cfg.seconds, (unsigned long long)cfg.seed);
	rng = cfg.seed;
	start = now_ns();
	deadline = start + cfg.seconds * 1000000000ull;
	for (i = 0; i < n; i++) {
		pairs[i] = (struct pair){ .rep = &reps[2 * i], .index = i,
					  .victim = i >= cfg.pairs };
		if (!pairs[i].victim)
			spawn(&pairs[i], &cfg, deadline);
	}
	for (;;) {
		uint64_t now = now_ns();
		bool busy = false;
		struct timespec ts = { 0, 2000000 };

		for (i = 0; i < n && !failures; i++) {
			struct pair *p = &pairs[i];

			if (p->victim) {
				victim_step(p, &cfg, now, deadline, &rng, &t);
			} else if (p->running) {
				reap(p);
				if (!p->pid[0] && !p->pid[1])
					judge(p, &t);
			}
			busy |= p->running;
		}
		if (now - last_sample > 200000000ull && !daemon_sample(daemon, dir, &now_s)) {
			daemon_peak(&peak, &now_s);
			last_sample = now;
		}
		if (kill(daemon, 0)) {
			fail("ringnicd (pid %d) died during the load", (int)daemon);
			break;
		}
		if (failures || (!busy && now >= deadline))
			break;
		if (now > deadline + GRACE_S * 1000000000ull) {
			fail("clients still running %d s after the deadline", GRACE_S);
			break;
		}
		nanosleep(&ts, NULL);
	}
	kill_all(pairs, n);
	print_totals(&t, (now_ns() - start) / 1e9);
	settle(daemon, dir, &before, &after);
	check_daemon(daemon, &cfg, &t, &before, &peak, &after);
	if (!failures && t.kills == 0 && cfg.victims)
		fail("no client was killed");
	printf("load: %s\n", failures ? "FAILED" : "PASS");
	munmap(reps, 2 * n * sizeof(*reps));
	free(pairs);
	return failures ? 1 : 0;
}
