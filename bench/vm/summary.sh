#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# bench/vm/summary.sh RAW_CSV RESULTS_DIR: the medians of bench/vm.sh's raw
# rows (device,test,size,metric,value,unit) into RESULTS_DIR/vm.csv, the
# ratios of ringnic (both modes) to rxe and siw against the goals, of
# ringnic over the wire to rxe and to ringnic's local path, and the plot
# RESULTS_DIR/vm.png.
set -euo pipefail
raw=$1
results=$2
med=$(mktemp)
plot=$(mktemp)
trap 'rm -f "$med" "$plot"' EXIT

# Median of each point over the runs that produced a number.
awk -F, 'NR > 1 && $5 != "NA" { k = $1 FS $2 FS $3 FS $4 FS $6; v[k] = v[k] " " $5 }
	END { for (k in v) print k FS v[k] }' "$raw" |
	while IFS=, read -r dev test size metric unit values; do
		m=$(tr ' ' '\n' <<<"$values" | grep . | sort -g | awk '
			{ a[NR] = $1 }
			END {
				if (NR % 2) print a[(NR + 1) / 2]
				else print (a[NR / 2] + a[NR / 2 + 1]) / 2
			}')
		echo "$dev,$test,$size,$metric,$m,$unit"
	done | sort >"$med"
{ echo "device,test,size,metric,median,unit"; cat "$med"; } >"$results/vm.csv"

val() {
	awk -F, -v d="$1" -v t="$2" -v s="$3" -v m="$4" \
		'$1 == d && $2 == t && $3 == s && $4 == m { print $5 }' "$med"
}
ratio() {
	awk -v a="$1" -v b="$2" \
		'BEGIN { if (a == "" || b == "" || b == 0) print "NA"; else printf "%.2f", a / b }'
}
runs=$(awk -F, 'NR > 1 && $1 == "rxe0" && $2 == "ib_write_lat" { n++ } END { print n + 0 }' "$raw")
echo "medians of $runs runs ($results/vm.csv):"
column -t -s, "$results/vm.csv"
echo
for dev in ringnic0 ringnic-user:rnu0; do
	echo "$dev:"
	echo "  ib_write_bw 64 B message rate: $(ratio "$(val $dev ib_write_bw 64 msg_rate)" "$(val rxe0 ib_write_bw 64 msg_rate)") x rxe (goal >= 20)"
	echo "  ib_write_bw 64 KiB bandwidth:  $(ratio "$(val $dev ib_write_bw 65536 bw)" "$(val rxe0 ib_write_bw 65536 bw)") x rxe (goal >= 10), $(ratio "$(val $dev ib_write_bw 65536 bw)" "$(val siw0 ib_write_bw 65536 bw)") x siw (goal >= 2)"
	echo "  ib_write_lat 8 B:              $(ratio "$(val $dev ib_write_lat 8 lat_typical)" "$(val rxe0 ib_write_lat 8 lat_typical)") x rxe (goal <= 0.5)"
done
# Over the wire (RoCEv2 between two namespaces, a veth pair) against
# rxe0 (goals: 5 x its 64 KiB bandwidth and 64 B message rate, latency no
# worse), against ringnic's local path (rnu0: the same userspace mode,
# both ends on one ringnicd) and against plain UDP over the same pair
# (guest.sh's udp rows): what any device on UDP sockets could reach here.
w=ringnic-wire:rnw0:rnw1
u=ringnic-user:rnu0
udp=udp:rnw1:rnw0
wire_ratios() { # LABEL TEST SIZE METRIC [UDP_TEST UDP_SIZE]
	local v
	v=$(val $w "$2" "$3" "$4")
	printf '  %-30s %s x rxe, %s x local' "$1:" \
		"$(ratio "$v" "$(val rxe0 "$2" "$3" "$4")")" \
		"$(ratio "$v" "$(val $u "$2" "$3" "$4")")"
	[ -n "${5:-}" ] && printf ', %s x UDP (%s %s B)' \
		"$(ratio "$v" "$(val $udp "$5" "$6" "$4")")" "$5" "$6"
	echo
}
echo "$w (RoCEv2 over a veth pair):"
wire_ratios "ib_write_bw 64 B message rate" ib_write_bw 64 msg_rate udp_gso 64
wire_ratios "ib_send_bw 64 B message rate" ib_send_bw 64 msg_rate udp_gso 64
wire_ratios "ib_write_bw 64 KiB bandwidth" ib_write_bw 65536 bw udp_gso_gro 1024
wire_ratios "ib_read_bw 64 KiB bandwidth" ib_read_bw 65536 bw udp_gso_gro 1024
wire_ratios "ib_write_lat 8 B" ib_write_lat 8 lat_typical udp_pingpong 8
echo "  (goals against rxe: >= 5, >= 5 for ib_write_bw, <= 1 for ib_write_lat)"
# The least CPU a KiB takes on the wire in this VM (guest.sh's cpu rows):
# its ICRC sealed and checked, and its copy out of one process and into
# the other (a read through /proc/PID/mem taken at the rate of a write),
# spread over every vCPU with nothing else to do.
seal=$(val cpu:guest icrc_seal_ipv4 1024 time)
check=$(val cpu:guest icrc_check_ipv4 1024 time)
copy=$(val cpu:guest proc_mem_write 65536 rate)
cpus=$(val cpu:guest cpus 0 count)
if [ -n "$seal" ] && [ -n "$check" ] && [ -n "$copy" ] && [ -n "$cpus" ]; then
	read -r floor most <<<"$(awk -v s="$seal" -v c="$check" -v g="$copy" -v n="$cpus" \
		'BEGIN { f = (s + c) / 1e3 + 2 * 1024 / (g * 1e3)
			printf "%.2f %.1f", f, n * 1024 / f / 1.048576 }')"
	echo "  the wire's CPU floor per 1 KiB packet: ICRC sealed $seal ns + checked $check ns + 2 copies at $copy GB/s = $floor us; on $cpus vCPUs at most $most MiB/s = $(ratio "$most" "$(val rxe0 ib_write_bw 65536 bw)") x rxe, before UDP, perftest and the rest"
