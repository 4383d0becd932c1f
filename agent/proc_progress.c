/*
 * proc_progress.c - how far each rank got: steps, output, committed steps
 *
 * The hang watchdog (docs/fault-tolerance.md) needs, per running rank, the
 * time since its last progress, measured by the agent. Two measures:
 *
 *   step    the SDK's progress file <dir>/sdk/rank-<r>.progress, a JSON
 *           object {"step": N, "time_ms": T, "attempt": A, "pid": P}
 *           replaced atomically at most every 100 ms; progress is a step
 *           different from the last one seen (the same record carries
 *           the rank's acks of directives, its step time and its
 *           timed sections, docs/cadence.md);
 *   output  the rank's stdout and stderr files; progress is growth.
 *
 * A rank that reported a step is measured by steps only (its output may be
 * a logger's heartbeat while the training loop is stuck); one that never
 * did, by output; one with neither, from its start. Times are the agent's
 * monotonic clock; the first observation of a step or of output (a new
 * agent adopting a rank) is dated by the record's time_ms or the files'
 * mtime instead of "now", so an agent restart does not reset the watchdog.
 *
 * Every read is guarded by a stat: unchanged files cost one stat(2) per
 * report, which keeps this cheap enough to run at every status report.
 */
#include "agent/proc_progress.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/logship.h"
#include "agent/proc_job.h"
#include "agent/supfile.h"
#include "common/jsonx.h"
#include "common/xalloc.h"

/* Room for the SDK's 32 acks with large numbers, and some slack. */
#define PROC_PROGRESS_MAX_BYTES 16384
/* Integers a JSON number (a double) holds exactly. */
#define PROC_JSON_INT_MAX ((int64_t)1 << 53)
/* Only the end of a commit file is read: PROTO_STEPS_MAX lines are far
 * shorter than this. */
#define PROC_COMMIT_TAIL_BYTES 65536

int64_t
proc_progress_mono_of(int64_t ms, int64_t now_mono, int64_t now_ms)
{
    int64_t ago = now_ms - ms;

    if (ms <= 0 || ago < 0)
        ago = 0;
    if (ago > now_mono)
        ago = now_mono;
    return now_mono - ago;
}

/* Item n as an integer in [min, PROC_JSON_INT_MAX]. */
static bool
proc_json_int(const cJSON *n, int64_t min, int64_t *out)
{
    double d;

    if (!cJSON_IsNumber(n))
        return false;
    d = n->valuedouble;
    if (!(d >= (double)min && d <= (double)PROC_JSON_INT_MAX) ||
        d != (double)(int64_t)d)
        return false;
    *out = (int64_t)d;
    return true;
}

/* One ack [seq, step, duration_ms]: seq >= 1, step >= -1, duration >= 0. */
static bool
proc_ack_parse(const cJSON *item, struct proto_ack *a)
{
    int64_t seq, step, ms;

    if (!cJSON_IsArray(item) || cJSON_GetArraySize(item) != 3 ||
        !proc_json_int(cJSON_GetArrayItem(item, 0), 1, &seq) ||
        !proc_json_int(cJSON_GetArrayItem(item, 1), -1, &step) ||
        !proc_json_int(cJSON_GetArrayItem(item, 2), 0, &ms))
        return false;
    a->seq = (uint64_t)seq;
    a->step = step;
    a->duration_ms = ms;
    return true;
}

size_t
proc_acks_parse(const cJSON *acks, struct proto_ack *out, size_t max)
{
    const cJSON *item;
    struct proto_ack a;
    size_t valid = 0, skip, n = 0;

    if (!cJSON_IsArray(acks) || max == 0)
        return 0;
    cJSON_ArrayForEach(item, acks) {
        if (proc_ack_parse(item, &a))
            valid++;
    }
    /* The newest are last. */
    skip = valid > max ? valid - max : 0;
    cJSON_ArrayForEach(item, acks) {
        if (!proc_ack_parse(item, &a))
            continue;
        if (skip > 0) {
            skip--;
            continue;
        }
        out[n++] = a;
    }
    return n;
}

/* One section "name": {"p50_us": .., "p99_us": .., "n": ..}. */
static bool
proc_section_parse(const cJSON *item, struct proto_section *s)
{
    const cJSON *p99 = cJSON_GetObjectItemCaseSensitive(item, "p99_us");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(item, "n");

    if (!cJSON_IsObject(item) || item->string == NULL ||
        !proto_section_name_valid(item->string) ||
        !proc_json_int(cJSON_GetObjectItemCaseSensitive(item, "p50_us"), 0,
            &s->p50_us))
        return false;
    s->p99_us = s->p50_us;
    s->n = 0;
    if ((p99 != NULL && !proc_json_int(p99, 0, &s->p99_us)) ||
        (n != NULL && !proc_json_int(n, 0, &s->n)))
        return false;
    memcpy(s->name, item->string, strlen(item->string) + 1);
    return true;
}

