/*
 * api_logs.c - read a rank's shipped stdout/stderr
 *
 * GET /v1/jobs/ID/logs?rank=R[&attempt=N][&stream=out|err][&offset=O]
 * [&limit=L]: raw bytes, with the size held so far and the job's state in
 * headers, so `lockstep logs -f` can poll from its last offset and stop
 * once the job is finished and the size stops growing.
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/db.h"
#include "scheduler/logstore.h"

#define API_LOG_LIMIT_MAX (1024 * 1024)

int
api_logs_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct job *job = NULL;
    struct attempt *a = NULL;
    char stream[8];
    bool err_stream = false;
    int64_t id, rank, attempt = 0, offset = 0, limit = API_LOG_LIMIT_MAX;
    int64_t size = 0;
    int rc;

    if ((rc = api_job_id_parse(r->arg, &id, err)) < 0)
        return rc;
    rc = api_query_int(r->http, "rank", 0, INT32_MAX, &rank, err);
    if (rc == -ENOENT)
        return err_set(err, -EINVAL, "missing field 'rank' (query)");
    if (rc < 0)
        return rc;
    if ((rc = api_query_int(r->http, "attempt", 1, INT32_MAX, &attempt,
             err)) < 0 && rc != -ENOENT)
        return rc;
    if ((rc = api_query_int(r->http, "offset", 0, INT64_MAX / 2, &offset,
             err)) < 0 && rc != -ENOENT)
        return rc;
    if ((rc = api_query_int(r->http, "limit", 0, INT64_MAX / 2, &limit,
             err)) < 0 && rc != -ENOENT)
        return rc;
    if (limit > API_LOG_LIMIT_MAX)
        limit = API_LOG_LIMIT_MAX;
    if (http_query_get(r->http, "stream", stream, sizeof(stream))) {
        if (strcmp(stream, "err") == 0)
            err_stream = true;
        else if (strcmp(stream, "out") != 0)
            return err_set(err, -EINVAL,
                "query parameter 'stream': must be out or err");
    }
    if ((rc = api_job_load_visible(sd, r, id, &job, err)) < 0)
        return rc;
    if (attempt == 0)
        attempt = job->attempt;
    if (attempt == 0) {
        rc = err_set(err, -ENOENT, "job %lld has not started yet",
            (long long)id);
        goto out;
    }
    rc = db_attempt_get(sd->db, id, (int)attempt, &a);
    if (rc == -ENOENT)
        rc = err_set(err, -ENOENT, "job %lld has no attempt %lld",
            (long long)id, (long long)attempt);
    if (rc < 0)
        goto out;
    if ((size_t)rank >= a->nranks) {
        rc = err_set(err, -ENOENT, "job %lld has no rank %lld (world size "
            "%zu)", (long long)id, (long long)rank, a->nranks);
        goto out;
    }
    rc = logstore_read(sd->logs, id, (int)attempt, (int)rank, err_stream,
        offset, (size_t)limit, &resp->body, &size);
    if (rc < 0) {
        rc = err_set(err, -EFAULT, "cannot read the log: %s",
            strerror(-rc));
        goto out;
    }
    resp->status = 200;
    resp->content_type = "application/octet-stream";
    http_resp_header(resp, "X-Lockstep-Log-Size", "%lld", (long long)size);
    http_resp_header(resp, "X-Lockstep-Job-State", "%s",
        job_state_str(job->state));
    http_resp_header(resp, "X-Lockstep-Attempt", "%lld", (long long)attempt);
out:
    attempt_destroy(a);
    job_destroy(job);
    return rc;
}
