/*
 * supervisor.c - start the ranks of one attempt, hold its lease, keep exits
 *
 * One loop: poll(2) on a signalfd (SIGCHLD, SIGTERM, SIGINT, SIGHUP
 * blocked and read from it) with a timeout of at most SUPERVISOR_POLL_MS,
 * shortened to the lease deadline and to the end of the kill grace. Every
 * turn reaps what exited (WNOHANG, so coalesced SIGCHLDs lose nothing),
 * checks the lease and the stop file, and rewrites status.json if
 * anything changed. Time is CLOCK_MONOTONIC, the clock the agent writes
 * the lease deadline in, so a wall-clock step can neither fence ranks
 * early nor keep them alive late.
 *
 * Why a separate process rather than the agent: an agent that is
 * partitioned from the scheduler, frozen or restarting must not leave ranks
 * that race the scheduler's next attempt (the lease), and a restarted
 * agent must still learn how the ranks ended (status.json). Both need a
 * process that outlives the agent and stays simple enough not to fail.
 */
#include "agent/supervisor.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/orphan.h"
#include "agent/procfs.h"
#include "agent/supfile.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

extern char **environ;

/* Once every rank exited, how long leftover descendants (already sent
 * SIGKILL) may take to die before the supervisor gives up on them. */
#define SUPERVISOR_SWEEP_MS 10000
#define SUPERVISOR_SWEEP_POLL_MS 20

struct supervisor {
    const char *dir;
    char *stop_path;
    struct supfile_spec spec;
    struct supfile_status st;
    int sigfd;
    int64_t deadline; /* lease, CLOCK_MONOTONIC ms */
    int64_t next_lease_check;
    int lease_err;  /* last lease read error logged; 0 none */
    char *jobs_dir; /* where agent.lock is; NULL: not watched */
    int agent_fd;   /* agent.lock, watched; -1 none */
    /* CLOCK_MONOTONIC ms since which nobody holds agent.lock; 0 while an
     * agent does */
    int64_t orphan_since;
    bool stopped_seen; /* the agent stopped on purpose (agent.stopped) */
    int gate[2];       /* ranks wait on it until recorded */
    int *why_fd;       /* per rank: read end of its launch error pipe,
                        * -1 none */
    int64_t kill_at;   /* stopping: SIGKILL at this time */
    bool killed;       /* SIGKILL sent after the grace */
    size_t live;       /* ranks not yet reaped */
    bool dirty;        /* status.json is behind */
    int save_err;      /* last save error logged; 0 none */
};

/* ---- helpers ------------------------------------------------------------ */

/* printf to a file descriptor, whole line or nothing useful lost; used
 * in the child between fork and exec, where stdio buffers are not ours. */
