// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The userspace stub: the sysfs-style tree libibverbs reads when SYSFS_PATH
 * points at RUNTIME_DIR/sys.  The /dev/infiniband node it insists on
 * opening is the shim's business (providers/ringnic/devnodes.c): nothing
 * is made outside the runtime dir.  The port's files (state, GIDs) are written again whenever
 * netdev.c sees the interface or the wire's sockets change.
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "kernel-abi/ringnic-cm.h"
#include "roce/packet.h"

/* The uverbs ABI version of the kernel being imitated (3..6 accepted). */
#define RN_KERNEL_UVERBS_ABI 6

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
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	/* The directories exist but for the first write: counters are
	 * rewritten ten times a second while the device is busy.
	 */
	f = fopen(tmp, "we");
	if (!f && errno == ENOENT) {
		slash = strrchr(path, '/');
		*slash = 0;
		ret = mkdirs(path);
		*slash = '/';
		if (ret)
			return ret;
		f = fopen(tmp, "we");
	}
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
	const struct rn_daemon *d = rn_daemon_of_const(dev);

	snprintf(buf, len, "%s/class/infiniband/%s", d->sysfs_root, dev->name);
}

static void uverbs_dir(const struct rn_device *dev, char *buf, size_t len)
{
	const struct rn_daemon *d = rn_daemon_of_const(dev);

	snprintf(buf, len, "%s/class/infiniband_verbs/%s", d->sysfs_root,
		 d->uverbs_name);
}

/* ---- the port ------------------------------------------------------------ */

/* The address of entry i, as ip shows it. */
static const char *address_text(const struct rn_device *dev, int i, char *buf,
				size_t len)
{
	const uint8_t *g = dev->port.gids[i].raw;

	if (rn_gid_is_ipv4(g))
		return inet_ntop(AF_INET, g + 12, buf, len);
	return inet_ntop(AF_INET6, g, buf, len);
}

/*
 * RN_SYSFS_UNBOUND: the port's addresses that are no GID because their
 * UDP port cannot be bound, one a line with the reason, for the user
 * (ringnic-run says them); no file when there are none.
 */
static int put_unbound(const struct rn_device *dev, const char *dir)
{
	char text[RN_GID_TABLE_LEN * 128] = "", a[INET6_ADDRSTRLEN];
	char path[PATH_MAX + 64];
	size_t len = 0;
	int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (!rn_port_gid_valid(dev, i) &&
		    !rn_gid_is_zero(dev->port.gids[i].raw))
			len += snprintf(text + len, sizeof(text) - len,
					"%s%s: cannot bind UDP port %u: %s",
					len ? "\n" : "",
					address_text(dev, i, a, sizeof(a)),
					RN_PKT_UDP_DPORT,
					strerror(dev->port.gid_errors[i]));
	if (len)
		return put_file(dir, "ports/1/" RN_SYSFS_UNBOUND, "%s", text);
	snprintf(path, sizeof(path), "%s/ports/1/" RN_SYSFS_UNBOUND, dir);
	if (unlink(path) && errno != ENOENT)
		return errno;
	return 0;
}

/*
 * The port's state and GID table as the kernel shows a RoCE port's: an
 * empty entry reads as the zero GID and has no ndev; every entry is of
 * type RoCE v2.  An address that is no GID reads as an empty entry; the
 * port is INIT (LinkUp) while none of its addresses is one.
 */
int rn_publish_port(struct rn_device *dev)
{
	static const char *const states[] = {
		[IBV_PORT_DOWN] = "1: DOWN",
		[IBV_PORT_INIT] = "2: INIT",
		[IBV_PORT_ACTIVE] = "4: ACTIVE",
	};
	const struct rn_port *p = &dev->port;
	char dir[PATH_MAX], rel[64], path[PATH_MAX + 64];
	union ibv_gid gids[RN_GID_TABLE_LEN];
	int i, ret;

	ibdev_dir(dev, dir, sizeof(dir));
	rn_port_gid_table(dev, gids);
	ret = put_file(dir, "ports/1/state", "%s", states[rn_port_state(dev)]);
	if (!ret)
		ret = put_file(dir, "ports/1/phys_state",
			       p->link_up ? "5: LinkUp" : "3: Disabled");
	if (!ret)
		ret = put_unbound(dev, dir);
	for (i = 0; i < RN_GID_TABLE_LEN && !ret; i++) {
		const uint8_t *g = gids[i].raw;

		snprintf(rel, sizeof(rel), "ports/1/gids/%d", i);
		ret = put_file(dir, rel,
			       "%02x%02x:%02x%02x:%02x%02x:%02x%02x:"
			       "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
			       g[8], g[9], g[10], g[11], g[12], g[13], g[14],
			       g[15]);
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/types/%d", i);
		if (!ret)
			ret = put_file(dir, rel, "RoCE v2");
		snprintf(rel, sizeof(rel), "ports/1/gid_attrs/ndevs/%d", i);
		if (!ret && rn_port_gid_valid(dev, i)) {
			ret = put_file(dir, rel, "%s", p->ifname);
		} else if (!ret) {
			snprintf(path, sizeof(path), "%s/%s", dir, rel);
			unlink(path);
		}
	}
	return ret;
}

