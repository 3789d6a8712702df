# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/wire-hosts.sh, sourced by the wire benchmarks (wire.sh,
# congestion.sh) with $mtu set and ringnicd on PATH: two hosts, each a
# network namespace with a ringnicd bound to its end of a veth pair
# (198.18.0.1 and .2), and what measures them.  Sets work (a temporary
# directory, removed on exit), host, addr, veth, rundir, holder, daemon,
# ib_mtu and mhz; defines in_ns, port_dir, cpu_ns, counters, delta and
# sum_of.  RINGNICD_OPTS: more options of both ringnicd.

# ---- two hosts ----------------------------------------------------------------

# Each host is a network namespace held by a process of ours (no name in
# /run/netns that another test's cleanup could delete under us); both go
# with their holders, the veth pair with them.
work=$(mktemp -d /tmp/ringnic-wire.XXXXXX)
host=(a b)
addr=(198.18.0.1 198.18.0.2)
veth=("rnw$$-a" "rnw$$-b")
rundir=("$work/a" "$work/b")
holder=()
daemon=()

cleanup() {
	local pid
	for pid in "${daemon[@]}"; do
		kill -TERM "$pid" 2>/dev/null || continue
		wait "$pid" || true
	done
	for pid in "${holder[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT

# in_ns HOST CMD...: CMD in that host's namespace, with its device.
in_ns() {
	local i=$1
	shift
	RINGNIC_RUNTIME_DIR=${rundir[$i]} \
		nsenter --net="/proc/${holder[$i]}/ns/net" "$@"
}

for i in 0 1; do
	unshare -n sleep infinity &
	holder+=($!)
	until [ "$(readlink /proc/$!/ns/net)" != "$(readlink /proc/self/ns/net)" ]; do
		sleep 0.01
	done
done
in_ns 0 ip link add "${veth[0]}" type veth peer name "${veth[1]}" \
	netns "${holder[1]}"
for i in 0 1; do
	# No automatic link-local address: GID 0 is the IPv4 address.
	in_ns $i ip link set "${veth[$i]}" addrgenmode none mtu "$mtu" up
	in_ns $i ip link set lo up
	in_ns $i ip addr add "${addr[$i]}/24" dev "${veth[$i]}"
	mkdir "${rundir[$i]}"
	# Not through in_ns: $! must be ringnicd (nsenter execs it).
	# shellcheck disable=SC2086  # RINGNICD_OPTS: options, split
	nsenter --net="/proc/${holder[$i]}/ns/net" ringnicd \
		--runtime-dir "${rundir[$i]}" --netdev "${veth[$i]}" \
		--foreground ${RINGNICD_OPTS:-} 2>"$work/ringnicd-$i.log" &
	daemon+=($!)
done
port_dir() { echo "${rundir[$1]}/sys/class/infiniband/ringnic0/ports/1"; }
for i in 0 1; do
	for _ in $(seq 100); do
		grep -qs ACTIVE "$(port_dir $i)/state" && break
		sleep 0.05
	done
	grep -qs ACTIVE "$(port_dir $i)/state" || {
		echo "${0##*/}: ringnicd on host ${host[$i]} did not come up" >&2
		cat "$work/ringnicd-$i.log" >&2
		exit 1
	}
done
ib_mtu=$(in_ns 0 ringnic-run ibv_devinfo -v |
	awk '$1 == "active_mtu:" { print $2; exit }')

# ---- measuring ringnicd -------------------------------------------------------

# Cycles from CPU time at the clock /proc/cpuinfo gives (its first "cpu
# MHz"; nominal on this virtual machine, where it does not change).
mhz=$(awk -F': *' '$1 ~ /^cpu MHz/ { print $2; exit }' /proc/cpuinfo)

# CPU nanoseconds a ringnicd has run, all its threads.
cpu_ns() {
	cat /proc/"${daemon[$1]}"/task/*/schedstat | awk '{ s += $1 } END { printf "%.0f\n", s }'
}

counters() {
	# Files are rewritten at most every 100 ms.
	sleep 0.15
	grep -H . "$(port_dir "$1")"/hw_counters/* | sed 's|.*/||; s|:| |'
}

# delta BEFORE AFTER: "name +n" for every counter that moved.
delta() {
	awk 'NR == FNR { b[$1] = $2; next } $2 != b[$1] { printf "%s +%d ", $1, $2 - b[$1] }' \
		<(echo "$1") <(echo "$2")
}

# sum_of DELTA NAME...: those counters' sum in a delta line.
sum_of() {
	local d=$1
	shift
	echo "$d" | awk -v names="$*" 'BEGIN { split(names, n, " ") }
		{ for (i = 1; i < NF; i += 2) for (j in n)
			if ($i == n[j]) s += substr($(i + 1), 2) }
		END { print s + 0 }'
}