__attribute__((format(printf, 2, 3))) static void
supervisor_fdprintf(int fd, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    size_t off = 0;
    ssize_t n;
    int len;

    va_start(ap, fmt);
    len = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (len < 0)
        return;
    if ((size_t)len >= sizeof(buf))
        len = (int)sizeof(buf) - 1;
    while (off < (size_t)len) {
        n = write(fd, buf + off, (size_t)len - off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;
        off += (size_t)n;
    }
}

static int
supervisor_close_fd_cb(int fd, void *arg)
{
    (void)arg;
    if (fd > 2)
        close(fd);
    return 0;
}

/* The agent's descriptors must not leak into ranks (curl sockets, the
 * agent's files): keep only stdin, stdout and stderr. */
static void
supervisor_close_fds(void)
{
    int fd;

    if (procfs_each_fd(supervisor_close_fd_cb, NULL) < 0) {
        for (fd = 3; fd < 1024; fd++)
            close(fd);
    }
}

static void
supervisor_save(struct supervisor *sv)
{
    int rc = supfile_status_save(sv->dir, &sv->st);

    if (rc < 0) {
        /* Logged once per distinct error; retried on the next turn. */
        if (rc != sv->save_err)
            log_error("job=%lld attempt=%d cannot write '%s/%s': %s",
                (long long)sv->st.job, sv->st.attempt, sv->dir, SUPFILE_STATUS,
                strerror(-rc));
        sv->save_err = rc;
        return;
    }
    if (sv->save_err != 0)
        log_notice("job=%lld attempt=%d status.json written again",
            (long long)sv->st.job, sv->st.attempt);
    sv->save_err = 0;
    sv->dirty = false;
}

static void
supervisor_kill_group(const struct supervisor *sv, size_t i, int sig)
{
    const struct supfile_rank_status *rs = &sv->st.ranks[i];

    if (rs->pid > 0 && kill(-rs->pid, sig) < 0 && errno != ESRCH)
        log_warn("job=%lld attempt=%d rank=%d pid=%d cannot send signal %d "
                 "to process group: %s",
            (long long)sv->st.job, sv->st.attempt, rs->rank, rs->pid, sig,
            strerror(errno));
}

/* ---- starting ranks ----------------------------------------------------- */

/* In the child: the rank could not be started for a reason of the job's
 * own. The sentence goes to its stderr and to why_fd (the launch error;
 * closed on exec, so a rank that started writes nothing there). */
__attribute__((noreturn, format(printf, 3, 4))) static void
supervisor_child_fail(int code, int why_fd, const char *fmt, ...)
{
    char buf[SUPFILE_LAUNCH_ERROR_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    supervisor_fdprintf(2, "%s\n", buf);
    if (why_fd >= 0)
        supervisor_fdprintf(why_fd, "%s", buf);
    _exit(code);
}

int
supervisor_path_find(const char *path, const char *name, char *out, size_t len)
{
    const char *p = path != NULL ? path : "/bin:/usr/bin";
    struct stat st;

    for (;;) {
        size_t n = strcspn(p, ":");
        int w = n == 0 ? snprintf(out, len, "%s", name)
                       : snprintf(out, len, "%.*s/%s", (int)n, p, name);

        if (w < 0 || (size_t)w >= len)
            return -ENAMETOOLONG;
        if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode))
            return 0;
        if (p[n] == '\0')
            return -ENOENT;
        p += n + 1;
    }
}

/* How much of a long PATH a launch error shows (the scheduler's reason
 * must still have room for where it happened). */
#define SUPERVISOR_PATH_SHOWN 120

/* In the child: why execvp(argv[0]) failed with e, into buf. A bare
 * name that was not found names the PATH searched; one that was found
 * names the file (a missing interpreter, no execute permission). */
static void
supervisor_exec_why(const struct supfile_spec_rank *r, int e, char *buf,
    size_t len)
{
    const char *name = r->argv[0], *path = NULL;
    char found[PATH_MAX];
    size_t i;

    if (strchr(name, '/') != NULL || (e != ENOENT && e != EACCES)) {
        snprintf(buf, len, "cannot execute '%.300s': %s", name, strerror(e));
        return;
    }
    for (i = 0; r->env != NULL && r->env[i] != NULL && path == NULL; i++) {
        if (strncmp(r->env[i], "PATH=", 5) == 0)
            path = r->env[i] + 5;
    }
    if (supervisor_path_find(path, name, found, sizeof(found)) == 0)
        snprintf(buf, len, "cannot execute '%.100s' (found as '%.240s'): %s",
            name, found, strerror(e));
    else
        snprintf(buf, len, "cannot execute '%.100s': %s (not in %s%.*s%s)",
            name, strerror(e), path != NULL ? "PATH=" : "the default PATH ",
            SUPERVISOR_PATH_SHOWN, path != NULL ? path : "/bin:/usr/bin",
            path != NULL && strlen(path) > SUPERVISOR_PATH_SHOWN ? "..." : "");
}

