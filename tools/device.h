/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the tools share: finding a device's control socket and asking
 * ringnicd one thing on a connection of their own (kernel-abi/ringnic-ctl.h).
 */
#ifndef RINGNIC_TOOLS_DEVICE_H
#define RINGNIC_TOOLS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/* The same default as ringnicd's --runtime-dir. */
const char *rn_tool_runtime_dir(char *buf, size_t len);

/* A number, decimal or 0x hex, at most max; 0 or -1. */
int rn_tool_parse_u32(const char *s, uint32_t max, uint32_t *v);

/*
 * Connect to DEVICE's control socket in dir and send req (the first
 * message of the connection); the connection, or -1 with the reason
 * printed as prog's.  *status: ringnicd's answer (0 or an errno).
 */
int rn_tool_ask(const char *prog, const char *dir, const char *device,
		const void *req, size_t len, int *status);

#endif
