/*
 * api_req.c - request parsing and error mapping shared by the handlers
 */
#include "scheduler/api_req.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

/* The stable code word for a 400 from the validator's message. */
static const char *
bad_request_word(const char *msg)
{
    static const struct {
        const char *prefix;
        const char *word;
    } words[] = {
        { "invalid JSON", "invalid_json" },
        { "unknown field", "unknown_field" },
        { "missing field", "missing_field" },
        { "field ", "invalid_field" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(words); i++) {
        if (strncmp(msg, words[i].prefix, strlen(words[i].prefix)) == 0)
            return words[i].word;
    }
    return "bad_request";
}

/* The status, code word and default message of an errno. */
static int
error_status(int rc, const char **code, const char **dflt)
{
    static const struct {
        int rc;
        int status;
        const char *code;
        const char *dflt;
    } map[] = {
        { -EACCES, 401, "unauthorized", "no or bad credential" },
        { -EPERM, 403, "forbidden", "not allowed" },
        { -ENOENT, 404, "not_found", "not found" },
        { -EEXIST, 409, "conflict", "conflict" },
        { -EALREADY, 409, "conflict", "conflict" },
        { -E2BIG, 413, "too_large", "request too large" },
        { -EMSGSIZE, 413, "too_large", "request too large" },
        { -EUSERS, 503, "overloaded", "too many connections; retry later" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(map); i++) {
        if (map[i].rc == rc) {
            *code = map[i].code;
            *dflt = map[i].dflt;
            return map[i].status;
        }
    }
    *code = "internal";
    *dflt = "internal error";
    return 500;
}

void
api_req_error(struct http_resp *resp, int rc, const struct err *err)
{
    const char *msg = err && err->msg[0] ? err->msg : NULL;
    const char *code, *dflt;
    int status;

    switch (rc) {
    case -EINVAL:
        http_resp_error(resp, 400, bad_request_word(msg ? msg : ""), "%s",
            msg ? msg : "bad request");
        return;
    case -EIO:
    case -ENOSPC:
    case -EDQUOT:
    case -EROFS:
    case -EBUSY:
    case -EAGAIN:
        /* The message is schedd_unavailable_msg's (api.c) or the default;
         * a handler's own text for these codes is not for users. */
        http_resp_error(resp, 503, "unavailable", "%s",
            msg && rc != -EBUSY && rc != -EAGAIN
                ? msg
                : "the database cannot accept changes now; nothing was "
                  "accepted, retry later");
        http_resp_header(resp, "Retry-After", "5");
        return;
    }
    status = error_status(rc, &code, &dflt);
    http_resp_error(resp, status, code, "%s", msg ? msg : dflt);
    if (status == 503)
        http_resp_header(resp, "Retry-After", "5");
}

void
api_req_unavailable(struct schedd *sd, struct http_resp *resp)
{
    char msg[200];

    if (sd->db_errno == -ENOSPC || sd->db_errno == -EDQUOT ||
        sd->db_errno == -EROFS)
        schedd_unavailable_msg(sd, sd->db_errno, msg, sizeof(msg));
    else
        snprintf(msg, sizeof(msg),
            "the scheduler is reloading its state; "
            "retry");
    http_resp_error(resp, 503, "unavailable", "%s", msg);
    http_resp_header(resp, "Retry-After", "5");
}

int
api_req_own_node(const struct api_req *r, const char *node, struct err *err)
{
    if (strcmp(node, r->who.node) != 0)
        return err_set(err, -EPERM,
            "the credential is for node '%s', not '%.64s'", r->who.node, node);
    return 0;
}

int
api_req_node_param(const struct api_req *r, char *buf, size_t len,
    struct err *err)
{
    if (http_query_get(r->http, "node", buf, len) == NULL)
        return err_set(err, -EINVAL, "missing field 'node' (query)");
    return api_req_own_node(r, buf, err);
}

int
api_req_body(const struct api_req *r, cJSON **out, struct err *err)
{
    int rc = jsonx_parse(r->http->body, r->http->body_len, out, err);

    if (rc < 0)
        return rc;
    if (!cJSON_IsObject(*out)) {
        cJSON_Delete(*out);
        *out = NULL;
        return err_set(err, -EINVAL,
            "invalid JSON: the body must be a JSON object");
    }
    return 0;
}

int
api_req_query_int(const struct api_req *r, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err)
{
    char buf[32];
    char *end = NULL;
    long long v;

    if (http_query_get(r->http, key, buf, sizeof(buf)) == NULL) {
        /* Absent, or too long to be a number we accept. */
        char big[1024];

        if (http_query_get(r->http, key, big, sizeof(big)) == NULL)
            return -ENOENT;
        return err_set(err, -EINVAL,
            "query parameter '%s': '%.20s...' is not an integer", key, big);
    }
    errno = 0;
    v = strtoll(buf, &end, 10);
    if (buf[0] == '\0' || errno != 0 || *end != '\0')
        return err_set(err, -EINVAL,
            "query parameter '%s': '%s' is not an integer", key, buf);
    if (v < min || v > max)
        return err_set(err, -EINVAL,
            "query parameter '%s': must be between %lld and %lld", key,
            (long long)min, (long long)max);
    *out = v;
    return 0;
}

int
api_req_query_int_required(const struct api_req *r, const char *key,
    int64_t min, int64_t max, int64_t *out, struct err *err)
{
    int rc = api_req_query_int(r, key, min, max, out, err);

    if (rc == -ENOENT)
        return err_set(err, -EINVAL, "missing field '%s' (query)", key);
    return rc;
}

int
api_req_query_int_default(const struct api_req *r, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err)
{
    int rc = api_req_query_int(r, key, min, max, out, err);

    return rc == -ENOENT ? 0 : rc;
}

bool
api_req_query_flag(const struct api_req *r, const char *key)
{
    char buf[8];

    if (http_query_get(r->http, key, buf, sizeof(buf)) == NULL)
        return false;
    return strcmp(buf, "1") == 0 || strcmp(buf, "true") == 0 ||
           strcmp(buf, "yes") == 0 || buf[0] == '\0';
}

int
api_req_query_stream(const struct api_req *r, bool *is_err, struct err *err)
{
    char stream[8];

    *is_err = false;
    if (http_query_get(r->http, "stream", stream, sizeof(stream)) == NULL)
        return 0;
    if (strcmp(stream, "err") == 0)
        *is_err = true;
    else if (strcmp(stream, "out") != 0)
        return err_set(err, -EINVAL,
            "query parameter 'stream': must be out or err");
    return 0;
}

int
api_req_job_id(const struct api_req *r, int64_t *id, struct err *err)
{
    const char *s = r->arg;
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

bool
api_req_may_see(const struct api_req *r, const char *owner)
{
    return r->who.operator|| strcmp(r->who.user, owner) == 0;
}

int
api_req_job_load(struct schedd *sd, const struct api_req *r, int64_t id,
    struct job **out, struct err *err)
{
    int rc = db_job_get(sd->db, id, out);

    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "no job %lld", (long long)id);
    if (rc < 0)
        return rc;
    if (!api_req_may_see(r, (*out)->user)) {
        job_destroy(*out);
        *out = NULL;
        return err_set(err, -EPERM, "job %lld belongs to another user",
            (long long)id);
    }
    return 0;
}

cJSON *
api_req_event_json(const struct db_event *ev)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *detail = cJSON_Parse(ev->detail);

    jsonx_add_int(o, "id", ev->id);
    jsonx_add_int(o, "time_ms", ev->time_ms);
    jsonx_add_str(o, "actor", ev->actor);
    jsonx_add_str(o, "subject", ev->subject);
    jsonx_add_str(o, "kind", ev->kind);
    cJSON_AddItemToObject(o, "detail", detail ? detail : cJSON_CreateObject());
    return o;
}

static int
event_add(const struct db_event *ev, void *arg)
{
    cJSON_AddItemToArray(arg, api_req_event_json(ev));
    return 0;
}

cJSON *
api_req_events(struct schedd *sd, const char *subject, int limit, int *rc)
{
    cJSON *arr = cJSON_CreateArray();

    *rc = db_events_foreach(sd->db, subject, limit, event_add, arr);
    return arr;
}

bool
api_req_may_see_job(const struct api_req *r, struct api_req_seen *seen,
    int64_t id)
{
    struct job *job = NULL;

    if (r->who.operator)
        return true;
    if (seen->job_id != id) {
        seen->job_id = id;
        seen->ok = db_job_get(r->api->sd->db, id, &job) == 0 &&
                   api_req_may_see(r, job->user);
        job_destroy(job);
    }
    return seen->ok;
}

/* What a user sees of another user's job in an event's detail: what the
 * queue shows of it (which job and attempt, what kind of failure, its
 * state, step and times), never its command, environment, output or
 * evidence (docs/api.md "Visibility and permissions"). An allow-list: a
 * key added later is hidden until it is added here. */
static const char *const redact_keep[] = { "job", "attempt", "kind", "status",
    "withdrawn", "time_ms", "from", "to", "state", "step", "node", "rank",
    "section", "windows", NULL };

static bool
redact_kept(const char *key)
{
    for (size_t i = 0; redact_keep[i]; i++)
        if (strcmp(redact_keep[i], key) == 0)
            return true;
    return false;
}

/* Redact o and what it holds: an object that names a job r may not see
 * keeps only the allowed keys; anything else is walked into. Whether
 * anything was removed. */
static bool
redact_walk(const struct api_req *r, struct api_req_seen *seen, cJSON *o,
    int depth)
{
    cJSON *job = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, "job")
                                   : NULL;
    cJSON *item, *next;
    bool removed = false;

    if (depth > 8)
        return false;
    if (cJSON_IsNumber(job) &&
        !api_req_may_see_job(r, seen, (int64_t)job->valuedouble)) {
        for (item = o->child; item; item = next) {
            next = item->next;
            if (item->string == NULL || !redact_kept(item->string)) {
                cJSON_Delete(cJSON_DetachItemViaPointer(o, item));
                removed = true;
            }
        }
        return removed;
    }
    if (cJSON_IsObject(o) || cJSON_IsArray(o)) {
        cJSON_ArrayForEach(item, o) {
            if (redact_walk(r, seen, item, depth + 1))
                removed = true;
        }
    }
    return removed;
}

void
api_req_event_redact(const struct api_req *r, struct api_req_seen *seen,
    cJSON *ev)
{
    cJSON *detail = cJSON_GetObjectItemCaseSensitive(ev, "detail");

    if (r->who.operator|| !cJSON_IsObject(detail))
        return;
    if (redact_walk(r, seen, detail, 0))
        cJSON_AddBoolToObject(detail, "redacted", true);
}

void
api_req_events_redact(const struct api_req *r, cJSON *arr)
{
    struct api_req_seen seen = { 0, false };
    cJSON *ev;

    cJSON_ArrayForEach(ev, arr) {
        api_req_event_redact(r, &seen, ev);
    }
}
