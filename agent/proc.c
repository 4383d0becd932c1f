/*
 * proc.c - start, watch, tear down and release the ranks of held jobs
 *
 * The table holds one proc_job per (job, attempt) the scheduler asked this
 * node to run. proc_apply() is the only way in: it compares the desired
 * state with what is held, starts what is new (each pair once in the life
 * of the agent, remembered by a ring of recently released pairs), tears
 * down what is gone and releases what is gone and finished.
 *
 * Each rank is its own session and process group (UV_PROCESS_DETACHED),
 * writing to files the agent opened: see proc.h for why. Exit statuses
 * come from libuv's SIGCHLD handling (proc_rank_exit_cb); ranks adopted
 * from an earlier agent are not our children and are polled instead
 * (proc_poll_cb), as is the release of finished jobs, which also waits for
 * their output to reach the scheduler (logship.c).
 */
#include "agent/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

extern char **environ;

/* How often adopted ranks are checked and finished jobs considered for
 * release. */
#define PROC_POLL_MS 250
/* A finished job whose output cannot be shipped is released anyway after
 * this long, so an unreachable log endpoint cannot pin it forever. */
#define PROC_FLUSH_MAX_MS 30000
/* Released (job, attempt) pairs remembered so that a stale desired state
 * can never start one twice. */
#define PROC_TOMBSTONES 4096

struct proc_tombstone {
    int64_t job;
    int attempt;
};

struct proc_table {
    struct agentd *ad;
    struct proc_job *jobs;
    size_t njobs;
    uv_timer_t poll_timer;
    char *jobs_dir;             /* <state_dir>/jobs */
    proc_change_fn change_fn;
    void *change_arg;
    struct proc_tombstone *tomb;
    size_t ntomb;
    size_t tomb_next;
};

/* The user a job's ranks run as, when the agent switches to it. */
struct proc_user {
    bool switch_user;
    uid_t uid;
    gid_t gid;
};

/* ---- small helpers ------------------------------------------------------ */

static int
proc_mkdir_p(const char *path, mode_t mode)
{
    char *copy = xstrdup(path), *p, c;
    int rc = 0;

    for (p = copy + 1;; p++) {
        c = *p;
        if (c != '/' && c != '\0')
            continue;
        *p = '\0';
        if (mkdir(copy, mode) < 0 && errno != EEXIST) {
            rc = -errno;
            break;
        }
        *p = c;
        if (c == '\0')
            break;
    }
    free(copy);
    return rc;
}

static void
proc_notify(struct proc_table *pt)
{
    if (pt->change_fn != NULL)
        pt->change_fn(pt->change_arg);
}

static bool
proc_rank_live(const struct proc_rank *r)
{
    return r->state == PROTO_RANK_RUNNING || r->state == PROTO_RANK_PENDING;
}

static bool
proc_job_all_ended(const struct proc_job *job)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        if (proc_rank_live(&job->ranks[i]))
            return false;
    }
    return true;
}

/* Kill what is left of a rank's process group; ESRCH (nothing left) is
 * the normal case. */
static void
proc_rank_kill_group(const struct proc_rank *r, int sig)
{
    if (r->pid > 0 && kill(-r->pid, sig) < 0 && errno != ESRCH)
        log_warn("job=%lld attempt=%d rank=%d pid=%d cannot send signal "
            "%d to process group: %s", (long long)r->job->job,
            r->job->attempt, r->rank, r->pid, sig, strerror(errno));
}

char *
proc_log_path(const struct proc_table *pt, int64_t job, int attempt,
    int rank, const char *stream)
{
    return xasprintf("%s/%lld/%d/rank-%d.%s", pt->ad->log_dir,
        (long long)job, attempt, rank, stream);
}

const char *
proc_state_dir(const struct proc_table *pt)
{
    return pt->jobs_dir;
}

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

void
proc_set_change_cb(struct proc_table *pt, proc_change_fn fn, void *arg)
{
    pt->change_fn = fn;
    pt->change_arg = arg;
}

/* ---- job lifetime ------------------------------------------------------- */

static void
proc_job_free(struct proc_job *job)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        logship_file_release(&r->out);
        logship_file_release(&r->err);
        free(r->stderr_tail);
        free(r->out_path);
        free(r->err_path);
    }
    free(job->ranks);
    free(job);
}

