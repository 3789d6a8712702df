#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/run.sh [BUILD_DIR]: ringnic against the machine's own ceilings, in
# one run.  Starts a private ringnicd, runs the unmodified perftest tools
# (ib_write_bw 64 B message rate, ib_write_bw 64 KiB bandwidth,
# ib_write_lat 8 B) and the references of rn_bench_ref, prints a table and
# writes it as CSV to bench/results/quick.csv.  Numbers, never pass/fail.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
export PATH="$build/bin:$PATH"
export RINGNIC_RUNTIME_DIR
RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/ringnic-bench.XXXXXX)
mkdir -p "$here/results"
csv=$here/results/quick.csv
port=18700

ringnicd --runtime-dir "$RINGNIC_RUNTIME_DIR"
trap 'kill -TERM "$(cat "$RINGNIC_RUNTIME_DIR/ringnic0.pid")"' EXIT

# perftest TOOL ARGS...: the client's result row.
perftest() {
	local tool=$1
	shift
	port=$((port + 1))
	ringnic-run "$tool" -p $port "$@" >/dev/null 2>&1 &
	local server=$!
	until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
	ringnic-run "$tool" -p $port "$@" localhost |
		awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { print; exit }'
	wait $server
}

echo "metric,value,unit" >"$csv"
emit() {
	printf "%-34s %10s %s\n" "$1" "$2" "$3"
	echo "$1,$2,$3" >>"$csv"
}

row=$(perftest ib_write_bw -s 64 -n 100000)
emit ib_write_bw_64B_msg_rate "$(echo "$row" | awk '{ print $5 }')" Mpps
row=$(perftest ib_write_bw -s 65536 -n 20000)
emit ib_write_bw_64KiB_bw "$(echo "$row" | awk '{ printf "%.2f", $4 / 1000 }')" GB/s
row=$(perftest ib_write_lat -s 8 -n 10000)
emit ib_write_lat_8B_typical "$(echo "$row" | awk '{ print $5 }')" us
rn_bench_ref | while read -r name value unit; do
	emit "$name" "$value" "$unit"
done
echo "(csv: $csv)"
