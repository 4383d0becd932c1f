/*
 * webhook.c - delivering queued alerts (webhook.h)
 */
#include "scheduler/webhook.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/curlx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/buildinfo.h"
#include "scheduler/db.h"

/* The first retry waits this long; each further one twice as long. */
#define WEBHOOK_BACKOFF_MS 1000
/* While the scheduler cannot write (a reload), look again after this. */
#define WEBHOOK_IDLE_RETRY_MS 1000

struct webhook {
    struct schedd *sd;
    struct curlx *cx;
    char *path;
    uv_timer_t timer;
    struct curlx_req *req; /* in flight, or NULL */
    int64_t req_id;        /* its alert */
    int req_tries;
    struct webhook_stats stats;
};

int
webhook_split_url(const char *url, char **server, char **path, struct err *err)
{
    const char *host, *slash;

    host = strncmp(url, "http://", 7) == 0    ? url + 7
           : strncmp(url, "https://", 8) == 0 ? url + 8
                                              : NULL;
    if (host == NULL || host[0] == '\0' || host[0] == '/')
        return err_set(err, -EINVAL,
            "alert_webhook_url: '%s' is not an http:// or https:// URL", url);
    slash = host + strcspn(host, "/?");
    *server = xstrndup(url, (size_t)(slash - url));
    *path = *slash == '/'   ? xstrdup(slash)
            : *slash == '?' ? xasprintf("/%s", slash)
                            : xstrdup("/");
    return 0;
}

static void webhook_kick(struct webhook *wh, uint64_t after_ms);

/* The body of alert a (webhook.h). */
static char *
webhook_body(const struct db_alert *a)
{
    cJSON *o = cJSON_CreateObject();
    char when[40];
    char *text;

    jsonx_add_int(o, "id", a->id);
    jsonx_add_str(o, "kind", a->kind);
    if (a->node[0])
        jsonx_add_str(o, "node", a->node);
    else
        cJSON_AddNullToObject(o, "node");
    if (a->job_id > 0)
        jsonx_add_int(o, "job", a->job_id);
    else
        cJSON_AddNullToObject(o, "job");
    jsonx_add_str(o, "reason", a->reason);
    timeid_fmt(a->time_ms, when, sizeof(when));
    jsonx_add_str(o, "time", when);
    jsonx_add_int(o, "time_ms", a->time_ms);
    jsonx_add_str(o, "version", buildinfo_version());
    jsonx_add_int(o, "tries", a->tries);
    text = jsonx_print(o);
    cJSON_Delete(o);
    return text;
}

static void
webhook_done(int rc, long status, const struct sbuf *body, void *arg)
{
    struct webhook *wh = arg;
    struct schedd *sd = wh->sd;
    int64_t id = wh->req_id, wait;
    char text[256];
    int tries = wh->req_tries + 1;

    wh->req = NULL;
    if (rc == 0 && status >= 200 && status < 300) {
        wh->stats.sent++;
        log_info("alert %lld delivered (HTTP %ld)", (long long)id, status);
        schedd_db_check(sd, db_alert_delete(sd->db, id));
        webhook_kick(wh, 0);
        return;
    }
    curlx_error_text(rc, status, body, text, sizeof(text));
    wait = WEBHOOK_BACKOFF_MS;
    for (int i = 1; i < tries && wait < sd->alert_backoff_max_ms; i++)
        wait *= 2;
    if (wait > sd->alert_backoff_max_ms)
        wait = sd->alert_backoff_max_ms;
    wh->stats.failed++;
    log_warn("alert %lld not delivered (try %d): %s; next try in %lld ms",
        (long long)id, tries, text, (long long)wait);
    schedd_db_check(sd,
        db_alert_retry(sd->db, id, tries, timeid_now_ms() + wait, text));
    webhook_kick(wh, (uint64_t)wait);
}

/* Send the oldest queued alert when it is due. */
static void
webhook_timer_cb(uv_timer_t *t)
{
    struct webhook *wh = container_of(t, struct webhook, timer);
    struct schedd *sd = wh->sd;
    struct db_alert a;
    int64_t now = timeid_now_ms();
    char *body;
    int rc;

    if (wh->req)
        return;
    /* Only what is committed goes out: an alert of a change that a
     * failed commit undid is never sent. */
    if (!schedd_available(sd) || schedd_commit(sd) < 0) {
        webhook_kick(wh, WEBHOOK_IDLE_RETRY_MS);
        return;
    }
    if ((rc = db_alert_oldest(sd->db, &a)) < 0) {
        if (rc != -ENOENT)
            webhook_kick(wh, WEBHOOK_IDLE_RETRY_MS);
        return;
    }
    if (a.next_ms > now) {
        webhook_kick(wh, (uint64_t)(a.next_ms - now));
    } else {
        body = webhook_body(&a);
        wh->req_id = a.id;
        wh->req_tries = a.tries;
        wh->req = curlx_request(wh->cx, "POST", wh->path, body, strlen(body),
            "application/json", sd->alert_timeout_ms, webhook_done, wh);
        if (wh->req == NULL) {
            log_warn("alert %lld: curl refused the request", (long long)a.id);
            webhook_kick(wh, WEBHOOK_IDLE_RETRY_MS);
        }
    }
    db_alert_free(&a);
}

/* Look at the queue after_ms from now (the soonest wins). */
static void
webhook_kick(struct webhook *wh, uint64_t after_ms)
{
    if (wh->req || wh->sd->stopping)
        return;
    if (uv_is_active((uv_handle_t *)&wh->timer) &&
        uv_timer_get_due_in(&wh->timer) <= after_ms)
        return;
    uv_timer_start(&wh->timer, webhook_timer_cb, after_ms, 0);
}

static void
webhook_queued_hook(struct schedd *sd, void *arg)
{
    (void)sd;
    webhook_kick(arg, 0);
}

struct webhook *
webhook_create(struct schedd *sd, struct err *err)
{
    struct webhook *wh;
    char *server = NULL, *path = NULL;

    if (sd->alert_url == NULL)
        return NULL;
    if (webhook_split_url(sd->alert_url, &server, &path, err) < 0)
        return NULL;
    wh = xcalloc(1, sizeof(*wh));
    wh->sd = sd;
    wh->path = path;
    wh->cx = curlx_create(sd->loop, server, err);
    free(server);
    if (wh->cx == NULL) {
        free(wh->path);
        free(wh);
        return NULL;
    }
    uv_timer_init(sd->loop, &wh->timer);
    sd->hooks.alert_queued = webhook_queued_hook;
    sd->hooks.alert_arg = wh;
    log_notice("alerts go to %s", sd->alert_url);
    /* Whatever a previous run left queued. */
    webhook_kick(wh, 0);
    return wh;
}

static void
webhook_free(void *arg)
{
    struct webhook *wh = arg;

    free(wh->path);
    free(wh);
}

void
webhook_destroy(struct webhook *wh)
{
    if (wh == NULL)
        return;
    if (wh->sd->hooks.alert_arg == wh) {
        wh->sd->hooks.alert_queued = NULL;
        wh->sd->hooks.alert_arg = NULL;
    }
    curlx_destroy(wh->cx);
    wh->req = NULL;
    uv_timer_stop(&wh->timer);
    uvx_close_one((uv_handle_t *)&wh->timer, webhook_free, wh);
}

void
webhook_get_stats(const struct webhook *wh, struct webhook_stats *out)
{
    memset(out, 0, sizeof(*out));
    if (wh)
        *out = wh->stats;
}