/* In the child: become the rank. Never returns. */
__attribute__((noreturn)) static void
supervisor_child(const struct supfile_spec_rank *r, const int gate[2],
    int why_fd)
{
    char go, why[SUPFILE_LAUNCH_ERROR_MAX];
    struct sigaction sa;
    sigset_t none;
    ssize_t n;
    int fd, outfd, errfd, e, sig;

    /* A fresh process: default dispositions, nothing blocked (the mask
     * survives exec). */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    for (sig = 1; sig < NSIG; sig++) {
        if (sig != SIGKILL && sig != SIGSTOP)
            sigaction(sig, &sa, NULL);
    }
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Also done by the parent: whoever runs first, the group exists before
     * anyone signals it. */
    setpgid(0, 0);
    /* Run nothing of the user's before status.json names this process: a
     * supervisor that dies in between leaves no rank the agent cannot find
     * and kill. EOF means it died before recording us. */
    close(gate[1]);
    do
        n = read(gate[0], &go, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        _exit(125);

    /* Until the rank's files are open, fd 2 is supervisor.log. */
    if (r->gid >= 0) {
        if (setgroups(r->ngroups, r->groups) < 0 || setgid((gid_t)r->gid) < 0) {
            supervisor_fdprintf(2,
                "rank %d: cannot switch to group %lld: "
                "%s\n",
                r->rank, (long long)r->gid, strerror(errno));
            _exit(126);
        }
    }
    if (r->uid >= 0 && setuid((uid_t)r->uid) < 0) {
        supervisor_fdprintf(2, "rank %d: cannot switch to user %lld: %s\n",
            r->rank, (long long)r->uid, strerror(errno));
        _exit(126);
    }
    /* Opened as the rank's user, without following a symbolic link: the
     * files lie in a directory that user owns. */
    outfd = open(r->out_path,
        O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY, 0640);
    errfd = outfd < 0
                ? -1
                : open(r->err_path,
                      O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY,
                      0640);
    if (outfd < 0 || errfd < 0) {
        e = errno;
        supervisor_fdprintf(2, "rank %d: cannot open '%s': %s\n", r->rank,
            outfd < 0 ? r->out_path : r->err_path, strerror(e));
        _exit(126);
    }
    fd = open("/dev/null", O_RDONLY);
    if (fd < 0 || dup2(fd, 0) < 0 || dup2(outfd, 1) < 0 || dup2(errfd, 2) < 0) {
        e = errno;
        supervisor_fdprintf(errfd, "cannot set up standard streams: %s\n",
            strerror(e));
        _exit(126);
    }
    if (fd > 2)
        close(fd);
    if (outfd > 2)
        close(outfd);
    if (errfd > 2)
        close(errfd);

    if (chdir(r->cwd) < 0) {
        e = errno;
        supervisor_child_fail(supfile_exec_exit_code(-e), why_fd,
            "cannot change to working directory '%s': %s", r->cwd, strerror(e));
    }
    /* execvp searches the PATH of `environ`: the rank's own. */
    environ = r->env;
    execvp(r->argv[0], r->argv);
    e = errno;
    supervisor_exec_why(r, e, why, sizeof(why));
    supervisor_child_fail(supfile_exec_exit_code(-e), why_fd, "%s", why);
}

static void
supervisor_rank_start(struct supervisor *sv, size_t i)
{
    const struct supfile_spec_rank *r = &sv->spec.ranks[i];
    struct supfile_rank_status *rs = &sv->st.ranks[i];
    int why[2] = { -1, -1 };
    pid_t pid;
    int fd, e;

    rs->rank = r->rank;
    rs->start_ms = timeid_now_ms();
    /* Without the pipe the rank still runs; a launch error is then only
     * an exit code and its stderr. */
    if (pipe2(why, O_CLOEXEC | O_NONBLOCK) < 0)
        log_warn("job=%lld attempt=%d rank=%d cannot create a pipe: %s",
            (long long)sv->st.job, sv->st.attempt, r->rank, strerror(errno));
    pid = r->argc > 0 ? fork() : -1;
    if (pid == 0)
        supervisor_child(r, sv->gate, why[1]);
    if (why[1] >= 0)
        close(why[1]);
    if (pid < 0 && why[0] >= 0) {
        close(why[0]);
        why[0] = -1;
    }
    sv->why_fd[i] = why[0];
    if (pid < 0) {
        e = r->argc > 0 ? errno : EINVAL;
        rs->exited = true;
        rs->exit_code = 126;
        rs->end_ms = rs->start_ms;
        fd = open(r->err_path,
            O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC,
            0640);
        if (fd >= 0) {
            supervisor_fdprintf(fd, "cannot start rank %d: %s\n", r->rank,
                r->argc > 0 ? strerror(e) : "empty command line");
            close(fd);
        }
        log_error("job=%lld attempt=%d rank=%d cannot start: %s",
            (long long)sv->st.job, sv->st.attempt, r->rank, strerror(e));
        return;
    }
    if (setpgid(pid, pid) < 0 && errno != EACCES && errno != ESRCH)
        log_warn("job=%lld attempt=%d rank=%d pid=%d setpgid: %s",
            (long long)sv->st.job, sv->st.attempt, r->rank, (int)pid,
            strerror(errno));
    rs->pid = (int)pid;
    rs->proc_start = procfs_start_time((int)pid);
    sv->live++;
    log_info("job=%lld attempt=%d rank=%d pid=%d started",
        (long long)sv->st.job, sv->st.attempt, r->rank, (int)pid);
}

/* One byte per started rank, then close: every rank reads its byte. */
static void
supervisor_open_gate(struct supervisor *sv)
{
    char go[256];
    size_t i, n = 0, want;
    ssize_t w;

    for (i = 0; i < sv->st.nranks; i++) {
        if (sv->st.ranks[i].pid > 0)
            n++;
    }
    memset(go, 'g', sizeof(go));
    while (n > 0) {
        want = n < sizeof(go) ? n : sizeof(go);
        w = write(sv->gate[1], go, want);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break; /* EPIPE: every rank died already */
        n -= (size_t)w;
    }
    close(sv->gate[0]);
    close(sv->gate[1]);
    sv->gate[0] = sv->gate[1] = -1;
}

/* ---- events ------------------------------------------------------------- */

/* Rank i was reaped: what it wrote to its launch error pipe before it
 * exited, if anything, is why it could not be started. */
static void
supervisor_read_why(struct supervisor *sv, size_t i)
{
    struct supfile_rank_status *rs = &sv->st.ranks[i];
    ssize_t n;

    if (sv->why_fd[i] < 0)
        return;
    do
        n = read(sv->why_fd[i], rs->launch_error, sizeof(rs->launch_error) - 1);
    while (n < 0 && errno == EINTR);
    rs->launch_error[n > 0 ? n : 0] = '\0';
    close(sv->why_fd[i]);
    sv->why_fd[i] = -1;
    if (n > 0)
        log_info("job=%lld attempt=%d rank=%d not started: %s",
            (long long)sv->st.job, sv->st.attempt, rs->rank, rs->launch_error);
}

/* Reap every exited child. Returns -ECHILD once there is no child left,
 * else 0. */
static int
supervisor_reap(struct supervisor *sv)
{
    struct supfile_rank_status *rs;
    siginfo_t si;
    int status;
    pid_t pid;
    size_t i;

    for (;;) {
        /* Look before reaping: while an exited rank is a zombie, its pid,
         * and so its process group id, cannot be reused. */
        memset(&si, 0, sizeof(si));
        if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0) {
            if (errno == EINTR)
                continue;
            return errno == ECHILD ? -ECHILD : 0;
        }
        pid = si.si_pid;
        if (pid == 0)
            return 0;
        for (i = 0; i < sv->st.nranks; i++) {
            if (sv->st.ranks[i].pid == (int)pid && !sv->st.ranks[i].exited)
                break;
        }
        /* Background children of the rank must not outlive it. */
        if (i < sv->st.nranks)
            supervisor_kill_group(sv, i, SIGKILL);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        if (i == sv->st.nranks)
            continue; /* an orphaned descendant of a rank */
        rs = &sv->st.ranks[i];
        rs->exited = true;
        rs->end_ms = timeid_now_ms();
        supervisor_read_why(sv, i);
        if (WIFSIGNALED(status)) {
            rs->exit_code = -1;
            rs->signal = WTERMSIG(status);
        } else {
            rs->exit_code = WEXITSTATUS(status);
            rs->signal = 0;
        }
        sv->live--;
        sv->dirty = true;
        if (rs->signal != 0)
            log_info("job=%lld attempt=%d rank=%d pid=%d exited signal=%d",
                (long long)sv->st.job, sv->st.attempt, rs->rank, rs->pid,
                rs->signal);
        else
            log_info("job=%lld attempt=%d rank=%d pid=%d exited code=%d",
                (long long)sv->st.job, sv->st.attempt, rs->rank, rs->pid,
                rs->exit_code);
    }
}

