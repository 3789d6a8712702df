// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_bench_ref [copy|wake]: the ceilings and floors ringnic is measured
 * against, on this machine, now.  copy: single-thread memcpy
 * (cache-resident and DRAM-sized), and writes into another process (64 KiB
 * chunks, and 64-byte writes, the cost of one cross-process copy call)
 * through its /proc/PID/mem, as ringnicd writes, and with
 * process_vm_writev.  wake: what one process waking another costs (half
 * the median round trip of a one-byte pipe ping-pong between two
 * SCHED_FIFO processes, as ringnicd runs): both on one CPU, on two idle
 * CPUs, and on two CPUs that each run a busy-polling process (as perftest
 * polls), which is the wake-up every hop between two devices on this
 * machine waits for.  Both by default.  Prints "name value unit" lines.
 */
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define RUN_NS 500000000ull /* each measurement runs about 0.5 s */
#define WAKE_ROUND_TRIPS 1000
#define WAKE_RUN_NS 3000000000ull /* or fewer, when a wake-up takes a tick */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void *buffer(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		exit(1);
	}
	memset(p, 0x5a, len);
	return p;
}

/* Bytes per second of memcpy of 'len' bytes, buffer to buffer. */
static double memcpy_rate(size_t len)
{
	uint8_t *src = buffer(len), *dst = buffer(len);
	uint64_t start = now_ns(), t, bytes = 0;

	do {
		memcpy(dst, src, len);
		/* Keep the copy from being optimized away. */
		__asm__ volatile("" : : "r"(dst) : "memory");
		bytes += len;
	} while ((t = now_ns()) - start < RUN_NS);
	munmap(src, len);
	munmap(dst, len);
	return bytes * 1e9 / (t - start);
}

/*
 * Writes per second of 'chunk' bytes into a child's buffer of 'span',
 * through the child's /proc/PID/mem (mem) or with process_vm_writev.
 */
static double write_rate(bool mem, size_t chunk, size_t span,
			 double *bytes_per_s)
{
	uint8_t *src = buffer(chunk), *dst = buffer(span);
	uint64_t start, t, n = 0;
	size_t off = 0;
	char path[32];
	pid_t child;
	int fd = -1;

	child = fork();
	if (child == 0) {
		pause();
		_exit(0);
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
	if (mem && (fd = open(path, O_RDWR | O_CLOEXEC)) < 0) {
		perror(path);
		exit(1);
	}
	start = now_ns();
	do {
		struct iovec local = { src, chunk };
		struct iovec remote = { dst + off, chunk };
		ssize_t done = mem ? pwrite(fd, src, chunk,
					    (off_t)(uintptr_t)(dst + off)) :
				     process_vm_writev(child, &local, 1,
						       &remote, 1, 0);

		if (done != (ssize_t)chunk) {
			perror(mem ? "pwrite" : "process_vm_writev");
			exit(1);
		}
		off = off + 2 * chunk <= span ? off + chunk : 0;
		n++;
	} while ((t = now_ns()) - start < RUN_NS);
	if (fd >= 0)
		close(fd);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	munmap(src, chunk);
	munmap(dst, span);
	*bytes_per_s = (double)n * chunk * 1e9 / (t - start);
	return n * 1e9 / (t - start);
}

static void pin_to(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set)) {
		perror("sched_setaffinity");
		exit(1);
	}
}

