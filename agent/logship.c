/*
 * logship.c - copy the ranks' output files to the scheduler
 *
 * A timer (every 200 ms) walks the registered outputs (logship_add); for
 * each output file with nothing in flight it reads what lies past the
 * acknowledged offset (at most one chunk, 1 MiB) with pread and POSTs it to
 * /v1/agent/logs?...&offset=<acked>. The reply's "size" becomes the new
 * offset, whatever it is: ahead (we resend nothing twice), equal (all
 * caught up) or behind (the scheduler lost bytes, so we resend from
 * there). Reading a local file is bounded work on the loop, like a short
 * SQLite statement.
 *
 * Failures back off per file (200 ms doubling to 5 s); logship_resume,
 * called when the scheduler answers a status again after an outage,
 * forgets every backoff, so what was written during the outage is
 * shipped at once (it waits on disk meanwhile: the ranks write their
 * files directly, and nothing of it is held in memory). A 413 halves the
 * chunk (a scheduler with a small max_body_bytes); any other 4xx except
 * 401/403/408/429 means the scheduler will never take this file (say, an
 * attempt it does not know), so the file is abandoned with one log line.
 *
 * The same tick looks at the free space of log_dir (statvfs; a few
 * microseconds) and writes the lost-output lines of logship.h into the
 * registered files, where they ship like the ranks' own output.
 */
#include "agent/logship.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/backoff.h"
#include "common/curlx.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

#define LOGSHIP_TICK_MS 200
#define LOGSHIP_CHUNK_MAX (1u << 20)
#define LOGSHIP_CHUNK_MIN 1024u
#define LOGSHIP_MAX_IN_FLIGHT 32
#define LOGSHIP_BACKOFF_MIN_MS 200
#define LOGSHIP_BACKOFF_MAX_MS 5000
#define LOGSHIP_TIMEOUT_MS 30000L
#define LOGSHIP_DISK_ROOM (256u << 10) /* free bytes that end a full disk */

struct logship {
    struct agentd *ad;
    uv_timer_t timer;
    size_t chunk;
    int in_flight;
    char last_err[200]; /* last error logged; "" when healthy */
    bool disk_full;     /* log_dir has no block left for the ranks */
    LIST_HEAD(, logship_output) outputs;
};

/* Context of one POST; the output outlives it (its owner removes it only
 * when none of its files is in flight). */
struct logship_req {
    struct logship *ls;
    struct logship_output *o;
    struct logship_file *f;
    const char *stream;
    uint64_t offset;
    size_t len;
};

static void
logship_file_open(struct logship_file *f, const char *path)
{
    if (path != NULL)
        f->path = path;
    if (f->fd < 0 && path != NULL)
        f->fd = open(path, O_RDONLY | O_CLOEXEC);
}

static void
logship_file_close(struct logship_file *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
}

void
logship_output_init(struct logship_output *o, int64_t job, int attempt,
    int rank, const char *out_path, const char *err_path)
{
    memset(o, 0, sizeof(*o));
    o->job = job;
    o->attempt = attempt;
    o->rank = rank;
    o->out.fd = o->err.fd = -1;
    logship_output_open(o, out_path, err_path);
}

void
logship_output_open(struct logship_output *o, const char *out_path,
    const char *err_path)
{
    logship_file_open(&o->out, out_path);
    logship_file_open(&o->err, err_path);
}

void
logship_output_release(struct logship_output *o)
{
    logship_remove(o);
    logship_file_close(&o->out);
    logship_file_close(&o->err);
}

uint64_t
logship_file_size(const struct logship_file *f)
{
    struct stat st;

    if (f->fd < 0 || fstat(f->fd, &st) < 0 || st.st_size < 0)
        return 0;
    return (uint64_t)st.st_size;
}

static bool
logship_file_flushed(const struct logship_file *f)
{
    if (f->in_flight)
        return false;
    if (f->fd < 0 || f->abandoned)
        return true;
    return f->acked >= logship_file_size(f);
}

bool
logship_output_flushed(const struct logship_output *o)
{
    return logship_file_flushed(&o->out) && logship_file_flushed(&o->err);
}

bool
logship_output_in_flight(const struct logship_output *o)
{
    return o->out.in_flight || o->err.in_flight;
}

/* ---- a full log directory ----------------------------------------------- */

/* Append text to f's file on a line of its own (after a newline when the
 * file's last line is unfinished). Best effort: a full disk may refuse
 * it, or take part of it. Returns whether all of it was written. */