static void
supervisor_stop(struct supervisor *sv, const char *why)
{
    int64_t now = timeid_mono_ms();
    size_t i;

    if (sv->st.stopping)
        return;
    sv->st.stopping = true;
    sv->dirty = true;
    log_info("job=%lld attempt=%d stopping (%s): SIGTERM to ranks=%zu "
             "grace_ms=%lld",
        (long long)sv->st.job, sv->st.attempt, why, sv->live,
        (long long)sv->spec.kill_grace_ms);
    for (i = 0; i < sv->st.nranks; i++) {
        if (!sv->st.ranks[i].exited)
            supervisor_kill_group(sv, i, SIGTERM);
    }
    sv->kill_at = now + sv->spec.kill_grace_ms;
}

/* Whether the orphan grace ends before the lease. */
static bool
supervisor_orphan_first(const struct supervisor *sv)
{
    return sv->orphan_since != 0 &&
           sv->orphan_since + sv->spec.orphan_ms < sv->deadline;
}

/* The lease deadline, or the end of the orphan grace when sooner. */
static int64_t
supervisor_deadline(const struct supervisor *sv)
{
    return supervisor_orphan_first(sv) ? sv->orphan_since + sv->spec.orphan_ms
                                       : sv->deadline;
}

static void
supervisor_fence(struct supervisor *sv, int64_t now)
{
    size_t i;

    log_warn("job=%lld attempt=%d %s %lld ms ago: killing ranks=%zu",
        (long long)sv->st.job, sv->st.attempt,
        supervisor_orphan_first(sv)
            ? "the agent is gone and none took over; the grace ended"
            : "lease expired",
        (long long)(now - supervisor_deadline(sv)), sv->live);
    for (i = 0; i < sv->st.nranks; i++) {
        if (sv->st.ranks[i].exited)
            continue;
        supervisor_kill_group(sv, i, SIGKILL);
        sv->st.ranks[i].fenced = true;
    }
    sv->st.fenced = true;
    sv->dirty = true;
    /* Say so at once: the agent reports it before the reaping is done. */
    supervisor_save(sv);
}

