/*
 * api_logs.c - GET /v1/jobs/ID/logs (api_logs.h)
 */
#include "scheduler/api_logs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "scheduler/db.h"
#include "scheduler/logstore.h"

#define API_LOG_LIMIT_MAX (1024 * 1024)

struct logs_query {
    int64_t id;
    int64_t rank;
    int64_t attempt; /* 0: the latest */
    int64_t offset;
    int64_t limit;
    bool err_stream;
};

static int
logs_query(const struct api_req *r, struct logs_query *q, struct err *err)
{
    int rc;

    memset(q, 0, sizeof(*q));
    q->limit = API_LOG_LIMIT_MAX;
    if ((rc = api_req_job_id(r, &q->id, err)) < 0 ||
        (rc = api_req_query_int_required(r, "rank", 0, INT32_MAX, &q->rank,
             err)) < 0 ||
        (rc = api_req_query_int_default(r, "attempt", 1, INT32_MAX, &q->attempt,
             err)) < 0 ||
        (rc = api_req_query_int_default(r, "offset", 0, INT64_MAX / 2,
             &q->offset, err)) < 0 ||
        (rc = api_req_query_int_default(r, "limit", 0, INT64_MAX / 2, &q->limit,
             err)) < 0 ||
        (rc = api_req_query_stream(r, &q->err_stream, err)) < 0)
        return rc;
    if (q->limit > API_LOG_LIMIT_MAX)
        q->limit = API_LOG_LIMIT_MAX;
    return 0;
}

/* Check that the attempt and rank of q exist. */
static int
logs_check(struct schedd *sd, const struct logs_query *q, struct err *err)
{
    struct attempt *a = NULL;
    int rc = db_attempt_get(sd->db, q->id, (int)q->attempt, &a);

    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "job %lld has no attempt %lld",
            (long long)q->id, (long long)q->attempt);
    if (rc < 0)
        return rc;
    if ((size_t)q->rank >= a->nranks)
        rc = err_set(err, -ENOENT,
            "job %lld has no rank %lld (world size "
            "%zu)",
            (long long)q->id, (long long)q->rank, a->nranks);
    attempt_destroy(a);
    return rc;
}

int
api_logs_get(struct schedd *sd, const struct api_req *r, struct http_resp *resp,
    struct err *err)
{
    struct logs_query q;
    struct job *job = NULL;
    int64_t size = 0, start = 0;
    int rc;

    if ((rc = logs_query(r, &q, err)) < 0 ||
        (rc = api_req_job_load(sd, r, q.id, &job, err)) < 0)
        return rc;
    if (q.attempt == 0)
        q.attempt = job->attempt;
    if (q.attempt == 0)
        rc = err_set(err, -ENOENT, "job %lld has not started yet",
            (long long)q.id);
    else
        rc = logs_check(sd, &q, err);
    if (rc == 0 && (rc = logstore_read(sd->logs, q.id, (int)q.attempt,
                        (int)q.rank, q.err_stream, q.offset, (size_t)q.limit,
                        &resp->body, &size, &start)) < 0)
        rc = err_set(err, -EFAULT, "cannot read the log: %s", strerror(-rc));
    if (rc == 0) {
        resp->status = 200;
        resp->content_type = "application/octet-stream";
        http_resp_header(resp, "X-Lockstep-Log-Size", "%lld", (long long)size);
        /* Where the body starts: past the asked offset when the output
         * there was dropped (log_max_bytes_per_job). */
        http_resp_header(resp, "X-Lockstep-Log-Offset", "%lld",
            (long long)start);
        http_resp_header(resp, "X-Lockstep-Job-State", "%s",
            proto_job_state_str(job->state));
        http_resp_header(resp, "X-Lockstep-Attempt", "%lld",
            (long long)q.attempt);
    }
    job_destroy(job);
    return rc;
}
