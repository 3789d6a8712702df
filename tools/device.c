// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the tools share (device.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernel-abi/ringnic-ctl.h"
#include "tools/device.h"

const char *rn_tool_runtime_dir(char *buf, size_t len)
{
	const char *env = getenv("RINGNIC_RUNTIME_DIR");

	if (env && *env)
		return env;
	if (geteuid() == 0)
		return "/run/ringnic";
	env = getenv("XDG_RUNTIME_DIR");
	if (env && *env)
		snprintf(buf, len, "%s/ringnic", env);
	else
		snprintf(buf, len, "/tmp/ringnic-%u", (unsigned)geteuid());
	return buf;
}

int rn_tool_parse_u32(const char *s, uint32_t max, uint32_t *v)
{
	char *end;
	unsigned long long n;

	errno = 0;
	n = strtoull(s, &end, 0);
	if (errno || end == s || *end || n > max || *s == '-')
		return -1;
	*v = (uint32_t)n;
	return 0;
}

int rn_tool_ask(const char *prog, const char *dir, const char *device,
		const void *req, size_t len, int *status)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct rn_ctl_resp_hdr resp;
	int fd;

	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/%s.sock", dir,
		     device) >= (int)sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: %s/%s.sock: name too long\n", prog, dir,
			device);
		return -1;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr, "%s: %s: %s (is ringnicd running with --runtime-dir %s?)\n",
			prog, sa.sun_path, strerror(errno), dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (send(fd, req, len, MSG_NOSIGNAL) != (ssize_t)len ||
	    recv(fd, &resp, sizeof(resp), 0) != sizeof(resp)) {
		fprintf(stderr, "%s: %s: no answer from ringnicd\n", prog,
			device);
		close(fd);
		return -1;
	}
	*status = resp.status;
	return fd;
}
