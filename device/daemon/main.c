// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ringnicd [--name NAME] [--runtime-dir DIR] [--netdev IF] [--address ADDR]...
 *          [--foreground] [--no-realtime] [--poll-us N] [--engines N]
 *          [--local-on-wire] [--debug]
 *
 * Binds the device's port to a network interface (netdev.c), publishes the
 * device (or, when ringnic.ko registered one of that name, attaches to it:
 * kernel mode, see kdev.c), then runs a thread per engine, which executes
 * the work of the QPs it owns (engine_thread.c), and this one, the control
 * thread, which serves control requests, rdma_cm, netlink and the kernel
 * device.  The control thread takes every engine for its work through
 * their gates (engine/gate.c).
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/daemon.h"
#include "cm/cm.h"
#include "kernel-abi/ringnic-kdev.h"

/*
 * How long the loop keeps polling after the last piece of work, by
 * default.  Polling pays only with a core to spare: on a machine of two,
 * where the applications poll too, a device that sleeps at once answers
 * faster (ib_write_lat 8 B: 5-7 us typical polling 2 us, 9 us polling 10
 * us, 29 us polling 50 us, measured here).
 */
#define RN_IDLE_POLL_SMALL_NS 2000ull
#define RN_IDLE_POLL_NS 50000ull
/* --engines: at most this many; by default one per 4 CPUs it may use. */
#define RN_MAX_ENGINES 64
_Static_assert(RN_MAX_ENGINES <= RN_KDEV_ENGINES_MAX,
	       "ringnic.ko shows the counters of every engine");
#define RN_CPUS_PER_ENGINE 4
#define RN_DEFAULT_ENGINES_MAX 16

static void usage(FILE *out)
{
	fprintf(out,
		"usage: ringnicd [--name NAME] [--runtime-dir DIR] [--netdev IF] [--address ADDR]...\n"
		"                [--foreground] [--no-realtime] [--poll-us N] [--engines N]\n"
		"                [--local-on-wire] [--debug]\n"
		"  --name NAME        device name (default ringnic0)\n"
		"  --runtime-dir DIR  where the device is published (default: $RINGNIC_RUNTIME_DIR,\n"
		"                     else /run/ringnic for root, $XDG_RUNTIME_DIR/ringnic or\n"
		"                     /tmp/ringnic-UID otherwise)\n"
		"  --netdev IF        the network interface of port 1: its addresses are the\n"
		"                     GIDs, its link the port state, its MTU the active MTU\n"
		"                     (default: the interface of the default route, else lo)\n"
		"  --address ADDR     only this IPv4 or IPv6 address of IF is a GID (repeatable)\n"
		"  --foreground       stay in the foreground and log to stderr\n"
		"  --no-realtime      do not ask for SCHED_FIFO priority\n"
		"  --poll-us N        poll N microseconds after the last work before\n"
		"                     sleeping (default: 2 on 2 cores or fewer, else 50)\n"
		"  --engines N        run the data path on N threads, each owning the QPs\n"
		"                     of its contexts (default: one per 4 CPUs ringnicd\n"
		"                     may run on, at least 1, at most 16)\n"
		"  --local-on-wire    connect QPs of this device to each other over\n"
		"                     RoCEv2 too, not through memory (for testing)\n"
		"  --debug            log debug messages\n");
}

/* One engine per RN_CPUS_PER_ENGINE of the CPUs this process may run on. */
static uint32_t default_engines(void)
{
	cpu_set_t set;
	int cpus;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 1;
	cpus = CPU_COUNT(&set) / RN_CPUS_PER_ENGINE;
	return cpus < 1 ? 1 :
	       cpus > RN_DEFAULT_ENGINES_MAX ? RN_DEFAULT_ENGINES_MAX :
					       (uint32_t)cpus;
}

