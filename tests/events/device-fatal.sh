#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# device-fatal.sh PROGRAM: inside with-device.sh, kill ringnicd (SIGKILL)
# under an event-driven client once it is ready; it must report the loss
# (exit 3) instead of hanging.
set -u
out=$(mktemp /tmp/rn-fatal.XXXXXX)
ringnic-run "$1" >"$out" 2>&1 &
client=$!
for _ in $(seq 100); do
	grep -q ready "$out" && break
	sleep 0.05
done
kill -KILL "$RINGNICD_PID"
wait $client
rc=$?
cat "$out"
rm -f "$out"
[ $rc -eq 3 ] || { echo "client exit $rc, expected 3" >&2; exit 1; }
