// SPDX-License-Identifier: BSD-2-Clause
/*
 * Any number of MPI ranks, for bench/samehost.sh's scaling table: every
 * rank streams messages to the next rank of a ring and from the previous
 * one at once, 16 in flight each way, so every rank is both a sender and
 * a receiver and all pairs share the host. Sizes 64 KiB and 1 MiB; the
 * last byte of every message is checked. Rank 0 prints
 * "ring_bw_64k <GB/s> GB/s" and "ring_bw_1m <GB/s> GB/s": the bytes all
 * ranks received together, divided by the slowest rank's time. The exit
 * status is non-zero on a wrong byte or any MPI error.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 16

/* aggregate GB/s of size-byte messages, iters windows; -1 on a bad byte */
static double ring_bw(int rank, int n, size_t size, int iters)
{
	char *out = malloc(size * WINDOW), *in = malloc(size * WINDOW);
	int next = (rank + 1) % n, prev = (rank + n - 1) % n;
	MPI_Request req[2 * WINDOW];
	double t0 = 0, t;
	int i, w, bad = 0;

	if (!out || !in)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(out, 0, size * WINDOW);
	memset(in, 0, size * WINDOW);
	for (i = -2; i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		for (w = 0; w < WINDOW; w++)
			MPI_Irecv(in + w * size, (int)size, MPI_CHAR, prev, 2,
				  MPI_COMM_WORLD, &req[w]);
		for (w = 0; w < WINDOW; w++) {
			out[w * size + size - 1] = (char)(i + w + rank);
			MPI_Isend(out + w * size, (int)size, MPI_CHAR, next, 2,
				  MPI_COMM_WORLD, &req[WINDOW + w]);
		}
		MPI_Waitall(2 * WINDOW, req, MPI_STATUSES_IGNORE);
		for (w = 0; w < WINDOW; w++)
			bad |= in[w * size + size - 1] != (char)(i + w + prev);
	}
	t = MPI_Wtime() - t0;
	free(out);
	free(in);
	MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	return bad ? -1 : (double)size * WINDOW * iters * n / t / 1e9;
}

int main(int argc, char **argv)
{
	double b64, b1m;
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n < 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_ring_bw: needs 2 ranks or more\n");
		MPI_Finalize();
		return 2;
	}
	b64 = ring_bw(rank, n, 65536, 100);
	b1m = ring_bw(rank, n, 1 << 20, 20);
	if (rank == 0) {
		if (b64 < 0 || b1m < 0) {
			fprintf(stderr, "mpi_ring_bw: wrong byte\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		printf("ring_bw_64k %.3f GB/s\n", b64);
		printf("ring_bw_1m %.3f GB/s\n", b1m);
	}
	MPI_Finalize();
	return 0;
}