static bool
logship_file_mark(const struct logship_file *f, const char *text)
{
    uint64_t size = logship_file_size(f);
    char last = '\n';
    char *line;
    ssize_t n;
    int fd;

    if (f->fd < 0 || f->path == NULL)
        return false;
    if (size > 0 && pread(f->fd, &last, 1, (off_t)(size - 1)) != 1)
        last = '\n';
    fd = open(f->path,
        O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return false;
    line = xasprintf("%s%s\n", last == '\n' ? "" : "\n", text);
    n = write(fd, line, strlen(line));
    close(fd);
    free(line);
    return n > 0 && (size_t)n == strlen(text) + 1 + (last != '\n');
}

static void
logship_mark(struct logship_output *o, const char *text)
{
    logship_file_mark(&o->out, text);
    logship_file_mark(&o->err, text);
}

/* o's output is being lost from since_ms on: say so in its files now, if
 * they take it. */
static void
logship_lost_begin(struct logship *ls, struct logship_output *o,
    int64_t since_ms)
{
    char t[32], *text;

    if (o->lost_since_ms != 0)
        return;
    o->lost_since_ms = since_ms;
    text = xasprintf("[lockstep: %s: the disk of the job's output (log_dir "
                     "'%s') is full: output from here on may be lost]",
        timeid_fmt(since_ms, t, sizeof(t)), ls->ad->log_dir);
    logship_mark(o, text);
    free(text);
}

/* The disk has room again: o's files say what was lost, and when. */
static void
logship_lost_end(struct logship *ls, struct logship_output *o, int64_t now_ms)
{
    char t1[32], t2[32], *text;

    if (o->lost_since_ms == 0)
        return;
    text = xasprintf("[lockstep: output written from %s to %s may be lost: "
                     "the disk of the job's output (log_dir '%s') was full]",
        timeid_fmt(o->lost_since_ms, t1, sizeof(t1)),
        timeid_fmt(now_ms, t2, sizeof(t2)), ls->ad->log_dir);
    logship_mark(o, text);
    free(text);
    o->lost_since_ms = 0;
}

/* Look at log_dir's free space: full when the ranks have no block left,
 * over again once LOGSHIP_DISK_ROOM is free. */
static void
logship_disk_check(struct logship *ls)
{
    struct logship_output *o;
    struct statvfs vfs;
    uint64_t avail;
    int64_t now = timeid_now_ms();

    if (statvfs(ls->ad->log_dir, &vfs) < 0)
        return;
    avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
    if (!ls->disk_full && vfs.f_bavail == 0) {
        ls->disk_full = true;
        log_warn("log_dir '%s' is full: the ranks' output is being lost",
            ls->ad->log_dir);
        LIST_FOREACH(o, &ls->outputs, link)
            logship_lost_begin(ls, o, now);
    } else if (ls->disk_full && avail >= LOGSHIP_DISK_ROOM) {
        ls->disk_full = false;
        log_notice("log_dir '%s' has room again (%llu KiB free)",
            ls->ad->log_dir, (unsigned long long)(avail >> 10));
        LIST_FOREACH(o, &ls->outputs, link)
            logship_lost_end(ls, o, now);
    }
}

void
logship_add(struct logship *ls, struct logship_output *o)
{
    if (ls == NULL || o->ls != NULL)
        return;
    o->ls = ls;
    LIST_INSERT_HEAD(&ls->outputs, o, link);
    if (ls->disk_full)
        logship_lost_begin(ls, o, timeid_now_ms());
}

void
logship_remove(struct logship_output *o)
{
    if (o->ls == NULL)
        return;
    LIST_REMOVE(o, link);
    o->ls = NULL;
}

static void
logship_backoff(struct logship_file *f)
{
    int64_t wait;

    f->backoff_ms = backoff_next(f->backoff_ms, LOGSHIP_BACKOFF_MIN_MS,
        LOGSHIP_BACKOFF_MAX_MS, &wait);
    f->retry_at_ms = timeid_mono_ms() + wait;
}

static void
logship_done_cb(int rc, long http_status, const struct sbuf *body, void *arg)
{
    struct logship_req *lr = arg;
    struct logship *ls = lr->ls;
    struct logship_file *f = lr->f;
    const struct logship_output *o = lr->o;
    cJSON *root = NULL;
    int64_t size = -1;
    char text[200];

    f->in_flight = false;
    ls->in_flight--;
    if (rc == 0 && http_status == 200 &&
        jsonx_parse(body->buf, body->len, &root, NULL) == 0 &&
        jsonx_get_int(root, "size", true, 0, INT64_MAX, &size, NULL) == 0) {
        if ((uint64_t)size > f->acked)
            lr->o->shipped_mono_ms = timeid_mono_ms();
        f->acked = (uint64_t)size;
        f->backoff_ms = 0;
        f->retry_at_ms = 0;
        if (ls->last_err[0] != '\0') {
            log_notice("shipping logs works again");
            ls->last_err[0] = '\0';
        }
        goto out;
    }
    if (rc == 0 && http_status == 413 && ls->chunk > LOGSHIP_CHUNK_MIN) {
        ls->chunk /= 2;
        log_info("scheduler refused %zu bytes of log; sending at most %zu "
                 "per request",
            lr->len, ls->chunk);
        goto out;
    }
    curlx_error_text(rc, http_status, body, text, sizeof(text));
    if (rc == 0 && http_status == 200)
        snprintf(text, sizeof(text), "reply without a valid size");
    if (rc == 0 && http_status >= 400 && http_status < 500 &&
        http_status != 401 && http_status != 403 && http_status != 408 &&
        http_status != 429 && http_status != 413) {
        f->abandoned = true;
        log_warn("job=%lld attempt=%d rank=%d stream=%s not shipping output: "
                 "%s",
            (long long)o->job, o->attempt, o->rank, lr->stream, text);
        goto out;
    }
    if (strcmp(ls->last_err, text) != 0) {
        snprintf(ls->last_err, sizeof(ls->last_err), "%s", text);
        log_warn("cannot ship logs: %s (retrying)", text);
    }
    logship_backoff(f);
out:
    cJSON_Delete(root);
    free(lr);
}

static void
logship_file_ship(struct logship *ls, struct logship_output *o,
    struct logship_file *f, const char *stream, int64_t now)
{
    struct logship_req *lr;
    uint64_t size;
    size_t len, got = 0;
    ssize_t n;
    char *buf, *path;

    if (f->fd < 0 || f->in_flight || f->abandoned || now < f->retry_at_ms)
        return;
    size = logship_file_size(f);
    if (size <= f->acked)
        return;
    len = size - f->acked > ls->chunk ? ls->chunk : (size_t)(size - f->acked);
    buf = xmalloc(len);
    while (got < len) {
        n = pread(f->fd, buf + got, len - got, (off_t)(f->acked + got));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    if (got == 0) {
        free(buf);
        return;
    }
    lr = xcalloc(1, sizeof(*lr));
    lr->ls = ls;
    lr->o = o;
    lr->f = f;
    lr->stream = stream;
    lr->offset = f->acked;
    lr->len = got;
    path = xasprintf("/v1/agent/logs?node=%s&job=%lld&attempt=%d&rank=%d"
                     "&stream=%s&offset=%" PRIu64,
        ls->ad->node, (long long)o->job, o->attempt, o->rank, stream, f->acked);
    if (curlx_request(ls->ad->curlx, "POST", path, buf, got,
            "application/octet-stream", LOGSHIP_TIMEOUT_MS, logship_done_cb,
            lr) == NULL) {
        free(lr);
        logship_backoff(f);
    } else {
        f->in_flight = true;
        ls->in_flight++;
    }
    free(path);
}

static void
logship_timer_cb(uv_timer_t *t)
{
    struct logship *ls = container_of(t, struct logship, timer);
    struct logship_output *o;
    int64_t now = timeid_mono_ms();

    if (!LIST_EMPTY(&ls->outputs) || ls->disk_full)
        logship_disk_check(ls);
    LIST_FOREACH(o, &ls->outputs, link) {
        if (ls->in_flight >= LOGSHIP_MAX_IN_FLIGHT)
            return;
        logship_file_ship(ls, o, &o->out, "out", now);
        logship_file_ship(ls, o, &o->err, "err", now);
    }
}

void
logship_kick(struct logship *ls)
{
    if (ls != NULL)
        logship_timer_cb(&ls->timer);
}

static void
logship_file_resume(struct logship_file *f)
{
    f->backoff_ms = 0;
    f->retry_at_ms = 0;
}

void
logship_resume(struct logship *ls)
{
    struct logship_output *o;

    if (ls == NULL)
        return;
    LIST_FOREACH(o, &ls->outputs, link) {
        logship_file_resume(&o->out);
        logship_file_resume(&o->err);
    }
    logship_timer_cb(&ls->timer);
}

struct logship *
logship_create(struct agentd *ad, struct err *err)
{
    struct logship *ls = xcalloc(1, sizeof(*ls));
    int rc;

    ls->ad = ad;
    ls->chunk = LOGSHIP_CHUNK_MAX;
    rc = uv_timer_init(ad->loop, &ls->timer);
    if (rc < 0) {
        err_set(err, rc, "cannot create timer: %s", uv_strerror(rc));
        free(ls);
        return NULL;
    }
    rc = uv_timer_start(&ls->timer, logship_timer_cb, LOGSHIP_TICK_MS,
        LOGSHIP_TICK_MS);
    if (rc < 0) {
        err_set(err, rc, "cannot start timer: %s", uv_strerror(rc));
        logship_destroy(ls);
        return NULL;
    }
    return ls;
}

void
logship_destroy(struct logship *ls)
{
    if (ls == NULL)
        return;
    while (!LIST_EMPTY(&ls->outputs))
        logship_remove(LIST_FIRST(&ls->outputs));
    uvx_close_one((uv_handle_t *)&ls->timer, free, ls);
}
