/*
 * api_stats.c - goodput: per job (in the job view) and cluster-wide
 *
 * docs/fault-tolerance.md §Goodput. The rows come from the database (one
 * per attempt, with the checkpoint it resumed from and its job's state);
 * this file groups them by job, tells each attempt which checkpoint its
 * successor resumed from, and leaves the arithmetic to goodput.c.
 *
 * GET /v1/stats walks every attempt ever recorded: it is an on-demand
 * report, one indexed scan, not something the scheduler computes per
 * request of any other kind.
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

/* The attempts of the job being read, and the totals so far. */
struct goodput_walk {
    int64_t now;
    int64_t job_id;             /* the current group; 0 none */
    struct goodput_attempt *v;
    size_t n;
    size_t cap;
    struct db_goodput_row last; /* the group's last row */

    /* Totals. */
    struct goodput total;
    int64_t jobs;
    int64_t rank_productive_ms;
    int64_t failures[POLICY_KIND_COUNT];
    struct goodput one;         /* the last job's (api_goodput_job) */
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
    if (w->v[w->n - 1].failed && r->job_state == JOB_STATE_RESTARTING) {
        w->v[w->n - 1].ckpt_attempt = r->last_ckpt_attempt;
        w->v[w->n - 1].ckpt_complete_ms = r->last_ckpt_ms;
    }
    finished = job_state_finished(r->job_state);
    goodput_compute(w->v, w->n, r->job_state == JOB_STATE_FAILED,
        finished && r->job_end_ms > 0 ? r->job_end_ms : w->now, &w->one);
    goodput_add(&w->total, &w->one);
    w->rank_productive_ms += w->one.productive_ms * (int64_t)r->world_size;
    w->jobs++;
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
    g->end_ms = attempt_state_active(r->state) ? 0 : r->end_ms;
    g->failed = r->state == ATTEMPT_STATE_FAILED;
    g->failed_ms = r->failed_ms;
    if (r->has_failure && (unsigned)r->failure_kind < POLICY_KIND_COUNT)
        w->failures[r->failure_kind]++;
    w->last = *r;
    return 0;
}

int
api_goodput_job(struct schedd *sd, int64_t job_id, struct goodput *out)
{
    struct goodput_walk w;
    int rc;

    memset(&w, 0, sizeof(w));
    w.now = timeid_now_ms();
    rc = db_goodput_foreach(sd->db, job_id, walk_row, &w);
    if (rc == 0)
        walk_flush(&w);
    free(w.v);
    *out = w.one;
    return rc;
}

cJSON *
api_goodput_json(const struct goodput *g, int world_size)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "wall_ms", g->wall_ms);
    jsonx_add_int(o, "productive_ms", g->productive_ms);
    jsonx_add_int(o, "lost_ms", g->lost_ms);
    jsonx_add_int(o, "recovery_ms", g->recovery_ms);
    cJSON_AddNumberToObject(o, "ettr", g->ettr);
    jsonx_add_int(o, "world_size", world_size);
    return o;
}

int
api_stats_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct goodput_walk w;
    cJSON *o, *f;
    int rc;

    (void)r;
    (void)err;
    memset(&w, 0, sizeof(w));
    w.now = timeid_now_ms();
    rc = db_goodput_foreach(sd->db, 0, walk_row, &w);
    if (rc == 0)
        walk_flush(&w);
    free(w.v);
    if (rc < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "jobs", w.jobs);
    jsonx_add_int(o, "wall_ms", w.total.wall_ms);
    jsonx_add_int(o, "productive_ms", w.total.productive_ms);
    jsonx_add_int(o, "lost_ms", w.total.lost_ms);
    jsonx_add_int(o, "recovery_ms", w.total.recovery_ms);
    cJSON_AddNumberToObject(o, "ettr", w.total.ettr);
    jsonx_add_int(o, "rank_productive_ms", w.rank_productive_ms);
    f = cJSON_AddObjectToObject(o, "failures");
    for (int k = 0; k < POLICY_KIND_COUNT; k++)
        jsonx_add_int(f, policy_kind_str((enum policy_kind)k),
            w.failures[k]);
    http_resp_json(resp, 200, o);
    return 0;
}
