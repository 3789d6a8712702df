#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm/guest.sh BUILD_DIR OUT_DIR REPS: inside the VM of bench/vm.sh
# (ib_core, ib_uverbs and ringnic.ko loaded, eth0 and eth1 up).  Brings up
# the devices side by side: rxe0 (rdma_rxe on eth0) and siw0 (siw.ko on
# eth1), ringnic0 (kernel mode, ringnic.ko on eth0, its ringnicd
# attached), rnu0 (ringnic in userspace mode, its own ringnicd) and
# ringnic over the wire:
#
#   netns rnw0   vw0 198.18.0.1/24   ringnicd rnw0 (userspace mode)
#     | veth pair, MTU 1500 (eth0's, so active_mtu 1024 as rxe0's)
#   netns rnw1   vw1 198.18.0.2/24   ringnicd rnw1 (userspace mode)
#
# Every ringnic device is in a child namespace: rxe's UDP socket holds
# port 4791 on the wildcard addresses of the initial one, where no address
# could be a GID of theirs.  ringnic0 and rnu0 each sit on a veth end of
# their own (MTU 1500, eth0's), their pairs local all the same; the tools
# run in the initial namespace.  The userspace devices publish in one
# runtime dir, so ringnic-run finds all three.  Then runs
# bench/vm/inner.sh over all devices REPS times, each time followed by
# plain UDP over the wire's veth pair, appending to OUT_DIR/vm-raw.csv,
# and prints the wire devices' non-zero hw_counters
# (retries show there).  RINGNIC_BENCH_DEVICES narrows the devices
# measured; RINGNIC_BENCH_POLL_US sets every ringnicd's --poll-us.
set -u
build=$1
out=$2
reps=$3
here=$(cd "$(dirname "$0")" && pwd)
export PATH="$build/bin:$PATH"
# The provider, not installed: libibverbs loads it from the build tree;
# ringnic-run finds it there by itself.
export RDMAV_DRIVERS=$build/lib/libringnic

devices=${RINGNIC_BENCH_DEVICES:-ringnic0 ringnic-user:rnu0 ringnic-wire:rnw0:rnw1 rxe0 siw0}
poll=()
[ -n "${RINGNIC_BENCH_POLL_US:-}" ] && poll=(--poll-us "$RINGNIC_BENCH_POLL_US")

# rxe first: it binds UDP port 4791 on the wildcard addresses when it
# loads, which fails once a ringnicd holds the port on eth0's address.
"$here/inner.sh" --out "$out/vm-raw.csv" --setup rxe,siw --siw-ko "$out/siw.ko"

# own_veth NS ADDR: namespace NS with a veth pair of its own, vNS up with
# ADDR (its GID 1 in kernel mode, after the default GID; GID 0 in
# userspace mode, with no link-local address).
own_veth() {
	ip netns add "$1" && ip -n "$1" link set lo up &&
		ip -n "$1" link add "v$1" type veth peer name "v$1-p" &&
		ip -n "$1" link set "v$1" addrgenmode none mtu 1500 up &&
		ip -n "$1" link set "v$1-p" up &&
		ip -n "$1" addr add "$2/24" dev "v$1"
}
# ringnic.ko's device made from inside its namespace: the RDMA core, in
# its default shared mode, shows it in every namespace.
own_veth rnk 198.18.1.1 &&
	ip netns exec rnk rdma link add ringnic0 type ringnic netdev vrnk || exit 1
ip netns exec rnk ringnicd --name ringnic0 --runtime-dir /run/ringnic-k \
	--foreground "${poll[@]}" 2>/tmp/ringnicd-k.log &
daemons=($!) # ip execs ringnicd
export RINGNIC_RUNTIME_DIR=/run/ringnic-u
own_veth rnu 198.18.2.1 || exit 1
ip netns exec rnu ringnicd --name rnu0 --netdev vrnu --foreground "${poll[@]}" \
	2>/tmp/ringnicd-u.log &
daemons+=($!)

for i in 0 1; do
	ip netns add rnw$i && ip -n rnw$i link set lo up || exit 1
done
ip -n rnw0 link add vw0 type veth peer name vw1 netns rnw1 || exit 1
for i in 0 1; do
	# No link-local IPv6 address: GID 0 is the IPv4 address (-x 0).
	ip -n rnw$i link set vw$i addrgenmode none mtu 1500 up &&
		ip -n rnw$i addr add 198.18.0.$((i + 1))/24 dev vw$i || exit 1
	ip netns exec rnw$i ringnicd --name rnw$i --netdev vw$i --foreground \
		"${poll[@]}" 2>/tmp/ringnicd-w$i.log &
	daemons+=($!) # ip execs ringnicd
done

