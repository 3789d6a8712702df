#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/sweep.sh [BUILD_DIR]: the unmodified perftest tools against a
# private ringnicd over message sizes, next to this machine's ceilings
# measured in the same run.  Writes bench/results/sweep.csv and plots it
# into bench/results/sweep.png.  Numbers, never pass/fail.
#
#   ib_write_bw, ib_send_bw: message rate and bandwidth, 2 B .. 1 MiB,
#     --post_list 1 and 32, 1 QP and -q 4 (each point: -D seconds of run)
#   ib_write_lat, ib_read_lat: typical latency, 2 B .. 1 MiB
#   memcpy and writes through /proc/PID/mem: the ceilings (rn_bench_ref)
#
# SIZES and SECONDS (per bandwidth point, default 1) may be set.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=$(cd "${1:-$here/../build}" && pwd)
sizes=${SIZES:-"2 8 64 256 1024 4096 16384 65536 262144 1048576"}
seconds=${SECONDS_PER_POINT:-1}
mkdir -p "$here/results"
csv=$here/results/sweep.csv
. "$here/lib.sh"

echo "test,size,post_list,qps,mpps,mbps,lat_typical_us" >"$csv"
for tool in ib_write_bw ib_send_bw; do
	for pl in 1 32; do
		for q in 1 4; do
			for s in $sizes; do
				row=$(perftest $tool -s "$s" -D "$seconds" -q $q \
					--post_list $pl)
				echo "$row" | awk -v t=$tool -v pl=$pl -v q=$q \
					'{ printf "%s,%s,%s,%s,%s,%s,\n", t, $1, pl, q, $5, $4 }' \
					>>"$csv"
				echo "$tool size $s post_list $pl qps $q: $(echo "$row" |
					awk '{ printf "%.3f Mpps %.0f MB/s", $5, $4 }')"
			done
		done
	done
done
for tool in ib_write_lat ib_read_lat; do
	for s in $sizes; do
		row=$(perftest $tool -s "$s" -n 2000)
		echo "$row" | awk -v t=$tool '{ printf "%s,%s,1,1,,,%s\n", t, $1, $5 }' >>"$csv"
		echo "$tool size $s: $(echo "$row" | awk '{ print $5 }') us typical"
	done
done

ref=$here/results/sweep-ref.txt
rn_bench_ref | tee "$ref"
ceiling=$(awk '$1 == "proc_mem_write_64KiB" { print $2 * 1000 }' "$ref")
memcpy=$(awk '$1 == "memcpy_64KiB" { print $2 * 1000 }' "$ref")

gnuplot <<GP
set terminal pngcairo size 1500,480 font ",10" noenhanced
set output "$here/results/sweep.png"
set datafile separator ","
set multiplot layout 1,3 title "ringnic (ringnicd $(date +%F), $(nproc) cores) - unmodified perftest"
set logscale x 2
set format x "%.0b%BB"
set xlabel "message size"
set key top right font ",8"
set grid
set logscale y
set ylabel "Mpps"
set title "message rate"
plot for [t in "ib_write_bw ib_send_bw"] for [pl in "1 32"] for [q in "1 4"] \
	"< awk -F, '\\\$1==\"".t."\" && \\\$3==".pl." && \\\$4==".q."' $csv" \
	using 2:5 with linespoints title sprintf("%s post_list %s, %s QP", t, pl, q)
set ylabel "MB/s"
set title "bandwidth"
set key bottom right
plot for [t in "ib_write_bw ib_send_bw"] for [pl in "1 32"] for [q in "1 4"] \
	"< awk -F, '\\\$1==\"".t."\" && \\\$3==".pl." && \\\$4==".q."' $csv" \
	using 2:6 with linespoints title sprintf("%s post_list %s, %s QP", t, pl, q), \
	$ceiling title "/proc/PID/mem write 64KiB (ceiling)" dt 2 lw 2, \
	$memcpy title "memcpy 64KiB" dt 3 lw 2
set ylabel "us (typical)"
set title "latency"
set key top left
plot for [t in "ib_write_lat ib_read_lat"] \
	"< awk -F, '\\\$1==\"".t."\"' $csv" using 2:7 with linespoints title t
unset multiplot
GP
echo "csv: $csv"
echo "plot: $here/results/sweep.png"
