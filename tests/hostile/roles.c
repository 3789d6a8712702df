// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The two attackers' main loops.  The hostile runs every class but the
 * thief's, 'rounds' times each, in a shuffled order; the thief runs
 * 'rounds' thefts, and uses the victims' handles on the control socket
 * now and then.  An attempt with a wrong outcome is counted against its
 * class; the pair is then reset (or rebuilt) and the attacks go on.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hostile.h"

static pid_t ringnicd_pid(void)
{
	const char *s = getenv("RINGNICD_PID");

	return s ? (pid_t)strtol(s, NULL, 10) : 0;
}

/* Attack while the good pair is busy, not before it started. */
static int wait_for_good_traffic(void)
{
	uint64_t deadline = now_ms() + 60000;

	while (!__atomic_load_n(&sh->good[0].iterations, __ATOMIC_ACQUIRE) ||
	       !__atomic_load_n(&sh->good[1].iterations, __ATOMIC_ACQUIRE)) {
		HCHECK(!sh->failed, "a failure before the attacks");
		HCHECK(now_ms() < deadline, "the good pair never got going");
		sleep_us(1000);
	}
	return 0;
}

/* After a wrong outcome the pair may be in any state: start it afresh. */
static int recover(struct hpair *hp)
{
	if (!hp_reset(hp))
		return 0;
	return hp_rebuild_queues(hp);
}

enum { ATTACK_WRONG = -1, ATTACK_STOP = -2 };

/*
 * One attempt of class cls: 0, a wrong outcome, or no way to go on.  The
 * thief's control attempts use the victims' handles.
 */
static int one_attack(struct attack_env *env, enum hclass cls)
{
	int ret;

	switch (cls) {
	case CL_RINGS:
		ret = attack_rings(env);
		break;
	case CL_CONTROL:
		ret = attack_control(env, env->loot != NULL);
		break;
	case CL_STOLEN:
		ret = attack_stolen(env);
		break;
	case CL_STALE:
		ret = attack_stale(env);
		break;
	case CL_UNMAP:
		ret = attack_unmap(env);
		break;
	default:
		ret = attack_ranges(env);
		break;
	}
	if (ret)
		__atomic_fetch_add(&sh->wrong[cls], 1, __ATOMIC_RELAXED);
	if (env->ringnicd && kill(env->ringnicd, 0)) {
		HFAIL("ringnicd died during a '%s' attack", class_names[cls]);
		return ATTACK_STOP;
	}
	if (ret && recover(env->hp))
		return ATTACK_STOP;
	return ret ? ATTACK_WRONG : 0;
}

int hostile_run(int loot_out, uint64_t seed, unsigned int rounds)
{
	static const enum hclass mine[] = { CL_RINGS, CL_CONTROL, CL_STALE,
					    CL_UNMAP, CL_RANGES };
	const unsigned int nmine = sizeof(mine) / sizeof(mine[0]);
	struct {
		uint32_t victim;
		uint32_t pad;
		struct loot loot;
	} msg = { .victim = VICTIM_HOSTILE };
	char path[128];
	struct hpair hp;
	struct attack_env env = { &hp, NULL, ringnicd_pid(), path };
	enum hclass *plan;
	unsigned int i, n = rounds * nmine, failures = 0;

	rng_seed(seed);
	HTRY(find_ctl_path(path, sizeof(path)));
	HTRY(hp_open(&hp));
	msg.loot = (struct loot){
		.qpn = hp.qp[QB]->qp_num,
		.rkey = hp.target_mr->rkey,
		.lkey = hp.target_mr->lkey,
		.pd_handle = hp.pd->handle,
		.mr_handle = hp.target_mr->handle,
		.cq_handle = hp.scq[QB]->handle,
		.qp_handle = hp.qp[QB]->handle,
		.addr = (uintptr_t)hp.target.data,
		.len = hp.target.len,
	};
	HCHECK(write(loot_out, &msg, sizeof(msg)) == sizeof(msg), "loot: %s",
	       strerror(errno));
	close(loot_out);
	HTRY(wait_for_good_traffic());

	plan = calloc(n, sizeof(*plan));
	HCHECK(plan, "out of memory");
	for (i = 0; i < n; i++)
		plan[i] = mine[i % nmine];
	for (i = n; i > 1; i--) { /* Fisher-Yates */
		unsigned int j = rng_below(i);
		enum hclass t = plan[i - 1];

		plan[i - 1] = plan[j];
		plan[j] = t;
	}
	for (i = 0; i < n && failures <= 20; i++) {
		int ret = one_attack(&env, plan[i]);

		if (ret)
			failures++;
		if (ret == ATTACK_STOP)
			break;
	}
	free(plan);

	/* What the thief steals from us stays valid until it is done. */
	while (!__atomic_load_n(&sh->thief_done, __ATOMIC_ACQUIRE))
		sleep_us(10000);
	HTRY(hp_close(&hp));
	return failures ? -1 : 0;
}

int thief_run(int loot_in, uint64_t seed, unsigned int rounds)
{
	struct loot loot[VICTIM_COUNT];
	struct pollfd pfd = { .fd = loot_in, .events = POLLIN };
	char path[128];
	struct hpair hp;
	struct attack_env env = { &hp, loot, ringnicd_pid(), path };
	unsigned int i, failures = 0;

	rng_seed(seed);
	HCHECK(poll(&pfd, 1, 120000) == 1 &&
		       read(loot_in, loot, sizeof(loot)) == sizeof(loot),
	       "no loot came");
	close(loot_in);
	HTRY(find_ctl_path(path, sizeof(path)));
	HTRY(hp_open(&hp));
	/* Requests nobody answers end after two short ACK timeouts. */
	for (i = 0; i < 2; i++)
		hp.params[i] = (struct qp_params){ .access = ACCESS_ALL,
						   .timeout = 8,
						   .retry_cnt = 1,
						   .rnr_retry = 7 };
	HTRY(hp_reset(&hp));
	HTRY(wait_for_good_traffic());

	for (i = 0; i < rounds && failures <= 20; i++) {
		int ret = one_attack(&env, CL_STOLEN);

		if (!ret && i % 4 == 0)
			ret = one_attack(&env, CL_CONTROL);
		if (ret)
			failures++;
		if (ret == ATTACK_STOP)
			break;
	}
	HTRY(hp_close(&hp));
	return failures ? -1 : 0;
}
