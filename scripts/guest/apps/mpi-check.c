/*
 * mpi-check: a small MPI program for the apps test group (part mpi, MPI over
 * UCX between two guests; docs/consumers.md).
 *
 *   mpirun -np 2 ... mpi-check [ITERATIONS]
 *
 * Ping-pong between ranks 0 and 1 at 1 B, 4 KiB, 64 KiB and 1 MiB: every
 * message carries a pattern made of its size, iteration and sender, and
 * the receiver checks every byte before it answers. Then MPI_Allreduce
 * (sum, over 1, 1000 and 262144 doubles; and MPI_MAX over ints) with
 * every element checked against the value computed locally, and an
 * MPI_Bcast of 1 MiB checked. Prints one "mpi-check: ..." line per step
 * from rank 0 and exits non-zero (after MPI_Abort) on the first wrong
 * byte or MPI error.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static void fail(const char *what)
{
	fprintf(stderr, "mpi-check: rank %d: FAILED: %s\n", rank, what);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, 3);
	exit(3);
}

static unsigned char pat(size_t len, int it, int from, size_t i)
{
	return (unsigned char)(len * 7 + (size_t)it * 31 + (size_t)from * 101 + i * 13 + (i >> 8));
}

static void fill(unsigned char *b, size_t len, int it, int from)
{
	for (size_t i = 0; i < len; i++)
		b[i] = pat(len, it, from, i);
}

static void check(const unsigned char *b, size_t len, int it, int from, const char *what)
{
	for (size_t i = 0; i < len; i++) {
		if (b[i] != pat(len, it, from, i)) {
			char msg[200];
			snprintf(msg, sizeof(msg), "%s: %zu-byte message %d from rank %d: byte %zu is 0x%02x, not 0x%02x",
				 what, len, it, from, i, b[i], pat(len, it, from, i));
			fail(msg);
		}
	}
}

static void pingpong(size_t len, int iters)
{
	unsigned char *buf = malloc(len);
	int peer = rank == 0 ? 1 : 0;
	double t0;

	if (!buf)
		fail("malloc");
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = MPI_Wtime();
	for (int it = 0; it < iters; it++) {
		if (rank == 0) {
			fill(buf, len, it, 0);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, len, it, 1, "ping-pong reply");
		} else if (rank == 1) {
			memset(buf, 0, len);
			MPI_Recv(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
			check(buf, len, it, 0, "ping-pong request");
			fill(buf, len, it, 1);
			MPI_Send(buf, (int)len, MPI_BYTE, peer, it, MPI_COMM_WORLD);
		}
	}
	if (rank == 0) {
		double dt = MPI_Wtime() - t0;
		printf("mpi-check: ping-pong %zu B x %d checked: %.1f us per round trip, %.2f MB/s\n",
		       len, iters, dt / iters * 1e6, 2.0 * len * iters / dt / 1e6);
		fflush(stdout);
	}
	free(buf);
}

static void allreduce(int n)
{
	double *in = malloc(sizeof(double) * n), *out = malloc(sizeof(double) * n);
	int *iin = malloc(sizeof(int) * n), *iout = malloc(sizeof(int) * n);

	if (!in || !out || !iin || !iout)
		fail("malloc");
	for (int i = 0; i < n; i++) {
		in[i] = (double)(rank + 1) * (i % 1000 + 1);
		iin[i] = (rank * 7919 + i) % 100003;
		out[i] = -1;
		iout[i] = -1;
	}
	MPI_Allreduce(in, out, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
	MPI_Allreduce(iin, iout, n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	for (int i = 0; i < n; i++) {
		/* sum over ranks r of (r + 1) * k = k * size * (size + 1) / 2 */
		double want = (double)(i % 1000 + 1) * size * (size + 1) / 2.0;
		int imax = -1;

		for (int r = 0; r < size; r++) {
			int v = (r * 7919 + i) % 100003;
			if (v > imax)
				imax = v;
		}
		if (out[i] != want || iout[i] != imax) {
			char msg[200];
			snprintf(msg, sizeof(msg), "allreduce of %d: element %d is %g/%d, not %g/%d",
				 n, i, out[i], iout[i], want, imax);
			fail(msg);
		}
	}
	if (rank == 0) {
		printf("mpi-check: allreduce sum and max of %d elements over %d ranks checked\n", n, size);
		fflush(stdout);
	}
	free(in);
	free(out);
	free(iin);
	free(iout);
}

static void bcast(size_t len)
{
	unsigned char *buf = malloc(len);

	if (!buf)
		fail("malloc");
	if (rank == 0)
		fill(buf, len, 77, 0);
	else
		memset(buf, 0, len);
	MPI_Bcast(buf, (int)len, MPI_BYTE, 0, MPI_COMM_WORLD);
	check(buf, len, 77, 0, "bcast");
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0) {
		printf("mpi-check: bcast of %zu B checked on every rank\n", len);
		fflush(stdout);
	}
	free(buf);
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 100;
	char host[MPI_MAX_PROCESSOR_NAME];
	int hlen = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	MPI_Get_processor_name(host, &hlen);
	printf("mpi-check: rank %d of %d on %s\n", rank, size, host);
	fflush(stdout);
	if (size < 2)
		fail("needs at least 2 ranks");
	pingpong(1, iters);
	pingpong(4096, iters);
	pingpong(65536, iters / 2 > 0 ? iters / 2 : 1);
	pingpong(1 << 20, iters / 10 > 0 ? iters / 10 : 1);
	allreduce(1);
	allreduce(1000);
	allreduce(262144);
	bcast(1 << 20);
	MPI_Barrier(MPI_COMM_WORLD);
	if (rank == 0)
		printf("mpi-check: all checks passed\n");
	MPI_Finalize();
	return 0;
}
