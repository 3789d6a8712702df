#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# soak.sh BUILD_DIR [ROUNDS]: rdma_cm between the two hosts (tests/wire/
# lib.sh), server on ringnic0, clients on ringnic1.
#   - ROUNDS (default 10; RINGNIC_CM_SOAK_ROUNDS) rounds of ucmatose with
#     100 connections each: connect, two messages each way, disconnect;
#   - 30 rping clients killed at random points of their handshake or their
#     pings, against one persistent rping server, which must then still
#     serve a client to the end.
# Afterwards each ringnicd holds the descriptors it held before and has
# not grown by more than RINGNIC_SOAK_RSS_MIB (default 8) MiB, and the
# ports are free again: the servers listen on the same ports every round,
# which a leaked listener would refuse (EADDRINUSE).
set -u
. "$(dirname "$0")/../wire/lib.sh"
wire_hosts "$@"
rounds=${2:-${RINGNIC_CM_SOAK_ROUNDS:-10}}
wire_start A ringnic0 --debug # its log says when a server listens
wire_start B ringnic1
export RN_PAIR_CLIENT_NETNS=$B RN_PAIR_TIMEOUT=120
export RN_PAIR_CM_LOG=$RINGNIC_RUNTIME_DIR.ringnic0.log
a4=198.18.0.1
cm_round() { # CONNECTIONS
	"$(dirname "$0")/../pair.sh" "match:return status 0" 7500 \
		ucmatose -p 7500 -c "$1" -C 2 -- ucmatose -s $a4 -p 7500 -c "$1" -C 2
}
cm_round 4 >/dev/null || wire_fail "warm-up failed"
wire_baseline

for r in $(seq "$rounds"); do
	out=$(cm_round 100 2>&1) || wire_fail "round $r: $out"
done
echo "soak: $rounds rounds of 100 connections"

ringnic-run rping -s -P -a $a4 -p 7501 >/dev/null 2>&1 &
server=$!
sleep 1
for i in $(seq 30); do
	on_b ringnic-run rping -c -a $a4 -p 7501 -C 100000 >/dev/null 2>&1 &
	client=$!
	sleep "0.$((RANDOM % 5))$((RANDOM % 10))"
	kill -KILL $client 2>/dev/null
	wait $client 2>/dev/null
done
out=$(timeout 60 ip netns exec "$B" ringnic-run rping -c -v -a $a4 -p 7501 -C 20 2>&1)
echo "$out" | grep -q "ping data: rdma-ping-19:" ||
	wire_fail "the persistent server after the killed clients: $out"
kill -KILL $server
wait $server 2>/dev/null
echo "soak: 30 clients killed, the server still serves"
echo "ringnic0: $(counters ringnic0)"
echo "ringnic1: $(counters ringnic1)"

wire_check_baseline
# The ports are free: listen on them once more.
cm_round 2 >/dev/null || wire_fail "port 7500 after the soak"
wire_finish
