#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# with-device.sh BUILD_DIR CMD [ARGS...]
#
# Runs CMD with a private ringnicd: a fresh runtime dir, ringnic-run on PATH
# (through RINGNIC_RUNTIME_DIR it finds this device), RINGNICD_PID set.
# Its port is on lo, whatever network the host has: GID 0 is 127.0.0.1
# (RINGNICD_ARGS, added last, may choose another --netdev).
# Afterwards the daemon gets SIGTERM and must have removed everything it
# published.  Exit status: CMD's, or 1 if the device misbehaved.
set -u
build=$1
shift
# RINGNIC_TEST_AS: a command prefix that runs the device and CMD as users
# run them (scripts/test's unprivileged stages: another user, a user
# namespace, a seccomp filter).
if [ -n "${RINGNIC_TEST_AS:-}" ] && [ -z "${RINGNIC_TEST_AS_DONE:-}" ]; then
	export RINGNIC_TEST_AS_DONE=1
	cd /tmp && exec $RINGNIC_TEST_AS "$0" "$build" "$@"
fi
export PATH="$build/bin:$PATH"
export RINGNIC_RUNTIME_DIR
RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/rn.XXXXXX)
dir=$RINGNIC_RUNTIME_DIR

ringnicd --runtime-dir "$dir" --foreground --netdev lo ${RINGNICD_ARGS:-} \
	2>"$dir.log" &
export RINGNICD_PID=$!
for _ in $(seq 100); do
	[ -e "$dir"/sys/class/infiniband_verbs/*/ibdev ] && break
	sleep 0.05
done
if ! [ -e "$dir"/sys/class/infiniband_verbs/*/ibdev ]; then
	echo "with-device: ringnicd did not come up:" >&2
	cat "$dir.log" >&2
	kill -9 "$RINGNICD_PID" 2>/dev/null
	exit 1
fi
# ringnicd makes nothing outside its runtime dir: the shim serves the node.
node=/dev/infiniband/$(basename "$dir"/sys/class/infiniband_verbs/ringnic_*)

"$@"
rc=$?

fail() {
	echo "with-device: $*" >&2
	cat "$dir.log" >&2
	rc=1
}
# The exit status tells what became of the daemon, whatever state it is in
# when the test ends (a daemon the test killed may still be dying, its
# sockets closed but not yet a zombie): 0 after the SIGTERM here, 128+9
# where the test killed it (RINGNICD_MAY_DIE), anything else a failure.
kill -TERM "$RINGNICD_PID" 2>/dev/null
wait "$RINGNICD_PID"
status=$?
if [ $status = 0 ]; then
	[ -e "$dir" ] && fail "ringnicd left $(find "$dir" | head -5)"
elif [ $status != 137 ] || [ -z "${RINGNICD_MAY_DIE:-}" ]; then
	fail "ringnicd exited with status $status"
fi
[ -e "$node" ] && fail "ringnicd made $node"
rm -rf "$dir" "$dir.log"
exit $rc
