#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# client-churn.sh: run inside with-device.sh.  Clients that are killed
# (SIGKILL) while they hold a context, PD, MR, CQ and QP, or that exit
# without cleaning up, leave nothing in ringnicd: its open descriptors and
# mappings are back to where they started.
set -u
fds() { ls "/proc/$RINGNICD_PID/fd" | wc -l; }
maps() { wc -l <"/proc/$RINGNICD_PID/maps"; }
settle() { sleep 0.3; }

# One client first, so that one-time allocations are not counted as leaks.
timeout 5 ringnic-run ibv_rc_pingpong -g 0 -p 18590 >/dev/null 2>&1
settle
fd0=$(fds)
map0=$(maps)
for i in $(seq 20); do
	# The server sets everything up, then waits for a client: kill it there.
	ringnic-run ibv_rc_pingpong -g 0 -p $((18591 + i % 4)) >/dev/null 2>&1 &
	sleep 0.2
	kill -KILL $! 2>/dev/null
	wait $! 2>/dev/null
done
settle
fd1=$(fds)
map1=$(maps)
echo "ringnicd fds $fd0 -> $fd1, mappings $map0 -> $map1"
[ "$fd1" -le "$fd0" ] && [ "$map1" -le "$map0" ]
