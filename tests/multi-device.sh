#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# multi-device.sh BUILD_DIR: two devices in one runtime dir are both
# visible; a second ringnicd with a taken name is refused, one that meets
# ringnic-run's probe of its lock is not; stopping one
# device leaves the other working; the last one out removes the tree.
set -u
export PATH="$1/bin:$PATH"
export RINGNIC_RUNTIME_DIR
RINGNIC_RUNTIME_DIR=$(mktemp -d /tmp/rn.XXXXXX)
dir=$RINGNIC_RUNTIME_DIR
fail() { echo "multi-device: $*" >&2; exit 1; }
stop() { kill -TERM "$(cat "$dir/$1.pid")" && while [ -e "$dir/$1.pid" ]; do sleep 0.05; done; }

ringnicd --name rna --netdev lo || fail "rna did not start"
ringnicd --name rnb --netdev lo || fail "rnb did not start"
# In the foreground, so that its own exit status is seen: a refusal, not
# a crash.
out=$(ringnicd --name rna --netdev lo --foreground 2>&1)
rc=$?
[ $rc -eq 1 ] && grep -q "rna is already running" <<<"$out" ||
	fail "a second rna: exit $rc, said: $out"
# ringnic-run tells a live device by trying its lock (flock -n): a
# ringnicd that starts during such a probe still comes up.
touch "$dir/rnc.lock"
flock "$dir/rnc.lock" sleep 0.2 &
sleep 0.05
ringnicd --name rnc --netdev lo || fail "rnc did not start past a probe of its lock"
wait $!
stop rnc
list=$(ringnic-run ibv_devices)
echo "$list" | grep -q rna && echo "$list" | grep -q rnb || fail "not both listed: $list"
ringnic-run ibv_devinfo -d rnb | grep -q PORT_ACTIVE || fail "rnb not usable"

stop rna
list=$(ringnic-run ibv_devices)
echo "$list" | grep -q rna && fail "rna still listed after SIGTERM"
ringnic-run ibv_devinfo -d rnb | grep -q PORT_ACTIVE || fail "rnb broken by rna's exit"
stop rnb
[ -e "$dir" ] && fail "left behind: $(find "$dir")"
echo "multi-device ok"
