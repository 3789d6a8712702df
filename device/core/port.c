// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Port 1, bound to a network device as rxe's port is: its state follows
 * the link, its active MTU the interface's MTU, its GID table the
 * interface's addresses (daemon/netdev.c reports them; in kernel mode the table
 * is the kernel's, read by daemon/kdev.c) that the wire can reach.  And
 * the port's counters.
 */
#include <string.h>

#include "core/core.h"

static const char *const counter_names[RN_CNT_MAX] = RN_COUNTER_NAMES;

const char *rn_counter_name(enum rn_counter c)
{
	return counter_names[c];
}

/* Where the QP's control block shows a count to the client. */
static __u32 *shown(struct rn_qp_ctrl *ctrl, enum rn_qp_count i)
{
	switch (i) {
	case RN_QPC_ACK_TIMEOUTS:
		return &ctrl->ack_timeouts;
	case RN_QPC_SEQ_NAKS:
		return &ctrl->seq_naks;
	case RN_QPC_RETRIES:
		return &ctrl->retries;
	case RN_QPC_RNR_NAKS:
		return &ctrl->rnr_naks;
	case RN_QPC_REMOTE_NAKS:
		return &ctrl->remote_naks;
	case RN_QPC_DUP_REQUESTS:
		return &ctrl->duplicate_requests;
	case RN_QPC_OOS_REQUESTS:
		return &ctrl->out_of_seq_requests;
	case RN_QPC_NAKS_SENT:
		return &ctrl->naks_sent;
	default:
		return &ctrl->injected_faults;
	}
}

void rn_qp_count(struct rn_qp *qp, enum rn_qp_count i)
{
	qp->counts[i]++;
	*shown(qp->ctrl, i) = (__u32)qp->counts[i];
}

/* Unbound: no interface, down, and rxe's MTU before it has a netdev. */
void rn_port_init(struct rn_device *dev)
{
	memset(&dev->port, 0, sizeof(dev->port));
	dev->port.active_mtu = IBV_MTU_256;
}

/*
 * The largest IB MTU whose packets fit the netdev's MTU (rxe's
 * eth_mtu_int_to_enum): 1500 -> 1024, 2128 -> 2048, 4176 -> 4096; 256 when
 * even that does not fit.
 */
enum ibv_mtu rn_port_mtu_of(uint32_t netdev_mtu)
{
	enum ibv_mtu mtu = IBV_MTU_4096;

	while (mtu > IBV_MTU_256 && (128u << mtu) + RN_ROCE_MAX_HDR > netdev_mtu)
		mtu--;
	return mtu;
}

/* The port has addresses and none of them is a GID: the wire can reach none. */
bool rn_port_no_gid(const struct rn_device *dev)
{
	bool addresses = false;
	int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++) {
		if (rn_port_gid_valid(dev, i))
			return false;
		addresses |= !rn_gid_is_zero(dev->port.gids[i].raw);
	}
	return addresses;
}

/*
 * DOWN without a link.  INIT (the link up, the port not usable) when no
 * address is a GID (rn_port_no_gid).  ACTIVE otherwise, with no address
 * at all too, as rxe's port is.
 */
enum ibv_port_state rn_port_state(const struct rn_device *dev)
{
	if (!dev->port.link_up)
		return IBV_PORT_DOWN;
	return rn_port_no_gid(dev) ? IBV_PORT_INIT : IBV_PORT_ACTIVE;
}

