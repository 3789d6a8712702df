// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ringnic.ko: `rdma link add NAME type ringnic netdev DEV` registers an
 * ib_device with an Ethernet (RoCEv2) port on DEV; the core builds its GID
 * table from DEV's addresses.  The device answers verbs once a ringnicd has
 * attached to it (daemon.c); until then and after it leaves, its port is
 * down and opening a context fails with ENODEV.
 */
#include <linux/module.h>
#include <linux/netdevice.h>
#include <net/addrconf.h>
#include <rdma/ib_mad.h>
#include <rdma/rdma_netlink.h>

#include "ringnic.h"

/* The devices, and which ringnicd serves each: attach and detach. */
static DEFINE_MUTEX(rn_devices_lock);
static LIST_HEAD(rn_devices);

/*
 * engines/K/hw_counters/NAME in the device's directory: what engine K of
 * the attached ringnicd counted of the port's counters, as ringnicd's own
 * tree shows them in userspace mode.  Engine K's directories appear when
 * ringnicd first sends its counters and go when ringnicd detaches (under
 * rn_devices_lock); the values are read and written under rn_lock.
 */
struct rn_engine_stats {
	struct kobject hw; /* hw_counters/; its release frees this */
	struct kobject *dir; /* K/, hw's parent */
	u64 values[RN_CNT_MAX];
};

static struct kobj_attribute rn_engine_attrs[RN_CNT_MAX];
static struct attribute *rn_engine_attr_list[RN_CNT_MAX + 1];
static const struct attribute_group rn_engine_group = {
	.attrs = rn_engine_attr_list,
};
static const struct attribute_group *rn_engine_groups[] = {
	&rn_engine_group, NULL
};

static ssize_t rn_engine_counter_show(struct kobject *kobj,
				      struct kobj_attribute *attr, char *buf)
{
	struct rn_engine_stats *s = container_of(kobj, struct rn_engine_stats, hw);
	u64 v;

	spin_lock(&rn_lock);
	v = s->values[attr - rn_engine_attrs];
	spin_unlock(&rn_lock);
	return sysfs_emit(buf, "%llu\n", v);
}

static void rn_engine_release(struct kobject *kobj)
{
	kfree(container_of(kobj, struct rn_engine_stats, hw));
}

/* Not const: kobject_init_and_add takes it so before Linux 6.2. */
static struct kobj_type rn_engine_ktype = {
	.release = rn_engine_release,
	.sysfs_ops = &kobj_sysfs_ops,
	.default_groups = rn_engine_groups,
};

/* Engine k's directories, made the first time.  Under rn_devices_lock. */
static struct rn_engine_stats *rn_engine_stats(struct rn_dev *dev, u32 k)
{
	struct rn_engine_stats *s = dev->engines[k];
	char name[16];

	if (s)
		return s;
	if (!dev->engines_dir)
		dev->engines_dir = kobject_create_and_add("engines",
							  &dev->ibdev.dev.kobj);
	if (!dev->engines_dir)
		return NULL;
	s = kzalloc(sizeof(*s), GFP_KERNEL);
	if (!s)
		return NULL;
	snprintf(name, sizeof(name), "%u", k);
	s->dir = kobject_create_and_add(name, dev->engines_dir);
	if (!s->dir) {
		kfree(s);
		return NULL;
	}
	if (kobject_init_and_add(&s->hw, &rn_engine_ktype, s->dir,
				 "hw_counters")) {
		struct kobject *dir = s->dir;

		kobject_put(&s->hw); /* frees s */
		kobject_put(dir);
		return NULL;
	}
	dev->engines[k] = s;
	return s;
}

/* ringnicd left: its engines' directories go.  Under rn_devices_lock. */
static void rn_engines_remove(struct rn_dev *dev)
{
	u32 k;

	for (k = 0; k < RN_KDEV_ENGINES_MAX; k++) {
		struct rn_engine_stats *s = dev->engines[k];
		struct kobject *dir;

		if (!s)
			continue;
		dev->engines[k] = NULL;
		dir = s->dir;
		/* Returns once no reader is in rn_engine_counter_show. */
		kobject_put(&s->hw);
		kobject_put(dir);
	}
	kobject_put(dev->engines_dir);
	dev->engines_dir = NULL;
}