/* ---- the tree ------------------------------------------------------------ */

static int write_counter(const struct rn_device *dev, enum rn_counter c,
			 uint64_t value)
{
	char dir[PATH_MAX], rel[96];

	ibdev_dir(dev, dir, sizeof(dir));
	snprintf(rel, sizeof(rel), "ports/1/hw_counters/%s", rn_counter_name(c));
	return put_file(dir, rel, "%llu", (unsigned long long)value);
}

/* Engine k's share of counter c: engines/K/hw_counters/NAME. */
static int write_engine_counter(const struct rn_device *dev, uint32_t k,
				enum rn_counter c, uint64_t value)
{
	char dir[PATH_MAX], rel[128];

	ibdev_dir(dev, dir, sizeof(dir));
	snprintf(rel, sizeof(rel), "engines/%u/hw_counters/%s", k,
		 rn_counter_name(c));
	return put_file(dir, rel, "%llu", (unsigned long long)value);
}

/*
 * What each engine counted, where it changed since it was last published
 * (every engine's when d->engines_due): as files, or in kernel mode to the
 * stub, which shows them in the kernel device's tree.  An older stub
 * refuses them (EINVAL): not sent again.
 */
static int publish_engines(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	bool all = d->engines_due;
	uint64_t now[RN_CNT_MAX];
	uint32_t k;
	int c;

	d->engines_due = false;
	for (k = 0; k < dev->nengines && !d->kernel_no_engines; k++) {
		uint64_t *was = d->engines_published + (size_t)k * RN_CNT_MAX;

		for (c = 0; c < RN_CNT_MAX; c++)
			now[c] = __atomic_load_n(&dev->engines[k]->counters[c],
						 __ATOMIC_RELAXED);
		if (!all && !memcmp(was, now, sizeof(now)))
			continue;
		if (dev->kdev_fd >= 0) {
			int ret = rn_kdev_engine_counters(dev, k, now);

			if (ret == EINVAL)
				d->kernel_no_engines = true;
			else if (ret)
				goto again;
			memcpy(was, now, sizeof(now));
			continue;
		}
		for (c = 0; c < RN_CNT_MAX; c++) {
			if (was[c] == now[c] && !all)
				continue;
			if (write_engine_counter(dev, k, c, now[c]))
				goto again;
			was[c] = now[c];
		}
	}
	return 0;
again:
	d->engines_due = true; /* all of them, the next time */
	return -1;
}

/*
 * The counters as files, like a kernel device's hw_counters, or in kernel
 * mode to the stub, which has the device's: rewritten when they changed
 * (the loop calls this when it goes idle, and now and then while busy).
 */
void rn_publish_counters(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	uint64_t counters[RN_CNT_MAX], now;
	int c;

	if (!d->published && dev->kdev_fd < 0)
		return;
	rn_port_counters(dev, counters);
	if (!memcmp(dev->port.published, counters, sizeof(counters)) &&
	    !d->engines_due)
		return;
	now = rn_now_ns();
	/* A file each costs a dozen system calls: not after every packet. */
	if (now < d->counters_next) {
		rn_timer_arm(&dev->timers, &d->counters_timer,
			     d->counters_next);
		return;
	}
	d->counters_next = now + RN_COUNTERS_PERIOD_NS;
	if (dev->kdev_fd >= 0) {
		if (!rn_kdev_counters(dev, counters))
			memcpy(dev->port.published, counters, sizeof(counters));
		publish_engines(dev);
		return;
	}
	for (c = 0; c < RN_CNT_MAX; c++) {
		if (dev->port.published[c] == counters[c])
			continue;
		if (write_counter(dev, c, counters[c]))
			return;
		dev->port.published[c] = counters[c];
	}
	publish_engines(dev);
}

static void counters_due(struct rn_timer *t, uint64_t now)
{
	(void)now;
	rn_publish_counters(&rn_container_of(t, struct rn_daemon, counters_timer)->dev);
}