size_t
proc_sections_parse(const cJSON *sections, struct proto_section *out,
    size_t max)
{
    const cJSON *item;
    size_t n = 0;

    if (!cJSON_IsObject(sections))
        return 0;
    cJSON_ArrayForEach(item, sections) {
        if (n < max && proc_section_parse(item, &out[n]))
            n++;
    }
    return n;
}

/* What a valid record of this attempt says besides the step: the acks, the
 * step time and the sections (each left out or malformed counts as
 * none). */
static void
proc_progress_cadence(struct proc_rank *r, const cJSON *root)
{
    r->nacks = proc_acks_parse(cJSON_GetObjectItemCaseSensitive(root, "acks"),
        r->acks, PROC_ACKS_MAX);
    if (jsonx_get_int(root, "step_p50_us", false, 0, INT64_MAX / 2,
            &r->step_p50_us, NULL) < 0)
        r->step_p50_us = 0;
    if (jsonx_get_int(root, "step_p99_us", false, 0, INT64_MAX / 2,
            &r->step_p99_us, NULL) < 0)
        r->step_p99_us = 0;
    r->nsections = proc_sections_parse(
        cJSON_GetObjectItemCaseSensitive(root, "sections"), r->sections,
        PROTO_SECTIONS_MAX);
}

static void
proc_progress_read(struct proc_rank *r, int64_t now_mono, int64_t now_ms)
{
    struct supfile_stamp stamp;
    cJSON *root = NULL;
    int64_t step = -1, time_ms = 0, attempt = 0, pid = 0;
    char *text = NULL;
    size_t len;

    if (supfile_stamp_get(r->progress_path, &stamp) < 0) {
        r->have_progress = false;
        return;
    }
    if (supfile_stamp_equal(&stamp, &r->progress_stamp))
        return;
    r->progress_stamp = stamp;
    /* Written by the rank: anything malformed is ignored, never trusted. */
    if (supfile_read(r->progress_path, PROC_PROGRESS_MAX_BYTES, &text, &len) <
            0 ||
        jsonx_parse(text, len, &root, NULL) < 0 ||
        jsonx_get_int(root, "step", true, -1, INT64_MAX / 2, &step, NULL) < 0 ||
        jsonx_get_int(root, "attempt", true, 0, INT32_MAX, &attempt, NULL) <
            0 ||
        jsonx_get_int(root, "time_ms", false, 0, INT64_MAX / 2, &time_ms,
            NULL) < 0 ||
        jsonx_get_int(root, "pid", false, 0, INT32_MAX, &pid, NULL) < 0 ||
        attempt != r->job->attempt)
        goto out;
    r->have_progress = true;
    r->sdk_pid = (int)pid;
    proc_progress_cadence(r, root);
    if (step < 0 || step == r->step)
        goto out;
    r->step_mono_ms = r->step < 0
                          ? proc_progress_mono_of(time_ms, now_mono, now_ms)
                          : now_mono;
    r->step = step;
out:
    cJSON_Delete(root);
    free(text);
}

static void
proc_progress_output(struct proc_rank *r, int64_t now_mono, int64_t now_ms)
{
    const struct logship_output *o = &r->output;
    uint64_t bytes = logship_file_size(&o->out) + logship_file_size(&o->err);
    struct stat st;
    int64_t mtime = 0, m;

    if (bytes <= r->output_bytes)
        return;
    if (r->output_mono_ms == 0) {
        /* First output seen: date it by the files. */
        if (o->out.fd >= 0 && fstat(o->out.fd, &st) == 0)
            mtime = (int64_t)st.st_mtim.tv_sec * 1000 +
                    st.st_mtim.tv_nsec / 1000000;
        if (o->err.fd >= 0 && fstat(o->err.fd, &st) == 0) {
            m = (int64_t)st.st_mtim.tv_sec * 1000 +
                st.st_mtim.tv_nsec / 1000000;
            if (m > mtime)
                mtime = m;
        }
        r->output_mono_ms = proc_progress_mono_of(mtime, now_mono, now_ms);
    } else {
        r->output_mono_ms = now_mono;
    }
    r->output_bytes = bytes;
}

static int
proc_step_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

