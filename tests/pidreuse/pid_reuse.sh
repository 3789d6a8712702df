#!/bin/sh
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# pid_reuse.sh BUILD_DIR PROGRAM: PROGRAM (rn_pid_reuse) and its own
# ringnicd in a pid namespace of their own, where ns_last_pid can give a new
# process the pid of one that exited; and in a network namespace of their
# own, with only lo.  Needs root: skipped (77) otherwise.
set -eu
[ "$(id -u)" = 0 ] || { echo "pid_reuse: needs root" >&2; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
exec unshare --pid --fork --mount-proc --net sh -c '
	ip link set lo up
	exec "$0" "$1" ringnic-run "$2"' "$here/../with-device.sh" "$1" "$2"
