#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# faults.sh BUILD_DIR: the two hosts (lib.sh) over a bad network, made with
# nftables rules in host B (the host kernel has no netem): random drop at
# 1 % and 5 % both ways and 20 % one way, a byte of payload rewritten,
# packets duplicated, ECN CE set.  Under each, the e2e ops group checks
# every byte and ib_send_bw / ib_read_bw count every message: all arrive
# exactly once, with no error completion, and the counters put each fault
# in its class (loss: timeouts and sequence NAKs; corruption: ICRC errors;
# duplicates: duplicate requests; CE: CNPs sent and acted on).  Then the
# link goes down under a transfer (RETRY_EXC after about timeout x
# (retry_cnt + 1)) and a peer's ringnicd is killed (its peer times out,
# the survivor works on).
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
port=18981
failed=0
fail() { echo "FAIL $*"; failed=$((failed + 1)); }

# rules IN OUT: host B's nftables rules on RoCEv2 packets it receives and
# sends (statements after the match; empty: none).
rules() {
	on_b nft delete table ip fault 2>/dev/null
	on_b nft -f - <<-EOF
	table ip fault {
		chain in {
			type filter hook input priority 0;
			${1:+udp dport 4791 $1;}
		}
		chain out {
			type filter hook output priority 0;
			${2:+udp dport 4791 $2;}
		}
	}
	EOF
}

declare -A before
snapshot() {
	local dev c
	for dev in ringnic0 ringnic1; do
		for c in rx_icrc_errors duplicate_request out_of_seq_request \
			local_ack_timeout_err rcvd_seq_err retry_exceeded_err \
			np_ecn_marked_roce_packets np_cnp_sent rp_cnp_handled \
			rp_cnp_ignored; do
			before[$dev.$c]=$(counter $dev $c)
		done
	done
}
delta() { echo $(($(counter "$1" "$2") - ${before[$1.$2]})); }

# check NAME CHECK...: each CHECK on the counters' deltas since the
# snapshot, "up:DEV:COUNTER" (it moved) or "zero:DEV:COUNTER"; then both
# devices' counters.
check() {
	local name=$1 check want dev c n
	shift
	for check in "$@"; do
		IFS=: read -r want dev c <<<"$check"
		n=$(delta $dev $c)
		case $want in
		up) [ "$n" -gt 0 ] ;;
		zero) [ "$n" = 0 ] ;;
		esac || fail "$name: $dev's $c went up by $n, expected $want"
	done
	echo "$name: ringnic0 $(counters ringnic0)"
	echo "$name: ringnic1 $(counters ringnic1)"
}

# The workload: every message checked or counted, none may fail.  The e2e
# ops group (requesters on A, responders on B) checks every byte and ends
# each subtest in step with its peer: ibv_rc_pingpong cannot be used
# here, as its side that receives last exits at once, and when the last
# ACK is lost its peer's retries meet no QP (RETRY_EXC, rightly).
traffic() { # NAME
	local out
	out=$(RINGNIC_E2E_PEER_DEVICE=ringnic1 ringnic-run "$build/bin/rn_e2e" \
		ops 2>&1) || { fail "$1: e2e ops"; echo "$out" | grep -v ': ok'; }
	for tool in ib_send_bw ib_read_bw; do
		out=$(wire_pair perftest-bw $port \
			$tool -d ringnic0 -x 0 -p $port -s 16384 -n 150 -u 12 -- \
			$tool -d ringnic1 -x 0 -p $port -s 16384 -n 150 -u 12 \
			198.18.0.1 2>&1) || { fail "$1: $tool"; echo "$out" | tail; }
	done
	# READs of two parts (requester.c), the loss in either.
	out=$(wire_pair perftest-bw $port \
		ib_read_bw -d ringnic0 -x 0 -p $port -s 524288 -n 20 -u 12 -- \
		ib_read_bw -d ringnic1 -x 0 -p $port -s 524288 -n 20 -u 12 \
		198.18.0.1 2>&1) || { fail "$1: ib_read_bw 512 KiB"; echo "$out" | tail; }
}

# fault NAME IN OUT CHECK...: traffic under the rules, then check's CHECKs
# and no retry exceeded on either device.
fault() {
	local name=$1
	rules "$2" "$3" || { fail "$name: nft"; return; }
	snapshot
	traffic "$name"
	shift 3
	check "$name" "$@" zero:ringnic0:retry_exceeded_err \
		zero:ringnic1:retry_exceeded_err
}

lost='zero:ringnic0:rx_icrc_errors zero:ringnic1:rx_icrc_errors'
for pct in 1 5; do
	fault "drop $pct %" "numgen random mod 100 < $pct drop" \
		"numgen random mod 100 < $pct drop" $lost up:ringnic1:out_of_seq_request
done
fault "drop 20 % one way" "numgen random mod 100 < 20 drop" "" $lost \
	up:ringnic1:out_of_seq_request up:ringnic0:local_ack_timeout_err
# A byte 100 bytes into the UDP payload (past BTH and RETH) of data packets.
fault "corrupt 3 %" "udp length > 200 numgen random mod 100 < 3 @th,800,8 set 0x5a" "" \
	up:ringnic1:rx_icrc_errors zero:ringnic0:rx_icrc_errors