/* The runtime dir, absolute: the option, or the default ringnic-run uses. */
static int set_runtime_dir(struct rn_device *dev, const char *opt)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	const char *env = getenv("RINGNIC_RUNTIME_DIR");
	char path[PATH_MAX], cwd[PATH_MAX];
	int n;

	if (opt)
		n = snprintf(path, sizeof(path), "%s", opt);
	else if (env && *env)
		n = snprintf(path, sizeof(path), "%s", env);
	else if (!getuid())
		n = snprintf(path, sizeof(path), "/run/ringnic");
	else if ((env = getenv("XDG_RUNTIME_DIR")) && *env)
		n = snprintf(path, sizeof(path), "%s/ringnic", env);
	else
		n = snprintf(path, sizeof(path), "/tmp/ringnic-%u",
			     (unsigned)getuid());
	if (n < 0 || n >= (int)sizeof(path))
		return ENAMETOOLONG;
	if (path[0] == '/')
		n = snprintf(d->runtime_dir, sizeof(d->runtime_dir), "%s", path);
	else if (getcwd(cwd, sizeof(cwd)))
		n = snprintf(d->runtime_dir, sizeof(d->runtime_dir), "%s/%s",
			     cwd, path);
	else
		return errno;
	return n < 0 || n >= (int)sizeof(d->runtime_dir) ? ENAMETOOLONG : 0;
}

static bool valid_name(const char *name)
{
	size_t n = strlen(name);

	if (!n || n > RN_NAME_MAX)
		return false;
	return strspn(name, "abcdefghijklmnopqrstuvwxyz"
			    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ull;
	return h;
}

static void device_identity(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	char host[256] = "";
	uint64_t h;

	gethostname(host, sizeof(host) - 1);
	h = fnv1a(0xcbf29ce484222325ull, d->runtime_dir);
	snprintf(d->uverbs_name, sizeof(d->uverbs_name), "ringnic_%s_%08x",
		 dev->name, (unsigned)(h ^ h >> 32));
	h = fnv1a(fnv1a(h, host), dev->name);
	/* A locally administered EUI-64. */
	h = (h & ~(0xffull << 56)) | (0x02ull << 56);
	dev->guid = htobe64(h);
}

/* NAME.pid in the runtime dir, for whoever has to stop us. */
static void write_pidfile(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	char path[sizeof(d->lock_path)];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.pid", d->runtime_dir, dev->name);
	f = fopen(path, "we");
	if (f) {
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
	}
}

static void remove_pidfile(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	char path[sizeof(d->lock_path)];

	snprintf(path, sizeof(path), "%s/%s.pid", d->runtime_dir, dev->name);
	unlink(path);
}

/*
 * A NIC answers at interrupt priority; applications that poll their CQs
 * would otherwise keep a woken device off the CPU until the next
 * scheduler tick (milliseconds) on a machine with few cores.  The device
 * only ever runs for work the applications gave it, and sleeps when idle.
 * The control thread, this one, asks for the priority above the engine's:
 * woken on the engine's CPU, it takes the gate at the end of the pass
 * instead of waiting for the engine to sleep.  The engine thread asks for
 * its own (SCHED_RESET_ON_FORK keeps threads from inheriting it).
 */
static void go_realtime(struct rn_daemon *d)
{
	/* An rtprio limit of 1 gives both threads the engine's: the engine
	 * then yields to the control thread every RN_LOOK_EVERY passes.
	 */
	d->realtime = !rn_go_realtime(RN_CONTROL_PRIORITY);
	if (!d->realtime)
		d->realtime = d->engine_yields =
			!rn_go_realtime(RN_ENGINE_PRIORITY);
	if (!d->realtime)
		rn_info("no realtime priority (%s): with applications polling "
			"on every core, latency will have millisecond tails; "
			"root, CAP_SYS_NICE or an rtprio limit of 1 (ulimit -r, "
			"limits.conf) give it: see ringnicd(8)\n",
			strerror(errno));
}

/*
 * ringnic-run tells a live device by trying its lock (flock -n), which
 * holds it for a moment: a start that meets such a probe tries again for
 * a while before it takes the device for a running one.
 */
#define RN_LOCK_TRIES 50
#define RN_LOCK_RETRY_US 10000

static int take_lock(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	int tries;

	if (snprintf(d->lock_path, sizeof(d->lock_path), "%s/%s.lock",
		     d->runtime_dir, dev->name) >= (int)sizeof(d->lock_path))
		return ENAMETOOLONG;
	d->lock_fd = open(d->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (d->lock_fd < 0)
		return errno;
	for (tries = 1; flock(d->lock_fd, LOCK_EX | LOCK_NB); tries++) {
		if (errno != EWOULDBLOCK)
			return errno;
		if (tries == RN_LOCK_TRIES)
			return EEXIST;
		usleep(RN_LOCK_RETRY_US);
	}
	d->locked = true;
	return 0;
}

static int watch_fd(struct rn_device *dev, int fd, struct rn_watch *w,
		    enum rn_watch_kind kind)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = w };

	*w = (struct rn_watch){ kind, dev };
	return epoll_ctl(dev->epoll_fd, EPOLL_CTL_ADD, fd, &ev) ? errno : 0;
}

