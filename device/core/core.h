/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * core/: the device and what every layer above reads and charges: its
 * clients and their processes and address spaces (process.c, memory.c,
 * guard.c), the port and its GIDs (port.c), shared memory, limits and
 * async events (device.c).
 */
#ifndef RN_CORE_H
#define RN_CORE_H

#include "core/types.h"

/* port.c */
/* One more of the QP's own counts, which its control block shows. */
void rn_qp_count(struct rn_qp *qp, enum rn_qp_count i);
void rn_port_init(struct rn_device *dev);
enum ibv_mtu rn_port_mtu_of(uint32_t netdev_mtu);
bool rn_port_no_gid(const struct rn_device *dev);
enum ibv_port_state rn_port_state(const struct rn_device *dev);
unsigned int rn_port_set_link(struct rn_device *dev, const struct rn_link *link);
unsigned int rn_port_set_gids(struct rn_device *dev, const union ibv_gid *addrs,
			      uint32_t naddrs);
void rn_port_announce(struct rn_device *dev, unsigned int changes,
		      enum ibv_port_state was);
bool rn_port_gid_valid(const struct rn_device *dev, uint32_t index);
void rn_port_gid_table(const struct rn_device *dev, union ibv_gid *table);
bool rn_port_gid_nameable(const struct rn_device *dev, uint32_t index);
uint32_t rn_port_gid_mask(const struct rn_device *dev);
int rn_port_gid_index(const struct rn_device *dev, const uint8_t *gid);
int rn_port_address_index(const struct rn_device *dev, const uint8_t *gid);
int rn_port_gid_first(const struct rn_device *dev);
void rn_port_gid_hold(struct rn_device *dev, int index);
void rn_port_gid_put(struct rn_device *dev, int index);
uint32_t rn_port_mtu_bytes(const struct rn_device *dev);
void rn_port_query(const struct rn_device *dev, struct rn_port_attr *attr);
const char *rn_counter_name(enum rn_counter c);

/* guard.c: noticing registered memory being unmapped or moved */
int rn_guard_open(struct rn_client *client, int uffd);
void rn_guard_close(struct rn_client *client);
int rn_guard_mr(struct rn_mr *mr);
void rn_unguard_mr(struct rn_mr *mr);
void rn_guard_readable(struct rn_client *client);

/* process.c: the client's process and address space */
int rn_client_attach(struct rn_client *client);
void rn_client_detach(struct rn_client *client);
bool rn_client_mapped(const struct rn_client *client, uint64_t addr,
		      uint64_t len, bool writable);
bool rn_client_confirm(struct rn_client *client, pid_t sender);

/* device.c: the device, a client, what they cost, async events */
int rn_device_init(struct rn_device *dev, uint64_t guid);
void rn_client_init(struct rn_client *client, struct rn_device *dev, pid_t pid,
		    uid_t uid);
/* A context with no member yet, and a client becoming one. */
struct rn_context *rn_context_new(struct rn_device *dev);
void rn_context_join(struct rn_context *ctx, struct rn_client *client);
int rn_charge(struct rn_client *client, uint64_t bytes);
void rn_uncharge(struct rn_client *client, uint64_t bytes);
void *rn_shared_alloc(size_t size, int *memfd);
void rn_async_event(struct rn_client *client, uint32_t handle,
		    uint64_t user_handle, uint32_t type);
/* An event for a kernel context: the kernel delivers it (kernel mode). */
void rn_kdev_event(struct rn_client *client, uint32_t handle, uint32_t event);

#endif
