#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# smoke.sh NODES_FILE: a short workload for the device of the installed
# units (under unit-exec.sh --strace, so that ringnicd makes the calls of
# real work: data both ways, completion events); the names of the
# device's /dev/infiniband nodes go to NODES_FILE.
set -eu
tests=$(dirname "$(dirname "$(readlink -f "$0")")")
ringnic-run ibv_devinfo | grep -q PORT_ACTIVE
(cd /run/ringnic/sys/class/infiniband_verbs && ls -d ringnic_*) >"$1"
pair() {
	local port=$1
	shift
	"$tests/pair.sh" none "$port" "$@" -p "$port" -- "$@" -p "$port" localhost >/dev/null
}
pair 18921 ibv_rc_pingpong -g 0 -e -n 200
pair 18922 ib_read_bw -n 200
pair 18923 ib_write_bw -n 200
echo "smoke: the device of ringnicd.service works"
