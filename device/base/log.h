/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* ringnicd's log: syslog, or standard error in the foreground. */
#ifndef RN_BASE_LOG_H
#define RN_BASE_LOG_H

#include <stdbool.h>

void rn_log_init(bool to_stderr, bool debug);
bool rn_log_debug(void);
void rn_log(int prio, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rn_err(...) rn_log(3, __VA_ARGS__)
#define rn_warn(...) rn_log(4, __VA_ARGS__)
#define rn_info(...) rn_log(6, __VA_ARGS__)
#define rn_dbg(...) rn_log(7, __VA_ARGS__)

#endif