/* The interface, its link and MTU; returns what changed (RN_PORT_*). */
unsigned int rn_port_set_link(struct rn_device *dev, const struct rn_link *link)
{
	struct rn_port *p = &dev->port;
	enum ibv_port_state was = rn_port_state(dev);
	unsigned int changes = 0;

	if (p->ifindex != link->ifindex || strcmp(p->ifname, link->ifname)) {
		p->ifindex = link->ifindex;
		memcpy(p->ifname, link->ifname, sizeof(p->ifname));
		changes |= RN_PORT_NETDEV;
	}
	p->link_up = link->ifindex && link->running;
	if (rn_port_state(dev) != was)
		changes |= RN_PORT_STATE;
	/* A vanished interface keeps its last MTU: nothing to carry anyway. */
	if (link->ifindex && p->netdev_mtu != link->mtu) {
		p->netdev_mtu = link->mtu;
		p->active_mtu = rn_port_mtu_of(link->mtu);
		changes |= RN_PORT_MTU;
	}
	return changes;
}

/* The entry holding address gid, a GID or not; or -1. */
int rn_port_address_index(const struct rn_device *dev, const uint8_t *gid)
{
	int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (!rn_gid_is_zero(dev->port.gids[i].raw) &&
		    !memcmp(dev->port.gids[i].raw, gid, 16))
			return i;
	return -1;
}

static bool gid_listed(const union ibv_gid *gid, const union ibv_gid *addrs,
		       uint32_t naddrs)
{
	uint32_t i;

	for (i = 0; i < naddrs; i++)
		if (!memcmp(gid, &addrs[i], sizeof(*gid)))
			return true;
	return false;
}

/*
 * The GID table becomes addrs, the way the kernel's GID cache changes:
 * an address already in the table keeps its entry, an entry whose address
 * is gone is cleared, and a new address takes the first free entry (empty
 * and named by no QP or AH, so that an index a QP holds never comes to mean
 * another address).  Addresses beyond the table's size are left out, as
 * the kernel leaves them.  Returns RN_PORT_GIDS if anything changed.
 */
unsigned int rn_port_set_gids(struct rn_device *dev, const union ibv_gid *addrs,
			      uint32_t naddrs)
{
	struct rn_port *p = &dev->port;
	unsigned int changes = 0;
	uint32_t i, slot;

	for (i = 0; i < RN_GID_TABLE_LEN; i++) {
		if (rn_gid_is_zero(p->gids[i].raw) || gid_listed(&p->gids[i], addrs, naddrs))
			continue;
		memset(&p->gids[i], 0, sizeof(p->gids[i]));
		p->gid_errors[i] = 0;
		changes = RN_PORT_GIDS;
	}
	for (i = 0; i < naddrs; i++) {
		if (rn_gid_is_zero(addrs[i].raw) ||
		    rn_port_address_index(dev, addrs[i].raw) >= 0)
			continue;
		for (slot = 0; slot < RN_GID_TABLE_LEN; slot++)
			if (rn_gid_is_zero(p->gids[slot].raw) && !p->gid_users[slot])
				break;
		if (slot == RN_GID_TABLE_LEN) {
			rn_warn("%s: GID table full: an address of %s left out\n",
				dev->name, p->ifname);
			break;
		}
		p->gids[slot] = addrs[i];
		changes = RN_PORT_GIDS;
	}
	return changes;
}

/*
 * Tell every context what changed, as the kernel does: PORT_ACTIVE when
 * the port became ACTIVE, PORT_ERR when it stopped being ACTIVE (the
 * state was 'was'), GID_CHANGE when the table did; each names port 1.
 * Kernel contexts get the kernel's own events instead.
 */
void rn_port_announce(struct rn_device *dev, unsigned int changes,
		      enum ibv_port_state was)
{
	bool active = rn_port_state(dev) == IBV_PORT_ACTIVE;
	struct rn_list *pos, *tmp;

	if (active == (was == IBV_PORT_ACTIVE))
		changes &= ~RN_PORT_STATE;
	rn_list_for_each_safe(pos, tmp, &dev->clients) {
		struct rn_client *c = rn_container_of(pos, struct rn_client, link);

		if (c->kctx || !c->opened)
			continue;
		if (changes & RN_PORT_STATE)
			rn_async_event(c, 0, 1, active ? IBV_EVENT_PORT_ACTIVE :
							 IBV_EVENT_PORT_ERR);
		if (changes & RN_PORT_GIDS)
			rn_async_event(c, 0, 1, IBV_EVENT_GID_CHANGE);
	}
}

