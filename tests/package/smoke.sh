#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# smoke.sh NODES_FILE DEVICE...: the devices of the installed units are
# all there, and a short workload runs on the first (under unit-exec.sh
# --strace, so that ringnicd makes the calls of real work: data both ways,
# completion events).  The names of the devices' /dev/infiniband nodes go
# to NODES_FILE.
set -eu
tests=$(dirname "$(dirname "$(readlink -f "$0")")")
nodes=$1
shift
for dev in "$@"; do
	ringnic-run ibv_devinfo -d "$dev" | grep -q PORT_ACTIVE ||
		{ echo "smoke: no usable $dev" >&2; exit 1; }
done
(cd /run/ringnic/sys/class/infiniband_verbs && ls -d ringnic_*) >"$nodes"
# Where this machine allows realtime priority, the unit's capabilities
# must be enough for ringnicd to get it.
if chrt -f 1 true 2>/dev/null; then
	for dev in "$@"; do
		chrt -p "$(cat "/run/ringnic/$dev.pid")" | grep -q SCHED_FIFO ||
			{ echo "smoke: $dev runs without SCHED_FIFO" >&2; exit 1; }
	done
fi
pair() {
	local port=$1
	shift
	"$tests/pair.sh" none "$port" "$@" -p "$port" -- "$@" -p "$port" localhost >/dev/null
}
pair 18921 ibv_rc_pingpong -d "$1" -g 0 -e -n 200
pair 18922 ib_read_bw -d "$1" -n 200
pair 18923 ib_write_bw -d "$1" -n 200
echo "smoke: the devices of ringnicd.service work: $*"