fi
echo "$udp (plain UDP over the same pair) against rxe0:"
printf '  %-30s %s x rxe\n' "1 KiB GSO+GRO vs 64 KiB bw:" \
	"$(ratio "$(val $udp udp_gso_gro 1024 bw)" "$(val rxe0 ib_write_bw 65536 bw)")"
printf '  %-30s %s x rxe\n' "64 B GSO vs 64 B msg rate:" \
	"$(ratio "$(val $udp udp_gso 64 msg_rate)" "$(val rxe0 ib_write_bw 64 msg_rate)")"
printf '  %-30s %s x rxe\n' "ping-pong vs ib_write_lat:" \
	"$(ratio "$(val $udp udp_pingpong 8 lat_typical)" "$(val rxe0 ib_write_lat 8 lat_typical)")"

# One group per point, the five devices side by side, log scale.
for point in "ib_write_bw 64 msg_rate" "ib_send_bw 64 msg_rate" \
	"ib_write_bw 65536 bw" "ib_read_bw 65536 bw" "ib_write_lat 8 lat_typical"; do
	read -r test size metric <<<"$point"
	printf '"%s %s %s"' "$test" "$size" "$metric"
	for dev in ringnic0 ringnic-user:rnu0 ringnic-wire:rnw0:rnw1 rxe0 siw0; do
		v=$(val $dev "$test" "$size" "$metric")
		printf ' %s' "${v:-NaN}"
	done
	echo
done >"$plot"
gnuplot <<GP
set terminal pngcairo size 1100,500 noenhanced
set output "$results/vm.png"
set title "ringnic vs rxe vs siw, Debian 6.1 under qemu TCG (medians of $runs runs): Mpps, MiB/s, us (latency: lower is better)"
set style data histograms
set style histogram clustered gap 1
set style fill solid border -1
set logscale y
set key outside top center horizontal
set xtics rotate by -10
plot "$plot" using 2:xtic(1) title "ringnic0 (kernel mode)", \
	'' using 3 title "ringnic userspace mode (local)", \
	'' using 4 title "ringnic userspace mode, wire (veth)", \
	'' using 5 title "rxe0", \
	'' using 6 title "siw0"
GP
echo "plot: $results/vm.png"
