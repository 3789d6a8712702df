#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kernel-mode.sh BUILD_DIR KO [GROUP...]: runs inside the VM (tests/vm/run.sh) with
# ib_core and ib_uverbs loaded and eth0 up.  ringnic.ko's device, driven by
# ringnicd, used by unmodified tools with no ringnic-run, no SYSFS_PATH and
# no LD_PRELOAD: rdma link add, rdma dev, ibv_devinfo, the pingpongs (RC,
# UD, SRQ, UC, XRC, ODP), a capture and injected faults, the perftest matrix (RC, UD, UC, XRC, SRQ),
# events, rdma_cm programs over the kernel's own rdma_cm (loaded first, so
# that every later step has the kernel's MAD layer on ringnic0's QP1);
# contexts that close as their processes exit, many at once; then
# ringnicd killed under clients, a client's pid reused, and module
# unload/load cycles with and without clients.  GROUPs (default all): tools
# cmsoak churn netdev busy wire fatal unload pidreuse cycles.  Prints one
# line per step; exits with the number of failed steps.
set -u
build=$1
ko=$2
shift 2
groups=${*:-tools cmsoak churn netdev busy wire fatal unload pidreuse cycles}
src=$(cd "$(dirname "$0")/../.." && pwd)
# libibverbs' own way to load a provider that is not installed.
export RDMAV_DRIVERS=$build/lib/libringnic
export PATH="$build/bin:$PATH"
export RN_PAIR_LAUNCH="" RN_PAIR_TIMEOUT=120
gid=1 # RoCEv2 IPv4 GID of eth0 (0 is the IPv6 link-local one)
failed=0
port=18515

step() {
	local name=$1 rc
	shift
	echo "== $name"
	"$@"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok   $name"
	else
		echo "FAIL $name (exit $rc)"
		failed=$((failed + 1))
	fi
}

device_up() {
	for _ in $(seq 100); do
		ibv_devinfo -d ringnic0 2>/dev/null | grep -q PORT_ACTIVE && return 0
		sleep 0.1
	done
	echo "ringnic0 did not come up" >&2
	return 1
}

start_ringnicd() { # [ringnicd options]
	ringnicd --name ringnic0 --foreground --runtime-dir /run/ringnic-k "$@" \
		2>>/tmp/ringnicd.log &
	ringnicd_pid=$!
	device_up
}

stop_ringnicd() {
	kill -TERM "$ringnicd_pid" 2>/dev/null
	wait "$ringnicd_pid" 2>/dev/null
}

restart_ringnicd() { # [ringnicd options]
	stop_ringnicd
	start_ringnicd "$@"
}

link_add() {
	rdma link add ringnic0 type ringnic netdev eth0 &&
		rdma dev show ringnic0 && rdma link show ringnic0/1
}

pair() { # CHECK TOOL ARGS...: server and client of TOOL on ringnic0
	local check=$1
	shift
	port=$((port + 1))
	"$src/tests/pair.sh" "$check" "$port" "$@" -p "$port" -- \
		"$@" -p "$port" localhost
}

devinfo() {
	ibv_devices | grep -q ringnic0 && ibv_devinfo -v -d ringnic0 >/tmp/devinfo &&
		grep -q "transport:.*InfiniBand" /tmp/devinfo &&
		grep -q "link_layer:.*Ethernet" /tmp/devinfo &&
		grep -q "GID\[ *$gid\]:.*10.0.2.15" /tmp/devinfo &&
		grep -Eq "max_srq:[[:space:]]+[1-9]" /tmp/devinfo &&
		grep -Eq "max_ah:[[:space:]]+[1-9]" /tmp/devinfo &&
		grep -Eq "max_mw:[[:space:]]+[1-9]" /tmp/devinfo &&
		grep -A2 "general_odp_caps:" /tmp/devinfo | grep -q ODP_SUPPORT_IMPLICIT &&
		grep -A1 "rc_odp_caps:" /tmp/devinfo | grep -q SUPPORT_SEND ||
		{ cat /tmp/devinfo; return 1; }
}

