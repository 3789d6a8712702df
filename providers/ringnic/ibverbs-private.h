/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The private provider ABI of libibverbs (symbol version IBVERBS_PRIVATE_34,
 * rdma-core 44), declared here because Debian ships no rdma-core internal
 * headers.  Written from the layout of rdma-core v44.0 libibverbs/driver.h
 * (x86-64 LP64); every size and offset ringnic relies on is asserted below,
 * so a mismatch breaks the build instead of corrupting memory.
 *
 * Slots of struct verbs_context_ops that ringnic never fills are declared as
 * plain pointers: only their position matters, and libibverbs substitutes
 * its own EOPNOTSUPP stubs for every NULL slot.
 */
#ifndef RINGNIC_IBVERBS_PRIVATE_H
#define RINGNIC_IBVERBS_PRIVATE_H

#include <assert.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>
#include <infiniband/verbs.h>
#include <rdma/ib_user_verbs.h>

#define RN_IBVERBS_PABI_VERSION 34

/* Log levels of VERBS_LOG_LEVEL */
enum {
	RN_VERBS_LOG_NONE,
	RN_VERBS_LOG_ERR,
	RN_VERBS_LOG_WARN,
	RN_VERBS_LOG_INFO,
	RN_VERBS_LOG_DEBUG,
};

/* verbs_match_ent.kind */
enum {
	RN_VERBS_MATCH_SENTINEL = 0,
	RN_VERBS_MATCH_MODALIAS = 2,
};

struct verbs_match_ent {
	void *driver_data;
	union {
		const char *modalias;
		uint64_t driver_id;
	} u;
	uint16_t vendor;
	uint16_t device;
	uint8_t kind;
};

/* ccan's struct list_node */
struct rn_list_node {
	struct rn_list_node *next;
	struct rn_list_node *prev;
};

/* One RDMA device found in sysfs; owned by libibverbs. */
struct verbs_sysfs_dev {
	struct rn_list_node entry;
	void *provider_data;
	const struct verbs_match_ent *match;
	unsigned int flags;
	char sysfs_name[IBV_SYSFS_NAME_MAX];
	dev_t sysfs_cdev;
	char ibdev_name[IBV_SYSFS_NAME_MAX];
	char ibdev_path[IBV_SYSFS_PATH_MAX];
	char modalias[512];
	uint64_t node_guid;
	uint32_t driver_id;
	enum ibv_node_type node_type;
	int ibdev_idx;
	uint32_t num_ports;
	uint32_t abi_ver;
	struct timespec time_created;
};

struct verbs_device;

struct verbs_device_ops {
	const char *name;
	uint32_t match_min_abi_version;
	uint32_t match_max_abi_version;
	const struct verbs_match_ent *match_table;
	const struct verbs_device_ops **static_providers;
	bool (*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context *(*alloc_context)(struct ibv_device *device,
					       int cmd_fd, void *private_data);
	struct verbs_context *(*import_context)(struct ibv_device *device,
						int cmd_fd);
	struct verbs_device *(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void (*uninit_device)(struct verbs_device *device);
};

/* The provider's device embeds this first; libibverbs fills all but device. */
struct verbs_device {
	struct ibv_device device;
	const struct verbs_device_ops *ops;
	atomic_int refcount;
	struct rn_list_node entry;
	struct verbs_sysfs_dev *sysfs;
	uint64_t core_support;
};

/* enum ibv_mr_type */
enum {
	RN_IBV_MR_TYPE_MR = 0,
};

/* ibv_dereg_mr() reads mr_type and access from here. */
struct verbs_mr {
	struct ibv_mr ibv_mr;
	int mr_type;
	int access;
};

/* ibv_qp_to_qp_ex() returns &qp_ex when comp_mask has RN_VERBS_QP_EX. */
enum {
	RN_VERBS_QP_EX = 1 << 1,
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	void *xrcd;
};

struct verbs_context_ops {
	void *advise_mr;
	void *alloc_dm;
	void *alloc_mw;
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	void *attach_mcast;
	void *bind_mw;
	void *close_xrcd;
	void (*cq_event)(struct ibv_cq *cq);
	void *create_ah;
	void *create_counters;
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel,
				    int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *attr);
	void *create_flow;
	void *create_flow_action_esp;
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd,
				    struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *attr);
	void *create_rwq_ind_table;
	void *create_srq;
	void *create_srq_ex;
	void *create_wq;
	void *dealloc_mw;
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	void *destroy_ah;
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow;
	void *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	void *destroy_srq;
	void *destroy_wq;
	void *detach_mcast;
	void (*free_context)(struct ibv_context *context);
	void *free_dm;
	void *get_srq_num;
	void *import_dm;
	void *import_mr;
	void *import_pd;
	void *modify_cq;
	void *modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	void *modify_qp_rate_limit;
	void *modify_srq;
	void *modify_wq;
	void *open_qp;
	void *open_xrcd;
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	void *post_srq_ops;
	void *post_srq_recv;
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	void *query_qp_data_in_order;
	void *query_rt_values;
	void *query_srq;
	void *read_counters;
	void *reg_dm_mr;
	void *reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	void *rereg_mr;
	void *resize_cq;
	void *set_ece;
	void *unimport_dm;
	void *unimport_mr;
	void *unimport_pd;
};