/* What engine k of ringnicd d counted (struct rn_kdev_engine_counters). */
int rn_dev_engine_counters(struct rn_daemon *d, u32 k, const u64 *values)
{
	struct rn_engine_stats *s = NULL;
	struct rn_dev *dev;
	int ret = -ENODEV;

	mutex_lock(&rn_devices_lock);
	spin_lock(&rn_lock);
	dev = d->dev; /* stays while rn_devices_lock is held */
	spin_unlock(&rn_lock);
	/* Its directory is gone, or not there yet: nowhere to put them. */
	if (dev && device_is_registered(&dev->ibdev.dev)) {
		s = rn_engine_stats(dev, k);
		ret = s ? 0 : -ENOMEM;
	}
	if (s) {
		spin_lock(&rn_lock);
		memcpy(s->values, values, sizeof(s->values));
		spin_unlock(&rn_lock);
	}
	mutex_unlock(&rn_devices_lock);
	return ret;
}

int rn_dev_attach_daemon(struct rn_daemon *d, const char *name, __u64 *guid)
{
	struct rn_dev *dev;
	int ret = -ENODEV;

	mutex_lock(&rn_devices_lock);
	list_for_each_entry(dev, &rn_devices, link) {
		/* Not named before ib_register_device names it. */
		if (!device_is_registered(&dev->ibdev.dev) ||
		    strcmp(dev_name(&dev->ibdev.dev), name))
			continue;
		spin_lock(&rn_lock);
		if (d->dev) {
			ret = -EINVAL; /* one device per ringnicd */
		} else if (dev->daemon) {
			ret = -EBUSY;
		} else {
			dev->daemon = d;
			d->dev = dev;
			ret = 0;
		}
		spin_unlock(&rn_lock);
		if (!ret) {
			*guid = dev->ibdev.node_guid;
			dev_info(&dev->ibdev.dev, "ringnicd pid %d attached\n",
				 task_tgid_vnr(current));
		}
		break;
	}
	mutex_unlock(&rn_devices_lock);
	if (!ret) {
		struct ib_event ev = {
			.device = &dev->ibdev,
			.event = IB_EVENT_PORT_ACTIVE,
			.element.port_num = 1,
		};

		ib_dispatch_event(&ev);
	}
	return ret;
}

void rn_dev_detach_daemon(struct rn_daemon *d)
{
	struct rn_dev *dev;

	mutex_lock(&rn_devices_lock);
	spin_lock(&rn_lock);
	dev = d->dev;
	spin_unlock(&rn_lock);
	if (dev) {
		rn_daemon_detach_dev(dev, true);
		rn_engines_remove(dev);
	}
	mutex_unlock(&rn_devices_lock);
}

static bool rn_link_up(const struct rn_dev *dev)
{
	return netif_running(dev->ndev) && netif_carrier_ok(dev->ndev);
}

/*
 * ringnicd can use none of the port's GIDs (their UDP port is another
 * RoCE stack's, such as rdma_rxe's), or can again: the port is INIT, not
 * ACTIVE, while it cannot, and applications hear PORT_ERR and PORT_ACTIVE
 * as for the link.
 */
int rn_dev_set_no_gid(struct rn_daemon *d, bool no_gid)
{
	struct ib_event ev = { .element.port_num = 1 };
	bool changed = false, up = false;
	struct rn_dev *dev;

	/* Under the lock rn_dealloc_driver has not dropped the netdev; the
	 * device itself stays pinned for the event.
	 */
	mutex_lock(&rn_devices_lock);
	spin_lock(&rn_lock);
	dev = d->dev;
	if (dev && dev->no_gid != no_gid) {
		WRITE_ONCE(dev->no_gid, no_gid);
		changed = true;
		get_device(&dev->ibdev.dev);
	}
	spin_unlock(&rn_lock);
	if (changed)
		up = rn_link_up(dev);
	mutex_unlock(&rn_devices_lock);
	if (!dev)
		return -ENODEV;
	if (!changed)
		return 0;
	if (no_gid)
		dev_warn(&dev->ibdev.dev, "ringnicd can use none of port 1's GIDs (their UDP port 4791 is taken: rdma_rxe?): port 1 INIT until it can\n");
	else
		dev_info(&dev->ibdev.dev, "ringnicd can use port 1's GIDs\n");
	if (up) {
		ev.device = &dev->ibdev;
		ev.event = no_gid ? IB_EVENT_PORT_ERR : IB_EVENT_PORT_ACTIVE;
		ib_dispatch_event(&ev);
	}
	put_device(&dev->ibdev.dev);
	return 0;
}

#define RN_ODP_RELIABLE                                                        \
	(IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_WRITE |    \
	 IB_ODP_SUPPORT_READ | IB_ODP_SUPPORT_ATOMIC)