# ringnicd killed under an event-driven client: IBV_EVENT_DEVICE_FATAL,
# the wait for a completion event ends, verbs fail (tests/events).
device_fatal() {
	local out=/tmp/fatal.out rc
	RINGNIC_TEST_GID=$gid "$build/bin/rn_device_fatal" >$out 2>&1 &
	local client=$!
	for _ in $(seq 100); do
		grep -q ready $out && break
		sleep 0.1
	done
	kill -KILL "$ringnicd_pid"
	wait "$ringnicd_pid" 2>/dev/null
	timeout 30 tail --pid=$client -f /dev/null
	wait $client
	rc=$?
	cat $out
	[ $rc -eq 3 ]
}

# A perftest pair in the middle of its run loses ringnicd: both exit with
# an error, neither hangs.
kill_under_tool() {
	local crc src
	port=$((port + 1))
	timeout 60 ib_send_bw -d ringnic0 -x $gid -e -n 1000000 -p $port \
		>/tmp/kill.server 2>&1 &
	local server=$!
	for _ in $(seq 100); do
		ss -Hltn "sport = :$port" | grep -q . && break
		sleep 0.1
	done
	timeout 60 ib_send_bw -d ringnic0 -x $gid -e -n 1000000 -p $port \
		localhost >/tmp/kill.client 2>&1 &
	local client=$!
	sleep 5
	kill -KILL "$ringnicd_pid"
	wait "$ringnicd_pid" 2>/dev/null
	wait $client
	crc=$?
	wait $server
	src=$?
	echo "after ringnicd died: client exit $crc, server exit $src"
	tail -n 3 /tmp/kill.server /tmp/kill.client
	[ $crc -ne 0 ] && [ $crc -ne 124 ] && [ $src -ne 0 ] && [ $src -ne 124 ]
}

# With ringnicd attached the module is in use: rmmod is refused.  Deleting
# the link under a live client disassociates it (IBV_EVENT_DEVICE_FATAL,
# its objects freed through ringnicd), ringnicd stops by itself, and then
# the module unloads and loads again.
unload_under_client() {
	local out=/tmp/unload.out rc
	if rmmod ringnic 2>/dev/null; then
		echo "rmmod succeeded under an attached ringnicd" >&2
		return 1
	fi
	RINGNIC_TEST_GID=$gid "$build/bin/rn_device_fatal" >$out 2>&1 &
	local client=$!
	for _ in $(seq 100); do
		grep -q ready $out && break
		sleep 0.1
	done
	timeout 60 rdma link delete ringnic0 || return 1
	timeout 30 tail --pid=$client -f /dev/null
	wait $client
	rc=$?
	cat $out
	timeout 30 tail --pid="$ringnicd_pid" -f /dev/null
	kill -0 "$ringnicd_pid" 2>/dev/null && { echo "ringnicd still runs" >&2; return 1; }
	rmmod ringnic && insmod "$ko" || return 1
	[ $rc -eq 3 ]
}

# ringnicd's port follows eth0, the netdev of `rdma link add`, as its log
# says: found through RDMA netlink, its MTU and link tracked, the kernel's
# GID table read again when an address comes and goes.  The port state the
# kernel stub reports (rdma link) follows the link too.
log_mark=0
mark() { log_mark=$(wc -l </tmp/ringnicd.log); }
logged() { # PATTERN: ringnicd logged it since the mark, within 10 s
	for _ in $(seq 100); do
		tail -n +$((log_mark + 1)) /tmp/ringnicd.log | grep -q "$1" && return 0
		sleep 0.1
	done
	echo "ringnicd did not log '$1'" >&2
	return 1
}
last_gids() { grep "ringnic0: GIDs" /tmp/ringnicd.log | tail -n 1; }
gid_gone() { ! last_gids | grep -q "$1"; }
link_state() {
	for _ in $(seq 100); do
		rdma link show ringnic0/1 | grep -q "state $1 " && return 0
		sleep 0.1
	done
	echo "rdma link: not $1: $(rdma link show ringnic0/1)" >&2
	return 1
}
netdev_follow() {
	local route ifindex
	ifindex=$(cat /sys/class/net/eth0/ifindex)
	route=$(ip route show default)
	grep -q "ringnic0: port 1 on eth0 (ifindex $ifindex)" /tmp/ringnicd.log &&
		grep -q "ringnic0: port 1 ACTIVE" /tmp/ringnicd.log || return 1
	mark
	ip link set eth0 mtu 2200 && logged "eth0 MTU 2200: active_mtu 2048" &&
		ip link set eth0 mtu 1500 && logged "eth0 MTU 1500: active_mtu 1024" ||
		return 1
	mark
	ip addr add 198.18.0.1/24 dev eth0 && logged "GIDs.* [0-9]*:198.18.0.1" &&
		ip addr del 198.18.0.1/24 dev eth0 || return 1
	for _ in $(seq 100); do
		gid_gone 198.18.0.1 && break
		sleep 0.1
	done
	gid_gone 198.18.0.1 || { echo "198.18.0.1 is still a GID" >&2; return 1; }
	mark
	ip link set eth0 down && logged "ringnic0: port 1 DOWN" &&
		link_state DOWN || return 1
	mark
	ip link set eth0 up && logged "ringnic0: port 1 ACTIVE" &&
		link_state ACTIVE || return 1
	[ -z "$route" ] || ip route replace $route
}

