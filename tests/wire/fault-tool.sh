#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# fault-tool.sh BUILD_DIR: ringnic-fault(1) on the QPs of unmodified
# programs, without root's help: an ib_write_bw across the hosts (lib.sh)
# loses 2 % of its client's packets and keeps going, with the losses
# counted apart (injected_drops) from their effects (retries, gaps at the
# server), which stop once the rules are cleared; and ib_send_bw on one
# host (the local path) meets RNR NAKs its server never sent.  A plain
# user cannot touch root's QPs, nor ringnicd a bad rule.
set -u
[ -n "${RN_TRACE:-}" ] && { PS4="+ \$(date +%S.%N | cut -c1-5) "; set -x; }
. "$(dirname "$0")/lib.sh"
wire_hosts "$@"
wire_devices
out=$RINGNIC_RUNTIME_DIR.fault
mkdir -p "$out"
failed=0
sys=$RINGNIC_RUNTIME_DIR/sys/class/infiniband

fail() {
	echo "FAIL $*"
	failed=$((failed + 1))
}

counter() { # DEVICE NAME
	cat "$sys/$1/ports/1/hw_counters/$2"
}

# qpn FILE: the first QPN a perftest printed as its own.
qpn() {
	sed -nE 's/.*local address: .*QPN (0x[0-9a-f]+).*/\1/p' "$1" | head -n 1
}

wait_for_qpn() { # FILE
	for _ in $(seq 100); do
		[ -n "$(qpn "$1")" ] && return 0
		sleep 0.1
	done
	return 1
}

# ---- the wire: 2 % of the client's packets lost --------------------------
bw=(ib_write_bw -x 0 -p 18811 --run_infinitely -D 1)
timeout 60 stdbuf -oL ringnic-run "${bw[@]}" -d ringnic0 >"$out/server.txt" 2>&1 &
server=$!
sleep 0.5
on_b timeout 60 stdbuf -oL ringnic-run "${bw[@]}" -d ringnic1 198.18.0.1 \
	>"$out/client.txt" 2>&1 &
client=$!
wait_for_qpn "$out/client.txt" || fail "no QPN from the client: $(cat "$out/client.txt")"
cqpn=$(qpn "$out/client.txt")
drops0=$(counter ringnic1 injected_drops)
retries0=$(counter ringnic1 completer_retry_err)
oos0=$(counter ringnic0 out_of_seq_request)
ringnic-fault -d ringnic1 -s 7 "$cqpn" drop,share=2% >"$out/set.txt" 2>&1 ||
	fail "ringnic-fault: $(cat "$out/set.txt")"
sleep 3
drops=$(( $(counter ringnic1 injected_drops) - drops0 ))
retries=$(( $(counter ringnic1 completer_retry_err) - retries0 ))
oos=$(( $(counter ringnic0 out_of_seq_request) - oos0 ))
echo "wire: $drops packets dropped by the rule, $retries retries, $oos gaps at the server"
[ "$drops" -gt 0 ] || fail "no packet dropped"
[ "$retries" -gt 0 ] || fail "no retry for $drops drops"
[ "$oos" -gt 0 ] || fail "the server saw no gap for $drops drops"
[ "$(counter ringnic1 rx_icrc_errors)" = 0 ] || fail "ICRC errors counted"

# Not root's QP to a plain user; no such QP; rules ringnicd refuses.
chmod 755 "$RINGNIC_RUNTIME_DIR"
if setpriv --reuid=nobody --regid=nogroup --clear-groups \
	ringnic-fault --runtime-dir "$RINGNIC_RUNTIME_DIR" -d ringnic1 \
	"$cqpn" drop >"$out/nobody.txt" 2>&1; then
	fail "nobody set the rules of root's QP"
fi
grep -q "no such QP of yours" "$out/nobody.txt" ||
	fail "nobody: $(cat "$out/nobody.txt")"
ringnic-fault -d ringnic1 0xffffff drop >/dev/null 2>&1 &&
	fail "a QP that does not exist took rules"
ringnic-fault -d ringnic1 "$cqpn" drop,share=200% >/dev/null 2>&1
[ $? = 2 ] || fail "share=200% was not a bad rule"
ringnic-fault -d ringnic1 "$cqpn" nak,value=9 >/dev/null 2>&1
[ $? = 1 ] || fail "nak,value=9 was not refused by ringnicd"

# Cleared: nothing more is injected, and the program ran through it all.
ringnic-fault -d ringnic1 "$cqpn" >/dev/null || fail "clearing the rules"
# The drops before the clearing reach the file within 100 ms, on a loaded
# machine later: the count must first hold still for half a second.
drops=$(counter ringnic1 injected_drops)
for _ in $(seq 20); do
	sleep 0.5
	[ "$(counter ringnic1 injected_drops)" = "$drops" ] && break
	drops=$(counter ringnic1 injected_drops)
done
sleep 1
[ "$(counter ringnic1 injected_drops)" = "$drops" ] ||
	fail "drops went on after the rules were cleared"
kill -0 $server $client 2>/dev/null || fail "ib_write_bw ended: $(tail -n 3 "$out"/*.txt)"
pkill -f "ib_write_bw -x 0 -p 18811"
wait $server $client 2>/dev/null

# ---- the local path: RNR NAKs the server never sent ----------------------
send=(ib_send_bw -x 0 -p 18812 -d ringnic0 --run_infinitely -D 1)
timeout 60 stdbuf -oL ringnic-run "${send[@]}" >"$out/lserver.txt" 2>&1 &
server=$!
sleep 0.5
timeout 60 stdbuf -oL ringnic-run "${send[@]}" 198.18.0.1 >"$out/lclient.txt" 2>&1 &
client=$!
wait_for_qpn "$out/lserver.txt" || fail "no QPN from the server: $(cat "$out/lserver.txt")"
sqpn=$(qpn "$out/lserver.txt")
rnr0=$(counter ringnic0 rcvd_rnr_err)
injected0=$(counter ringnic0 injected_rnr_naks)
sent0=$(counter ringnic0 send_rnr_err)
ringnic-fault -d ringnic0 "$sqpn" rnr,share=1% >"$out/lset.txt" 2>&1 ||
	fail "ringnic-fault: $(cat "$out/lset.txt")"
sleep 2
ringnic-fault -d ringnic0 "$sqpn" >/dev/null || fail "clearing the rules"
sleep 0.3
injected=$(( $(counter ringnic0 injected_rnr_naks) - injected0 ))
rnr=$(( $(counter ringnic0 rcvd_rnr_err) - rnr0 ))
echo "local path: $injected RNR NAKs injected, $rnr received"
[ "$injected" -gt 0 ] || fail "no RNR NAK injected"
[ "$rnr" -ge "$injected" ] || fail "$injected RNR NAKs injected, $rnr received"
[ "$(( $(counter ringnic0 send_rnr_err) - sent0 ))" = 0 ] ||
	fail "injected RNR NAKs counted as the server's"
kill -0 $server $client 2>/dev/null || fail "ib_send_bw ended: $(tail -n 3 "$out"/l*.txt)"
pkill -f "ib_send_bw -x 0 -p 18812"
wait $server $client 2>/dev/null

[ $failed -eq 0 ] && echo "fault tool: all checks passed" ||
	echo "fault tool: $failed failed (files in $out)"
exit $((failed > 0))
