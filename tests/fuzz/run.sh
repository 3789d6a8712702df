#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# run.sh FUZZER SEEDS SECONDS: run a libFuzzer target from the committed
# seeds for a bounded time; new inputs go to a scratch dir, a crash fails.
set -eu
work=$(mktemp -d /tmp/rn-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
"$1" -max_total_time="$3" -print_final_stats=1 -artifact_prefix="$work/" \
	"$work" "$2" 2>&1 | grep -E "^#|^fuzz_|ERROR|SUMMARY|stat::number_of_executed_units" |
	tail -5
exit "${PIPESTATUS[0]}"
