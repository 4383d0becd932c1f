/*
 * proc_start.c - the directory of a job attempt that is about to start
 *
 * Before the agent spawns a job's supervisor (proc.c) it writes the
 * attempt's directory <state_dir>/jobs/<job>.<attempt>/ (supfile.h): the
 * sdk/ subdirectory the ranks' user owns, spec.json with every rank's
 * command, environment (the agent's, the job's, the rank variables of
 * docs/api.md and the SDK's files: progress, commits, control), working
 * directory, user and groups, and output files, then the first lease.
 * The output files are created here, as the agent, so the log shipper
 * can open them at once.
 *
 * A launch that cannot start (unknown user, missing working directory, a
 * directory that cannot be written) reports every rank exited with code
 * 127 or 126 and the reason as stderr, and leaves a final status.json, so a
 * restarted agent reports the same thing. When the reason is the job's
 * own (its user, its working directory, an empty command) it is also each
 * rank's launch error: the scheduler's launch failure, which is not
 * retried and blames no node; the agent's own trouble (a directory it
 * cannot write) is not.
 */
#include "agent/proc_start.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/logship.h"
#include "agent/mkdirp.h"
#include "agent/pmixsrv.h"
#include "agent/proc_env.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "agent/rmtree.h"
#include "agent/supfile.h"
#include "common/fence.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

extern char **environ;

#define PROC_GROUPS_MAX 1024

/* The user a job's ranks run as, when the agent switches to it. */
struct proc_user {
    bool switch_user;
    uid_t uid;
    gid_t gid;
    gid_t *groups;
    size_t ngroups;
};

/* A launch that cannot start: every rank "exited" with the code of rc at
 * once, the reason is its stderr (also in the file), and the agent writes
 * the final status.json itself so that a restarted agent reports the same. */
void
proc_job_fail(struct proc_job *job, int rc, const char *why, bool launch)
{
    struct supfile_status st;
    int64_t now = timeid_now_ms();
    size_t i;
    int fd, src;

    memset(&st, 0, sizeof(st));
    st.job = job->job;
    st.attempt = job->attempt;
    st.pid = (int)getpid();
    st.done = true;
    st.nranks = job->nranks;
    st.ranks = xcalloc(job->nranks + 1, sizeof(*st.ranks));
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        fd = r->err_path != NULL
                 ? open(r->err_path,
                       O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW,
                       0640)
                 : -1;
        if (fd >= 0) {
            if (write(fd, why, strlen(why)) < 0 || write(fd, "\n", 1) < 0)
                log_debug("cannot write to '%s': %s", r->err_path,
                    strerror(errno));
            close(fd);
        }
        /* The file may be new: ship what is there now. */
        logship_output_open(&r->output, NULL, r->err_path);
        r->start_ms = now;
        proc_rank_ended(r, PROTO_RANK_EXITED, supfile_exec_exit_code(rc), 0,
            now);
        free(r->stderr_tail);
        r->stderr_tail = xstrdup(why);
        free(r->launch_error);
        r->launch_error = launch ? xstrdup(why) : NULL;
        if (launch)
            snprintf(st.ranks[i].launch_error, sizeof(st.ranks[i].launch_error),
                "%s", why);
        st.ranks[i].rank = r->rank;
        st.ranks[i].exited = true;
        st.ranks[i].exit_code = r->exit_code;
        st.ranks[i].start_ms = st.ranks[i].end_ms = now;
    }
    log_info("job=%lld attempt=%d not started: %s", (long long)job->job,
        job->attempt, why);
    if ((src = supfile_status_save(job->dir, &st)) < 0)
        log_error("job=%lld attempt=%d cannot write status: %s",
            (long long)job->job, job->attempt, strerror(-src));
    supfile_status_release(&st);
    job->done = true;
    job->sv_gone = true;
    proc_job_rank_ended(job);
}

