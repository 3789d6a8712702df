#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run-check.sh BUILD_DIR: ringnic-run passes the exit status through and
# fails clearly when no ringnicd runs.
set -u
run=$1/bin/ringnic-run
empty=$(mktemp -d /tmp/rn-empty.XXXXXX)
trap 'rm -rf "$empty"' EXIT

msg=$(RINGNIC_RUNTIME_DIR=$empty "$run" true 2>&1)
rc=$?
if [ $rc -eq 0 ] || ! echo "$msg" | grep -q "no ringnicd is running"; then
	echo "no device: exit $rc, message: $msg" >&2
	exit 1
fi
# Within with-device.sh a device runs: statuses pass through.
"$run" sh -c 'exit 7'
rc=$?
[ $rc -eq 7 ] || { echo "exit status 7 came back as $rc" >&2; exit 1; }
"$run" sh -c '[ -n "$SYSFS_PATH" ] && [ -n "$LD_PRELOAD" ]' ||
	{ echo "environment not set" >&2; exit 1; }
echo "ringnic-run ok"
