// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The userspace stub: the sysfs-style tree libibverbs reads when SYSFS_PATH
 * points at RUNTIME_DIR/sys, and the /dev/infiniband node it insists on
 * opening.  The GID table comes from the host's IPv4 addresses (RoCEv2,
 * IPv4-mapped), read with libnl and refreshed when addresses change.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <linux/rtnetlink.h>
#include <netlink/cache.h>
#include <netlink/netlink.h>
#include <netlink/route/addr.h>
#include <netlink/route/link.h>

#include "ringnicd.h"

/* The uverbs ABI version of the kernel being imitated (3..6 accepted). */
#define RN_KERNEL_UVERBS_ABI 6
#define RN_DEV_NODE_DIR "/dev/infiniband"

static int mkdirs(const char *path)
{
	char buf[PATH_MAX];
	char *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0755) && errno != EEXIST)
			return errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return errno;
	return 0;
}

/*
 * Write "<value>\n" to a file below the device's tree, atomically (a reader
 * sees the old or the new content), creating its directories.
 */
static int put_file(const char *dir, const char *rel, const char *fmt, ...)
{
	char path[PATH_MAX], tmp[PATH_MAX + 8], *slash;
	va_list ap;
	FILE *f;
	int ret;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return ENAMETOOLONG;
	slash = strrchr(path, '/');
	*slash = 0;
	ret = mkdirs(path);
	*slash = '/';
	if (ret)
		return ret;
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "we");
	if (!f)
		return errno;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	if (fclose(f) || rename(tmp, path)) {
		ret = errno;
		unlink(tmp);
		return ret;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag,
		    struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

static void rm_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static void ibdev_dir(const struct rn_device *dev, char *buf, size_t len)
{
	snprintf(buf, len, "%s/class/infiniband/%s", dev->sysfs_root, dev->name);
}

static void uverbs_dir(const struct rn_device *dev, char *buf, size_t len)
{
	snprintf(buf, len, "%s/class/infiniband_verbs/%s", dev->sysfs_root,
		 dev->uverbs_name);
}

/* ---- GIDs -------------------------------------------------------------- */

struct rn_gid_src {
	struct in_addr addr;
	char ifname[IF_NAMESIZE];
	int ifindex;
};

static int gid_src_cmp(const void *a, const void *b)
{
	const struct rn_gid_src *x = a, *y = b;

	if (x->ifindex != y->ifindex)
		return x->ifindex < y->ifindex ? -1 : 1;
	return memcmp(&x->addr, &y->addr, sizeof(x->addr));
}

/* The host's IPv4 addresses, loopback first; returns how many (<= max). */
static int collect_ipv4(struct rn_gid_src *out, int max)
{
	struct nl_cache *links = NULL, *addrs = NULL;
	struct nl_object *obj;
	struct nl_sock *sk;
	int n = 0;

	sk = nl_socket_alloc();
	if (!sk)
		return 0;
	if (nl_connect(sk, NETLINK_ROUTE) ||
	    rtnl_link_alloc_cache(sk, AF_UNSPEC, &links) ||
	    rtnl_addr_alloc_cache(sk, &addrs))
		goto out;
	for (obj = nl_cache_get_first(addrs); obj && n < max;
	     obj = nl_cache_get_next(obj)) {
		struct rtnl_addr *a = (struct rtnl_addr *)obj;
		struct nl_addr *local = rtnl_addr_get_local(a);

		if (rtnl_addr_get_family(a) != AF_INET || !local ||
		    nl_addr_get_len(local) != sizeof(struct in_addr))
			continue;
		memcpy(&out[n].addr, nl_addr_get_binary_addr(local),
		       sizeof(out[n].addr));
		out[n].ifindex = rtnl_addr_get_ifindex(a);
		if (!rtnl_link_i2name(links, out[n].ifindex, out[n].ifname,
				      sizeof(out[n].ifname)))
			continue;
		n++;
	}
	qsort(out, n, sizeof(*out), gid_src_cmp);
out:
	if (addrs)
		nl_cache_free(addrs);
	if (links)
		nl_cache_free(links);
	nl_socket_free(sk);
	return n;
}

static int write_gids(const struct rn_device *dev)
{
	struct rn_gid_src src[RN_GID_TABLE_LEN];
	char dir[PATH_MAX], rel[64];
	int i, n, ret = 0;

	ibdev_dir(dev, dir, sizeof(dir));
	n = collect_ipv4(src, RN_GID_TABLE_LEN);
	for (i = 0; i < RN_GID_TABLE_LEN && !ret; i++) {
		uint8_t *a = (uint8_t *)&src[i].addr;

		snprintf(rel, sizeof(rel), "ports/1/gids/%d", i);
		/* An IPv4-mapped IPv6 address, as the kernel prints GIDs. */
		if (i < n)
			ret = put_file(dir, rel,
				       "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x",
				       a[0], a[1], a[2], a[3]);
		else
			ret = put_file(dir, rel,
				       "0000:0000:0000:0000:0000:0000:0000:0000");
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%d", i);
		if (!ret)
			ret = put_file(dir, rel, "RoCE v2");
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/ndevs/%d", i);
		if (!ret && i < n)
			ret = put_file(dir, rel, "%s", src[i].ifname);
		else if (!ret) {
			char path[PATH_MAX + 64];

			snprintf(path, sizeof(path), "%s/%s", dir, rel);
			unlink(path);
		}
	}
	return ret;
}

void rn_publish_gids_refresh(struct rn_device *dev)
{
	if (write_gids(dev))
		rn_warn("could not update the GID table\n");
}

static int ack_any(struct nl_msg *msg, void *arg)
{
	(void)msg;
	(void)arg;
	return NL_OK;
}

/* Subscribe to IPv4 address changes; the socket goes into the event loop. */
int rn_gid_watch_start(struct rn_device *dev)
{
	struct nl_sock *sk = nl_socket_alloc();

	if (!sk)
		return ENOMEM;
	nl_socket_disable_seq_check(sk);
	nl_socket_modify_cb(sk, NL_CB_VALID, NL_CB_CUSTOM, ack_any, NULL);
	if (nl_connect(sk, NETLINK_ROUTE) ||
	    nl_socket_add_membership(sk, RTNLGRP_IPV4_IFADDR) ||
	    nl_socket_set_nonblocking(sk)) {
		nl_socket_free(sk);
		return EIO;
	}
	dev->netlink = sk;
	return 0;
}

int rn_gid_watch_fd(struct rn_device *dev)
{
	return nl_socket_get_fd(dev->netlink);
}

void rn_gid_watch_event(struct rn_device *dev)
{
	/* Drain the notifications; their content does not matter. */
	while (nl_recvmsgs_default(dev->netlink) >= 0)
		;
	rn_publish_gids_refresh(dev);
}

void rn_gid_watch_stop(struct rn_device *dev)
{
	if (dev->netlink)
		nl_socket_free(dev->netlink);
	dev->netlink = NULL;
}

/* ---- the tree ------------------------------------------------------------ */

static int write_ibdev(const struct rn_device *dev)
{
	uint64_t guid = be64toh(dev->attr.node_guid);
	char dir[PATH_MAX], host[64] = "localhost";
	int ret = 0;

	ibdev_dir(dev, dir, sizeof(dir));
	gethostname(host, sizeof(host) - 1);
#define PUT(rel, ...) (ret = ret ? ret : put_file(dir, rel, __VA_ARGS__))
	PUT("node_type", "1: CA");
	PUT("node_guid", "%04x:%04x:%04x:%04x", (unsigned)(guid >> 48) & 0xffff,
	    (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
	    (unsigned)guid & 0xffff);
	PUT("sys_image_guid", "%04x:%04x:%04x:%04x",
	    (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
	    (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
	PUT("fw_ver", "%s", RN_FW_VERSION);
	PUT("hw_rev", "%u", RN_HW_VERSION);
	PUT("hca_type", "ringnic");
	PUT("node_desc", "%s %s", host, dev->name);
	PUT("device/modalias", RN_MODALIAS_PREFIX "%s", dev->name);
	PUT(RN_SYSFS_CONTROL, "%s", dev->ctl_path);
	PUT("ports/1/state", "4: ACTIVE");
	PUT("ports/1/phys_state", "5: LinkUp");
	PUT("ports/1/link_layer", "Ethernet");
	PUT("ports/1/rate", "100 Gb/sec (4X EDR)");
	PUT("ports/1/lid", "0x0");
	PUT("ports/1/sm_lid", "0x0");
	PUT("ports/1/lid_mask_count", "0");
	PUT("ports/1/pkeys/0", "0x%04x", RN_DEFAULT_PKEY);
#undef PUT
	return ret ? ret : write_gids(dev);
}

static int write_uverbs(const struct rn_device *dev)
{
	char dir[PATH_MAX];
	int ret;

	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", dev->sysfs_root);
	ret = put_file(dir, "abi_version", "%d", RN_KERNEL_UVERBS_ABI);
	uverbs_dir(dev, dir, sizeof(dir));
	if (!ret)
		ret = put_file(dir, "ibdev", "%s", dev->name);
	if (!ret)
		ret = put_file(dir, "abi_version", "%d", RN_UVERBS_ABI_VERSION);
	/* No real char device: libibverbs checks the number only if nonzero. */
	if (!ret)
		ret = put_file(dir, "dev", "0:0");
	return ret;
}

/*
 * The node libibverbs opens as the command fd.  Nothing is ever written to
 * it in userspace mode; /dev/full makes any attempt fail with ENOSPC.
 */
static int make_dev_node(struct rn_device *dev)
{
	int ret = mkdirs(RN_DEV_NODE_DIR);

	if (ret)
		return ret;
	snprintf(dev->dev_node, sizeof(dev->dev_node), RN_DEV_NODE_DIR "/%s",
		 dev->uverbs_name);
	unlink(dev->dev_node);
	if (symlink("/dev/full", dev->dev_node))
		return errno;
	return 0;
}

int rn_publish(struct rn_device *dev)
{
	int ret;

	/* The infiniband_verbs entry is what libibverbs looks for: it comes
	 * last, once everything it points to exists, and goes first.
	 */
	ret = write_ibdev(dev);
	if (!ret)
		ret = make_dev_node(dev);
	if (!ret)
		ret = write_uverbs(dev);
	if (ret) {
		rn_err("cannot publish %s under %s: %s\n", dev->name,
		       dev->sysfs_root, strerror(ret));
		rn_unpublish(dev);
		return ret;
	}
	dev->published = true;
	return 0;
}

static void rmdir_chain(const char *root, const char *const *rels)
{
	char path[PATH_MAX + 64];

	for (; *rels; rels++) {
		snprintf(path, sizeof(path), "%s/%s", root, *rels);
		rmdir(path);
	}
}

void rn_unpublish(struct rn_device *dev)
{
	static const char *const parents[] = { "class/infiniband",
					       "class/infiniband_verbs",
					       "class", NULL };
	char path[PATH_MAX + 64];

	uverbs_dir(dev, path, sizeof(path));
	rm_tree(path);
	if (dev->dev_node[0])
		unlink(dev->dev_node);
	ibdev_dir(dev, path, sizeof(path));
	rm_tree(path);

	/* The shared parts go with the last device of this runtime dir. */
	snprintf(path, sizeof(path), "%s/class/infiniband", dev->sysfs_root);
	if (!rmdir(path) || errno == ENOENT) {
		snprintf(path, sizeof(path),
			 "%s/class/infiniband_verbs/abi_version", dev->sysfs_root);
		unlink(path);
	}
	rmdir_chain(dev->sysfs_root, parents);
	rmdir(dev->sysfs_root);
	dev->published = false;
}
