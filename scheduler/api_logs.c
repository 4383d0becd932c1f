/*
 * api_logs.c - GET /v1/jobs/ID/logs (api_logs.h)
 *
 * Two forms: with rank=, one rank's raw bytes (what CLIs before the
 * many-ranks read use, unchanged); without it, many ranks in one reply
 * (common/proto_logs.h frames): the ranks of ranks=A-B (at most
 * PROTO_LOG_RANKS_MAX), each from its offset in offsets=, their output
 * together at most limit bytes. Each rank of the range costs one open of
 * its file, which fails at once for a rank that never wrote (the file
 * does not exist): a range of a 100,000-rank job never walks the job's
 * directory, and a request never opens more than the range's files.
 */
#include "scheduler/api_logs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/proto_logs.h"
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
    q->rank = -1; /* absent: many ranks (logs_many) */
    if ((rc = api_req_job_id(r, &q->id, err)) < 0 ||
        (rc = api_req_query_int_default(r, "rank", 0, INT32_MAX, &q->rank,
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

/* The ranks of job's attempts: its shape (every attempt has it:
 * attempt_build in launch.c), known without loading an attempt's rows,
 * which for a job of 100,000 ranks cost each request O(ranks). */
static int64_t
logs_world(const struct job *job)
{
    return (int64_t)job->spec.nodes * job->spec.ranks_per_node;
}

/* Check that the attempt and rank of q exist. */
static int
logs_check(const struct job *job, const struct logs_query *q, struct err *err)
{
    if (q->attempt > job->attempt)
        return err_set(err, -ENOENT, "job %lld has no attempt %lld",
            (long long)q->id, (long long)q->attempt);
    if (q->rank >= logs_world(job))
        return err_set(err, -ENOENT,
            "job %lld has no rank %lld (world size %lld)", (long long)q->id,
            (long long)q->rank, (long long)logs_world(job));
    return 0;
}

/* The many-ranks form's query: the range and each rank's offset. */
struct logs_many {
    int64_t first, last;
    int64_t off[PROTO_LOG_RANKS_MAX];
    size_t noff;
};

static int
logs_many_query(const struct api_req *r, int64_t world, struct logs_many *m,
    struct err *err)
{
    char buf[16400]; /* more than a request's head may hold (http.h) */
    int rc;

    m->first = 0;
    m->last = world - 1;
    m->noff = 0;
    if (http_query_get(r->http, "ranks", buf, sizeof(buf)) &&
        (rc = proto_log_ranks_parse(buf, INT32_MAX, &m->first, &m->last, err)) <
            0)
        return rc;
    if (m->first >= world)
        return err_set(err, -ENOENT,
            "the job has no rank %lld (world size %lld)", (long long)m->first,
            (long long)world);
    if (m->last >= world)
        m->last = world - 1;
    if (m->last - m->first >= PROTO_LOG_RANKS_MAX)
        m->last = m->first + PROTO_LOG_RANKS_MAX - 1;
    if (http_query_get(r->http, "offsets", buf, sizeof(buf)) == NULL)
        return 0; /* absent: every rank from 0 */
    return proto_log_offsets_parse(buf, m->off,
        (size_t)(m->last - m->first + 1), &m->noff, err);
}

/* Each rank of m from its offset, in rank order, until q->limit bytes
 * are in the body; X-Lockstep-Log-More names the first rank that may
 * hold more than was sent (the limit was reached). */
static int
logs_many_read(struct schedd *sd, const struct logs_query *q,
    const struct logs_many *m, struct http_resp *resp)
{
    struct sbuf chunk;
    int64_t left = q->limit, more = -1;
    int rc = 0;

    sbuf_init(&chunk);
    for (int64_t rank = m->first; rank <= m->last && rc == 0; rank++) {
        size_t i = (size_t)(rank - m->first);
        int64_t off = i < m->noff ? m->off[i] : 0, size = 0, start = 0;

        if (left == 0) {
            more = rank;
            break;
        }
        sbuf_reset(&chunk);
        rc = logstore_read(sd->logs, q->id, (int)q->attempt, (int)rank,
            q->err_stream, off, (size_t)left, &chunk, &size, &start);
        if (rc < 0 || (chunk.len == 0 && start == off))
            continue;
        proto_log_frame_add(&resp->body, rank, start, size, chunk.buf,
            chunk.len);
        left -= (int64_t)chunk.len;
        if (left == 0 && start + (int64_t)chunk.len < size)
            more = rank;
    }
    sbuf_release(&chunk);
    if (more >= 0)
        http_resp_header(resp, "X-Lockstep-Log-More", "%lld", (long long)more);
    return rc;
}

/* GET /v1/jobs/ID/logs without rank=: many ranks in one reply. */
static int
logs_many(struct schedd *sd, const struct api_req *r, struct logs_query *q,
    const struct job *job, struct http_resp *resp, struct err *err)
{
    struct logs_many m;
    int rc;

    if (q->attempt > job->attempt)
        return err_set(err, -ENOENT, "job %lld has no attempt %lld",
            (long long)q->id, (long long)q->attempt);
    if ((rc = logs_many_query(r, logs_world(job), &m, err)) < 0)
        return rc;
    if ((rc = logs_many_read(sd, q, &m, resp)) < 0)
        return err_set(err, -EFAULT, "cannot read the log: %s", strerror(-rc));
    resp->status = 200;
    resp->content_type = "application/vnd.lockstep.log-frames";
    http_resp_header(resp, "X-Lockstep-Log-Ranks", "%lld-%lld",
        (long long)m.first, (long long)m.last);
    http_resp_header(resp, "X-Lockstep-Job-State", "%s",
        proto_job_state_str(job->state));
    http_resp_header(resp, "X-Lockstep-Attempt", "%lld", (long long)q->attempt);
    return 0;
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
    else if (q.rank < 0)
        rc = logs_many(sd, r, &q, job, resp, err);
    else
        rc = logs_check(job, &q, err);
    if (rc == 0 && q.rank >= 0 &&
        (rc = logstore_read(sd->logs, q.id, (int)q.attempt, (int)q.rank,
             q.err_stream, q.offset, (size_t)q.limit, &resp->body, &size,
             &start)) < 0)
        rc = err_set(err, -EFAULT, "cannot read the log: %s", strerror(-rc));
    if (rc == 0 && q.rank >= 0) {
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