# eth0's UDP port 4791 held on both wildcards, as rdma_rxe holds it: the
# GIDs the kernel made from eth0's addresses are none ringnicd can use, so
# the port the stub reports is INIT (LinkUp), not ACTIVE, and both logs say
# why.  Once the port is free ringnicd binds it (it tries every second) and
# the port is ACTIVE again, with an event, and carries traffic.
port_busy() {
	local holder
	stop_ringnicd
	rn_udp_hold 4791 0.0.0.0 :: >/tmp/holder 2>&1 &
	holder=$!
	for _ in $(seq 50); do
		grep -qs holding /tmp/holder && break
		sleep 0.1
	done
	grep -q holding /tmp/holder || { cat /tmp/holder; return 1; }
	mark
	ringnicd --name ringnic0 --foreground --runtime-dir /run/ringnic-k \
		2>>/tmp/ringnicd.log &
	ringnicd_pid=$!
	link_state INIT &&
		rdma link show ringnic0/1 | grep -q "physical_state LINK_UP" &&
		ibv_devinfo -d ringnic0 | grep -q "PORT_INIT" &&
		logged "ringnic0: GID $gid (10.0.2.15): cannot bind UDP port 4791: Address already in use" &&
		logged "ringnic0: port 1 INIT" &&
		dmesg | grep -q "ringnic0: ringnicd can use none of port 1's GIDs" ||
		{ kill "$holder"; return 1; }
	kill "$holder"
	wait "$holder"
	logged "ringnic0: GID $gid (10.0.2.15): UDP port 4791 bound" &&
		link_state ACTIVE &&
		dmesg | grep -q "ringnic0: ringnicd can use port 1's GIDs" &&
		pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 100
}

# RoCEv2 in kernel mode: ringnicd owns the wire there too.  With
# --local-on-wire the pair's packets go through eth0's address, and the
# port's counters, which ringnicd sends the stub, are the kernel device's
# hw_counters: `rdma statistic` and sysfs show them.
stat_of() { # COUNTER: its value in `rdma statistic`
	rdma statistic show link ringnic0/1 |
		grep -o " $1 [0-9]*" | awk '{ print $2 }'
}
wire_counters() {
	local sent
	stop_ringnicd
	start_ringnicd --local-on-wire &&
		pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 500 -s 8192 -c &&
		pair perftest-bw ib_read_bw -d ringnic0 -x $gid -n 500 || return 1
	sleep 0.3 # ringnicd sends them at most every 100 ms
	rdma statistic show link ringnic0/1
	sent=$(stat_of sent_pkts)
	[ "${sent:-0}" -gt 1000 ] && [ "$(stat_of rcvd_pkts)" = "$sent" ] &&
		[ "$(stat_of rx_icrc_errors)" = 0 ] &&
		[ "$(cat /sys/class/infiniband/ringnic0/ports/1/hw_counters/sent_pkts)" = "$sent" ] ||
		return 1
	stop_ringnicd
	start_ringnicd
}

