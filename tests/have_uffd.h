/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Whether this program's clients hand ringnicd a userfaultfd. */
#ifndef RN_TEST_HAVE_UFFD_H
#define RN_TEST_HAVE_UFFD_H

#include <stdbool.h>

/*
 * Tried as the provider tries it (make_uffd in providers/ringnic/ringnic.c),
 * once: what one process of a test program may do, all may (same filter,
 * same user), so ask before any fork.  Without one, ringnicd's checks of
 * memory under an MR are by address only (docs/security.md).
 */
bool rn_test_have_uffd(void);

#endif
