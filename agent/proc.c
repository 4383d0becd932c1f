/*
 * proc.c - start, watch, tear down and release the supervisors of held jobs
 *
 * The table holds one proc_job per (job, attempt) the scheduler asked this
 * node to run. proc_apply() is the only way in: it compares the desired
 * state with what is held, starts what is new (each pair once in the life
 * of the agent, remembered by a ring of recently released pairs), tears
 * down what is gone and releases what is gone and finished.
 *
 * Starting a job means writing its attempt directory (spec.json, lease;
 * proc_start.c), spawning lockstep-supervisor on it (proc.h) and handing
 * its ranks' output to the log shipper (proc_job.c). From then on the
 * supervisor's status.json is the truth about the ranks (proc_state.c); a
 * 100 ms poll (proc_poll_cb) applies it when it changes, watches
 * supervisors adopted from an earlier agent (not our children) by pid, and
 * releases finished jobs once their output reached the scheduler
 * (logship.c). Supervisors we spawned are our children: libuv reports their
 * exit (proc_sv_exit_cb).
 */
#include "agent/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/logship.h"
#include "agent/mkdirp.h"
#include "agent/pmixsrv.h"
#include "agent/proc_ckpt.h"
#include "agent/proc_directive.h"
#include "agent/proc_dump.h"
#include "agent/proc_int.h"
#include "agent/proc_progress.h"
#include "agent/proc_start.h"
#include "agent/proc_state.h"
#include "agent/rmtree.h"
#include "agent/supfile.h"
#include "common/curlx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

/* How often status.json files and adopted supervisors are checked, and
 * finished jobs considered for release. */
#define PROC_POLL_MS 100
/* A finished job whose output cannot be shipped is released anyway once
 * shipping it has made no progress for this long while the scheduler
 * answered, so an unreachable log endpoint cannot pin it forever. */
#define PROC_FLUSH_MAX_MS 30000
/* The longest a rank's end is held back for its output
 * (proc_ends_held). */
#define PROC_END_WAIT_MS 2000
/* After the stop file, how much longer than kill_grace_ms the agent waits
 * before it SIGKILLs the ranks' groups itself (a stuck supervisor). */
#define PROC_BACKSTOP_MS 5000
/* ---- accessors ---------------------------------------------------------- */

struct proc_job *
proc_jobs(const struct proc_table *pt)
{
    return pt->jobs;
}

size_t
proc_njobs(const struct proc_table *pt)
{
    return pt->njobs;
}

int64_t
proc_lease_ms(const struct proc_table *pt)
{
    return pt->lease_ms;
}

void
proc_set_change_cb(struct proc_table *pt, proc_change_fn fn, void *arg)
{
    pt->change_fn = fn;
    pt->change_arg = arg;
}

bool
proc_has_live_supervisors(const struct proc_table *pt)
{
    const struct proc_job *job;

    for (job = pt->jobs; job != NULL; job = job->next) {
        if (proc_job_supervised(job))
            return true;
    }
    return false;
}

/* ---- release ----------------------------------------------------------- */

static struct proc_job *
proc_find(const struct proc_table *pt, int64_t jobid, int attempt)
{
    struct proc_job *job;

    for (job = pt->jobs; job != NULL; job = job->next) {
        if (job->job == jobid && job->attempt == attempt)
            return job;
    }
    return NULL;
}

static bool
proc_tombstoned(const struct proc_table *pt, int64_t jobid, int attempt)
{
    size_t i;

    for (i = 0; i < pt->ntomb; i++) {
        if (pt->tomb[i].job == jobid && pt->tomb[i].attempt == attempt)
            return true;
    }
    return false;
}

static void
proc_tombstone_add(struct proc_table *pt, int64_t jobid, int attempt)
{
    pt->tomb[pt->tomb_next].job = jobid;
    pt->tomb[pt->tomb_next].attempt = attempt;
    pt->tomb_next = (pt->tomb_next + 1) % PROC_TOMBSTONES;
    if (pt->ntomb < PROC_TOMBSTONES)
        pt->ntomb++;
}