# Per-engine counters: at two engines, through eth0, the two processes'
# contexts on engines 0 and 1 each count what they sent, and the stub's
# engines/K/hw_counters/ sum to its port's.  They go when ringnicd
# detaches, and an idle ringnicd's are there as soon as it is.
engine_sums_match() {
	local c k v sum dir=/sys/class/infiniband/ringnic0
	for c in "$dir"/ports/1/hw_counters/*; do
		[ "${c##*/}" = lifespan ] && continue # the core's, no counter
		sum=0
		for k in 0 1; do
			v=$(cat "$dir/engines/$k/hw_counters/${c##*/}") || return 1
			sum=$((sum + v))
		done
		[ "$sum" = "$(cat "$c")" ] || {
			echo "${c##*/}: engines $sum, port $(cat "$c")"
			return 1
		}
	done
}
engine_counters() {
	local k i dir=/sys/class/infiniband/ringnic0
	restart_ringnicd --engines 2 --local-on-wire &&
		pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 500 || return 1
	# ringnicd sends them at most every 100 ms
	for i in $(seq 30); do
		engine_sums_match >/dev/null && break
		sleep 0.1
	done
	engine_sums_match || return 1
	for k in 0 1; do
		grep -H . "$dir/engines/$k/hw_counters/sent_pkts"
		[ "$(cat "$dir/engines/$k/hw_counters/sent_pkts")" -gt 100 ] ||
			return 1
	done
	stop_ringnicd
	[ ! -e "$dir/engines" ] || { echo "engines/ outlived ringnicd"; return 1; }
	# One engine, idle: its counters are there at once, zeros.
	start_ringnicd || return 1
	for i in $(seq 30); do
		[ -e "$dir/engines/0/hw_counters/sent_pkts" ] && break
		sleep 0.1
	done
	grep -H . "$dir/engines/0/hw_counters/sent_pkts" && [ ! -e "$dir/engines/1" ]
}

# A client with a forked child holding its uverbs file exits and a new
# process gets its pid, or it execs: ringnicd must reach neither
# (tests/pidreuse).  ringnicd runs in the test's pid namespace, where
# ns_last_pid chooses the pids it sees.
pid_reuse() {
	stop_ringnicd
	RINGNIC_TEST_GID=$gid unshare --pid --fork --mount-proc sh -c '
		ringnicd --name ringnic0 --foreground --runtime-dir /run/ringnic-p \
			2>>/tmp/ringnicd.log &
		daemon=$!
		for _ in $(seq 100); do
			rdma link show ringnic0/1 | grep -q "state ACTIVE" && break
			sleep 0.1
		done
		"$0"
		rc=$?
		kill -TERM $daemon
		wait $daemon
		exit $rc' "$build/bin/rn_pid_reuse"
}

# A process that exits closes its uverbs file (RN_KDEV_CLOSE) and makes
# its pidfd readable at once: ringnicd sees both in one batch and must free
# the context once.  Some exit after closing, some are killed holding QPs.
context_churn() {
	local round i pids
	for round in 1 2; do
		pids=()
		for i in $(seq 8); do
			ibv_devinfo -d ringnic0 >/dev/null &
			pids+=($!)
			ibv_rc_pingpong -d ringnic0 -g $gid -p $((port + 100 + i)) \
				>/dev/null 2>&1 &
			pids+=($!)
		done
		sleep 2
		kill -KILL "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	done
	kill -0 "$ringnicd_pid" 2>/dev/null || { echo "ringnicd died" >&2; return 1; }
	ibv_devinfo -d ringnic0 | grep -q PORT_ACTIVE &&
		pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 100
}

load_cycles() {
	local i
	for i in 1 2 3; do
		stop_ringnicd
		rdma link delete ringnic0 2>/dev/null
		rmmod ringnic && insmod "$ko" && link_add >/dev/null &&
			start_ringnicd && ibv_devinfo -d ringnic0 >/dev/null &&
			pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 100 \
				>/dev/null || return 1
	done
	stop_ringnicd
}

# cm_pair CHECK PORT SERVER-CMD... -- CLIENT-CMD...: an rdma_cm pair on
# eth0's address, both ends on ringnic0: the kernel's own rdma_cm, its
# MADs through ringnicd and back over UDP.  The server listens on an
# rdma_cm id (or, with RN_PAIR_CM_KERNEL set empty, a TCP socket: qperf).
cm_pair() {
	RN_PAIR_CM_KERNEL=${RN_PAIR_CM_KERNEL-1} "$src/tests/pair.sh" "$@"
}

eth0_addr() { ip -4 -o addr show dev eth0 | awk '{ sub("/.*", "", $4); print $4 }'; }

