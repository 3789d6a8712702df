#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# valgrind.sh PORT TOOL ARGS...: inside with-device.sh, the unmodified TOOL
# as a client under valgrind memcheck, with the ringnic provider and the
# shim loaded into it: any memcheck error fails (the server runs normally).
set -u
port=$1
shift
log=$(mktemp /tmp/rn-vg.XXXXXX)
ringnic-run "$@" -p "$port" >/dev/null 2>&1 &
server=$!
until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
ringnic-run valgrind --tool=memcheck --error-exitcode=99 --track-fds=no \
	--log-file="$log" "$@" -p "$port" localhost >/dev/null
rc=$?
wait $server
src=$?
grep -E "ERROR SUMMARY|Invalid|uninitialised|Mismatched" "$log" | head -20
rm -f "$log"
echo "valgrind client exit $rc, server exit $src"
[ $rc -eq 0 ] && [ $src -eq 0 ]
