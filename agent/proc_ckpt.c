/*
 * proc_ckpt.c - checkpoints by directory convention: scan and prune
 *
 * A job with a checkpoint directory DIR writes each checkpoint to
 * DIR/step-<N>/ and, last, a regular file DIR/step-<N>/COMPLETE
 * (docs/fault-tolerance.md). The agent of node rank 0 (the launch says
 * scan_checkpoints) reports the complete steps it finds, and with
 * keep_checkpoints = K > 0 deletes the complete ones older than the K
 * newest, never the one this attempt resumed from and never an incomplete
 * one (it may be being written).
 *
 * Only checkpoints this attempt wrote count. The first scan, queued before
 * the supervisor is spawned, takes the baseline: every step complete then,
 * with its COMPLETE marker's identity (device, inode, modification and
 * change times). Those are an earlier run's (or an earlier attempt's,
 * which reported them itself) and are never reported nor deleted, unless
 * their marker changes (the job wrote that step again). The baseline is
 * kept in the attempt directory (ckpt-base), so an agent that restarts
 * and re-adopts the attempt keeps it; nothing compares clocks, so a
 * network file system whose clock differs from the nodes' changes nothing.
 *
 * Both run on libuv's thread pool, one operation per job at a time: DIR is
 * the user's, usually on a network file system, and a stat that hangs
 * there must not stop the loop (and with it every lease renewal on the
 * node). A scan reads DIR once and stats only names it has not seen
 * complete before. A deletion removes COMPLETE first, so a half-deleted
 * checkpoint never looks complete, then the tree, with *at() calls that
 * never follow a symbolic link: a link planted in DIR is removed, never its
 * target. When the ranks run as their submitter, the worker thread takes
 * that user's file-system identity (setfsuid(2) is per thread) for both,
 * so the agent deletes nothing the user could not.
 */
#include "agent/proc_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "agent/rmtree.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

/* Entries of DIR looked at per scan; a directory with more is reported
 * on what was seen, with a warning. */
#define PROC_CKPT_SCAN_MAX 100000
/* After a deletion that failed, the next one waits this long (each scan
 * would otherwise retry, and warn, at every heartbeat). */
#define PROC_CKPT_PRUNE_RETRY_MS 60000
/* The longest the end of an attempt waits for its last scan. */
#define PROC_CKPT_FINAL_MAX_MS 10000

/* The baseline file in the attempt directory: a header line, then one
 * line per mark. */
#define PROC_CKPT_BASE_FILE "ckpt-base"
#define PROC_CKPT_BASE_HEADER "lockstep-ckpt-base 1"

struct proc_ckpt_op {
    uv_work_t req;
    struct proc_job *job;
    bool prune;                        /* else a scan */
    bool baseline;                     /* a scan that takes the baseline */
    bool after_end;                    /* started once every rank ended */
    const struct proc_ckpt_mark *base; /* borrowed from the job */
    size_t nbase;
    struct proc_ckpt_mark *marks; /* baseline: what it found */
    size_t nmarks, capmarks;
    char *dir;
    int64_t uid, gid; /* file-system identity; -1 keep */
    int64_t *in;      /* scan: known complete; prune: to delete */
    size_t nin;
    int64_t *out; /* scan: complete found, ascending;
                   * prune: steps deleted */
    size_t nout;
    volatile int cancel;
    int rc;         /* scan: reading DIR; prune: first error */
    bool truncated; /* scan: DIR had too many entries */
};

static int
proc_ckpt_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return x < y ? -1 : x > y;
}

static bool
proc_ckpt_has(const int64_t *v, size_t n, int64_t step)
{
    return n > 0 && bsearch(&step, v, n, sizeof(*v), proc_ckpt_cmp) != NULL;
}

static int
proc_ckpt_mark_cmp(const void *a, const void *b)
{
    const struct proc_ckpt_mark *x = a, *y = b;

    return x->step < y->step ? -1 : x->step > y->step;
}

static void
proc_ckpt_mark_set(struct proc_ckpt_mark *m, int64_t step,
    const struct stat *st)
{
    m->step = step;
    m->dev = (uint64_t)st->st_dev;
    m->ino = (uint64_t)st->st_ino;
    m->mtime_s = (int64_t)st->st_mtim.tv_sec;
    m->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
    m->ctime_s = (int64_t)st->st_ctim.tv_sec;
    m->ctime_ns = (int64_t)st->st_ctim.tv_nsec;
}

