// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Failures, counters, randomness, patterns, guarded buffers, and whether
 * this process may have a userfaultfd.
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "hostile.h"

#define HOSTILE_VARIANT_INFO(c, id, n) [V_##id] = { c, n },
const struct variant_info variants[V_COUNT] = {
	HOSTILE_VARIANTS(HOSTILE_VARIANT_INFO)
};

const char *const class_names[CL_COUNT] = {
	[CL_RINGS] = "corrupt own rings",
	[CL_CONTROL] = "garbage control messages",
	[CL_STOLEN] = "stolen keys, handles, QPNs",
	[CL_STALE] = "use after dereg",
	[CL_UNMAP] = "unmapped or moved MRs",
	[CL_RANGES] = "overflowing ranges, rights",
};

struct shared *sh;
const char *who = "main";

int hfail_at(const char *file, int line, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fprintf(stderr, "hostile: %s: FAIL %s:%d: %s\n", who, file, line, msg);
	if (!__atomic_exchange_n(&sh->failed, 1, __ATOMIC_SEQ_CST))
		snprintf(sh->failure, sizeof(sh->failure), "%s: %s:%d: %s", who,
			 file, line, msg);
	return -1;
}

void count_try(enum variant v)
{
	__atomic_fetch_add(&sh->tried[v], 1, __ATOMIC_RELAXED);
}

/* ---- randomness ---------------------------------------------------------- */

static uint64_t rng_state;

void rng_seed(uint64_t seed)
{
	rng_state = seed;
}

uint64_t rng_next(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t rng_below(uint64_t n)
{
	return n ? rng_next() % n : 0;
}

uint64_t rng_range(uint64_t lo, uint64_t hi)
{
	return lo + rng_below(hi - lo + 1);
}

/* ---- patterns --------------------------------------------------------------- */

static uint8_t next_byte(uint64_t *x)
{
	*x = *x * 6364136223846793005ull + 1442695040888963407ull;
	return (uint8_t)(*x >> 56);
}

void fill_pattern(void *buf, size_t len, uint64_t seed)
{
	uint64_t x = seed ^ 0x5bd1e995ull;
	uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = next_byte(&x);
}

int check_pattern(const void *buf, size_t len, uint64_t seed, const char *what)
{
	uint64_t x = seed ^ 0x5bd1e995ull;
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++) {
		uint8_t want = next_byte(&x);

		if (p[i] != want)
			return HFAIL("%s: byte %zu of %zu is %#x, not %#x", what, i,
				     len, p[i], want);
	}
	return 0;
}

/* ---- time ------------------------------------------------------------------- */

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void sleep_us(unsigned int us)
{
	struct timespec ts = { us / 1000000, (long)(us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* Two cores, five busy processes: waiting must leave the CPU to others. */
void backoff(unsigned int *spins)
{
	if (++*spins % 64)
		sched_yield();
	else
		sleep_us(50);
}

/* ---- guarded buffers ---------------------------------------------------------- */

size_t page_size(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Canary byte i of a mapping: computed from i alone, so that a range can
 * be checked without walking what lies before it.
 */
static uint8_t canary_byte(uint64_t seed, size_t i)
{
	uint64_t z = (seed ^ (i >> 3)) * 0xbf58476d1ce4e5b9ull;

	z ^= z >> 31;
	z *= 0x94d049bb133111ebull;
	return (uint8_t)((z ^ (z >> 29)) >> ((i & 7) * 8));
}

static void fill_canary(const struct gbuf *g, size_t from, size_t to)
{
	size_t i;

	for (i = from; i < to; i++)
		g->map[i] = canary_byte(g->canary_seed, i);
}

static int gbuf_map(struct gbuf *g, size_t len, size_t misalign, int flags)
{
	size_t page = page_size();
	size_t inner = (misalign + len + page - 1) / page * page;

	memset(g, 0, sizeof(*g));
	g->map_len = inner + 2 * page;
	g->map = mmap(NULL, g->map_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
	if (g->map == MAP_FAILED) {
		g->map = NULL;
		return HFAIL("mmap of %zu bytes failed", g->map_len);
	}
	g->data = g->map + page + misalign;
	g->len = len;
	g->canary_seed = rng_next();
	return 0;
}

int gbuf_alloc(struct gbuf *g, size_t len, size_t misalign)
{
	HTRY(gbuf_map(g, len, misalign, 0));
	fill_canary(g, 0, g->data - g->map);
	fill_canary(g, g->data - g->map + len, g->map_len);
	memset(g->data, 0, len);
	return 0;
}

int gbuf_alloc_sparse(struct gbuf *g, size_t len)
{
	HTRY(gbuf_map(g, len, 0, MAP_NORESERVE));
	fill_canary(g, 0, g->data - g->map);
	fill_canary(g, g->data - g->map + len, g->map_len);
	return 0;
}

static int check_canary(const struct gbuf *g, size_t from, size_t to,
			const char *what)
{
	size_t i;

	for (i = from; i < to; i++)
		if (g->map[i] != canary_byte(g->canary_seed, i))
			return HFAIL("%s: canary byte %zd from the data is %#x, not %#x",
				     what, (ssize_t)i - (g->data - g->map),
				     g->map[i], canary_byte(g->canary_seed, i));
	return 0;
}

int gbuf_check(const struct gbuf *g, const char *what)
{
	size_t start = g->data - g->map;
	int ret;

	__atomic_fetch_add(&sh->canary_regions, 1, __ATOMIC_RELAXED);
	ret = check_canary(g, 0, start, what);
	if (!ret)
		ret = check_canary(g, start + g->len, g->map_len, what);
	if (ret)
		__atomic_fetch_add(&sh->canary_damaged, 1, __ATOMIC_RELAXED);
	return ret;
}

void gbuf_free(struct gbuf *g)
{
	if (g->map)
		munmap(g->map, g->map_len);
	g->map = NULL;
}

