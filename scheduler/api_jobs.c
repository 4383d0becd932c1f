/*
 * api_jobs.c - submit, list, show and cancel jobs; commit checkpoints
 *
 * Views are built from the database (which includes the iteration's
 * uncommitted changes, and every reply waits for the commit), so a job
 * looks the same whether it is still in the in-memory model or finished
 * long ago. One exception: why a queued job is waiting is recomputed by
 * every scheduling pass and kept in memory only (writing it would cost a
 * row update per queued job per pass), so the in-memory reason is shown
 * for jobs the model holds.
 *
 * The full view (GET /v1/jobs/ID) adds what costs more than a row: every
 * attempt with its failure evidence, the complete checkpoints and the
 * goodput (api_stats.c computes it from the same rows as GET /v1/stats).
 */
#include "scheduler/api.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/goodput.h"

#define API_JOB_EVENTS 50

/* ---- views -------------------------------------------------------------- */

static void
add_int_or_null(cJSON *o, const char *key, bool known, int64_t v)
{
    if (known)
        jsonx_add_int(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

static cJSON *
attempt_json(const struct attempt *a)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *nodes, *ranks;

    jsonx_add_int(o, "attempt", a->num);
    jsonx_add_str(o, "state", attempt_state_str(a->state));
    jsonx_add_int(o, "start_ms", a->start_ms);
    jsonx_add_int(o, "end_ms", a->end_ms);
    jsonx_add_str(o, "reason", a->reason);
    jsonx_add_str(o, "master_addr", a->master_addr);
    jsonx_add_int(o, "master_port", a->master_port);
    jsonx_add_int(o, "resume_step", a->resume_step);
    jsonx_add_str(o, "resume_from", a->resume_from);
    jsonx_add_int(o, "running_ms", a->running_ms);
    jsonx_add_int(o, "failed_ms", a->failed_ms);
    jsonx_add_int(o, "detected_ms", a->detected_ms);
    jsonx_add_int(o, "released_ms", a->released_ms);
    {
        cJSON *f = a->has_failure && a->failure ? cJSON_Parse(a->failure)
                                                : NULL;

        if (f)
            cJSON_AddItemToObject(o, "failure", f);
        else
            cJSON_AddNullToObject(o, "failure");
    }
    nodes = cJSON_AddArrayToObject(o, "nodes");
    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];
        cJSON *n = cJSON_CreateObject();

        jsonx_add_str(n, "node", p->node_name ? p->node_name : "");
        jsonx_add_int(n, "node_rank", p->node_rank);
        jsonx_add_int_array(n, "gpus", p->gpus, p->ngpus);
        cJSON_AddItemToArray(nodes, n);
    }
    ranks = cJSON_AddArrayToObject(o, "ranks");
    for (size_t i = 0; i < a->nranks; i++) {
        const struct attempt_rank *rk = &a->ranks[i];
        const struct placement *p = &a->placements[rk->node_rank];
        cJSON *r = cJSON_CreateObject();

        jsonx_add_int(r, "rank", rk->rank);
        jsonx_add_str(r, "node", p->node_name ? p->node_name : "");
        jsonx_add_int(r, "local_rank", rk->local_rank);
        jsonx_add_str(r, "state", proto_rank_state_str(rk->state));
        add_int_or_null(r, "exit_code", rk->has_exit, rk->exit_code);
        add_int_or_null(r, "signal", rk->has_exit, rk->signal);
        jsonx_add_str(r, "stderr_tail", rk->stderr_tail);
        cJSON_AddItemToArray(ranks, r);
    }
    return o;
}

