#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# qperf.sh PORT TEST...: inside with-device.sh, the unmodified qperf server
# and client; every test must report a positive number.
set -u
port=$1
shift
ringnic-run qperf -lp "$port" >/dev/null 2>&1 &
server=$!
until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
out=$(timeout 120 ringnic-run qperf -lp "$port" -t 1 localhost "$@")
rc=$?
kill $server
wait $server 2>/dev/null
echo "$out"
[ $rc -eq 0 ] || exit 1
# Every test prints one "name:" line and one "bw = N" or "latency = N" line.
results=$(echo "$out" | grep -Ec '^ *(bw|latency|msg_rate) += +[0-9.]+ ')
[ "$results" -eq $# ] || { echo "qperf: $results results for $# tests" >&2; exit 1; }
