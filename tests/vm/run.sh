#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# Run one command inside a throw-away qemu VM (TCG, no KVM needed) that
# boots the distribution's own kernel and uses the HOST ROOT, read-only
# over 9p, as its root. Meant for kernel-side tests (rxe, siw, ringnic.ko)
# on CI machines where loading modules into the host kernel is not wanted.
#
#   tests/vm/run.sh [options] -- CMD [ARGS...]
#
#   --kernel VER     guest kernel (default: newest /lib/modules/VER that has
#                    /boot/vmlinuz-VER)
#   --nics N         virtio-net NICs with qemu user networking (restrict=on),
#                    eth<i> = 10.0.<2+i>.15/24 inside (default 1)
#   --modprobe LIST  comma-separated modules to modprobe before CMD
#   --insmod LIST    comma-separated .ko paths to insmod after that, in order
#   --out DIR        host dir shared read-write at the same path (created)
#   --debug-kernel   boot with slub_debug (and kmemleak if the kernel has
#                    it); after CMD check kmemleak, dmesg and the taint flags
#   --mem SIZE       guest RAM (default 2G)     --smp N  vCPUs (default 2)
#   --timeout SEC    kill the VM after SEC seconds (default 600), exit 124
#
# Inside, CMD runs as root in the caller's cwd with tmpfs on /tmp, /run,
# /var/tmp and /dev/shm, so host paths under those are hidden (except
# --out). The environment is PATH, HOME=/root, TERM=dumb, RINGNIC_IN_VM=1
# and every RINGNIC_* variable of the caller. Its output appears on stdout.
#
# A guest kernel that has not started /init after RINGNIC_VM_BOOT_TIMEOUT
# seconds (default 180; it hangs while booting, rarely, under TCG) is
# killed and booted once more.
#
# Exit status: CMD's status; 124 on timeout; 125 if the VM never reported
# one (boot failure, kernel panic) or a --modprobe/--insmod failed; 99 if
# CMD succeeded but a --debug-kernel check failed.
#
# Example:
#   tests/vm/run.sh --modprobe ib_core,ib_uverbs,rdma_rxe -- \
#       sh -c 'rdma link add rxe0 type rxe netdev eth0 && ibv_devinfo'
#
# Needs root (apt-get, reading all of /). Installs linux-image-amd64,
# qemu-system-x86 and busybox-static when missing. The initramfs and the
# uncompressed kernel are cached in /tmp/ringnic-vm-cache/<kernel version>/.

set -euo pipefail

VM_DIR=$(dirname "$(readlink -f "$0")")
CACHE_ROOT=/tmp/ringnic-vm-cache
CHECKS_FAILED_RC=99

KVER=
NICS=1
MODPROBE=
INSMOD=
OUT=
DEBUG=0
MEM=2G
SMP=2
TIMEOUT=600
# Seconds the guest kernel may take to start /init before it counts as hung.
BOOT_TIMEOUT=${RINGNIC_VM_BOOT_TIMEOUT:-180}

usage() {
	sed -n '/^#   tests\/vm\/run.sh \[/,/^#   --timeout/s/^# \{0,1\}//p' "$0" >&2
	exit 2
}

msg() { echo "ringnic-vm: $*" >&2; }
die() { msg "$*"; exit 125; }

# Quote a string for any POSIX shell: 'it'\''s'.
shquote() {
	printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\''/g")"
}

parse_args() {
	while [ $# -gt 0 ]; do
		case $1 in
		--kernel) KVER=$2; shift 2 ;;
		--nics) NICS=$2; shift 2 ;;
		--modprobe) MODPROBE=$2; shift 2 ;;
		--insmod) INSMOD=$2; shift 2 ;;
		--out) OUT=$2; shift 2 ;;
		--debug-kernel) DEBUG=1; shift ;;
		--mem) MEM=$2; shift 2 ;;
		--smp) SMP=$2; shift 2 ;;
		--timeout) TIMEOUT=$2; shift 2 ;;
		--) shift; break ;;
		*) usage ;;
		esac
	done
	[ $# -gt 0 ] || usage
	CMD=("$@")
	[[ $NICS =~ ^[0-9]+$ ]] || die "--nics needs a number"
}

