#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pair.sh CHECK PORT SERVER_CMD... -- CLIENT_CMD...
#
# Runs an unmodified client/server pair through ringnic-run (or, in kernel
# mode, RN_PAIR_LAUNCH="" : directly) as two processes: the server first, the client once the server listens on PORT
# (TCP, where these tools exchange QP numbers).  Both must exit 0, and the
# client's output must pass CHECK: perftest-bw, perftest-lat, pingpong,
# success, match:REGEX (a line of the client's output matches it) or none.
# Each side is limited to RN_PAIR_TIMEOUT seconds (default 300).
# RN_PAIR_CM_LOG=FILE: the two meet through rdma_cm, not TCP, and PORT is
# the rdma_cm port: the client starts once FILE, the log of the server's
# ringnicd (--debug), says an id listens on PORT, as often as it said so
# before the server started plus one.  RN_PAIR_CM_KERNEL=1: the same with
# the kernel's rdma_cm, whose listening ids \`rdma resource show cm_id\`
# lists.
# With RN_PAIR_CLIENT_NETNS set the client runs in that network namespace
# (another host: tests/wire).
# RN_PAIR_LISTEN_NETNS names the network namespace (ip netns) the server
# listens in, when it is not the caller's.  RN_PAIR_ATTEMPTS (default 3):
# how often a pair runs while perftest cannot calibrate its clock.
set -u
check=$1
port=$2
shift 2
server=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	server+=("$1")
	shift
done
shift
client=("$@")
limit=${RN_PAIR_TIMEOUT:-300}
read -ra launch <<<"${RN_PAIR_LAUNCH-ringnic-run}"
listen_ns=()
[ -n "${RN_PAIR_LISTEN_NETNS:-}" ] && listen_ns=(ip netns exec "$RN_PAIR_LISTEN_NETNS")
out=$(mktemp /tmp/rn-pair.XXXXXX)

run_pair() {
	local listens=0
	[ -n "${RN_PAIR_CM_LOG:-}" ] &&
		listens=$(grep -c "cm: id [0-9]* listens on port $port\$" "$RN_PAIR_CM_LOG")
	timeout "$limit" "${launch[@]}" "${server[@]}" >"$out.server" 2>&1 &
	spid=$!
	for _ in $(seq 200); do
		if [ -n "${RN_PAIR_CM_LOG:-}" ]; then
			[ "$(grep -c "cm: id [0-9]* listens on port $port\$" \
				"$RN_PAIR_CM_LOG")" -gt "$listens" ] && break
		elif [ -n "${RN_PAIR_CM_KERNEL:-}" ]; then
			rdma resource show cm_id 2>/dev/null |
				grep -Eq "state LISTEN .*src-addr [^ ]*:$port( |\$)" && break
		else
			"${listen_ns[@]}" ss -Hltn "sport = :$port" 2>/dev/null |
				grep -q . && break
		fi
		kill -0 $spid 2>/dev/null || break
		sleep 0.05
	done
	timeout "$limit" ${RN_PAIR_CLIENT_NETNS:+ip netns exec "$RN_PAIR_CLIENT_NETNS"} \
		"${launch[@]}" "${client[@]}" >"$out.client" 2>&1
	crc=$?
	# perftest -R connects twice on one port, and its server listens
	# again only after the first connection: a client that is quicker
	# is rejected (no listener: REJ 8) and perftest 4.5 then crashes or
	# gives up, leaving its server waiting.  perftest's race, not the
	# device's: stop the server, the pair runs again.
	if [ -n "${RN_PAIR_CM_LOG:-}${RN_PAIR_CM_KERNEL:-}" ] && [ $crc -ne 0 ] &&
		grep -Eq "RDMA_CM_EVENT_REJECTED; error: 8|CM event bl blka 8" "$out.client"; then
		kill $spid 2>/dev/null
		raced=1
	fi
	wait $spid
	src=$?
}

# perftest times itself by fitting its cycle counter against the clock;
# on a loaded 2-core machine (sanitizers, tests in parallel) the fit can
# miss its r^2 > 0.9 and perftest gives up with no report.  That is the
# tool's own measurement, not the device: run it again, a few times.
for attempt in $(seq "${RN_PAIR_ATTEMPTS:-3}"); do
	raced=
	run_pair
	if [ -n "$raced" ]; then
		echo "pair: perftest's second connection raced its server's listen (attempt $attempt)" >&2
		continue
	fi
	cat "$out.client" "$out.server" | grep -q "Correlation coefficient r^2" ||
		break
	echo "pair: perftest could not calibrate its clock (attempt $attempt)" >&2
done
cat "$out.client"
rc=0
if [ $crc -ne 0 ] || [ $src -ne 0 ]; then
	echo "pair: client exited $crc, server exited $src; server said:" >&2
	cat "$out.server" >&2
	rc=1
fi

# The numbers of a results table: every data row after the '#bytes' header.
rows() {
	awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print }' "$out.client"
}
case $check in
perftest-bw)
	# columns: bytes iterations BW_peak BW_average MsgRate.  A message
	# rate says that messages went; the bandwidth of 2-byte messages
	# prints as 0.00 MB/s below 2500 a second (a stalled row under ASan
	# on a loaded machine), so it need only be a number.
	[ -n "$(rows)" ] && rows | awk '!($4 >= 0 && $5 > 0) { exit 1 }' ||
		{ echo "pair: no sane bandwidth results" >&2; rc=1; } ;;
perftest-lat)
	# columns: bytes iterations t_min t_max t_typical ...
	[ -n "$(rows)" ] && rows | awk '!($3 > 0 && $5 >= $3) { exit 1 }' ||
		{ echo "pair: no sane latency results" >&2; rc=1; } ;;
pingpong)
	grep -Eq 'bytes in [0-9.]+ seconds = [0-9.]+ Mbit/sec' "$out.client" &&
		grep -Eq '^[0-9]+ iters in' "$out.client" ||
		{ echo "pair: no pingpong result" >&2; rc=1; } ;;
success)
	# ibv_xsrq_pingpong checks every message itself and says so.
	grep -qx success "$out.client" ||
		{ echo "pair: no success line" >&2; rc=1; } ;;
match:*)
	grep -Eq "${check#match:}" "$out.client" ||
		{ echo "pair: no line matches ${check#match:}" >&2; rc=1; } ;;
none) ;;
*) echo "pair: unknown check $check" >&2; rc=1 ;;
esac
rm -f "$out" "$out.client" "$out.server"
exit $rc
