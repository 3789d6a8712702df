// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_seccomp_check: run under rn_seccomp_run, checks that the filter is in
 * place: no-new-privileges set, calls a default container may not make
 * refused with EPERM (clone3 with ENOSYS), and calls it may make still
 * working, threads included.
 *
 * rn_seccomp_check --expect-allowed: run without the launcher, as root and
 * under no seccomp filter, checks that the same refused calls are not
 * refused there, so that the first mode cannot pass on a host that would
 * refuse them anyway.  Exits 77 (skipped) where that cannot be checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEYCTL_GET_KEYRING_ID 0
#define KEY_SPEC_PROCESS_KEYRING -2

static int failures;

/* The result of a raw call: the errno, or 0 if it succeeded. */
static int result(long ret)
{
	return ret < 0 ? errno : 0;
}

static void expect(const char *what, int err, int want)
{
	if (err == want) {
		printf("ok   %-28s %s\n", what, want ? strerror(want) : "works");
		return;
	}
	printf("FAIL %-28s %s, expected %s\n", what,
	       err ? strerror(err) : "works", want ? strerror(want) : "to work");
	failures++;
}

static void expect_not(const char *what, int err, int unwanted)
{
	if (err != unwanted) {
		printf("ok   %-28s %s\n", what, err ? strerror(err) : "works");
		return;
	}
	printf("FAIL %-28s %s\n", what, strerror(err));
	failures++;
}

static int call_userfaultfd(void)
{
	long fd = syscall(SYS_userfaultfd, O_CLOEXEC);

	if (fd >= 0)
		close(fd);
	return result(fd);
}

static int call_perf_event_open(void)
{
	/* a NULL attribute: EFAULT where the call is let through */
	return result(syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0));
}

static int call_bpf(void)
{
	/* BPF_MAP_CREATE with no attribute: EINVAL where let through */
	return result(syscall(SYS_bpf, 0, NULL, 0));
}

static int call_keyctl(void)
{
	return result(syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID,
			      KEY_SPEC_PROCESS_KEYRING, 0));
}

static int call_clone3(void)
{
	/* no arguments: EINVAL where let through */
	return result(syscall(SYS_clone3, NULL, 0));
}

static int call_clone_newuts(void)
{
	long pid = syscall(SYS_clone, CLONE_NEWUTS | SIGCHLD, 0, 0, 0, 0);

	if (pid == 0)
		_exit(0);
	if (pid > 0)
		waitpid(pid, NULL, 0);
	return result(pid);
}

static void *thread_main(void *arg)
{
	return arg;
}

static int make_thread(void)
{
	pthread_t thread;
	int err;

	err = pthread_create(&thread, NULL, thread_main, NULL);
	if (!err)
		err = pthread_join(thread, NULL);
	return err;
}

static int filtered(void)
{
	int fd;

	expect("prctl(PR_GET_NO_NEW_PRIVS)",
	       prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 1 ? 0 : EINVAL, 0);
	expect("userfaultfd", call_userfaultfd(), EPERM);
	expect("unshare(CLONE_NEWUSER)", result(unshare(CLONE_NEWUSER)), EPERM);
	expect("bpf", call_bpf(), EPERM);
	expect("perf_event_open", call_perf_event_open(), EPERM);
	expect("keyctl", call_keyctl(), EPERM);
	expect("clone(CLONE_NEWUTS)", call_clone_newuts(), EPERM);
	expect("socket(AF_VSOCK)", result(socket(AF_VSOCK, SOCK_STREAM, 0)),
	       EPERM);
	expect("personality(PER_BSD)", result(personality(PER_BSD)), EPERM);
	expect("clone3", call_clone3(), ENOSYS);

	/* what a default container may do */
	expect("pthread_create", make_thread(), 0);
	fd = memfd_create("rn_seccomp_check", MFD_CLOEXEC);
	expect("memfd_create", result(fd), 0);
	if (fd >= 0)
		close(fd);
	expect("personality(query)", result(personality(0xffffffff)), 0);
	return failures ? 1 : 0;
}

static int unfiltered(void)
{
	char line[256];
	int seccomp = -1;
	FILE *status;

	if (geteuid() != 0) {
		printf("skip: --expect-allowed needs root\n");
		return 77;
	}
	status = fopen("/proc/self/status", "r");
	while (status && fgets(line, sizeof(line), status))
		sscanf(line, "Seccomp: %d", &seccomp);
	if (status)
		fclose(status);
	if (seccomp != 0) {
		printf("skip: already under seccomp (mode %d)\n", seccomp);
		return 77;
	}
	expect("prctl(PR_GET_NO_NEW_PRIVS)",
	       prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) == 0 ? 0 : EINVAL, 0);
	expect("userfaultfd", call_userfaultfd(), 0);
	expect_not("bpf", call_bpf(), EPERM);
	expect_not("perf_event_open", call_perf_event_open(), EPERM);
	expect_not("keyctl", call_keyctl(), EPERM);
	expect_not("clone3", call_clone3(), ENOSYS);
	/* last: it moves this process into a new user namespace */
	expect_not("unshare(CLONE_NEWUSER)", result(unshare(CLONE_NEWUSER)),
		   EPERM);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--expect-allowed"))
		return unfiltered();
	if (argc != 1) {
		fprintf(stderr, "usage: rn_seccomp_check [--expect-allowed]\n");
		return 2;
	}
	return filtered();
}
