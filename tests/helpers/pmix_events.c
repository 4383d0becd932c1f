/*
 * pmix_events.c - a rank that records lockstep's PMIx events, for
 * tests/integration/t2008
 *
 *     pmix_events STEPS STEP_MS [late]
 *
 * Registers a handler for LOCKSTEP_PMIX_EVENT_GC and _CHECKPOINT (with
 * `late`, rank 1 registers it only once liblockstep's lockstep_step has
 * returned an action, so only a cached event can reach it), then runs
 * STEPS steps of STEP_MS ms with liblockstep (which reads the control
 * file and acknowledges: a checkpoint is committed at once), and prints
 * one line per event:
 *
 *     event code=C kind=K step=S seq=Q attempt=A source=NS
 *
 * Built with -DWITH_MPI (mpicc), it is an Open MPI program: MPI_Init
 * first, an MPI_Allreduce per step, "rank R of N sum X" at the end, and
 * its handler passes the event on down the chain (PMIX_SUCCESS), which
 * would reach Open MPI's default handler, and abort the rank, without
 * PMIX_EVENT_NON_DEFAULT. Without it the handler completes the event.
 * Without a PMIx server (no PMIX_NAMESPACE) it runs on the control file
 * alone.
 */
#include <pmix.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef WITH_MPI
#include <mpi.h>
#endif

#include "lockstep.h"

static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void
say(const char *fmt, ...)
{
    va_list ap;

    pthread_mutex_lock(&out_lock);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    pthread_mutex_unlock(&out_lock);
}

static void
handler(size_t id, pmix_status_t status, const pmix_proc_t *source,
    pmix_info_t info[], size_t ninfo, pmix_info_t *results, size_t nresults,
    pmix_event_notification_cbfunc_fn_t cbfunc, void *cbdata)
{
    const char *kind = "?";
    long long step = -2;
    unsigned long long seq = 0;
    unsigned attempt = 0;
    size_t i;

    for (i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], LOCKSTEP_PMIX_KEY_KIND) &&
            info[i].value.type == PMIX_STRING)
            kind = info[i].value.data.string;
        else if (PMIX_CHECK_KEY(&info[i], LOCKSTEP_PMIX_KEY_STEP) &&
                 info[i].value.type == PMIX_INT64)
            step = (long long)info[i].value.data.int64;
        else if (PMIX_CHECK_KEY(&info[i], LOCKSTEP_PMIX_KEY_SEQ) &&
                 info[i].value.type == PMIX_UINT64)
            seq = (unsigned long long)info[i].value.data.uint64;
        else if (PMIX_CHECK_KEY(&info[i], LOCKSTEP_PMIX_KEY_ATTEMPT) &&
                 info[i].value.type == PMIX_UINT32)
            attempt = info[i].value.data.uint32;
    }
    say("event code=%d kind=%s step=%lld seq=%llu attempt=%u source=%s\n",
        status, kind, step, seq, attempt, source->nspace);
    if (cbfunc != NULL) {
#ifdef WITH_MPI
        cbfunc(PMIX_SUCCESS, NULL, 0, NULL, NULL, cbdata);
#else
        cbfunc(PMIX_EVENT_ACTION_COMPLETE, NULL, 0, NULL, NULL, cbdata);
#endif
    }
}

static int
register_handler(void)
{
    pmix_status_t codes[] = { LOCKSTEP_PMIX_EVENT_GC,
        LOCKSTEP_PMIX_EVENT_CHECKPOINT };
    pmix_status_t rc;

    /* Blocking (no callback): returns the handler's id. */
    rc = PMIx_Register_event_handler(codes, 2, NULL, 0, handler, NULL, NULL);
    if (rc < 0) {
        fprintf(stderr, "PMIx_Register_event_handler: %s\n",
            PMIx_Error_string(rc));
        return -1;
    }
    return 0;
}

int
main(int argc, char **argv)
{
    unsigned long steps, step_ms, n;
    int late, registered, pmix;
    pmix_proc_t me = { .rank = 0 };
    pmix_status_t rc;
    unsigned act;

    if (argc < 3) {
        fprintf(stderr, "usage: pmix_events STEPS STEP_MS [late]\n");
        return 2;
    }
    steps = strtoul(argv[1], NULL, 10);
    step_ms = strtoul(argv[2], NULL, 10);
#ifdef WITH_MPI
    int sum = 0, size = 1;

    MPI_Init(&argc, &argv);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#endif
    /* Inside an MPI rank: a reference on the instance MPI opened. */
    /* Without a PMIx server (LOCKSTEP_PMIX=0) only the control file. */
    pmix = getenv("PMIX_NAMESPACE") != NULL;
    if (pmix && (rc = PMIx_Init(&me, NULL, 0)) != PMIX_SUCCESS) {
        fprintf(stderr, "PMIx_Init: %s\n", PMIx_Error_string(rc));
        return 1;
    }
    if (!pmix)
        say("no PMIx server\n");
    else
        say("uid=%u PMIX_MCA_gds=%s PMIX_GDS_MODULE=%s\n", (unsigned)getuid(),
            getenv("PMIX_MCA_gds") ? getenv("PMIX_MCA_gds") : "-",
            getenv("PMIX_GDS_MODULE") ? getenv("PMIX_GDS_MODULE") : "-");
    late = argc > 3 && strcmp(argv[3], "late") == 0 && pmix && me.rank == 1;
    registered = !late || !pmix;
    if (!late && pmix && register_handler() < 0)
        return 1;
    lockstep_init();
    for (n = 0; n < steps; n++) {
        usleep(step_ms * 1000);
#ifdef WITH_MPI
        {
            int one = 1;

            MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
#endif
        act = lockstep_step(n);
        if (act != 0)
            say("act step=%lu flags=%u\n", n, act);
        if (act & LOCKSTEP_ACT_CHECKPOINT)
            lockstep_checkpoint_committed(n);
        if (act != 0 && !registered) {
            if (register_handler() < 0)
                return 1;
            registered = 1;
            say("registered at step %lu\n", n);
        }
    }
    /* The last events are on their way. */
    usleep(500 * 1000);
    lockstep_finalize();
    if (pmix)
        PMIx_Finalize(NULL, 0);
#ifdef WITH_MPI
    say("rank %u of %d sum %d\n", me.rank, size, sum);
    MPI_Finalize();
#endif
    say("done\n");
    return 0;
}