/* Whether step with marker st is in the baseline, marker unchanged. */
static bool
proc_ckpt_in_base(const struct proc_ckpt_mark *base, size_t n, int64_t step,
    const struct stat *st)
{
    struct proc_ckpt_mark key, now;
    const struct proc_ckpt_mark *m;

    if (n == 0)
        return false;
    key.step = step;
    m = bsearch(&key, base, n, sizeof(*base), proc_ckpt_mark_cmp);
    if (m == NULL)
        return false;
    proc_ckpt_mark_set(&now, step, st);
    return memcmp(m, &now, sizeof(now)) == 0;
}

bool
proc_ckpt_name_parse(const char *name, int64_t *step)
{
    const char *p;
    int64_t v = 0;

    if (strncmp(name, "step-", 5) != 0)
        return false;
    p = name + 5;
    if (*p == '\0' || (*p == '0' && p[1] != '\0'))
        return false;
    for (; *p != '\0'; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX / 2 - 9) / 10)
            return false;
        v = v * 10 + (*p - '0');
    }
    *step = v;
    return true;
}

/* ---- the thread pool side ----------------------------------------------- */

static void
proc_ckpt_base_add(struct proc_ckpt_op *op, int64_t step, const struct stat *st)
{
    if (op->nmarks == op->capmarks) {
        op->capmarks = op->capmarks == 0 ? 16 : op->capmarks * 2;
        op->marks = xreallocarray(op->marks, op->capmarks, sizeof(*op->marks));
    }
    proc_ckpt_mark_set(&op->marks[op->nmarks++], step, st);
}