/* Shared by the kill timer and every rank's process handle. */
static void
proc_job_handle_closed(struct proc_job *job)
{
    if (--job->open_handles == 0 && job->closing)
        proc_job_free(job);
}

static void
proc_kill_timer_close_cb(uv_handle_t *h)
{
    proc_job_handle_closed(container_of((uv_timer_t *)h, struct proc_job,
        kill_timer));
}

static void
proc_rank_close_cb(uv_handle_t *h)
{
    struct proc_rank *r = container_of((uv_process_t *)h, struct proc_rank,
        process);

    r->has_process = false;
    proc_job_handle_closed(r->job);
}

static void
proc_job_unlink(struct proc_job *job)
{
    struct proc_table *pt = job->pt;

    if (job->prev != NULL)
        job->prev->next = job->next;
    else
        pt->jobs = job->next;
    if (job->next != NULL)
        job->next->prev = job->prev;
    job->prev = job->next = NULL;
    pt->njobs--;
}

/* Close the job's handles (not its ranks) and free it once closed. */
static void
proc_job_close(struct proc_job *job)
{
    size_t i;

    job->closing = true;
    uv_close((uv_handle_t *)&job->kill_timer, proc_kill_timer_close_cb);
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (r->has_process && !uv_is_closing((uv_handle_t *)&r->process))
            uv_close((uv_handle_t *)&r->process, proc_rank_close_cb);
    }
}

struct proc_job *
proc_job_new(struct proc_table *pt, int64_t jobid, int attempt,
    size_t nranks)
{
    struct proc_job *job = xcalloc(1, sizeof(*job));
    size_t i;
    int rc;

    job->pt = pt;
    job->job = jobid;
    job->attempt = attempt;
    job->nranks = nranks;
    job->ranks = xcalloc(nranks > 0 ? nranks : 1, sizeof(*job->ranks));
    for (i = 0; i < nranks; i++) {
        job->ranks[i].job = job;
        job->ranks[i].out.fd = -1;
        job->ranks[i].err.fd = -1;
    }
    /* uv_timer_init cannot fail on Unix: a failure is a broken
     * invariant. */
    rc = uv_timer_init(pt->ad->loop, &job->kill_timer);
    if (rc < 0)
        fatalx("cannot create timer: %s", uv_strerror(rc));
    job->open_handles = 1;

    job->next = pt->jobs;
    if (pt->jobs != NULL)
        pt->jobs->prev = job;
    pt->jobs = job;
    pt->njobs++;
    return job;
}

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
        const struct proc_rank *r = &job->ranks[i];

        if (r->out.in_flight || r->err.in_flight)
            return false;
        if (!late && (!logship_file_flushed(&r->out)
                || !logship_file_flushed(&r->err)))
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

    for (job = pt->jobs; job != NULL; job = next) {
        next = job->next;
        if (job->desired || !proc_job_all_ended(job))
            continue;
        late = timeid_mono_ms() - job->finished_ms >= PROC_FLUSH_MAX_MS;
        if (!proc_job_logs_settled(job, late))
            continue;
        if (!proc_job_logs_settled(job, false))
            log_warn("job=%lld attempt=%d released with output not yet "
                "shipped to the scheduler", (long long)job->job,
                job->attempt);
        log_info("job=%lld attempt=%d released", (long long)job->job,
            job->attempt);
        proc_job_unlink(job);
        proc_tombstone_add(pt, job->job, job->attempt);
        proc_state_remove(job);
        proc_job_close(job);
        n++;
    }
    return n;
}

/* After a rank ended: note when the whole job finished and persist. */
static void
proc_job_rank_ended(struct proc_job *job)
{
    if (proc_job_all_ended(job)) {
        job->finished_ms = timeid_mono_ms();
        uv_timer_stop(&job->kill_timer);
    }
    proc_state_save(job);
}

/* ---- exits --------------------------------------------------------------- */