/* The job object of docs/api.md; attempts are added by the caller. */
static cJSON *
job_json(struct schedd *sd, const struct job *job)
{
    const struct proto_job_spec *s = &job->spec;
    const struct job *live = job_table_find(&sd->jobs, job->id);
    cJSON *o = cJSON_CreateObject();
    cJSON *env;

    jsonx_add_int(o, "id", job->id);
    jsonx_add_str(o, "name", s->name);
    jsonx_add_str(o, "user", job->user);
    jsonx_add_str(o, "state", job_state_str(job->state));
    jsonx_add_str(o, "reason",
        live && live->state == job->state ? live->reason : job->reason);
    jsonx_add_int(o, "priority", s->priority);
    jsonx_add_int(o, "nodes", s->nodes);
    jsonx_add_int(o, "ranks_per_node", s->ranks_per_node);
    jsonx_add_int(o, "gpus_per_node", s->gpus_per_node);
    jsonx_add_int(o, "cpus_per_rank", s->cpus_per_rank);
    jsonx_add_int(o, "memory_mb_per_node", s->memory_mb_per_node);
    jsonx_add_str_array(o, "argv", s->argv, s->argc);
    env = cJSON_AddObjectToObject(o, "env");
    for (size_t i = 0; i < s->nenv; i++)
        cJSON_AddStringToObject(env, s->env[i].key, s->env[i].value);
    jsonx_add_str(o, "workdir", s->workdir);
    jsonx_add_int(o, "max_restarts", s->max_restarts);
    jsonx_add_int(o, "max_infra_restarts", s->max_infra_restarts);
    jsonx_add_int(o, "hang_timeout_s", s->hang_timeout_s);
    jsonx_add_int(o, "keep_checkpoints", s->keep_checkpoints);
    jsonx_add_int(o, "restarts", job->restarts);
    jsonx_add_int(o, "infra_restarts", job->infra_restarts);
    jsonx_add_str(o, "checkpoint_dir", s->checkpoint_dir);
    jsonx_add_int(o, "submit_ms", job->submit_ms);
    jsonx_add_int(o, "start_ms", job->start_ms);
    jsonx_add_int(o, "end_ms", job->end_ms);
    jsonx_add_int(o, "attempt", job->attempt);
    add_int_or_null(o, "exit_code", job->has_exit, job->exit_code);
    add_int_or_null(o, "failed_rank", job->failed_rank >= 0,
        job->failed_rank);
    add_int_or_null(o, "signal", job->has_exit, job->signal);
    jsonx_add_str(o, "stderr_tail", job->stderr_tail ? job->stderr_tail : "");
    return o;
}

static int
checkpoint_add(const struct db_checkpoint *c, void *arg)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "step", c->step);
    jsonx_add_int(o, "attempt", c->attempt);
    jsonx_add_str(o, "path", c->path);
    jsonx_add_int(o, "complete_ms", c->complete_ms);
    jsonx_add_str(o, "source", c->source);
    cJSON_AddItemToArray(arg, o);
    return 0;
}

/* The full view: job object, its checkpoints, goodput, attempts and its
 * newest events. */
static int
job_view(struct schedd *sd, const struct job *job, cJSON **out)
{
    struct attempt **atts = NULL;
    struct goodput g;
    size_t n = 0;
    int world = job->spec.nodes * job->spec.ranks_per_node;
    char subject[32];
    cJSON *o, *arr, *cks;
    int rc;

    *out = NULL;
    rc = db_attempts_load_job(sd->db, job->id, &atts, &n);
    if (rc < 0)
        return rc;
    o = job_json(sd, job);
    cks = cJSON_AddArrayToObject(o, "checkpoints");
    rc = db_checkpoints_foreach(sd->db, job->id, checkpoint_add, cks);
    if (rc == 0)
        rc = api_goodput_job(sd, job->id, &g);
    if (rc < 0) {
        for (size_t i = 0; i < n; i++)
            attempt_destroy(atts[i]);
        free(atts);
        cJSON_Delete(o);
        return rc;
    }
    cJSON_AddItemToObject(o, "goodput", api_goodput_json(&g, world));
    arr = cJSON_AddArrayToObject(o, "attempts");
    for (size_t i = 0; i < n; i++) {
        cJSON_AddItemToArray(arr, attempt_json(atts[i]));
        attempt_destroy(atts[i]);
    }
    free(atts);
    snprintf(subject, sizeof(subject), "job/%lld", (long long)job->id);
    cJSON_AddItemToObject(o, "events",
        api_events_json(sd, subject, API_JOB_EVENTS, &rc));
    if (rc < 0) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* ---- helpers ------------------------------------------------------------ */

int
api_job_id_parse(const char *s, int64_t *id, struct err *err)
{
    char *end = NULL;
    long long v;

    if (s == NULL || *s < '0' || *s > '9')
        return err_set(err, -ENOENT, "no job '%.40s'", s ? s : "");
    errno = 0;
    v = strtoll(s, &end, 10);
    if (errno != 0 || *end != '\0' || v <= 0)
        return err_set(err, -ENOENT, "no job '%.40s'", s);
    *id = v;
    return 0;
}

static bool
job_visible(const struct api_req *r, const char *owner)
{
    return r->who.operator || strcmp(r->who.user, owner) == 0;
}

int
api_job_load_visible(struct schedd *sd, const struct api_req *r, int64_t id,
    struct job **out, struct err *err)
{
    int rc = db_job_get(sd->db, id, out);

    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "no job %lld", (long long)id);
    if (rc < 0)
        return rc;
    if (!job_visible(r, (*out)->user)) {
        job_destroy(*out);
        *out = NULL;
        return err_set(err, -EPERM, "job %lld belongs to another user",
            (long long)id);
    }
    return 0;
}

