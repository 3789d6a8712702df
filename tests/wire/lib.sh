# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by the wire tests: two hosts without a VM.  Host A is a private
# network namespace the script runs in, host B a named namespace of its
# own; a veth pair joins them (wa 198.18.0.1 / wb 198.18.0.2, 2001:2::1 and
# ::2).  ringnic0 is A's ringnicd on wa, ringnic1 B's on wb; both publish in
# one runtime dir, so one ringnic-run process sees both devices, and each
# device's GID 0 is its IPv4 address.  Everything between them is RoCEv2
# over the veth pair.

# The daemons' bookkeeping is the netdev tests': rn_pids, rn_stop_all,
# rn_cleanup.
. "$(dirname "${BASH_SOURCE[0]}")/../netdev/lib.sh"

# wire_hosts BUILD_DIR [ARGS...]: run the calling script again, with the
# same arguments, in host A; sets build, PATH, RINGNIC_RUNTIME_DIR, B
# (the name of host B) and the trap that removes it all.
wire_hosts() {
	if [ -z "${RN_WIRE_HOST_A:-}" ]; then
		RN_WIRE_HOST_A=1 exec unshare -n "$0" "$@"
	fi
	build=$(cd "$1" && pwd)
	export PATH="$build/bin:$PATH"
	export RINGNIC_RUNTIME_DIR
	RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/rn.XXXXXX)
	B=rnwire.$$
	rn_pids=()
	trap wire_cleanup EXIT
	trap "exit 143" TERM INT
	ip link set lo up &&
		ip netns add "$B" &&
		ip -n "$B" link set lo up &&
		ip link add wa type veth peer name wb netns "$B" &&
		ip link set wa addrgenmode none &&
		ip -n "$B" link set wb addrgenmode none &&
		ip addr add 198.18.0.1/24 dev wa &&
		ip -n "$B" addr add 198.18.0.2/24 dev wb &&
		ip addr add 2001:2::1/64 dev wa nodad &&
		ip -n "$B" addr add 2001:2::2/64 dev wb nodad &&
		ip link set wa up && ip -n "$B" link set wb up ||
		wire_fail "cannot build the two hosts"
}

# on_b CMD...: CMD in host B.
on_b() {
	ip netns exec "$B" "$@"
}

wire_fail() {
	local log
	echo "${0##*/}: $*" >&2
	for log in "$RINGNIC_RUNTIME_DIR".*.log; do
		[ -e "$log" ] && { echo "--- $log" >&2; tail -n 40 "$log" >&2; }
	done
	exit 1
}

# wire_start HOST NAME [ringnicd options]: device NAME on HOST (A or B),
# bound to that host's veth end; returns once it is up.
wire_start() {
	local host=$1 name=$2 netdev=wa run=()
	shift 2
	# ip execs ringnicd, so $! is the daemon's pid.
	[ "$host" = B ] && { netdev=wb; run=(ip netns exec "$B"); }
	"${run[@]}" ringnicd --name "$name" --foreground --no-realtime \
		--netdev $netdev "$@" >/dev/null 2>>"$RINGNIC_RUNTIME_DIR.$name.log" &
	rn_pids+=($!)
	# Up means listed, with its GID and its port ACTIVE (a veth end may
	# get its carrier after ringnicd has started).
	for _ in $(seq 100); do
		[ -e "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$name/ports/1/gids/0" ] &&
			[ "$(cat "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$name/ports/1/state")" = "4: ACTIVE" ] &&
			grep -qx "$name" "$RINGNIC_RUNTIME_DIR"/sys/class/infiniband_verbs/*/ibdev \
				2>/dev/null && return 0
		kill -0 $! 2>/dev/null || break
		sleep 0.05
	done
	wire_fail "ringnicd $name did not come up"
}

# wire_devices: ringnic0 on A and ringnic1 on B.
wire_devices() {
	wire_start A ringnic0
	wire_start B ringnic1
}

# rn_stop_all (tests/netdev/lib.sh) stops them; the cleanup also removes
# host B.
wire_cleanup() {
	rn_cleanup
	ip netns del "$B" 2>/dev/null
}

# counter DEV NAME: one of DEV's hw_counters.
counter() {
	cat "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$1/ports/1/hw_counters/$2"
}

# counters DEV: every non-zero hw_counter of DEV, one line.
counters() {
	local f
	for f in "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$1/ports/1/hw_counters"/*; do
		[ "$(cat "$f")" != 0 ] && printf '%s=%s ' "${f##*/}" "$(cat "$f")"
	done
	echo
}

# wire_pair CHECK PORT SERVER-CMD -- CLIENT-CMD: tests/pair.sh with the
# server on host A and the client on host B (pointed at 198.18.0.1).
wire_pair() {
	RN_PAIR_CLIENT_NETNS=$B "$(dirname "$0")/../pair.sh" "$@"
}

# wire_finish: stop the devices; each must exit 0 and leave nothing behind.
wire_finish() {
	rn_stop_all || wire_fail "a ringnicd did not exit cleanly"
	[ -e "$RINGNIC_RUNTIME_DIR" ] &&
		wire_fail "left behind: $(find "$RINGNIC_RUNTIME_DIR" | head -5)"
	echo "${0##*/} ok"
}
