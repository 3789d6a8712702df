#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# rdma-tool.sh BUILD_DIR: iproute2's rdma tool, unmodified, under
# ringnic-run, against the two hosts' devices (lib.sh), which both publish
# in one runtime dir: the shim merges the answers of their ringnicd.
# rdma_tool_check.py compares what the tool prints (-j) with what the
# devices publish and what the programs it lists printed: the devices and
# ports, the QPs, CQs, MRs, PDs, contexts and rdma_cm ids of an
# ib_write_bw of 100 QPs and an rping across the hosts, their counts, one
# QP by its number, the port counters, and what a plain user may see.
set -u
[ -n "${RN_TRACE:-}" ] && { PS4="+ \$(date +%S.%N | cut -c1-5) "; set -x; }
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
here=$(cd "$(dirname "$0")" && pwd)
out=$RINGNIC_RUNTIME_DIR.rdma
mkdir -p "$out"
chmod 777 "$out"
failed=0
sys=$RINGNIC_RUNTIME_DIR/sys/class/infiniband

fail() {
	echo "FAIL $*"
	failed=$((failed + 1))
}

# json NAME ARGS...: `rdma -j ARGS` into $out/NAME.json.
json() {
	local name=$1
	shift
	ringnic-run rdma -j "$@" >"$out/$name.json" 2>"$out/$name.err" ||
		fail "rdma $*: $(cat "$out/$name.err")"
}

# ---- the devices and their ports ---------------------------------------
json dev dev
json dev1 dev show ringnic1
json link link
json link1 link show ringnic1/1
json sys system
json stat0 statistic show link ringnic0/1
json statqp statistic qp show
# What the device published as its own (guid, counters), for the check.
{
	for d in ringnic0 ringnic1; do
		echo "$d node_guid $(cat "$sys/$d/node_guid")"
		echo "$d fw_ver $(cat "$sys/$d/fw_ver")"
	done
	echo "wa ifindex $(ip -o link show wa | cut -d: -f1)"
	echo "wb ifindex $(on_b ip -o link show wb | cut -d: -f1)"
	echo "ringnic0 counters $(ls "$sys/ringnic0/ports/1/hw_counters" | tr '\n' ' ')"
} >"$out/published.txt"
python3 "$here/rdma_tool_check.py" devices "$out" ||
	fail "devices and ports"

# The socket itself, where the tool would not see a difference.
ringnic-run python3 "$here/netlink_socket_check.py" 2 ||
	fail "the netlink socket"

# A change is refused, and says so.
if ringnic-run rdma dev set ringnic0 name other 2>"$out/set.err"; then
	fail "rdma dev set: succeeded"
elif ! grep -q "Operation not supported" "$out/set.err"; then
	fail "rdma dev set: $(cat "$out/set.err")"
fi

# QP counters: in auto mode by type on ringnic0, the QPs to come.
ringnic-run rdma statistic qp set link ringnic0/1 auto type on \
	2>"$out/auto.err" || fail "auto mode: $(cat "$out/auto.err")"
json qpmode statistic qp mode link ringnic0/1

# ---- the resources of programs across the hosts ------------------------
# ib_write_bw: server on ringnic0 (this host), client on ringnic1, 100
# QPs each (more than one netlink message holds), until they are killed;
# their lines as they print them (stdbuf).
bw=(ib_write_bw -x 0 -p 18801 -q 100 --run_infinitely)
timeout 60 stdbuf -oL ringnic-run "${bw[@]}" -d ringnic0 >"$out/server.txt" 2>&1 &
server=$!
sleep 0.5
on_b timeout 60 stdbuf -oL ringnic-run "${bw[@]}" -d ringnic1 198.18.0.1 \
	>"$out/client.txt" 2>&1 &
client=$!
# 200 QPs more each side: ringnic0's one counter of RC QPs (below) holds
# more than one netlink message can list.
bw2=(ib_write_bw -x 0 -p 18803 -q 200 --run_infinitely)
timeout 60 stdbuf -oL ringnic-run "${bw2[@]}" -d ringnic0 >"$out/server2.txt" 2>&1 &
server2=$!
sleep 0.5
on_b timeout 60 stdbuf -oL ringnic-run "${bw2[@]}" -d ringnic1 198.18.0.1 \
	>"$out/client2.txt" 2>&1 &
client2=$!
# rping through rdma_cm: server on ringnic0, client on ringnic1.
timeout 60 ringnic-run rping -s -a 198.18.0.1 -p 18802 -C 200000 \
	>/dev/null 2>&1 &
rping_server=$!
sleep 0.5
on_b timeout 60 ringnic-run rping -c -a 198.18.0.1 -p 18802 -C 200000 \
	>/dev/null 2>&1 &
rping_client=$!
# Both perftests print their QPs once connected, then measure.
for _ in $(seq 200); do
	[ "$(grep -c 'remote address' "$out/server.txt")" = 100 ] &&
		[ "$(grep -c 'remote address' "$out/client.txt")" = 100 ] &&
		[ "$(grep -c 'remote address' "$out/server2.txt")" = 200 ] &&
		[ "$(grep -c 'remote address' "$out/client2.txt")" = 200 ] &&
		break
	kill -0 $server $client $server2 $client2 2>/dev/null || break
	sleep 0.1
