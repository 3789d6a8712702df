/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Unpredictable bytes from the kernel's random source, for the parts of
 * keys a peer must not guess.  The device's thread owns the pool.
 */
#ifndef RN_BASE_RANDOM_H
#define RN_BASE_RANDOM_H

#include <stdint.h>

/* A random key byte other than last: a key made again at an index of the
 * key table changes, so a stale key never reaches what the index holds now.
 */
uint8_t rn_random_key_byte(uint8_t last);

#endif
