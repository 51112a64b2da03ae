// SPDX-License-Identifier: BSD-2-Clause
/*
 * Any number of ranks (at least 2) pass messages of 1 B .. 4 MiB around a
 * ring, every rank to the next at once (so every link carries traffic in
 * both directions); every byte is checked on arrival (a pattern of size,
 * round and sender), then an all-reduce of known values is checked too.
 * Rank 0 prints "ring ok <ranks> <messages> <bytes>"; exit status non-zero
 * on any mismatch. tests/e2e/test_cluster.sh runs it across the hosts of
 * `uroce cluster`.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 5
#define MAX_SIZE (4u << 20)

static uint8_t pattern(size_t i, size_t size, int round, int from)
{
	return (uint8_t)(i * 131u + size * 7u + (unsigned int)round * 17u +
			 (unsigned int)from * 101u);
}

int main(int argc, char **argv)
{
	uint8_t *out, *in;
	long bad = 0, msgs = 0, bytes = 0, sum;
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n < 2) {
		fprintf(stderr, "needs at least 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	out = malloc(MAX_SIZE);
	in = malloc(MAX_SIZE);
	if (!out || !in)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (size_t size = 1; size <= MAX_SIZE; size *= 4) {
		for (int r = 0; r < ROUNDS; r++) {
			int next = (rank + 1) % n, prev = (rank + n - 1) % n;

			for (size_t i = 0; i < size; i++)
				out[i] = pattern(i, size, r, rank);
			MPI_Sendrecv(out, (int)size, MPI_BYTE, next, r,
				     in, (int)size, MPI_BYTE, prev, r,
				     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			for (size_t i = 0; i < size; i++)
				bad += in[i] != pattern(i, size, r, prev);
			msgs++;
			bytes += (long)size;
		}
	}
	/* the sum of 1..n, which every rank must get */
	sum = rank + 1;
	MPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	bad += sum != (long)n * (n + 1) / 2;
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &msgs, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (!rank) {
		if (bad)
			printf("ring FAILED: %ld bad bytes or sums\n", bad);
		else
			printf("ring ok %d %ld %ld\n", n, msgs, bytes);
	}
	free(out);
	free(in);
	MPI_Finalize();
	return bad != 0;
}