/* A process that only spins on 'cpu', as a busy-polling application. */
static pid_t spinner(int cpu)
{
	pid_t pid = fork();

	if (pid == 0) {
		pin_to(cpu);
		for (;;)
			__asm__ volatile("" ::: "memory");
	}
	return pid;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Microseconds of one wake-up: half the median round trip of a pipe
 * ping-pong between a SCHED_FIFO process on cpu_a and one on cpu_b
 * (plain scheduling where realtime priority is refused), with a
 * busy-polling process on each of those CPUs if 'busy'.
 */
static double wake_us(int cpu_a, int cpu_b, bool busy)
{
	struct sched_param rt = { .sched_priority = 1 };
	uint64_t rtt[WAKE_ROUND_TRIPS], start = now_ns();
	int there[2], back[2], n = 0;
	pid_t echo, spin[2] = { -1, -1 };
	char byte = 0;

	/* Spinners first: they must hold no end of the pipes. */
	if (busy) {
		spin[0] = spinner(cpu_a);
		spin[1] = cpu_b == cpu_a ? -1 : spinner(cpu_b);
	}
	if (pipe(there) || pipe(back)) {
		perror("pipe");
		exit(1);
	}
	echo = fork();
	if (echo == 0) {
		pin_to(cpu_b);
		sched_setscheduler(0, SCHED_FIFO, &rt);
		close(there[1]);
		while (read(there[0], &byte, 1) == 1)
			if (write(back[1], &byte, 1) != 1)
				break;
		_exit(0);
	}
	close(there[0]);
	close(back[1]);
	pin_to(cpu_a);
	sched_setscheduler(0, SCHED_FIFO, &rt);
	while (n < WAKE_ROUND_TRIPS && now_ns() - start < WAKE_RUN_NS) {
		uint64_t t0 = now_ns();

		if (write(there[1], &byte, 1) != 1 ||
		    read(back[0], &byte, 1) != 1) {
			perror("wake: pipe");
			exit(1);
		}
		rtt[n++] = now_ns() - t0;
	}
	/* Back to plain scheduling before the spinners are reaped. */
	rt.sched_priority = 0;
	sched_setscheduler(0, SCHED_OTHER, &rt);
	close(there[1]);
	close(back[0]);
	waitpid(echo, NULL, 0);
	for (int i = 0; i < 2; i++) {
		if (spin[i] > 0) {
			kill(spin[i], SIGKILL);
			waitpid(spin[i], NULL, 0);
		}
	}
	qsort(rtt, n, sizeof(rtt[0]), cmp_u64);
	return rtt[n / 2] / 2e3;
}

static void copy_refs(void)
{
	double bps;

	printf("memcpy_64KiB %.2f GB/s\n", memcpy_rate(64 << 10) / 1e9);
	printf("memcpy_256MiB %.2f GB/s\n", memcpy_rate(256 << 20) / 1e9);
	/* Into a small hot buffer, as ib_write_bw writes, and a large one. */
	write_rate(true, 64 << 10, 128 << 10, &bps);
	printf("proc_mem_write_64KiB %.2f GB/s\n", bps / 1e9);
	write_rate(true, 64 << 10, 256 << 20, &bps);
	printf("proc_mem_write_64KiB_dram %.2f GB/s\n", bps / 1e9);
	printf("proc_mem_write_64B %.2f Mops/s\n",
	       write_rate(true, 64, 128 << 10, &bps) / 1e6);
	write_rate(false, 64 << 10, 128 << 10, &bps);
	printf("process_vm_writev_64KiB %.2f GB/s\n", bps / 1e9);
	printf("process_vm_writev_64B %.2f Mops/s\n",
	       write_rate(false, 64, 128 << 10, &bps) / 1e6);
}

static void wake_refs(void)
{
	cpu_set_t allowed;
	int cpu[2], n = 0;

	/* The first two CPUs this process may run on. */
	if (sched_getaffinity(0, sizeof(allowed), &allowed)) {
		perror("sched_getaffinity");
		exit(1);
	}
	for (int i = 0; i < CPU_SETSIZE && n < 2; i++)
		if (CPU_ISSET(i, &allowed))
			cpu[n++] = i;
	printf("wake_same_cpu %.2f us\n", wake_us(cpu[0], cpu[0], false));
	if (n < 2)
		return;
	printf("wake_cross_cpu_idle %.2f us\n", wake_us(cpu[0], cpu[1], false));
	printf("wake_cross_cpu_busy %.2f us\n", wake_us(cpu[0], cpu[1], true));
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (argc > 2 || (*what && strcmp(what, "copy") && strcmp(what, "wake"))) {
		fprintf(stderr, "usage: rn_bench_ref [copy|wake]\n");
		return 2;
	}
	if (strcmp(what, "wake"))
		copy_refs();
	if (strcmp(what, "copy"))
		wake_refs();
	return 0;
}