/* ---- handlers ----------------------------------------------------------- */

int
api_jobs_submit(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *job = NULL;
    char subject[32];
    cJSON *json = NULL, *detail, *o;
    int rc;

    if ((rc = api_body_json(r->http, &json, err)) < 0)
        return rc;
    job = job_create();
    rc = proto_job_spec_from_json(json, &job->spec, err);
    cJSON_Delete(json);
    if (rc < 0) {
        job_destroy(job);
        return rc;
    }
    job->user = xstrdup(r->who.user);
    job->state = JOB_STATE_PENDING;
    job->submit_ms = timeid_now_ms();
    rc = db_job_insert(sd->db, job);
    if (rc < 0) {
        job_destroy(job);
        return schedd_db_error(sd, rc);
    }
    snprintf(subject, sizeof(subject), "job/%lld", (long long)job->id);
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "name", job->spec.name);
    jsonx_add_int(detail, "nodes", job->spec.nodes);
    jsonx_add_int(detail, "ranks_per_node", job->spec.ranks_per_node);
    jsonx_add_int(detail, "gpus_per_node", job->spec.gpus_per_node);
    jsonx_add_int(detail, "priority", job->spec.priority);
    rc = schedd_event(sd, r->who.user, subject, "job_submitted", detail);
    if (rc < 0) {
        job_destroy(job);
        return rc;
    }
    job_table_add(&sd->jobs, job);
    schedd_sched_trigger(sd);
    log_info("job=%lld submitted by %s name=%s nodes=%d", (long long)job->id,
        job->user, job->spec.name, job->spec.nodes);
    o = job_json(sd, job);
    {
        struct goodput none;

        memset(&none, 0, sizeof(none));
        cJSON_AddArrayToObject(o, "checkpoints");
        cJSON_AddItemToObject(o, "goodput", api_goodput_json(&none,
            job->spec.nodes * job->spec.ranks_per_node));
    }
    cJSON_AddArrayToObject(o, "attempts");
    http_resp_json(resp, 201, o);
    return 0;
}

struct jobs_list_ctx {
    struct schedd *sd;
    cJSON *arr;
};

static int
jobs_list_add(struct job *job, void *arg)
{
    struct jobs_list_ctx *ctx = arg;

    cJSON_AddItemToArray(ctx->arr, job_json(ctx->sd, job));
    return 0;
}

static bool
query_flag(const struct http_req *req, const char *key)
{
    char buf[8];

    if (http_query_get(req, key, buf, sizeof(buf)) == NULL)
        return false;
    return strcmp(buf, "1") == 0 || strcmp(buf, "true") == 0 ||
           strcmp(buf, "yes") == 0 || buf[0] == '\0';
}

int
api_jobs_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct db_job_filter filter = { 0 };
    struct jobs_list_ctx ctx = { sd, NULL };
    char state[32], user[API_USER_MAX + 1];
    int rc;

    filter.all = query_flag(r->http, "all");
    if (http_query_get(r->http, "state", state, sizeof(state))) {
        for (char *c = state; *c; c++)
            *c = (char)toupper((unsigned char)*c);
        if (job_state_parse(state, &filter.state) < 0)
            return err_set(err, -EINVAL,
                "query parameter 'state': unknown job state '%s'", state);
        filter.has_state = true;
        /* Asking for a state is asking for it, finished or not. */
        filter.all = true;
    }
    if (http_query_get(r->http, "user", user, sizeof(user)) && user[0]) {
        if (!r->who.operator && strcmp(user, r->who.user) != 0)
            return err_set(err, -EPERM,
                "only operators may list other users' jobs");
        filter.user = user;
    }
    if (!r->who.operator)
        filter.user = r->who.user;
    ctx.arr = cJSON_CreateArray();
    rc = db_jobs_foreach(sd->db, &filter, jobs_list_add, &ctx);
    if (rc < 0) {
        cJSON_Delete(ctx.arr);
        return rc;
    }
    http_resp_json(resp, 200, ctx.arr);
    return 0;
}

int
api_jobs_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *job = NULL;
    cJSON *o;
    int64_t id;
    int rc;

    if ((rc = api_job_id_parse(r->arg, &id, err)) < 0 ||
        (rc = api_job_load_visible(sd, r, id, &job, err)) < 0)
        return rc;
    rc = job_view(sd, job, &o);
    job_destroy(job);
    if (rc < 0)
        return rc;
    http_resp_json(resp, 200, o);
    return 0;
}

