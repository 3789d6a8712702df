#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# soak.sh BUILD_DIR [SECONDS]: the two hosts (lib.sh) for SECONDS (default
# 60; RINGNIC_SOAK_SECONDS) with 1 % of host B's RoCEv2 packets dropped
# each way: rounds of the e2e ops and sge groups (every byte checked; see
# faults.sh for why not ibv_rc_pingpong) one after another, while
# ib_write_bw clients are killed mid-transfer beside them.  Every checked
# round must pass; afterwards each ringnicd holds the descriptors it held
# before the soak and has not grown by more than RINGNIC_SOAK_RSS_MIB
# (default 8) MiB.
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
seconds=${2:-${RINGNIC_SOAK_SECONDS:-60}}
wire_devices

# Warm up (first QPs, sockets, counters), then the baseline.
wire_pair pingpong 18991 ibv_rc_pingpong -d ringnic0 -g 0 -p 18991 -n 50 -- \
	ibv_rc_pingpong -d ringnic1 -g 0 -p 18991 -n 50 198.18.0.1 >/dev/null ||
	wire_fail "warm-up failed"
wire_baseline

on_b nft -f - <<EOF
table ip loss {
	chain in { type filter hook input priority 0; udp dport 4791 numgen random mod 100 < 1 drop; }
	chain out { type filter hook output priority 0; udp dport 4791 numgen random mod 100 < 1 drop; }
}
EOF
# Victims: ib_write_bw pairs whose client dies after 1 to 3 s.
victims() {
	local port=18993 server= client=
	trap 'kill -KILL $server $client 2>/dev/null; exit' TERM
	while :; do
		ringnic-run ib_write_bw -d ringnic0 -x 0 -p $port -s 16384 -D 10 \
			>/dev/null 2>&1 &
		server=$!
		sleep 0.5
		on_b ringnic-run ib_write_bw -d ringnic1 -x 0 -p $port -s 16384 \
			-D 10 198.18.0.1 >/dev/null 2>&1 &
		client=$!
		sleep $((1 + RANDOM % 3)) & wait $!
		kill -KILL $client 2>/dev/null
		wait $client 2>/dev/null
		timeout 30 tail --pid=$server -f /dev/null || kill -KILL $server
		wait $server 2>/dev/null
	done
}
victims &
victims_pid=$!
end=$((SECONDS + seconds))
rounds=0
while [ $SECONDS -lt $end ]; do
	out=$(RINGNIC_E2E_PEER_DEVICE=ringnic1 ringnic-run "$build/bin/rn_e2e" \
		ops sge 2>&1) || wire_fail "round $rounds failed: $out"
	rounds=$((rounds + 1))
done
kill $victims_pid
wait $victims_pid 2>/dev/null
on_b nft delete table ip loss
echo "soak: $rounds checked rounds in $seconds s"
echo "ringnic0: $(counters ringnic0)"
echo "ringnic1: $(counters ringnic1)"

# What the victims left must go: their QPs are destroyed when ringnicd
# sees each process exit.
wire_check_baseline
wire_finish