/*
 * Whether our agent is still there (docs/fault-tolerance.md "An agent
 * that dies"): the kernel drops agent.lock when it dies, however it dies.
 * Without one, the ranks are kept spec.orphan_ms at most (or the lease,
 * when sooner); an agent that takes the lock meanwhile (a restarted one)
 * takes them over, and the lease rules again.
 */
static void
supervisor_check_agent(struct supervisor *sv, int64_t now)
{
    int alive;

    if (sv->agent_fd < 0)
        return;
    alive = supfile_agent_alive(sv->agent_fd);
    if (alive == 0 && sv->orphan_since == 0) {
        /* The file, not only our descriptor's inode: an agent that found
         * agent.lock replaced locks the new one. */
        int fd = -1;

        if (supfile_agent_lock_open(sv->jobs_dir, &fd) == 0) {
            close(sv->agent_fd);
            sv->agent_fd = fd;
            alive = supfile_agent_alive(sv->agent_fd);
        }
    }
    if (alive < 0)
        return; /* cannot tell: the lease decides */
    if (alive > 0) {
        if (sv->orphan_since != 0)
            log_info("job=%lld attempt=%d an agent took the ranks over",
                (long long)sv->st.job, sv->st.attempt);
        sv->orphan_since = 0;
        sv->stopped_seen = false;
        return;
    }
    if (sv->orphan_since != 0)
        return;
    if (supfile_agent_stopped(sv->jobs_dir)) {
        if (!sv->stopped_seen)
            log_info("job=%lld attempt=%d the agent stopped on purpose: the "
                     "lease decides",
                (long long)sv->st.job, sv->st.attempt);
        sv->stopped_seen = true;
        return;
    }
    sv->orphan_since = now;
    log_warn("job=%lld attempt=%d the agent is gone: ranks=%zu are killed in "
             "%lld ms unless an agent takes them over",
        (long long)sv->st.job, sv->st.attempt, sv->live,
        (long long)(supervisor_deadline(sv) - now));
}