static int rn_query_device(struct ib_device *ibdev, struct ib_device_attr *a,
			   struct ib_udata *udata)
{
	if (udata->inlen || udata->outlen)
		return -EINVAL;
	a->fw_ver = 0;
	a->sys_image_guid = ibdev->node_guid;
	a->max_mr_size = RN_MAX_MR_SIZE;
	a->page_size_cap = RN_PAGE_SIZE_CAP;
	a->vendor_id = RN_VENDOR_ID;
	a->vendor_part_id = RN_VENDOR_PART_ID;
	a->hw_ver = RN_HW_VERSION;
	a->max_qp = RN_MAX_QP;
	a->max_qp_wr = RN_MAX_QP_WR;
	/* As the provider says (it answers ibv_query_device itself); the
	 * core checks some: ODP access flags need IBK_ON_DEMAND_PAGING.
	 */
	a->device_cap_flags = RN_DEVICE_CAP_FLAGS;
	/* The MAD layer's buffers are named by address (gsi.c): no lkey. */
	a->kernel_cap_flags = IBK_ALLOW_USER_UNREG | IBK_ON_DEMAND_PAGING |
			      IBK_LOCAL_DMA_LKEY;
	a->odp_caps.general_caps = IB_ODP_SUPPORT | IB_ODP_SUPPORT_IMPLICIT;
	a->odp_caps.per_transport_caps.rc_odp_caps = RN_ODP_RELIABLE;
	a->odp_caps.per_transport_caps.uc_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV | IB_ODP_SUPPORT_WRITE;
	a->odp_caps.per_transport_caps.ud_odp_caps =
		IB_ODP_SUPPORT_SEND | IB_ODP_SUPPORT_RECV;
	a->odp_caps.per_transport_caps.xrc_odp_caps = RN_ODP_RELIABLE;
	a->max_srq = RN_MAX_SRQ;
	a->max_srq_wr = RN_MAX_SRQ_WR;
	a->max_srq_sge = RN_MAX_SGE;
	a->max_ah = RN_MAX_AH;
	a->max_mw = RN_MAX_MW;
	a->max_send_sge = RN_MAX_SGE;
	a->max_recv_sge = RN_MAX_SGE;
	a->max_sge_rd = RN_MAX_SGE;
	a->max_cq = RN_MAX_CQ;
	a->max_cqe = RN_MAX_CQE;
	a->max_mr = RN_MAX_MR;
	a->max_pd = RN_MAX_PD;
	a->max_qp_rd_atom = RN_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = RN_MAX_RD_ATOM;
	a->max_res_rd_atom = RN_MAX_RD_ATOM * RN_MAX_QP;
	a->atomic_cap = IB_ATOMIC_HCA;
	a->max_pkeys = RN_PKEY_TABLE_LEN;
	return 0;
}

/*
 * The kernel asks for the port with no context to reach ringnicd through
 * (sysfs, netlink, its GID cache at registration and at port events, as
 * well as uverbs): the answer is the stub's own, the state from whether a
 * ringnicd is attached, the netdev and whether ringnicd can use a GID.
 * ringnicd's would add only its Q_Key violation counter.
 */
static int rn_query_port(struct ib_device *ibdev, u32 port,
			 struct ib_port_attr *attr)
{
	struct rn_dev *dev = to_rn_dev(ibdev);
	bool up = READ_ONCE(dev->daemon) && rn_link_up(dev);

	/* The caller zeroed *attr. */
	attr->state = !up ? IB_PORT_DOWN :
		      READ_ONCE(dev->no_gid) ? IB_PORT_INIT : IB_PORT_ACTIVE;
	attr->phys_state = up ? IB_PORT_PHYS_STATE_LINK_UP :
				IB_PORT_PHYS_STATE_DISABLED;
	attr->max_mtu = IB_MTU_4096;
	attr->active_mtu = ib_mtu_int_to_enum(READ_ONCE(dev->ndev->mtu) -
					      RN_ROCE_MAX_HDR);
	attr->gid_tbl_len = RN_GID_TABLE_LEN;
	attr->pkey_tbl_len = RN_PKEY_TABLE_LEN;
	attr->max_msg_sz = RN_MAX_MSG_SZ;
	attr->max_vl_num = 1;
	attr->active_width = IB_WIDTH_4X;
	attr->active_speed = IB_SPEED_EDR;
	return 0;
}

static int rn_query_pkey(struct ib_device *ibdev, u32 port, u16 index,
			 u16 *pkey)
{
	if (index >= RN_PKEY_TABLE_LEN)
		return -EINVAL;
	*pkey = RN_DEFAULT_PKEY;
	return 0;
}

