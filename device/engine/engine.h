/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * engine/: the data path every transport shares.  A doorbell is found
 * (engine.c), its WQEs fetched and validated (sq.c, wqe.c, access.c),
 * executed by the QP's transport (local/ or wire/, through struct
 * rn_transport_ops), completed (sq.c, rq.c, cq.c) and notified
 * (notify.c).  A QP's state and errors live in qp.c.  The transports use
 * the rest of it through engine/datapath.h.
 */
#ifndef RN_ENGINE_H
#define RN_ENGINE_H

#include <pthread.h>

#include "core/core.h"
#include "core/memory.h"

/*
 * How the engine drives a QP's transport.  verbs/ installs the local
 * path's ops when a QP is created; connecting it (RTR) installs the wire's
 * where the peer is elsewhere.  Only run is required.
 */
struct rn_transport_ops {
	/* Execute send work for at most budget units; true on progress. */
	bool (*run)(struct rn_qp *qp, uint64_t now, unsigned int budget);
	/* After a turn: has the QP work it can do without waiting? */
	bool (*busy)(const struct rn_qp *qp);
	/* RTS (from RTR or SQE): the requester starts. */
	void (*start)(struct rn_qp *qp);
	/* Send WQEs started and not completed. */
	bool (*in_flight)(const struct rn_qp *qp);
	/* The send queue failed, or the whole QP (responder_too). */
	void (*stop)(struct rn_qp *qp, bool responder_too);
	/* The QP is reset or destroyed: its transport state goes. */
	void (*release)(struct rn_qp *qp);
	unsigned int budget; /* units of run in one turn */
};

/*
 * A transport's work that belongs to no one QP (the wire: packets in,
 * responses and ACKs out), registered with rn_engine_set_network.
 */
struct rn_network_ops {
	/* Take arrived packets; true if there were any. */
	bool (*receive)(struct rn_engine *e);
	/* Send responses and ACKs that are due; true on progress. */
	bool (*reply)(struct rn_engine *e, uint64_t now);
	/* Packets built this pass leave. */
	void (*flush)(struct rn_engine *e);
	/* Responses wait to be sent: the engine must not sleep. */
	bool (*pending)(const struct rn_engine *e);
	/* A UD datagram to a GID that is not this device's. */
	enum ibv_wc_status (*ud_send)(struct rn_qp *qp, const struct rn_wqe *w,
				      const struct rn_ah_attr *av,
				      unsigned int sgid_index, const uint8_t *dgid,
				      uint32_t qkey, const struct rn_iovs *src,
				      uint64_t len);
};

/*
 * An engine's gate (gate.c).  The engine's thread and a holder (the
 * control thread, or another engine visiting) both run the engine's code,
 * never at once: the engine has its objects while it polls and gives them
 * up at the end of a pass when a holder asks, and whenever it sleeps.
 * Without a thread of its own (the unit tests, the fuzzers) the gate is
 * open.
 */
struct rn_gate {
	bool threaded; /* the engine's thread runs: the gate is in use */
	/* Written by the engine's thread only: */
	bool inside; /* it has the device */
	bool waiting; /* it waits for a holder */
	uint64_t entries; /* times it came in after waiting */
	/* Written by the holder (the control thread, or a visiting engine:
	 * holders take turns on dev->hold_lock) only:
	 */
	bool held; /* it has the engine, or waits for it */
	bool owed; /* the engine waited: it gets in before the next hold */
	uint64_t owed_entries; /* 'entries' then */
	pthread_mutex_t lock; /* for whichever waits for the other */
	pthread_cond_t moved; /* any of the above changed */
};

/*
 * The engine's state, and the QPs it owns (qp->engine): whoever has the
 * gate writes them (the engine's thread, or a holder: the control thread
 * for a request, another engine for a visit), but the gate itself, whose
 * fields say who writes them, and the counters (rn_engine_count).
 */
struct rn_engine {
	struct rn_device *dev;
	uint32_t index; /* in dev->engines: its QPNs' indices are this mod nengines */
	struct rn_gate gate;
	int epoll_fd; /* what wakes it: doorbells (eventfds), packets, kicks */
	int kick_fd; /* eventfd: the control thread has work for it */
	struct rn_watch kick_watch;
	bool sleeping; /* in epoll, or about to be */
	bool nudged; /* a holder gave it a QP to run while it slept */
	bool stop; /* the control thread asks the engine's thread to end */
	struct rn_list contexts; /* whose doorbells it scans (ctx->engine) */
	uint32_t ncontexts;
	struct rn_list active; /* QPs that may have send work */
	/* QPs whose turn reaches another engine's objects (qp->crossing):
	 * they run at the end of the pass, all engines held (rn_gate_visit).
	 */
	struct rn_list crossing;
	bool visiting; /* it holds every engine: crossing turns run now */
	struct rn_timers timers;
	uint32_t ntimers; /* timers that exist: room reserved in 'timers' */
	uint8_t *bounce; /* staging buffer for copies between clients */
	struct rn_stage *stage; /* the SQ slots last fetched (wqe.h) */
	struct rn_qp *stage_qp; /* whose they are */
	const struct rn_network_ops *network; /* NULL: no wire */
	struct rn_batch *batch; /* the local path's run of WRITEs (local/) */
	struct rn_wire *wire; /* the wire's state (wire/) */
	/* The port's hw_counters as this engine counted them; the port's
	 * are the sums (rn_port_counters).
	 */
	uint64_t counters[RN_CNT_MAX];
};