static void
supervisor_check_lease(struct supervisor *sv, int64_t now)
{
    int64_t d;
    int rc;

    if (sv->st.fenced || sv->live == 0)
        return;
    if (now >= sv->next_lease_check || now > sv->deadline) {
        /* A missing or damaged file keeps the last deadline: the agent
         * writes it atomically, so this is an operator's doing, and the
         * ranks must still die when that deadline passes. */
        rc = supfile_lease_read(sv->dir, &d);
        if (rc == 0) {
            sv->deadline = d;
            sv->lease_err = 0;
        } else if (rc != sv->lease_err) {
            log_warn("job=%lld attempt=%d cannot read lease: %s (keeping "
                     "the last deadline)",
                (long long)sv->st.job, sv->st.attempt, strerror(-rc));
            sv->lease_err = rc;
        }
        supervisor_check_agent(sv, now);
        sv->next_lease_check = now + SUPERVISOR_POLL_MS;
    }
    if (now > supervisor_deadline(sv))
        supervisor_fence(sv, now);
}

static void
supervisor_check_stop(struct supervisor *sv, int64_t now)
{
    size_t i;

    if (sv->live == 0)
        return;
    if (!sv->st.stopping && access(sv->stop_path, F_OK) == 0)
        supervisor_stop(sv, "stop file");
    if (!sv->st.stopping || sv->killed || now < sv->kill_at)
        return;
    sv->killed = true;
    log_info("job=%lld attempt=%d ranks=%zu still running after the grace "
             "period, sending SIGKILL",
        (long long)sv->st.job, sv->st.attempt, sv->live);
    for (i = 0; i < sv->st.nranks; i++) {
        if (!sv->st.ranks[i].exited)
            supervisor_kill_group(sv, i, SIGKILL);
    }
}

static void
supervisor_read_signals(struct supervisor *sv)
{
    struct signalfd_siginfo si;
    ssize_t n;

    for (;;) {
        n = read(sv->sigfd, &si, sizeof(si));
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof(si))
            return;
        /* SIGTERM/SIGINT to the supervisor itself (a kill of the whole
         * cgroup, an operator) mean the same as the stop file. SIGHUP is
         * ignored: there is no terminal. SIGCHLD: reaped after this. */
        if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
            supervisor_stop(sv, si.ssi_signo == SIGTERM ? "SIGTERM" : "SIGINT");
    }
}

/* Time until something is due, in ms for poll(2). */
static int
supervisor_timeout(const struct supervisor *sv, int64_t now)
{
    int64_t t = SUPERVISOR_POLL_MS;

    if (sv->live > 0 && !sv->st.fenced) {
        if (sv->next_lease_check - now < t)
            t = sv->next_lease_check - now;
        /* Wake just past the deadline: "now > deadline" fences. */
        int64_t d = supervisor_deadline(sv);

        if (d >= now && d - now + 1 < t)
            t = d - now + 1;
    }
    if (sv->st.stopping && !sv->killed && sv->kill_at - now < t)
        t = sv->kill_at - now;
    return t < 0 ? 0 : (int)t;
}

/* ---- the end ------------------------------------------------------------ */

struct supervisor_sweep {
    int self;
    int killed;
};

static int
supervisor_kill_child_cb(int pid, void *arg)
{
    struct supervisor_sweep *sw = arg;
    struct procfs_stat st;

    if (procfs_stat(pid, &st) == 0 && st.ppid == sw->self &&
        kill(pid, SIGKILL) == 0)
        sw->killed++;
    return 0;
}

/* SIGKILL every process whose parent we are (orphaned descendants of the
 * ranks, reparented to us as the subreaper). Returns how many. */
static int
supervisor_kill_children(void)
{
    struct supervisor_sweep sw = { .self = (int)getpid(), .killed = 0 };

    procfs_each(0, supervisor_kill_child_cb, &sw);
    return sw.killed;
}