up() { # DEVICE: its port is active and GID 0 is set (userspace mode)
	local port=$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$1/ports/1
	grep -qs ACTIVE "$port/state" && grep -qs '[1-9a-f]' "$port/gids/0"
}
for _ in $(seq 100); do
	ibv_devinfo -d ringnic0 2>/dev/null | grep -q PORT_ACTIVE &&
		up rnu0 && up rnw0 && up rnw1 && break
	sleep 0.1
done
# The wire's own ceiling in this VM: plain UDP over the same veth pair
# (bench/udp_pump.c), rnw1 -> rnw0.  1 KiB datagrams (the active MTU's
# payload) by GSO into a GRO socket, as ringnicd sends and receives them;
# 64 B datagrams by GSO; an 8-byte blocking ping-pong.  Rows as inner.sh's,
# device "udp:rnw1:rnw0".
udp_port=19700
# row DEVICE TEST SIZE METRIC VALUE UNIT: a row of our own, as inner.sh's.
row() {
	echo "$1,$2,$3,$4,${5:-NA},$6" >>"$out/vm-raw.csv"
	printf '%-22s %-13s %5s %-12s %10s %s\n' "$1" "$2" "$3" "$4" "${5:-NA}" "$6"
}
udp_row() { row udp:rnw1:rnw0 "$@"; }
udp_pump() { # TEST SIZE SINK_OPTS...: prints the sink's output
	local size=$2 sink
	shift 2
	udp_port=$((udp_port + 1))
	ip netns exec rnw0 rn_bench_udp sink "$@" 198.18.0.1 $udp_port >/tmp/udp-sink.out &
	sink=$!
	sleep 0.3
	ip netns exec rnw1 rn_bench_udp pump -g 198.18.0.1 $udp_port "$size" 2 >/dev/null
	wait $sink && cat /tmp/udp-sink.out
}
udp_ceiling() {
	local v echo
	v=$(udp_pump udp_gso_gro 1024 -g | awk '$1 == "payload" { printf "%.2f", $2 / 1.048576 }')
	udp_row udp_gso_gro 1024 bw "$v" MiB/s
	v=$(udp_pump udp_gso 64 | awk '$1 == "rate" { print $2 }')
	udp_row udp_gso 64 msg_rate "$v" Mpps
	udp_port=$((udp_port + 1))
	ip netns exec rnw0 rn_bench_udp echo 198.18.0.1 $udp_port &
	echo=$!
	sleep 0.3
	v=$(ip netns exec rnw1 rn_bench_udp ping 198.18.0.1 $udp_port 1000 |
		awk '$1 == "rtt_half_median" { print $2 }')
	wait $echo
	udp_row udp_pingpong 8 lat_typical "$v" us
}

# What the wire's own work costs this VM's CPUs, once: the ICRC of a
# packet of 1 KiB payload, sealed and checked (rn_bench_wire: the faster
# CRC-32 of the build, as ringnicd picks it) and the copy through
# /proc/PID/mem that takes a payload out of a process and puts it into
# one (rn_bench_ref copy).  Device "cpu:guest"; summary.sh makes a floor
# of them.
cpu_row() { row cpu:guest "$@"; }
# The CRC-32 whose seal is the fastest, as ringnicd picks it; its seal
# and its check.
read -r seal check <<<"$(rn_bench_wire | awk '
	{ split($1, f, "_") }
	$1 ~ /^icrc_(seal|check)_ipv4_1k_/ { t[f[2], f[5]] = $2; crc[f[5]] = 1 }
	END {
		for (c in crc)
			if (best == "" || t["seal", c] < t["seal", best])
				best = c
		print t["seal", best], t["check", best]
	}')"
cpu_row icrc_seal_ipv4 1024 time "$seal" ns
cpu_row icrc_check_ipv4 1024 time "$check" ns
cpu_row proc_mem_write 65536 rate "$(rn_bench_ref copy |
	awk '$1 == "proc_mem_write_64KiB" { print $2 }')" GB/s
cpu_row cpus 0 count "$(nproc)" cpus

for rep in $(seq "$reps"); do
	echo "== repetition $rep of $reps"
	# shellcheck disable=SC2086
	"$here/inner.sh" --out "$out/vm-raw.csv" $devices
	case " $devices " in *" ringnic-wire:rnw0:rnw1 "*) udp_ceiling ;; esac
done

sleep 0.2 # the published counters are rewritten at most every 100 ms
echo "== hw_counters of the wire devices (non-zero)"
for i in 0 1; do
	grep -H . "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/rnw$i/ports/1/hw_counters"/* |
		sed 's|.*/infiniband/||; s|/ports/1/hw_counters/| |; s|:| |' |
		awk '$3 != 0'
done
for log in /tmp/ringnicd-w0.log /tmp/ringnicd-w1.log; do
	[ -s $log ] && { echo "== $log"; tail -n 10 $log; }
done
# Stopped, so that nothing holds the shared checkout when the VM ends.
for pid in "${daemons[@]}"; do
	kill -TERM "$pid"
	wait "$pid" || echo "ringnicd $pid exited with $?"
done
exit 0