int64_t *
proc_commit_parse(const char *text, int attempt, size_t max, size_t *n)
{
    const char *p = text, *nl;
    int64_t *steps = NULL, step, *out;
    size_t count = 0, cap = 0, i, u;
    long long s, a;
    char *end;

    *n = 0;
    for (; *p != '\0'; p = nl != NULL ? nl + 1 : p + strlen(p)) {
        nl = strchr(p, '\n');
        /* "<step> <attempt>" in decimal, nothing else on the line. */
        if (*p < '0' || *p > '9')
            continue;
        errno = 0;
        s = strtoll(p, &end, 10);
        if (errno != 0 || *end != ' ' || end[1] < '0' || end[1] > '9')
            continue;
        a = strtoll(end + 1, &end, 10);
        if (errno != 0 ||
            (*end != '\n' && *end != '\0' && !(*end == '\r' && end[1] == '\n')))
            continue;
        /* A step past what a JSON number holds exactly would make the
         * scheduler refuse the whole node report (every rank's, every
         * job's): the rank's file is never trusted. */
        if (a != attempt || s > PROC_JSON_INT_MAX)
            continue;
        step = (int64_t)s;
        if (count == cap) {
            cap = cap == 0 ? 64 : cap * 2;
            steps = xreallocarray(steps, cap, sizeof(*steps));
        }
        steps[count++] = step;
    }
    if (count == 0) {
        free(steps);
        return NULL;
    }
    qsort(steps, count, sizeof(*steps), proc_step_cmp);
    for (i = 1, u = 1; i < count; i++) {
        if (steps[i] != steps[u - 1])
            steps[u++] = steps[i];
    }
    if (u > max) {
        out = xcalloc(max + 1, sizeof(*out));
        memcpy(out, steps + (u - max), max * sizeof(*out));
        free(steps);
        steps = out;
        u = max;
    }
    *n = u;
    return steps;
}

static void
proc_progress_commits(struct proc_rank *r)
{
    struct supfile_stamp stamp;
    struct stat st;
    char *buf = NULL, *start;
    off_t off;
    ssize_t got;
    size_t len = 0;
    int fd;

    if (supfile_stamp_get(r->commit_path, &stamp) < 0 ||
        supfile_stamp_equal(&stamp, &r->commit_stamp))
        return;
    r->commit_stamp = stamp;
    /* The rank's own file: no link followed, no FIFO blocked on. */
    fd = open(r->commit_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return;
    }
    off = stamp.size > PROC_COMMIT_TAIL_BYTES
              ? (off_t)(stamp.size - PROC_COMMIT_TAIL_BYTES)
              : 0;
    buf = xmalloc(PROC_COMMIT_TAIL_BYTES + 1);
    while (len < PROC_COMMIT_TAIL_BYTES) {
        got = pread(fd, buf + len, PROC_COMMIT_TAIL_BYTES - len,
            off + (off_t)len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        len += (size_t)got;
    }
    close(fd);
    buf[len] = '\0';
    start = buf;
    /* From the middle of the file: skip the cut line. */
    if (off > 0 && (start = strchr(buf, '\n')) != NULL)
        start++;
    if (start != NULL) {
        free(r->ckpt_steps);
        r->ckpt_steps = proc_commit_parse(start, r->job->attempt,
            PROTO_STEPS_MAX, &r->nckpt_steps);
    }
    free(buf);
}

void
proc_progress_sample(struct proc_rank *r, int64_t now_mono, int64_t now_ms)
{
    if (r->progress_path == NULL)
        return;
    proc_progress_read(r, now_mono, now_ms);
    proc_progress_output(r, now_mono, now_ms);
    proc_progress_commits(r);
}

void
proc_progress_fill(const struct proc_rank *r, int64_t now_mono,
    struct proto_rank_status *rs)
{
    int64_t last;

    rs->step = r->step;
    if (r->step >= 0) {
        rs->progress = PROTO_PROGRESS_STEP;
        last = r->step_mono_ms;
    } else if (r->output_mono_ms > 0) {
        rs->progress = PROTO_PROGRESS_OUTPUT;
        last = r->output_mono_ms;
    } else {
        rs->progress = PROTO_PROGRESS_NONE;
        last = r->start_mono_ms;
    }
    rs->idle_ms = r->state == PROTO_RANK_RUNNING && last > 0 && now_mono > last
                      ? now_mono - last
                      : 0;
    rs->step_p50_us = r->step_p50_us;
    rs->step_p99_us = r->step_p99_us;
    if (r->nsections > 0) {
        rs->sections = xcalloc(r->nsections, sizeof(*rs->sections));
        memcpy(rs->sections, r->sections, r->nsections * sizeof(*rs->sections));
        rs->nsections = r->nsections;
    }
    if (r->nckpt_steps > 0) {
        rs->ckpt_steps = xcalloc(r->nckpt_steps, sizeof(*rs->ckpt_steps));
        memcpy(rs->ckpt_steps, r->ckpt_steps,
            r->nckpt_steps * sizeof(*rs->ckpt_steps));
        rs->nckpt_steps = r->nckpt_steps;
    }
}
