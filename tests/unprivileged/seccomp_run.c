// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_seccomp_run CMD [ARGS...]: runs CMD under the system call policy of a
 * Docker container started with Docker's default seccomp profile, no added
 * capabilities and no-new-privileges, so that the tests can show ringnicd
 * and unmodified RDMA tools working where a container's policy applies.
 *
 * The lists below follow Docker's default profile (moby/profiles,
 * seccomp/default.json; the same file as moby's profiles/seccomp/default.json).
 * That profile allows a list of calls and refuses the rest with EPERM; here
 * the filter does the reverse, allowing by default and refusing with EPERM:
 * - the calls the profile does not allow at all;
 * - the calls it allows only with a capability that a default container
 *   lacks (CAP_SYS_ADMIN, CAP_SYS_MODULE, CAP_SYS_PTRACE, CAP_SYS_TIME,
 *   CAP_SYS_NICE, CAP_BPF, ...; chroot stays, CAP_SYS_CHROOT is a default);
 * - the calls it allows only for some arguments: clone with a namespace
 *   flag, socket for AF_ALG and AF_VSOCK, personality other than the
 *   handful of personas it lists.
 * clone3 fails with ENOSYS as in the profile, so that the C library falls
 * back to clone, whose flags the filter can see.
 *
 * Names that libseccomp does not know, or that this architecture lacks, are
 * skipped.  The filter covers the native architecture only: libseccomp
 * kills a process that makes a system call of another ABI (32-bit x86 on
 * x86_64), where Docker applies the same lists to it.
 */
#include <errno.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

/* Not allowed by the profile at all. */
static const char *const refused[] = {
	"_sysctl", "add_key", "afs_syscall", "create_module", "file_getattr",
	"file_setattr", "get_kernel_syms", "getpmsg", "io_uring_enter",
	"io_uring_register", "io_uring_setup", "kexec_file_load", "kexec_load",
	"keyctl", "migrate_pages", "move_pages", "nfsservctl", "open_tree_attr",
	"pivot_root", "putpmsg", "query_module", "request_key", "security",
	"swapoff", "swapon", "sysfs", "tuxcall", "uselib", "userfaultfd",
	"ustat", "vm86", "vm86old", "vserver",
};

/* Allowed by the profile only with a capability a default container lacks. */
static const char *const need_cap[] = {
	/* CAP_SYS_ADMIN */
	"bpf", "fanotify_init", "fsconfig", "fsmount", "fsopen", "fspick",
	"lookup_dcookie", "lsm_get_self_attr", "lsm_list_modules",
	"lsm_set_self_attr", "mount", "mount_setattr", "move_mount",
	"open_tree", "perf_event_open", "quotactl", "quotactl_fd",
	"setdomainname", "sethostname", "setns", "syslog", "umount", "umount2",
	"unshare",
	/* CAP_SYS_BOOT, CAP_SYS_MODULE, CAP_SYS_PACCT */
	"reboot", "delete_module", "finit_module", "init_module", "acct",
	/* CAP_SYS_PTRACE (ptrace and process_vm_* are allowed without it) */
	"kcmp", "pidfd_getfd", "process_madvise",
	/* CAP_SYS_RAWIO, CAP_SYS_TIME, CAP_SYS_TTY_CONFIG */
	"ioperm", "iopl", "clock_settime", "clock_settime64", "settimeofday",
	"stime", "vhangup",
	/* CAP_SYS_NICE */
	"get_mempolicy", "mbind", "set_mempolicy", "set_mempolicy_home_node",
	/* CAP_DAC_READ_SEARCH */
	"open_by_handle_at",
};

/* The namespace flags that clone may not carry. */
static const unsigned long clone_ns[] = {
	CLONE_NEWNS, CLONE_NEWCGROUP, CLONE_NEWUTS, CLONE_NEWIPC,
	CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
};

#ifdef __s390__
#define CLONE_FLAGS_ARG 1 /* s390 swaps clone's first two arguments */
#else
#define CLONE_FLAGS_ARG 0
#endif

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

static int refuse_names(scmp_filter_ctx ctx, const char *const *names,
			size_t n)
{
	size_t i;
	int nr, err;

	for (i = 0; i < n; i++) {
		nr = seccomp_syscall_resolve_name(names[i]);
		/* unknown to libseccomp, or absent on this architecture */
		if (nr == __NR_SCMP_ERROR || nr < 0)
			continue;
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
		if (err) {
			fprintf(stderr, "rn_seccomp_run: rule for %s: %s\n",
				names[i], strerror(-err));
			return err;
		}
	}
	return 0;
}

/*
 * personality: the profile allows 0, UNAME26 (8), PER_LINUX32 (0x20000), both
 * (0x20008) and the query 0xffffffff.  libseccomp takes one comparison per
 * argument in a rule, so the rest is refused as: bit 31 clear and a bit
 * other than 3 and 17 set; bit 31 set and a lower bit clear; above 32 bits.
 */
static int refuse_personality(scmp_filter_ctx ctx)
{
	const scmp_datum_t top = 1ULL << 31;
	scmp_datum_t bit;
	int i, err;

	for (i = 0; i < 31; i++) {
		bit = 1ULL << i;
		if (bit != 0x8 && bit != 0x20000) {
			err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
					       SCMP_SYS(personality), 1,
					       SCMP_A0(SCMP_CMP_MASKED_EQ,
						       top | bit, bit));
			if (err)
				return err;
		}
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
				       SCMP_SYS(personality), 1,
				       SCMP_A0(SCMP_CMP_MASKED_EQ, top | bit, top));
		if (err)
			return err;
	}
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(personality),
				1, SCMP_A0(SCMP_CMP_GT, 0xffffffffULL, 0));
}

static int refuse_args(scmp_filter_ctx ctx)
{
	size_t i;
	int err;

	for (i = 0; i < ARRAY_SIZE(clone_ns); i++) {
		err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(clone),
				       1, SCMP_CMP(CLONE_FLAGS_ARG,
						   SCMP_CMP_MASKED_EQ,
						   clone_ns[i], clone_ns[i]));
		if (err)
			return err;
	}
	err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0);
	if (err)
		return err;
	err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
			       SCMP_A0(SCMP_CMP_EQ, AF_ALG, 0));
	if (err)
		return err;
	err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(socket), 1,
			       SCMP_A0(SCMP_CMP_EQ, AF_VSOCK, 0));
	if (err)
		return err;
	return refuse_personality(ctx);
}

static int load_filter(void)
{
	scmp_filter_ctx ctx;
	int err;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx) {
		fprintf(stderr, "rn_seccomp_run: seccomp_init failed\n");
		return -1;
	}
	err = refuse_names(ctx, refused, ARRAY_SIZE(refused));
	if (!err)
		err = refuse_names(ctx, need_cap, ARRAY_SIZE(need_cap));
	if (!err) {
		err = refuse_args(ctx);
		if (err)
			fprintf(stderr, "rn_seccomp_run: argument rules: %s\n",
				strerror(-err));
	}
	if (!err) {
		err = seccomp_load(ctx);
		if (err)
			fprintf(stderr, "rn_seccomp_run: seccomp_load: %s\n",
				strerror(-err));
	}
	seccomp_release(ctx);
	return err;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: rn_seccomp_run CMD [ARGS...]\n");
		return 1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		perror("rn_seccomp_run: PR_SET_NO_NEW_PRIVS");
		return 1;
	}
	if (load_filter())
		return 1;
	execvp(argv[1], argv + 1);
	fprintf(stderr, "rn_seccomp_run: cannot run %s: %s\n", argv[1],
		strerror(errno));
	return 127;
}