# Every 20th request datagram host B sends (BTH opcode below 0x0d: SEND,
# WRITE, READ request), the first included, goes twice.  Counted, not
# drawn at random: B's requests leave in GSO runs of up to 64 packets,
# about 110 datagrams here among many more ACKs, and 5 % of all of B's
# datagrams at random once duplicated no request at all.
fault "duplicate 5 %" "" "@th,64,8 < 0x0d numgen inc mod 20 == 0 dup to 198.18.0.1" \
	up:ringnic0:duplicate_request zero:ringnic0:rx_icrc_errors
# Congestion marked both ways (ECN CE): each responder answers with CNPs
# and each requester slows down for them; nothing is lost.
cnp='up:ringnic0:np_ecn_marked_roce_packets up:ringnic1:np_ecn_marked_roce_packets
	up:ringnic0:np_cnp_sent up:ringnic1:np_cnp_sent
	up:ringnic0:rp_cnp_handled up:ringnic1:rp_cnp_handled
	zero:ringnic0:rp_cnp_ignored zero:ringnic1:rp_cnp_ignored'
fault "ECN CE 10 %" "numgen random mod 100 < 10 ip ecn set ce" \
	"numgen random mod 100 < 10 ip ecn set ce" $lost $cnp

# READ data congested: marks on what host B receives while B only reads
# from A.  What B gets marked is READ responses, so B's CNPs must reach
# A's responder, which slows its responses; every READ still completes.
rules "numgen random mod 100 < 10 ip ecn set ce" ""
snapshot
out=$(wire_pair perftest-bw $port \
	ib_read_bw -d ringnic0 -x 0 -p $port -s 65536 -n 300 -u 12 -- \
	ib_read_bw -d ringnic1 -x 0 -p $port -s 65536 -n 300 -u 12 \
	198.18.0.1 2>&1) || { fail "ECN CE on READ responses: ib_read_bw"; echo "$out" | tail; }
check "ECN CE on READ responses" up:ringnic1:np_ecn_marked_roce_packets \
	up:ringnic1:np_cnp_sent up:ringnic0:rp_cnp_handled \
	zero:ringnic0:rp_cnp_ignored zero:ringnic0:np_ecn_marked_roce_packets \
	zero:ringnic0:np_cnp_sent zero:ringnic1:retry_exceeded_err
rules "" ""

# The link down under ib_write_bw: the client (host B) gives up with
# RETRY_EXC_ERR (status 12) after about timeout x (retry_cnt + 1):
# perftest's -u 14 (67 ms) and retry_cnt 7, 0.54 s; no hang.
ringnic-run ib_write_bw -d ringnic0 -x 0 -p $port -s 65536 -D 20 -u 14 \
	>/dev/null 2>&1 &
server=$!
rn_until_listen() { ss -Hltn "sport = :$port" | grep -q .; }
for _ in $(seq 100); do rn_until_listen && break; sleep 0.05; done
on_b timeout 60 ringnic-run ib_write_bw -d ringnic1 -x 0 -p $port -s 65536 \
	-D 20 -u 14 198.18.0.1 >"$RINGNIC_RUNTIME_DIR.client" 2>&1 &
client=$!
sleep 2
down=$(date +%s%N)
ip link set wa down
wait $client
rc=$?
took=$((($(date +%s%N) - down) / 1000000))
kill $server 2>/dev/null
wait $server
echo "link down: the client exited $rc after $took ms"
grep -q "status.*12\|transport retry counter exceeded" "$RINGNIC_RUNTIME_DIR.client" ||
	{ fail "link down: no RETRY_EXC"; tail "$RINGNIC_RUNTIME_DIR.client"; }
[ $rc -ne 0 ] && [ $rc -ne 124 ] && [ $took -ge 400 ] && [ $took -le 5000 ] ||
	fail "link down: exit $rc after $took ms, expected RETRY_EXC after ~540 ms"
ip link set wa up
rn_until_active() { [ "$(cat "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/ringnic0/ports/1/state")" = "4: ACTIVE" ]; }
for _ in $(seq 100); do rn_until_active && break; sleep 0.1; done

# ringnicd of host A killed under a transfer: host B's requester times out,
# ringnic1 works on.
ringnic-run ib_write_bw -d ringnic0 -x 0 -p $port -s 65536 -D 20 -u 14 \
	>/dev/null 2>&1 &
server=$!
for _ in $(seq 100); do rn_until_listen && break; sleep 0.05; done
on_b timeout 60 ringnic-run ib_write_bw -d ringnic1 -x 0 -p $port -s 65536 \
	-D 20 -u 14 198.18.0.1 >"$RINGNIC_RUNTIME_DIR.client" 2>&1 &
client=$!
sleep 2
kill -KILL "${rn_pids[0]}"
wait "${rn_pids[0]}"
wait $client
rc=$?
wait $server
echo "peer killed: the client exited $rc"
grep -q "status.*12\|transport retry counter exceeded" "$RINGNIC_RUNTIME_DIR.client" ||
	{ fail "peer killed: no RETRY_EXC"; tail "$RINGNIC_RUNTIME_DIR.client"; }
rn_pids=("${rn_pids[@]:1}")
# A new ringnicd takes the dead one's place; the pair works again.
wire_start A ringnic0
out=$(wire_pair pingpong $port \
	ibv_rc_pingpong -d ringnic0 -g 0 -p $port -n 100 -c -- \
	ibv_rc_pingpong -d ringnic1 -g 0 -p $port -n 100 -c 198.18.0.1 2>&1) ||
	{ fail "a new ringnic0 with the old ringnic1"; echo "$out" | tail; }
rm -f "$RINGNIC_RUNTIME_DIR.client"
[ $failed = 0 ] || wire_fail "$failed failed"
wire_finish
