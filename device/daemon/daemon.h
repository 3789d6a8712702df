/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * daemon/: the process around the device: main and its event loop, the
 * control socket, the kernel device (kernel mode), the netdev the port is
 * bound to, and the published sysfs-style tree.
 */
#ifndef RN_DAEMON_H
#define RN_DAEMON_H

#include "verbs/verbs.h"
#include "wire/wire.h"

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

/* kdev.c: kernel mode */
bool rn_kdev_present(const char *name);
int rn_kdev_attach(struct rn_device *dev);
bool rn_kdev_read_gids(struct rn_device *dev);
void rn_kdev_readable(struct rn_device *dev);
void rn_kdev_gsi_recv(struct rn_device *dev, const struct rn_wire_gsi *gsi);
int rn_kdev_counters(struct rn_device *dev);

#endif