static void
proc_rank_log_exit(const struct proc_rank *r)
{
    if (r->state == PROTO_RANK_LOST)
        log_info("job=%lld attempt=%d rank=%d pid=%d lost (ended while not "
            "our child; exit status unknown)", (long long)r->job->job,
            r->job->attempt, r->rank, r->pid);
    else if (r->signal != 0)
        log_info("job=%lld attempt=%d rank=%d pid=%d exited signal=%d",
            (long long)r->job->job, r->job->attempt, r->rank, r->pid,
            r->signal);
    else
        log_info("job=%lld attempt=%d rank=%d pid=%d exited code=%d",
            (long long)r->job->job, r->job->attempt, r->rank, r->pid,
            r->exit_code);
}

static void
proc_rank_exit_cb(uv_process_t *p, int64_t exit_status, int term_signal)
{
    struct proc_rank *r = container_of(p, struct proc_rank, process);
    struct proc_job *job = r->job;

    r->state = PROTO_RANK_EXITED;
    r->end_ms = timeid_now_ms();
    r->end_mono_ms = timeid_mono_ms();
    r->signal = term_signal;
    r->exit_code = term_signal != 0 ? -1 : (int)exit_status;
    /* Background children of the rank must not outlive it. */
    proc_rank_kill_group(r, SIGKILL);
    free(r->stderr_tail);
    r->stderr_tail = proc_read_tail(r->err_path, PROTO_TAIL_MAX);
    proc_rank_log_exit(r);
    uv_close((uv_handle_t *)p, proc_rank_close_cb);

    proc_job_rank_ended(job);
    proc_release_done(job->pt);
    proc_notify(job->pt);
}

static void
proc_poll_cb(uv_timer_t *timer)
{
    struct proc_table *pt = container_of(timer, struct proc_table,
        poll_timer);
    struct proc_job *job;
    uint64_t st;
    size_t i;
    bool changed = false;

    for (job = pt->jobs; job != NULL; job = job->next) {
        for (i = 0; i < job->nranks; i++) {
            struct proc_rank *r = &job->ranks[i];

            if (!r->adopted || r->state != PROTO_RANK_RUNNING)
                continue;
            st = proc_pid_start_time(r->pid);
            if (st != 0 && (r->proc_start == 0 || st == r->proc_start))
                continue;
            r->state = PROTO_RANK_LOST;
            r->end_ms = timeid_now_ms();
            r->end_mono_ms = timeid_mono_ms();
            r->exit_code = -1;
            r->signal = 0;
            proc_rank_kill_group(r, SIGKILL);
            free(r->stderr_tail);
            r->stderr_tail = proc_read_tail(r->err_path, PROTO_TAIL_MAX);
            proc_rank_log_exit(r);
            proc_job_rank_ended(job);
            changed = true;
        }
    }
    if (proc_release_done(pt) > 0)
        changed = true;
    if (changed)
        proc_notify(pt);
}

/* ---- teardown ------------------------------------------------------------ */

static void
proc_kill_timer_cb(uv_timer_t *timer)
{
    struct proc_job *job = container_of(timer, struct proc_job, kill_timer);
    size_t i;

    job->killed = true;
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (!proc_rank_live(r))
            continue;
        log_info("job=%lld attempt=%d rank=%d pid=%d still running after "
            "grace period, sending SIGKILL", (long long)job->job,
            job->attempt, r->rank, r->pid);
        proc_rank_kill_group(r, SIGKILL);
    }
}

void
proc_job_teardown(struct proc_job *job)
{
    size_t i, n = 0;
    int rc;

    if (job->stopping)
        return;
    job->stopping = true;
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (!proc_rank_live(r))
            continue;
        proc_rank_kill_group(r, SIGTERM);
        n++;
    }
    if (n == 0)
        return;
    log_info("job=%lld attempt=%d tearing down ranks=%zu grace_ms=%lld",
        (long long)job->job, job->attempt, n,
        (long long)job->pt->ad->kill_grace_ms);
    rc = uv_timer_start(&job->kill_timer, proc_kill_timer_cb,
        (uint64_t)job->pt->ad->kill_grace_ms, 0);
    if (rc < 0) {
        log_error("job=%lld attempt=%d cannot start kill timer: %s",
            (long long)job->job, job->attempt, uv_strerror(rc));
        proc_kill_timer_cb(&job->kill_timer);
    }
}

/* ---- start --------------------------------------------------------------- */

/* Mark a rank that could not start: it "exited" with code at once, and
 * the reason is its stderr (also written to the file when open). */