static int rn_port_immutable(struct ib_device *ibdev, u32 port,
			     struct ib_port_immutable *im)
{
	/* RoCEv2 with MADs: the kernel's CM runs over its QP1 (gsi.c). */
	im->core_cap_flags = RDMA_CORE_PORT_IBA_ROCE_UDP_ENCAP;
	im->max_mad_size = IB_MGMT_MAD_SIZE;
	im->pkey_tbl_len = RN_PKEY_TABLE_LEN;
	im->gid_tbl_len = RN_GID_TABLE_LEN;
	return 0;
}

static enum rdma_link_layer rn_link_layer(struct ib_device *ibdev, u32 port)
{
	return IB_LINK_LAYER_ETHERNET;
}

static void rn_get_fw_ver_str(struct ib_device *ibdev, char *str)
{
	snprintf(str, IB_FW_VERSION_NAME_MAX, "%s", RN_FW_VERSION);
}

/* Kernel consumers get QP1 only (gsi.c), whose buffers need no MR. */
static struct ib_mr *rn_get_dma_mr(struct ib_pd *pd, int access)
{
	return ERR_PTR(-EOPNOTSUPP);
}

/* The device is being unregistered: its contexts are gone already. */
static void rn_dealloc_driver(struct ib_device *ibdev)
{
	struct rn_dev *dev = to_rn_dev(ibdev);

	mutex_lock(&rn_devices_lock);
	list_del(&dev->link);
	rn_daemon_detach_dev(dev, false);
	rn_engines_remove(dev);
	mutex_unlock(&rn_devices_lock);
	/* Its XRC objects, the device context's holders, are gone too. */
	WARN_ON(dev->devctx);
	mutex_destroy(&dev->devctx_lock);
	xa_destroy(&dev->contexts);
	dev_put(dev->ndev);
}

static ssize_t ringnic_kernel_show(struct device *device,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", RN_CTL_VERSION);
}
static DEVICE_ATTR_RO(ringnic_kernel);

static struct attribute *rn_attrs[] = {
	&dev_attr_ringnic_kernel.attr,
	NULL,
};

static const struct attribute_group rn_attr_group = {
	.attrs = rn_attrs,
};

/* The port's counters, named as ringnicd publishes them in userspace mode. */
static const char *const rn_counter_names[RN_CNT_MAX] = RN_COUNTER_NAMES;
static struct rdma_stat_desc rn_counter_descs[RN_CNT_MAX];

