// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What the engines' threads hand to the control thread, so that the control
 * plane runs on the control thread alone:
 *
 * - QP1's datagrams (rdma_cm's MADs, or in kernel mode the kernel's),
 *   which arrive on the wire's sockets with the data path's packets.
 *   They wait here, copied, until the control thread takes them.
 * - The news that the port's counters changed, which the control thread
 *   publishes (daemon/publish.c).
 *
 * Either wakes the control thread through an eventfd in its epoll.  The
 * engine adds under 'lock' and the control thread takes under it: a MAD
 * is rare, and a lock here costs the data path nothing.
 */
#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/daemon.h"

static void wake_control(struct rn_relay *r)
{
	uint64_t one = 1;

	if (write(r->fd, &one, sizeof(one)) < 0)
		rn_warn("cannot wake the control thread: %s\n", strerror(errno));
}

/* The wire's taker of QP1's datagrams (rn_wire_set_gsi): on the engine. */
static void relay_gsi(struct rn_device *dev, const struct rn_wire_gsi *gsi)
{
	struct rn_relay *r = &rn_daemon_of(dev)->relay;
	struct rn_relay_mad *m;

	/* A datagram of QP1 is one MAD (IB spec 13.4.2); MADs are resent. */
	if (gsi->len > RN_RELAY_MAD_MAX)
		return;
	pthread_mutex_lock(&r->lock);
	if (r->nmads == RN_RELAY_MADS) {
		pthread_mutex_unlock(&r->lock);
		rn_dbg("a datagram to QP1 dropped: %u wait already\n",
		       RN_RELAY_MADS);
		return;
	}
	m = &r->mads[r->nmads++];
	m->gsi = *gsi;
	memcpy(m->mad, gsi->mad, gsi->len);
	m->gsi.mad = m->mad;
	pthread_mutex_unlock(&r->lock);
	wake_control(r);
}

/*
 * QP1's datagrams go to fn (rdma_cm's or the kernel's), on the control
 * thread.  Returns 0 or errno.
 */
int rn_relay_init(struct rn_device *dev, rn_wire_gsi_fn fn)
{
	struct rn_relay *r = &rn_daemon_of(dev)->relay;

	r->fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (r->fd < 0)
		return errno;
	pthread_mutex_init(&r->lock, NULL);
	r->gsi = fn;
	rn_wire_set_gsi(dev, relay_gsi);
	return 0;
}

/* The engine counted something since it last said so: on the engine. */
void rn_relay_counters(struct rn_device *dev)
{
	struct rn_relay *r = &rn_daemon_of(dev)->relay;

	__atomic_store_n(&r->counters, true, __ATOMIC_RELAXED);
	wake_control(r);
}

/*
 * The relay's eventfd is readable: on the control thread, holding the
 * gate.  The MADs are taken in the order they came.
 */
void rn_relay_readable(struct rn_device *dev)
{
	struct rn_relay *r = &rn_daemon_of(dev)->relay;
	unsigned int i, n;
	uint64_t count;

	if (read(r->fd, &count, sizeof(count)) < 0)
		count = 0;
	if (__atomic_exchange_n(&r->counters, false, __ATOMIC_RELAXED))
		rn_publish_counters(dev);
	pthread_mutex_lock(&r->lock);
	n = r->nmads;
	memcpy(r->taken, r->mads, n * sizeof(r->mads[0]));
	r->nmads = 0;
	pthread_mutex_unlock(&r->lock);
	for (i = 0; i < n; i++) {
		r->taken[i].gsi.mad = r->taken[i].mad;
		r->gsi(dev, &r->taken[i].gsi);
	}
}

void rn_relay_close(struct rn_device *dev)
{
	struct rn_relay *r = &rn_daemon_of(dev)->relay;

	if (r->gsi) {
		close(r->fd);
		pthread_mutex_destroy(&r->lock);
		r->gsi = NULL;
	}
}
