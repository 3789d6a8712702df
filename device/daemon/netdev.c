// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The network interface port 1 is bound to, seen through rtnetlink with
 * libnl: which one it is (--netdev, else the default route's, else lo; in
 * kernel mode the netdev of `rdma link add`, asked of RDMA netlink), and
 * its link, MTU and addresses, read again on every link and address
 * notification and handed to core/port.c; then the wire's sockets for the
 * addresses.  An address whose UDP port cannot be bound is no GID: its
 * socket is tried again every second until it can be.
 *
 * The interface is followed by its index, so a rename is followed too; when
 * it disappears the port goes down with no GIDs until an interface of the
 * same name appears.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include <linux/if_addr.h>
#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>
#include <netlink/route/route.h>
#include <rdma/rdma_netlink.h>

#include "daemon/daemon.h"
#include "roce/packet.h"

int rn_netdev_parse_address(const char *text, union ibv_gid *gid)
{
	unsigned char addr[16];

	if (inet_pton(AF_INET, text, addr) == 1)
		rn_gid_from_addr(gid->raw, AF_INET, addr);
	else if (inet_pton(AF_INET6, text, addr) == 1)
		rn_gid_from_addr(gid->raw, AF_INET6, addr);
	else
		return EINVAL;
	return 0;
}

static const char *gid_text(const union ibv_gid *gid, char *buf, size_t len)
{
	if (rn_gid_is_ipv4(gid->raw))
		return inet_ntop(AF_INET, gid->raw + 12, buf, len);
	return inet_ntop(AF_INET6, gid->raw, buf, len);
}

static struct nl_sock *connected_socket(int protocol)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (sk && nl_connect(sk, protocol)) {
		nl_socket_free(sk);
		return NULL;
	}
	return sk;
}

/* ---- which interface --------------------------------------------------- */

/* The interface of the default route of a family (the lowest metric), or 0. */
static int default_route_ifindex(struct nl_sock *sk, int family)
{
	uint32_t best_metric = UINT32_MAX;
	struct nl_cache *routes;
	struct nl_object *obj;
	int ifindex = 0;

	if (rtnl_route_alloc_cache(sk, family, 0, &routes))
		return 0;
	for (obj = nl_cache_get_first(routes); obj; obj = nl_cache_get_next(obj)) {
		struct rtnl_route *r = (struct rtnl_route *)obj;
		struct nl_addr *dst = rtnl_route_get_dst(r);

		if (rtnl_route_get_table(r) != RT_TABLE_MAIN ||
		    rtnl_route_get_type(r) != RTN_UNICAST ||
		    (dst && nl_addr_get_prefixlen(dst)) ||
		    rtnl_route_get_nnexthops(r) < 1 ||
		    rtnl_route_get_priority(r) >= best_metric)
			continue;
		best_metric = rtnl_route_get_priority(r);
		ifindex = rtnl_route_nh_get_ifindex(rtnl_route_nexthop_n(r, 0));
	}
	nl_cache_free(routes);
	return ifindex;
}

/* The interface of the IPv4 default route, else the IPv6 one's, else lo. */
static int default_netdev(char *name)
{
	struct nl_sock *sk = connected_socket(NETLINK_ROUTE);
	struct nl_cache *links = NULL;
	int ifindex = 0;

	if (!sk)
		return EIO;
	ifindex = default_route_ifindex(sk, AF_INET);
	if (!ifindex)
		ifindex = default_route_ifindex(sk, AF_INET6);
	if (ifindex && !rtnl_link_alloc_cache(sk, AF_UNSPEC, &links) &&
	    rtnl_link_i2name(links, ifindex, name, IF_NAMESIZE))
		rn_info("the default route goes through %s\n", name);
	else {
		snprintf(name, IF_NAMESIZE, "lo");
		rn_info("no default route: the port goes on lo (--netdev "
			"chooses another interface)\n");
	}
	if (links)
		nl_cache_free(links);
	nl_socket_free(sk);
	return 0;
}

/* ---- kernel mode: the netdev of `rdma link add`, from RDMA netlink ------ */

struct rdma_query {
	const char *ibdev;
	uint32_t dev_index; /* the ib_device's, from the device dump */
	bool found;
	char ndev[IF_NAMESIZE]; /* from the port query */
};

