#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# kill-under-tool.sh PORT TOOL ARGS...: inside with-device.sh, an unmodified
# event-driven tool runs (server and client) and ringnicd is killed in the
# middle; both sides must exit with an error, none may hang.
set -u
port=$1
shift
ringnic-run timeout 30 "$@" -p "$port" >/dev/null 2>&1 &
server=$!
until ss -Hltn "sport = :$port" | grep -q .; do sleep 0.05; done
ringnic-run timeout 30 "$@" -p "$port" localhost >/dev/null 2>&1 &
client=$!
sleep 1
kill -KILL "$RINGNICD_PID"
wait $client
crc=$?
wait $server
src=$?
echo "after the device died: client exit $crc, server exit $src"
# 124 is timeout(1): a hang.  0 would be a run that ignored the loss.
for rc in $crc $src; do
	[ $rc -ne 0 ] && [ $rc -ne 124 ] || exit 1
done
