// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ringnic-dump: the packets a ringnic device sends and receives, as a pcap
 * file (LINKTYPE_RAW: IPv4 or IPv6, then UDP to port 4791, which Wireshark
 * and tshark decode as RoCEv2 with no configuration), or one line each.
 * ringnicd does the capturing (device/engine/capture.c); this program asks
 * for it on the device's control socket (kernel-abi/ringnic-ctl.h) and
 * writes what comes with libpcap.  See ringnic-dump(1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "kernel-abi/ringnic-ctl.h"
#include "tools/device.h"

#define SNAPLEN_MAX 65535u

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
	(void)sig;
	stopping = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: ringnic-dump [--runtime-dir DIR] [-d DEVICE] [-w FILE] [-c COUNT]\n"
		"                    [-s SNAPLEN] [-q QPN] [-p PID] [-U]\n"
		"  -d DEVICE  the device (default ringnic0)\n"
		"  -w FILE    write a pcap file (- for standard output), not lines\n"
		"  -c COUNT   stop after COUNT packets\n"
		"  -s SNAPLEN keep SNAPLEN bytes of each packet (0: all, the default)\n"
		"  -q QPN     only packets to or from our QP QPN (decimal or 0x...)\n"
		"  -p PID     only packets of the QPs that process PID created\n"
		"  -U         write each packet out as it comes (with -w)\n");
}

/* Connect to DEVICE's control socket and start the capture; -1 on error. */
static int start_capture(const char *dir, const char *device, uint32_t qpn,
			 uint32_t pid, uint32_t snaplen)
{
	struct rn_ctl_capture_req req = {
		.hdr = { RN_CTL_CAPTURE, sizeof(req) },
		.qpn = qpn,
		.snaplen = snaplen,
		.pid = pid,
	};
	int fd, status;

	fd = rn_tool_ask("ringnic-dump", dir, device, &req, sizeof(req),
			 &status);
	if (fd >= 0 && status) {
		fprintf(stderr, "ringnic-dump: %s: capture refused: %s\n",
			device, strerror(status));
		close(fd);
		return -1;
	}
	return fd;
}