/*
 * Limits that keep clients, all together, from exhausting ringnicd:
 * descriptors (raised to the hard limit, then divided among the clients)
 * and shared memory (half of the machine's).
 */
static void set_limits(struct rn_device *dev)
{
	struct rlimit nofile;
	uint64_t fds = 1024;

	if (!getrlimit(RLIMIT_NOFILE, &nofile)) {
		nofile.rlim_cur = nofile.rlim_max;
		if (!setrlimit(RLIMIT_NOFILE, &nofile))
			fds = nofile.rlim_cur;
	}
	dev->max_clients = fds > 64 + RN_CLIENT_FDS ?
				   (fds - 64) / RN_CLIENT_FDS : 1;
	if (dev->max_clients > 4096)
		dev->max_clients = 4096;
	dev->max_shared_bytes = (uint64_t)sysconf(_SC_PHYS_PAGES) *
				sysconf(_SC_PAGESIZE) / 2;
}

/*
 * The runtime dir holds the control socket that clients trust and the tree
 * that tells them where it is: it must be a directory of ours that nobody
 * else can write to.  Under /tmp, another user could have made it first.
 */
static int check_runtime_dir(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st))
		return errno;
	if (!S_ISDIR(st.st_mode)) {
		rn_err("%s is not a directory: remove it, or choose another "
		       "with --runtime-dir\n", dir);
		return ENOTDIR;
	}
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
		rn_err("%s belongs to uid %u with mode %04o: a runtime dir must "
		       "be ours (uid %u) and writable by nobody else; remove "
		       "it, or choose another with --runtime-dir\n", dir,
		       (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
		       (unsigned)geteuid());
		return EPERM;
	}
	return 0;
}

