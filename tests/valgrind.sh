#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# valgrind.sh PORT TOOL ARGS...: inside with-device.sh, the unmodified TOOL
# as a client under valgrind memcheck, with the ringnic provider and the
# shim loaded into it: any memcheck error fails (the server runs normally).
set -u
port=$1
shift
log=$(mktemp /tmp/rn-vg.XXXXXX)
# perftest gives up when it cannot fit its cycle counter to the clock on a
# loaded machine (pair.sh says more): that is no device error, try again.
for attempt in 1 2 3; do
	ringnic-run "$@" -p "$port" >/dev/null 2>&1 &
	server=$!
	until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
	ringnic-run valgrind --tool=memcheck --error-exitcode=99 --track-fds=no \
		--log-file="$log" "$@" -p "$port" localhost >"$log.out" 2>&1
	rc=$?
	wait $server
	src=$?
	grep -q "Correlation coefficient r^2" "$log.out" || break
	echo "valgrind.sh: perftest could not calibrate its clock (attempt $attempt)" >&2
done
grep -E "ERROR SUMMARY|Invalid|uninitialised|Mismatched" "$log" | head -20
rm -f "$log" "$log.out"
echo "valgrind client exit $rc, server exit $src"
[ $rc -eq 0 ] && [ $src -eq 0 ]
