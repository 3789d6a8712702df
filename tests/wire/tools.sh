#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# tools.sh BUILD_DIR: unmodified tools between the two hosts (lib.sh), the
# server on ringnic0 (host A), the client on ringnic1 (host B), over a
# veth pair of MTU 1500 (active_mtu 1024: every message above 1 KiB is
# segmented): ibv_rc_pingpong at several sizes with every buffer checked,
# with completion events, UD/UC/SRQ pingpongs, the perftest matrix, and
# the GRH's traffic class and hop limit as the packets' DSCP and TTL, a
# large READ asked in parts, and the local path and the control socket
# beside a busy wire.
# Afterwards neither device may have counted a malformed or corrupt packet
# or an exhausted retry.  (Timeouts may happen on this lossless link: a
# socket buffer overflows while its ringnicd waits for a CPU.)
set -u
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
port=18961
failed=0
step() { # NAME CHECK SERVER-ARGS... -- CLIENT-ARGS...
	local name=$1 out
	shift
	out=$(wire_pair "$@" 2>&1) || {
		echo "FAIL $name"
		echo "$out" | tail -n 20
		failed=$((failed + 1))
		return
	}
	echo "ok   $name"
}
pingpong() { # TOOL [ARGS...]
	step "$*" pingpong $port "$@" -d ringnic0 -g 0 -p $port -- \
		"$@" -d ringnic1 -g 0 -p $port 198.18.0.1
}
perftest() { # CHECK TOOL [ARGS...]
	local check=$1
	shift
	step "$*" "$check" $port "$@" -d ringnic0 -x 0 -p $port -- \
		"$@" -d ringnic1 -x 0 -p $port 198.18.0.1
}

for size in 1 1024 1025 4096 65536; do
	pingpong ibv_rc_pingpong -s $size -n 200 -c
done
pingpong ibv_rc_pingpong -s 8192 -n 200 -c -e
pingpong ibv_ud_pingpong -s 1024 -n 200 -c
pingpong ibv_uc_pingpong -s 4096 -n 200 -c
pingpong ibv_srq_pingpong -s 4096 -n 200 -c -q 4

for tool in ib_write_bw ib_read_bw ib_send_bw; do
	perftest perftest-bw $tool -s 65536 -n 200
	perftest perftest-bw $tool -s 4096 -n 200 -q 4
done
perftest perftest-bw ib_atomic_bw -n 500
perftest perftest-bw ib_write_bw -s 64 -n 2000 --post_list 8
perftest perftest-bw ib_send_bw -s 64 -n 2000 --post_list 8
# Every size from 2 B to 8 MiB; a tiny size's rate may print as 0.00 when a
# timeout hit it (a busy machine), so only the exit status counts here.
perftest none ib_write_bw -a -n 20
perftest none ib_read_bw -a -n 20
perftest perftest-bw ib_send_bw -e -s 16384 -n 200
perftest perftest-bw ib_send_bw -c UD -s 1024 -n 500
perftest perftest-lat ib_write_lat -n 200
perftest perftest-lat ib_read_lat -n 200
perftest perftest-lat ib_send_lat -s 4096 -n 200
perftest perftest-lat ib_atomic_lat -n 200

# The GRH's traffic class and hop limit are the IP header's DSCP and TTL
# (as rxe sends them), for RC (ECN ECT(0): congestion control) and UD
# (not ECT): host A counts what its client's packets arrive with.
# perftest --tclass=96 is DSCP 24; ibv_rc_pingpong's AH has hop limit 1,
# perftest's 255 (the socket's TTL would be 64; ibv_ud_pingpong's AH has
# 64 too from rdma-core 61 on, 1 before).
grh_counts() { # prints: all, matching, of those ECT(0)
	nft list table inet rngrh | awk '/counter/ { for (i = 1; i < NF; i++)
		if ($i == "packets") printf "%s ", $(i + 1) }'
}
grh() { # MATCH ECN(ect0|not-ect) RUNNER TOOL [ARGS...]
	local match=$1 ecn=$2 counts all matched ect
	shift 2
	nft -f - <<-EOF || { echo "FAIL grh $*: nft"; failed=$((failed + 1)); return; }
	table inet rngrh {
		chain in {
			type filter hook input priority 0;
			udp dport 4791 counter
			udp dport 4791 $match counter
			udp dport 4791 $match ip ecn ect0 counter
		}
	}
	EOF
	"$@"
	counts=$(grh_counts)
	nft delete table inet rngrh
	read -r all matched ect <<<"$counts"
	[ "$ecn" = ect0 ] || ect=$((all - ect))
	if [ "${all:-0}" -gt 0 ] && [ "$matched" = "$all" ] && [ "$ect" = "$all" ]; then
		echo "ok   grh: $all packets $match, $ecn"
	else
		echo "FAIL grh: of $all packets $matched $match, $ect $ecn"
		failed=$((failed + 1))
	fi
}
grh "ip dscp 24" ect0 perftest perftest-bw ib_send_bw -s 4096 -n 200 --tclass=96
grh "ip dscp 24" not-ect perftest perftest-bw ib_send_bw -c UD -s 1024 -n 200 --tclass=96
grh "ip ttl 1" ect0 pingpong ibv_rc_pingpong -s 4096 -n 50
grh "ip ttl 255" not-ect perftest perftest-bw ib_send_bw -c UD -s 1024 -n 50