static void
proc_rank_fail(struct proc_rank *r, int errfd, int rc, const char *why)
{
    r->state = PROTO_RANK_EXITED;
    r->start_ms = r->end_ms = timeid_now_ms();
    r->end_mono_ms = timeid_mono_ms();
    r->exit_code = proc_spawn_exit_code(rc);
    r->signal = 0;
    free(r->stderr_tail);
    r->stderr_tail = xstrdup(why);
    if (errfd >= 0 && (write(errfd, why, strlen(why)) < 0
            || write(errfd, "\n", 1) < 0))
        log_debug("cannot write to '%s': %s", r->err_path, strerror(errno));
    log_info("job=%lld attempt=%d rank=%d exited code=%d (not started: %s)",
        (long long)r->job->job, r->job->attempt, r->rank, r->exit_code,
        why);
}

static int
proc_open_log(const char *path, const struct proc_user *u, int *fd)
{
    *fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY,
        0640);
    if (*fd < 0)
        return -errno;
    if (u->switch_user && fchown(*fd, u->uid, u->gid) < 0)
        return -errno;
    return 0;
}

static void
proc_rank_start(struct proc_rank *r, const struct proto_launch *l,
    const struct proto_launch_rank *lr, char *const *base, int devnull,
    const struct proc_user *u, int setup_rc, const char *setup_why)
{
    struct proc_job *job = r->job;
    struct proc_table *pt = job->pt;
    uv_process_options_t opts;
    uv_stdio_container_t stdio[3];
    char **env = NULL, why[512];
    int outfd = -1, errfd = -1, rc;

    r->rank = lr->rank;
    r->local_rank = lr->local_rank;
    r->state = PROTO_RANK_PENDING;
    r->out_path = proc_log_path(pt, l->job, l->attempt, lr->rank, "out");
    r->err_path = proc_log_path(pt, l->job, l->attempt, lr->rank, "err");

    if (setup_rc < 0) {
        if (proc_open_log(r->err_path, u, &errfd) < 0 && errfd >= 0) {
            close(errfd);
            errfd = -1;
        }
        proc_rank_fail(r, errfd, setup_rc, setup_why);
        goto out;
    }
    if ((rc = proc_open_log(r->out_path, u, &outfd)) < 0) {
        snprintf(why, sizeof(why), "cannot open '%s': %s", r->out_path,
            strerror(-rc));
        proc_rank_fail(r, -1, rc, why);
        goto out;
    }
    if ((rc = proc_open_log(r->err_path, u, &errfd)) < 0) {
        snprintf(why, sizeof(why), "cannot open '%s': %s", r->err_path,
            strerror(-rc));
        proc_rank_fail(r, -1, rc, why);
        goto out;
    }

    env = proc_build_env(l, lr, pt->ad->node, base);
    memset(&opts, 0, sizeof(opts));
    memset(stdio, 0, sizeof(stdio));
    stdio[0].flags = UV_INHERIT_FD;
    stdio[0].data.fd = devnull;
    stdio[1].flags = UV_INHERIT_FD;
    stdio[1].data.fd = outfd;
    stdio[2].flags = UV_INHERIT_FD;
    stdio[2].data.fd = errfd;
    opts.exit_cb = proc_rank_exit_cb;
    opts.file = l->argv[0];
    opts.args = l->argv;
    opts.env = env;
    opts.cwd = l->workdir;
    opts.stdio = stdio;
    opts.stdio_count = 3;
    /* Its own session and process group, so a kill reaches every process
     * of the rank and none of the agent. */
    opts.flags = UV_PROCESS_DETACHED;
    if (u->switch_user) {
        /* libuv also drops the supplementary groups (setgroups(0)). */
        opts.flags |= UV_PROCESS_SETUID | UV_PROCESS_SETGID;
        opts.uid = u->uid;
        opts.gid = u->gid;
    }

    rc = uv_spawn(pt->ad->loop, &r->process, &opts);
    /* The handle is initialised even when the spawn failed. */
    r->has_process = true;
    job->open_handles++;
    if (rc < 0) {
        uv_close((uv_handle_t *)&r->process, proc_rank_close_cb);
        snprintf(why, sizeof(why), "cannot execute '%s': %s", l->argv[0],
            uv_strerror(rc));
        proc_rank_fail(r, errfd, rc, why);
        goto out;
    }
    r->pid = r->process.pid;
    r->state = PROTO_RANK_RUNNING;
    r->start_ms = timeid_now_ms();
    r->proc_start = proc_pid_start_time(r->pid);
    log_info("job=%lld attempt=%d rank=%d pid=%d started",
        (long long)job->job, job->attempt, r->rank, r->pid);

out:
    proc_env_free(env);
    if (outfd >= 0)
        close(outfd);
    if (errfd >= 0)
        close(errfd);
    logship_file_init(&r->out, r->out_path);
    logship_file_init(&r->err, r->err_path);
}

