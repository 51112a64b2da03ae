// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two MPI ranks, for bench/samehost.sh: the one-way latency of an 8-byte
 * ping-pong (median over the iterations) and the bandwidth of 64 KiB and
 * 1 MiB messages sent 16 at a time (MPI_Isend, the receiver's MPI_Irecv
 * posted ahead, one 1-byte reply per window). The last byte of every
 * message is checked. Rank 0 prints "mpi_lat_8 <us> us",
 * "mpi_bw_64k <GB/s> GB/s" and "mpi_bw_1m <GB/s> GB/s"; the exit status is
 * non-zero on a wrong byte or any MPI error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAT_ITERS 20000
#define LAT_WARMUP 2000
#define WINDOW 16

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double lat(int rank)
{
	double *t = malloc(sizeof(*t) * LAT_ITERS), t0, res = 0;
	char buf[8] = { 0 };
	int i;

	if (!t)
		MPI_Abort(MPI_COMM_WORLD, 1);
	for (i = -LAT_WARMUP; i < LAT_ITERS; i++) {
		t0 = MPI_Wtime();
		if (rank == 0) {
			MPI_Send(buf, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
			MPI_Recv(buf, 8, MPI_CHAR, 1, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			MPI_Recv(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
			MPI_Send(buf, 8, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
		}
		if (i >= 0)
			t[i] = (MPI_Wtime() - t0) / 2 * 1e6;
	}
	if (rank == 0) {
		qsort(t, LAT_ITERS, sizeof(*t), cmp_dbl);
		res = t[LAT_ITERS / 2];
	}
	free(t);
	return res;
}

/* GB/s of size-byte messages, iters windows of WINDOW; -1 on a bad byte */
static double bw(int rank, size_t size, int iters)
{
	char *buf = malloc(size * WINDOW), ack = 0;
	MPI_Request req[WINDOW];
	double t0 = 0;
	int i, w, bad = 0;

	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 1);
	memset(buf, 0, size * WINDOW);
	for (i = -2; i < iters; i++) {
		if (i == 0) {
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
		}
		if (rank == 0) {
			for (w = 0; w < WINDOW; w++) {
				buf[w * size + size - 1] = (char)(i + w + 1);
				MPI_Isend(buf + w * size, (int)size, MPI_CHAR,
					  1, 2, MPI_COMM_WORLD, &req[w]);
			}
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			MPI_Recv(&ack, 1, MPI_CHAR, 1, 3, MPI_COMM_WORLD,
				 MPI_STATUS_IGNORE);
		} else {
			for (w = 0; w < WINDOW; w++)
				MPI_Irecv(buf + w * size, (int)size, MPI_CHAR,
					  0, 2, MPI_COMM_WORLD, &req[w]);
			MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
			for (w = 0; w < WINDOW; w++)
				bad |= buf[w * size + size - 1] != (char)(i + w + 1);
			MPI_Send(&ack, 1, MPI_CHAR, 0, 3, MPI_COMM_WORLD);
		}
	}
	t0 = MPI_Wtime() - t0;
	free(buf);
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
	return bad ? -1 : (double)size * WINDOW * iters / t0 / 1e9;
}

int main(int argc, char **argv)
{
	double l, b64, b1m;
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n != 2) {
		if (rank == 0)
			fprintf(stderr, "mpi_pingpong: needs 2 ranks\n");
		MPI_Finalize();
		return 2;
	}
	l = lat(rank);
	b64 = bw(rank, 65536, 200);
	b1m = bw(rank, 1 << 20, 40);
	if (rank == 0) {
		printf("mpi_lat_8 %.2f us\n", l);
		if (b64 < 0 || b1m < 0) {
			fprintf(stderr, "mpi_pingpong: wrong byte\n");
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		printf("mpi_bw_64k %.3f GB/s\n", b64);
		printf("mpi_bw_1m %.3f GB/s\n", b1m);
	}
	MPI_Finalize();
	return 0;
}
