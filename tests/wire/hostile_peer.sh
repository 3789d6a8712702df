#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# hostile_peer.sh BUILD_DIR: a peer on the wire that lies (hostile_peer.c)
# against ringnic0 of the two hosts (lib.sh), from host B's addresses: its
# own, 198.18.0.3, added here (to B's lo, so that ringnic1, bound to wb,
# leaves it to the liar; B answers ARP for it on wb all the same), and the
# good peer's, spoofed.  Then ringnic0's
# counters must put each kind of drop in its class, and show no ICRC error
# and no malformed packet: every packet was well formed and sealed.
# RN_HOSTILE_PEER_ARGS: more options (--seed N replays a run).
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
on_b ip addr add 198.18.0.3/32 dev lo || wire_fail "cannot add 198.18.0.3"

declare -A before
names="rx_no_qp_drops out_of_seq_request duplicate_request resp_naks_sent
	send_rnr_err rx_unexpected_responses rx_duplicate_responses rx_qkey_drops
	rx_icrc_errors
	rx_malformed_packets"
for c in $names; do
	before[$c]=$(counter ringnic0 $c)
done

out=$(ringnic-run "$build/bin/rn_hostile_peer" --netns "$B" \
	${RN_HOSTILE_PEER_ARGS:-} 2>&1)
status=$?
echo "$out"
if [ $status != 0 ]; then
	wire_clean_counters ringnic0 ringnic1
	wire_fail "rn_hostile_peer failed"
fi
# Counter files are rewritten at most every 100 ms.
sleep 0.3

# tried NAME: how many packets of the kind the table calls NAME were sent.
tried() {
	echo "$out" | awk -v name="$1" 'index($0, "  " name " ") == 1 { print $NF }'
}
delta() { echo $(($(counter ringnic0 "$1") - ${before[$1]})); }
failed=0
# at_least COUNTER N: the counter moved by N or more.
at_least() {
	local d
	d=$(delta "$1")
	if [ "$d" -ge "$2" ]; then
		echo "ok   $1 +$d (at least $2)"
	else
		echo "FAIL $1 +$d, fewer than the $2 packets it must count"
		failed=$((failed + 1))
	fi
}
not_peer=$(tried "packet for the good pair's QP from another address")
spoofed=$(tried "spoofed from the good peer, guessed PSN")
far=$(tried "request far ahead of the expected PSN")
norecv=$(tried "SEND to a QP with no receive posted")
ghosts=$(($(tried "ACK for a PSN never sent") +
	$(tried "NAK for a PSN never sent") +
	$(tried "READ response with nothing outstanding") +
	$(tried "atomic ACK with nothing outstanding")))
qkey=$(tried "datagram with a Q_Key not the QP's")
[ -n "$not_peer" ] && [ "$not_peer" -gt 0 ] || wire_fail "no counts in the output"
at_least rx_no_qp_drops "$not_peer"
# A spoofed request is a duplicate or beyond a gap (one NAK per gap).
sequence=$(($(delta out_of_seq_request) + $(delta duplicate_request)))
if [ $sequence -ge $((spoofed + far)) ]; then
	echo "ok   out_of_seq_request + duplicate_request +$sequence (at least $((spoofed + far)))"
else
	echo "FAIL out_of_seq_request + duplicate_request +$sequence, fewer than $((spoofed + far))"
	failed=$((failed + 1))
fi
at_least send_rnr_err "$norecv"
at_least rx_unexpected_responses "$ghosts"
at_least rx_qkey_drops "$qkey"
for c in rx_icrc_errors rx_malformed_packets; do
	[ "$(delta $c)" = 0 ] || { echo "FAIL $c +$(delta $c)"; failed=$((failed + 1)); }
done
wire_clean_counters ringnic0 ringnic1 || failed=$((failed + $?))
[ $failed = 0 ] || wire_fail "$failed counter checks failed"
echo "hostile_peer: ok"
