/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The private provider ABI of libibverbs, declared here because Debian
 * ships no rdma-core internal headers: what libibverbs.so.1 exports with
 * symbol version IBVERBS_PRIVATE_<PABI> and the structures it shares with
 * a provider.  Written from libibverbs/driver.h of each rdma-core release
 * named below (x86-64 LP64); every size and offset ringnic relies on is
 * asserted at the end, so a mismatch breaks the build instead of
 * corrupting memory.
 *
 * RN_RDMA_CORE is the major version of the rdma-core whose libibverbs the
 * provider is built against (CMake reads it from libibverbs.pc,
 * cmake/RingnicIbverbsAbi.cmake); RN_IBVERBS_PABI is the private ABI CMake
 * chose for it, checked against this file.  rdma-core keeps the PABI
 * number only for its own providers, built with libibverbs: it changed
 * verbs_context_ops within PABI 59 (rdma-core 62), so the layouts below
 * follow the release, not the PABI.  scripts/pabi-check compares this file
 * with driver.h of every release.
 *
 *   rdma-core  PABI  verbs_context_ops
 *   44 - 56    34    76 slots
 *   57 - 58    57    76 (ibv_cmd_get_context takes an fd array)
 *   59 - 61    59    79 (+ alloc_dmah, dealloc_dmah, reg_mr_ex)
 *   62 - 63    59    81 (+ dm_export_dmabuf_fd, query_port_speed)
 *   64         64    83 (+ alloc_buf, free_buf)
 *   65         65    93 (+ the ten completion counter verbs)
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

#if !defined(RN_RDMA_CORE) || !defined(RN_IBVERBS_PABI)
#error "RN_RDMA_CORE and RN_IBVERBS_PABI come from the build (CMakeLists.txt)"
#elif RN_RDMA_CORE < 44 || RN_RDMA_CORE > 65
#error "no declaration of the private ABI of this rdma-core's libibverbs"
#elif RN_IBVERBS_PABI != (RN_RDMA_CORE >= 65 ? 65 : RN_RDMA_CORE >= 64 ? 64 : \
			  RN_RDMA_CORE >= 59 ? 59 : RN_RDMA_CORE >= 57 ? 57 : 34)
#error "RN_IBVERBS_PABI is not the private ABI of this rdma-core"
#endif

/*
 * RN_BY_LAYOUT(a, b, c, d, e): the value for the layout of
 * verbs_context_ops of this build: rdma-core 44-58, 59-61, 62-63, 64, 65.
 */
#if RN_RDMA_CORE >= 65
#define RN_BY_LAYOUT(a, b, c, d, e) (e)
#elif RN_RDMA_CORE >= 64
#define RN_BY_LAYOUT(a, b, c, d, e) (d)
#elif RN_RDMA_CORE >= 62
#define RN_BY_LAYOUT(a, b, c, d, e) (c)
#elif RN_RDMA_CORE >= 59
#define RN_BY_LAYOUT(a, b, c, d, e) (b)
#else
#define RN_BY_LAYOUT(a, b, c, d, e) (a)
#endif

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
	RN_IBV_MR_TYPE_IMPORTED_MR = 2,
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

/* An XRC domain: ibv_close_xrcd() and the kernel's commands read handle. */
struct verbs_xrcd {
	struct ibv_xrcd xrcd;
	uint32_t comp_mask;
	uint32_t handle;
};

struct verbs_qp {
	union {
		struct ibv_qp qp;
		struct ibv_qp_ex qp_ex;
	};
	uint32_t comp_mask;
	struct verbs_xrcd *xrcd;
};

/* An SRQ as libibverbs' XRC code sees it. */
struct verbs_srq {
	struct ibv_srq srq;
	enum ibv_srq_type srq_type;
	struct verbs_xrcd *xrcd;
	struct ibv_cq *cq;
	uint32_t srq_num;
};

struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list,
			 uint32_t num_sges);
#if RN_RDMA_CORE >= 64
	void *alloc_buf;
#endif
	void *alloc_dm;
#if RN_RDMA_CORE >= 59
	void *alloc_dmah;
#endif
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	void *alloc_null_mr;
	void *alloc_parent_domain;
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	void *alloc_td;
	void (*async_event)(struct ibv_context *context,
			    struct ibv_async_event *event);
	void *attach_counters_point_flow;
	void *attach_mcast;
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw,
		       struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