/* A copy of the agent's environment, with the identity variables of the
 * user the ranks run as. Caller frees with proc_env_free. */
static char **
proc_base_env(const struct passwd *pw)
{
    size_t n = 0, i;
    char **env;

    while (environ != NULL && environ[n] != NULL)
        n++;
    env = xcalloc(n + 1, sizeof(*env));
    for (i = 0; i < n; i++)
        env[i] = xstrdup(environ[i]);
    if (pw != NULL) {
        proc_env_set(&env, "HOME", pw->pw_dir);
        proc_env_set(&env, "USER", pw->pw_name);
        proc_env_set(&env, "LOGNAME", pw->pw_name);
    }
    return env;
}

static void
proc_job_start(struct proc_table *pt, const struct proto_launch *l)
{
    struct agentd *ad = pt->ad;
    struct proc_user u = { 0 };
    struct proc_job *job;
    struct passwd *pw = NULL;
    struct stat st;
    char why[512] = "", **base = NULL, *dir;
    int devnull = -1, rc = 0, mkrc;
    size_t i;

    job = proc_job_new(pt, l->job, l->attempt, l->nranks);
    job->desired = true;
    log_info("job=%lld attempt=%d name=%s user=%s ranks=%zu starting",
        (long long)l->job, l->attempt, l->name != NULL ? l->name : "",
        l->user != NULL ? l->user : "", l->nranks);

    if (ad->run_as_submitter && geteuid() == 0) {
        /* getpwnam may consult NSS (LDAP...); it runs once per launch. */
        errno = 0;
        pw = l->user != NULL && l->user[0] != '\0' ? getpwnam(l->user)
                                                   : NULL;
        if (pw == NULL) {
            rc = errno != 0 ? -errno : -ENOENT;
            snprintf(why, sizeof(why), "cannot run as user '%s': %s",
                l->user != NULL ? l->user : "",
                errno != 0 ? strerror(errno) : "no such user on this node");
        } else {
            u.uid = pw->pw_uid;
            u.gid = pw->pw_gid;
            u.switch_user = u.uid != 0 || u.gid != 0;
        }
    }
    base = proc_base_env(u.switch_user ? pw : NULL);

    /* The directory is made even for a launch that fails already, so the
     * reason also lands in the rank's .err file (and the shipped log). */
    dir = xasprintf("%s/%lld/%d", ad->log_dir, (long long)l->job,
        l->attempt);
    if ((mkrc = proc_mkdir_p(dir, 0755)) < 0 && rc == 0) {
        rc = mkrc;
        snprintf(why, sizeof(why), "cannot create log directory '%s': %s",
            dir, strerror(-rc));
    }
    if (rc == 0 && u.switch_user && chown(dir, u.uid, u.gid) < 0) {
        rc = -errno;
        snprintf(why, sizeof(why), "cannot give log directory '%s' to "
            "user '%s': %s", dir, l->user, strerror(errno));
    }
    free(dir);
    if (rc == 0 && l->argc == 0) {
        rc = -EINVAL;
        snprintf(why, sizeof(why), "empty command line");
    }
    if (rc == 0) {
        if (stat(l->workdir, &st) < 0)
            rc = -errno;
        else if (!S_ISDIR(st.st_mode))
            rc = -ENOTDIR;
        if (rc < 0)
            snprintf(why, sizeof(why), "cannot change to working directory "
                "'%s': %s", l->workdir, strerror(-rc));
    }
    if (rc == 0 && (devnull = open("/dev/null", O_RDONLY | O_CLOEXEC)) < 0) {
        rc = -errno;
        snprintf(why, sizeof(why), "cannot open /dev/null: %s",
            strerror(errno));
    }

    for (i = 0; i < l->nranks; i++)
        proc_rank_start(&job->ranks[i], l, &l->ranks[i], base, devnull, &u,
            rc, why);

    if (devnull >= 0)
        close(devnull);
    proc_env_free(base);
    if (proc_job_all_ended(job))
        job->finished_ms = timeid_mono_ms();
    proc_state_save(job);
}