/* The job's latest attempt if it is still live (active, or failed and
 * tearing down), else NULL. */
static struct attempt *
latest_attempt(struct schedd *sd, const struct job *job)
{
    if (job->cur)
        return job->cur;
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        if (a->job_id == job->id && a->num == job->attempt)
            return a;
    }
    return NULL;
}

int
api_jobs_checkpoint(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    static const char *const keys[] = { "version", "attempt", "step", "rank",
        NULL };
    struct job *live, *stored = NULL;
    struct attempt *a;
    int64_t id, attempt = 0, step = 0, rank = 0;
    int committed = 0;
    cJSON *json = NULL, *o;
    int rc;

    if ((rc = api_job_id_parse(r->arg, &id, err)) < 0)
        return rc;
    if ((rc = api_body_json(r->http, &json, err)) < 0)
        return rc;
    if ((rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_int(json, "attempt", true, 1, INT32_MAX, &attempt,
             err)) < 0 ||
        (rc = jsonx_get_int(json, "step", true, 0, INT64_MAX / 2, &step,
             err)) < 0 ||
        (rc = jsonx_get_int(json, "rank", true, 0, INT32_MAX, &rank,
             err)) < 0) {
        cJSON_Delete(json);
        return rc;
    }
    cJSON_Delete(json);
    live = job_table_find(&sd->jobs, id);
    if (live == NULL) {
        /* Unknown (404), not yours (403), or finished: nothing counts. */
        if (r->who.agent)
            rc = db_job_get(sd->db, id, &stored) == 0
                     ? 0
                     : err_set(err, -ENOENT, "no job %lld", (long long)id);
        else
            rc = api_job_load_visible(sd, r, id, &stored, err);
        job_destroy(stored);
        if (rc < 0)
            return rc;
        return err_set(err, -EEXIST, "job %lld is finished", (long long)id);
    }
    if (!r->who.agent && !job_visible(r, live->user))
        return err_set(err, -EPERM, "job %lld belongs to another user",
            (long long)id);
    a = latest_attempt(sd, live);
    if (attempt != live->attempt || a == NULL) {
        char subject[32];
        cJSON *detail = cJSON_CreateObject();

        snprintf(subject, sizeof(subject), "job/%lld", (long long)id);
        jsonx_add_int(detail, "attempt", attempt);
        jsonx_add_int(detail, "current", live->attempt);
        jsonx_add_int(detail, "step", step);
        jsonx_add_int(detail, "rank", rank);
        jsonx_add_str(detail, "ignored", "checkpoint commit");
        rc = schedd_event(sd, r->who.agent ? r->who.node : r->who.user,
            subject, "stale_attempt_rejected", detail);
        if (rc < 0)
            return rc;
        http_resp_error(resp, 409, "stale_attempt", "attempt %lld is not "
            "the current attempt of job %lld (%d)%s", (long long)attempt,
            (long long)id, live->attempt,
            a == NULL && attempt == live->attempt ? ", which has ended"
                                                  : "");
        return 0;
    }
    if ((size_t)rank >= a->nranks)
        return err_set(err, -EINVAL, "field 'rank': must be between 0 and "
            "%zu (the world size is %zu)", a->nranks - 1, a->nranks);
    rc = schedd_ckpt_commit(sd, live, a, (int)rank, step, "api",
        &committed);
    if (rc < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "step", step);
    jsonx_add_int(o, "committed", committed);
    jsonx_add_int(o, "world_size", (int64_t)a->nranks);
    /* True also when a later step is complete: this one can no longer
     * matter for a resume. */
    cJSON_AddBoolToObject(o, "complete", step <= live->ckpt_step);
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_jobs_cancel(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *live, *job = NULL;
    cJSON *o;
    int64_t id;
    int rc;

    if ((rc = api_job_id_parse(r->arg, &id, err)) < 0)
        return rc;
    live = job_table_find(&sd->jobs, id);
    if (live) {
        if (!job_visible(r, live->user))
            return err_set(err, -EPERM, "job %lld belongs to another user",
                (long long)id);
        rc = schedd_job_cancel(sd, live, r->who.user);
        if (rc < 0)
            return err_set(err, rc, "cannot cancel job %lld",
                (long long)id);
    }
    /* Finished jobs (and the one just cancelled) are shown as stored. */
    if ((rc = api_job_load_visible(sd, r, id, &job, err)) < 0)
        return rc;
    rc = job_view(sd, job, &o);
    job_destroy(job);
    if (rc < 0)
        return rc;
    http_resp_json(resp, 200, o);
    return 0;
}
