#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/scale.sh [BUILD_DIR]: what more engines give (ringnicd --engines).
#
# For each engine count in ENGINES (default "1 2 4"):
#   - the engines alone: as many rn_bench_load processes as engines, each
#     one context (one engine's) with LOAD_PAIRS RC pairs of its own,
#     writing 64 B and 64 KiB, sleeping on a completion channel: the
#     engines do the work, no poller takes their CPU.  Once with the
#     engines at realtime priority (load "alone", the default as root) and
#     once without (--no-realtime, load "alone-no-rt"): where a generator
#     shares a core with the engine it feeds, a realtime engine woken by
#     its doorbell preempts it at once, so each wake-up brings one post's
#     work (bench/README.md);
#   - perftest: PAIRS (default "1 2 4") ib_write_bw pairs at once, 64 B
#     with --post_list 32 and 64 KiB, on the local path and over a veth
#     pair (two hosts, bench/wire-hosts.sh), each pair its own QPs.
# Aggregate Mpps and MB/s, and the ratio to one engine measured in the same
# run, go to bench/results/scale.csv and scale.png.  SECONDS_PER_POINT
# (default 4) is each run's length.  On a machine of few cores perftest's
# pollers take the cores the engines would use: the engines-alone rows are
# what says whether engines scale.
set -eu
build=$(realpath "${1:-build}")
here=$(dirname "$(realpath "$0")")
export PATH="$build/bin:$PATH"
engines_list=${ENGINES:-"1 2 4"}
pairs_list=${PAIRS:-"1 2 4"}
secs=${SECONDS_PER_POINT:-4}
load_pairs=${LOAD_PAIRS:-4}
mtu=9000
mkdir -p "$here/results"
csv=$here/results/scale.csv
echo "path,load,engines,pairs,size,mpps,mbps" >"$csv"
bench_port=18900

# ---- the local path: a private ringnicd on lo -------------------------------

local_start() { # ENGINES [RINGNICD_ARGS...]
	export RINGNIC_RUNTIME_DIR
	RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/ringnic-scale.XXXXXX)
	ringnicd --runtime-dir "$RINGNIC_RUNTIME_DIR" --netdev lo --engines "$@"
}
local_stop() {
	kill -TERM "$(cat "$RINGNIC_RUNTIME_DIR/ringnic0.pid")"
	while [ -e "$RINGNIC_RUNTIME_DIR/ringnic0.pid" ]; do sleep 0.05; done
	rm -rf "$RINGNIC_RUNTIME_DIR"
}

record() { # PATH LOAD ENGINES PAIRS SIZE MPPS MBPS
	echo "$1,$2,$3,$4,$5,$6,$7" >>"$csv"
	printf '%-6s %-9s engines %-2s pairs %-2s %6s B  %8s Mpps %9s MB/s\n' "$@"
}

