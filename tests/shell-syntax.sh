#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shell-syntax.sh SRC: every shell script of the tree parses.  Scripts that
# only run inside the VM or a chroot (tests/vm, scripts/distro-test) are
# otherwise first read by the stage that runs them, late in CI.
set -u
src=$1
failed=0
while IFS= read -r -d '' f; do
	case $(head -n 1 "$f") in
	'#!/bin/sh'*) dash -n "$f" || failed=1 ;;
	'#!'*bash*) bash -n "$f" || failed=1 ;;
	'#!'*) ;;
	*) [[ $f != *.sh ]] || bash -n "$f" || failed=1 ;; # sourced by bash
	esac
done < <(find "$src" \( -name 'build*' -o -name .git \) -prune -o \
	-type f \( -name '*.sh' -o -perm -u+x \) -print0)
exit $failed