#if RN_RDMA_CORE >= 65
	void *create_comp_cntr;
#endif
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
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *attr);
	void *create_wq;
#if RN_RDMA_CORE >= 59
	void *dealloc_dmah;
#endif
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	void *dealloc_td;
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
#if RN_RDMA_CORE >= 65
	void *destroy_comp_cntr;
#endif
	void *destroy_counters;
	int (*destroy_cq)(struct ibv_cq *cq);
	void *destroy_flow;
	void *destroy_flow_action;
	int (*destroy_qp)(struct ibv_qp *qp);
	void *destroy_rwq_ind_table;
	int (*destroy_srq)(struct ibv_srq *srq);
	void *destroy_wq;
	void *detach_mcast;
#if RN_RDMA_CORE >= 62
	void *dm_export_dmabuf_fd;
#endif
#if RN_RDMA_CORE >= 64
	void *free_buf;
#endif
	void (*free_context)(struct ibv_context *context);
	void *free_dm;
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	void *import_dm;
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context,
				    uint32_t pd_handle);
#if RN_RDMA_CORE >= 65
	void *inc_comp_cntr;
	void *inc_err_comp_cntr;
#endif
	void *modify_cq;
	void *modify_flow_action_esp;
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			 int attr_mask);
	void *modify_qp_rate_limit;
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr,
			  int attr_mask);
	void *modify_wq;
	struct ibv_qp *(*open_qp)(struct ibv_context *context,
				  struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	void *post_srq_ops;
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			     struct ibv_recv_wr **bad_wr);
#if RN_RDMA_CORE >= 65
	void *qp_attach_comp_cntr;
	void *query_comp_cntr_caps;
#endif
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr,
			       size_t attr_size);
	void *query_ece;
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
#if RN_RDMA_CORE >= 62
	void *query_port_speed;
#endif
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr,
			int attr_mask, struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	void *query_rt_values;
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *attr);
#if RN_RDMA_CORE >= 65
	void *read_comp_cntr;
#endif
	void *read_counters;
#if RN_RDMA_CORE >= 65
	void *read_err_comp_cntr;
#endif
	void *reg_dm_mr;
	void *reg_dmabuf_mr;
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
#if RN_RDMA_CORE >= 59
	void *reg_mr_ex;
#endif
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd,
			void *addr, size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
#if RN_RDMA_CORE >= 65
	void *set_comp_cntr;
#endif
	void *set_ece;
#if RN_RDMA_CORE >= 65
	void *set_err_comp_cntr;
#endif
	void *unimport_dm;
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/*
 * Exported by libibverbs.so.1 with version IBVERBS_PRIVATE_<PABI>; the
 * register function carries the PABI in its name, as the file name of the
 * provider (libringnic-rdmav<PABI>.so) does.
 */
#define RN_PASTE2(a, b) a##b
#define RN_PASTE(a, b) RN_PASTE2(a, b)
#define rn_verbs_register_driver RN_PASTE(verbs_register_driver_, RN_IBVERBS_PABI)
void rn_verbs_register_driver(const struct verbs_device_ops *ops);
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
RN_IBV_CMD(ibv_query_port, ib_uverbs_query_port);
RN_IBV_CMD(ibv_create_xsrq, ib_uverbs_create_xsrq);
RN_IBV_CMD(ibv_modify_srq, ib_uverbs_modify_srq);
RN_IBV_CMD(ibv_query_srq, ib_uverbs_query_srq);
RN_IBV_CMD(ibv_open_xrcd, ib_uverbs_open_xrcd);
RN_IBV_CMD(ibv_open_qp, ib_uverbs_open_qp);
RN_IBV_CMD(ibv_alloc_mw, ib_uverbs_alloc_mw);
RN_IBV_CMD(ibv_rereg_mr, ib_uverbs_rereg_mr);
RN_IBV_CMD(ibv_resize_cq, ib_uverbs_resize_cq);

#if RN_RDMA_CORE >= 57
/* 57 added the file descriptors the context is created with (none here). */
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ibv_fd_arr *fd_arr,
			struct ib_uverbs_get_context_resp *resp, size_t resp_size);