static int rdma_dev_entry(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct rdma_query *q = arg;

	if (nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) ||
	    !tb[RDMA_NLDEV_ATTR_DEV_NAME] || !tb[RDMA_NLDEV_ATTR_DEV_INDEX] ||
	    strcmp(nla_get_string(tb[RDMA_NLDEV_ATTR_DEV_NAME]), q->ibdev))
		return NL_OK;
	q->dev_index = nla_get_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]);
	q->found = true;
	return NL_OK;
}

static int rdma_port_entry(struct nl_msg *msg, void *arg)
{
	struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
	struct rdma_query *q = arg;

	if (!nlmsg_parse(nlmsg_hdr(msg), 0, tb, RDMA_NLDEV_ATTR_MAX - 1, NULL) &&
	    tb[RDMA_NLDEV_ATTR_NDEV_NAME])
		nla_strlcpy(q->ndev, tb[RDMA_NLDEV_ATTR_NDEV_NAME], sizeof(q->ndev));
	return NL_OK;
}

/* One request on RDMA netlink; its answers go to parse. */
static int rdma_request(struct nl_sock *sk, int cmd, int flags,
			const struct rdma_query *q, nl_recvmsg_msg_cb_t parse,
			void *arg)
{
	struct nl_msg *msg;
	int ret = -NLE_NOMEM;

	msg = nlmsg_alloc_simple(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, cmd), flags);
	if (!msg)
		return ret;
	if (cmd == RDMA_NLDEV_CMD_PORT_GET &&
	    (nla_put_u32(msg, RDMA_NLDEV_ATTR_DEV_INDEX, q->dev_index) ||
	     nla_put_u32(msg, RDMA_NLDEV_ATTR_PORT_INDEX, 1)))
		goto out;
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, parse, arg);
	ret = nl_send_auto(sk, msg);
	if (ret >= 0)
		ret = nl_recvmsgs_default(sk);
out:
	nlmsg_free(msg);
	return ret;
}

static int kernel_netdev(struct rn_device *dev, char *name)
{
	struct nl_sock *sk = connected_socket(NETLINK_RDMA);
	struct rdma_query q = { .ibdev = dev->name };
	int ret = EIO;

	if (!sk)
		return EIO;
	nl_socket_disable_auto_ack(sk);
	if (rdma_request(sk, RDMA_NLDEV_CMD_GET, NLM_F_DUMP, &q, rdma_dev_entry,
			 &q) < 0 || !q.found)
		goto out;
	if (rdma_request(sk, RDMA_NLDEV_CMD_PORT_GET, 0, &q, rdma_port_entry,
			 &q) < 0 || !q.ndev[0])
		goto out;
	memcpy(name, q.ndev, IF_NAMESIZE);
	ret = 0;
out:
	nl_socket_free(sk);
	return ret;
}

/* ---- what the interface is now ---------------------------------------- */

static bool address_wanted(const struct rn_device *dev,
			   const union ibv_gid *gid)
{
	const struct rn_daemon *d = rn_daemon_of_const(dev);
	const struct rn_netdev_opts *o = &d->netdev_opts;
	uint32_t i;

	if (!o->naddrs)
		return true;
	for (i = 0; i < o->naddrs; i++)
		if (!memcmp(gid, &o->addrs[i], sizeof(*gid)))
			return true;
	return false;
}

/* The interface's addresses of a family, in the order the kernel lists them. */
static void collect_addrs(const struct rn_device *dev, struct nl_cache *addrs,
			  int family, struct rn_link *link)
{
	struct nl_object *obj;

	for (obj = nl_cache_get_first(addrs);
	     obj && link->naddrs < RN_GID_TABLE_LEN; obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		struct nl_addr *local = rtnl_addr_get_local(a);
		union ibv_gid *gid = &link->addrs[link->naddrs];

		/* An address whose duplicate address detection failed is
		 * not the interface's: the kernel drops its GID too.
		 */
		if (rtnl_addr_get_ifindex(a) != link->ifindex ||
		    rtnl_addr_get_family(a) != family || !local ||
		    nl_addr_get_len(local) != (family == AF_INET ? 4u : 16u) ||
		    rtnl_addr_get_flags(a) & IFA_F_DADFAILED)
			continue;
		rn_gid_from_addr(gid->raw, family, nl_addr_get_binary_addr(local));
		if (address_wanted(dev, gid))
			link->naddrs++;
	}
}

