/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * rdma_cm in ringnicd: the kernel's rdma_ucm command interface (ABI 4),
 * served to librdmacm through the shim of ringnic-run (channel.c, ucma.c),
 * and the IB Communication Manager protocol as Linux's rdma_cm speaks it
 * on RoCEv2: MADs to QP1 in UD datagrams (protocol.c, mad.c).  Addresses
 * are the port's GIDs; routes are the kernel's (address.c).
 *
 * docs/rdma_cm.md describes what it does; the comments name that
 * document's sections.
 */
#ifndef RN_CM_H
#define RN_CM_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <rdma/rdma_user_cm.h>

#include "verbs/verbs.h"
#include "wire/wire.h"

/* How many ids the device holds, all channels together. */
#define RN_CM_MAX_IDS 4096
/* Channels (open rdma_cm files) at once. */
#define RN_CM_MAX_CHANNELS 1024
/* Events waiting in one channel: beyond it, new ones are dropped (counted). */
#define RN_CM_MAX_EVENTS 1024
/*
 * Connect requests a listener holds undelivered, at most and when its
 * backlog is 0 (ucma.c's max_backlog, net.rdma_ucm.max_backlog).
 */
#define RN_CM_MAX_BACKLOG 1024

#define RN_CM_MAD_LEN 256
#define RN_CM_UD_QKEY 0x01234567u /* RDMA_UDP_QKEY: rdma_cm's UD Q_Key */

/* rdma_cm's event codes (librdmacm's rdma_cm_event_type; docs/rdma_cm.md). */
enum rn_cm_event_code {
	RN_CM_EVENT_ADDR_RESOLVED = 0,
	RN_CM_EVENT_ADDR_ERROR = 1,
	RN_CM_EVENT_ROUTE_RESOLVED = 2,
	RN_CM_EVENT_CONNECT_REQUEST = 4,
	RN_CM_EVENT_CONNECT_RESPONSE = 5,
	RN_CM_EVENT_UNREACHABLE = 7,
	RN_CM_EVENT_REJECTED = 8,
	RN_CM_EVENT_ESTABLISHED = 9,
	RN_CM_EVENT_DISCONNECTED = 10,
	RN_CM_EVENT_TIMEWAIT_EXIT = 15,
};

/* The states of an id: rdma_cm's and its IB CM connection's in one. */
enum rn_cm_state {
	RN_CM_IDLE,
	RN_CM_BOUND, /* an address (and port) */
	RN_CM_ADDR_RESOLVED,
	RN_CM_ROUTE_RESOLVED,
	RN_CM_LISTEN,
	RN_CM_REQ_SENT, /* active: REQ (or SIDR REQ) out, waiting for REP */
	RN_CM_REP_RCVD, /* active: CONNECT_RESPONSE delivered, RTU not sent */
	RN_CM_REQ_RCVD, /* passive: CONNECT_REQUEST delivered, undecided */
	RN_CM_REP_SENT, /* passive: REP out, waiting for RTU */
	RN_CM_ESTABLISHED,
	RN_CM_DREQ_SENT,
	RN_CM_DREQ_RCVD, /* DISCONNECTED delivered, DREP not sent */
	RN_CM_TIMEWAIT,
	RN_CM_DISCONNECTED, /* done with the peer; the id lives on */
};

struct rn_cm;
struct rn_cm_channel;

struct rn_cm_id {
	struct rn_cm *cm;
	uint32_t handle; /* what librdmacm calls the id */
	struct rn_cm_channel *ch;
	struct rn_list ch_link;
	uint64_t uid; /* librdmacm's, echoed in events; 0: not yet known */
	uint16_t ps; /* port space (enum rdma_ucm_port_space) */
	uint8_t qp_type; /* IBV_QPT_RC or IBV_QPT_UD */
	enum rn_cm_state state;
	uint32_t events_reported; /* delivered by GET_EVENT */
	bool hidden; /* its CONNECT_REQUEST is not delivered yet */
	bool passive; /* made by a connect request */

	/* Addresses: sockaddr_in or sockaddr_in6, port included. */
	struct sockaddr_storage src;
	struct sockaddr_storage dst;
	bool on_device; /* src is one of the port's addresses */
	bool loopback; /* resolved to a wildcard or loopback destination */
	bool port_bound; /* src's port is taken in ps */
	int gid_index; /* of src, when on_device */
	uint8_t dgid[16]; /* the peer, once resolved */

	/* Options (SET_OPTION) */
	uint8_t tos;
	bool reuseaddr;
	bool afonly;
	uint8_t ack_timeout; /* 0: as negotiated */

	/* Listeners */
	uint32_t backlog;
	uint32_t pending; /* its connect requests not delivered yet (hidden) */
	struct rn_cm_id *listener; /* the one this id came from */