/* One line: time, direction, addresses, then the BTH's opcode, QPN, PSN. */
static void print_line(const struct rn_capture_rec *rec, const uint8_t *ip,
		       size_t caplen)
{
	char src[INET6_ADDRSTRLEN] = "?", dst[INET6_ADDRSTRLEN] = "?";
	time_t sec = (time_t)(rec->time_ns / 1000000000u);
	size_t head = 0;
	struct tm tm;

	if (caplen >= 20 && ip[0] >> 4 == 4) {
		inet_ntop(AF_INET, ip + 12, src, sizeof(src));
		inet_ntop(AF_INET, ip + 16, dst, sizeof(dst));
		head = (size_t)(ip[0] & 15) * 4 + 8;
	} else if (caplen >= 40 && ip[0] >> 4 == 6) {
		inet_ntop(AF_INET6, ip + 8, src, sizeof(src));
		inet_ntop(AF_INET6, ip + 24, dst, sizeof(dst));
		head = 48;
	}
	localtime_r(&sec, &tm);
	printf("%02d:%02d:%02d.%06u %s %s > %s", tm.tm_hour, tm.tm_min,
	       tm.tm_sec, (unsigned)(rec->time_ns % 1000000000u / 1000),
	       rec->dir == RN_CAPTURE_TX ? "out" :
	       rec->dir == RN_CAPTURE_RX ? "in " : "loc", src, dst);
	if (head && caplen >= head + 12) {
		const uint8_t *bth = ip + head;

		printf(": opcode 0x%02x dqpn 0x%06x psn %u",
		       bth[0], (unsigned)bth[5] << 16 | bth[6] << 8 | bth[7],
		       (unsigned)bth[9] << 16 | bth[10] << 8 | bth[11]);
	}
	printf(", length %u\n", rec->len);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	char dirbuf[PATH_MAX];
	const char *dir = NULL, *device = "ringnic0", *file = NULL;
	uint32_t count = 0, snaplen = 0, qpn = RN_CAPTURE_ANY_QP, pid = 0;
	uint64_t captured = 0, dropped = 0;
	bool unbuffered = false;
	pcap_dumper_t *dumper = NULL;
	pcap_t *pcap = NULL;
	uint8_t *buf;
	int opt, fd;

	while ((opt = getopt_long(argc, argv, "d:w:c:s:q:p:Uh", longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'r': dir = optarg; break;
		case 'd': device = optarg; break;
		case 'w': file = optarg; break;
		case 'U': unbuffered = true; break;
		case 'c':
			if (rn_tool_parse_u32(optarg, UINT32_MAX, &count) || !count) {
				fprintf(stderr, "ringnic-dump: bad count %s\n", optarg);
				return 2;
			}
			break;
		case 's':
			if (rn_tool_parse_u32(optarg, SNAPLEN_MAX, &snaplen)) {
				fprintf(stderr, "ringnic-dump: bad snap length %s (0 to %u)\n",
					optarg, SNAPLEN_MAX);
				return 2;
			}
			break;
		case 'q':
			if (rn_tool_parse_u32(optarg, 0xffffff, &qpn)) {
				fprintf(stderr, "ringnic-dump: bad QPN %s\n", optarg);
				return 2;
			}
			break;
		case 'p':
			if (rn_tool_parse_u32(optarg, INT32_MAX, &pid) || !pid) {
				fprintf(stderr, "ringnic-dump: bad PID %s\n", optarg);
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
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (!dir)
		dir = rn_tool_runtime_dir(dirbuf, sizeof(dirbuf));
	if (!snaplen)
		snaplen = SNAPLEN_MAX;
	buf = malloc(sizeof(struct rn_capture_rec) + SNAPLEN_MAX);
	if (!buf)
		return 1;
	if (file) {
		pcap = pcap_open_dead_with_tstamp_precision(
			DLT_RAW, (int)snaplen, PCAP_TSTAMP_PRECISION_NANO);
		dumper = pcap ? pcap_dump_open(pcap, file) : NULL;
		if (!dumper) {
			fprintf(stderr, "ringnic-dump: %s: %s\n", file,
				pcap ? pcap_geterr(pcap) : "cannot start libpcap");
			return 1;
		}
	}
	fd = start_capture(dir, device, qpn, pid, snaplen);
	if (fd < 0)
		return 1;
	/* No SA_RESTART: a signal ends the wait for the next record. */
	sigaction(SIGINT, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	sigaction(SIGTERM, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	sigaction(SIGPIPE, &(struct sigaction){ .sa_handler = on_signal }, NULL);
	fprintf(stderr, "ringnic-dump: capturing on %s, snap length %u\n",
		device, snaplen);
	while (!count || captured < count) {
		struct rn_capture_rec rec;
		/* Once told to stop, what ringnicd has sent is still written. */
		ssize_t n = recv(fd, buf, sizeof(rec) + SNAPLEN_MAX,
				 stopping ? MSG_DONTWAIT : 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			if (n < 0)
				fprintf(stderr, "ringnic-dump: %s: %s\n", device,
					strerror(errno));
			else
				fprintf(stderr, "ringnic-dump: %s: ringnicd ended the capture\n",
					device);
			break;
		}
		if ((size_t)n < sizeof(rec))
			continue;
		memcpy(&rec, buf, sizeof(rec));
		dropped += rec.dropped;
		captured++;
		if (dumper) {
			struct pcap_pkthdr h = {
				.ts.tv_sec = (time_t)(rec.time_ns / 1000000000u),
				/* nanoseconds: the file's precision */
				.ts.tv_usec = (suseconds_t)(rec.time_ns % 1000000000u),
				.caplen = (bpf_u_int32)((size_t)n - sizeof(rec)),
				.len = rec.len,
			};

			pcap_dump((u_char *)dumper, &h, buf + sizeof(rec));
			if (unbuffered)
				pcap_dump_flush(dumper);
		} else {
			print_line(&rec, buf + sizeof(rec), (size_t)n - sizeof(rec));
		}
	}
	close(fd);
	if (dumper) {
		pcap_dump_close(dumper);
		pcap_close(pcap);
	}
	fflush(stdout);
	fprintf(stderr, "%" PRIu64 " packets captured\n%" PRIu64
		" packets dropped by ringnicd\n", captured, dropped);
	free(buf);
	return 0;
}
