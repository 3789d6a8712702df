// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_bench_ref: the ceilings ringnic is measured against, on this machine,
 * now: single-thread memcpy (cache-resident and DRAM-sized), and writes
 * into another process (64 KiB chunks, and 64-byte writes, the cost of one
 * cross-process copy call) through its /proc/PID/mem, as ringnicd writes,
 * and with process_vm_writev.  Prints "name value unit" lines.
 */
#include <fcntl.h>
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

int main(void)
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
	return 0;
}