static int
proc_open_log(const char *path, const struct proc_user *u)
{
    int fd, rc = 0;

    fd = open(path,
        O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW,
        0640);
    if (fd < 0)
        return -errno;
    if (u->switch_user && fchown(fd, u->uid, u->gid) < 0)
        rc = -errno;
    close(fd);
    return rc;
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

/* A launch being prepared. The first failure wins (rc, why); the steps a
 * restarted agent needs to report that failure (the directories,
 * spec.json) still run after it. */
struct proc_prep {
    struct proc_job *job;
    const struct proto_launch *l;
    struct agentd *ad;
    struct proc_user u;
    struct passwd *pw;
    char **base; /* the environment ranks start from */
    int rc;
    char *why;
    size_t len;
    bool launch; /* the failure is the job's own (proc_job_fail) */
};

/* Record a failure unless an earlier one is recorded. */
__attribute__((format(printf, 3, 4))) static void
proc_prep_fail(struct proc_prep *p, int rc, const char *fmt, ...)
{
    va_list ap;

    if (p->rc != 0)
        return;
    p->rc = rc;
    p->launch = false;
    va_start(ap, fmt);
    vsnprintf(p->why, p->len, fmt, ap);
    va_end(ap);
}

/* The user of a launch, when the agent is root and runs ranks as their
 * submitter. */
static void
proc_user_lookup(struct proc_prep *p)
{
    const struct proto_launch *l = p->l;
    struct proc_user *u = &p->u;
    struct passwd *pw;
    int n = PROC_GROUPS_MAX, e;

    if (!p->ad->run_as_submitter || geteuid() != 0)
        return;
    /* getpwnam may consult NSS (LDAP...); it runs once per launch. */
    errno = 0;
    pw = l->user != NULL && l->user[0] != '\0' ? getpwnam(l->user) : NULL;
    if (pw == NULL) {
        e = errno;
        proc_prep_fail(p, e != 0 ? -e : -ENOENT,
            "cannot run as user '%s': "
            "%s",
            l->user != NULL ? l->user : "",
            e != 0 ? strerror(e) : "no such user on this node");
        /* No such user: the job's; a failing user database: the node's. */
        p->launch = e == 0 || e == ENOENT || e == ESRCH;
        return;
    }
    p->pw = pw;
    u->uid = pw->pw_uid;
    u->gid = pw->pw_gid;
    u->switch_user = u->uid != 0 || u->gid != 0;
    /* The ranks keep the user's supplementary groups (shared datasets). */
    u->groups = xcalloc((size_t)n, sizeof(*u->groups));
    if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0)
        n = PROC_GROUPS_MAX;
    u->ngroups = (size_t)n;
}

/* Make the attempt directory (fresh) and its sdk/ subdirectory, which the
 * ranks' user owns: the ranks write their progress and commits there, and
 * nothing else of the directory. Made even for a launch that fails
 * already: it holds the final status.json a restarted agent reports. */
static void
proc_prep_job_dir(struct proc_prep *p)
{
    const char *dir = p->job->dir;
    char *sdk = xasprintf("%s/%s", dir, SUPFILE_SDK_DIR);

    /* Left by an attempt this agent did not adopt: start clean. */
    rmtree_at(AT_FDCWD, dir, NULL);
    if (mkdir(dir, 0711) < 0 || mkdir(sdk, 0700) < 0)
        proc_prep_fail(p, -errno, "cannot create job directory '%s': %s", dir,
            strerror(errno));
    else if (p->u.switch_user && chown(sdk, p->u.uid, p->u.gid) < 0)
        proc_prep_fail(p, -errno, "cannot give '%s' to user %u: %s", sdk,
            (unsigned)p->u.uid, strerror(errno));
    free(sdk);
}

/* The log directory is made even for a launch that fails already, so the
 * reason also lands in the rank's .err file (and the shipped log). */
static void
proc_prep_log_dir(struct proc_prep *p)
{
    const struct proto_launch *l = p->l;
    char *dir = xasprintf("%s/%lld/%d", p->ad->log_dir, (long long)l->job,
        l->attempt);
    int rc;

    if ((rc = mkdirp(dir, 0755)) < 0)
        proc_prep_fail(p, rc, "cannot create log directory '%s': %s", dir,
            strerror(-rc));
    else if (p->rc == 0 && p->u.switch_user &&
             chown(dir, p->u.uid, p->u.gid) < 0)
        proc_prep_fail(p, -errno,
            "cannot give log directory '%s' to "
            "user '%s': %s",
            dir, l->user, strerror(errno));
    free(dir);
}

/* What the supervisor would trip over: no command, no working
 * directory. */
static void
proc_prep_check(struct proc_prep *p)
{
    const struct proto_launch *l = p->l;
    struct stat st;
    int rc = 0;

    if (p->rc != 0)
        return;
    if (l->argc == 0) {
        proc_prep_fail(p, -EINVAL, "empty command line");
        p->launch = true;
        return;
    }
    if (stat(l->workdir, &st) < 0)
        rc = -errno;
    else if (!S_ISDIR(st.st_mode))
        rc = -ENOTDIR;
    if (rc < 0) {
        proc_prep_fail(p, rc, "cannot change to working directory '%s': %s",
            l->workdir, strerror(-rc));
        p->launch = true;
    }
}

/* Rank i of spec: its output files (created here, as the agent, so the
 * log shipper can open them now; the ranks append to them as their user),
 * its paths in the job, and its command and environment. */