# CI starts from a fresh machine: install what is missing, nothing else.
install_prerequisites() {
	local need=0
	compgen -G '/boot/vmlinuz-*' >/dev/null || need=1
	command -v qemu-system-x86_64 >/dev/null || need=1
	# The initramfs has no libc, so busybox must be the static build.
	[ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1 || need=1
	[ $need = 1 ] || return 0
	msg "installing the kernel, qemu and busybox-static"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update
	apt-get install -y linux-image-amd64 linux-headers-amd64 \
		qemu-system-x86 busybox-static
}

pick_kernel() {
	if [ -z "$KVER" ]; then
		local v
		for v in $(ls /lib/modules | sort -V); do
			[ -e "/boot/vmlinuz-$v" ] && KVER=$v
		done
	fi
	[ -n "$KVER" ] || die "no kernel found in /lib/modules with /boot/vmlinuz-*"
	[ -e "/boot/vmlinuz-$KVER" ] || die "/boot/vmlinuz-$KVER missing"
	[ -d "/lib/modules/$KVER/kernel" ] || die "/lib/modules/$KVER missing"
}

# Print the modules needed to load $1, dependencies first, each once.
# Built-in ones are skipped (modinfo reports them as "(builtin)").
declare -A SEEN_MODULES
module_closure() {
	local m=$1 dep file
	[ -z "${SEEN_MODULES[$m]:-}" ] || return 0
	SEEN_MODULES[$m]=1
	file=$(modinfo -k "$KVER" -F filename "$m") ||
		die "module $m not found for kernel $KVER"
	[ "$file" != "(builtin)" ] || return 0
	for dep in $(modinfo -k "$KVER" -F depends "$m" | tr , ' '); do
		module_closure "$dep"
	done
	echo "$file"
}

# Debian's bzImage is XZ-compressed, and decompressing it under TCG takes
# ~8 s at every boot. qemu can boot the uncompressed ELF vmlinux directly
# through its PVH entry point (CONFIG_PVH), so extract it once and cache
# it; any failure falls back to the bzImage.
extract_vmlinux() {
	local img=/boot/vmlinuz-$KVER vmlinux=$CACHE_ROOT/$KVER/vmlinux
	local magic tool off
	KERNEL_IMAGE=$img
	grep -q '^CONFIG_PVH=y' "/boot/config-$KVER" 2>/dev/null || return 0
	if [ -e "$vmlinux" ] && [ "$vmlinux" -nt "$img" ]; then
		KERNEL_IMAGE=$vmlinux
		return 0
	fi
	mkdir -p "$CACHE_ROOT/$KVER"
	for magic in 'xz:\xfd7zXZ\x00' 'zstd:\x28\xb5\x2f\xfd' 'gzip:\x1f\x8b\x08'; do
		tool=${magic%%:*}
		command -v "$tool" >/dev/null || continue
		for off in $(LC_ALL=C grep -obUaP "${magic#*:}" "$img" |
			head -n 3 | cut -d: -f1); do
			tail -c "+$((off + 1))" "$img" |
				"$tool" -dc >"$vmlinux.$$" 2>/dev/null || true
			if [ "$(head -c 4 "$vmlinux.$$")" = $'\x7fELF' ]; then
				mv "$vmlinux.$$" "$vmlinux"
				KERNEL_IMAGE=$vmlinux
				return 0
			fi
		done
	done
	rm -f "$vmlinux.$$"
	msg "cannot extract vmlinux from $img; booting it compressed (slower)"
}

# Busybox, tests/vm/init and the 9p + virtio-pci modules (with their real
# dependency chain for this kernel). Cached; rebuilt when init, this
# script or the kernel changes.
build_initramfs() {
	INITRAMFS=$CACHE_ROOT/$KVER/initramfs.cpio
	if [ -e "$INITRAMFS" ] && [ "$INITRAMFS" -nt "$VM_DIR/init" ] &&
		[ "$INITRAMFS" -nt "$VM_DIR/run.sh" ] &&
		[ "$INITRAMFS" -nt "/boot/vmlinuz-$KVER" ]; then
		return 0
	fi
	msg "building initramfs for $KVER"
	local root=$WORK/initramfs ko mods
	mods=$(module_closure 9p; module_closure 9pnet_virtio;
		module_closure virtio_pci)
	mkdir -p "$root"/{bin,dev,proc,sys,newroot,modules} "$CACHE_ROOT/$KVER"
	cp /bin/busybox "$root/bin/"
	for ko in $(/bin/busybox --list); do
		[ -e "$root/bin/$ko" ] || ln -s busybox "$root/bin/$ko"
	done
	install -m 755 "$VM_DIR/init" "$root/init"
	for ko in $mods; do
		case $ko in
		*.ko) cp "$ko" "$root/modules/" ;;
		*.ko.xz) xz -dc "$ko" >"$root/modules/$(basename "$ko" .xz)" ;;
		*.ko.zst) zstd -qdc "$ko" >"$root/modules/$(basename "$ko" .zst)" ;;
		*) die "cannot handle module file $ko" ;;
		esac
		basename "${ko%.ko*}.ko" >>"$root/modules/order"
	done
	# Written to a temporary name first: parallel runs may share the cache.
	(cd "$root" && find . | /bin/busybox cpio -o -H newc 2>/dev/null) \
		>"$INITRAMFS.$$"
	mv "$INITRAMFS.$$" "$INITRAMFS"
}

