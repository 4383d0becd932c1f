/*
 * http_resp.c - building responses, response slots, deferred responses
 *
 * A handler fills the struct http_resp inside a response slot (struct
 * http_out) that the parser made for its request. http_resp_defer() keeps
 * the slot open past the handler (a long poll); http_deferred_finish()
 * marks it ready, and the next check phase writes it in request order
 * (see http_int.h).
 */
#include "scheduler/http_int.h"

#include <assert.h>
#include <stdarg.h>
#include <stdlib.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"

/* --- responses ----------------------------------------------------------- */

static void
http_resp_init(struct http_resp *resp)
{
    resp->status = 200;
    resp->content_type = "application/json";
    sbuf_init(&resp->headers);
    sbuf_init(&resp->body);
    resp->durable = false;
}

void
http_resp_json(struct http_resp *resp, int status, cJSON *json)
{
    assert(json != NULL);
    resp->status = status;
    resp->content_type = "application/json";
    sbuf_reset(&resp->body);
    jsonx_write(&resp->body, json);
    cJSON_Delete(json);
}

static void http_resp_verror(struct http_resp *resp, int status,
    const char *code, const char *fmt, va_list ap)
    __attribute__((format(printf, 4, 0)));

static void
http_resp_verror(struct http_resp *resp, int status, const char *code,
    const char *fmt, va_list ap)
{
    struct sbuf msg;
    cJSON *root, *e;

    sbuf_init(&msg);
    sbuf_vaddf(&msg, fmt, ap);
    root = cJSON_CreateObject();
    e = cJSON_AddObjectToObject(root, "error");
    if (root == NULL || e == NULL ||
        cJSON_AddStringToObject(e, "code", code) == NULL ||
        cJSON_AddStringToObject(e, "message", msg.buf) == NULL)
        fatalx("cannot build JSON error: out of memory");
    sbuf_release(&msg);
    http_resp_json(resp, status, root);
}

void
http_resp_error(struct http_resp *resp, int status, const char *code,
    const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    http_resp_verror(resp, status, code, fmt, ap);
    va_end(ap);
}

void
http_resp_header(struct http_resp *resp, const char *name, const char *fmt, ...)
{
    struct sbuf v;
    va_list ap;

    sbuf_init(&v);
    va_start(ap, fmt);
    sbuf_vaddf(&v, fmt, ap);
    va_end(ap);
    /* A value must not end the header line early (response splitting). */
    for (size_t i = 0; i < v.len; i++)
        if (v.buf[i] == '\r' || v.buf[i] == '\n')
            v.buf[i] = ' ';
    sbuf_addf(&resp->headers, "%s: %s\r\n", name, v.buf);
    sbuf_release(&v);
}

/* --- response slots ------------------------------------------------------ */

struct http_out *
http_out_create(struct http_conn *conn, char *what)
{
    struct http_out *out = xcalloc(1, sizeof(*out));

    out->conn = conn;
    out->state = HTTP_OUT_HANDLER;
    out->keep_alive = true;
    out->what = what;
    http_resp_init(&out->resp);
    return out;
}

void
http_out_destroy(struct http_out *out)
{
    if (out == NULL)
        return;
    sbuf_release(&out->resp.headers);
    sbuf_release(&out->resp.body);
    free(out->what);
    free(out);
}

/* --- deferred responses -------------------------------------------------- */

struct http_deferred *
http_resp_defer(struct http_resp *resp, http_cancel_fn *cancel, void *arg)
{
    struct http_out *out = container_of(resp, struct http_out, resp);

    assert(out->state == HTTP_OUT_HANDLER);
    assert(!out->deferred);
    out->deferred = true;
    out->d.cancel = cancel;
    out->d.arg = arg;
    return &out->d;
}

struct http_resp *
http_deferred_resp(struct http_deferred *d)
{
    return &container_of(d, struct http_out, d)->resp;
}

void
http_deferred_finish(struct http_deferred *d)
{
    struct http_out *out = container_of(d, struct http_out, d);
    struct http_conn *conn = out->conn;

    if (out->state == HTTP_OUT_HANDLER) {
        /* Finished before the handler even returned. */
        out->deferred = false;
        return;
    }
    assert(out->state == HTTP_OUT_DEFERRED);
    out->state = HTTP_OUT_READY;
    out->deferred = false;
    assert(conn->ndeferred > 0);
    if (--conn->ndeferred == 0)
        http_conn_timer_restart(conn);
    http_conn_mark_dirty(conn);
}
