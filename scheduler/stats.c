/*
 * stats.c - goodput per job and cluster-wide (stats.h)
 */
#include "scheduler/stats.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

/* The attempts of the job being read, and the totals so far. */
struct goodput_walk {
    int64_t now;
    int64_t job_id; /* the current group; 0 none */
    struct goodput_attempt *v;
    size_t n;
    size_t cap;
    struct db_goodput_row last; /* the group's last row */

    struct stats_cluster sum;
    struct goodput one; /* the last job's */
};

static void
walk_flush(struct goodput_walk *w)
{
    const struct db_goodput_row *r = &w->last;
    bool finished;

    if (w->n == 0)
        return;
    /* The last attempt of a job that is restarting has no successor yet:
     * it will resume from the highest complete checkpoint. */
    if (w->v[w->n - 1].failed && r->job_state == PROTO_JOB_RESTARTING) {
        w->v[w->n - 1].ckpt_attempt = r->last_ckpt_attempt;
        w->v[w->n - 1].ckpt_complete_ms = r->last_ckpt_ms;
    }
    finished = proto_job_state_finished(r->job_state);
    goodput_compute(w->v, w->n, r->job_state == PROTO_JOB_FAILED,
        finished && r->job_end_ms > 0 ? r->job_end_ms : w->now, &w->one);
    goodput_add(&w->sum.total, &w->one);
    w->sum.rank_productive_ms += w->one.productive_ms * (int64_t)r->world_size;
    w->sum.jobs++;
    w->n = 0;
}

static int
walk_row(const struct db_goodput_row *r, void *arg)
{
    struct goodput_walk *w = arg;
    struct goodput_attempt *g;

    if (r->job_id != w->job_id) {
        walk_flush(w);
        w->job_id = r->job_id;
    }
    if (w->n == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 8;
        w->v = xreallocarray(w->v, w->cap, sizeof(*w->v));
    }
    /* This attempt resumed from a checkpoint: that is what its
     * predecessor's work left behind. */
    if (w->n > 0 && r->resume_step >= 0) {
        w->v[w->n - 1].ckpt_attempt = r->resumed_ckpt_attempt;
        w->v[w->n - 1].ckpt_complete_ms = r->resumed_ckpt_ms;
    }
    g = &w->v[w->n++];
    memset(g, 0, sizeof(*g));
    g->num = r->attempt;
    g->start_ms = r->start_ms;
    g->running_ms = r->running_ms;
    g->end_ms = proto_attempt_state_active(r->state) ? 0 : r->end_ms;
    g->failed = r->state == PROTO_ATTEMPT_FAILED;
    g->failed_ms = r->failed_ms;
    if (r->has_failure && (unsigned)r->failure_kind < POLICY_KIND_COUNT)
        w->sum.failures[r->failure_kind]++;
    w->last = *r;
    return 0;
}

/* Walk the attempts of job_id (every job when 0). */
static int
stats_walk(struct schedd *sd, int64_t job_id, struct goodput_walk *w)
{
    int rc;

    memset(w, 0, sizeof(*w));
    w->now = timeid_now_ms();
    rc = db_goodput_foreach(sd->db, job_id, walk_row, w);
    if (rc == 0)
        walk_flush(w);
    free(w->v);
    return rc;
}

int
stats_job(struct schedd *sd, int64_t job_id, struct goodput *out)
{
    struct goodput_walk w;
    int rc = stats_walk(sd, job_id, &w);

    *out = w.one;
    return rc;
}

int
stats_cluster(struct schedd *sd, struct stats_cluster *out)
{
    struct goodput_walk w;
    int rc = stats_walk(sd, 0, &w);

    *out = w.sum;
    return rc;
}
