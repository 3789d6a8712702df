// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Bytes both sides can compute: a payload is a stream of pseudo-random
 * bytes named by a 64-bit key, so whoever checks it regenerates it from
 * the key and the offset instead of receiving a copy.
 */
#include <string.h>
#include <time.h>

#include "load.h"

/* The splitmix64 finalizer: a cheap, well-mixed bijection. */
uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

uint64_t rng_next(uint64_t *state)
{
	*state += 0x632be59bd9b4e019ull;
	return mix64(*state);
}

uint32_t rng_below(uint64_t *state, uint32_t n)
{
	return n ? (uint32_t)(rng_next(state) % n) : 0;
}

uint64_t payload_key(uint64_t lane, uint32_t batch, unsigned int op)
{
	return mix64(lane ^ mix64((uint64_t)batch << 8 | op));
}

uint64_t read_src_key(uint64_t lane)
{
	return mix64(lane ^ 0x7265616473726321ull);
}

/* The 8 stream bytes starting at word index w (byte 8 * w). */
static uint64_t stream_word(uint64_t key, uint64_t w)
{
	return mix64(key ^ (w * 0xd6e8feb86659fd93ull));
}

static uint8_t stream_byte(uint64_t key, uint64_t at)
{
	return (uint8_t)(stream_word(key, at >> 3) >> ((at & 7) * 8));
}

/* dst[i] = byte at + i of the stream (little-endian words). */
void pattern_fill(uint8_t *dst, size_t len, uint64_t key, uint64_t at)
{
	size_t i = 0;

	for (; i < len && (at + i) & 7; i++)
		dst[i] = stream_byte(key, at + i);
	for (; i + 8 <= len; i += 8) {
		uint64_t w = stream_word(key, (at + i) >> 3);

		memcpy(dst + i, &w, 8);
	}
	for (; i < len; i++)
		dst[i] = stream_byte(key, at + i);
}

ptrdiff_t pattern_diff(const uint8_t *buf, size_t len, uint64_t key, uint64_t at)
{
	uint8_t want[512];
	size_t done, n, i;

	for (done = 0; done < len; done += n) {
		n = len - done < sizeof(want) ? len - done : sizeof(want);
		pattern_fill(want, n, key, at + done);
		if (memcmp(buf + done, want, n))
			for (i = 0; i < n; i++)
				if (buf[done + i] != want[i])
					return (ptrdiff_t)(done + i);
	}
	return -1;
}

ptrdiff_t canary_diff(const uint8_t *buf, size_t len, uint8_t canary)
{
	size_t i;

	for (i = 0; i < len; i++)
		if (buf[i] != canary)
			return (ptrdiff_t)i;
	return -1;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