static struct rdma_hw_stats *rn_alloc_hw_port_stats(struct ib_device *ibdev,
						    u32 port)
{
	return rdma_alloc_hw_stats_struct(rn_counter_descs, RN_CNT_MAX,
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int rn_get_hw_stats(struct ib_device *ibdev, struct rdma_hw_stats *stats,
			   u32 port, int index)
{
	struct rn_dev *dev = container_of(ibdev, struct rn_dev, ibdev);

	spin_lock(&rn_lock);
	memcpy(stats->value, dev->counters, sizeof(dev->counters));
	spin_unlock(&rn_lock);
	return RN_CNT_MAX;
}

static const struct ib_device_ops rn_dev_ops = {
	.owner = THIS_MODULE,
	.driver_id = RDMA_DRIVER_UNKNOWN,
	.uverbs_abi_ver = RN_UVERBS_ABI_VERSION,
	.device_group = &rn_attr_group,

	.alloc_hw_port_stats = rn_alloc_hw_port_stats,
	.dealloc_driver = rn_dealloc_driver,
	.get_dma_mr = rn_get_dma_mr,
	.get_dev_fw_str = rn_get_fw_ver_str,
	.get_hw_stats = rn_get_hw_stats,
	.get_link_layer = rn_link_layer,
	.get_port_immutable = rn_port_immutable,
	.query_device = rn_query_device,
	.query_pkey = rn_query_pkey,
	.query_port = rn_query_port,
};

static bool ndev_taken(struct net_device *ndev)
{
	struct rn_dev *dev;

	list_for_each_entry(dev, &rn_devices, link)
		if (dev->ndev == ndev)
			return true;
	return false;
}

static int rn_newlink(const char *name, struct net_device *ndev)
{
	struct rn_dev *dev;
	int ret;

	if (ndev->type != ARPHRD_ETHER)
		return -EINVAL;
	mutex_lock(&rn_devices_lock);
	if (ndev_taken(ndev)) {
		mutex_unlock(&rn_devices_lock);
		return -EEXIST;
	}
	dev = ib_alloc_device(rn_dev, ibdev);
	if (!dev) {
		mutex_unlock(&rn_devices_lock);
		return -ENOMEM;
	}
	dev->ndev = ndev;
	dev_hold(ndev);
	mutex_init(&dev->devctx_lock);
	xa_init_flags(&dev->contexts, XA_FLAGS_ALLOC1);
	list_add_tail(&dev->link, &rn_devices);
	mutex_unlock(&rn_devices_lock);

	strscpy(dev->ibdev.node_desc, "ringnic", sizeof(dev->ibdev.node_desc));
	dev->ibdev.node_type = RDMA_NODE_IB_CA;
	dev->ibdev.phys_port_cnt = RN_NUM_PORTS;
	dev->ibdev.num_comp_vectors = 1;
	addrconf_addr_eui48((u8 *)&dev->ibdev.node_guid, ndev->dev_addr);
	ib_set_device_ops(&dev->ibdev, &rn_dev_ops);
	ib_set_device_ops(&dev->ibdev, &rn_verbs_ops);
	ib_set_device_ops(&dev->ibdev, &rn_kernel_ops);
	ret = ib_device_set_netdev(&dev->ibdev, ndev, 1);
	if (!ret)
		ret = ib_register_device(&dev->ibdev, name, NULL);
	/* After a failed registration ib_dealloc_device calls
	 * rn_dealloc_driver, which takes the device off the list and drops
	 * the netdev.
	 */
	if (ret)
		ib_dealloc_device(&dev->ibdev);
	return ret;
}

static struct rdma_link_ops rn_link_ops = {
	.type = "ringnic",
	.newlink = rn_newlink,
};

/* A device goes with its netdev (which it holds a reference to). */
static int rn_netdev_event(struct notifier_block *nb, unsigned long event,
			   void *ptr)
{
	struct net_device *ndev = netdev_notifier_info_to_dev(ptr);
	struct rn_dev *dev;

	if (event != NETDEV_UNREGISTER)
		return NOTIFY_DONE;
	mutex_lock(&rn_devices_lock);
	list_for_each_entry(dev, &rn_devices, link)
		if (dev->ndev == ndev)
			ib_unregister_device_queued(&dev->ibdev);
	mutex_unlock(&rn_devices_lock);
	return NOTIFY_OK;
}

static struct notifier_block rn_netdev_nb = {
	.notifier_call = rn_netdev_event,
};

static int __init rn_init(void)
{
	int ret = rn_daemon_init();
	int i;

	for (i = 0; i < RN_CNT_MAX; i++) {
		rn_counter_descs[i].name = rn_counter_names[i];
		sysfs_attr_init(&rn_engine_attrs[i].attr);
		rn_engine_attrs[i].attr.name = rn_counter_names[i];
		rn_engine_attrs[i].attr.mode = 0444;
		rn_engine_attrs[i].show = rn_engine_counter_show;
		rn_engine_attr_list[i] = &rn_engine_attrs[i].attr;
	}

	if (ret)
		return ret;
	ret = register_netdevice_notifier(&rn_netdev_nb);
	if (ret) {
		rn_daemon_exit();
		return ret;
	}
	rdma_link_register(&rn_link_ops);
	return 0;
}

static void __exit rn_exit(void)
{
	struct rn_dev *dev;

	rdma_link_unregister(&rn_link_ops);
	unregister_netdevice_notifier(&rn_netdev_nb);
	/* Unregistering disassociates every context (their applications get
	 * IBV_EVENT_DEVICE_FATAL) and calls rn_dealloc_driver, which takes the
	 * device off the list; it waits for one already under way.
	 */
	for (;;) {
		mutex_lock(&rn_devices_lock);
		dev = list_first_entry_or_null(&rn_devices, struct rn_dev, link);
		if (dev)
			get_device(&dev->ibdev.dev);
		mutex_unlock(&rn_devices_lock);
		if (!dev)
			break;
		ib_unregister_device(&dev->ibdev);
		put_device(&dev->ibdev.dev);
	}
	rn_daemon_exit();
	/* Our own leak check: Debian's kernel has no kmemleak. */
	WARN(atomic_read(&rn_live_reqs) || atomic_read(&rn_live_entries),
	     "ringnic: %d requests and %d mmap entries leaked\n",
	     atomic_read(&rn_live_reqs), atomic_read(&rn_live_entries));
}

module_init(rn_init);
module_exit(rn_exit);
MODULE_ALIAS_RDMA_LINK("ringnic");
MODULE_DESCRIPTION("ringnic software RDMA NIC: kernel stub");
MODULE_AUTHOR("The ringnic authors");
MODULE_LICENSE("Dual BSD/GPL");
