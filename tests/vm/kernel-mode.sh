#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kernel-mode.sh BUILD_DIR KO [GROUP...]: runs inside the VM (tests/vm/run.sh) with
# ib_core and ib_uverbs loaded and eth0 up.  ringnic.ko's device, driven by
# ringnicd, used by unmodified tools with no ringnic-run, no SYSFS_PATH and
# no LD_PRELOAD: rdma link add, rdma dev, ibv_devinfo, ibv_rc_pingpong,
# the perftest matrix, events; then ringnicd killed under clients, and
# module unload/load cycles with and without clients.  GROUPs (default
# all): tools fatal unload cycles.  Prints one line per step; exits with the
# number of failed steps.
set -u
build=$1
ko=$2
shift 2
groups=${*:-tools fatal unload cycles}
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

start_ringnicd() {
	ringnicd --name ringnic0 --foreground --runtime-dir /run/ringnic-k \
		2>>/tmp/ringnicd.log &
	ringnicd_pid=$!
	device_up
}

stop_ringnicd() {
	kill -TERM "$ringnicd_pid" 2>/dev/null
	wait "$ringnicd_pid" 2>/dev/null
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
		grep -q "GID\[ *$gid\]:.*10.0.2.15" /tmp/devinfo ||
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

step "rdma link add" link_add
step "ringnicd attaches" start_ringnicd
if [[ " $groups " == *" tools "* ]]; then
	step "ibv_devinfo -v" devinfo
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
fi
if [[ " $groups " == *" fatal "* ]]; then
	step "ringnicd killed under a client: DEVICE_FATAL" device_fatal
	step "ringnicd attaches again" start_ringnicd
	step "ringnicd killed under ib_send_bw -e" kill_under_tool
	step "ringnicd attaches again" start_ringnicd
fi
if [[ " $groups " == *" unload "* ]]; then
	step "rdma link delete under a client, rmmod" unload_under_client
	step "rdma link add again" link_add
	step "ringnicd attaches again" start_ringnicd
fi
[[ " $groups " == *" cycles "* ]] && step "unload/load cycles" load_cycles
echo "ringnicd log:"
cat /tmp/ringnicd.log
echo "kernel-mode: $failed failed"
exit $failed