static void
supervisor_finish(struct supervisor *sv)
{
    int64_t end = timeid_mono_ms() + SUPERVISOR_SWEEP_MS;
    struct pollfd pfd = { .fd = sv->sigfd, .events = POLLIN };
    int left = 0;

    /* Leftovers must never survive the job. Each rank's group was killed
     * when the rank exited (it could not be later: once the rank is
     * reaped its pid may name someone else's group); what escaped its
     * group (setsid) or was forked meanwhile is our descendant, and ends
     * up our child: kill our children until none is left. */
    while (supervisor_reap(sv) != -ECHILD) {
        if (timeid_mono_ms() >= end) {
            log_warn("job=%lld attempt=%d descendants=%d still alive %d ms "
                     "after SIGKILL; giving up on them",
                (long long)sv->st.job, sv->st.attempt, left,
                SUPERVISOR_SWEEP_MS);
            break;
        }
        left = supervisor_kill_children();
        if (poll(&pfd, 1, SUPERVISOR_SWEEP_POLL_MS) > 0)
            supervisor_read_signals(sv);
    }
    sv->st.done = true;
    sv->dirty = true;
    while (sv->dirty && timeid_mono_ms() < end + SUPERVISOR_SWEEP_MS) {
        supervisor_save(sv);
        if (sv->dirty)
            poll(NULL, 0, SUPERVISOR_POLL_MS);
    }
    log_info("job=%lld attempt=%d done%s", (long long)sv->st.job,
        sv->st.attempt, sv->st.fenced ? " (fenced)" : "");
}

/*
 * Every rank is reaped. If no agent holds them, none will report how they
 * ended in time: tell the scheduler they are dead, so it replaces the
 * attempt now rather than after the node's timeout and its witnesses'
 * gate (docs/fault-tolerance.md "An agent that dies"). Ranks that ended
 * on their own first give an agent the rest of the grace to take them
 * over, so that a restarted one reports their real ends.
 */
static void
supervisor_orphan_notice(struct supervisor *sv)
{
    char where[96];
    int64_t now;
    int rc;

    if (sv->agent_fd < 0 || sv->spec.fence_key[0] == '\0')
        return;
    for (;;) {
        now = timeid_mono_ms();
        supervisor_check_agent(sv, now);
        if (sv->orphan_since == 0)
            return; /* an agent holds us: it reports */
        if (sv->st.fenced || now >= sv->orphan_since + sv->spec.orphan_ms)
            break;
        poll(NULL, 0, SUPERVISOR_POLL_MS);
    }
    rc = orphan_notice_send(sv->jobs_dir, &sv->spec, where, sizeof(where));
    if (rc < 0)
        log_warn("job=%lld attempt=%d cannot tell the scheduler at %s that "
                 "its ranks are dead: %s",
            (long long)sv->st.job, sv->st.attempt, where,
            rc == -ENOENT ? "the agent never reached it over TCP"
                          : strerror(-rc));
    else
        log_info("job=%lld attempt=%d told the scheduler at %s that its "
                 "ranks are dead and no agent holds them",
            (long long)sv->st.job, sv->st.attempt, where);
}

/* ---- run ---------------------------------------------------------------- */