/* Exported by libibverbs.so.1 with version IBVERBS_PRIVATE_34. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd,
				    size_t alloc_size,
				    struct verbs_context *context_offset,
				    uint32_t driver_id);
void verbs_uninit_context(struct verbs_context *context);
void verbs_set_ops(struct verbs_context *vctx,
		   const struct verbs_context_ops *ops);
void __verbs_log(struct verbs_context *ctx, uint32_t level, const char *fmt,
		 ...) __attribute__((format(printf, 3, 4)));

/*
 * The uverbs commands of kernel mode (kernel/).  libibverbs' command
 * structs are the kernel's command header followed by the kernel's request
 * (rdma/ib_user_verbs.h); driver data follows them immediately, as it
 * follows the kernel's responses.  Only their sizes matter here.
 */
#define RN_IBV_CMD(name, kabi)                                                 \
	struct name {                                                          \
		struct ib_uverbs_cmd_hdr hdr;                                  \
		struct kabi core;                                              \
	}
RN_IBV_CMD(ibv_get_context, ib_uverbs_get_context);
RN_IBV_CMD(ibv_alloc_pd, ib_uverbs_alloc_pd);
RN_IBV_CMD(ibv_reg_mr, ib_uverbs_reg_mr);
RN_IBV_CMD(ibv_create_cq, ib_uverbs_create_cq);
RN_IBV_CMD(ibv_create_qp, ib_uverbs_create_qp);
RN_IBV_CMD(ibv_modify_qp, ib_uverbs_modify_qp);
RN_IBV_CMD(ibv_query_qp, ib_uverbs_query_qp);

int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp, size_t resp_size);
int ibv_cmd_alloc_pd(struct ibv_context *context, struct ibv_pd *pd,
		     struct ibv_alloc_pd *cmd, size_t cmd_size,
		     struct ib_uverbs_alloc_pd_resp *resp, size_t resp_size);
int ibv_cmd_dealloc_pd(struct ibv_pd *pd);
int ibv_cmd_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
		   uint64_t hca_va, int access, struct verbs_mr *vmr,
		   struct ibv_reg_mr *cmd, size_t cmd_size,
		   struct ib_uverbs_reg_mr_resp *resp, size_t resp_size);
int ibv_cmd_dereg_mr(struct verbs_mr *vmr);
int ibv_cmd_create_cq(struct ibv_context *context, int cqe,
		      struct ibv_comp_channel *channel, int comp_vector,
		      struct ibv_cq *cq, struct ibv_create_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_create_cq_resp *resp,
		      size_t resp_size);
int ibv_cmd_destroy_cq(struct ibv_cq *cq);
int ibv_cmd_create_qp_ex(struct ibv_context *context, struct verbs_qp *qp,
			 struct ibv_qp_init_attr_ex *attr_ex,
			 struct ibv_create_qp *cmd, size_t cmd_size,
			 struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr,
		      int attr_mask, struct ibv_modify_qp *cmd, size_t cmd_size);
int ibv_cmd_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *qp_attr,
		     int attr_mask, struct ibv_qp_init_attr *qp_init_attr,
		     struct ibv_query_qp *cmd, size_t cmd_size);
int ibv_cmd_destroy_qp(struct ibv_qp *qp);