# The tools of tests/cm/tools.sh, over the kernel's rdma_cm.
cm_tools() {
	local a t="(the kernel's rdma_cm)"
	a=$(eth0_addr)
	port=$((port + 1))
	step "rping -V $t" cm_pair "match:ping data: rdma-ping-99:" $port \
		rping -s -v -V -a "$a" -p $port -C 100 -- \
		rping -c -v -V -a "$a" -p $port -C 100
	port=$((port + 1))
	step "ucmatose $t" cm_pair "match:return status 0" $port \
		ucmatose -b "$a" -p $port -c 4 -C 20 -- \
		ucmatose -s "$a" -p $port -c 4 -C 20
	step "udaddy $t" cm_pair "match:return status 0" 7174 \
		udaddy -b "$a" -c 2 -C 10 -- udaddy -s "$a" -c 2 -C 10
	port=$((port + 1))
	step "rdma_server/rdma_client $t" cm_pair "match:rdma_client: end 0" \
		$port rdma_server -s "$a" -p $port -- rdma_client -s "$a" -p $port
	for tool in ib_write_bw ib_send_bw ib_read_bw; do
		port=$((port + 1))
		step "$tool -R $t" cm_pair perftest-bw $port \
			$tool -R -d ringnic0 -n 500 -p $port -- \
			$tool -R -d ringnic0 -n 500 -p $port "$a"
	done
	port=$((port + 1))
	step "ib_read_lat -R $t" cm_pair perftest-lat $port \
		ib_read_lat -R -d ringnic0 -n 500 -p $port -- \
		ib_read_lat -R -d ringnic0 -n 500 -p $port "$a"
	RN_PAIR_CM_KERNEL= step "qperf -cm1 rc_bw rc_lat $t" cm_pair \
		"match:latency +=" 19765 qperf -- qperf -cm1 -m 65536 "$a" \
		rc_bw rc_lat quit
	step "no listener: REJECTED 8 $t" cm_no_listener "$a"
}

# tests/cm/soak.sh in kernel mode, bounded (the VM is slow): 3 rounds of
# ucmatose with 100 connections, then 10 rping clients killed at random
# points of their handshake or pings, then a client served to the end.
# rping's persistent server exits on the REJECTED a client that dies
# between REP and RTU makes Linux's CM send (any device): it is started
# again when gone.  Afterwards ringnicd holds the descriptors it held
# after the first round and has grown by 8 MiB at most since (the first
# round's 100 connections touch memory that a fresh ringnicd never did:
# 6 to 8 MiB), and ringnic0 has no QP but the kernel's QP1 and no
# rdma_cm id.
cm_soak() {
	local a fd0 rss0 r server client left
	a=$(eth0_addr)
	ucmatose_round() { # CONNECTIONS
		cm_pair "match:return status 0" 7500 \
			ucmatose -b "$a" -p 7500 -c "$1" -C 2 -- \
			ucmatose -s "$a" -p 7500 -c "$1" -C 2 >/tmp/soak.out 2>&1 ||
			{ tail -n 30 /tmp/soak.out; return 1; }
	}
	ucmatose_round 100 || { echo "round 1 failed"; return 1; }
	fd0=$(ls /proc/"$ringnicd_pid"/fd | wc -l)
	rss0=$(awk '/^VmRSS/ { print $2 }' /proc/"$ringnicd_pid"/status)
	for r in 2 3; do
		ucmatose_round 100 || { echo "round $r failed"; return 1; }
	done
	rping -s -P -a "$a" -p 7501 >/dev/null 2>&1 &
	server=$!
	sleep 1
	for _ in $(seq 10); do
		if ! kill -0 $server 2>/dev/null; then
			wait $server 2>/dev/null
			rping -s -P -a "$a" -p 7501 >/dev/null 2>&1 &
			server=$!
			sleep 1
		fi
		rping -c -a "$a" -p 7501 -C 100000 >/dev/null 2>&1 &
		client=$!
		sleep "0.$((RANDOM % 5))$((RANDOM % 10))"
		kill -KILL $client 2>/dev/null
		wait $client 2>/dev/null
	done
	kill -KILL $server 2>/dev/null
	wait $server 2>/dev/null
	cm_pair "match:ping data: rdma-ping-19:" 7501 \
		rping -s -v -a "$a" -p 7501 -C 20 -- \
		rping -c -v -a "$a" -p 7501 -C 20 >/tmp/soak.out 2>&1 ||
		{ tail -n 30 /tmp/soak.out; return 1; }
	for _ in $(seq 100); do
		[ "$(ls /proc/"$ringnicd_pid"/fd | wc -l)" -le "$fd0" ] && break
		sleep 0.1
	done
	echo "ringnicd: descriptors $fd0 -> $(ls /proc/"$ringnicd_pid"/fd | wc -l)," \
		"RSS $rss0 -> $(awk '/^VmRSS/ { print $2 }' /proc/"$ringnicd_pid"/status) KiB"
	[ "$(ls /proc/"$ringnicd_pid"/fd | wc -l)" -le "$fd0" ] &&
		[ "$(awk '/^VmRSS/ { print $2 }' /proc/"$ringnicd_pid"/status)" -le \
			$((rss0 + 8192)) ] || return 1
	left=$(rdma resource show qp link ringnic0/1 | grep -v " lqpn 1 ")
	left+=$(rdma resource show cm_id)
	[ -z "$left" ] || { echo "left behind: $left"; return 1; }
}