static void
proc_prep_rank(struct proc_prep *p, size_t i, struct supfile_spec_rank *sr)
{
    const struct proto_launch *l = p->l;
    struct proc_rank *r = &p->job->ranks[i];
    char *out = proc_log_path(p->job->pt, l->job, l->attempt, l->ranks[i].rank,
        "out");
    char *err = proc_log_path(p->job->pt, l->job, l->attempt, l->ranks[i].rank,
        "err");
    int rc;

    r->rank = l->ranks[i].rank;
    r->local_rank = l->ranks[i].local_rank;
    if (p->rc == 0 && ((rc = proc_open_log(out, &p->u)) < 0 ||
                          (rc = proc_open_log(err, &p->u)) < 0))
        proc_prep_fail(p, rc,
            "cannot create output file in '%s/%lld/%d': "
            "%s",
            p->ad->log_dir, (long long)l->job, l->attempt, strerror(-rc));
    proc_rank_set_paths(r, out, err);
    sr->rank = r->rank;
    sr->local_rank = r->local_rank;
    sr->argc = l->argc;
    sr->argv = l->argv; /* borrowed until the save */
    sr->env = proc_build_env(l, &l->ranks[i], p->ad->node, p->base);
    /* The PMIx server's address and Open MPI's direct-launch settings. */
    /* A rank the server could not register would hang its peers'
     * MPI_Init: the attempt fails as the node's problem instead. */
    if (p->rc == 0 &&
        (rc = pmixsrv_rank_env(p->ad->pmixsrv, l, i,
             p->u.switch_user ? p->u.uid : geteuid(),
             p->u.switch_user ? p->u.gid : getegid(), &sr->env)) < 0)
        proc_prep_fail(p, rc,
            "cannot register rank %d with the agent's PMIx server (see the "
            "agent's log)",
            r->rank);
    proc_env_set(&sr->env, "LOCKSTEP_PROGRESS_FILE", r->progress_path);
    proc_env_set(&sr->env, "LOCKSTEP_COMMIT_FILE", r->commit_path);
    proc_env_set(&sr->env, "LOCKSTEP_CONTROL_FILE", p->job->ctl_path);
    while (sr->env[sr->nenv] != NULL)
        sr->nenv++;
    sr->cwd = l->workdir; /* borrowed */
    sr->uid = p->u.switch_user ? (int64_t)p->u.uid : -1;
    sr->gid = p->u.switch_user ? (int64_t)p->u.gid : -1;
    sr->groups = p->u.groups; /* borrowed */
    sr->ngroups = p->u.switch_user ? p->u.ngroups : 0;
    sr->out_path = out;
    sr->err_path = err;
}

/* spec.json, written also for a launch that fails: a restarted agent
 * adopts the attempt from it and reports the failure again. Then the
 * first lease. */
static void
proc_prep_spec(struct proc_prep *p, int64_t lease_ms)
{
    const struct proto_launch *l = p->l;
    const char *dir = p->job->dir;
    struct supfile_spec spec;
    size_t i;
    int rc;

    memset(&spec, 0, sizeof(spec));
    spec.job = l->job;
    spec.attempt = l->attempt;
    spec.kill_grace_ms = p->ad->kill_grace_ms;
    if (p->job->pt->agent_fd >= 0) {
        spec.orphan_ms = p->ad->orphan_grace_ms;
        memcpy(spec.node, p->ad->node, strlen(p->ad->node) + 1);
        fence_key(p->ad->key.key, l->job, l->attempt, spec.fence_key);
    }
    spec.nranks = l->nranks;
    spec.ranks = xcalloc(l->nranks + 1, sizeof(*spec.ranks));
    for (i = 0; i < l->nranks; i++)
        proc_prep_rank(p, i, &spec.ranks[i]);
    if ((rc = supfile_spec_save(dir, &spec)) < 0)
        proc_prep_fail(p, rc, "cannot write '%s/%s': %s", dir, SUPFILE_SPEC,
            strerror(-rc));
    if (p->rc == 0 &&
        (rc = supfile_lease_write(dir, timeid_mono_ms() + lease_ms)) < 0)
        proc_prep_fail(p, rc, "cannot write '%s/%s': %s", dir, SUPFILE_LEASE,
            strerror(-rc));
    for (i = 0; i < spec.nranks; i++) {
        proc_env_free(spec.ranks[i].env);
        free(spec.ranks[i].out_path);
        free(spec.ranks[i].err_path);
    }
    free(spec.ranks);
    explicit_bzero(spec.fence_key, sizeof(spec.fence_key));
}

void
proc_job_set_launch(struct proc_job *job, const struct proto_launch *l)
{
    free(job->checkpoint_dir);
    free(job->resume_from);
    job->checkpoint_dir = xstrdup(
        l->checkpoint_dir != NULL ? l->checkpoint_dir : "");
    job->resume_from = xstrdup(l->resume_from != NULL ? l->resume_from : "");
    job->resume_step = l->resume_step;
    job->keep_checkpoints = l->keep_checkpoints;
    job->scan_checkpoints = l->scan_checkpoints;
}

int
proc_job_prepare(struct proc_job *job, const struct proto_launch *l,
    int64_t lease_ms, char *why, size_t len, bool *launch)
{
    struct proc_prep p;

    memset(&p, 0, sizeof(p));
    p.job = job;
    p.l = l;
    p.ad = job->pt->ad;
    p.why = why;
    p.len = len;
    proc_user_lookup(&p);
    if (p.u.switch_user) {
        job->uid = p.u.uid;
        job->gid = p.u.gid;
    }
    p.base = proc_base_env(p.u.switch_user ? p.pw : NULL);
    proc_prep_job_dir(&p);
    proc_prep_log_dir(&p);
    proc_prep_check(&p);
    proc_prep_spec(&p, lease_ms);
    free(p.u.groups);
    proc_env_free(p.base);
    *launch = p.rc != 0 && p.launch;
    return p.rc;
}
