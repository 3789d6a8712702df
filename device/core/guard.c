// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Guarding registered memory against munmap and mremap.
 *
 * A NIC pins the pages of an MR, so a region unmapped after registration
 * keeps its old pages.  ringnicd reaches memory by address instead, and an
 * address unmapped and mapped again would lead its writes into whatever
 * the client mapped there later.  So each client hands over a userfaultfd
 * of its own address space when it opens the device: ringnicd enables the
 * unmap and move events on it and registers every MR's pages (in
 * write-protect mode, though it never write-protects anything: the
 * registration is only there for the events).  The kernel delivers those
 * events synchronously: the client's munmap or mremap returns only once
 * ringnicd has read the event and retired the MRs over that range, so the
 * range cannot be reused under an MR first.  (Another thread of the
 * client may map the range in between; what the device writes there then
 * still lands in that client's own memory.)  The pages are gone before
 * the event is read, though: an access in between faults on a guarded MR
 * (struct rn_iovs' guarded), and is then taken as one to a retired MR,
 * which engine/access.c says what becomes of.
 *
 * Memory a userfaultfd cannot watch (private file mappings), MRs of a
 * client without one (userfaultfd forbidden by seccomp) and on-demand
 * paging MRs, which by definition follow the current mapping, are checked
 * by address only, as before: accesses to an unmapped range fail.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "core/core.h"

static bool is_userfaultfd(int fd)
{
	static const char want[] = "anon_inode:[userfaultfd]";
	char path[64], link[sizeof(want)];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, link, sizeof(link));
	return n == (ssize_t)sizeof(want) - 1 && !memcmp(link, want, n);
}

int rn_guard_open(struct rn_client *client, int uffd)
{
	struct uffdio_api api = {
		.api = UFFD_API,
		.features = UFFD_FEATURE_EVENT_UNMAP | UFFD_FEATURE_EVENT_REMAP,
	};
	struct epoll_event ev = { .events = EPOLLIN };
	int flags;

	/* UFFDIO_API succeeds once per descriptor: a client that set it up
	 * itself, with features of its choosing, is refused here.
	 */
	if (!is_userfaultfd(uffd) || ioctl(uffd, UFFDIO_API, &api))
		return EINVAL;
	flags = fcntl(uffd, F_GETFL);
	if (flags < 0 || fcntl(uffd, F_SETFL, flags | O_NONBLOCK))
		return errno;
	client->guard_watch = (struct rn_watch){ RN_WATCH_GUARD, client };
	ev.data.ptr = &client->guard_watch;
	if (epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_ADD, uffd, &ev))
		return errno;
	client->uffd = uffd;
	return 0;
}

void rn_guard_close(struct rn_client *client)
{
	if (client->uffd < 0)
		return;
	epoll_ctl(client->dev->epoll_fd, EPOLL_CTL_DEL, client->uffd, NULL);
	close(client->uffd);
	client->uffd = -1;
}

static struct uffdio_range pages_of(const struct rn_mr *mr)
{
	uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
	uint64_t start = mr->addr & ~(page - 1);
	uint64_t end = (mr->addr + mr->length + page - 1) & ~(page - 1);

	return (struct uffdio_range){ .start = start, .len = end - start };
}

int rn_guard_mr(struct rn_mr *mr)
{
	struct uffdio_register reg = {
		.range = pages_of(mr),
		.mode = UFFDIO_REGISTER_MODE_WP,
	};

	if (mr->client->uffd < 0 || mr->access & IBV_ACCESS_ON_DEMAND)
		return 0;
	if (!ioctl(mr->client->uffd, UFFDIO_REGISTER, &reg)) {
		mr->guarded = true;
		return 0;
	}
	/* Unmapped since it was checked: the client's own doing. */
	if (errno == ENOMEM)
		return EFAULT;
	/* EINVAL: memory userfaultfd cannot watch; EBUSY: watched by
	 * another context of the same process.  Addresses only, then.
	 */
	return 0;
}

static bool overlaps(const struct rn_mr *mr, uint64_t start, uint64_t end)
{
	struct uffdio_range r = pages_of(mr);

	return r.start < end && start < r.start + r.len;
}

void rn_unguard_mr(struct rn_mr *mr)
{
	struct rn_client *client = mr->client;
	struct uffdio_range r = pages_of(mr);
	uint32_t i;

	if (!mr->guarded)
		return;
	/* Not watched for this MR from now on (a rereg may watch it again). */
	mr->guarded = false;
	if (client->uffd < 0)
		return;
	/* Pages another MR still needs stay registered: keep them all.  The
	 * context's MRs of other members are in other address spaces.
	 */
	for (i = 0; i < client->ctx->mrs.size; i++) {
		struct rn_mr *other = client->ctx->mrs.slot[i];

		if (other && other != mr && other->client == client &&
		    other->guarded &&
		    overlaps(other, r.start, r.start + r.len))
			return;
	}
	/* Fails harmlessly when the range is already gone. */
	ioctl(client->uffd, UFFDIO_UNREGISTER, &r);
}

/* Every MR the client made over [start, end) stops working. */
static void retire(struct rn_client *client, uint64_t start, uint64_t end)
{
	uint32_t i;

	for (i = 0; i < client->ctx->mrs.size; i++) {
		struct rn_mr *mr = client->ctx->mrs.slot[i];

		if (!mr || mr->client != client || !mr->guarded ||
		    !overlaps(mr, start, end))
			continue;
		if (!mr->unmapped) {
			mr->unmapped = true;
			mr->gone_start = start;
			mr->gone_end = end;
			rn_dbg("pid %d unmapped MR key 0x%x\n", client->pid,
			       mr->key);
			continue;
		}
		if (start < mr->gone_start)
			mr->gone_start = start;
		if (end > mr->gone_end)
			mr->gone_end = end;
	}
}

void rn_guard_readable(struct rn_client *client)
{
	struct uffd_msg msg;

	while (read(client->uffd, &msg, sizeof(msg)) == sizeof(msg)) {
		switch (msg.event) {
		case UFFD_EVENT_UNMAP:
			retire(client, msg.arg.remove.start, msg.arg.remove.end);
			break;
		case UFFD_EVENT_REMAP:
			retire(client, msg.arg.remap.from,
			       msg.arg.remap.from + msg.arg.remap.len);
			break;
		}
	}
}
