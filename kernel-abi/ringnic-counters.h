/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * The port's counters, as ringnicd keeps them and publishes them: as files
 * of its tree's hw_counters (userspace mode), and in kernel mode as the
 * values of struct rn_kdev_counters, which ringnic.ko reports as the
 * device's hw_counters and `rdma statistic`.  The order is the message's.
 */
#ifndef RINGNIC_COUNTERS_H
#define RINGNIC_COUNTERS_H

/*
 * What the port counts (docs/wire.md, "Counters").  The outcomes of
 * reliable messages on the wire are: success, REQ_COMPLETED; timeout,
 * ACK_TIMEOUT; transmission error, RX_ICRC and RX_MALFORMED (dropped, then
 * recovered by a sequence NAK or a timeout); dropped in the network,
 * OOS_REQ at the responder, RCVD_SEQ and IMPLIED_NAK at the requester
 * (recovered the same way); rejected by the target, NAK_INV_REQ,
 * NAK_ACCESS and NAK_OP (NAK_SENT at the target: reported, never retried).
 * Faults a rule injected (RN_CTL_FAULTS) are counted where they are made,
 * by kind, apart from these; their effects at the peer (a duplicate, an
 * ICRC error, a NAK received) are counted as real ones, since the peer
 * cannot tell them apart.
 */
enum rn_counter {
	RN_CNT_OUT_OF_BUFFER, /* a message found no receive WQE, and was dropped */
	RN_CNT_QKEY_VIOLATIONS, /* a datagram with the wrong Q_Key, dropped */
	RN_CNT_NO_QP, /* a packet for no QP able to take it from there, dropped */
	RN_CNT_NO_ROUTE, /* a packet for no address we can send from, dropped */
	RN_CNT_RX_LENGTH_ERRORS, /* a message larger than its receive WQE */
	RN_CNT_SENT_PKTS, /* packets sent on the wire */
	RN_CNT_RCVD_PKTS, /* packets received whole, ICRC right */
	RN_CNT_SEND_ERR, /* packets the network stack refused to send */
	RN_CNT_RX_ICRC, /* packets with a bad ICRC, dropped */
	RN_CNT_RX_MALFORMED, /* packets that do not parse, dropped */
	RN_CNT_RX_UNEXPECTED, /* responses that answer nothing outstanding */
	RN_CNT_DUP_REQ, /* duplicate requests (answered, never executed) */
	RN_CNT_OOS_REQ, /* requests after a gap in the PSNs */
	RN_CNT_SEND_RNR, /* RNR NAKs sent */
	RN_CNT_RCVD_RNR, /* RNR NAKs received */
	RN_CNT_RCVD_SEQ, /* PSN sequence error NAKs received */
	RN_CNT_IMPLIED_NAK, /* gaps in READ responses and atomic ACKs */
	RN_CNT_ACK_TIMEOUT, /* retransmit timer expiries with packets unanswered */
	RN_CNT_RETRIES, /* go-back-N retries (timeouts, sequence NAKs, gaps) */
	RN_CNT_RETRY_EXC, /* WQEs failed with RETRY_EXC_ERR */
	RN_CNT_RNR_RETRY_EXC, /* WQEs failed with RNR_RETRY_EXC_ERR */
	RN_CNT_REQ_COMPLETED, /* messages the requester saw answered */
	RN_CNT_NAK_INV_REQ, /* invalid request NAKs received */
	RN_CNT_NAK_ACCESS, /* remote access error NAKs received */
	RN_CNT_NAK_OP, /* remote operational error (or unknown) NAKs received */
	RN_CNT_NAK_SENT, /* requests the responder refused with a NAK */
	RN_CNT_CNP_IGNORED, /* CNPs for no QP of ours sending to their sender */
	RN_CNT_CNP_HANDLED, /* CNPs a requester slowed down for */
	RN_CNT_ECN_MARKED, /* requests that arrived with ECN CE */
	RN_CNT_CNP_SENT, /* CNPs sent for them */
	RN_CNT_DUP_RESP, /* responses older than what was acknowledged, dropped */
	/* injected, in the order of enum rn_fault_kind (RN_FAULT_DROP first) */
	RN_CNT_INJ_DROP,
	RN_CNT_INJ_DUPLICATE,
	RN_CNT_INJ_DELAY,
	RN_CNT_INJ_REORDER,
	RN_CNT_INJ_CORRUPT_ICRC,
	RN_CNT_INJ_MARK_CE,
	RN_CNT_INJ_RNR,
	RN_CNT_INJ_NAK,
	RN_CNT_INJ_WR_ERROR,
	RN_CNT_MAX
};

