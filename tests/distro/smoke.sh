#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# smoke.sh: with a ringnic device running where ringnic-run (from PATH)
# finds it: ibv_devinfo -v, ibv_rc_pingpong, perftest's ib_write_bw and
# ib_send_lat, each checked as the suite checks them (tests/pair.sh).
set -eu
tests=$(dirname "$(dirname "$(readlink -f "$0")")")
pair() {
	local check=$1 port=$2
	shift 2
	echo "== $*"
	"$tests/pair.sh" "$check" "$port" "$@" -p "$port" -- "$@" -p "$port" \
		localhost >/dev/null
}
echo "== ibv_devinfo -v"
ringnic-run ibv_devinfo -v | grep -q PORT_ACTIVE
pair pingpong 18951 ibv_rc_pingpong -g 0 -n 1000
pair perftest-bw 18952 ib_write_bw
pair perftest-lat 18953 ib_send_lat
echo "smoke: passed ($(command -v ringnic-run))"