#define rn_ibv_cmd_get_context(ctx, cmd, cmd_size, resp, resp_size)            \
	ibv_cmd_get_context(ctx, cmd, cmd_size, NULL, resp, resp_size)
#else
int ibv_cmd_get_context(struct verbs_context *context,
			struct ibv_get_context *cmd, size_t cmd_size,
			struct ib_uverbs_get_context_resp *resp, size_t resp_size);
#define rn_ibv_cmd_get_context ibv_cmd_get_context
#endif
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
int ibv_cmd_query_port(struct ibv_context *context, uint8_t port_num,
		       struct ibv_port_attr *port_attr,
		       struct ibv_query_port *cmd, size_t cmd_size);
/* No driver data in: the kernel resolves the address itself. */
int ibv_cmd_create_ah(struct ibv_pd *pd, struct ibv_ah *ah,
		      struct ibv_ah_attr *attr,
		      struct ib_uverbs_create_ah_resp *resp, size_t resp_size);
int ibv_cmd_destroy_ah(struct ibv_ah *ah);
/* Basic and XRC SRQs alike (attr_ex->comp_mask has at least the PD). */
int ibv_cmd_create_srq_ex(struct ibv_context *context, struct verbs_srq *srq,
			  struct ibv_srq_init_attr_ex *attr_ex,
			  struct ibv_create_xsrq *cmd, size_t cmd_size,
			  struct ib_uverbs_create_srq_resp *resp,
			  size_t resp_size);
/* No response: see struct rn_kdev_resp_at. */
int ibv_cmd_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		       int srq_attr_mask, struct ibv_modify_srq *cmd,
		       size_t cmd_size);
int ibv_cmd_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
		      struct ibv_query_srq *cmd, size_t cmd_size);
int ibv_cmd_destroy_srq(struct ibv_srq *srq);
/* attr->comp_mask must have both IBV_XRCD_INIT_ATTR_FD and _OFLAGS. */
int ibv_cmd_open_xrcd(struct ibv_context *context, struct verbs_xrcd *xrcd,
		      int vxrcd_size, struct ibv_xrcd_init_attr *attr,
		      struct ibv_open_xrcd *cmd, size_t cmd_size,
		      struct ib_uverbs_open_xrcd_resp *resp, size_t resp_size);
int ibv_cmd_close_xrcd(struct verbs_xrcd *xrcd);
int ibv_cmd_open_qp(struct ibv_context *context, struct verbs_qp *qp,
		    int vqp_sz, struct ibv_qp_open_attr *attr,
		    struct ibv_open_qp *cmd, size_t cmd_size,
		    struct ib_uverbs_create_qp_resp *resp, size_t resp_size);
int ibv_cmd_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type,
		     struct ibv_mw *mw, struct ibv_alloc_mw *cmd,
		     size_t cmd_size, struct ib_uverbs_alloc_mw_resp *resp,
		     size_t resp_size);
int ibv_cmd_dealloc_mw(struct ibv_mw *mw);
int ibv_cmd_rereg_mr(struct verbs_mr *vmr, uint32_t flags, void *addr,
		     size_t length, uint64_t hca_va, int access,
		     struct ibv_pd *pd, struct ibv_rereg_mr *cmd,
		     size_t cmd_sz, struct ib_uverbs_rereg_mr_resp *resp,
		     size_t resp_sz);
int ibv_cmd_resize_cq(struct ibv_cq *cq, int cqe, struct ibv_resize_cq *cmd,
		      size_t cmd_size, struct ib_uverbs_resize_cq_resp *resp,
		      size_t resp_size);

