#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# unit-exec.sh [--strace] [CMD [ARGS...]]
#
# `systemctl start ringnicd`, CMD, `systemctl stop ringnicd`, where systemd
# is not PID 1 (CI), from the installed units themselves:
#  - systemd-analyze verifies them;
#  - the installed generator turns ringnicd.conf into the instances;
#  - each instance's ExecStart runs as written, with %i, %t and the
#    EnvironmentFile's variables expanded, under what of its hardening can
#    be imitated here: CapabilityBoundingSet= and NoNewPrivileges= with
#    setpriv, ProtectSystem=strict, ProtectHome=yes and PrivateTmp=yes in a
#    mount namespace; with --strace, the system calls of ringnicd are
#    checked against its SystemCallFilter=;
#  - Type=forking: ExecStart returns with the device up and its PIDFile
#    written; stopping sends SIGTERM to that PID, as systemd does, and the
#    device must remove everything it published.
# Exit status: CMD's, or 1 when the units misbehaved.  Root only.
set -eu
here=$(dirname "$(readlink -f "$0")")
fail() { echo "unit-exec: $*" >&2; exit 1; }
use_strace=
if [ "${1:-}" = --strace ]; then
	shift
	use_strace=1
fi
for unitdir in /lib/systemd/system /usr/lib/systemd/system \
	/usr/local/lib/systemd/system ""; do
	[ -e "$unitdir/ringnicd@.service" ] && break
done
[ -n "$unitdir" ] || fail "no ringnicd@.service installed"
template=$unitdir/ringnicd@.service
generator=$(dirname "$unitdir")/system-generators/ringnicd-generator
run=/run # %t of the system manager
tmp=$(mktemp -d /tmp/rn-unit.XXXXXX)
trap 'rm -rf "$tmp"' EXIT

# The value of a setting of the template (the last, as systemd reads them);
# empty when unset.
setting() { sed -n "s/^$1=//p" "$template" | tail -n 1; }

