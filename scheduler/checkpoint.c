/*
 * checkpoint.c - the checkpoint registry (checkpoint.h)
 */
#include "scheduler/checkpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

/* Step `step` of attempt a is complete: into the registry. */
static int
ckpt_complete(struct schedd *sd, struct job *job, struct attempt *a,
    int64_t step, int committed, const char *source)
{
    struct db_checkpoint c;
    char subject[32];
    char *path = job_ckpt_path(job, step);
    cJSON *detail;
    int rc;

    memset(&c, 0, sizeof(c));
    c.job_id = job->id;
    c.step = step;
    c.attempt = a->num;
    c.path = path;
    c.committed = committed;
    c.complete_ms = timeid_now_ms();
    c.source = source;
    rc = db_checkpoint_insert(sd->db, &c);
    if (rc < 0) {
        free(path);
        return schedd_db_error(sd, rc);
    }
    if (step > job->ckpt_step)
        job->ckpt_step = step;
    attempt_tally_prune(a, job->ckpt_step);
    if (rc == 0) {
        free(path);
        return 0;
    }
    schedd_subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_int(detail, "step", step);
    jsonx_add_str(detail, "path", path);
    jsonx_add_str(detail, "source", source);
    log_info("job=%lld attempt=%d checkpoint step %lld complete (%s)",
        (long long)job->id, a->num, (long long)step, source);
    free(path);
    return schedd_event(sd, SCHEDD_ACTOR, subject, "checkpoint_complete",
        detail);
}

static int
int64_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

    return (a > b) - (a < b);
}

int
checkpoint_scan(struct schedd *sd, struct job *job, struct attempt *a,
    const int64_t *steps, size_t n)
{
    int64_t *sorted;
    int rc = 0;

    if (n == 0 || steps[n - 1] <= job->ckpt_step) {
        /* The common case: nothing new (reports repeat the list). */
        bool newer = false;

        for (size_t i = 0; i < n && !newer; i++)
            newer = steps[i] > job->ckpt_step;
        if (!newer)
            return 0;
    }
    sorted = xcalloc(n, sizeof(*sorted));
    memcpy(sorted, steps, n * sizeof(*sorted));
    qsort(sorted, n, sizeof(*sorted), int64_cmp);
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (sorted[i] > job->ckpt_step)
            rc = ckpt_complete(sd, job, a, sorted[i], (int)a->nranks,
                "convention");
    }
    free(sorted);
    return rc;
}

int
checkpoint_commit(struct schedd *sd, struct job *job, struct attempt *a,
    int rank, int64_t step, const char *source, int *committed)
{
    int count = 0;
    int rc;

    if (step <= job->ckpt_step) {
        /* This step, or a later one, is complete already. */
        if (committed)
            *committed = (int)a->nranks;
        return 0;
    }
    rc = db_commit_insert(sd->db, job->id, a->num, step, rank, timeid_now_ms());
    if (rc < 0)
        return schedd_db_error(sd, rc);
    if (rc == 1) {
        count = attempt_tally_add(a, step);
    } else {
        for (size_t i = 0; i < a->ntallies; i++) {
            if (a->tallies[i].step == step)
                count = a->tallies[i].committed;
        }
    }
    if (rank >= 0 && (size_t)rank < a->nranks && step > a->ranks[rank].ckpt_max)
        a->ranks[rank].ckpt_max = step;
    if (committed)
        *committed = count;
    if ((size_t)count >= a->nranks)
        return ckpt_complete(sd, job, a, step, count, source);
    return 0;
}
