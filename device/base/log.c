// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>

#include "base/log.h"

static bool log_to_stderr;
static int log_max_prio = LOG_INFO;

void rn_log_init(bool to_stderr, bool debug)
{
	log_to_stderr = to_stderr;
	log_max_prio = debug ? LOG_DEBUG : LOG_INFO;
	if (!to_stderr)
		openlog("ringnicd", LOG_PID, LOG_DAEMON);
}

bool rn_log_debug(void)
{
	return log_max_prio == LOG_DEBUG;
}

void rn_log(int prio, const char *fmt, ...)
{
	va_list ap;

	if (prio > log_max_prio)
		return;
	va_start(ap, fmt);
	if (log_to_stderr) {
		fputs("ringnicd: ", stderr);
		vfprintf(stderr, fmt, ap);
	} else {
		vsyslog(prio, fmt, ap);
	}
	va_end(ap);
}
