/*
 * pmix_abort.c - a bare PMIx client for tests/integration/t2006
 *
 * Rank 1 calls PMIx_Abort(5, "shard 9 is corrupt") and then, unlike an
 * MPI rank, does not exit; every other rank sleeps. Only the agent's
 * handling of the abort (stop the attempt's ranks) ends the job.
 */
#include <pmix.h>
#include <stdio.h>
#include <unistd.h>

int
main(void)
{
    pmix_proc_t me;
    pmix_status_t rc;

    if ((rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    printf("rank %u of %s connected\n", me.rank, me.nspace);
    fflush(stdout);
    if (me.rank == 1) {
        rc = PMIx_Abort(5, "shard 9 is corrupt", NULL, 0);
        printf("PMIx_Abort returned %s\n", PMIx_Error_string(rc));
        fflush(stdout);
    }
    for (;;)
        pause();
}
