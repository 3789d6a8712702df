#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# capture.sh BUILD_DIR: ringnic-dump(1) between the two hosts (lib.sh).
# ringnic0 (host A) is captured while unmodified tools run between it and
# ringnic1 (host B), and Debian's tshark reads each file with no
# configuration; capture_check.py compares what tshark decodes (opcodes,
# destination QPs, PSNs, payload lengths, ICRCs, CM MADs) with what the
# tools posted and printed.  Then: the filters (-q, -p), a snap length (-s),
# IPv6, and a plain user, who sees nothing of root's QPs.
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
here=$(cd "$(dirname "$0")" && pwd)
port=18971
failed=0
out=$RINGNIC_RUNTIME_DIR.capture
mkdir -p "$out"
chmod 777 "$out"

# dump_start FILE [ringnic-dump ARGS...]: a capture of ringnic0 to FILE,
# running once it says so.
dump_start() {
	local file=$1
	shift
	${DUMP_AS:-} ringnic-dump -d ringnic0 -w "$file" "$@" 2>"$file.err" &
	dump_pid=$!
	for _ in $(seq 100); do
		grep -q "capturing on" "$file.err" && return 0
		kill -0 $dump_pid 2>/dev/null || break
		sleep 0.05
	done
	cat "$file.err"
	return 1
}

# dump_stop FILE: it ends (SIGINT, as tcpdump), with status 0 and nothing
# dropped.
dump_stop() {
	kill -INT $dump_pid
	wait $dump_pid || { echo "ringnic-dump exited $?"; return 1; }
	grep -qx "0 packets dropped by ringnicd" "$1.err" ||
		{ cat "$1.err"; return 1; }
}

# hexfield TEXT WORD: the number after WORD in a line of ringnic-dump's.
hexfield() {
	sed -nE "s/.*$2 (0x)?0*([0-9a-fA-F]+).*/0x\2/p" <<<"$1" | head -n 1
}

# case NAME CHECK 'DUMP-ARGS' 'CHECK-ARGS' SERVER... -- CLIENT...: capture
# a pair; the client prints both QPs (local: its own).
case_() {
	local name=$1 check=$2 dump_args=$3 check_args=$4 file pair
	shift 4
	file=$out/$name.pcap
	port=$((port + 1))
	if ! dump_start "$file" $dump_args; then
		echo "FAIL $name: ringnic-dump did not start"
		failed=$((failed + 1))
		return
	fi
	pair=$(${PAIR:-wire_pair} none "$@" 2>&1)
	local rc=$?
	dump_stop "$file" || rc=1
	if [ $rc -ne 0 ]; then
		echo "FAIL $name"
		echo "$pair" | tail -n 20
		failed=$((failed + 1))
		return
	fi
	echo "$pair" >"$file.client"
	if python3 "$here/capture_check.py" "$file" "$check" $check_args \
		client_out="$file.client"; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		failed=$((failed + 1))
	fi
}

# perftest NAME CHECK 'DUMP-ARGS' 'CHECK-ARGS' TOOL [ARGS...] (GID index 0:
# IPv4); the client on CLIENT_DEV, ringnic1 by default.
perftest() {
	local name=$1 check=$2 dump_args=$3 check_args=$4 gid=${GID:-0}
	shift 4
	case_ "$name" "$check" "$dump_args" "$check_args" $((port + 1)) \
		"$@" -d ringnic0 -x $gid -p $((port + 1)) -- \
		"$@" -d "${CLIENT_DEV:-ringnic1}" -x $gid -p $((port + 1)) 198.18.0.1
}

# The link's MTU is 1500: active_mtu 1024.
perftest write write "" "iters=20 size=4096 mtu=1024" ib_write_bw -s 4096 -n 20
perftest read read "" "iters=20 size=4096 mtu=1024" ib_read_bw -s 4096 -n 20
perftest send send "" "iters=20 size=4096 mtu=1024" ib_send_bw -s 4096 -n 20
perftest atomic atomic "" "iters=50" ib_atomic_bw -n 50
case_ ud ud "" "iters=20 size=512" $((port + 1)) \
	ibv_ud_pingpong -s 512 -n 20 -d ringnic0 -g 0 -p $((port + 1)) -- \
	ibv_ud_pingpong -s 512 -n 20 -d ringnic1 -g 0 -p $((port + 1)) 198.18.0.1
# rping_case NAME PAIR PORT CHECK: rping through rdma_cm (PAIR: the pair
# runner), captured and checked.
rping_case() {
	local name=$1 pair=$2 rport=$3 check=$4 file=$out/$1.pcap rc
	dump_start "$file" || { echo "FAIL $name: ringnic-dump did not start"; failed=$((failed + 1)); return; }
	RN_PAIR_CM_LOG=$RINGNIC_RUNTIME_DIR.ringnic0.log $pair none $rport \
		rping -s -a 198.18.0.1 -p $rport -C 5 -S 64 -V -- \
		rping -c -a 198.18.0.1 -p $rport -C 5 -S 64 -V >/dev/null 2>&1
	rc=$?
	dump_stop "$file" || rc=1
	if [ $rc -eq 0 ] && python3 "$here/capture_check.py" "$file" "$check"; then
		echo "ok   $name"
	else
		echo "FAIL $name"
		failed=$((failed + 1))
	fi
}
# Across the hosts: the CM's MADs on QP1, then the RC traffic.
rping_case rping wire_pair 7471 cm
# The local path: both ends on ringnic0 (host A), which moves the data
# with no packets; the capture gets the packets it would have sent.  With
# a path MTU of 1024 a message of 4096 bytes is 4 packets, here too.
local_pair() { "$(dirname "$0")/../pair.sh" "$@"; }
export PAIR=local_pair CLIENT_DEV=ringnic0
perftest local-write write "" "iters=20 size=4096 mtu=1024" ib_write_bw -s 4096 -n 20
perftest local-read read "" "iters=20 size=4096 mtu=1024" ib_read_bw -s 4096 -n 20
perftest local-send send "" "iters=20 size=4096 mtu=1024" ib_send_bw -s 4096 -n 20
perftest local-atomic atomic "" "iters=50" ib_atomic_bw -n 50
perftest local-snaplen write "-s 64" "iters=20 size=4096 mtu=1024 snaplen=64" \
	ib_write_bw -s 4096 -n 20