cm_no_listener() { # ADDR
	local out
	out=$(timeout 60 rping -c -a "$1" -p 7399 -C 1 2>&1)
	echo "$out"
	grep -q "REJECTED, error 8" <<<"$out"
}

# The kernel's own RDMA netlink answers for ringnic0 (the rdma tool needs
# nothing of ringnic here): the QPs of both processes of an ib_write_bw,
# each with its peer, its state and its PSNs (the stub's query_qp asks
# ringnicd), and their MRs by the RKey perftest printed.  The pair is
# stopped (SIGSTOP) while the tool looks.
res_of_pair() {
	local dir=/tmp/res-pair s c ret=0
	local bw=(ib_write_bw -d ringnic0 -x $gid -q 4 -p 18599 --run_infinitely)
	mkdir -p $dir
	stdbuf -oL "${bw[@]}" >$dir/server.txt 2>&1 &
	s=$!
	sleep 0.5
	stdbuf -oL "${bw[@]}" localhost >$dir/client.txt 2>&1 &
	c=$!
	for _ in $(seq 300); do
		[ "$(grep -c 'remote address' $dir/server.txt)" = 4 ] &&
			[ "$(grep -c 'remote address' $dir/client.txt)" = 4 ] && break
		sleep 0.1
	done
	kill -STOP $s $c
	rdma -j res show qp >$dir/qp.json && rdma -j res show mr >$dir/mr.json ||
		ret=1
	kill -CONT $s $c
	kill $s $c
	wait $s $c 2>/dev/null
	[ $ret = 0 ] && python3 - $dir $s $c <<'CHECK'
import json, re, sys
d, pids = sys.argv[1], {"server": int(sys.argv[2]), "client": int(sys.argv[3])}
qps, mrs = json.load(open(d + "/qp.json")), json.load(open(d + "/mr.json"))
bad = 0
for side, pid in pids.items():
    text = open(f"{d}/{side}.txt").read()
    local = re.findall(r"local address: .*QPN (0x[0-9a-f]+).*RKey (0x[0-9a-f]+)", text)
    remote = re.findall(r"remote address: .*QPN (0x[0-9a-f]+)", text)
    pairs = {int(l[0], 16): int(r, 16) for l, r in zip(local, remote)}
    mine = [q for q in qps if q.get("ifname") == "ringnic0" and q.get("pid") == pid]
    ok = (len(pairs) == 4 and sorted(q["lqpn"] for q in mine) == sorted(pairs) and
          all(q.get("rqpn") == pairs[q["lqpn"]] and q.get("state") in ("RTR", "RTS")
              and "sq-psn" in q and "rq-psn" in q for q in mine) and
          any(int(m.get("rkey", "0"), 16) == int(local[0][1], 16)
              for m in mrs if m.get("pid") == pid))
    if not ok:
        print(f"{side}: printed {pairs}, rdma res: {mine}", file=sys.stderr)
        bad += 1
sys.exit(bad)
CHECK
}