static int setup(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	sigset_t mask;
	int ret;

	ret = mkdir(d->runtime_dir, 0755) && errno != EEXIST ? errno : 0;
	if (ret) {
		rn_err("cannot create %s: %s\n", d->runtime_dir, strerror(ret));
		return ret;
	}
	ret = check_runtime_dir(d->runtime_dir);
	if (ret)
		return ret;
	ret = take_lock(dev);
	if (ret) {
		rn_err(ret == EEXIST ? "%s is already running in %s\n" :
				       "cannot lock %s in %s\n",
		       dev->name, d->runtime_dir);
		return ret;
	}
	if (snprintf(d->sysfs_root, sizeof(d->sysfs_root), "%s/sys",
		     d->runtime_dir) >= (int)sizeof(d->sysfs_root) ||
	    snprintf(d->ctl_path, sizeof(d->ctl_path), "%s/%s.sock",
		     d->runtime_dir, dev->name) >= (int)sizeof(d->ctl_path)) {
		rn_err("runtime dir path too long\n");
		return ENAMETOOLONG;
	}

	dev->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (dev->epoll_fd < 0)
		return errno;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	d->signal_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (d->signal_fd < 0)
		return errno;
	ret = watch_fd(dev, d->signal_fd, &d->signal_watch, RN_WATCH_SIGNAL);
	if (ret)
		return ret;

	/* Kernel mode when ringnic.ko registered a device of our name: the
	 * kernel publishes it and relays its applications' requests.
	 */
	if (rn_kdev_present(dev->name)) {
		ret = rn_kdev_attach(dev);
		if (ret) {
			rn_err("cannot attach to the kernel device %s: %s\n",
			       dev->name, strerror(ret));
			return ret;
		}
	}
	if (rn_device_setup(dev, dev->guid) || rn_counters_init(dev))
		return ENOMEM;
	ret = rn_relay_init(dev, dev->kdev_fd >= 0 ? rn_kdev_gsi_recv :
						     rn_cm_gsi_recv);
	if (!ret)
		ret = watch_fd(dev, d->relay.fd, &d->relay_watch,
			       RN_WATCH_RELAY);
	if (ret)
		return ret;
	set_limits(dev);
	ret = rn_netdev_start(dev);
	if (!ret)
		ret = watch_fd(dev, rn_netdev_fd(dev), &d->netlink_watch,
			       RN_WATCH_NETLINK);
	if (!ret && d->netdev_timer_fd >= 0)
		ret = watch_fd(dev, d->netdev_timer_fd,
			       &d->netdev_timer_watch, RN_WATCH_NETDEV_TIMER);
	if (ret)
		return ret;
	/* In kernel mode contexts come through ringnic.ko: the control
	 * socket serves packet captures and ringnic-fault only.
	 */
	ret = rn_control_listen(dev);
	if (ret) {
		rn_err("cannot listen on %s: %s\n", d->ctl_path, strerror(ret));
		return ret;
	}
	if (dev->kdev_fd >= 0)
		return watch_fd(dev, dev->kdev_fd, &d->kdev_watch, RN_WATCH_KDEV);
	ret = rn_cm_listen(dev, d->runtime_dir);
	if (ret) {
		rn_err("cannot serve rdma_cm: %s\n", strerror(ret));
		return ret;
	}
	return rn_publish(dev);
}

static void teardown(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct rn_list *pos, *tmp;

	/* Empty, or not even made when setup stopped before the device
	 * existed (another ringnicd holds the name).
	 */
	if (dev->clients.next)
		rn_list_for_each_safe(pos, tmp, &dev->clients)
			rn_client_destroy(rn_container_of(pos, struct rn_client,
							  link));
	if (dev->kdev_fd >= 0)
		close(dev->kdev_fd); /* detaches: its contexts become dead */
	if (d->published)
		rn_unpublish(dev);
	rn_cm_close(dev); /* its last REJs and DREQs go out on the wire */
	rn_relay_close(dev);
	rn_wire_close(dev);
	rn_netdev_stop(dev);
	if (d->listening)
		unlink(d->ctl_path);
	if (d->locked) {
		remove_pidfile(dev);
		unlink(d->lock_path);
		close(d->lock_fd);
		rmdir(d->runtime_dir);
	}
	free(d->engines_published);
}

static void on_signal(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);
	struct signalfd_siginfo si;

	while (read(d->signal_fd, &si, sizeof(si)) == sizeof(si)) {
		rn_info("signal %u: stopping %s\n", si.ssi_signo, dev->name);
		d->stop = true;
	}
}

