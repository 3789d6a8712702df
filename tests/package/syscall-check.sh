#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# syscall-check.sh FILTER STRACE_SUMMARY
#
# Every system call in the table of `strace -c` must be allowed by the
# systemd SystemCallFilter= value FILTER (a list of calls and @groups, no
# ~deny lists), as systemd-analyze syscall-filter defines the groups here.
set -eu
filter=$1
table=$2
declare -A allowed=()

# Calls of a group, groups inside it expanded.
expand() {
	local item
	for item in $(systemd-analyze syscall-filter "$1" |
		awk 'NR > 1 && !/^ *#/ && NF { print $1 }'); do
		case $item in
		@*) expand "$item" ;;
		*) allowed[$item]=1 ;;
		esac
	done
}
for item in $filter; do
	case $item in
	~*) echo "syscall-check: deny lists are not handled: $filter" >&2; exit 2 ;;
	@*) expand "$item" ;;
	*) allowed[$item]=1 ;;
	esac
done

# strace -c rows: % time, seconds, usecs/call, calls, [errors,] name.
used=$(awk '/^-+/ { rows = !rows; next } rows && NF >= 5 { print $NF }' "$table")
[ -n "$used" ] || { echo "syscall-check: no calls in $table" >&2; exit 1; }
bad=
for call in $used; do
	[ -n "${allowed[$call]:-}" ] || bad="$bad $call"
done
if [ -n "$bad" ]; then
	echo "syscall-check: SystemCallFilter=$filter would kill ringnicd on:$bad" >&2
	exit 1
fi
echo "syscall-check: the $(echo "$used" | wc -w) system calls ringnicd made are allowed by $filter"