/*
 * The bound interface as it is now: the one of the port's index, else the
 * one of the name the device was bound to.  Returns 0 (link->ifindex 0 if
 * there is none) or an errno when rtnetlink could not be read.
 */
static int read_link(const struct rn_device *dev, struct rn_link *link)
{
	const struct rn_daemon *d = rn_daemon_of_const(dev);
	struct nl_cache *links = NULL, *addrs = NULL;
	struct rtnl_link *l = NULL;
	struct nl_sock *sk;
	int ret = EIO;

	memset(link, 0, sizeof(*link));
	sk = connected_socket(NETLINK_ROUTE);
	if (!sk)
		return EIO;
	if (rtnl_link_alloc_cache(sk, AF_UNSPEC, &links) ||
	    rtnl_addr_alloc_cache(sk, &addrs))
		goto out;
	ret = 0;
	if (dev->port.ifindex)
		l = rtnl_link_get(links, dev->port.ifindex);
	if (!l)
		l = rtnl_link_get_by_name(links, d->netdev_opts.ifname);
	if (!l)
		goto out;
	link->ifindex = rtnl_link_get_ifindex(l);
	snprintf(link->ifname, sizeof(link->ifname), "%s", rtnl_link_get_name(l));
	/* rxe's test: running, with carrier (IFF_RUNNING); lo has no carrier
	 * to lose, so it is running whenever it is up.
	 */
	link->running = (rtnl_link_get_flags(l) & (IFF_UP | IFF_RUNNING)) ==
			(IFF_UP | IFF_RUNNING);
	link->mtu = rtnl_link_get_mtu(l);
	rtnl_link_put(l);
	/* IPv4 first, then IPv6, as the kernel fills a new table. */
	collect_addrs(dev, addrs, AF_INET, link);
	collect_addrs(dev, addrs, AF_INET6, link);
out:
	if (addrs)
		nl_cache_free(addrs);
	if (links)
		nl_cache_free(links);
	nl_socket_free(sk);
	return ret;
}

static void log_changes(const struct rn_device *dev, unsigned int changes)
{
	const struct rn_daemon *d = rn_daemon_of_const(dev);
	const struct rn_port *p = &dev->port;
	char text[INET6_ADDRSTRLEN], table[RN_GID_TABLE_LEN * 52] = "";
	/* A new interface's state is news even where it stays DOWN. */
	bool state_news = changes & (RN_PORT_STATE | RN_PORT_NETDEV);
	size_t len = 0;
	int i;

	if (changes & RN_PORT_NETDEV) {
		if (p->ifindex)
			rn_info("%s: port 1 on %s (ifindex %d)\n", dev->name,
				p->ifname, p->ifindex);
		else
			rn_info("%s: %s is gone\n", dev->name,
				d->netdev_opts.ifname);
	}
	if (state_news && rn_port_state(dev) == IBV_PORT_INIT)
		rn_warn("%s: port 1 INIT: none of the addresses of %s is a GID, "
			"their UDP port %u cannot be bound (tried again every "
			"second)\n", dev->name, p->ifname, RN_PKT_UDP_DPORT);
	else if (state_news && (p->link_up || !p->ifindex))
		rn_info("%s: port 1 %s\n", dev->name,
			p->link_up ? "ACTIVE" : "DOWN");
	else if (state_news)
		rn_info("%s: port 1 DOWN: %s is down or has no carrier (ip link "
			"set %s up)\n", dev->name, p->ifname, p->ifname);
	if (changes & RN_PORT_MTU)
		rn_info("%s: %s MTU %u: active_mtu %u\n", dev->name, p->ifname,
			p->netdev_mtu, 128u << p->active_mtu);
	if (!(changes & RN_PORT_GIDS))
		return;
	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (rn_port_gid_valid(dev, i))
			len += snprintf(table + len, sizeof(table) - len, " %d:%s",
					i, gid_text(&p->gids[i], text, sizeof(text)));
	rn_info("%s: GIDs%s\n", dev->name, len ? table : " none");
}

/*
 * Kernel mode: the core updates its GID table from the same notifications,
 * from a work queue, so it may not have yet; the table is read again a
 * little later, and later still.
 */
static const uint64_t kernel_reread_ms[] = { 20, 200, 2000 };

