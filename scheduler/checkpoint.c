/*
 * checkpoint.c - the checkpoint registry
 *
 * docs/fault-tolerance.md §Checkpoints. A checkpoint of step N is complete
 * when every rank committed N in the same attempt:
 *  - SDK: each rank's agent reports the steps the rank committed
 *    (ckpt_steps); POST /v1/jobs/ID/checkpoints does the same for one
 *    rank. Commits are recorded per (attempt, step, rank) and counted;
 *    world_size distinct ranks make it complete.
 *  - convention: the agent of node rank 0 scans the checkpoint directory
 *    and reports every step-<N> that has its COMPLETE marker (written last,
 *    after every rank's data is durable).
 * Only the job's latest attempt counts (fencing): commits of an older one
 * are refused (409 from the API, an event from reports). The next attempt
 * resumes from the highest complete step (lifecycle.c); an incomplete
 * step never gets into the registry, so it is never resumed from.
 *
 * Cost: a rank's commits are counted once (the agent repeats them in every
 * report; attempt_rank.ckpt_max skips what was counted), and steps at or
 * below the highest complete one are ignored.
 */
#include "scheduler/schedd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

char *
schedd_ckpt_path(const struct job *job, int64_t step)
{
    const char *dir = job->spec.checkpoint_dir ? job->spec.checkpoint_dir
                                               : "";
    size_t n = strlen(dir);

    if (n == 0)
        return xstrdup("");
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return xasprintf("%.*s/step-%lld", (int)n, dir, (long long)step);
}

/* Step `step` of attempt a is complete: into the registry. */
static int
ckpt_complete(struct schedd *sd, struct job *job, struct attempt *a,
    int64_t step, int committed, const char *source)
{
    struct db_checkpoint c;
    char subject[32];
    char *path = schedd_ckpt_path(job, step);
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
    snprintf(subject, sizeof(subject), "job/%lld", (long long)job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_int(detail, "step", step);
    jsonx_add_str(detail, "path", path);
    jsonx_add_str(detail, "source", source);
    log_info("job=%lld attempt=%d checkpoint step %lld complete (%s)",
        (long long)job->id, a->num, (long long)step, source);
    free(path);
    return schedd_event(sd, "scheduler", subject, "checkpoint_complete",
        detail);
}

static int
int64_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

    return (a > b) - (a < b);
}

int
schedd_ckpt_scan(struct schedd *sd, struct job *job, struct attempt *a,
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
schedd_ckpt_commit(struct schedd *sd, struct job *job, struct attempt *a,
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
    rc = db_commit_insert(sd->db, job->id, a->num, step, rank,
        timeid_now_ms());
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
    if (rank >= 0 && (size_t)rank < a->nranks &&
        step > a->ranks[rank].ckpt_max)
        a->ranks[rank].ckpt_max = step;
    if (committed)
        *committed = count;
    if ((size_t)count >= a->nranks)
        return ckpt_complete(sd, job, a, step, count, source);
    return 0;
}

struct ckpt_load_ctx {
    struct attempt *a;
};

static int
ckpt_load_cb(int rank, int64_t step, void *arg)
{
    struct ckpt_load_ctx *ctx = arg;
    struct attempt *a = ctx->a;

    attempt_tally_add(a, step);
    if (rank >= 0 && (size_t)rank < a->nranks &&
        step > a->ranks[rank].ckpt_max)
        a->ranks[rank].ckpt_max = step;
    return 0;
}

int
schedd_ckpt_load(struct schedd *sd, struct job *job, struct attempt *a)
{
    struct ckpt_load_ctx ctx = { a };

    return db_commits_foreach(sd->db, job->id, a->num, job->ckpt_step,
        ckpt_load_cb, &ctx);
}

int
schedd_stale_report(struct schedd *sd, struct node *node, int64_t job,
    int attempt, const char *what)
{
    char subject[32], actor[PROTO_NODE_NAME_MAX + 8];
    const struct job *j = job_table_find(&sd->jobs, job);
    cJSON *detail;

    if (node->stale_job == job && node->stale_attempt == attempt)
        return 0;
    node->stale_job = job;
    node->stale_attempt = attempt;
    snprintf(subject, sizeof(subject), "job/%lld", (long long)job);
    snprintf(actor, sizeof(actor), "agent/%s", node->name);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", attempt);
    if (j)
        jsonx_add_int(detail, "current", j->attempt);
    jsonx_add_str(detail, "node", node->name);
    jsonx_add_str(detail, "ignored", what);
    log_info("job=%lld attempt=%d node=%s: %s of an old attempt ignored",
        (long long)job, attempt, node->name, what);
    return schedd_event(sd, actor, subject, "stale_attempt_rejected",
        detail);
}