# ---- the generator: which instances ringnicd.service wants ----------------
"$generator" "$tmp/gen" "$tmp/gen.early" "$tmp/gen.late"
names=()
for link in "$tmp"/gen/ringnicd.service.wants/ringnicd@*.service; do
	[ -L "$link" ] || continue
	[ "$(readlink "$link")" = "$template" ] || fail "$link points elsewhere"
	name=${link##*/ringnicd@}
	names+=("${name%.service}")
done
[ ${#names[@]} -gt 0 ] || fail "the generator wants no ringnicd@ instance"
echo "unit-exec: ringnicd.service wants: ${names[*]}"

units=("$unitdir/ringnicd.service")
for name in "${names[@]}"; do
	units+=("$unitdir/ringnicd@$name.service")
done
systemd-analyze verify "${units[@]}" || fail "systemd-analyze verify failed"

# ---- ExecStart, as systemd would run it -------------------------------------
[ "$(setting Type)" = forking ] || fail "expected Type=forking"
declare -A env=()
envfile=$(setting EnvironmentFile)
envfile=${envfile#-}
if [ -n "$envfile" ] && [ -r "$envfile" ]; then
	while IFS= read -r line; do
		[[ $line =~ ^([A-Za-z_][A-Za-z0-9_]*)=(.*)$ ]] || continue
		value=${BASH_REMATCH[2]}
		value=${value#[\"\']}
		env[${BASH_REMATCH[1]}]=${value%[\"\']}
	done <"$envfile"
fi

# The specifiers the unit uses; anything else would be imitated wrongly.
specifiers() {
	local s=${2//%i/$1}
	s=${s//%t/$run}
	case $s in *%*) fail "unsupported specifier in: $2" ;; esac
	echo "$s"
}

# Setting $2 (a command line) of instance $1 as words in $words, its
# prefixes in $prefixes.  $VAR alone splits into words, as in systemd;
# quotes and ${VAR} are not imitated, so refused.
command_line() {
	local line w vals
	line=$(specifiers "$1" "$(setting "$2")")
	prefixes=${line%%[!-+@:!]*}
	line=${line#"$prefixes"}
	case $line in *[\"\'\\]* | *'${'*) fail "cannot imitate $2=$line" ;; esac
	words=()
	for w in $line; do
		if [[ $w =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			read -ra vals <<<"${env[${BASH_REMATCH[1]}]:-}"
			words+=("${vals[@]}")
		elif [[ $w == *'$'* ]]; then
			fail "cannot imitate the word $w"
		else
			words+=("$w")
		fi
	done
}

# setpriv's arguments for CapabilityBoundingSet= and NoNewPrivileges=.
privileges() {
	local caps cap arg=-all
	caps=$(setting CapabilityBoundingSet)
	[ -n "$caps" ] || fail "no CapabilityBoundingSet="
	for cap in $caps; do
		cap=${cap#CAP_}
		arg+=,+${cap,,}
	done
	echo "--bounding-set=$arg"
	echo "--inh-caps=-all"
	if [ "$(setting NoNewPrivileges)" = yes ]; then
		echo "--no-new-privs"
	fi
}

# The mount namespace of ProtectSystem=strict, ProtectHome=yes and
# PrivateTmp=yes, with the runtime dir writable; runs "$@" in it.
namespace_script='
set -e
rundir=$1; shift
mount --bind "$rundir" "$rundir"
findmnt -rno TARGET | sort -u | while read -r mp; do
	case $mp in /dev|/dev/*|/proc|/proc/*|/sys|/sys/*|"$rundir") continue ;; esac
	mount -o remount,bind,ro "$mp"
done
for d in /home /root /run/user; do
	[ -d "$d" ] && mount -t tmpfs -o ro,mode=000 tmpfs "$d"
done
mount -t tmpfs tmpfs /tmp
mount -t tmpfs tmpfs /var/tmp
exec "$@"'
[ "$(setting ProtectSystem)" = strict ] && [ "$(setting ProtectHome)" = yes ] &&
	[ "$(setting PrivateTmp)" = yes ] ||
	fail "the namespace imitated here is not the unit's any more"

rundir=$run/$(setting RuntimeDirectory)
[ "$(setting RuntimeDirectoryPreserve)" = yes ] ||
	fail "expected RuntimeDirectoryPreserve=yes (instances share the dir)"
mkdir -p -m 0755 "$rundir"
priv=$(privileges)
mapfile -t priv <<<"$priv"
started=()
stop_all() {
	local name pid
	for name in "${started[@]}"; do
		pid=$(cat "$(specifiers "$name" "$(setting PIDFile)")" 2>/dev/null) ||
			continue
		kill -TERM "$pid"
		for _ in $(seq 200); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.05
		done
		if kill -0 "$pid" 2>/dev/null; then
			kill -KILL "$pid"
			fail "ringnicd@$name ignored SIGTERM"
		fi
		stop_post "$name"
	done
}

# ExecStopPost=, if any: '+' (outside the sandbox) is how it runs here
# anyway, '-' lets it fail.
stop_post() {
	[ -n "$(setting ExecStopPost)" ] || return 0
	command_line "$1" ExecStopPost
	case $prefixes in
	"" | - | + | -+ | +-) ;;
	*) fail "ExecStopPost= with prefixes $prefixes" ;;
	esac
	"${words[@]}" || [[ $prefixes == *-* ]] || fail "ExecStopPost of ringnicd@$1 failed"
}
trap 'stop_all; rm -rf "$tmp" ${traces:+"$traces"}' EXIT

# strace writes where the namespace still shares the host's files: /dev/shm.
tracer=()
traces=
if [ -n "$use_strace" ]; then
	traces=$(mktemp -d /dev/shm/rn-strace.XXXXXX)
fi
for name in "${names[@]}"; do
	if [ -n "$use_strace" ]; then
		tracer=(strace -D -f -c -o "$traces/$name")
	fi
	command_line "$name" ExecStart
	[ -z "$prefixes" ] || fail "ExecStart= with prefixes $prefixes"
	echo "unit-exec: ringnicd@$name: ${words[*]}"
	unshare -m -- bash -c "$namespace_script" ns "$rundir" \
		setpriv "${priv[@]}" -- "${tracer[@]}" "${words[@]}" ||
		fail "ExecStart of ringnicd@$name failed"
	started+=("$name")
	pidfile=$(specifiers "$name" "$(setting PIDFile)")
	kill -0 "$(cat "$pidfile")" || fail "no live PID in $pidfile"
done

# ---- the devices in use -----------------------------------------------------
nodes=$(cd "$rundir/sys/class/infiniband_verbs" && ls -d ringnic_*)
rc=0
"$@" || rc=$?

stop_all
started=()
for node in $nodes; do
	if [ -e "/dev/infiniband/$node" ]; then
		fail "/dev/infiniband/$node left behind"
	fi
done
if [ -e "$rundir" ]; then
	fail "$rundir left behind: $(ls -A "$rundir")"
fi

# ---- the system calls against SystemCallFilter= ------------------------------
# (strace writes its table when the traced ringnicd has exited)
for name in ${use_strace:+"${names[@]}"}; do
	for _ in $(seq 100); do
		grep -q ' total$' "$traces/$name" 2>/dev/null && break
		sleep 0.1
	done
	"$here/syscall-check.sh" "$(setting SystemCallFilter)" \
		"$traces/$name" || rc=1
done
exit $rc
