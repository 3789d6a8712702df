// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stddef.h>
#include <sys/random.h>

#include "base/log.h"
#include "base/random.h"

/* getrandom a pool at a time: a key costs no system call of its own. */
static uint8_t pool[256];
static size_t left;

static uint8_t random_byte(void)
{
	static int warned;
	ssize_t n;

	if (!left) {
		do
			n = getrandom(pool, sizeof(pool), 0);
		while (n < 0 && errno == EINTR);
		if (n <= 0) {
			/* Never seen; the keys stay distinct, only guessable. */
			if (!warned++)
				rn_warn("no random bytes (%m): keys are "
					"predictable\n");
			return 0;
		}
		left = (size_t)n;
	}
	return pool[--left];
}

uint8_t rn_random_key_byte(uint8_t last)
{
	uint8_t b = random_byte();

	/* One of the 255 others, never last whatever the pool holds. */
	return b != last ? b : (uint8_t)(last + 1 + random_byte() % 255);
}