/* ---- the table ----------------------------------------------------------- */

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
            continue;
        }
        if (proc_tombstoned(pt, l->job, l->attempt)) {
            log_debug("job=%lld attempt=%d already ran here, not starting "
                "it again", (long long)l->job, l->attempt);
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

void
proc_fill_report(const struct proc_table *pt, struct proto_node_report *rep)
{
    const struct proc_job *job;
    size_t n = 0, i;

    rep->jobs = xcalloc(pt->njobs + 1, sizeof(*rep->jobs));
    for (job = pt->jobs; job != NULL; job = job->next, n++) {
        struct proto_job_status *js = &rep->jobs[n];

        js->job = job->job;
        js->attempt = job->attempt;
        js->nranks = job->nranks;
        js->ranks = xcalloc(job->nranks + 1, sizeof(*js->ranks));
        for (i = 0; i < job->nranks; i++) {
            const struct proc_rank *r = &job->ranks[i];
            struct proto_rank_status *rs = &js->ranks[i];

            rs->rank = r->rank;
            rs->state = r->state;
            rs->pid = r->pid;
            rs->start_ms = r->start_ms;
            rs->end_ms = r->end_ms;
            rs->exit_code = r->exit_code;
            rs->signal = r->signal;
            rs->stderr_tail = r->stderr_tail != NULL
                ? xstrdup(r->stderr_tail) : NULL;
        }
    }
    rep->njobs = n;
}

static void
proc_table_close_cb(uv_handle_t *h)
{
    struct proc_table *pt = container_of((uv_timer_t *)h, struct proc_table,
        poll_timer);

    free(pt->jobs_dir);
    free(pt->tomb);
    free(pt);
}

struct proc_table *
proc_create(struct agentd *ad, struct err *err)
{
    struct proc_table *pt = xcalloc(1, sizeof(*pt));
    int rc;

    pt->ad = ad;
    pt->jobs_dir = xasprintf("%s/jobs", ad->state_dir);
    pt->tomb = xcalloc(PROC_TOMBSTONES, sizeof(*pt->tomb));
    if ((rc = proc_mkdir_p(pt->jobs_dir, 0700)) < 0) {
        err_set(err, rc, "cannot create '%s': %s", pt->jobs_dir,
            strerror(-rc));
        goto fail;
    }
    if ((rc = proc_mkdir_p(ad->log_dir, 0755)) < 0) {
        err_set(err, rc, "cannot create log directory '%s': %s",
            ad->log_dir, strerror(-rc));
        goto fail;
    }
    rc = uv_timer_init(ad->loop, &pt->poll_timer);
    if (rc < 0) {
        err_set(err, rc, "cannot create timer: %s", uv_strerror(rc));
        goto fail;
    }
    rc = uv_timer_start(&pt->poll_timer, proc_poll_cb, PROC_POLL_MS,
        PROC_POLL_MS);
    if (rc < 0) {
        err_set(err, rc, "cannot start timer: %s", uv_strerror(rc));
        uv_close((uv_handle_t *)&pt->poll_timer, proc_table_close_cb);
        return NULL;
    }
    proc_state_adopt(pt);
    return pt;

fail:
    free(pt->jobs_dir);
    free(pt->tomb);
    free(pt);
    return NULL;
}

void
proc_destroy(struct proc_table *pt)
{
    struct proc_job *job;

    if (pt == NULL)
        return;
    /* Ranks keep running: only our handles go. Their records stay in
     * <state_dir>/jobs for the next agent. */
    while ((job = pt->jobs) != NULL) {
        proc_job_unlink(job);
        proc_job_close(job);
    }
    uv_close((uv_handle_t *)&pt->poll_timer, proc_table_close_cb);
}
