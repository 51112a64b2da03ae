// SPDX-License-Identifier: BSD-2-Clause
/*
 * Two ranks bounce messages of 1 B .. 4 MiB; every byte of every message
 * is checked on arrival (a pattern that depends on size, round and sender)
 * and rank 0 prints "pingpong ok <messages> <bytes>". Exit status is
 * non-zero on any mismatch.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 20
#define MAX_SIZE (4u << 20)

static uint8_t pattern(size_t i, size_t size, int round, int from)
{
	return (uint8_t)(i * 131u + size * 7u + (unsigned int)round * 17u +
			 (unsigned int)from * 101u);
}

int main(int argc, char **argv)
{
	uint8_t *buf;
	long bad = 0, msgs = 0, bytes = 0;
	int rank, n;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (n != 2) {
		if (!rank)
			fprintf(stderr, "needs exactly 2 ranks\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	buf = malloc(MAX_SIZE);
	if (!buf)
		MPI_Abort(MPI_COMM_WORLD, 2);
	for (size_t size = 1; size <= MAX_SIZE; size *= 4) {
		for (int r = 0; r < ROUNDS; r++) {
			int peer = 1 - rank;

			for (int turn = 0; turn < 2; turn++) {
				if (turn == rank) {
					for (size_t i = 0; i < size; i++)
						buf[i] = pattern(i, size, r, rank);
					MPI_Send(buf, (int)size, MPI_BYTE, peer,
						 r, MPI_COMM_WORLD);
				} else {
					MPI_Recv(buf, (int)size, MPI_BYTE, peer,
						 r, MPI_COMM_WORLD,
						 MPI_STATUS_IGNORE);
					for (size_t i = 0; i < size; i++)
						bad += buf[i] !=
						       pattern(i, size, r, peer);
					msgs++;
					bytes += (long)size;
				}
			}
		}
	}
	MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &msgs, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	MPI_Allreduce(MPI_IN_PLACE, &bytes, 1, MPI_LONG, MPI_SUM,
		      MPI_COMM_WORLD);
	if (!rank) {
		if (bad)
			printf("pingpong FAILED: %ld bad bytes\n", bad);
		else
			printf("pingpong ok %ld %ld\n", msgs, bytes);
	}
	free(buf);
	MPI_Finalize();
	return bad != 0;
}
