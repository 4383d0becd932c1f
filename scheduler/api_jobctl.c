/*
 * api_jobctl.c - hold, release and requeue (api_jobctl.h): parse, call
 * jobs.h or planned.h, format
 */
#include "scheduler/api_jobctl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonx.h"
#include "scheduler/api_view.h"
#include "scheduler/jobs.h"
#include "scheduler/planned.h"

/*
 * The live job of the request, which op may be done to: 0 with *out set;
 * 0 with *out NULL when the reply is written (409: the refusal); or an
 * error (a bad id, 404, 403).
 */
static int
control_job(struct schedd *sd, const struct api_req *r, enum job_control op,
    struct http_resp *resp, struct job **out, struct err *err)
{
    char why[JOB_CONTROL_WHY_MAX];
    struct job *stored = NULL, *live;
    const char *code;
    int64_t id;
    int rc;

    *out = NULL;
    if ((rc = api_req_job_id(r, &id, err)) < 0)
        return rc;
    live = job_table_find(&sd->jobs, id);
    if (live == NULL && (rc = api_req_job_load(sd, r, id, &stored, err)) < 0)
        return rc;
    if (live && !api_req_may_see(r, live->user))
        return err_set(err, -EPERM, "job %lld belongs to another user",
            (long long)id);
    code = job_control_refusal(live ? live : stored, op, why, sizeof(why));
    job_destroy(stored);
    if (code == NULL && live == NULL) {
        /* Every unfinished job is in the model: this one has ended. */
        code = "ended";
        snprintf(why, sizeof(why), "job %lld already ended", (long long)id);
    }
    if (code)
        http_resp_error(resp, 409, code, "%s", why);
    else
        *out = live;
    return 0;
}

/* 200 with the view of live job (the env's values are its owner's). */
static int
reply_live(struct schedd *sd, const struct api_req *r, const struct job *job,
    struct http_resp *resp)
{
    cJSON *o;
    int rc = api_view_job_full(sd, job, &o);

    if (rc < 0)
        return rc;
    if (strcmp(r->who.user, job->user) != 0)
        api_view_env_names(o);
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_jobs_hold(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *job;
    int rc;

    if ((rc = control_job(sd, r, JOB_CONTROL_HOLD, resp, &job, err)) < 0 ||
        job == NULL)
        return rc;
    if ((rc = jobs_hold(sd, job, r->who.user)) < 0)
        return err_set(err, rc, "cannot hold job %lld", (long long)job->id);
    return reply_live(sd, r, job, resp);
}

int
api_jobs_release(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *job;
    int rc;

    if ((rc = control_job(sd, r, JOB_CONTROL_RELEASE, resp, &job, err)) < 0 ||
        job == NULL)
        return rc;
    if ((rc = jobs_release(sd, job, r->who.user)) < 0)
        return err_set(err, rc, "cannot release job %lld", (long long)job->id);
    return reply_live(sd, r, job, resp);
}

/* No body, or {"version":1,"hold":bool,"checkpoint":bool}. */
static int
requeue_body(const struct api_req *r, bool *hold, bool *checkpoint,
    struct err *err)
{
    static const char *const keys[] = { "version", "hold", "checkpoint", NULL };
    cJSON *json = NULL;
    int rc;

    *hold = false;
    *checkpoint = true;
    if (r->http->body_len == 0)
        return 0;
    if ((rc = api_req_body(r, &json, err)) < 0)
        return rc;
    if ((rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0 &&
        (rc = jsonx_get_bool(json, "hold", false, hold, err)) == 0)
        rc = jsonx_get_bool(json, "checkpoint", false, checkpoint, err);
    cJSON_Delete(json);
    return rc;
}

int
api_jobs_requeue(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    bool hold, checkpoint, waiting = false;
    struct job *job;
    int rc;

    if ((rc = requeue_body(r, &hold, &checkpoint, err)) < 0 ||
        (rc = control_job(sd, r, JOB_CONTROL_REQUEUE, resp, &job, err)) < 0 ||
        job == NULL)
        return rc;
    rc = checkpoint ? planned_requeue(sd, job, r->who.user, hold, &waiting)
                    : jobs_requeue(sd, job, r->who.user, hold);
    if (rc < 0)
        return err_set(err, rc, "cannot requeue job %lld", (long long)job->id);
    return reply_live(sd, r, job, resp);
}