/* gate.c: who runs the device's code now */
void rn_gate_open_thread(struct rn_engine *e);
void rn_gate_close_thread(struct rn_engine *e);
void rn_gate_enter(struct rn_engine *e);
void rn_gate_leave(struct rn_engine *e);
void rn_gate_hold(struct rn_device *dev);
void rn_gate_release(struct rn_device *dev);
bool rn_gate_visit(struct rn_engine *e, uint64_t now);

/* Does the control thread wait for the device?  One load per pass. */
static inline bool rn_gate_wanted(const struct rn_engine *e)
{
	return __atomic_load_n(&e->gate.held, __ATOMIC_RELAXED);
}

/* engine.c */
int rn_engines_init(struct rn_device *dev);
struct rn_engine *rn_engine_for_context(struct rn_device *dev);
void rn_engine_set_network(struct rn_engine *e,
			   const struct rn_network_ops *ops);
bool rn_engine_pass(struct rn_engine *e, uint64_t now_ns);
/* The QP's doorbell record was rung (a pass finds them in the device page). */
void rn_engine_doorbell(struct rn_qp *qp);
void rn_engine_schedule(struct rn_qp *qp);
void rn_engine_unschedule(struct rn_qp *qp);
int rn_engine_qp_add(struct rn_qp *qp);
void rn_engine_qp_remove(struct rn_qp *qp);
void rn_engine_wait(struct rn_qp *qp, uint64_t until);
void rn_engine_cancel_wait(struct rn_qp *qp);
void rn_engine_flush(struct rn_qp *qp);
void rn_engine_drain(struct rn_qp *qp);
uint64_t rn_engine_next_timer(struct rn_engine *e);
bool rn_engine_sleep_prepare(struct rn_engine *e);
void rn_engine_wake(struct rn_engine *e);
void rn_engine_context_added(struct rn_context *ctx);
void rn_engine_context_removed(struct rn_context *ctx);
bool rn_engine_reaches(struct rn_qp *qp, const struct rn_qp *dst);
bool rn_engine_cross(struct rn_engine *e, uint64_t now);
void rn_engine_kick(struct rn_engine *e);

/*
 * One more of the port's counter c, counted by engine e.  Whoever has the
 * engine's gate writes its counters; the control thread reads them at any
 * time (rn_port_counters), hence atomic stores, which cost no more than
 * plain ones here.
 */
static inline void rn_engine_count(struct rn_engine *e, enum rn_counter c)
{
	__atomic_store_n(&e->counters[c], e->counters[c] + 1, __ATOMIC_RELAXED);
}

/* The port's counters now: what its engines counted. */
void rn_port_counters(const struct rn_device *dev, uint64_t out[RN_CNT_MAX]);

/* qp.c: a QP's state, errors and events; its transport */
/* Counts c for the device (hw_counters) and in the QP's rn_qp_ctrl. */
void rn_count_qp(struct rn_qp *qp, enum rn_counter c);
struct rn_qp *rn_qp_by_qpn(struct rn_device *dev, uint32_t qpn);
void rn_qp_event(struct rn_qp *qp, enum ibv_event_type event);
void rn_qp_set_state(struct rn_qp *qp, enum ibv_qp_state state);
void rn_qp_to_error(struct rn_qp *qp);
void rn_qp_fatal(struct rn_qp *qp, enum ibv_event_type event);
void rn_qp_send_failed(struct rn_qp *qp);
void rn_qp_sq_drain_check(struct rn_qp *qp);
/* May the QP take requests now?  (SQE still receives: only its SQ failed.) */
bool rn_qp_receiving(const struct rn_qp *qp);
void rn_qp_transport_start(struct rn_qp *qp);
void rn_qp_transport_release(struct rn_qp *qp,
			     const struct rn_transport_ops *next);
/* RNR NAK timer (IB table of min_rnr_timer codes) in nanoseconds. */
uint64_t rn_rnr_timer_ns(uint8_t code);
/* Local ACK timeout: 4.096 us * 2^timeout; 0 means infinite (UINT64_MAX). */
uint64_t rn_ack_timeout_ns(uint8_t timeout);

/* cq.c */
bool rn_cq_push(struct rn_cq *cq, const struct rn_cqe *cqe, bool solicited);

/* notify.c */
void rn_cq_note(struct rn_cq *cq, bool error, bool solicited);
void rn_cq_ring(struct rn_cq *cq);

/* mw.c */
void rn_mw_unbind(struct rn_mw *mw);

/* sq.c */
void rn_sq_forget(struct rn_qp *qp);

#endif