/* Handle what the control thread's epoll reports now, holding the gate. */
static void service(struct rn_device *dev)
{
	struct epoll_event ev[32];
	int i, n;

	n = epoll_wait(dev->epoll_fd, ev, 32, 0);
	for (i = 0; i < n; i++) {
		struct rn_watch *w = ev[i].data.ptr;

		switch (w->kind) {
		case RN_WATCH_LISTEN:
			rn_control_accept(dev);
			break;
		case RN_WATCH_SIGNAL:
			on_signal(dev);
			break;
		case RN_WATCH_CLIENT:
			rn_control_readable(w->obj);
			/* The client may be gone: later events of this batch
			 * could point at it, so take them on the next call.
			 */
			return;
		case RN_WATCH_NETLINK:
			rn_netdev_readable(dev);
			break;
		case RN_WATCH_NETDEV_TIMER:
			rn_netdev_timer(dev);
			break;
		case RN_WATCH_RELAY:
			rn_relay_readable(dev);
			break;
		case RN_WATCH_GUARD:
			rn_guard_readable(w->obj);
			break;
		case RN_WATCH_KDEV:
			/* A context closed by the kernel frees its client,
			 * whose exit or wake-up watch may be later in this
			 * batch (a process that exits does both at once).
			 */
			rn_kdev_readable(w->obj);
			return;
		case RN_WATCH_CM_LISTEN:
			rn_cm_accept(w->obj);
			break;
		case RN_WATCH_CM_CHANNEL:
			/* May close the channel: as for a client. */
			rn_cm_readable(w->obj);
			return;
		case RN_WATCH_EXIT:
			/* Gone with its process, whoever still holds its
			 * socket or uverbs file: as for a hang-up, take the
			 * rest of the batch on the next call.
			 */
			rn_client_destroy(w->obj);
			return;
		default: /* the engine thread's */
			break;
		}
	}
}

/* Milliseconds until the control thread's next timer, for epoll (-1: none). */
static int next_timer_ms(struct rn_device *dev)
{
	uint64_t next = rn_timers_next(&dev->timers), now;

	if (next == UINT64_MAX)
		return -1;
	now = rn_now_ns();
	if (next <= now)
		return 0;
	/* Rounded up: a timer is never early. */
	next = (next - now + 999999) / 1000000;
	return next > INT32_MAX ? INT32_MAX : (int)next;
}

/*
 * The control thread: it sleeps until its epoll reports something or one
 * of its timers is due, then takes the device from the engine and asks
 * epoll again, since what the engine did meanwhile may have changed the
 * answer.
 */
static void run(struct rn_device *dev)
{
	struct rn_daemon *d = rn_daemon_of(dev);

	while (!d->stop) {
		struct epoll_event ev;

		if (epoll_wait(dev->epoll_fd, &ev, 1, next_timer_ms(dev)) < 0 &&
		    errno != EINTR) {
			rn_err("epoll: %s\n", strerror(errno));
			break;
		}
		rn_gate_hold(dev);
		rn_timers_run(&dev->timers, rn_now_ns());
		service(dev);
		rn_gate_release(dev);
	}
}

/* Fork into the background; the parent exits once the device is up. */
static int daemonize(int *ready_fd)
{
	int p[2];
	char status = 1;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid > 0) {
		close(p[1]);
		if (read(p[0], &status, 1) != 1)
			status = 1;
		_exit(status);
	}
	close(p[0]);
	setsid();
	if (chdir("/"))
		return -1;
	*ready_fd = p[1];
	return 0;
}

/*
 * Tell a waiting parent how startup went.  Until then errors went to
 * stderr, where whoever started us sees them; from now on to syslog.
 */