# load_point LOAD ENGINES SIZE: one rn_bench_load process per engine.
load_point() {
	local load=$1 e=$2 size=$3 i pids=() files=() mops mbps
	for i in $(seq "$e"); do
		files+=("$(mktemp)")
		ringnic-run rn_bench_load -p "$load_pairs" -s "$size" -t "$secs" \
			>"${files[-1]}" &
		pids+=($!)
	done
	for i in "${pids[@]}"; do wait "$i"; done
	read -r mops mbps < <(awk -v size="$size" '$1 == "rate" { s += $2 }
		END { printf "%.3f %.0f\n", s, s * size }' "${files[@]}")
	rm -f "${files[@]}"
	record local "$load" "$e" "$e" "$size" "$mops" "$mbps"
}

# perftest_pairs RUN_SERVER RUN_CLIENT SERVER_ADDR PAIRS SIZE ARGS...: PAIRS
# ib_write_bw pairs at once; prints their summed Mpps and MB/s.
perftest_pairs() {
	local srv=$1 cli=$2 to=$3 pairs=$4 size=$5 i p servers=() clients=() files=()
	shift 5
	for i in $(seq "$pairs"); do
		bench_port=$((bench_port + 1))
		# shellcheck disable=SC2086  # the runner: words
		$srv timeout 120 ringnic-run ib_write_bw -p $bench_port -s "$size" \
			-D "$secs" "$@" >/dev/null 2>&1 &
		servers+=($!)
		until $srv ss -Hltn "sport = :$bench_port" | grep -q .; do sleep 0.05; done
	done
	p=$bench_port
	for i in $(seq "$pairs"); do
		files+=("$(mktemp)")
		# shellcheck disable=SC2086
		$cli timeout 120 ringnic-run ib_write_bw -p $((p - pairs + i)) \
			-s "$size" -D "$secs" "$@" "$to" >"${files[-1]}" 2>&1 &
		clients+=($!)
	done
	for i in "${clients[@]}" "${servers[@]}"; do wait "$i" || true; done
	awk '/#bytes/ { t = 1; next } t && $1 ~ /^[0-9]+$/ { bw += $4; mpps += $5; t = 0 }
	     END { printf "%.3f %.0f\n", mpps, bw }' "${files[@]}"
	rm -f "${files[@]}"
}

[ "$(id -u)" = 0 ] ||
	echo "scale: not root: the engines get no realtime priority, and the" \
		"alone and alone-no-rt rows measure the same" >&2
for e in $engines_list; do
	local_start "$e" --no-realtime
	load_point alone-no-rt "$e" 64
	load_point alone-no-rt "$e" 65536
	local_stop
	local_start "$e"
	load_point alone "$e" 64
	load_point alone "$e" 65536
	for p in $pairs_list; do
		read -r mpps mbps < <(perftest_pairs "" "" localhost "$p" 64 --post_list 32)
		record local perftest "$e" "$p" 64 "$mpps" "$mbps"
		read -r mpps mbps < <(perftest_pairs "" "" localhost "$p" 65536)
		record local perftest "$e" "$p" 65536 "$mpps" "$mbps"
	done
	local_stop
done

# ---- the wire: two hosts on a veth pair ---------------------------------------

for e in $engines_list; do
	(
		RINGNICD_OPTS="--engines $e"
		# shellcheck source=bench/wire-hosts.sh
		. "$here/wire-hosts.sh"
		for p in $pairs_list; do
			read -r mpps mbps < <(perftest_pairs "in_ns 0" "in_ns 1" \
				"${addr[0]}" "$p" 64 --post_list 32)
			record veth perftest "$e" "$p" 64 "$mpps" "$mbps"
			read -r mpps mbps < <(perftest_pairs "in_ns 0" "in_ns 1" \
				"${addr[0]}" "$p" 65536)
			record veth perftest "$e" "$p" 65536 "$mpps" "$mbps"
		done
	)
done

# ---- ratios to one engine, and the plot ----------------------------------------

echo
echo "ratio to one engine (same path, load, pairs and size):"
# The engines-alone rows have a load process per engine: their pairs grow
# with the engines.  Mpps for 64 B, MB/s (more digits) above.
awk -F, 'NR > 1 { k = $1 "," $2 "," ($2 ~ /^alone/ ? "per-engine" : $4) "," $5
		  m[NR] = $5 > 64 ? $7 : $6
		  if ($3 == 1) one[k] = m[NR]
		  key[NR] = k; e[NR] = $3 }
	 END { for (i = 2; i <= NR; i++) if (e[i] != 1 && one[key[i]] > 0)
		printf "  %-36s engines %-2s %.2f\n", key[i], e[i], m[i] / one[key[i]] }' "$csv"
if command -v gnuplot >/dev/null; then
	gnuplot <<GP
set terminal pngcairo size 1200,480 font ",10" noenhanced
set output "$here/results/scale.png"
set datafile separator ","
set multiplot layout 1,2 title "ringnicd --engines ($(nproc) cores, $(date +%F))"
set xlabel "engines"
set ylabel "Mpps"
set key top left font ",8"
set grid
set title "64 B writes"
plot for [p in "$pairs_list"] "< awk -F, '\$1==\"local\" && \$2==\"perftest\" && \$4==" . p . " && \$5==64' $csv" using 3:6 with linespoints title "local, " . p . " perftest pairs", \
     "< awk -F, '\$2==\"alone\" && \$5==64' $csv" using 3:6 with linespoints lw 2 title "local, engines alone", \
     "< awk -F, '\$2==\"alone-no-rt\" && \$5==64' $csv" using 3:6 with linespoints lw 2 dt 3 title "local, engines alone, --no-realtime", \
     for [p in "$pairs_list"] "< awk -F, '\$1==\"veth\" && \$4==" . p . " && \$5==64' $csv" using 3:6 with linespoints dt 2 title "veth, " . p . " pairs"
set ylabel "MB/s"
set title "64 KiB writes"
plot for [p in "$pairs_list"] "< awk -F, '\$1==\"local\" && \$2==\"perftest\" && \$4==" . p . " && \$5==65536' $csv" using 3:7 with linespoints title "local, " . p . " perftest pairs", \
     "< awk -F, '\$2==\"alone\" && \$5==65536' $csv" using 3:7 with linespoints lw 2 title "local, engines alone", \
     "< awk -F, '\$2==\"alone-no-rt\" && \$5==65536' $csv" using 3:7 with linespoints lw 2 dt 3 title "local, engines alone, --no-realtime", \
     for [p in "$pairs_list"] "< awk -F, '\$1==\"veth\" && \$4==" . p . " && \$5==65536' $csv" using 3:7 with linespoints dt 2 title "veth, " . p . " pairs"
unset multiplot
GP
	echo "plot: $here/results/scale.png"
fi
echo "csv: $csv"
