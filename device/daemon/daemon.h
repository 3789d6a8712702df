/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * daemon/: the process around the device: main and the control thread's
 * loop, the engines' threads and their loop, what they hand the control
 * thread (relay.c), the control socket, the kernel device (kernel mode),
 * the netdev the port is bound to, and the published sysfs-style tree.
 */
#ifndef RN_DAEMON_H
#define RN_DAEMON_H

#include "verbs/verbs.h"
#include "wire/wire.h"

/* The netdev the device was asked to use (--netdev, --address). */
#define RN_MAX_ADDRESSES RN_GID_TABLE_LEN
struct rn_netdev_opts {
	char ifname[IF_NAMESIZE]; /* "": the default route's interface */
	uint32_t naddrs; /* 0: every address of the interface */
	union ibv_gid addrs[RN_MAX_ADDRESSES];
};

#define RN_RUNTIME_DIR_MAX 96

/* Connections to the control socket in kernel mode (captures, ringnic-fault). */
#define RN_KERNEL_MODE_SOCKETS 64

/* How often a GID's socket that could not be bound is tried again. */
#define RN_GID_RETRY_NS 1000000000ull

/*
 * The process around the device: its paths, its descriptors other than
 * the device's, and its event loop.  Like the device, it is the code's
 * that has the gate (engine/gate.c): the control thread's (main.c) or the
 * engine thread's (engine_thread.c).
 */
/*
 * What the engines' threads hand to the control thread (relay.c): QP1's
 * datagrams, and the news that the counters changed.
 */
#define RN_RELAY_MADS 64
#define RN_RELAY_MAD_MAX 256
struct rn_relay_mad {
	struct rn_wire_gsi gsi;
	uint8_t mad[RN_RELAY_MAD_MAX];
};
struct rn_relay {
	int fd; /* eventfd in the control thread's epoll */
	rn_wire_gsi_fn gsi; /* who takes QP1's datagrams, on the control thread */
	pthread_mutex_t lock; /* the engine adds, the control thread takes */
	struct rn_relay_mad mads[RN_RELAY_MADS]; /* under lock */
	unsigned int nmads; /* under lock */
	struct rn_relay_mad taken[RN_RELAY_MADS]; /* the control thread's */
	bool counters; /* set by the engine, taken by the control thread */
};

struct rn_daemon {
	struct rn_device dev;
	pthread_t *engine_threads; /* one per engine */
	uint32_t nthreads; /* started */
	char uverbs_name[IBV_SYSFS_NAME_MAX];
	/* The control socket path must fit in sun_path (108 bytes): that
	 * bounds the runtime dir, and so every path below.
	 */
	char runtime_dir[RN_RUNTIME_DIR_MAX];
	char sysfs_root[RN_RUNTIME_DIR_MAX + 8];
	char ctl_path[108];
	char lock_path[RN_RUNTIME_DIR_MAX + IBV_SYSFS_NAME_MAX + 8];
	bool published;

	int listen_fd;
	struct rn_watch kdev_watch;
	int signal_fd;
	int lock_fd;
	bool locked; /* we hold lock_path: the name is ours in runtime_dir */
	bool listening; /* ctl_path is our socket */
	uint32_t sockets; /* clients connected to it */
	struct rn_watch listen_watch;
	struct rn_watch signal_watch;
	struct rn_netdev_opts netdev_opts;
	struct rn_watch netlink_watch;
	void *netlink; /* struct nl_sock * for link and address changes */
	int netdev_timer_fd; /* kernel mode: re-reads of the kernel's GIDs */
	struct rn_watch netdev_timer_watch;
	uint32_t kernel_rereads; /* how many of them are still due */
	struct rn_timer gid_retry; /* sockets that could not be bound: again */
	bool kernel_no_gid; /* what the stub was last told (rn_kdev_port) */
	bool stop;
	bool realtime; /* the control thread has SCHED_FIFO: the engine too */
	bool engine_yields; /* ... at the engine's priority (main.c) */
	uint64_t idle_poll_ns; /* polling after the last work, then sleep */
	struct rn_timer counters_timer; /* the counter files are due */
	/* What engines/K/hw_counters say: nengines rows of RN_CNT_MAX. */
	uint64_t *engines_published;
	bool kernel_no_engines; /* the stub refused them: an older one */
	bool engines_due; /* publish every engine's, changed or not */
	uint64_t counters_next; /* not rewritten before then */
	struct rn_relay relay;
	struct rn_watch relay_watch;
};

static inline struct rn_daemon *rn_daemon_of(struct rn_device *dev)
{
	return rn_container_of(dev, struct rn_daemon, dev);
}

static inline const struct rn_daemon *rn_daemon_of_const(const struct rn_device *dev)
{
	return rn_container_of(dev, const struct rn_daemon, dev);
}

/* engine_thread.c; the threads' SCHED_FIFO priorities (main.c says why) */
#define RN_ENGINE_PRIORITY 1
#define RN_CONTROL_PRIORITY 2
int rn_go_realtime(int priority);
int rn_engine_threads_start(struct rn_device *dev);
void rn_engine_threads_stop(struct rn_device *dev);

/* relay.c */
int rn_relay_init(struct rn_device *dev, rn_wire_gsi_fn fn);
void rn_relay_counters(struct rn_device *dev);
void rn_relay_readable(struct rn_device *dev);
void rn_relay_close(struct rn_device *dev);

/* netdev.c: the interface the port is bound to, through rtnetlink */
int rn_netdev_parse_address(const char *text, union ibv_gid *gid);
int rn_netdev_start(struct rn_device *dev);
int rn_netdev_fd(struct rn_device *dev);
void rn_netdev_readable(struct rn_device *dev);
void rn_netdev_timer(struct rn_device *dev);
void rn_netdev_stop(struct rn_device *dev);

/* publish.c: the sysfs-style tree and the /dev node */
int rn_counters_init(struct rn_device *dev);
int rn_publish(struct rn_device *dev);
void rn_unpublish(struct rn_device *dev);
int rn_publish_port(struct rn_device *dev);
void rn_publish_counters(struct rn_device *dev);

/* control.c: the control socket */
int rn_control_listen(struct rn_device *dev);
void rn_control_accept(struct rn_device *dev);
void rn_control_readable(struct rn_client *client);
void rn_client_destroy(struct rn_client *client);

/* nldev.c: RDMA netlink on a control connection (kernel-abi/ringnic-ctl.h) */
int rn_nldev_start(struct rn_client *client, uint32_t dev_index);
/* One request datagram: its answer queued and sent as far as it goes. */
bool rn_nldev_request(struct rn_client *client, const void *buf, size_t len);
/* Sends what the socket takes; false if the connection failed. */
bool rn_nldev_flush(struct rn_client *client);
/* Whether part of an answer waits for the socket. */
bool rn_nldev_pending(const struct rn_client *client);
void rn_nldev_stop(struct rn_client *client);

/* kdev.c: kernel mode */
bool rn_kdev_present(const char *name);
int rn_kdev_attach(struct rn_device *dev);
bool rn_kdev_read_gids(struct rn_device *dev);
void rn_kdev_readable(struct rn_device *dev);
void rn_kdev_gsi_recv(struct rn_device *dev, const struct rn_wire_gsi *gsi);
int rn_kdev_counters(struct rn_device *dev, const uint64_t *counters);
int rn_kdev_engine_counters(struct rn_device *dev, uint32_t engine,
			    const uint64_t *counters);
int rn_kdev_port(struct rn_device *dev, bool no_gid);

#endif