# /job.conf (settings for init) and /job.sh (what runs in the host root),
# appended to the cached initramfs as a second cpio archive; the kernel
# unpacks concatenated archives in order.
build_job_initramfs() {
	local job=$WORK/job var
	mkdir -p "$job"
	{
		echo "NICS=$NICS"
		echo "DEBUG=$DEBUG"
		echo "OUT=$(shquote "$OUT")"
	} >"$job/job.conf"
	{
		echo "# generated by tests/vm/run.sh"
		echo "fail() { echo \"ringnic-vm: \$* failed\" >&2; exit 125; }"
		echo "export RINGNIC_IN_VM=1"
		for var in $(compgen -e); do
			[[ $var == RINGNIC_* ]] || continue
			echo "export $var=$(shquote "${!var}")"
		done
		for var in ${MODPROBE//,/ }; do
			echo "modprobe $(shquote "$var") || fail modprobe $(shquote "$var")"
		done
		for var in ${INSMOD//,/ }; do
			echo "insmod $(shquote "$var") || fail insmod $(shquote "$var")"
		done
		echo "cd $(shquote "$PWD") 2>/dev/null || { echo 'ringnic-vm: cwd not visible in the VM, running in /' >&2; cd /; }"
		printf 'exec'
		for var in "${CMD[@]}"; do
			printf ' %s' "$(shquote "$var")"
		done
		echo
	} >"$job/job.sh"
	(cd "$job" && printf '%s\n' job.conf job.sh |
		/bin/busybox cpio -o -H newc 2>/dev/null) >"$WORK/job.cpio"
	cat "$INITRAMFS" "$WORK/job.cpio" >"$WORK/initrd"
}

# Paths under the guest's tmpfs mounts are invisible there; fail early
# with a clear message instead of a confusing insmod error inside.
check_insmod_paths() {
	local ko list=()
	for ko in ${INSMOD//,/ }; do
		[ -e "$ko" ] || die "--insmod: $ko does not exist"
		ko=$(readlink -f "$ko")
		case $ko in
		/tmp/* | /run/* | /var/tmp/* | /dev/shm/*)
			[ -n "$OUT" ] && [[ $ko == "$OUT"/* ]] ||
				die "--insmod: $ko is hidden by a tmpfs in the VM; use --out or another dir" ;;
		esac
		list+=("$ko")
	done
	INSMOD=$(IFS=,; echo "${list[*]}")
}

kernel_cmdline() {
	local c="console=ttyS0 panic=-1"
	if [ $DEBUG = 1 ]; then
		# loglevel=5 shows warnings and oopses with their backtraces
		# live, but not the boot chatter.
		c+=" slub_debug=FZPU log_buf_len=4M loglevel=5"
		if grep -q '^CONFIG_DEBUG_KMEMLEAK=y' "/boot/config-$KVER"; then
			c+=" kmemleak=on"
		else
			msg "kernel $KVER has no CONFIG_DEBUG_KMEMLEAK; no leak check"
		fi
	else
		c+=" quiet loglevel=3"
	fi
	echo "$c"
}

run_qemu() {
	# shellcheck disable=SC2054 # the commas belong to qemu options
	local args=(
		-nodefaults -no-user-config -display none -serial stdio
		-no-reboot
		-accel tcg,thread=multi
		# TCG emulates rep movsb byte by byte; hiding ERMS/FSRM makes
		# the guest's memcpy several times faster.
		-cpu max,-erms,-fsrm
		-smp "$SMP" -m "$MEM"
		-kernel "$KERNEL_IMAGE" -initrd "$WORK/initrd"
		-append "$(kernel_cmdline)"
		# multidevs=remap: / spans several host file systems.
		-virtfs local,path=/,mount_tag=root,security_model=none,readonly=on,multidevs=remap
	)
	if [ -n "$OUT" ]; then
		args+=(-virtfs "local,path=$OUT,mount_tag=out,security_model=none,multidevs=remap")
	fi
	local i
	for ((i = 0; i < NICS; i++)); do
		args+=(-netdev "user,id=n$i,net=10.0.$((2 + i)).0/24,restrict=on"
			-device "virtio-net-pci,netdev=n$i")
	done
	local attempt
	for attempt in 1 2; do
		boot "${args[@]}"
		[ "$QEMU_RC" = boot-hang ] || return 0
		msg "the guest kernel did not start /init within $BOOT_TIMEOUT s" \
			"(attempt $attempt): VM killed"
	done
	QEMU_RC=125
}

# boot QEMU_ARGS...: one VM, its console on stdout and in console.log.
# QEMU_RC: qemu's status (timeout's), or boot-hang.  A guest kernel that
# hangs while booting (seen, rarely, under TCG) never starts /init, whose
# first line says it started: after BOOT_TIMEOUT s without it the VM is
# killed.
boot() {
	local waited=0 pipe
	rm -f "$WORK/qemu.rc"
	: >"$WORK/console.log"
	# stdin from /dev/null: qemu would otherwise put a terminal into raw
	# mode and swallow input meant for the calling script. --foreground
	# keeps qemu in our process group so that Ctrl-C reaches it. The
	# serial console's CRLF line ends are turned into plain LF.
	set +e
	{
		timeout --foreground -k 10 "$TIMEOUT" qemu-system-x86_64 "$@" </dev/null 2>&1
		echo $? >"$WORK/qemu.rc"
	} | sed -u 's/\r$//' | tee "$WORK/console.log" &
	pipe=$!
	until grep -a -q '^ringnic-vm: init: started$' "$WORK/console.log"; do
		kill -0 $pipe 2>/dev/null || break
		if [ $waited -ge "$BOOT_TIMEOUT" ]; then
			pkill -f -- "-initrd $WORK/initrd"
			wait $pipe
			QEMU_RC=boot-hang
			set -e
			return
		fi
		sleep 1
		waited=$((waited + 1))
	done
	wait $pipe
	QEMU_RC=$(cat "$WORK/qemu.rc" 2>/dev/null || echo 125)
	set -e
}

exit_status() {
	# 137: qemu ignored the TERM and timeout's -k had to KILL it.
	if [ "$QEMU_RC" = 124 ] || [ "$QEMU_RC" = 137 ]; then
		msg "timeout: VM killed after $TIMEOUT s"
		exit 124
	fi
	local rc
	rc=$(grep -a -o 'RINGNIC_VM_EXIT=[0-9]*$' "$WORK/console.log" |
		tail -n 1 | cut -d= -f2) || true
	if [ -z "$rc" ]; then
		msg "no RINGNIC_VM_EXIT marker: the VM did not finish (qemu exit $QEMU_RC)"
		exit 125
	fi
	if [ $DEBUG = 1 ] &&
		! grep -a -q '^RINGNIC_VM_CHECKS=pass$' "$WORK/console.log"; then
		msg "kernel debug checks failed (see CHECK FAILED lines above)"
		[ "$rc" != 0 ] || rc=$CHECKS_FAILED_RC
	fi
	exit "$rc"
}

main() {
	parse_args "$@"
	install_prerequisites
	pick_kernel
	if [ -n "$OUT" ]; then
		mkdir -p "$OUT"
		OUT=$(readlink -f "$OUT")
	fi
	check_insmod_paths
	WORK=$(mktemp -d /tmp/ringnic-vm.XXXXXX)
	trap 'rm -rf "$WORK"' EXIT
	extract_vmlinux
	build_initramfs
	build_job_initramfs
	run_qemu
	exit_status
}

main "$@"
