/*
 * proc_dump.c - stack dumps of every rank of a job, on the scheduler's
 * request
 *
 * Before it tears down an attempt it judges hung, the scheduler posts a
 * dump directive (docs/fault-tolerance.md). The agent then runs one dump
 * over the job:
 *
 *   1. sends SIGUSR1 to each running rank that uses the SDK: its progress
 *      file exists, and the process (the one that wrote that file when it
 *      is in the rank's process group, else the rank itself) catches
 *      SIGUSR1 according to /proc/<pid>/status. The SDK registers Python's
 *      faulthandler there, which writes every thread's stack to stderr. A
 *      process without a handler would die of SIGUSR1, hence both checks;
 *   2. waits PROC_DUMP_WAIT_MS on a timer (never on the loop) for the
 *      stacks to land in the rank's stderr file;
 *   3. records for each running rank its /proc state and wait channel, the
 *      same for its threads, its kernel stack (readable as root only), and
 *      the last lines of its stderr, as the rank's `dump` (at most
 *      PROTO_DUMP_MAX bytes), and says the request was served.
 *
 * A dump stays in the reports until one that carried it is accepted.
 *
 * The file has two layers: the dump itself (signal, wait, collect), which
 * knows nothing of why it runs, and the requests (the sequence numbers of
 * dump directives), which start it and say when it served them.
 */
#include "agent/proc_dump.h"

#include <assert.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "agent/proc_progress.h"
#include "agent/procfs.h"
#include "agent/tail.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"

#define PROC_DUMP_WAIT_MS 1000
#define PROC_DUMP_LINES 40
#define PROC_DUMP_THREADS 64
/* /proc evidence gets at most this much; the stderr tail the rest. */
#define PROC_DUMP_HEADER_MAX (PROTO_DUMP_MAX / 2)

static void proc_dump_done(struct proc_job *job, size_t ranks);

/* ---- the evidence of one rank ------------------------------------------- */

/* Text from /proc, kept to printable ASCII lines. */
static void
proc_dump_add_clean(struct sbuf *sb, const char *s)
{
    for (; *s != '\0'; s++)
        sbuf_addch(sb, (*s == '\n' || (*s >= 0x20 && *s < 0x7f)) ? *s : '?');
}

/* "<state> wchan <wchan>" of a process or thread. */
static void
proc_dump_add_task(struct sbuf *sb, int pid)
{
    char *text = NULL, state = procfs_state(pid);
    size_t len;

    sbuf_addf(sb, "state %c wchan ", state != '\0' ? state : '?');
    if (procfs_read(pid, "wchan", 256, &text, &len) == 0 && len > 0 &&
        strcmp(text, "0") != 0)
        proc_dump_add_clean(sb, text);
    else
        sbuf_addch(sb, '-');
    free(text);
}

struct proc_dump_threads {
    struct sbuf *sb;
    int n;
    int more;
};

static int
proc_dump_thread_cb(int tid, void *arg)
{
    struct proc_dump_threads *t = arg;

    if (t->n++ >= PROC_DUMP_THREADS) {
        t->more++;
        return 0;
    }
    sbuf_addf(t->sb, "  thread %d ", tid);
    proc_dump_add_task(t->sb, tid);
    sbuf_addch(t->sb, '\n');
    return 0;
}

/* The /proc part: the rank's process, its threads, its kernel stack; at
 * most PROC_DUMP_HEADER_MAX bytes, cut at a line end. */
static void
proc_dump_add_proc(struct sbuf *sb, const struct proc_rank *r)
{
    struct proc_dump_threads t = { .sb = sb, .n = 0, .more = 0 };
    char *text = NULL;
    size_t len;
    int rc;

    sbuf_addf(sb, "rank %d pid %d ", r->rank, r->pid);
    proc_dump_add_task(sb, r->pid);
    sbuf_addch(sb, '\n');
    procfs_each(r->pid, proc_dump_thread_cb, &t);
    if (t.more > 0)
        sbuf_addf(sb, "  ... %d more threads\n", t.more);
    rc = procfs_read(r->pid, "stack", PROC_DUMP_HEADER_MAX, &text, &len);
    if (rc == 0) {
        sbuf_addstr(sb, "kernel stack:\n");
        proc_dump_add_clean(sb, text);
    } else {
        sbuf_addf(sb, "kernel stack: not readable (%s)\n", strerror(-rc));
    }
    free(text);
    if (sb->len > PROC_DUMP_HEADER_MAX) {
        /* Cut at a line end; everything so far is ASCII. */
        sb->len = PROC_DUMP_HEADER_MAX;
        while (sb->len > 0 && sb->buf[sb->len - 1] != '\n')
            sb->len--;
        sb->buf[sb->len] = '\0';
    }
}

/* The dump text of one rank (pid), from /proc and its stderr file; at
 * most PROTO_DUMP_MAX bytes, valid UTF-8. Caller frees. */