/* Sizes and offsets of rdma-core v44.0 on x86-64. */
static_assert(sizeof(void *) == 8, "the layouts below are LP64");
static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent");
static_assert(offsetof(struct verbs_match_ent, u) == 8, "verbs_match_ent.u");
static_assert(offsetof(struct verbs_match_ent, kind) == 20, "verbs_match_ent.kind");
static_assert(sizeof(struct verbs_sysfs_dev) == 992, "verbs_sysfs_dev");
static_assert(offsetof(struct verbs_sysfs_dev, match) == 24, "match");
static_assert(offsetof(struct verbs_sysfs_dev, sysfs_name) == 36, "sysfs_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_name) == 112, "ibdev_name");
static_assert(offsetof(struct verbs_sysfs_dev, ibdev_path) == 176, "ibdev_path");
static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops");
static_assert(offsetof(struct verbs_device_ops, match_min_abi_version) == 8, "abi min");
static_assert(offsetof(struct verbs_device_ops, match_table) == 16, "match_table");
static_assert(offsetof(struct verbs_device_ops, match_device) == 32, "match_device");
static_assert(offsetof(struct verbs_device_ops, alloc_context) == 40, "alloc_context");
static_assert(offsetof(struct verbs_device_ops, alloc_device) == 56, "alloc_device");
static_assert(offsetof(struct verbs_device_ops, uninit_device) == 64, "uninit_device");
static_assert(sizeof(struct ibv_device) == 664, "ibv_device");
static_assert(sizeof(struct verbs_device) == 712, "verbs_device");
static_assert(offsetof(struct verbs_device, sysfs) == 696, "verbs_device.sysfs");
static_assert(sizeof(struct ibv_mr) == 48, "ibv_mr");
static_assert(sizeof(struct verbs_mr) == 56, "verbs_mr");
static_assert(offsetof(struct verbs_mr, mr_type) == 48, "verbs_mr.mr_type");
static_assert(offsetof(struct verbs_mr, access) == 52, "verbs_mr.access");
static_assert(sizeof(struct ibv_qp) == 160, "ibv_qp");
static_assert(sizeof(struct ibv_qp_ex) == 352, "ibv_qp_ex");
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex.qp_base");
static_assert(sizeof(struct verbs_qp) == 368, "verbs_qp");
static_assert(offsetof(struct verbs_qp, comp_mask) == 352, "verbs_qp.comp_mask");
static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex");
static_assert(sizeof(struct verbs_context) == 648, "verbs_context");
static_assert(sizeof(struct verbs_context_ops) == 76 * 8, "verbs_context_ops");
static_assert(offsetof(struct verbs_context_ops, alloc_pd) == 40, "alloc_pd");
static_assert(offsetof(struct verbs_context_ops, async_event) == 56, "async_event");
static_assert(offsetof(struct verbs_context_ops, cq_event) == 96, "cq_event");
static_assert(offsetof(struct verbs_context_ops, create_cq) == 120, "create_cq");
static_assert(offsetof(struct verbs_context_ops, create_cq_ex) == 128, "create_cq_ex");
static_assert(offsetof(struct verbs_context_ops, create_qp) == 152, "create_qp");
static_assert(offsetof(struct verbs_context_ops, create_qp_ex) == 160, "create_qp_ex");
static_assert(offsetof(struct verbs_context_ops, dealloc_pd) == 208, "dealloc_pd");
static_assert(offsetof(struct verbs_context_ops, dereg_mr) == 224, "dereg_mr");
static_assert(offsetof(struct verbs_context_ops, destroy_cq) == 248, "destroy_cq");
static_assert(offsetof(struct verbs_context_ops, destroy_qp) == 272, "destroy_qp");
static_assert(offsetof(struct verbs_context_ops, free_context) == 312, "free_context");
static_assert(offsetof(struct verbs_context_ops, modify_qp) == 376, "modify_qp");
static_assert(offsetof(struct verbs_context_ops, poll_cq) == 424, "poll_cq");
static_assert(offsetof(struct verbs_context_ops, post_recv) == 432, "post_recv");
static_assert(offsetof(struct verbs_context_ops, post_send) == 440, "post_send");
static_assert(offsetof(struct verbs_context_ops, query_device_ex) == 464, "query_device_ex");
static_assert(offsetof(struct verbs_context_ops, query_port) == 480, "query_port");
static_assert(offsetof(struct verbs_context_ops, query_qp) == 488, "query_qp");
static_assert(offsetof(struct verbs_context_ops, reg_mr) == 544, "reg_mr");
static_assert(offsetof(struct verbs_context_ops, req_notify_cq) == 552, "req_notify_cq");
static_assert(offsetof(struct verbs_context_ops, unimport_pd) == 600, "unimport_pd");

/* The kernel requests and responses, as libibverbs sends and reads them. */
static_assert(sizeof(struct ibv_get_context) == 16, "ibv_get_context");
static_assert(sizeof(struct ibv_alloc_pd) == 16, "ibv_alloc_pd");
static_assert(sizeof(struct ibv_reg_mr) == 48, "ibv_reg_mr");
static_assert(sizeof(struct ibv_create_cq) == 40, "ibv_create_cq");
static_assert(sizeof(struct ibv_create_qp) == 64, "ibv_create_qp");
static_assert(sizeof(struct ibv_modify_qp) == 120, "ibv_modify_qp");
static_assert(sizeof(struct ibv_query_qp) == 24, "ibv_query_qp");
static_assert(sizeof(struct ib_uverbs_get_context_resp) == 8, "get_context resp");
static_assert(sizeof(struct ib_uverbs_alloc_pd_resp) == 4, "alloc_pd resp");
static_assert(sizeof(struct ib_uverbs_reg_mr_resp) == 12, "reg_mr resp");
static_assert(sizeof(struct ib_uverbs_create_cq_resp) == 8, "create_cq resp");
static_assert(sizeof(struct ib_uverbs_create_qp_resp) == 32, "create_qp resp");

#endif