/* Their published names: rxe's, else mlx5's, where the meaning is the same. */
#define RN_COUNTER_NAMES {                                                    \
	/* mlx5's name: "drops due to lack of WQE for the associated QPs" */  \
	[RN_CNT_OUT_OF_BUFFER] = "out_of_buffer",                             \
	[RN_CNT_QKEY_VIOLATIONS] = "rx_qkey_drops",                           \
	[RN_CNT_NO_QP] = "rx_no_qp_drops",                                    \
	[RN_CNT_NO_ROUTE] = "tx_no_route_drops",                              \
	[RN_CNT_RX_LENGTH_ERRORS] = "rx_length_drops",                        \
	/* rxe's names */                                                     \
	[RN_CNT_SENT_PKTS] = "sent_pkts",                                     \
	[RN_CNT_RCVD_PKTS] = "rcvd_pkts",                                     \
	[RN_CNT_SEND_ERR] = "send_err",                                       \
	[RN_CNT_DUP_REQ] = "duplicate_request",                               \
	[RN_CNT_OOS_REQ] = "out_of_seq_request",                              \
	[RN_CNT_SEND_RNR] = "send_rnr_err",                                   \
	[RN_CNT_RCVD_RNR] = "rcvd_rnr_err",                                   \
	[RN_CNT_RCVD_SEQ] = "rcvd_seq_err",                                   \
	[RN_CNT_RETRIES] = "completer_retry_err",                             \
	[RN_CNT_RETRY_EXC] = "retry_exceeded_err",                            \
	[RN_CNT_RNR_RETRY_EXC] = "retry_rnr_exceeded_err",                    \
	/* mlx5's names */                                                    \
	[RN_CNT_IMPLIED_NAK] = "implied_nak_seq_err",                         \
	[RN_CNT_ACK_TIMEOUT] = "local_ack_timeout_err",                       \
	[RN_CNT_NAK_INV_REQ] = "req_remote_invalid_request",                  \
	[RN_CNT_NAK_ACCESS] = "req_remote_access_errors",                     \
	[RN_CNT_CNP_IGNORED] = "rp_cnp_ignored",                              \
	[RN_CNT_CNP_HANDLED] = "rp_cnp_handled",                              \
	[RN_CNT_ECN_MARKED] = "np_ecn_marked_roce_packets",                   \
	[RN_CNT_CNP_SENT] = "np_cnp_sent",                                    \
	/* ours */                                                            \
	[RN_CNT_RX_ICRC] = "rx_icrc_errors",                                  \
	[RN_CNT_RX_MALFORMED] = "rx_malformed_packets",                       \
	[RN_CNT_RX_UNEXPECTED] = "rx_unexpected_responses",                   \
	[RN_CNT_DUP_RESP] = "rx_duplicate_responses",                         \
	[RN_CNT_REQ_COMPLETED] = "req_completed",                             \
	[RN_CNT_NAK_OP] = "req_remote_operation_errors",                      \
	[RN_CNT_NAK_SENT] = "resp_naks_sent",                                 \
	[RN_CNT_INJ_DROP] = "injected_drops",                                 \
	[RN_CNT_INJ_DUPLICATE] = "injected_duplicates",                       \
	[RN_CNT_INJ_DELAY] = "injected_delays",                               \
	[RN_CNT_INJ_REORDER] = "injected_reorders",                           \
	[RN_CNT_INJ_CORRUPT_ICRC] = "injected_icrc_errors",                   \
	[RN_CNT_INJ_MARK_CE] = "injected_ce_marks",                           \
	[RN_CNT_INJ_RNR] = "injected_rnr_naks",                               \
	[RN_CNT_INJ_NAK] = "injected_naks",                                   \
	[RN_CNT_INJ_WR_ERROR] = "injected_wr_errors",                         \
}

#endif