static char *
proc_dump_collect(const struct proc_rank *r)
{
    struct sbuf sb;
    char *tail, *p;
    size_t len, budget;
    int lines;

    sbuf_init(&sb);
    proc_dump_add_proc(&sb, r);
    budget = PROTO_DUMP_MAX - sb.len - 64;
    tail = tail_read(r->err_path, budget);
    /* The last PROC_DUMP_LINES lines: a Python traceback of every thread
     * is about that long per thread, the newest last. */
    len = strlen(tail);
    p = tail + len;
    lines = 0;
    if (p > tail && p[-1] == '\n')
        p--;
    while (p > tail) {
        if (p[-1] == '\n' && ++lines == PROC_DUMP_LINES)
            break;
        p--;
    }
    sbuf_addf(&sb, "stderr (last %d lines):\n", PROC_DUMP_LINES);
    sbuf_addstr(&sb, p);
    free(tail);
    assert(sb.len <= PROTO_DUMP_MAX);
    return sbuf_detach(&sb, NULL);
}

/* ---- the dump: signal, wait, collect ------------------------------------ */

/* Ask rank r's SDK for its Python stacks. Returns whether it was asked. */
static bool
proc_dump_signal(struct proc_rank *r, int64_t now_mono, int64_t now_ms)
{
    struct proc_job *job = r->job;
    int target;

    proc_progress_sample(r, now_mono, now_ms);
    if (!r->have_progress)
        return false;
    target = r->pid;
    if (r->sdk_pid > 0 && r->sdk_pid != r->pid && getpgid(r->sdk_pid) == r->pid)
        target = r->sdk_pid;
    if (!procfs_catches(target, SIGUSR1)) {
        log_info("job=%lld attempt=%d rank=%d pid=%d does not catch "
                 "SIGUSR1: no Python stacks",
            (long long)job->job, job->attempt, r->rank, target);
        return false;
    }
    return kill(target, SIGUSR1) == 0;
}

static void
proc_dump_timer_cb(uv_timer_t *t)
{
    struct proc_job *job = t->data;
    size_t i, n = 0;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (r->state != PROTO_RANK_RUNNING || r->pid <= 0)
            continue;
        free(r->dump);
        r->dump = proc_dump_collect(r);
        r->dump_report = 0;
        n++;
    }
    proc_dump_done(job, n);
}

/* Signal every running rank, then collect on the timer; the request
 * being served is job->dump.seq_running. Returns how many were
 * signalled. */
static size_t
proc_dump_run(struct proc_job *job)
{
    int64_t now_mono = timeid_mono_ms(), now_ms = timeid_now_ms();
    size_t i, sent = 0;
    int rc;

    job->dump.running = true;
    job->dump.started_mono = now_mono;
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (r->state == PROTO_RANK_RUNNING && r->pid > 0 &&
            proc_dump_signal(r, now_mono, now_ms))
            sent++;
    }
    log_info("job=%lld attempt=%d directive=%llu stack dumps requested "
             "ranks=%zu",
        (long long)job->job, job->attempt,
        (unsigned long long)job->dump.seq_running, sent);
    /* The wait counts from now, not from the start of this loop turn. */
    uv_update_time(job->pt->ad->loop);
    rc = uv_timer_start(&job->dump.timer, proc_dump_timer_cb,
        sent > 0 ? PROC_DUMP_WAIT_MS : 0, 0);
    if (rc < 0) {
        log_error("job=%lld attempt=%d cannot start dump timer: %s",
            (long long)job->job, job->attempt, uv_strerror(rc));
        proc_dump_timer_cb(&job->dump.timer);
    }
    return sent;
}

/* ---- requests ---------------------------------------------------------- */

void
proc_dump_init(struct proc_job *job, uint64_t seq)
{
    job->dump.seq_want = job->dump.seq_served = seq;
}

/* Start the dump that serves the newest request, unless one runs. */
static void
proc_dump_next(struct proc_job *job)
{
    if (job->dump.running || job->closing ||
        job->dump.seq_want <= job->dump.seq_served)
        return;
    job->dump.seq_running = job->dump.seq_want;
    proc_dump_run(job);
}

void
proc_dump_request(struct proc_job *job, uint64_t seq)
{
    if (seq <= job->dump.seq_served)
        return;
    if (seq > job->dump.seq_want)
        job->dump.seq_want = seq;
    proc_dump_next(job);
}

/* The dump ended, with `ranks` ranks' evidence collected. */
static void
proc_dump_done(struct proc_job *job, size_t ranks)
{
    job->dump.seq_served = job->dump.seq_running;
    job->dump.running = false;
    job->dump.duration_ms = timeid_mono_ms() - job->dump.started_mono;
    log_info("job=%lld attempt=%d directive=%llu served ranks=%zu",
        (long long)job->job, job->attempt,
        (unsigned long long)job->dump.seq_served, ranks);
    proc_notify(job->pt);
    proc_dump_next(job);
}

bool
proc_dump_served(const struct proc_job *job, uint64_t seq, int64_t *duration_ms)
{
    *duration_ms = job->dump.duration_ms;
    return seq <= job->dump.seq_served;
}

void
proc_dump_report(struct proc_job *job, struct proto_job_status *js,
    uint64_t seq)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (r->dump == NULL)
            continue;
        js->ranks[i].dump = xstrdup(r->dump);
        if (r->dump_report == 0)
            r->dump_report = seq;
    }
}

void
proc_dump_delivered(struct proc_job *job, uint64_t seq)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (r->dump != NULL && r->dump_report != 0 && r->dump_report <= seq) {
            free(r->dump);
            r->dump = NULL;
            r->dump_report = 0;
        }
    }
}
