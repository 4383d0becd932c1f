/*
 * api_jobs.c - the job endpoints (api_jobs.h): parse, call jobs.h, format
 */
#include "scheduler/api_jobs.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "scheduler/api_view.h"
#include "scheduler/cadences.h"
#include "scheduler/db.h"
#include "scheduler/jobs.h"
#include "scheduler/planned.h"
#include "scheduler/stats.h"

/* Priority above the default (0) needs the operator role; lowering one's
 * own is anyone's (docs/api.md "Visibility and permissions"). A refusal
 * is a request_refused event (api.c records every 403). */
static int
check_priority(const struct api_req *r, const struct proto_job_spec *spec,
    struct err *err)
{
    if (spec->priority <= 0 || r->who.operator)
        return 0;
    return err_set(err, -EPERM,
        "priority %d is above the default (0): raising a job's priority "
        "needs the operator role",
        spec->priority);
}

/* The 429 of a per-user limit. */
static int
submit_refused(struct http_resp *resp, const char *why, int64_t retry_s)
{
    http_resp_error(resp, 429, "too_many_requests", "%s", why);
    http_resp_header(resp, "Retry-After", "%lld", (long long)retry_s);
    return 0;
}

/* What a spec must pass before it is submitted: the priority rule, its
 * resume point, the fit check (-ERANGE with why). */
static int
submit_check(struct schedd *sd, const struct api_req *r,
    struct proto_job_spec *spec, char *why, size_t len, struct err *err)
{
    int rc = check_priority(r, spec, err);

    if (rc == 0)
        rc = jobs_resolve_resume(sd, spec, r->who.user, r->who.operator, err);
    if (rc == 0)
        rc = jobs_check_fits(sd, spec, why, len);
    return rc;
}

/* A batch (docs/api.md "Many jobs in one request"): every spec is checked
 * before any is submitted; then all go in, in this iteration's one
 * transaction (one commit, one fsync). */
static int
submit_batch(struct schedd *sd, const struct api_req *r, const cJSON *json,
    struct http_resp *resp, struct err *err)
{
    char why[JOBS_REFUSAL_MAX], at[32] = "";
    struct proto_job_spec *specs = NULL;
    int64_t retry_s = 0, *ids = NULL;
    size_t n = 0, i = 0;
    int rc;

    if ((rc = proto_job_batch_from_json(json, &specs, &n, err)) < 0)
        return rc;
    rc = jobs_quota(sd, r->who.user, r->who.operator, n, why, sizeof(why),
        &retry_s);
    for (; rc == 0 && i < n; i++) {
        snprintf(at, sizeof(at), "jobs[%zu]: ", i);
        rc = submit_check(sd, r, &specs[i], why, sizeof(why), err);
    }
    if (rc == 0) {
        at[0] = '\0';
        rc = jobs_submit_many(sd, r->who.user, specs, n, &ids);
    }
    for (i = 0; i < n; i++)
        proto_job_spec_release(&specs[i]);
    free(specs);
    if (rc == -EBUSY)
        return submit_refused(resp, why, retry_s);
    if (rc == -ERANGE)
        http_resp_error(resp, 422, "unsatisfiable", "%s%s", at, why);
    else if (rc < 0 && err->code != 0)
        err_prefix(err, "%s", at);
    else if (rc == 0)
        http_resp_json(resp, 201, api_view_job_ids(ids, n));
    free(ids);
    return rc == -ERANGE ? 0 : rc;
}

int
api_jobs_submit(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_job_spec spec;
    struct job *job = NULL;
    cJSON *json = NULL;
    char why[JOBS_REFUSAL_MAX];
    int64_t retry_s = 0;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    if (proto_job_batch_is(json)) {
        rc = submit_batch(sd, r, json, resp, err);
        cJSON_Delete(json);
        return rc;
    }
    if ((rc = jobs_quota(sd, r->who.user, r->who.operator, 1, why, sizeof(why),
             &retry_s)) == 0)
        rc = proto_job_spec_from_json(json, &spec, err);
    cJSON_Delete(json);
    if (rc == -EBUSY)
        return submit_refused(resp, why, retry_s);
    if (rc < 0)
        return rc;
    if ((rc = submit_check(sd, r, &spec, why, sizeof(why), err)) == 0)
        rc = jobs_submit(sd, r->who.user, &spec, &job);
    proto_job_spec_release(&spec);
    if (rc == -ERANGE) {
        http_resp_error(resp, 422, "unsatisfiable", "%s", why);
        return 0;
    }
    if (rc < 0)
        return rc;
    http_resp_json(resp, 201, api_view_job_new(sd, job));
    return 0;
}