static void
proc_ckpt_scan_work(struct proc_ckpt_op *op)
{
    char sub[sizeof(((struct dirent *)0)->d_name) + 16];
    struct dirent *de;
    struct stat st;
    size_t seen = 0, cap = 0;
    int64_t step;
    int dfd;
    DIR *d;

    d = opendir(op->dir);
    if (d == NULL) {
        op->rc = -errno;
        return;
    }
    dfd = dirfd(d);
    while ((de = readdir(d)) != NULL) {
        if (++seen > PROC_CKPT_SCAN_MAX) {
            op->truncated = true;
            break;
        }
        if (!proc_ckpt_name_parse(de->d_name, &step) ||
            (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
            continue;
        if (!proc_ckpt_has(op->in, op->nin, step)) {
            snprintf(sub, sizeof(sub), "%s/COMPLETE", de->d_name);
            if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                !S_ISDIR(st.st_mode) ||
                fstatat(dfd, sub, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
                !S_ISREG(st.st_mode))
                continue;
            if (op->baseline) {
                proc_ckpt_base_add(op, step, &st);
                continue;
            }
            if (proc_ckpt_in_base(op->base, op->nbase, step, &st))
                continue;
        }
        if (op->nout == cap) {
            cap = cap == 0 ? 64 : cap * 2;
            op->out = xreallocarray(op->out, cap, sizeof(*op->out));
        }
        op->out[op->nout++] = step;
    }
    closedir(d);
    if (op->nout > 0)
        qsort(op->out, op->nout, sizeof(*op->out), proc_ckpt_cmp);
    if (op->nmarks > 0)
        qsort(op->marks, op->nmarks, sizeof(*op->marks), proc_ckpt_mark_cmp);
}

static void
proc_ckpt_prune_work(struct proc_ckpt_op *op)
{
    char name[32];
    size_t i;
    int dfd, sfd, rc;

    dfd = open(op->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        op->rc = -errno;
        return;
    }
    op->out = xcalloc(op->nin + 1, sizeof(*op->out));
    for (i = 0; i < op->nin && !op->cancel; i++) {
        snprintf(name, sizeof(name), "step-%" PRId64, op->in[i]);
        sfd = openat(dfd, name,
            O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sfd < 0) {
            if (errno != ENOENT && op->rc == 0)
                op->rc = -errno;
            continue;
        }
        /* It stops counting as complete before any of its data goes; if
         * that fails, the data stays. */
        rc = unlinkat(sfd, "COMPLETE", 0) < 0 && errno != ENOENT ? -errno : 0;
        close(sfd);
        if (rc == 0)
            rc = rmtree_at(dfd, name, &op->cancel);
        if (rc == 0)
            op->out[op->nout++] = op->in[i];
        else if (rc != -ECANCELED && op->rc == 0)
            op->rc = rc;
    }
    close(dfd);
}

static void
proc_ckpt_work_cb(uv_work_t *req)
{
    struct proc_ckpt_op *op = container_of(req, struct proc_ckpt_op, req);
    int old_uid = -1, old_gid = -1;

    /* Per thread: the other threads (and the loop) keep root's identity. */
    if (op->uid >= 0) {
        old_gid = setfsgid((gid_t)op->gid);
        old_uid = setfsuid((uid_t)op->uid);
    }
    if (op->prune)
        proc_ckpt_prune_work(op);
    else
        proc_ckpt_scan_work(op);
    if (op->uid >= 0) {
        setfsuid((uid_t)old_uid);
        setfsgid((gid_t)old_gid);
    }
}

/* ---- the loop side ------------------------------------------------------ */

/* Write the baseline to the attempt directory (local, root's): a failure
 * only costs it after an agent restart, when the re-adopted attempt takes
 * a new one. */
static void
proc_ckpt_base_save(const struct proc_job *job)
{
    struct sbuf b;
    char *path, *tmp;
    FILE *f;
    bool ok;

    sbuf_init(&b);
    sbuf_addf(&b, "%s\n", PROC_CKPT_BASE_HEADER);
    for (size_t i = 0; i < job->nckpt_base; i++) {
        const struct proc_ckpt_mark *m = &job->ckpt_base[i];

        sbuf_addf(&b,
            "%" PRId64 " %" PRIu64 " %" PRIu64 " %" PRId64 " %" PRId64
            " %" PRId64 " %" PRId64 "\n",
            m->step, m->dev, m->ino, m->mtime_s, m->mtime_ns, m->ctime_s,
            m->ctime_ns);
    }
    path = xasprintf("%s/%s", job->dir, PROC_CKPT_BASE_FILE);
    tmp = xasprintf("%s.tmp", path);
    f = fopen(tmp, "we");
    ok = f != NULL && fwrite(b.buf, 1, b.len, f) == b.len;
    if (f != NULL && fclose(f) != 0)
        ok = false;
    if (!ok || rename(tmp, path) < 0) {
        log_warn("job=%lld attempt=%d cannot write '%s': %s",
            (long long)job->job, job->attempt, path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    free(path);
    sbuf_release(&b);
}

void
proc_ckpt_base_load(struct proc_job *job)
{
    char *path = xasprintf("%s/%s", job->dir, PROC_CKPT_BASE_FILE);
    char line[256];
    struct proc_ckpt_mark m;
    size_t cap = 0;
    FILE *f = fopen(path, "re");

    if (f == NULL) {
        free(path);
        return;
    }
    if (fgets(line, sizeof(line), f) == NULL ||
        strcmp(line, PROC_CKPT_BASE_HEADER "\n") != 0) {
        log_warn("job=%lld attempt=%d ignoring '%s': not a baseline",
            (long long)job->job, job->attempt, path);
        fclose(f);
        free(path);
        return;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line,
                "%" SCNd64 " %" SCNu64 " %" SCNu64 " %" SCNd64 " %" SCNd64
                " %" SCNd64 " %" SCNd64,
                &m.step, &m.dev, &m.ino, &m.mtime_s, &m.mtime_ns, &m.ctime_s,
                &m.ctime_ns) != 7)
            continue;
        if (job->nckpt_base == cap) {
            cap = cap == 0 ? 16 : cap * 2;
            job->ckpt_base = xreallocarray(job->ckpt_base, cap,
                sizeof(*job->ckpt_base));
        }
        job->ckpt_base[job->nckpt_base++] = m;
    }
    fclose(f);
    free(path);
    if (job->nckpt_base > 0)
        qsort(job->ckpt_base, job->nckpt_base, sizeof(*job->ckpt_base),
            proc_ckpt_mark_cmp);
    job->ckpt_base_taken = true;
}

static void
proc_ckpt_base_taken(struct proc_job *job, struct proc_ckpt_op *op)
{
    free(job->ckpt_base);
    job->ckpt_base = op->marks;
    job->nckpt_base = op->nmarks;
    op->marks = NULL;
    job->ckpt_base_taken = true;
    if (job->nckpt_base > 0)
        log_info("job=%lld attempt=%d checkpoint directory '%s' already "
                 "holds %zu complete checkpoint(s), newest step %" PRId64
                 ": not this attempt's, never reported",
            (long long)job->job, job->attempt, op->dir, job->nckpt_base,
            job->ckpt_base[job->nckpt_base - 1].step);
    proc_ckpt_base_save(job);
}

static void proc_ckpt_prune_maybe(struct proc_job *job);

static void
proc_ckpt_scan_done(struct proc_job *job, struct proc_ckpt_op *op)
{
    bool changed;

    if (op->after_end && !job->ckpt_final) {
        /* The report that ends the attempt may go now (proc.c). */
        job->ckpt_final = true;
        proc_notify(job->pt);
    }
    if (op->rc < 0 && op->rc != -ENOENT) {
        char text[sizeof(job->ckpt_err)];

        /* Kept as it was; logged once per distinct error. */
        snprintf(text, sizeof(text), "%s", strerror(-op->rc));
        if (strcmp(text, job->ckpt_err) != 0)
            log_warn("job=%lld attempt=%d cannot scan checkpoint directory "
                     "'%s': %s",
                (long long)job->job, job->attempt, op->dir, text);
        snprintf(job->ckpt_err, sizeof(job->ckpt_err), "%s", text);
        return;
    }
    if (job->ckpt_err[0] != '\0')
        log_notice("job=%lld attempt=%d checkpoint directory '%s' readable "
                   "again",
            (long long)job->job, job->attempt, op->dir);
    job->ckpt_err[0] = '\0';
    if (op->baseline) {
        proc_ckpt_base_taken(job, op);
        return;
    }
    if (op->truncated)
        log_warn("job=%lld attempt=%d checkpoint directory '%s' has more "
                 "than %d entries; only those were scanned",
            (long long)job->job, job->attempt, op->dir, PROC_CKPT_SCAN_MAX);
    /* ENOENT: the job has not made its directory yet; nothing complete. */
    changed = op->nout != job->nckpt_complete ||
              (op->nout > 0 && memcmp(op->out, job->ckpt_complete,
                                   op->nout * sizeof(*op->out)) != 0);
    free(job->ckpt_complete);
    job->ckpt_complete = op->out;
    job->nckpt_complete = op->nout;
    op->out = NULL;
    if (changed) {
        log_debug("job=%lld attempt=%d complete checkpoints=%zu",
            (long long)job->job, job->attempt, job->nckpt_complete);
        proc_notify(job->pt);
    }
    proc_ckpt_prune_maybe(job);
}

static void
proc_ckpt_prune_done(struct proc_job *job, struct proc_ckpt_op *op)
{
    size_t i, k = 0;

    if (op->rc < 0) {
        log_warn("job=%lld attempt=%d deleted %zu of %zu old checkpoints in "
                 "'%s': %s (next try in %d s)",
            (long long)job->job, job->attempt, op->nout, op->nin, op->dir,
            strerror(-op->rc), PROC_CKPT_PRUNE_RETRY_MS / 1000);
        job->ckpt_prune_after = timeid_mono_ms() + PROC_CKPT_PRUNE_RETRY_MS;
    } else {
        log_info("job=%lld attempt=%d deleted %zu old checkpoints in '%s'",
            (long long)job->job, job->attempt, op->nout, op->dir);
    }
    /* Gone: no longer complete, whatever the next scan is yet to say. */
    for (i = 0; i < job->nckpt_complete; i++) {
        if (!proc_ckpt_has(op->out, op->nout, job->ckpt_complete[i]))
            job->ckpt_complete[k++] = job->ckpt_complete[i];
    }
    job->nckpt_complete = k;
    free(job->ckpt_deleting);
    job->ckpt_deleting = NULL;
    job->nckpt_deleting = 0;
}

static void
proc_ckpt_after_cb(uv_work_t *req, int status)
{
    struct proc_ckpt_op *op = container_of(req, struct proc_ckpt_op, req);
    struct proc_job *job = op->job;

    job->ckpt_op = NULL;
    /* A job released or an agent stopping meanwhile: only free. */
    if (!job->closing && status == 0) {
        if (op->prune)
            proc_ckpt_prune_done(job, op);
        else
            proc_ckpt_scan_done(job, op);
    }
    free(op->dir);
    free(op->in);
    free(op->out);
    free(op->marks);
    free(op);
    proc_job_handle_closed(job);
}

/* Start op on the thread pool; takes it over. */
static void
proc_ckpt_queue(struct proc_job *job, struct proc_ckpt_op *op)
{
    int rc;

    op->job = job;
    op->dir = xstrdup(job->checkpoint_dir);
    op->uid = job->uid;
    op->gid = job->gid;
    rc = uv_queue_work(job->pt->ad->loop, &op->req, proc_ckpt_work_cb,
        proc_ckpt_after_cb);
    if (rc < 0) {
        log_error("job=%lld attempt=%d cannot queue checkpoint work: %s",
            (long long)job->job, job->attempt, uv_strerror(rc));
        free(op->dir);
        free(op->in);
        free(op);
        return;
    }
    job->ckpt_op = op;
    job->open_handles++;
}

static bool
proc_ckpt_is_resume(const struct proc_job *job, int64_t step)
{
    char *path;
    bool same;

    if (step == job->resume_step)
        return true;
    path = xasprintf("%s/step-%" PRId64, job->checkpoint_dir, step);
    same = strcmp(path, job->resume_from) == 0;
    free(path);
    return same;
}

static void
proc_ckpt_prune_maybe(struct proc_job *job)
{
    struct proc_ckpt_op *op;
    struct sbuf list;
    size_t i, old, n = 0;

    if (job->ckpt_op != NULL || job->keep_checkpoints <= 0 ||
        job->nckpt_complete <= (size_t)job->keep_checkpoints ||
        timeid_mono_ms() < job->ckpt_prune_after)
        return;
    old = job->nckpt_complete - (size_t)job->keep_checkpoints;
    op = xcalloc(1, sizeof(*op));
    op->prune = true;
    op->in = xcalloc(old, sizeof(*op->in));
    for (i = 0; i < old; i++) {
        if (!proc_ckpt_is_resume(job, job->ckpt_complete[i]))
            op->in[n++] = job->ckpt_complete[i];
    }
    op->nin = n;
    if (n == 0) {
        free(op->in);
        free(op);
        return;
    }
    sbuf_init(&list);
    for (i = 0; i < n; i++)
        sbuf_addf(&list, "%s%" PRId64, i > 0 ? "," : "", op->in[i]);
    log_info("job=%lld attempt=%d deleting checkpoints older than the %d "
             "newest: steps=%s",
        (long long)job->job, job->attempt, job->keep_checkpoints, list.buf);
    sbuf_release(&list);
    free(job->ckpt_deleting);
    job->ckpt_deleting = xcalloc(n, sizeof(*job->ckpt_deleting));
    memcpy(job->ckpt_deleting, op->in, n * sizeof(*op->in));
    job->nckpt_deleting = n;
    proc_ckpt_queue(job, op);
    if (job->ckpt_op == NULL) {
        free(job->ckpt_deleting);
        job->ckpt_deleting = NULL;
        job->nckpt_deleting = 0;
    }
}

void
proc_ckpt_scan(struct proc_job *job)
{
    struct proc_ckpt_op *op;

    if (!job->scan_checkpoints || job->checkpoint_dir[0] != '/' ||
        job->ckpt_op != NULL || job->closing)
        return;
    op = xcalloc(1, sizeof(*op));
    op->baseline = !job->ckpt_base_taken;
    op->after_end = job->done && proc_job_all_ended(job);
    op->base = job->ckpt_base;
    op->nbase = job->nckpt_base;
    if (job->nckpt_complete > 0) {
        op->in = xcalloc(job->nckpt_complete, sizeof(*op->in));
        memcpy(op->in, job->ckpt_complete,
            job->nckpt_complete * sizeof(*op->in));
        op->nin = job->nckpt_complete;
    }
    proc_ckpt_queue(job, op);
}

bool
proc_ckpt_settled(const struct proc_job *job, int64_t now_mono)
{
    return !job->scan_checkpoints || job->checkpoint_dir[0] != '/' ||
           job->ckpt_final ||
           now_mono - job->finished_ms >= PROC_CKPT_FINAL_MAX_MS;
}

int64_t *
proc_ckpt_report(const struct proc_job *job, size_t *n)
{
    int64_t *v;
    size_t i, k = 0, skip = 0;

    *n = 0;
    if (job->nckpt_complete == 0)
        return NULL;
    v = xcalloc(job->nckpt_complete, sizeof(*v));
    for (i = 0; i < job->nckpt_complete; i++) {
        if (!proc_ckpt_has(job->ckpt_deleting, job->nckpt_deleting,
                job->ckpt_complete[i]))
            v[k++] = job->ckpt_complete[i];
    }
    if (k > PROTO_STEPS_MAX) {
        skip = k - PROTO_STEPS_MAX;
        memmove(v, v + skip, PROTO_STEPS_MAX * sizeof(*v));
        k = PROTO_STEPS_MAX;
    }
    if (k == 0) {
        free(v);
        return NULL;
    }
    *n = k;
    return v;
}

void
proc_ckpt_cancel(struct proc_job *job)
{
    if (job->ckpt_op == NULL)
        return;
    job->ckpt_op->cancel = 1;
    /* Not started yet: never runs (after_cb gets UV_ECANCELED). */
    uv_cancel((uv_req_t *)&job->ckpt_op->req);
}