# A READ longer than RN_WIRE_READ_PART (256) responses is asked in parts,
# each a READ request of its own that waits for room in the window: 1 MiB
# at active_mtu 1024 is 1024 responses, four requests.  The client's
# device sends nothing else in ib_read_bw, so its sent_pkts counts the
# requests of 20 such READs: 20 if each went whole.  (Not counted by
# nftables: GRO hands it runs of them as one packet.)
read_parts() {
	local before n
	before=$(counter ringnic1 sent_pkts)
	perftest perftest-bw ib_read_bw -s 1048576 -n 20
	sleep 0.2 # the counters' files are rewritten when the device idles
	n=$(($(counter ringnic1 sent_pkts) - before))
	if [ $n -ge 80 ]; then
		echo "ok   read parts: $n READ requests for 20 READs of 1 MiB"
	else
		echo "FAIL read parts: $n READ requests for 20 READs of 1 MiB"
		failed=$((failed + 1))
	fi
}
read_parts

# A busy wire leaves the local path and the control socket alone.  While
# ib_write_bw -b runs between the hosts (each device sends and receives as
# fast as it can), host B's ringnic1 serves a pingpong between two of its
# own processes (the local path: shared memory, every buffer checked) and
# ibv_devinfo (its control socket); both must be done before the wire's
# run is.  A device that served the wire first would have them wait for
# its end.  The pingpong sleeps on completion events (-e): four perftest
# processes already poll on this machine's two cores, and two more that
# poll take turns of the scheduler's time slice (13.7 ms a round trip,
# measured, against 0.3-0.5 ms with -e).
busy_wire() {
	local wire before waited=0 out
	before=$(counter ringnic0 rcvd_pkts)
	wire_pair perftest-bw 18962 ib_write_bw -d ringnic0 -x 0 -p 18962 \
		-s 65536 -b -D 12 -- ib_write_bw -d ringnic1 -x 0 -p 18962 \
		-s 65536 -b -D 12 198.18.0.1 >"$RINGNIC_RUNTIME_DIR.busy" 2>&1 &
	wire=$!
	# Busy: ringnic0 has taken 10000 packets (published as it works).
	while [ $(($(counter ringnic0 rcvd_pkts) - before)) -lt 10000 ] &&
		kill -0 $wire 2>/dev/null && [ $waited -lt 300 ]; do
		sleep 0.1
		waited=$((waited + 1))
	done
	if ! kill -0 $wire 2>/dev/null || [ $waited -ge 300 ]; then
		echo "FAIL busy wire: the wire's run did not get going"
		failed=$((failed + 1))
	elif ! out=$(on_b "$(dirname "$0")/../pair.sh" pingpong 18963 \
		ibv_rc_pingpong -d ringnic1 -g 0 -p 18963 -n 500 -c -e -- \
		ibv_rc_pingpong -d ringnic1 -g 0 -p 18963 -n 500 -c -e 198.18.0.2 2>&1); then
		echo "FAIL busy wire: the local pingpong"
		echo "$out" | tail -n 20
		failed=$((failed + 1))
	elif ! on_b ringnic-run ibv_devinfo -d ringnic1 >/dev/null; then
		echo "FAIL busy wire: ibv_devinfo"
		failed=$((failed + 1))
	elif ! kill -0 $wire 2>/dev/null; then
		echo "FAIL busy wire: the wire's run ended before the local pingpong and ibv_devinfo"
		failed=$((failed + 1))
	else
		echo "ok   busy wire: local pingpong and ibv_devinfo on ringnic1 while ib_write_bw -b ran"
	fi
	wait $wire || {
		echo "FAIL busy wire: ib_write_bw -b"
		tail -n 20 "$RINGNIC_RUNTIME_DIR.busy"
		failed=$((failed + 1))
	}
	rm -f "$RINGNIC_RUNTIME_DIR.busy"
}
busy_wire

wire_clean_counters ringnic0 ringnic1 || failed=$((failed + $?))
[ $failed = 0 ] || wire_fail "$failed failed"
wire_finish