case_ local-ud ud "" "iters=20 size=512" $((port + 1)) \
	ibv_ud_pingpong -s 512 -n 20 -d ringnic0 -g 0 -p $((port + 1)) -- \
	ibv_ud_pingpong -s 512 -n 20 -d ringnic0 -g 0 -p $((port + 1)) 198.18.0.1
rping_case local-rping local_pair 7472 rping
unset PAIR CLIENT_DEV

# GID 1 is IPv6 (perftest meets its peer over IPv4 TCP all the same).
GID=1 perftest ipv6 write "" "iters=20 size=4096 mtu=1024 ipv6=1" \
	ib_write_bw -s 4096 -n 20
perftest snaplen write "-s 64" "iters=20 size=4096 mtu=1024 snaplen=64" \
	ib_write_bw -s 4096 -n 20

# -q QPN, then -p PID, while two pairs run: only the packets of the one
# whose server QP (server process) it names.  Its QPs are learnt as a user would, from a capture of the
# device while that pair runs alone (perftest prints them at its end).
# Records the reader cannot take in time are dropped here (counted): the
# check is the filter's, not the count's.
file=$out/filter.pcap
bg_pair() { # PORT TOOL [ARGS...]: server on A, client on B, in the background
	local p=$1
	shift
	timeout 60 ringnic-run "$@" -d ringnic0 -x 0 -p $p >/dev/null 2>&1 &
	bg_pids+=($!)
	for _ in $(seq 100); do
		ss -Hltn "sport = :$p" | grep -q . && break
		sleep 0.05
	done
	on_b timeout 60 ringnic-run "$@" -d ringnic1 -x 0 -p $p 198.18.0.1 >/dev/null 2>&1 &
	bg_pids+=($!)
}
bg_pids=()
bg_pair 18990 ib_write_bw -s 1024 -D 4
timeout 10 ringnic-dump -d ringnic0 -c 400 >"$file.lines" 2>/dev/null
fqpn=$(hexfield "$(grep -m1 " in .*opcode 0x0[6-9ab]" "$file.lines")" dqpn)
fpeer=$(hexfield "$(grep -m1 " out .*opcode 0x11" "$file.lines")" dqpn)
bg_pair 18991 ib_send_bw -s 1024 -D 4
sleep 0.5
timeout 10 ringnic-dump -d ringnic0 -w "$file" -q "$fqpn" -c 2000 2>"$file.err"
rc=$?
# -p PID: the QPs of the filtered pair's server process, the same packets.
fpid=$(pgrep -xf "ib_write_bw -s 1024 -D 4 -d ringnic0 -x 0 -p 18990")
timeout 10 ringnic-dump -d ringnic0 -w "$out/pid.pcap" -p "$fpid" -c 2000 \
	2>"$out/pid.pcap.err" || rc=1
for pid in "${bg_pids[@]}"; do
	wait $pid || { rc=1; echo "a pair beside the filter failed"; }
done
if [ $rc -eq 0 ] && grep -qx "2000 packets captured" "$file.err" &&
	python3 "$here/capture_check.py" "$file" filter server_qpn="$fqpn" client_qpn="$fpeer"; then
	echo "ok   filter -q $fqpn"
else
	echo "FAIL filter -q $fqpn: $(cat "$file.err")"
	failed=$((failed + 1))
fi
if [ $rc -eq 0 ] && grep -qx "2000 packets captured" "$out/pid.pcap.err" &&
	python3 "$here/capture_check.py" "$out/pid.pcap" filter server_qpn="$fqpn" client_qpn="$fpeer"; then
	echo "ok   filter -p $fpid"
else
	echo "FAIL filter -p $fpid: $(cat "$out/pid.pcap.err")"
	failed=$((failed + 1))
fi

# A plain user sees the packets of their own QPs, and none of root's.
chmod 755 "$RINGNIC_RUNTIME_DIR"
nobody=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
DUMP_AS=${nobody[*]} RN_PAIR_LAUNCH="${nobody[*]} ringnic-run" perftest nobody-own write "" \
	"iters=20 size=4096 mtu=1024" ib_write_bw -s 4096 -n 20
file=$out/nobody.pcap
if DUMP_AS=${nobody[*]} dump_start "$file" &&
	wire_pair perftest-bw $((port + 1)) ib_write_bw -s 4096 -n 20 -d ringnic0 -x 0 -p $((port + 1)) -- \
		ib_write_bw -s 4096 -n 20 -d ringnic1 -x 0 -p $((port + 1)) 198.18.0.1 >/dev/null 2>&1 &&
	dump_stop "$file" && grep -qx "0 packets captured" "$file.err"; then
	echo "ok   plain user sees nothing of root's"
else
	echo "FAIL plain user: $(cat "$file.err")"
	failed=$((failed + 1))
fi
port=$((port + 1))

wire_clean_counters ringnic0 ringnic1 || failed=$((failed + 1))
[ $failed -eq 0 ] || wire_fail "$failed capture checks failed"
wire_finish