static int
supervisor_setup(struct supervisor *sv)
{
    struct err err = { 0 };
    sigset_t mask;
    char pid[32];
    int n, rc;

    if ((rc = supfile_spec_load(sv->dir, &sv->spec, &err)) < 0) {
        log_error("cannot load '%s/%s': %s", sv->dir, SUPFILE_SPEC, err.msg);
        return rc;
    }
    if ((rc = supfile_lease_read(sv->dir, &sv->deadline)) < 0) {
        log_error("cannot read '%s/%s': %s", sv->dir, SUPFILE_LEASE,
            strerror(-rc));
        return rc;
    }
    if (prctl(PR_SET_CHILD_SUBREAPER, 1) < 0) {
        rc = -errno;
        log_error("cannot become a child subreaper: %s", strerror(errno));
        return rc;
    }
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    sigaddset(&mask, SIGTERM);
    sigaddset(&mask, SIGINT);
    sigaddset(&mask, SIGHUP);
    /* A write to the gate after its readers died must not kill us; ranks
     * get the default back before exec. */
    signal(SIGPIPE, SIG_IGN);
    if (pipe2(sv->gate, O_CLOEXEC) < 0) {
        rc = -errno;
        log_error("cannot create a pipe: %s", strerror(errno));
        return rc;
    }
    if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ||
        (sv->sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC)) < 0) {
        rc = -errno;
        log_error("cannot watch signals: %s", strerror(errno));
        return rc;
    }
    if (sv->spec.orphan_ms > 0) {
        sv->jobs_dir = xasprintf("%s/..", sv->dir);
        /* Unwatchable: the lease alone decides, as before agent.lock. */
        if ((rc = supfile_agent_lock_open(sv->jobs_dir, &sv->agent_fd)) < 0)
            log_error("cannot open '%s/%s': %s; the lease alone decides",
                sv->jobs_dir, SUPFILE_AGENT_LOCK, strerror(-rc));
    }
    n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
    if ((rc = supfile_write_atomic(sv->dir, SUPFILE_PID, pid, (size_t)n,
             0600)) < 0)
        log_warn("cannot write '%s/%s': %s", sv->dir, SUPFILE_PID,
            strerror(-rc));
    return 0;
}

int
supervisor_run(const char *dir)
{
    struct supervisor sv;
    struct pollfd pfd;
    int64_t now;
    size_t i;
    int n, status = 2;

    memset(&sv, 0, sizeof(sv));
    sv.dir = dir;
    sv.sigfd = -1;
    sv.gate[0] = sv.gate[1] = -1;
    sv.agent_fd = -1;
    sv.stop_path = xasprintf("%s/%s", dir, SUPFILE_STOP);
    supervisor_close_fds();
    if (supervisor_setup(&sv) < 0)
        goto out;

    sv.st.job = sv.spec.job;
    sv.st.attempt = sv.spec.attempt;
    sv.st.pid = (int)getpid();
    sv.st.nranks = sv.spec.nranks;
    sv.st.ranks = xcalloc(sv.spec.nranks + 1, sizeof(*sv.st.ranks));
    sv.why_fd = xcalloc(sv.spec.nranks + 1, sizeof(*sv.why_fd));
    for (i = 0; i < sv.spec.nranks; i++)
        sv.why_fd[i] = -1;
    log_info("job=%lld attempt=%d ranks=%zu starting", (long long)sv.st.job,
        sv.st.attempt, sv.st.nranks);
    for (i = 0; i < sv.spec.nranks; i++)
        supervisor_rank_start(&sv, i);
    sv.next_lease_check = timeid_mono_ms() + SUPERVISOR_POLL_MS;
    supervisor_save(&sv);
    /* Recorded (or, if status.json cannot be written, as good as it gets:
     * the lease still holds): let the ranks exec. */
    supervisor_open_gate(&sv);

    pfd.fd = sv.sigfd;
    pfd.events = POLLIN;
    for (;;) {
        now = timeid_mono_ms();
        supervisor_check_lease(&sv, now);
        supervisor_check_stop(&sv, now);
        if (sv.dirty)
            supervisor_save(&sv);
        if (sv.live == 0)
            break;
        n = poll(&pfd, 1, supervisor_timeout(&sv, timeid_mono_ms()));
        if (n < 0 && errno != EINTR)
            fatal("poll");
        if (n > 0)
            supervisor_read_signals(&sv);
        supervisor_reap(&sv);
    }
    supervisor_finish(&sv);
    supervisor_orphan_notice(&sv);
    status = 0;
out:
    if (sv.sigfd >= 0)
        close(sv.sigfd);
    if (sv.agent_fd >= 0)
        close(sv.agent_fd);
    free(sv.jobs_dir);
    if (sv.gate[0] >= 0)
        close(sv.gate[0]);
    if (sv.gate[1] >= 0)
        close(sv.gate[1]);
    for (i = 0; sv.why_fd != NULL && i < sv.spec.nranks; i++) {
        if (sv.why_fd[i] >= 0)
            close(sv.why_fd[i]);
    }
    free(sv.why_fd);
    supfile_status_release(&sv.st);
    supfile_spec_release(&sv.spec);
    free(sv.stop_path);
    return status;
}