/*
 * Sizes and offsets on x86-64, read from each release's headers.  Public
 * structs grew within PABI 34 too: rdma-core 45 added wr_flush to
 * ibv_qp_ex (so verbs_qp.comp_mask, which libibverbs reads, moved), 49
 * added active_speed_ex to ibv_port_attr.
 */
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
#define RN_IBV_QP_EX_SIZE (RN_RDMA_CORE >= 45 ? 360 : 352)
static_assert(sizeof(struct ibv_qp_ex) == RN_IBV_QP_EX_SIZE, "ibv_qp_ex");
static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex.qp_base");
static_assert(sizeof(struct verbs_qp) == RN_IBV_QP_EX_SIZE + 16, "verbs_qp");
static_assert(offsetof(struct verbs_qp, comp_mask) == RN_IBV_QP_EX_SIZE, "verbs_qp.comp_mask");
static_assert(offsetof(struct verbs_qp, xrcd) == RN_IBV_QP_EX_SIZE + 8, "verbs_qp.xrcd");
static_assert(sizeof(struct ibv_xrcd) == 8, "ibv_xrcd");
static_assert(sizeof(struct verbs_xrcd) == 16, "verbs_xrcd");
static_assert(offsetof(struct verbs_xrcd, handle) == 12, "verbs_xrcd.handle");
static_assert(sizeof(struct ibv_srq) == 128, "ibv_srq");
static_assert(sizeof(struct verbs_srq) == 160, "verbs_srq");
static_assert(offsetof(struct verbs_srq, srq_num) == 152, "verbs_srq.srq_num");
static_assert(sizeof(struct ibv_cq_ex) == 288, "ibv_cq_ex");
static_assert(sizeof(struct ibv_port_attr) == (RN_RDMA_CORE >= 49 ? 56 : 52),
	      "ibv_port_attr");
/* verbs_context grows at its front: the provider allocates it. */
static_assert(sizeof(struct verbs_context) == RN_BY_LAYOUT(648, 672, 680, 696, 696),
	      "verbs_context");
static_assert(offsetof(struct verbs_context, context) ==
	      sizeof(struct verbs_context) - sizeof(struct ibv_context),
	      "verbs_context.context");

/*
 * verbs_context_ops, in pointers: the size and the slot of every typed
 * member, for rdma-core 44-58, 59-61, 62-63, 64, 65 (see RN_BY_LAYOUT).
 */