static void kernel_reread_arm(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	uint32_t n = sizeof(kernel_reread_ms) / sizeof(kernel_reread_ms[0]);
	uint64_t ms = kernel_reread_ms[n - d->kernel_rereads];
	struct itimerspec t = {
		.it_value = { ms / 1000, ms % 1000 * 1000000 },
	};

	if (timerfd_settime(d->netdev_timer_fd, 0, &t, NULL))
		rn_warn("%s: cannot schedule a GID table read: %s\n", dev->name,
			strerror(errno));
}

/* The port as applications see it, to tell what a change changed. */
struct port_view {
	enum ibv_port_state state;
	union ibv_gid gids[RN_GID_TABLE_LEN]; /* rn_port_gid_table */
	/* Addresses that are no GID, and why (rn_port_gid_valid). */
	union ibv_gid unbound[RN_GID_TABLE_LEN];
	int errors[RN_GID_TABLE_LEN];
};

static void look(const struct rn_device *dev, struct port_view *v)
{
	int i;

	memset(v, 0, sizeof(*v));
	v->state = rn_port_state(dev);
	rn_port_gid_table(dev, v->gids);
	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (!rn_port_gid_valid(dev, i) &&
		    !rn_gid_is_zero(dev->port.gids[i].raw)) {
			v->unbound[i] = dev->port.gids[i];
			v->errors[i] = dev->port.gid_errors[i];
		}
}

/*
 * After the interface (changes, from core/port.c) or only the wire
 * (rebind: the retry of the sockets that could not be bound) changed:
 * the wire's sockets for the table, then what applications see of the
 * port against what they saw (was) logged, published and announced; in
 * kernel mode the stub is told whether the port has a GID it can use.
 */
static void settle(struct rn_device *dev, unsigned int changes, bool rebind,
		   const struct port_view *was)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct rn_timers *timers = &dev->timers;
	struct port_view now;

	if (rebind || (changes & (RN_PORT_NETDEV | RN_PORT_GIDS))) {
		if (rn_wire_addresses_changed(dev))
			rn_timer_arm(timers, &d->gid_retry,
				     rn_now_ns() + RN_GID_RETRY_NS);
		else
			rn_timer_cancel(timers, &d->gid_retry);
	}
	look(dev, &now);
	changes &= ~(RN_PORT_STATE | RN_PORT_GIDS);
	if (now.state != was->state)
		changes |= RN_PORT_STATE;
	if (memcmp(now.gids, was->gids, sizeof(now.gids)))
		changes |= RN_PORT_GIDS;
	if (memcmp(now.unbound, was->unbound, sizeof(now.unbound)) ||
	    memcmp(now.errors, was->errors, sizeof(now.errors)))
		changes |= RN_PORT_UNBOUND;
	if (dev->kdev_fd >= 0 && rn_port_no_gid(dev) != d->kernel_no_gid) {
		d->kernel_no_gid = !d->kernel_no_gid;
		if (rn_kdev_port(dev, d->kernel_no_gid))
			rn_warn("%s: cannot tell ringnic.ko whether the port has "
				"a GID it can use (an older ringnic.ko?)\n",
				dev->name);
	}
	if (!changes)
		return;
	log_changes(dev, changes);
	/* Files first: a context told of a change reads the new table. */
	if (d->published && rn_publish_port(dev))
		rn_warn("%s: could not update the published port\n", dev->name);
	rn_port_announce(dev, changes, was->state);
}

/* Read the interface again; apply, publish and announce what changed. */
static void refresh(struct rn_device *dev)
{
	struct port_view was;
	struct rn_link link;
	unsigned int changes;

	if (read_link(dev, &link)) {
		rn_warn("%s: cannot read the interfaces: the port stays as it was\n",
			dev->name);
		return;
	}
	look(dev, &was);
	changes = rn_port_set_link(dev, &link);
	if (dev->kdev_fd >= 0) {
		if (rn_kdev_read_gids(dev))
			changes |= RN_PORT_GIDS;
	} else {
		changes |= rn_port_set_gids(dev, link.addrs, link.naddrs);
	}
	settle(dev, changes, false, &was);
}

/* Try again the sockets that could not be bound. */
static void gid_retry_due(struct rn_timer *t, uint64_t now)
{
	struct rn_daemon *d = rn_container_of(t, struct rn_daemon, gid_retry);
	struct port_view was;

	(void)now;
	look(&d->dev, &was);
	settle(&d->dev, 0, true, &was);
}