# ringnic-dump of ringnic.ko's device: a pair on it is its local path,
# whose packets the capture makes up; Debian's tshark must read them as
# tests/wire's capture_check.py reads userspace mode's (MTU 1500: 1024).
capture_local() {
	local f=/tmp/kernel.pcap rc=0 dump
	ringnic-dump --runtime-dir /run/ringnic-k -d ringnic0 -w $f 2>$f.err &
	dump=$!
	for _ in $(seq 100); do
		grep -q "capturing on" $f.err && break
		sleep 0.05
	done
	pair none ib_write_bw -d ringnic0 -x $gid -s 4096 -n 20 >$f.client 2>&1 || rc=1
	kill -INT $dump
	wait $dump || rc=1
	[ $rc -eq 0 ] || { tail -n 20 $f.client $f.err; return 1; }
	python3 "$src/tests/wire/capture_check.py" $f write iters=20 size=4096 \
		mtu=1024 client_out=$f.client
}

# ringnic-fault on a QP of ringnic.ko's device, through ringnicd's control
# socket: a local ibv_rc_pingpong meets RNR NAKs its server never sent,
# counted apart, and ends well once the rules are cleared.  (Not perftest:
# under qemu its clock calibration fails now and then, and a perftest
# server that gives up leaves its client to fail.)
fault_local() {
	local f=/tmp/kfault rc=0 server client sqpn inj0 inj
	local pp=(ibv_rc_pingpong -d ringnic0 -g $gid -p 18599 -n 50000)
	timeout 120 stdbuf -oL "${pp[@]}" >$f.server 2>&1 &
	server=$!
	for _ in $(seq 100); do
		sqpn=$(sed -nE 's/.*local address: .*QPN (0x[0-9a-f]+).*/\1/p' $f.server | head -n 1)
		[ -n "$sqpn" ] && break
		sleep 0.1
	done
	inj0=$(stat_of injected_rnr_naks)
	ringnic-fault --runtime-dir /run/ringnic-k -d ringnic0 "$sqpn" rnr,share=1% ||
		{ echo "setting the rules failed"; rc=1; }
	timeout 120 stdbuf -oL "${pp[@]}" localhost >$f.client 2>&1 &
	client=$!
	sleep 1
	ringnic-fault --runtime-dir /run/ringnic-k -d ringnic0 "$sqpn" ||
		{ echo "clearing the rules failed"; rc=1; }
	wait $server || { echo "the server failed"; rc=1; }
	wait $client || { echo "the client failed"; rc=1; }
	inj=$(($(stat_of injected_rnr_naks) - inj0))
	echo "QP $sqpn: $inj RNR NAKs injected"
	[ $rc -eq 0 ] && [ "$inj" -gt 0 ] || { cat $f.server $f.client; return 1; }
}