#define RN_OPS_SLOT(name, a, b, c, d, e)                                       \
	static_assert(offsetof(struct verbs_context_ops, name) ==              \
			      8 * RN_BY_LAYOUT(a, b, c, d, e),                 \
		      "verbs_context_ops." #name)
static_assert(sizeof(struct verbs_context_ops) == 8 * RN_BY_LAYOUT(76, 79, 81, 83, 93),
	      "verbs_context_ops");
RN_OPS_SLOT(advise_mr, 0, 0, 0, 0, 0);
RN_OPS_SLOT(alloc_mw, 2, 3, 3, 4, 4);
RN_OPS_SLOT(alloc_pd, 5, 6, 6, 7, 7);
RN_OPS_SLOT(async_event, 7, 8, 8, 9, 9);
RN_OPS_SLOT(bind_mw, 10, 11, 11, 12, 12);
RN_OPS_SLOT(close_xrcd, 11, 12, 12, 13, 13);
RN_OPS_SLOT(cq_event, 12, 13, 13, 14, 14);
RN_OPS_SLOT(create_ah, 13, 14, 14, 15, 15);
RN_OPS_SLOT(create_cq, 15, 16, 16, 17, 18);
RN_OPS_SLOT(create_cq_ex, 16, 17, 17, 18, 19);
RN_OPS_SLOT(create_qp, 19, 20, 20, 21, 22);
RN_OPS_SLOT(create_qp_ex, 20, 21, 21, 22, 23);
RN_OPS_SLOT(create_srq, 22, 23, 23, 24, 25);
RN_OPS_SLOT(create_srq_ex, 23, 24, 24, 25, 26);
RN_OPS_SLOT(dealloc_mw, 25, 27, 27, 28, 29);
RN_OPS_SLOT(dealloc_pd, 26, 28, 28, 29, 30);
RN_OPS_SLOT(dereg_mr, 28, 30, 30, 31, 32);
RN_OPS_SLOT(destroy_ah, 29, 31, 31, 32, 33);
RN_OPS_SLOT(destroy_cq, 31, 33, 33, 34, 36);
RN_OPS_SLOT(destroy_qp, 34, 36, 36, 37, 39);
RN_OPS_SLOT(destroy_srq, 36, 38, 38, 39, 41);
RN_OPS_SLOT(free_context, 39, 41, 42, 44, 46);
RN_OPS_SLOT(get_srq_num, 41, 43, 44, 46, 48);
RN_OPS_SLOT(import_mr, 43, 45, 46, 48, 50);
RN_OPS_SLOT(import_pd, 44, 46, 47, 49, 51);
RN_OPS_SLOT(modify_qp, 47, 49, 50, 52, 56);
RN_OPS_SLOT(modify_srq, 49, 51, 52, 54, 58);
RN_OPS_SLOT(open_qp, 51, 53, 54, 56, 60);
RN_OPS_SLOT(open_xrcd, 52, 54, 55, 57, 61);
RN_OPS_SLOT(poll_cq, 53, 55, 56, 58, 62);
RN_OPS_SLOT(post_recv, 54, 56, 57, 59, 63);
RN_OPS_SLOT(post_send, 55, 57, 58, 60, 64);
RN_OPS_SLOT(post_srq_recv, 57, 59, 60, 62, 66);
RN_OPS_SLOT(query_device_ex, 58, 60, 61, 63, 69);
RN_OPS_SLOT(query_port, 60, 62, 63, 65, 71);
RN_OPS_SLOT(query_qp, 61, 63, 65, 67, 73);
RN_OPS_SLOT(query_qp_data_in_order, 62, 64, 66, 68, 74);
RN_OPS_SLOT(query_srq, 64, 66, 68, 70, 76);
RN_OPS_SLOT(reg_mr, 68, 70, 72, 74, 82);
RN_OPS_SLOT(req_notify_cq, 69, 72, 74, 76, 84);
RN_OPS_SLOT(rereg_mr, 70, 73, 75, 77, 85);
RN_OPS_SLOT(resize_cq, 71, 74, 76, 78, 86);
RN_OPS_SLOT(unimport_mr, 74, 77, 79, 81, 91);
RN_OPS_SLOT(unimport_pd, 75, 78, 80, 82, 92);

/* The kernel requests and responses, as libibverbs sends and reads them. */
static_assert(sizeof(struct ibv_get_context) == 16, "ibv_get_context");
static_assert(sizeof(struct ibv_alloc_pd) == 16, "ibv_alloc_pd");
static_assert(sizeof(struct ibv_reg_mr) == 48, "ibv_reg_mr");
static_assert(sizeof(struct ibv_create_cq) == 40, "ibv_create_cq");
static_assert(sizeof(struct ibv_create_qp) == 64, "ibv_create_qp");
static_assert(sizeof(struct ibv_modify_qp) == 120, "ibv_modify_qp");
static_assert(sizeof(struct ibv_query_qp) == 24, "ibv_query_qp");
static_assert(sizeof(struct ibv_query_port) == 24, "ibv_query_port");
static_assert(sizeof(struct ibv_create_xsrq) == 56, "ibv_create_xsrq");
static_assert(sizeof(struct ibv_modify_srq) == 24, "ibv_modify_srq");
static_assert(sizeof(struct ibv_query_srq) == 24, "ibv_query_srq");
static_assert(sizeof(struct ibv_open_xrcd) == 24, "ibv_open_xrcd");
static_assert(sizeof(struct ibv_open_qp) == 40, "ibv_open_qp");
static_assert(sizeof(struct ibv_alloc_mw) == 24, "ibv_alloc_mw");
static_assert(sizeof(struct ibv_rereg_mr) == 56, "ibv_rereg_mr");
static_assert(sizeof(struct ibv_resize_cq) == 24, "ibv_resize_cq");
static_assert(sizeof(struct ib_uverbs_get_context_resp) == 8, "get_context resp");
static_assert(sizeof(struct ib_uverbs_alloc_pd_resp) == 4, "alloc_pd resp");
static_assert(sizeof(struct ib_uverbs_reg_mr_resp) == 12, "reg_mr resp");
static_assert(sizeof(struct ib_uverbs_create_cq_resp) == 8, "create_cq resp");
static_assert(sizeof(struct ib_uverbs_create_qp_resp) == 32, "create_qp resp");
static_assert(sizeof(struct ib_uverbs_create_ah_resp) == 4, "create_ah resp");
static_assert(sizeof(struct ib_uverbs_create_srq_resp) == 16, "create_srq resp");
static_assert(sizeof(struct ib_uverbs_open_xrcd_resp) == 4, "open_xrcd resp");
static_assert(sizeof(struct ib_uverbs_alloc_mw_resp) == 8, "alloc_mw resp");
static_assert(sizeof(struct ib_uverbs_rereg_mr_resp) == 8, "rereg_mr resp");
static_assert(sizeof(struct ib_uverbs_resize_cq_resp) == 8, "resize_cq resp");

#endif