#define API_JOBS_LIMIT_MAX 100000

/* ?state as a job state (upper-cased), into the filter. */
static int
filter_state(const struct api_req *r, struct db_job_filter *filter,
    struct err *err)
{
    char state[32];

    if (!http_query_get(r->http, "state", state, sizeof(state)))
        return 0;
    for (char *c = state; *c; c++)
        *c = (char)toupper((unsigned char)*c);
    if (proto_job_state_parse(state, &filter->state) < 0)
        return err_set(err, -EINVAL,
            "query parameter 'state': unknown job state '%s'", state);
    filter->has_state = true;
    /* Asking for a state is asking for it, finished or not. */
    filter->all = true;
    return 0;
}

/* The listing's filter from ?all, ?state, ?user, ?name and ?limit; the
 * buffers user and name hold what the filter points at. */
static int
list_filter(const struct api_req *r, struct db_job_filter *filter, char *user,
    size_t ulen, char *name, size_t nlen, struct err *err)
{
    int rc;

    memset(filter, 0, sizeof(*filter));
    filter->all = api_req_query_flag(r, "all");
    if ((rc = filter_state(r, filter, err)) < 0 ||
        (rc = api_req_query_int_default(r, "limit", 1, API_JOBS_LIMIT_MAX,
             &filter->limit, err)) < 0)
        return rc;
    if (http_query_get(r->http, "name", name, nlen) && name[0])
        filter->name = name;
    if (http_query_get(r->http, "user", user, ulen) && user[0]) {
        if (!r->who.operator&& strcmp(user, r->who.user) != 0)
            return err_set(err, -EPERM,
                "only operators may list other users' jobs");
        filter->user = user;
    }
    if (!r->who.operator)
        filter->user = r->who.user;
    return 0;
}

struct list_ctx {
    struct schedd *sd;
    const struct api_req *r;
    cJSON *arr;
    bool goodput; /* add each job's goodput (history) */
};

/* The job's env values are its owner's to see (docs/api.md). */
static cJSON *
view_for(const struct api_req *r, const struct job *job, cJSON *o)
{
    if (strcmp(r->who.user, job->user) != 0)
        api_view_env_names(o);
    return o;
}

static int
list_add(struct job *job, void *arg)
{
    struct list_ctx *ctx = arg;
    cJSON *o = view_for(ctx->r, job, api_view_job(ctx->sd, job));
    struct goodput g;
    int rc;

    cJSON_AddItemToArray(ctx->arr, o);
    if (!ctx->goodput)
        return 0;
    if ((rc = stats_job(ctx->sd, job->id, &g)) < 0)
        return rc;
    cJSON_AddItemToObject(o, "goodput",
        api_view_goodput(&g, job->spec.nodes * job->spec.ranks_per_node));
    return 0;
}

/* Reply with the jobs the filter selects, as a JSON array. */
static int
reply_list(struct list_ctx *ctx, const struct db_job_filter *filter,
    struct http_resp *resp)
{
    int rc;

    ctx->arr = cJSON_CreateArray();
    /* Unfinished jobs are all in the model: no sort of every row. */
    if (jobs_filter_live(filter))
        rc = jobs_foreach_live(ctx->sd, filter, list_add, ctx);
    else
        rc = db_jobs_foreach(ctx->sd->db, filter, list_add, ctx);
    if (rc < 0) {
        cJSON_Delete(ctx->arr);
        return rc;
    }
    http_resp_json(resp, 200, ctx->arr);
    return 0;
}

int
api_jobs_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct db_job_filter filter;
    struct list_ctx ctx = { sd, r, NULL, false };
    char user[AUTH_USER_MAX + 1], name[PROTO_NAME_MAX * 4 + 1];
    int rc;

    if ((rc = list_filter(r, &filter, user, sizeof(user), name, sizeof(name),
             err)) < 0)
        return rc;
    return reply_list(&ctx, &filter, resp);
}

