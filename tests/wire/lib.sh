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
# bound to that host's veth end, publishing in RINGNIC_RUNTIME_DIR;
# returns once it is up.  RINGNICD_ARGS (--engines N) go before the
# options.
wire_start() {
	local host=$1 name=$2 netdev=wa run=() ready
	shift 2
	# The log is appended to: a ringnicd started again (faults.sh) is up
	# once it says so one time more; the tree of the one it replaces is
	# still there until it publishes its own.
	ready=$(grep -c "$name ready in" "$RINGNIC_RUNTIME_DIR.$name.log" 2>/dev/null)
	# ip execs ringnicd, so $! is the daemon's pid.
	[ "$host" = B ] && { netdev=wb; run=(ip netns exec "$B"); }
	"${run[@]}" ringnicd --name "$name" --foreground --no-realtime \
		--runtime-dir "$RINGNIC_RUNTIME_DIR" --netdev $netdev ${RINGNICD_ARGS:-} "$@" >/dev/null 2>>"$RINGNIC_RUNTIME_DIR.$name.log" &
	rn_pids+=($!)
	# Up means published whole ("ready"), with its GID and its port
	# ACTIVE (a veth end may get its carrier after ringnicd has started).
	for _ in $(seq 100); do
		[ -e "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$name/ports/1/gids/0" ] &&
			[ "$(cat "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$name/ports/1/state")" = "4: ACTIVE" ] &&
			[ "$(grep -c "$name ready in" "$RINGNIC_RUNTIME_DIR.$name.log")" -gt "${ready:-0}" ] &&
			return 0
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

# engine_sums DEV: do DEV's engines/K/hw_counters (ringnicd --engines) sum
# to its port's?  Prints the first counter that does not.
engine_sums() {
	local dir=$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$1 c k v sum
	for c in "$dir"/ports/1/hw_counters/*; do
		sum=0
		for k in "$dir"/engines/*/hw_counters; do
			v=$(cat "$k/${c##*/}") || return 1
			sum=$((sum + v))
		done
		[ "$sum" = "$(cat "$c")" ] || {
			echo "$1: ${c##*/}: the engines' sum $sum, the port's $(cat "$c")"
			return 1
		}
	done
}

# wire_clean_counters DEV...: print each device's counters; returns how
# many of them counted what a clean run never does (ICRC errors, malformed
# packets, exhausted retries), or had engines' counters that do not sum to
# the port's.
wire_clean_counters() {
	local dev c i bad=0
	for dev in "$@"; do
		echo "$dev: $(counters $dev)"
		# Both are rewritten at once, at most every 100 ms.
		for i in $(seq 20); do
			engine_sums $dev >/dev/null && break
			sleep 0.1
		done
		engine_sums $dev || bad=$((bad + 1))
		for c in rx_icrc_errors rx_malformed_packets retry_exceeded_err; do
			[ "$(counter $dev $c)" = 0 ] || {
				echo "FAIL $dev counted $c"
				bad=$((bad + 1))
			}
		done
	done
	return $bad
}

# wire_pair CHECK PORT SERVER-CMD -- CLIENT-CMD: tests/pair.sh with the
# server on host A and the client on host B (pointed at 198.18.0.1).
wire_pair() {
	RN_PAIR_CLIENT_NETNS=$B "$(dirname "$0")/../pair.sh" "$@"
}

# wire_baseline: note each ringnicd's descriptors and RSS (after a warm-up:
# first QPs, sockets, counters).  wire_check_baseline then waits for each
# to hold no more descriptors than that, and fails if one did not or grew
# by more than RINGNIC_SOAK_RSS_MIB (default 8) MiB.
wire_fds() { ls /proc/"$1"/fd | wc -l; }
wire_rss_kib() { awk '/^VmRSS/ { print $2 }' /proc/"$1"/status; }
wire_baseline() {
	local pid
	declare -gA wire_fd0 wire_rss0
	for pid in "${rn_pids[@]}"; do
		wire_fd0[$pid]=$(wire_fds $pid) wire_rss0[$pid]=$(wire_rss_kib $pid)
	done
}
wire_check_baseline() {
	local pid slack_kib=$((${RINGNIC_SOAK_RSS_MIB:-8} * 1024))
	for pid in "${rn_pids[@]}"; do
		for _ in $(seq 100); do
			[ "$(wire_fds $pid)" -le "${wire_fd0[$pid]}" ] && break
			sleep 0.1
		done
		echo "ringnicd $pid: descriptors ${wire_fd0[$pid]} -> $(wire_fds $pid)," \
			"RSS ${wire_rss0[$pid]} -> $(wire_rss_kib $pid) KiB"
		[ "$(wire_fds $pid)" -le "${wire_fd0[$pid]}" ] ||
			wire_fail "ringnicd $pid holds $(wire_fds $pid) descriptors, ${wire_fd0[$pid]} before"
		[ "$(wire_rss_kib $pid)" -le $((wire_rss0[$pid] + slack_kib)) ] ||
			wire_fail "ringnicd $pid grew from ${wire_rss0[$pid]} to $(wire_rss_kib $pid) KiB"
	done
}

# wire_finish: stop the devices; each must exit 0 and leave nothing behind.
wire_finish() {
	rn_stop_all || wire_fail "a ringnicd did not exit cleanly"
	[ -e "$RINGNIC_RUNTIME_DIR" ] &&
		wire_fail "left behind: $(find "$RINGNIC_RUNTIME_DIR" | head -5)"
	echo "${0##*/} ok"
}