static int open_kernel_reread_timer(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	d->netdev_timer_fd = timerfd_create(CLOCK_MONOTONIC,
					      TFD_CLOEXEC | TFD_NONBLOCK);
	if (d->netdev_timer_fd < 0)
		return errno;
	d->netdev_timer_watch = (struct rn_watch){ RN_WATCH_NETDEV_TIMER, dev };
	return 0;
}

/*
 * Choose the interface, subscribe to its changes (before the first read,
 * so that none is missed) and read it.  The sockets are dev->netlink and,
 * in kernel mode, dev->netdev_timer_fd, for the event loop.
 */
int rn_netdev_start(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct rn_netdev_opts *o = &d->netdev_opts;
	char name[IF_NAMESIZE] = "", text[INET6_ADDRSTRLEN];
	struct nl_sock *sk;
	uint32_t i;
	int ret;

	rn_timer_init(&d->gid_retry, gid_retry_due);
	ret = rn_timers_reserve(&dev->timers, ++dev->ntimers);
	if (ret)
		return ret;
	if (dev->kdev_fd >= 0) {
		ret = kernel_netdev(dev, name);
		if (ret) {
			rn_err("%s: cannot find the netdev of the kernel device\n",
			       dev->name);
			return ret;
		}
		if (o->ifname[0] && strcmp(o->ifname, name)) {
			rn_err("%s is bound to %s by the kernel (rdma link add), "
			       "not %s\n", dev->name, name, o->ifname);
			return EINVAL;
		}
		if (o->naddrs) {
			rn_err("--address: in kernel mode the GIDs are the kernel's\n");
			return EINVAL;
		}
		memcpy(o->ifname, name, sizeof(name));
		ret = open_kernel_reread_timer(dev);
		if (ret)
			return ret;
	} else if (!o->ifname[0]) {
		ret = default_netdev(o->ifname);
		if (ret)
			return ret;
	}

	sk = nl_socket_alloc();
	if (!sk)
		return ENOMEM;
	/* The notifications only say that something changed. */
	nl_socket_disable_seq_check(sk);
	if (nl_connect(sk, NETLINK_ROUTE) ||
	    nl_socket_add_memberships(sk, RTNLGRP_LINK, RTNLGRP_IPV4_IFADDR,
				      RTNLGRP_IPV6_IFADDR, 0) ||
	    nl_socket_set_nonblocking(sk)) {
		nl_socket_free(sk);
		rn_err("%s: cannot subscribe to rtnetlink\n", dev->name);
		return EIO;
	}
	d->netlink = sk;
	refresh(dev);
	if (!dev->port.ifindex) {
		rn_err("%s: no network interface %s\n", dev->name, o->ifname);
		return ENODEV;
	}
	for (i = 0; i < o->naddrs; i++)
		if (rn_port_address_index(dev, o->addrs[i].raw) < 0)
			rn_warn("%s: %s is not (yet) an address of %s\n",
				dev->name, gid_text(&o->addrs[i], text, sizeof(text)),
				dev->port.ifname);
	return 0;
}

int rn_netdev_fd(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	return nl_socket_get_fd(d->netlink);
}

static int ignore_message(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_SKIP;
}

/* Something changed: drain the notifications and read the interface again. */
void rn_netdev_readable(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct nl_sock *sk = d->netlink;

	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, ignore_message, NULL);
	while (nl_recvmsgs_default(sk) >= 0)
		;
	refresh(dev);
	if (dev->kdev_fd >= 0) {
		d->kernel_rereads = sizeof(kernel_reread_ms) /
				      sizeof(kernel_reread_ms[0]);
		kernel_reread_arm(dev);
	}
}

void rn_netdev_timer(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	uint64_t expirations;

	if (read(d->netdev_timer_fd, &expirations, sizeof(expirations)) < 0 ||
	    !d->kernel_rereads)
		return;
	refresh(dev);
	if (--d->kernel_rereads)
		kernel_reread_arm(dev);
}

void rn_netdev_stop(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	if (d->netlink)
		nl_socket_free(d->netlink);
	d->netlink = NULL;
	if (d->netdev_timer_fd >= 0)
		close(d->netdev_timer_fd);
	d->netdev_timer_fd = -1;
}