int
api_jobs_history(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct db_job_filter filter;
    struct list_ctx ctx = { sd, r, NULL, true };
    char user[AUTH_USER_MAX + 1], name[PROTO_NAME_MAX * 4 + 1];
    int rc;

    if ((rc = list_filter(r, &filter, user, sizeof(user), name, sizeof(name),
             err)) < 0 ||
        (rc = api_req_query_int_default(r, "since", 0, INT64_MAX / 2,
             &filter.ended_from, err)) < 0)
        return rc;
    if (filter.has_state && !proto_job_state_finished(filter.state))
        return err_set(err, -EINVAL,
            "query parameter 'state': %s is not a final state (history "
            "holds SUCCEEDED, FAILED and CANCELLED jobs)",
            proto_job_state_str(filter.state));
    filter.ended = true;
    return reply_list(&ctx, &filter, resp);
}

/* The full view of job id as stored (finished jobs too). */
static int
reply_job(struct schedd *sd, const struct api_req *r, int64_t id,
    struct http_resp *resp, struct err *err)
{
    struct job *job = NULL;
    cJSON *o;
    int rc;

    if ((rc = api_req_job_load(sd, r, id, &job, err)) < 0)
        return rc;
    rc = api_view_job_full(sd, job, &o);
    if (rc == 0)
        view_for(r, job, o);
    job_destroy(job);
    if (rc < 0)
        return rc;
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_jobs_get(struct schedd *sd, const struct api_req *r, struct http_resp *resp,
    struct err *err)
{
    int64_t id;
    int rc;