static void report_ready(int *ready_fd, char status)
{
	int null;

	if (*ready_fd < 0)
		return;
	if (write(*ready_fd, &status, 1) != 1)
		rn_warn("cannot notify the parent\n");
	close(*ready_fd);
	*ready_fd = -1;
	if (status)
		return;
	rn_log_init(false, rn_log_debug());
	null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		dup2(null, 2);
		close(null);
	}
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "name", required_argument, NULL, 'n' },
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "netdev", required_argument, NULL, 'i' },
		{ "address", required_argument, NULL, 'a' },
		{ "foreground", no_argument, NULL, 'f' },
		{ "no-realtime", no_argument, NULL, 'R' },
		{ "poll-us", required_argument, NULL, 'p' },
		{ "engines", required_argument, NULL, 'e' },
		{ "debug", no_argument, NULL, 'd' },
		{ "local-on-wire", no_argument, NULL, 'L' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{}
	};
	static struct rn_daemon d;
	struct rn_device *dev = &d.dev;
	struct rn_netdev_opts *netdev = &d.netdev_opts;
	const char *runtime_dir = NULL;
	bool foreground = false, debug = false, realtime = true, poll_set = false;
	int c, ret, ready_fd = -1;

	snprintf(dev->name, sizeof(dev->name), "ringnic0");
	dev->kdev_fd = -1;
	d.netdev_timer_fd = -1;
	while ((c = getopt_long(argc, argv, "n:r:i:a:fRp:e:dLhV", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			snprintf(dev->name, sizeof(dev->name), "%s", optarg);
			break;
		case 'r':
			runtime_dir = optarg;
			break;
		case 'i':
			if (!*optarg || strlen(optarg) >= IF_NAMESIZE) {
				fprintf(stderr, "ringnicd: --netdev %s: not an "
						"interface name\n", optarg);
				return 2;
			}
			snprintf(netdev->ifname, sizeof(netdev->ifname), "%s",
				 optarg);
			break;
		case 'a':
			if (netdev->naddrs == RN_MAX_ADDRESSES ||
			    rn_netdev_parse_address(optarg,
						    &netdev->addrs[netdev->naddrs])) {
				fprintf(stderr, "ringnicd: --address %s: %s\n", optarg,
					netdev->naddrs == RN_MAX_ADDRESSES ?
						"too many addresses" :
						"not an IPv4 or IPv6 address");
				return 2;
			}
			netdev->naddrs++;
			break;
		case 'f':
			foreground = true;
			break;
		case 'R':
			realtime = false;
			break;
		case 'p': {
			char *end;
			unsigned long us = strtoul(optarg, &end, 10);

			if (*end || end == optarg || us > 1000000) {
				usage(stderr);
				return 2;
			}
			d.idle_poll_ns = us * 1000;
			poll_set = true;
			break;
		}
		case 'e': {
			char *end;
			unsigned long n = strtoul(optarg, &end, 10);

			if (*end || end == optarg || !n || n > RN_MAX_ENGINES) {
				fprintf(stderr, "ringnicd: --engines %s: not a "
						"number from 1 to %d\n", optarg,
					RN_MAX_ENGINES);
				return 2;
			}
			dev->nengines = (uint32_t)n;
			break;
		}
		case 'd':
			debug = true;
			break;
		case 'L':
			dev->local_on_wire = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("ringnicd %s\n", RN_FW_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || !valid_name(dev->name)) {
		usage(stderr);
		return 2;
	}
	if (set_runtime_dir(dev, runtime_dir)) {
		fprintf(stderr, "ringnicd: the runtime dir path must be shorter "
				"than %d bytes\n", RN_RUNTIME_DIR_MAX);
		return 2;
	}

	rn_log_init(true, debug);
	if (!foreground && daemonize(&ready_fd)) {
		perror("ringnicd: cannot go to the background");
		return 1;
	}
	if (!poll_set)
		d.idle_poll_ns = sysconf(_SC_NPROCESSORS_ONLN) > 2 ?
					   RN_IDLE_POLL_NS : RN_IDLE_POLL_SMALL_NS;
	if (!dev->nengines)
		dev->nengines = default_engines();
	if (realtime)
		go_realtime(&d);
	device_identity(dev);
	ret = setup(dev);
	if (ret) {
		report_ready(&ready_fd, 1);
		teardown(dev);
		return 1;
	}
	ret = rn_engine_threads_start(dev);
	if (ret) {
		rn_err("cannot start the engine threads: %s\n", strerror(ret));
		report_ready(&ready_fd, 1);
		teardown(dev);
		return 1;
	}
	/* Holding the gate: the log goes to syslog under the engine's feet. */
	rn_gate_hold(dev);
	write_pidfile(dev);
	report_ready(&ready_fd, 0);
	rn_gate_release(dev);
	rn_info("%s ready in %s, %u engine%s\n", dev->name, d.runtime_dir,
		dev->nengines, dev->nengines > 1 ? "s" : "");
	run(dev);
	rn_engine_threads_stop(dev);
	teardown(dev);
	return 0;
}