/*
 * Whether entry index is a GID: it holds an address the wire can reach.
 * One whose UDP port the wire could not bind (another RoCE stack holds it,
 * as rdma_rxe in the same network namespace does) is none, as a NIC offers
 * no address it cannot use: QPs would connect through it, then time out.
 * A loopback address needs no socket (unless --local-on-wire sends its
 * QPs' packets through one): its packets never leave the host, and a QP
 * towards a GID of this device meets its peer through memory; several
 * ringnicd on lo share 127.0.0.1 so.
 */
bool rn_port_gid_valid(const struct rn_device *dev, uint32_t index)
{
	const uint8_t *gid;

	if (index >= RN_GID_TABLE_LEN)
		return false;
	gid = dev->port.gids[index].raw;
	return !rn_gid_is_zero(gid) &&
	       (!dev->port.gid_errors[index] ||
		(rn_gid_is_loopback(gid) && !dev->local_on_wire));
}

/* The table as applications see it: entries that are no GID are empty. */
void rn_port_gid_table(const struct rn_device *dev, union ibv_gid *table)
{
	int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (rn_port_gid_valid(dev, i))
			table[i] = dev->port.gids[i];
		else
			memset(&table[i], 0, sizeof(table[i]));
}

/*
 * Whether a QP's address vector or an AH may name entry index: one that
 * holds an address.  In kernel mode the kernel's GID cache checked that
 * already (and holds the entry for the QP or AH), perhaps before ringnicd
 * read the table again: its word is final.
 */
bool rn_port_gid_nameable(const struct rn_device *dev, uint32_t index)
{
	if (dev->kdev_fd >= 0)
		return index < RN_GID_TABLE_LEN;
	return rn_port_gid_valid(dev, index);
}

/* Bit i set: entry i may be named (rn_port_gid_nameable). */
uint32_t rn_port_gid_mask(const struct rn_device *dev)
{
	uint32_t mask = 0, i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (rn_port_gid_nameable(dev, i))
			mask |= 1u << i;
	return mask;
}

/* The index of GID gid, or -1 (an address that is no GID: -1 too). */
int rn_port_gid_index(const struct rn_device *dev, const uint8_t *gid)
{
	int i = rn_port_address_index(dev, gid);

	return i >= 0 && rn_port_gid_valid(dev, i) ? i : -1;
}

/* The first entry holding an address, or -1. */
int rn_port_gid_first(const struct rn_device *dev)
{
	int i;

	for (i = 0; i < RN_GID_TABLE_LEN; i++)
		if (rn_port_gid_valid(dev, i))
			return i;
	return -1;
}

/* A QP's address vector or an AH names entry index (-1: none). */
void rn_port_gid_hold(struct rn_device *dev, int index)
{
	if (index >= 0)
		dev->port.gid_users[index]++;
}

void rn_port_gid_put(struct rn_device *dev, int index)
{
	if (index >= 0)
		dev->port.gid_users[index]--;
}

uint32_t rn_port_mtu_bytes(const struct rn_device *dev)
{
	return 128u << dev->port.active_mtu;
}

void rn_port_query(const struct rn_device *dev, struct rn_port_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->state = rn_port_state(dev);
	a->phys_state = dev->port.link_up ? 5 /* LinkUp */ : 3 /* Disabled */;
	a->max_mtu = IBV_MTU_4096;
	a->active_mtu = dev->port.active_mtu;
	a->gid_tbl_len = RN_GID_TABLE_LEN;
	a->max_msg_sz = RN_MAX_MSG_SZ;
	a->active_width = 2; /* 4X */
	a->active_speed = 32; /* EDR: 4X EDR is 100 Gb/s */
}
