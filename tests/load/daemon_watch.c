// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What ringnicd holds, seen from outside through /proc: resident memory,
 * open descriptors, and mappings of client rings (ringnicd maps every QP's
 * and CQ's memfd, named "ringnic", and each client's device page), plus
 * the files it publishes in its runtime dir.
 */
#include <dirent.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "load.h"

/* ringnicd's descriptors; with "print", each with what it refers to. */
static unsigned int count_fds(pid_t pid, bool print)
{
	char path[64], target[512];
	struct dirent *e;
	unsigned int n = 0;
	ssize_t len;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		n++;
		if (!print)
			continue;
		len = readlinkat(dirfd(d), e->d_name, target, sizeof(target) - 1);
		target[len < 0 ? 0 : len] = 0;
		printf("load:   fd %s -> %s\n", e->d_name, target);
	}
	closedir(d);
	return n;
}

void daemon_print_fds(pid_t pid)
{
	count_fds(pid, true);
}

static unsigned int tree_entries;

/*
 * Every entry but a file being rewritten: ringnicd replaces a counter's
 * file by renaming NAME.tmp over it, and the counters move whenever a
 * client fails (a dead peer's timeouts), so one may be caught in flight.
 */
static int count_entry(const char *path, const struct stat *st, int flag,
		       struct FTW *ftw)
{
	size_t len = strlen(path);

	(void)st;
	(void)flag;
	(void)ftw;
	if (len < 4 || strcmp(path + len - 4, ".tmp"))
		tree_entries++;
	return 0;
}

int daemon_sample(pid_t pid, const char *runtime_dir, struct daemon_sample *s)
{
	char path[64], line[512];
	FILE *f;

	*s = (struct daemon_sample){ 0 };
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %" SCNu64 " kB", &s->rss_kib) == 1)
			break;
	fclose(f);

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "/memfd:ringnic"))
			s->ring_maps++;
	fclose(f);

	s->fds = count_fds(pid, false);

	tree_entries = 0;
	if (nftw(runtime_dir, count_entry, 16, FTW_PHYS))
		return -1;
	s->runtime_entries = tree_entries;
	return s->rss_kib && s->fds ? 0 : -1;
}

void daemon_peak(struct daemon_sample *peak, const struct daemon_sample *s)
{
	if (s->rss_kib > peak->rss_kib)
		peak->rss_kib = s->rss_kib;
	if (s->fds > peak->fds)
		peak->fds = s->fds;
	if (s->ring_maps > peak->ring_maps)
		peak->ring_maps = s->ring_maps;
	if (s->runtime_entries > peak->runtime_entries)
		peak->runtime_entries = s->runtime_entries;
}
