// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rn_mpi_check: what an MPI job needs of its network, checked byte for
 * byte: ping-pong over a range of sizes, allreduce, and an alltoall of
 * 16 MiB per rank.  Run with mpirun -np N (N >= 2); exits 0 only when
 * every rank saw exactly what it should.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALLTOALL_BYTES (16u << 20)

static uint8_t pattern(int from, int to, size_t i)
{
	uint32_t x = (uint32_t)from * 0x9e3779b1u + (uint32_t)to * 0x85ebca6bu +
		     (uint32_t)i * 0xc2b2ae35u;

	x ^= x >> 15;
	return (uint8_t)(x * 0x2c1b3c6du >> 24);
}

static int fail(int rank, const char *what, size_t at)
{
	fprintf(stderr, "rank %d: %s wrong at byte %zu\n", rank, what, at);
	return 1;
}

static int ping_pong(int rank)
{
	static const size_t sizes[] = { 0, 1, 8, 100, 4096, 65536, 1 << 20 };
	uint8_t *buf = malloc(1 << 20);
	size_t s, i;
	int it, bad = 0;

	for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]) && !bad; s++) {
		for (it = 0; it < 20 && !bad; it++) {
			if (rank == 0) {
				for (i = 0; i < sizes[s]; i++)
					buf[i] = pattern(0, it, i);
				MPI_Send(buf, (int)sizes[s], MPI_BYTE, 1, it,
					 MPI_COMM_WORLD);
				MPI_Recv(buf, (int)sizes[s], MPI_BYTE, 1, it,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (i = 0; i < sizes[s] && !bad; i++)
					if (buf[i] != pattern(1, it, i))
						bad = fail(rank, "pong", i);
			} else if (rank == 1) {
				MPI_Recv(buf, (int)sizes[s], MPI_BYTE, 0, it,
					 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
				for (i = 0; i < sizes[s] && !bad; i++)
					if (buf[i] != pattern(0, it, i))
						bad = fail(rank, "ping", i);
				for (i = 0; i < sizes[s]; i++)
					buf[i] = pattern(1, it, i);
				MPI_Send(buf, (int)sizes[s], MPI_BYTE, 0, it,
					 MPI_COMM_WORLD);
			}
		}
	}
	free(buf);
	return bad;
}

static int allreduce(int rank, int size)
{
	enum { N = 100000 };
	int64_t *in = malloc(N * sizeof(*in)), *out = malloc(N * sizeof(*out));
	int i, bad = 0;

	for (i = 0; i < N; i++)
		in[i] = (int64_t)rank * N + i;
	MPI_Allreduce(in, out, N, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
	/* sum over r of (r * N + i) */
	for (i = 0; i < N && !bad; i++)
		if (out[i] != (int64_t)N * size * (size - 1) / 2 + (int64_t)i * size)
			bad = fail(rank, "allreduce", (size_t)i * sizeof(*out));
	free(in);
	free(out);
	return bad;
}

static int alltoall(int rank, int size)
{
	size_t chunk = ALLTOALL_BYTES / size, i;
	uint8_t *send = malloc(ALLTOALL_BYTES), *recv = malloc(ALLTOALL_BYTES);
	int r, bad = 0;

	for (r = 0; r < size; r++)
		for (i = 0; i < chunk; i++)
			send[r * chunk + i] = pattern(rank, r, i);
	memset(recv, 0, ALLTOALL_BYTES);
	MPI_Alltoall(send, (int)chunk, MPI_BYTE, recv, (int)chunk, MPI_BYTE,
		     MPI_COMM_WORLD);
	for (r = 0; r < size && !bad; r++)
		for (i = 0; i < chunk && !bad; i++)
			if (recv[r * chunk + i] != pattern(r, rank, i))
				bad = fail(rank, "alltoall", r * chunk + i);
	free(send);
	free(recv);
	return bad;
}

int main(int argc, char **argv)
{
	int rank, size, bad, all;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (size < 2) {
		fprintf(stderr, "rn_mpi_check: run with at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	bad = ping_pong(rank);
	bad |= allreduce(rank, size);
	bad |= alltoall(rank, size);
	MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	if (!rank)
		printf("rn_mpi_check: %d ranks: ping-pong, allreduce, 16 MiB "
		       "alltoall %s\n", size, all ? "FAILED" : "ok");
	MPI_Finalize();
	return all;
}
