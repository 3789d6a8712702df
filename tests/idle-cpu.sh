#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# idle-cpu.sh: inside with-device.sh, a ringnicd with a client that holds
# QPs but posts nothing sleeps: it uses no CPU over two seconds.
set -u
ticks() { awk '{ print $14 + $15 }' "/proc/$RINGNICD_PID/stat"; }
ringnic-run ibv_rc_pingpong -g 0 -p 18599 >/dev/null 2>&1 &
client=$!
sleep 0.5
t0=$(ticks)
sleep 2
t1=$(ticks)
kill $client
wait $client 2>/dev/null
echo "ringnicd used $((t1 - t0)) clock ticks in 2 s while idle"
[ $((t1 - t0)) -le 1 ]
