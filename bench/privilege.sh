#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/privilege.sh [BUILD_DIR [RUNS]]: latency by the device's privileges,
# in one run.  ib_write_lat and ib_send_lat 8 B (20000 iterations), both
# perftest processes polling, against a private ringnicd started
#   rt:     as root, with SCHED_FIFO priority (the default for root);
#   no-rt:  as root, --no-realtime;
#   user:   as the plain user rn-test (made if missing), with no realtime
#           priority to get, device and tools alike.
# Each configuration runs RUNS times (default 3), interleaved; the table
# gives the median of each column, and the ratios of no-rt and user to rt.
# CSV: bench/results/privilege.csv.  Needs root.  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
runs=${2:-3}
mkdir -p "$here/results"
csv=$here/results/privilege.csv
id rn-test >/dev/null 2>&1 ||
	useradd --system --no-create-home --shell /usr/sbin/nologin rn-test
as_user="setpriv --reuid=rn-test --regid=rn-test --clear-groups"

# one CONFIG TOOL PORT: "typical p99 p99.9" in microseconds.
one() {
	local config=$1 tool=$2 port=$3 prefix= dir args= pid
	[ "$config" = user ] && prefix=$as_user
	[ "$config" = no-rt ] && args=--no-realtime
	dir=$(mktemp -d /tmp/ringnic-privilege.XXXXXX)
	chmod 755 "$dir"
	[ "$config" = user ] && chown rn-test: "$dir"
	$prefix "$build/bin/ringnicd" --runtime-dir "$dir" --netdev lo $args
	pid=$(cat "$dir/ringnic0.pid")
	RINGNIC_RUNTIME_DIR=$dir $prefix "$build/bin/ringnic-run" \
		"$tool" -p "$port" -s 8 -n 20000 >/dev/null 2>&1 &
	until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
	RINGNIC_RUNTIME_DIR=$dir $prefix "$build/bin/ringnic-run" \
		"$tool" -p "$port" -s 8 -n 20000 localhost |
		awk '/#bytes/ { t = 1; next }
		     t && $1 ~ /^[0-9]+$/ { print $5, $8, $9 }'
	wait
	kill -TERM "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
	rmdir "$dir" 2>/dev/null || :
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
port=19500
for _ in $(seq "$runs"); do
	for tool in ib_write_lat ib_send_lat; do
		for config in rt no-rt user; do
			port=$((port + 1))
			echo "$tool $config $(one "$config" "$tool" $port)" >>"$raw"
		done
	done
done

echo "tool,config,typical_us,p99_us,p99.9_us,p99.9_ratio_to_rt" >"$csv"
printf "%-13s %-6s %9s %9s %9s %14s\n" tool config typical p99 p99.9 \
	"p99.9 / rt's"
for tool in ib_write_lat ib_send_lat; do
	rt=
	for config in rt no-rt user; do
		stats=()
		for col in 3 4 5; do
			stats+=("$(awk -v t=$tool -v c=$config -v k=$col \
				'$1 == t && $2 == c { print $k }' "$raw" | median)")
		done
		[ "$config" = rt ] && rt=${stats[2]}
		ratio=$(awk -v a="${stats[2]}" -v b="$rt" \
			'BEGIN { printf "%.2f", a / b }')
		printf "%-13s %-6s %9s %9s %9s %14s\n" "$tool" "$config" \
			"${stats[@]}" "$ratio"
		echo "$tool,$config,${stats[0]},${stats[1]},${stats[2]},$ratio" >>"$csv"
	done
done
echo "(csv: $csv; every run: $runs per configuration)"