	/* The connection (protocol.c) */
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint64_t tid; /* of the REQ (or DREQ) being answered */
	uint64_t remote_guid; /* network byte order */
	uint32_t local_qpn;
	uint32_t remote_qpn;
	uint32_t local_psn; /* the Starting PSN we advertised: our rq_psn */
	uint32_t remote_psn; /* theirs: our sq_psn */
	uint32_t qkey; /* UD: the peer's */
	uint8_t responder_resources;
	uint8_t initiator_depth;
	uint8_t retry_count;
	uint8_t rnr_retry;
	uint8_t srq;
	uint8_t mtu; /* enum ibv_mtu of the path */
	uint8_t local_ack_timeout; /* the QP's timeout (RTS) */
	uint8_t hop_limit;
	uint8_t mad[RN_CM_MAD_LEN]; /* the last MAD sent, for resending */
	uint32_t resends_left;
	uint64_t resend_ns;
	struct rn_timer timer; /* resend, or timewait */
};

struct rn_cm_event {
	struct rn_list link;
	struct rn_cm_id *id; /* whose events_reported it counts to */
	struct rn_cm_id *new_id; /* CONNECT_REQUEST: the id it hands over */
	struct rdma_ucm_event_resp resp;
};

/* One open of the rdma_cm device: an event channel. */
struct rn_cm_channel {
	struct rn_cm *cm;
	struct rn_list link;
	struct rn_watch watch;
	int fd; /* the shim's command socket */
	pid_t pid; /* the process that opened it (SO_PEERCRED), for RDMA netlink */
	int event_fd; /* our end of the pair the application polls */
	uint64_t token; /* names it in MIGRATE_ID */
	struct rn_list events;
	uint32_t nevents;
	struct rn_list ids;
};

struct rn_cm {
	struct rn_device *dev;
	int listen_fd;
	struct rn_watch listen_watch;
	char path[108];
	uint64_t netns_ino;
	struct rn_list channels;
	uint32_t nchannels;
	struct rn_table ids; /* handle -> struct rn_cm_id */
	uint32_t comm_gen; /* the high bits of the next local comm ID */
	uint32_t hi_tid; /* the high half of our transaction IDs */
};

/* channel.c */
/* dev->cm, serving no socket yet (the fuzzer's). */
struct rn_cm *rn_cm_init(struct rn_device *dev);
/* dev->cm, listening on RUNTIME_DIR/NAME.cm. */
int rn_cm_listen(struct rn_device *dev, const char *runtime_dir);
void rn_cm_accept(struct rn_cm *cm);
void rn_cm_readable(struct rn_cm_channel *ch);
void rn_cm_close(struct rn_device *dev);
/* A datagram to QP1, for the wire's taker of them (rn_wire_set_gsi). */
void rn_cm_gsi_recv(struct rn_device *dev, const struct rn_wire_gsi *g);
/* An event of id, to fill in and post (NULL: no memory, nothing to post). */
struct rn_cm_event *rn_cm_event(struct rn_cm_id *id, uint32_t event,
				int32_t status);
/* Queue it for librdmacm, or drop it as the kernel would. */
void rn_cm_event_post(struct rn_cm_id *id, struct rn_cm_event *ev);
/* Move id's undelivered events to channel 'to', or drop them (NULL). */
void rn_cm_events_of(struct rn_cm_id *id, struct rn_cm_channel *to);
struct rn_cm_channel *rn_cm_channel_of(struct rn_cm *cm, uint64_t token);

/* ucma.c */
int rn_cm_command(struct rn_cm_channel *ch, const uint8_t *msg, size_t len,
		  uint8_t *resp, uint32_t *resp_len);
struct rn_cm_id *rn_cm_id_new(struct rn_cm_channel *ch, uint16_t ps,
			      uint8_t qp_type);
void rn_cm_id_destroy(struct rn_cm_id *id);
void rn_cm_id_reveal(struct rn_cm_id *id);

/* address.c */
uint16_t rn_cm_addr_port(const struct sockaddr *sa);
socklen_t rn_cm_addr_len(const struct sockaddr *sa);
int rn_cm_bind(struct rn_cm_id *id, const struct sockaddr *sa);
int rn_cm_resolve_addr(struct rn_cm_id *id, const struct sockaddr *src,
		       const struct sockaddr *dst);
void rn_cm_release_port(struct rn_cm_id *id);
struct rn_cm_id *rn_cm_find_listener(struct rn_cm *cm, uint16_t ps,
				     const struct sockaddr *dst);

/* protocol.c */
int rn_cm_connect(struct rn_cm_id *id, const struct rdma_ucm_conn_param *p);
int rn_cm_accept_conn(struct rn_cm_id *id, const struct rdma_ucm_conn_param *p);
int rn_cm_reject(struct rn_cm_id *id, const uint8_t *pd, uint8_t pd_len,
		 uint16_t reason);
int rn_cm_disconnect(struct rn_cm_id *id);
void rn_cm_established(struct rn_cm_id *id);
/* The id goes: tell the peer what Linux tells it when a cm_id is destroyed. */
void rn_cm_leave(struct rn_cm_id *id);
/* The protocol's part of a new id: its timer, its Starting PSN. */
void rn_cm_id_init(struct rn_cm_id *id);
/* A datagram to QP1, from peer sgid, received on our GID gid_index. */
void rn_cm_mad_recv(struct rn_device *dev, unsigned int gid_index,
		    const uint8_t *sgid, const uint8_t *mad, uint32_t len);

#endif
