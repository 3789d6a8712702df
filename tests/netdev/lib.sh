# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Sourced by the netdev tests: a private network namespace, ringnicd
# daemons bound to its interfaces, and what unmodified tools (ibv_devinfo,
# ibv_asyncwatch) say about their port.  Addresses: 198.18.0.0/15 and, for
# IPv6, the IPv6 benchmarking range 2001:2::/48 (RFC 5180); nothing leaves
# the namespace.

# rn_netns BUILD_DIR [ARGS...]: run the calling script again, with the same
# arguments, in a network namespace of its own with lo up; sets build,
# PATH and a fresh RINGNIC_RUNTIME_DIR.
rn_netns() {
	if [ -z "${RN_NETNS:-}" ]; then
		RN_NETNS=1 exec unshare -n "$0" "$@"
	fi
	build=$(cd "$1" && pwd)
	export PATH="$build/bin:$PATH"
	ip link set lo up
	export RINGNIC_RUNTIME_DIR
	RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/rn.XXXXXX)
	rn_pids=()
	trap rn_cleanup EXIT
}

rn_fail() {
	echo "${0##*/}: $*" >&2
	for log in "$RINGNIC_RUNTIME_DIR".*.log; do
		[ -e "$log" ] && { echo "--- $log" >&2; cat "$log" >&2; }
	done
	exit 1
}

# A veth pair NAME/NAME-p, both up, with no automatic IPv6 link-local
# address: every address the port sees is one the test adds.
rn_veth() {
	ip link add "$1" type veth peer name "$1-p" &&
		ip link set "$1" addrgenmode none &&
		ip link set "$1-p" addrgenmode none &&
		ip link set "$1" up && ip link set "$1-p" up ||
		rn_fail "cannot make the veth pair $1"
}

# rn_start NAME [ringnicd options]: device NAME in the runtime dir, up.
rn_start() {
	local name=$1
	shift
	ringnicd --name "$name" --foreground --no-realtime "$@" \
		2>"$RINGNIC_RUNTIME_DIR.$name.log" &
	rn_pids+=($!)
	# "ready" comes once all is published: the port (gids/0 among it)
	# comes before the infiniband_verbs entry libibverbs looks for.
	for _ in $(seq 100); do
		[ -e "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$name/ports/1/gids/0" ] &&
			grep -q "$name ready in" "$RINGNIC_RUNTIME_DIR.$name.log" &&
			return 0
		kill -0 $! 2>/dev/null || break
		sleep 0.05
	done
	rn_fail "ringnicd $name did not come up"
}

# rn_stop_all: SIGTERM to every ringnicd started; each must exit 0.
rn_stop_all() {
	local pid rc=0
	for pid in "${rn_pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null
		wait "$pid" || rc=1
	done
	rn_pids=()
	return $rc
}

rn_cleanup() {
	local job
	for job in $(jobs -p); do
		kill "$job" 2>/dev/null
	done
	rn_stop_all
	rm -rf "$RINGNIC_RUNTIME_DIR" "$RINGNIC_RUNTIME_DIR".*.log
}

# rn_port NAME: the published port directory of device NAME.
rn_port() {
	echo "$RINGNIC_RUNTIME_DIR/sys/class/infiniband/$1/ports/1"
}

# rn_gids NAME: the GID table as ibv_devinfo -v shows it, one line:
# "0=::ffff:198.18.0.1 2=2001:2::1" (empty entries are not listed).
rn_gids() {
	ringnic-run ibv_devinfo -v -d "$1" |
		sed -n 's/^[[:space:]]*GID\[ *\([0-9]*\)\]:[[:space:]]*\([^,]*\), RoCE v2$/\1=\2/p' |
		paste -sd ' '
}

# rn_until CMD...: until CMD succeeds, for up to 10 s; fails after that.
rn_until() {
	for _ in $(seq 200); do
		"$@" && return 0
		sleep 0.05
	done
	return 1
}

gids_are() { [ "$(rn_gids "$1")" = "$2" ]; }

# rn_expect_gids NAME TABLE: the table becomes TABLE (rn_gids' format).
rn_expect_gids() {
	rn_until gids_are "$1" "$2" ||
		rn_fail "$1's GIDs are '$(rn_gids "$1")', not '$2'"
}

# rn_devinfo NAME FIELD: a field of ibv_devinfo -v's port 1, e.g.
# "state" -> "PORT_ACTIVE (4)".
rn_devinfo() {
	ringnic-run ibv_devinfo -v -d "$1" |
		sed -n "s/^[[:space:]]*$2:[[:space:]]*//p" | head -n 1
}

devinfo_is() { [ "$(rn_devinfo "$1" "$2")" = "$3" ]; }

rn_expect_devinfo() {
	rn_until devinfo_is "$1" "$2" "$3" ||
		rn_fail "$1's $2 is '$(rn_devinfo "$1" "$2")', not '$3'"
}

# rn_asyncwatch NAME FILE: ibv_asyncwatch on device NAME, its lines in FILE
# as they come; returns once it listens.
rn_asyncwatch() {
	ringnic-run stdbuf -oL ibv_asyncwatch -d "$1" >"$2" 2>&1 &
	rn_until grep -q "async event FD" "$2" ||
		rn_fail "ibv_asyncwatch did not start: $(cat "$2")"
}

# rn_events FILE: the events seen so far, one line: "GID_CHANGE/1 ..."
# (event/port number).
rn_events() {
	sed -n 's/^[[:space:]]*event_type IBV_EVENT_\([A-Z_]*\) ([0-9]*), port \([0-9]*\)$/\1\/\2/p' "$1" |
		paste -sd ' '
}

events_are() { [ "$(rn_events "$1")" = "$2" ]; }

# rn_expect_events FILE EVENTS: exactly these events so far, in this order.
rn_expect_events() {
	rn_until events_are "$1" "$2" ||
		rn_fail "the events are '$(rn_events "$1")', not '$2'"
}

# rn_finish: stop the devices; each must exit 0 and leave nothing behind.
rn_finish() {
	rn_stop_all || rn_fail "a ringnicd did not exit cleanly"
	[ -e "$RINGNIC_RUNTIME_DIR" ] &&
		rn_fail "left behind: $(find "$RINGNIC_RUNTIME_DIR" | head -5)"
	echo "${0##*/} ok"
}