static int64_t
proc_max(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

/* Whether the finished job has waited long enough for its output: the
 * scheduler answers, and for PROC_FLUSH_MAX_MS now it has answered, the
 * job has been finished and no acknowledgement has moved any of its
 * files on. Time while the scheduler is away never counts, so output
 * written during an outage is shipped after it however long it lasted,
 * and a large backlog is shipped to its end as long as it moves. */
static bool
proc_job_flush_late(const struct proc_job *job, int64_t now)
{
    int64_t from;
    size_t i;

    if (job->pt->reach_ms == 0)
        return false;
    from = proc_max(job->finished_ms, job->pt->reach_ms);
    for (i = 0; i < job->nranks; i++)
        from = proc_max(from, job->ranks[i].output.shipped_mono_ms);
    return now - from >= PROC_FLUSH_MAX_MS;
}

/* Whether every output file of the job reached the scheduler, or gave up,
 * with nothing in flight. `late` (waited long enough) accepts unshipped
 * bytes but still never frees a file with a request in flight. */
static bool
proc_job_logs_settled(const struct proc_job *job, bool late)
{
    size_t i;

    /* Without a shipper (unit tests) there is nothing to wait for. */
    if (job->pt->ad->logship == NULL)
        return true;
    for (i = 0; i < job->nranks; i++) {
        const struct logship_output *o = &job->ranks[i].output;

        if (logship_output_in_flight(o))
            return false;
        if (!late && !logship_output_flushed(o))
            return false;
    }
    return true;
}

/* Release every job that is absent from the desired state and finished;
 * returns how many. */
static size_t
proc_release_done(struct proc_table *pt)
{
    struct proc_job *job, *next;
    size_t n = 0;
    bool late;
    int rc;

    for (job = pt->jobs; job != NULL; job = next) {
        next = job->next;
        /* A supervisor we spawned must be reaped (its exit callback) before
         * its handle goes, or it would stay a zombie. */
        if (job->desired || !job->done || !proc_job_all_ended(job) ||
            (job->has_process && !job->sv_gone))
            continue;
        /* Once the agent reports at all, a job stays listed until the
         * scheduler has accepted a report with its ranks' final states:
         * otherwise a torn-down attempt's exit codes and signals would
         * never reach it (it would show the ranks as still running). */
        if (pt->report_seq > 0 && !job->final_acked)
            continue;
        late = proc_job_flush_late(job, timeid_mono_ms());
        if (!proc_job_logs_settled(job, late))
            continue;
        if (!proc_job_logs_settled(job, false))
            log_warn("job=%lld attempt=%d released with output not yet "
                     "shipped to the scheduler",
                (long long)job->job, job->attempt);
        log_info("job=%lld attempt=%d released", (long long)job->job,
            job->attempt);
        proc_job_unlink(job);
        pmixsrv_job_end(pt->ad->pmixsrv, job->job, job->attempt);
        proc_tombstone_add(pt, job->job, job->attempt);
        if ((rc = rmtree_at(AT_FDCWD, job->dir, NULL)) < 0)
            log_error("job=%lld attempt=%d cannot remove '%s': %s",
                (long long)job->job, job->attempt, job->dir, strerror(-rc));
        proc_job_close(job);
        n++;
    }
    return n;
}

/* ---- the supervisor ----------------------------------------------------- */

static void
proc_sv_exit_cb(uv_process_t *p, int64_t exit_status, int term_signal)
{
    struct proc_job *job = container_of(p, struct proc_job, sv_process);
    struct proc_table *pt = job->pt;
    char why[96];

    proc_job_sv_close(job);
    if (term_signal != 0)
        snprintf(why, sizeof(why), "supervisor pid=%d killed by signal %d",
            job->sv_pid, term_signal);
    else
        snprintf(why, sizeof(why), "supervisor pid=%d exited with code %d",
            job->sv_pid, (int)exit_status);
    if (term_signal != 0 || exit_status != 0)
        log_warn("job=%lld attempt=%d %s", (long long)job->job, job->attempt,
            why);
    else
        log_debug("job=%lld attempt=%d %s", (long long)job->job, job->attempt,
            why);
    proc_state_supervisor_gone(job, why);
    proc_release_done(pt);
    proc_notify(pt);
}

static void
proc_poll_cb(uv_timer_t *timer)
{
    struct proc_table *pt = container_of(timer, struct proc_table, poll_timer);
    struct proc_job *job;
    bool changed = false;
    char why[64];

    for (job = pt->jobs; job != NULL; job = job->next) {
        if (job->done)
            continue;
        if (proc_state_refresh(job))
            changed = true;
        if (job->sv_adopted && !job->sv_gone && !job->done &&
            kill(job->sv_pid, 0) < 0 && errno == ESRCH) {
            snprintf(why, sizeof(why), "supervisor pid=%d is gone",
                job->sv_pid);
            proc_state_supervisor_gone(job, why);
            changed = true;
        }
    }
    if (proc_release_done(pt) > 0)
        changed = true;
    if (changed)
        proc_notify(pt);
}

/* ---- PMIx aborts (pmixsrv.h) ------------------------------------------- */

/* A rank called PMIx_Abort (MPI_Abort does): the message goes to the end
 * of its stderr file, so the stderr tail read when it exits, the evidence
 * `lockstep show` prints, carries it. */
/* Whether fd is a regular file with one link, owned by job's user (the
 * agent's own when ranks run as the agent). */
static bool
proc_own_file(int fd, const struct proc_job *job)
{
    struct stat st;

    return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 1 &&
           st.st_uid == (job->uid >= 0 ? (uid_t)job->uid : geteuid());
}

static void
proc_pmix_abort_cb(void *arg, int64_t jobid, int attempt, int rank, int status,
    const char *msg)
{
    struct proc_job *job = proc_find(arg, jobid, attempt);
    char *line;
    size_t i;
    int fd;

    /* Open MPI's MPI_Abort passes "N/A": nothing to show. */
    if (strcmp(msg, "N/A") == 0)
        msg = "";
    for (i = 0; job != NULL && i < job->nranks; i++) {
        if (job->ranks[i].rank != rank || job->ranks[i].err_path == NULL)
            continue;
        line = xasprintf("lockstep: rank %d called MPI_Abort/PMIx_Abort "
                         "(status %d)%s%s\n",
            rank, status, msg[0] != '\0' ? ": " : "", msg);
        /* The file is the rank's user's: appended to only when it is
         * still the rank's own regular file (no link swapped in). */
        fd = open(job->ranks[i].err_path,
            O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
        if (fd >= 0 && !proc_own_file(fd, job)) {
            close(fd);
            fd = -1;
            errno = EPERM;
        }
        if (fd < 0 || write(fd, line, strlen(line)) < 0)
            log_error("job=%lld attempt=%d rank=%d cannot record its abort "
                      "in '%s': %s",
                (long long)jobid, attempt, rank, job->ranks[i].err_path,
                strerror(errno));
        if (fd >= 0)
            close(fd);
        free(line);
    }
}

/* The ranks of an aborted attempt that are still running stop: the
 * abort ends the attempt (PMIx's semantics: the processes named, or the
 * whole namespace, are to be terminated). */
static void
proc_pmix_stop_cb(void *arg, int64_t jobid, int attempt)
{
    struct proc_job *job = proc_find(arg, jobid, attempt);

    if (job == NULL || job->done || job->stopping)
        return;
    log_info("job=%lld attempt=%d a rank aborted: stopping the others",
        (long long)jobid, attempt);
    proc_job_teardown(job);
}

/* ---- teardown ----------------------------------------------------------- */

static void
proc_kill_timer_cb(uv_timer_t *timer)
{
    struct proc_job *job = timer->data;
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (!proc_rank_live(r) || r->pid <= 0)
            continue;
        log_warn("job=%lld attempt=%d rank=%d pid=%d still running %d ms "
                 "after its supervisor's grace period, sending SIGKILL",
            (long long)job->job, job->attempt, r->rank, r->pid,
            PROC_BACKSTOP_MS);
        proc_rank_kill_group(r, SIGKILL);
    }
}

void
proc_job_teardown(struct proc_job *job)
{
    char *path;
    int fd, rc;

    if (job->stopping)
        return;
    job->stopping = true;
    if (!proc_job_supervised(job))
        return;
    path = xasprintf("%s/%s", job->dir, SUPFILE_STOP);
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        log_error("job=%lld attempt=%d cannot create '%s': %s",
            (long long)job->job, job->attempt, path, strerror(errno));
    else
        close(fd);
    free(path);
    log_info("job=%lld attempt=%d tearing down grace_ms=%lld",
        (long long)job->job, job->attempt,
        (long long)job->pt->ad->kill_grace_ms);
    rc = uv_timer_start(&job->kill_timer, proc_kill_timer_cb,
        (uint64_t)(job->pt->ad->kill_grace_ms + PROC_BACKSTOP_MS), 0);
    if (rc < 0)
        log_error("job=%lld attempt=%d cannot start kill timer: %s",
            (long long)job->job, job->attempt, uv_strerror(rc));
}

/* ---- start -------------------------------------------------------------- */

/* Spawn the supervisor of a job whose directory is written. */
static int
proc_sv_spawn(struct proc_job *job, char *why, size_t len)
{
    struct agentd *ad = job->pt->ad;
    uv_process_options_t opts;
    uv_stdio_container_t stdio[3];
    char *args[3], *logpath;
    int devnull = -1, logfd = -1, rc;

    logpath = xasprintf("%s/%s", job->dir, SUPFILE_LOG);
    if ((devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0 ||
        (logfd = open(logpath,
             O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600)) <
            0) {
        rc = -errno;
        snprintf(why, len, "cannot open '%s': %s",
            devnull < 0 ? "/dev/null" : logpath, strerror(-rc));
        goto out;
    }
    memset(&opts, 0, sizeof(opts));
    memset(stdio, 0, sizeof(stdio));
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = devnull;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = logfd;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = logfd;
    args[0] = ad->supervisor;
    args[1] = job->dir;
    args[2] = NULL;
    opts.exit_cb = proc_sv_exit_cb;
    opts.file = ad->supervisor;
    opts.args = args;
    opts.cwd = "/";
    opts.stdio = stdio;
    opts.stdio_count = 3;
    /* Its own session: the agent's death, a signal to the agent's process
     * group or a stop of the agent's service leaves it and its ranks. */
    opts.flags = UV_PROCESS_DETACHED;

    rc = uv_spawn(ad->loop, &job->sv_process, &opts);
    /* The handle is initialised even when the spawn failed. */
    job->has_process = true;
    job->open_handles++;
    if (rc < 0) {
        job->sv_gone = true;
        proc_job_sv_close(job);
        snprintf(why, len, "cannot execute '%s': %s", ad->supervisor,
            uv_strerror(rc));
        goto out;
    }
    job->sv_pid = job->sv_process.pid;
    log_info("job=%lld attempt=%d supervisor pid=%d started",
        (long long)job->job, job->attempt, job->sv_pid);
out:
    if (devnull >= 0)
        close(devnull);
    if (logfd >= 0)
        close(logfd);
    free(logpath);
    return rc;
}

static void
proc_job_start(struct proc_table *pt, const struct proto_launch *l)
{
    struct proc_job *job;
    char why[512] = "";
    bool launch = false;
    int rc;

    job = proc_job_new(pt, l->job, l->attempt, l->nranks,
        xasprintf("%s/%lld.%d", pt->jobs_dir, (long long)l->job, l->attempt));
    job->desired = true;
    proc_job_set_launch(job, l);
    /* A fresh attempt has nothing to dump yet. */
    proc_directive_set(job, l, true);
    log_info("job=%lld attempt=%d name=%s user=%s ranks=%zu starting",
        (long long)l->job, l->attempt, l->name != NULL ? l->name : "",
        l->user != NULL ? l->user : "", l->nranks);
    rc = proc_job_prepare(job, l, pt->lease_ms, why, sizeof(why), &launch);
    if (rc == 0) {
        /* Before the ranks start: the baseline of the checkpoint
         * directory (proc_ckpt.c), and the control file they map at
         * once. */
        proc_ckpt_scan(job);
        proc_directive_open(job);
        rc = proc_sv_spawn(job, why, sizeof(why));
    }
    if (rc < 0)
        proc_job_fail(job, rc, why, launch);
    proc_job_ship(job);
}

/* ---- the table ---------------------------------------------------------- */

int
proc_apply(struct proc_table *pt, const struct proto_work *w)
{
    struct proc_job *job, *next;
    size_t i;
    int started = 0;
    bool changed = false;

    for (job = pt->jobs; job != NULL; job = job->next)
        job->desired = false;
    for (i = 0; i < w->njobs; i++) {
        const struct proto_launch *l = &w->jobs[i];

        job = proc_find(pt, l->job, l->attempt);
        if (job != NULL) {
            job->desired = true;
            /* Adopted jobs learn their checkpoint settings here. */
            proc_job_set_launch(job, l);
            proc_directive_set(job, l, false);
            continue;
        }
        if (proc_tombstoned(pt, l->job, l->attempt)) {
            log_debug("job=%lld attempt=%d already ran here, not starting "
                      "it again",
                (long long)l->job, l->attempt);
            continue;
        }
        proc_job_start(pt, l);
        started++;
    }
    for (job = pt->jobs; job != NULL; job = next) {
        next = job->next;
        if (!job->desired && !job->stopping) {
            proc_job_teardown(job);
            changed = true;
        }
    }
    if (proc_release_done(pt) > 0)
        changed = true;
    if (started > 0 || changed)
        proc_notify(pt);
    return started;
}

/* Whether the end of r is kept from the scheduler for now (proc.h,
 * proc_ends_held). */
static bool
proc_rank_end_held(const struct proc_rank *r, int64_t now)
{
    const struct proc_table *pt = r->job->pt;

    if (r->end_mono_ms == 0 || r->end_acked || pt->ad->logship == NULL ||
        logship_output_flushed(&r->output))
        return false;
    if (pt->reach_ms == 0)
        return true;
    return now - proc_max(r->end_mono_ms, pt->reach_ms) < PROC_END_WAIT_MS;
}

bool
proc_ends_held(const struct proc_table *pt)
{
    const struct proc_job *job;
    int64_t now = timeid_mono_ms();
    size_t i;

    for (job = pt->jobs; job != NULL; job = job->next) {
        for (i = 0; i < job->nranks; i++) {
            if (proc_rank_end_held(&job->ranks[i], now))
                return true;
        }
    }
    return false;
}

/* The state and end of rank r into rs; false when its end is held back
 * (reported as running). */
static bool
proc_rank_fill_end(struct proc_rank *r, uint64_t seq, int64_t now_mono,
    struct proto_rank_status *rs)
{
    if (proc_rank_end_held(r, now_mono)) {
        rs->state = PROTO_RANK_RUNNING;
        return false;
    }
    rs->state = r->state;
    rs->end_ms = r->end_ms;
    rs->exit_code = r->exit_code;
    rs->signal = r->signal;
    rs->fenced = r->fenced;
    rs->launch_error = r->launch_error != NULL ? xstrdup(r->launch_error)
                                               : NULL;
    rs->stderr_tail = r->stderr_tail != NULL ? xstrdup(r->stderr_tail) : NULL;
    if (r->end_mono_ms != 0 && r->end_report == 0)
        r->end_report = seq;
    return true;
}

uint64_t
proc_fill_report(struct proc_table *pt, struct proto_node_report *rep)
{
    struct proc_job *job;
    int64_t now_mono = timeid_mono_ms(), now_ms = timeid_now_ms();
    uint64_t seq = ++pt->report_seq;
    size_t n = 0, i;
    bool held;

    rep->jobs = xcalloc(pt->njobs + 1, sizeof(*rep->jobs));
    for (job = pt->jobs; job != NULL; job = job->next, n++) {
        struct proto_job_status *js = &rep->jobs[n];

        js->job = job->job;
        js->attempt = job->attempt;
        if (job->scan_checkpoints) {
            proc_ckpt_scan(job);
            js->checkpoints = proc_ckpt_report(job, &js->ncheckpoints);
        }
        js->nranks = job->nranks;
        js->ranks = xcalloc(job->nranks + 1, sizeof(*js->ranks));
        held = false;
        for (i = 0; i < job->nranks; i++) {
            struct proc_rank *r = &job->ranks[i];
            struct proto_rank_status *rs = &js->ranks[i];

            proc_progress_sample(r, now_mono, now_ms);
            rs->rank = r->rank;
            rs->pid = r->pid;
            rs->start_ms = r->start_ms;
            if (!proc_rank_fill_end(r, seq, now_mono, rs))
                held = true;
            proc_progress_fill(r, now_mono, rs);
        }
        proc_dump_report(job, js, seq);
        proc_directive_report(job, js);
        if (job->final_report == 0 && job->done && proc_job_all_ended(job) &&
            !held && proc_ckpt_settled(job, now_mono))
            job->final_report = seq;
    }
    rep->njobs = n;
    return seq;
}

/*
 * Set job's lease deadline from a grant made at granted: the scheduler's
 * answer to a status sent then (exact), or the witnesses' extension
 * (!exact). Each grant is safe by itself (docs/fault-tolerance.md "Why
 * two attempts never overlap"), so the later of two is too; but a reply
 * to a status sent long ago (a scheduler that was stopped answers the
 * statuses waiting in its sockets when it goes on) grants sent +
 * lease_ms, which may lie before the deadline the witnesses granted
 * meanwhile: writing it would fence ranks that the witnesses kept alive.
 * So a grant older than the one in force only moves the deadline on,
 * and so does an extension; the scheduler's answer to a status sent
 * since the grant in force sets it as it says, also shorter (a lowered
 * lease_ms takes effect at once). 0 or a negative errno.
 */
static int
proc_lease_renew(struct proc_job *job, int64_t deadline, int64_t granted,
    bool exact)
{
    int rc;

    if ((!exact || granted < job->lease_granted) &&
        deadline <= job->lease_until)
        return 0;
    if (deadline != job->lease_until &&
        (rc = supfile_lease_write(job->dir, deadline)) < 0)
        return rc;
    job->lease_until = deadline;
    if (granted > job->lease_granted)
        job->lease_granted = granted;
    return 0;
}

/* Where our supervisors send their fence notice: the scheduler that
 * answered last over TCP (a replica that took over is another). */
static void
proc_sched_addr(struct proc_table *pt)
{
    char ip[sizeof(pt->sched_ip)];
    int port, rc;

    if (pt->agent_fd < 0 || pt->ad->curlx == NULL ||
        !curlx_peer(pt->ad->curlx, ip, sizeof(ip), &port) ||
        (port == pt->sched_port && strcmp(ip, pt->sched_ip) == 0))
        return;
    if ((rc = supfile_sched_addr_write(pt->jobs_dir, ip, port)) < 0) {
        log_error("cannot write '%s/%s': %s", pt->jobs_dir, SUPFILE_SCHED_ADDR,
            strerror(-rc));
        return;
    }
    memcpy(pt->sched_ip, ip, strlen(ip) + 1);
    pt->sched_port = port;
}

void
proc_lease_granted(struct proc_table *pt, int64_t sent_mono_ms,
    int64_t lease_ms)
{
    struct proc_job *job;
    int rc;

    if (lease_ms != pt->lease_ms)
        log_info("lease_ms=%lld", (long long)lease_ms);
    pt->lease_ms = lease_ms;
    for (job = pt->jobs; job != NULL; job = job->next) {
        if (!proc_job_supervised(job))
            continue;
        rc = proc_lease_renew(job, sent_mono_ms + lease_ms, sent_mono_ms, true);
        if (rc < 0)
            log_error("job=%lld attempt=%d cannot renew lease in '%s': %s",
                (long long)job->job, job->attempt, job->dir, strerror(-rc));
    }
}

bool
proc_sched_addr_get(const struct proc_table *pt, char *ip, size_t cap,
    int *port)
{
    if (pt->sched_port <= 0 || strlen(pt->sched_ip) >= cap)
        return false;
    memcpy(ip, pt->sched_ip, strlen(pt->sched_ip) + 1);
    *port = pt->sched_port;
    return true;
}

void
proc_status_ok(struct proc_table *pt, uint64_t seq, int64_t sent_mono_ms,
    int64_t lease_ms)
{
    struct proc_job *job;
    size_t i;

    if (pt->reach_ms == 0)
        pt->reach_ms = timeid_mono_ms();
    proc_sched_addr(pt);
    for (job = pt->jobs; job != NULL; job = job->next) {
        if (job->final_report != 0 && job->final_report <= seq)
            job->final_acked = true;
        for (i = 0; i < job->nranks; i++) {
            struct proc_rank *r = &job->ranks[i];

            if (r->end_report != 0 && r->end_report <= seq)
                r->end_acked = true;
        }
        proc_dump_delivered(job, seq);
    }
    proc_lease_granted(pt, sent_mono_ms, lease_ms);
    /* What the scheduler now knows the end of can go. */
    if (proc_release_done(pt) > 0)
        proc_notify(pt);
}

void
proc_status_failed(struct proc_table *pt)
{
    pt->reach_ms = 0;
}

size_t
proc_lease_extend(struct proc_table *pt, int64_t deadline_mono_ms)
{
    struct proc_job *job;
    size_t n = 0;
    int rc;

    for (job = pt->jobs; job != NULL; job = job->next) {
        if (!proc_job_supervised(job))
            continue;
        rc = proc_lease_renew(job, deadline_mono_ms, timeid_mono_ms(), false);
        if (rc < 0)
            log_error("job=%lld attempt=%d cannot extend lease in '%s': %s",
                (long long)job->job, job->attempt, job->dir, strerror(-rc));
        else
            n++;
    }
    return n;
}

static void
proc_table_free(void *arg)
{
    struct proc_table *pt = arg;

    free(pt->jobs_dir);
    free(pt->tomb);
    free(pt);
}

/* Ranks of another user need to reach <state_dir>/jobs/<j>.<a>/sdk/. */
static void
proc_check_search(const struct proc_table *pt)
{
    struct stat st;
    char *dir = xstrdup(pt->jobs_dir), *slash;

    if (!pt->ad->run_as_submitter || geteuid() != 0)
        goto out;
    while ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
        *slash = '\0';
        if (stat(dir, &st) == 0 && !(st.st_mode & S_IXOTH)) {
            log_warn("directory '%s' is not searchable by other users "
                     "(mode %04o): ranks running as their submitter cannot "
                     "report progress or checkpoint commits; make it 0711",
                dir, (unsigned)(st.st_mode & 07777));
            break;
        }
    }
out:
    free(dir);
}

struct proc_table *
proc_create(struct agentd *ad, struct err *err)
{
    struct proc_table *pt = xcalloc(1, sizeof(*pt));
    char *jobs = xasprintf("%s/jobs", ad->state_dir), real[PATH_MAX];
    int rc;

    pt->ad = ad;
    pt->lease_ms = PROC_LEASE_DEFAULT_MS;
    pt->agent_fd = ad->orphan_grace_ms > 0 ? ad->lock_fd : -1;
    pt->tomb = xcalloc(PROC_TOMBSTONES, sizeof(*pt->tomb));
    /* 0711: the ranks' users pass through to their sdk/ directories; they
     * cannot list it. */
    if ((rc = mkdirp(jobs, 0711)) < 0 || chmod(jobs, 0711) < 0) {
        rc = rc < 0 ? rc : -errno;
        err_set(err, rc, "cannot create '%s': %s", jobs, strerror(-rc));
        goto fail;
    }
    /* Absolute: the supervisor is started with "/" as its working
     * directory, and a live one is recognised by its argument. */
    if (realpath(jobs, real) == NULL) {
        rc = -errno;
        err_set(err, rc, "cannot resolve '%s': %s", jobs, strerror(-rc));
        goto fail;
    }
    pt->jobs_dir = xstrdup(real);
    if ((rc = mkdirp(ad->log_dir, 0755)) < 0) {
        err_set(err, rc, "cannot create log directory '%s': %s", ad->log_dir,
            strerror(-rc));
        goto fail;
    }
    proc_check_search(pt);
    pmixsrv_set_hooks(ad->pmixsrv, proc_pmix_abort_cb, proc_pmix_stop_cb, pt);
    rc = uv_timer_init(ad->loop, &pt->poll_timer);
    if (rc < 0) {
        err_set(err, rc, "cannot create timer: %s", uv_strerror(rc));
        goto fail;
    }
    rc = uv_timer_start(&pt->poll_timer, proc_poll_cb, PROC_POLL_MS,
        PROC_POLL_MS);
    if (rc < 0) {
        err_set(err, rc, "cannot start timer: %s", uv_strerror(rc));
        uvx_close_one((uv_handle_t *)&pt->poll_timer, proc_table_free, pt);
        free(jobs);
        return NULL;
    }
    free(jobs);
    proc_state_adopt(pt);
    return pt;

fail:
    free(jobs);
    proc_table_free(pt);
    return NULL;
}

void
proc_destroy(struct proc_table *pt)
{
    struct proc_job *job;
    int rc;

    if (pt == NULL)
        return;
    /* Stopped, not dead: our supervisors leave the ranks to their lease,
     * which gives a restarted agent (an upgrade) its whole time to take
     * them over (docs/fault-tolerance.md "An agent that dies"). */
    if (pt->agent_fd >= 0 &&
        (rc = supfile_agent_stopped_mark(pt->jobs_dir)) < 0)
        log_error("cannot write '%s/%s': %s", pt->jobs_dir,
            SUPFILE_AGENT_STOPPED, strerror(-rc));
    /* Supervisors and ranks keep running: only our handles go. Their
     * directories stay in <state_dir>/jobs for the next agent. */
    while ((job = pt->jobs) != NULL) {
        proc_job_unlink(job);
        proc_ckpt_cancel(job);
        proc_job_close(job);
    }
    uvx_close_one((uv_handle_t *)&pt->poll_timer, proc_table_free, pt);
}