done
# Two client QPs lose 2 % of their packets, and are bound by hand on
# ringnic1 (manual mode): the first to a new counter, the second to it.
qpns=($(sed -nE 's/.*local address: .*QPN (0x[0-9a-f]+).*/\1/p' "$out/client.txt" | head -n 2))
for q in "${qpns[@]}"; do
	ringnic-fault -d ringnic1 "$q" drop,share=2% >/dev/null ||
		fail "ringnic-fault on client QP $q"
done
ringnic-run rdma statistic qp bind link ringnic1/1 lqpn $((qpns[0])) \
	2>"$out/bind.err" || fail "bind: $(cat "$out/bind.err")"
json qpstat0 statistic qp show link ringnic1/1
cntn=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))[0]["cntn"])' \
	"$out/qpstat0.json") || fail "no counter on ringnic1: $(cat "$out/qpstat0.json")"
ringnic-run rdma statistic qp bind link ringnic1/1 lqpn $((qpns[1])) \
	cntn "$cntn" 2>"$out/bind2.err" || fail "bind to $cntn: $(cat "$out/bind2.err")"
echo "$((qpns[0])) $((qpns[1]))" >"$out/bound.txt"
sleep 1
{
	echo "$(pgrep -xf "${bw[*]} -d ringnic0") server"
	echo "$(pgrep -xf "${bw[*]} -d ringnic1 198.18.0.1") client"
	echo "$(pgrep -xf "rping -s -a 198.18.0.1 -p 18802 -C 200000") rping_server"
	echo "$(pgrep -xf "rping -c -a 198.18.0.1 -p 18802 -C 200000") rping_client"
	echo "$(pgrep -xf "${bw2[*]} -d ringnic0") server2"
	echo "$(pgrep -xf "${bw2[*]} -d ringnic1 198.18.0.1") client2"
} >"$out/pids.txt"
# Stopped where they are, the programs keep their objects and leave the
# CPU to the tool (their polling would take both cores).
programs=$(awk '{ print $1 }' "$out/pids.txt")
kill -STOP $programs
json res res
json qp res show qp
json cq res show cq
json mr res show mr
json pd res show pd
json ctx res show ctx
json cm_id res show cm_id
lqpn=$(sed -nE 's/.*local address: .*QPN (0x[0-9a-f]+).*/\1/p' "$out/server.txt" | sort | head -n 1)
json qp_one res show qp link ringnic0/1 lqpn $((lqpn))
json qpstat statistic qp show
# A plain user sees the objects, not their keys.
chmod 755 "$RINGNIC_RUNTIME_DIR"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	ringnic-run rdma -j res show mr >"$out/mr_nobody.json" \
	2>"$out/mr_nobody.err" ||
	fail "rdma res show mr as nobody: $(cat "$out/mr_nobody.err")"
setpriv --reuid=nobody --regid=nogroup --clear-groups \
	ringnic-run rdma statistic qp set link ringnic0/1 auto off \
	>/dev/null 2>"$out/auto_nobody.err" &&
	fail "a plain user changed the QP counters' mode"
grep -q "Operation not permitted" "$out/auto_nobody.err" ||
	fail "nobody's auto off: $(cat "$out/auto_nobody.err")"
python3 "$here/rdma_tool_check.py" resources "$out" || fail "resources"
# Unbound: the counter keeps what the QP added, and goes with its last.
ringnic-run rdma statistic qp unbind link ringnic1/1 cntn "$cntn" \
	lqpn $((qpns[1])) 2>"$out/unbind.err" || fail "unbind: $(cat "$out/unbind.err")"
json qpstat_one statistic qp show link ringnic1/1
ringnic-run rdma statistic qp unbind link ringnic1/1 cntn "$cntn" \
	lqpn $((qpns[0])) 2>"$out/unbind.err" || fail "unbind: $(cat "$out/unbind.err")"
json qpstat1 statistic qp show link ringnic1/1
[ "$(cat "$out/qpstat1.json")" = "[]" ] ||
	fail "after unbind: $(cat "$out/qpstat1.json")"
# Auto mode off: its counters stay (manual mode) until their QPs go.
ringnic-run rdma statistic qp set link ringnic0/1 auto off ||
	fail "auto off"

# They ran all along: no error ended them.
kill -CONT $programs
for p in $server $client $server2 $client2 $rping_server $rping_client; do
	kill -0 $p 2>/dev/null ||
		fail "a program listed had ended: $(tail -n 3 "$out"/*.txt)"
done
pkill -f "ib_write_bw -x 0 -p 1880[13]"
pkill -f "rping -. -a 198.18.0.1 -p 18802"
wait $server $client $server2 $client2 $rping_server $rping_client 2>/dev/null

# ---- after them: nothing is left, and the counters are the device's ----
json res_after res
json qpstat_after statistic qp show
sleep 0.3 # the counter files are rewritten within 100 ms
json stat_after statistic show link ringnic0/1
for c in sent_pkts rcvd_pkts; do
	echo "$c $(cat "$sys/ringnic0/ports/1/hw_counters/$c")"
done >"$out/counters.txt"
python3 "$here/rdma_tool_check.py" after "$out" || fail "after the programs"

[ $failed -eq 0 ] && echo "rdma tool: all checks passed" ||
	echo "rdma tool: $failed failed (files in $out)"
exit $((failed > 0))
