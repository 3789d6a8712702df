// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ringnic-fault: set the fault rules of a QP of a ringnic device, any
 * process's of the caller's user, as ringnicdv_set_qp_faults(3) sets them
 * for the caller's own (the RN_CTL_FAULTS message of
 * kernel-abi/ringnic-ctl.h, on a connection of its own).  See
 * ringnic-fault(1).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel-abi/ringnic-ctl.h"
#include "tools/device.h"

static const char *const kinds[] = {
	[RN_FAULT_DROP] = "drop",
	[RN_FAULT_DUPLICATE] = "duplicate",
	[RN_FAULT_DELAY] = "delay",
	[RN_FAULT_REORDER] = "reorder",
	[RN_FAULT_CORRUPT_ICRC] = "corrupt-icrc",
	[RN_FAULT_MARK_CE] = "mark-ce",
	[RN_FAULT_RNR] = "rnr",
	[RN_FAULT_NAK] = "nak",
	[RN_FAULT_WR_ERROR] = "wr-error",
};

/* The NAK classes, by their AETH codes. */
static const char *const naks[] = {
	"psn-sequence", "invalid-request", "remote-access", "remote-operation",
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringnic-fault [--runtime-dir DIR] [-d DEVICE] [-s SEED] QPN [RULE...]\n"
		"  RULE  KIND[,nth=N|,share=PERCENT][,count=C][,value=V]\n"
		"  KIND  drop duplicate delay reorder corrupt-icrc mark-ce (packets sent)\n"
		"        rnr nak (requests received)  wr-error (send WRs)\n"
		"  value delay: microseconds; nak: psn-sequence invalid-request\n"
		"        remote-access remote-operation; wr-error: an ibv_wc_status\n"
		"  No rule clears the QP's rules.\n");
}

static int lookup(const char *const *names, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (names[i] && !strcmp(names[i], s))
			return (int)i;
	return -1;
}

/* One KEY=VALUE of a rule. */
static int parse_field(struct rn_fault_rule *r, char *field)
{
	char *eq = strchr(field, '='), *end;
	int nak;
	double share;

	if (!eq)
		return -1;
	*eq++ = '\0';
	if (!strcmp(field, "nth"))
		return rn_tool_parse_u32(eq, UINT32_MAX, &r->nth) || !r->nth ?
			       -1 : 0;
	if (!strcmp(field, "count"))
		return rn_tool_parse_u32(eq, UINT32_MAX, &r->count);
	if (!strcmp(field, "share")) {
		errno = 0;
		share = strtod(eq, &end);
		if (errno || end == eq || (*end && strcmp(end, "%")) ||
		    !(share > 0 && share <= 100))
			return -1;
		r->share = (uint32_t)lround(share * 10000);
		return r->share ? 0 : -1;
	}
	if (!strcmp(field, "value")) {
		nak = lookup(naks, sizeof(naks) / sizeof(naks[0]), eq);
		if (r->kind == RN_FAULT_NAK && nak >= 0) {
			r->value = (uint32_t)nak;
			return 0;
		}
		return rn_tool_parse_u32(eq, UINT32_MAX, &r->value);
	}
	return -1;
}

static int parse_rule(struct rn_fault_rule *r, const char *text)
{
	char *copy = strdup(text), *field, *save = NULL;
	int kind, ret = 0;

	if (!copy)
		return -1;
	field = strtok_r(copy, ",", &save);
	kind = field ? lookup(kinds, sizeof(kinds) / sizeof(kinds[0]), field) :
		       -1;
	if (kind < 0) {
		free(copy);
		return -1;
	}
	*r = (struct rn_fault_rule){ .kind = (uint32_t)kind };
	while (!ret && (field = strtok_r(NULL, ",", &save)))
		ret = parse_field(r, field);
	free(copy);
	if (ret || (r->nth && r->share))
		return -1;
	if (!r->nth && !r->share)
		r->nth = 1; /* the next event */
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct rn_ctl_faults_req req = { .hdr = { RN_CTL_FAULTS, sizeof(req) } };
	const char *dir = NULL, *device = "ringnic0";
	char dirbuf[PATH_MAX], *end;
	int opt, fd, status, i;

	while ((opt = getopt_long(argc, argv, "d:s:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r': dir = optarg; break;
		case 'd': device = optarg; break;
		case 's':
			errno = 0;
			req.seed = strtoull(optarg, &end, 0);
			if (errno || end == optarg || *end) {
				fprintf(stderr, "ringnic-fault: bad seed %s\n",
					optarg);
				return 2;
			}
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc ||
	    rn_tool_parse_u32(argv[optind], 0xffffff, &req.qpn)) {
		usage(stderr);
		return 2;
	}
	if (argc - optind - 1 > RN_FAULTS_MAX) {
		fprintf(stderr, "ringnic-fault: at most %d rules\n",
			RN_FAULTS_MAX);
		return 2;
	}
	for (i = optind + 1; i < argc; i++)
		if (parse_rule(&req.rules[req.nrules++], argv[i])) {
			fprintf(stderr, "ringnic-fault: bad rule %s\n", argv[i]);
			return 2;
		}
	if (!dir)
		dir = rn_tool_runtime_dir(dirbuf, sizeof(dirbuf));
	fd = rn_tool_ask("ringnic-fault", dir, device, &req, sizeof(req),
			 &status);
	if (fd < 0)
		return 1;
	close(fd);
	if (status) {
		fprintf(stderr, "ringnic-fault: %s: QP %#x: %s\n", device,
			req.qpn,
			status == EINVAL ? "no such QP of yours, or a rule it refuses" :
					   strerror(status));
		return 1;
	}
	printf("ringnic-fault: %s: QP %#x: %u rule%s set\n", device, req.qpn,
	       req.nrules, req.nrules == 1 ? "" : "s");
	return 0;
}
