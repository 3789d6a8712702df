// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A client's process: which one it is, whether it still lives, and the
 * address space the device reaches.
 *
 * A pid names a process only until the process is reaped; then any new
 * process may get the number.  So from OPEN on ringnicd holds two
 * descriptors that name the process itself:
 * - a pidfd (pidfd_open, Linux 5.3), readable once the process has exited.
 *   The main loop watches it and destroys the client at once, as on a
 *   hang-up: the hang-up may never come while a forked child holds a copy
 *   of the control socket (or of the uverbs file, in kernel mode).
 * - its /proc/PID/mem, bound to the address space it was opened on, through
 *   which goes every access to the client's memory (memory.c says why).
 *
 * Both are opened by pid.  Which process do they name?
 * - pidfd_open(pid) names the process X that has the pid at that moment.
 *   /proc/PID/mem, opened next, is X's address space if X still lives once
 *   it is open (checked below): X had the pid all along.
 * - The pid is the opener's: in kernel mode the pid of the process that
 *   made the OPEN request, in userspace mode SO_PEERCRED's, the process
 *   that called connect().  Either may be gone and its pid reused before
 *   OPEN is carried out: a connection waits in the listen backlog, a caller
 *   killed while the kernel waits for our answer leaves its request behind.
 *   So X is not yet known to be the client.
 * - A client is confirmed by its first request after OPEN that the process
 *   with the pid made, provided X still lives once the request is read: X,
 *   alive from pidfd_open to then, had the pid all along, so X made that
 *   request after its pidfd was opened, on this very connection.  The
 *   sender of a request is the kernel's word: in kernel mode the pid of the
 *   caller, in userspace mode the SCM_CREDENTIALS the kernel attaches when
 *   the message is sent (SO_PASSCRED; a process can name only itself there,
 *   or, with CAP_SYS_ADMIN over its pid namespace, a process of that
 *   namespace).  "After OPEN": in kernel mode no request of a context exists
 *   before its OPEN returns; in userspace mode OPEN is answered only while
 *   nothing else waits behind it (daemon/control.c), so a later request
 *   was sent after the pidfd was opened.
 * - Until then every request but OPEN is refused (EPERM), so an unconfirmed
 *   client has no object that could touch memory.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/pidfd.h>
#include <unistd.h>

#include "core/core.h"

static bool client_alive(const struct rn_client *client)
{
	struct pollfd p = { .fd = client->pidfd, .events = POLLIN };

	return client->pidfd >= 0 && poll(&p, 1, 0) == 0;
}

/*
 * Is [addr, addr + len) mapped in the client's process with the
 * protections the rights need?  Read from /proc/PID/maps, the only place
 * the kernel says it: by pid, so the answer counts only if the process is
 * still alive once it is read.  A NIC pins an MR's pages at registration
 * and fails with EFAULT (verbs/mr.c refuses the same ranges); with on-demand
 * paging it faults each page in with the access it makes, and a write to
 * a read-only page fails (memory.c asks before each access).  The device's
 * own accesses, through /proc/PID/mem, would not fail: they are forced, as
 * a debugger's are.
 */
bool rn_client_mapped(const struct rn_client *client, uint64_t addr,
		      uint64_t len, bool writable)
{
	uint64_t start, end, want = addr, last = addr + len;
	char path[64], perms[8];
	bool ok = false;
	FILE *maps;

	if (!len)
		return true;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)client->pid);
	maps = fopen(path, "re");
	if (!maps)
		return false;
	/* Lines are sorted by address; walk until the range is covered. */
	while (fscanf(maps, "%" SCNx64 "-%" SCNx64 " %7s%*[^\n]", &start, &end,
		      perms) == 3) {
		if (end <= want)
			continue;
		if (start > want)
			break;
		if (perms[0] != 'r' || (writable && perms[1] != 'w'))
			break;
		want = end;
		if (want >= last || !want) {
			ok = true;
			break;
		}
	}
	fclose(maps);
	return ok && client_alive(client);
}

int rn_client_attach(struct rn_client *client)
{
	struct epoll_event ev = { .events = EPOLLIN };
	char path[32];
	int ret;

	client->pidfd = pidfd_open(client->pid, 0);
	if (client->pidfd < 0)
		return errno == EINVAL ? ESRCH : errno;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)client->pid);
	client->mem_fd = open(path, O_RDWR | O_CLOEXEC);
	if (client->mem_fd < 0) {
		ret = errno;
		goto err;
	}
	ret = ESRCH;
	if (!client_alive(client))
		goto err;
	client->exit_watch = (struct rn_watch){ RN_WATCH_EXIT, client };
	ev.data.ptr = &client->exit_watch;
	if (!epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_ADD, client->pidfd, &ev))
		return 0;
	ret = errno;
err:
	rn_client_detach(client);
	return ret;
}

void rn_client_detach(struct rn_client *client)
{
	if (client->pidfd >= 0) {
		epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_DEL, client->pidfd,
			  NULL);
		close(client->pidfd);
	}
	if (client->mem_fd >= 0)
		close(client->mem_fd);
	client->pidfd = -1;
	client->mem_fd = -1;
	client->confirmed = false;
}

bool rn_client_confirm(struct rn_client *client, pid_t sender)
{
	if (!client->confirmed && sender == client->pid &&
	    client_alive(client)) {
		client->confirmed = true;
		rn_dbg("client pid %d confirmed\n", client->pid);
	}
	return client->confirmed;
}