step "the kernel's rdma_cm (ib_mad, ib_cm, rdma_ucm)" modprobe rdma_ucm
step "rdma link add" link_add
step "ringnicd attaches" start_ringnicd
if [[ " $groups " == *" tools "* ]]; then
	step "ibv_devinfo -v" devinfo
	step "rdma res show qp|mr: both processes' QPs, states, PSNs" res_of_pair
	step "ringnic-dump: the local path as RoCEv2 packets" capture_local
	step "ringnic-fault: RNR NAKs on a local QP" fault_local
	step "ibv_rc_pingpong" pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 1000
	step "ibv_rc_pingpong -e" pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 1000 -e
	for tool in ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw; do
		step "$tool" pair perftest-bw $tool -d ringnic0 -x $gid -n 2000
	done
	step "ib_write_lat" pair perftest-lat ib_write_lat -d ringnic0 -x $gid -n 2000
	for tool in ib_send_bw ib_read_bw; do
		step "$tool -e" pair perftest-bw $tool -d ringnic0 -x $gid -n 2000 -e
	done
	step "ib_send_lat -e" pair perftest-lat ib_send_lat -d ringnic0 -x $gid -n 2000 -e
	# The verbs beyond RC: UD and AHs, SRQ, UC, XRC (a domain two
	# processes share, target QPs of ringnic.ko's own context), ODP.
	step "ibv_ud_pingpong" pair pingpong ibv_ud_pingpong -d ringnic0 -g $gid -n 1000
	step "ibv_srq_pingpong" pair pingpong ibv_srq_pingpong -d ringnic0 -g $gid -n 1000
	step "ibv_uc_pingpong" pair pingpong ibv_uc_pingpong -d ringnic0 -g $gid -n 1000
	step "ibv_xsrq_pingpong" pair none ibv_xsrq_pingpong -d ringnic0 -g $gid
	step "ibv_rc_pingpong -o -P" pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 1000 -o -P
	step "ibv_rc_pingpong -O" pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 1000 -O
	step "ib_send_bw -c UD" pair perftest-bw ib_send_bw -d ringnic0 -x $gid -n 2000 -c UD
	step "ib_send_lat -c UD" pair perftest-lat ib_send_lat -d ringnic0 -x $gid -n 2000 -c UD
	step "ib_send_bw -c UD -e" pair perftest-bw ib_send_bw -d ringnic0 -x $gid -n 2000 -c UD -e
	for tool in ib_write_bw ib_send_bw; do
		step "$tool -c UC" pair perftest-bw $tool -d ringnic0 -x $gid -n 2000 -c UC
	done
	for tool in ib_send_bw ib_write_bw; do
		step "$tool -c XRC" pair perftest-bw $tool -d ringnic0 -x $gid -n 2000 -c XRC
	done
	step "ib_send_bw --use-srq" pair perftest-bw ib_send_bw -d ringnic0 -x $gid -n 2000 --use-srq
	cm_tools
	# What no tool reaches: resize, rereg, windows, SRQ resize and limit
	# event, an XRC target QP outliving the context that made it.
	step "rn_verbs_check" env RINGNIC_TEST_GID=$gid timeout 120 \
		"$build/bin/rn_verbs_check"
	# Two engines: each process's context on its own, the pairs between
	# them reach across (the XRC targets are engine 0's).
	step "ringnicd --engines 2" restart_ringnicd --engines 2
	step "ibv_rc_pingpong, 2 engines" pair pingpong ibv_rc_pingpong -d ringnic0 -g $gid -n 1000 -c
	step "ib_write_bw, 2 engines" pair perftest-bw ib_write_bw -d ringnic0 -x $gid -n 2000
	step "ibv_ud_pingpong, 2 engines" pair pingpong ibv_ud_pingpong -d ringnic0 -g $gid -n 1000
	step "ibv_xsrq_pingpong, 2 engines" pair none ibv_xsrq_pingpong -d ringnic0 -g $gid
	step "ib_send_bw -c XRC, 2 engines" pair perftest-bw ib_send_bw -d ringnic0 -x $gid -n 2000 -c XRC
	step "engines/K/hw_counters, 2 engines" engine_counters
	step "ringnicd, one engine again" restart_ringnicd
fi
[[ " $groups " == *" cmsoak "* ]] &&
	step "rdma_cm soak: 300 connections, 10 clients killed" cm_soak
[[ " $groups " == *" churn "* ]] &&
	step "32 contexts closed by exiting or killed processes" context_churn
[[ " $groups " == *" netdev "* ]] && step "the port follows eth0" netdev_follow
[[ " $groups " == *" busy "* ]] &&
	step "UDP port 4791 held: the port INIT, then ACTIVE" port_busy
[[ " $groups " == *" wire "* ]] &&
	step "RoCEv2 through eth0, rdma statistic" wire_counters
if [[ " $groups " == *" fatal "* ]]; then
	step "ringnicd killed under a client: DEVICE_FATAL" device_fatal
	step "ringnicd attaches again" start_ringnicd
	step "ringnicd killed under ib_send_bw -e" kill_under_tool
	step "ringnicd attaches again" start_ringnicd
	# XRC domains are ringnic.ko's own context's: a new one per ringnicd.
	step "ibv_xsrq_pingpong, new ringnicd" pair none ibv_xsrq_pingpong -d ringnic0 -g $gid
fi
if [[ " $groups " == *" unload "* ]]; then
	step "rdma link delete under a client, rmmod" unload_under_client
	step "rdma link add again" link_add
	step "ringnicd attaches again" start_ringnicd
fi
if [[ " $groups " == *" pidreuse "* ]]; then
	step "a client's pid reused, or exec'd: nothing reached" pid_reuse
	step "ringnicd attaches again" start_ringnicd
fi
[[ " $groups " == *" cycles "* ]] && step "unload/load cycles" load_cycles
echo "ringnicd log:"
cat /tmp/ringnicd.log
echo "kernel-mode: $failed failed"
exit $failed