    if ((rc = api_req_job_id(r, &id, err)) < 0)
        return rc;
    return reply_job(sd, r, id, resp, err);
}

/* No body, or {"version":1,"checkpoint":true|false}. */
static int
cancel_body(const struct api_req *r, bool *checkpoint, struct err *err)
{
    static const char *const keys[] = { "version", "checkpoint", NULL };
    cJSON *json = NULL;
    int rc;

    *checkpoint = false;
    if (r->http->body_len == 0)
        return 0;
    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    if ((rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0)
        rc = jsonx_get_bool(json, "checkpoint", false, checkpoint, err);
    cJSON_Delete(json);
    return rc;
}

int
api_jobs_cancel(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    bool checkpoint, waiting = false;
    struct job *live;
    int64_t id;
    int rc;

    if ((rc = api_req_job_id(r, &id, err)) < 0)
        return rc;
    if ((rc = cancel_body(r, &checkpoint, err)) < 0)
        return rc;
    live = job_table_find(&sd->jobs, id);
    if (live) {
        if (!api_req_may_see(r, live->user))
            return err_set(err, -EPERM, "job %lld belongs to another user",
                (long long)id);
        rc = checkpoint ? planned_cancel(sd, live, r->who.user, &waiting)
                        : jobs_cancel(sd, live, r->who.user);
        if (rc < 0)
            return err_set(err, rc, "cannot cancel job %lld", (long long)id);
    }
    /* Finished jobs (and the one just cancelled) are shown as stored. */
    return reply_job(sd, r, id, resp, err);
}

/* {"version":1,"attempt":A,"step":S,"rank":R} */
static int
commit_body(const struct api_req *r, int64_t *attempt, int64_t *step,
    int64_t *rank, struct err *err)
{
    static const char *const keys[] = { "version", "attempt", "step", "rank",
        NULL };
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    if ((rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_int(json, "attempt", true, 1, INT32_MAX, attempt,
             err)) < 0 ||
        (rc = jsonx_get_int(json, "step", true, 0, INT64_MAX / 2, step, err)) <
            0 ||
        (rc = jsonx_get_int(json, "rank", true, 0, INT32_MAX, rank, err)) < 0) {
        cJSON_Delete(json);
        return rc;
    }
    cJSON_Delete(json);
    return 0;
}

/* The live job id for a commit of attempt: unknown (404), not yours
 * (403), or finished (409: nothing counts any more). An agent commits
 * only for the current attempt's nodes (403 for another node's); an
 * attempt that is not the current one is left to the stale check. */
static int
commit_job(struct schedd *sd, const struct api_req *r, int64_t id,
    int64_t attempt, struct job **out, struct err *err)
{
    struct job *stored = NULL;
    struct attempt *a;
    int rc;

    *out = job_table_find(&sd->jobs, id);
    if (*out && r->who.agent) {
        a = schedd_job_latest(sd, *out);
        if (a != NULL && a->num == attempt &&
            attempt_placement_by_node(a, r->who.node) == NULL)
            return err_set(err, -EPERM,
                "node '%s' holds no placement of attempt %lld of job %lld",
                r->who.node, (long long)attempt, (long long)id);
        return 0;
    }
    if (*out) {
        if (!api_req_may_see(r, (*out)->user))
            return err_set(err, -EPERM, "job %lld belongs to another user",
                (long long)id);
        return 0;
    }
    if (r->who.agent)
        rc = db_job_get(sd->db, id, &stored) == 0
                 ? 0
                 : err_set(err, -ENOENT, "no job %lld", (long long)id);
    else
        rc = api_req_job_load(sd, r, id, &stored, err);
    job_destroy(stored);
    return rc < 0
               ? rc
               : err_set(err, -EEXIST, "job %lld is finished", (long long)id);
}

int
api_jobs_checkpoint(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct jobs_commit_result res;
    struct job *live;
    int64_t id, attempt = 0, step = 0, rank = 0;
    cJSON *o;
    int rc;

    if ((rc = api_req_job_id(r, &id, err)) < 0 ||
        (rc = commit_body(r, &attempt, &step, &rank, err)) < 0 ||
        (rc = commit_job(sd, r, id, attempt, &live, err)) < 0)
        return rc;
    rc = jobs_commit(sd, live, (int)attempt, (int)rank, step,
        r->who.agent ? r->who.node : r->who.user, &res, err);
    if (rc == -ESTALE) {
        http_resp_error(resp, 409, "stale_attempt",
            "attempt %lld is not "
            "the current attempt of job %lld (%d)%s",
            (long long)attempt, (long long)id, res.current,
            res.ended ? ", which has ended" : "");
        return 0;
    }
    if (rc < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "step", step);
    jsonx_add_int(o, "committed", res.committed);
    jsonx_add_int(o, "world_size", res.world_size);
    cJSON_AddBoolToObject(o, "complete", res.complete);
    http_resp_json(resp, 200, o);
    return 0;
}

/* {"version":1,"kind":"checkpoint"|"gc"} */
static int
directive_body(const struct api_req *r, enum proto_directive_kind *kind,
    struct err *err)
{
    static const char *const keys[] = { "version", "kind", NULL };
    cJSON *json = NULL;
    char *name = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    if ((rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0 &&
        (rc = jsonx_get_str(json, "kind", true, 32, &name, err)) == 0 &&
        (proto_directive_kind_parse(name, kind) < 0 ||
            proto_directive_target(*kind) != PROTO_TARGET_RANK))
        rc = err_set(err, -EINVAL,
            "field 'kind': '%s' is not one of checkpoint, gc", name);
    free(name);
    cJSON_Delete(json);
    return rc;
}

int
api_jobs_directive(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    enum proto_directive_kind kind;
    struct job *live;
    int64_t id, step;
    uint64_t seq;
    cJSON *o;
    int rc;

    if ((rc = api_req_job_id(r, &id, err)) < 0 ||
        (rc = directive_body(r, &kind, err)) < 0 ||
        (rc = commit_job(sd, r, id, 0, &live, err)) < 0)
        return rc;
    if (live->cur == NULL || live->cur->state != PROTO_ATTEMPT_RUNNING) {
        http_resp_error(resp, 409, "not_running",
            "job %lld is %s, not running: no rank can act on a %s now",
            (long long)id, proto_job_state_str(live->state),
            proto_directive_kind_str(kind));
        return 0;
    }
    rc = cadences_now(sd, live->cur, kind, &step, &seq);
    if (rc == -EAGAIN) {
        http_resp_error(resp, 409, "no_steps",
            "job %lld has not reported steps through the SDK yet "
            "(lockstep.step() in the training loop); try again once it has",
            (long long)id);
        return 0;
    }
    if (rc < 0 && rc != -EBUSY)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "job", id);
    jsonx_add_int(o, "attempt", live->cur->num);
    jsonx_add_str(o, "kind", proto_directive_kind_str(kind));
    jsonx_add_int(o, "seq", (int64_t)seq);
    jsonx_add_int(o, "step", step);
    cJSON_AddBoolToObject(o, "already_pending", rc == -EBUSY);
    http_resp_json(resp, 202, o);
    return 0;
}