static int write_ibdev(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
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
	PUT(RN_SYSFS_CONTROL, "%s", d->ctl_path);
	PUT("ports/1/link_layer", "Ethernet");
	PUT("ports/1/rate", "100 Gb/sec (4X EDR)");
	PUT("ports/1/lid", "0x0");
	PUT("ports/1/sm_lid", "0x0");
	PUT("ports/1/lid_mask_count", "0");
	PUT("ports/1/pkeys/0", "0x%04x", RN_DEFAULT_PKEY);
#undef PUT
	for (int c = 0; c < RN_CNT_MAX && !ret; c++)
		ret = write_counter(dev, c, dev->port.published[c]);
	for (uint32_t k = 0; k < dev->nengines && !ret; k++)
		for (int c = 0; c < RN_CNT_MAX && !ret; c++)
			ret = write_engine_counter(dev, k, c, 0);
	return ret ? ret : rn_publish_port(dev);
}

/* The kernel's uverbs devices are 231:192 and up. */
#define UVERBS_MAJOR 231

static int write_uverbs(const struct rn_device *dev)
{
	const struct rn_daemon *d = rn_daemon_of_const(dev);
	char dir[PATH_MAX];
	struct stat st;
	int ret;

	snprintf(dir, sizeof(dir), "%s/class/infiniband_verbs", d->sysfs_root);
	ret = put_file(dir, "abi_version", "%d", RN_KERNEL_UVERBS_ABI);
	uverbs_dir(dev, dir, sizeof(dir));
	if (!ret)
		ret = put_file(dir, "ibdev", "%s", dev->name);
	if (!ret)
		ret = put_file(dir, "abi_version", "%d", RN_UVERBS_ABI_VERSION);
	/*
	 * No real char device, but a number of its own, which the shim gives
	 * the command fds of the device's contexts (fstat), and by which
	 * ibv_import_device finds the device of one: uverbs' major and the
	 * inode of this directory, which no other device in the tree has
	 * (folded to the 32 bits of a minor, for 64-bit inode numbers).
	 */
	if (!ret)
		ret = stat(dir, &st) ? errno : 0;
	if (!ret)
		ret = put_file(dir, "dev", "%u:%u", UVERBS_MAJOR,
			       (unsigned)(st.st_ino ^ (uint64_t)st.st_ino >> 32));
	return ret;
}

/*
 * The timer that spaces the counters' updates, and what the engines' were
 * when last published, in either mode.
 */
int rn_counters_init(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	d->engines_published = calloc((size_t)dev->nengines * RN_CNT_MAX,
				      sizeof(*d->engines_published));
	if (!d->engines_published)
		return ENOMEM;
	rn_timer_init(&d->counters_timer, counters_due);
	if (rn_timers_reserve(&dev->timers, ++dev->ntimers))
		return ENOMEM;
	/* The stub shows each engine's once it has them: zeros, at once. */
	if (dev->kdev_fd >= 0) {
		d->engines_due = true;
		rn_timer_arm(&dev->timers, &d->counters_timer, rn_now_ns());
	}
	return 0;
}

int rn_publish(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	/* The infiniband_verbs entry is what libibverbs looks for: it comes
	 * last, once everything it points to exists, and goes first.
	 */
	int ret = write_ibdev(dev);

	/* What librdmacm checks before it opens rdma_cm (cm/, the shim). */
	if (!ret)
		ret = put_file(d->sysfs_root, "class/misc/rdma_cm/abi_version",
			       "%d", RN_CM_UCMA_ABI);
	if (!ret)
		ret = write_uverbs(dev);
	if (ret) {
		rn_err("cannot publish %s under %s: %s\n", dev->name,
		       d->sysfs_root, strerror(ret));
		rn_unpublish(dev);
		return ret;
	}
	d->published = true;
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
	struct rn_daemon *d = rn_daemon_of(dev);
	static const char *const parents[] = { "class/infiniband",
					       "class/infiniband_verbs",
					       "class/misc/rdma_cm",
					       "class/misc", "class", NULL };
	char path[PATH_MAX + 64];

	uverbs_dir(dev, path, sizeof(path));
	rm_tree(path);
	ibdev_dir(dev, path, sizeof(path));
	rm_tree(path);

	/* The shared parts go with the last device of this runtime dir. */
	snprintf(path, sizeof(path), "%s/class/infiniband", d->sysfs_root);
	if (!rmdir(path) || errno == ENOENT) {
		snprintf(path, sizeof(path),
			 "%s/class/infiniband_verbs/abi_version", d->sysfs_root);
		unlink(path);
		snprintf(path, sizeof(path),
			 "%s/class/misc/rdma_cm/abi_version", d->sysfs_root);
		unlink(path);
	}
	rmdir_chain(d->sysfs_root, parents);
	rmdir(d->sysfs_root);
	d->published = false;
}
