/*
 * mpi_allreduce.c - an Open MPI program for tests/integration/t2006
 *
 * Every rank prints "rank R of N sum S", S the MPI_Allreduce of the rank
 * numbers (a rank left alone as a singleton prints "of 1"). With an
 * argument A, rank A prints "fatal: shard A is corrupt" to stderr and
 * calls MPI_Abort(3) while the others wait in MPI_Barrier.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int
main(int argc, char **argv)
{
    int rank, size, sum = 0, bad = argc > 1 ? atoi(argv[1]) : -1;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (rank == bad) {
        fprintf(stderr, "fatal: shard %d is corrupt\n", bad);
        fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    if (bad >= 0)
        MPI_Barrier(MPI_COMM_WORLD);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d sum %d\n", rank, size, sum);
    MPI_Finalize();
    return 0;
}
