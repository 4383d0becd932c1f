/*
 * proc_start.c - the directory of a job attempt that is about to start
 *
 * Before the agent spawns a job's supervisor (proc.c) it writes the
 * attempt's directory <state_dir>/jobs/<job>.<attempt>/ (supfile.h): the
 * sdk/ subdirectory the ranks' user owns, spec.json with every rank's
 * command, environment (the agent's, the job's, the rank variables of
 * docs/api.md and the SDK's two files), working directory, user and
 * groups, and output files, then the first lease. The output files are
 * created here, as the agent, so the log shipper can open them at once.
 *
 * A launch that cannot start (unknown user, missing working directory, a
 * directory that cannot be written) reports every rank exited with code
 * 127 or 126 and the reason as stderr, and leaves a final status.json, so a
 * restarted agent reports the same thing.
 */
#include "agent/proc_start.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agentd.h"
#include "agent/mkdirp.h"
#include "agent/proc_env.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "agent/rmtree.h"
#include "agent/supfile.h"
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
proc_job_fail(struct proc_job *job, int rc, const char *why)
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

        fd = r->err_path != NULL ? open(r->err_path, O_WRONLY | O_CREAT
            | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0640) : -1;
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

    fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY
        | O_NOFOLLOW, 0640);
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

/* The user of a launch, when the agent is root and runs ranks as their
 * submitter. Returns 0 or -errno with why set. */
static int
proc_user_lookup(const struct agentd *ad, const struct proto_launch *l,
    struct proc_user *u, struct passwd **pwp, char *why, size_t len)
{
    struct passwd *pw;
    int n = PROC_GROUPS_MAX, e;

    *pwp = NULL;
    if (!ad->run_as_submitter || geteuid() != 0)
        return 0;
    /* getpwnam may consult NSS (LDAP...); it runs once per launch. */
    errno = 0;
    pw = l->user != NULL && l->user[0] != '\0' ? getpwnam(l->user) : NULL;
    if (pw == NULL) {
        e = errno;
        snprintf(why, len, "cannot run as user '%s': %s",
            l->user != NULL ? l->user : "",
            e != 0 ? strerror(e) : "no such user on this node");
        return e != 0 ? -e : -ENOENT;
    }
    *pwp = pw;
    u->uid = pw->pw_uid;
    u->gid = pw->pw_gid;
    u->switch_user = u->uid != 0 || u->gid != 0;
    /* The ranks keep the user's supplementary groups (shared datasets). */
    u->groups = xcalloc((size_t)n, sizeof(*u->groups));
    if (getgrouplist(pw->pw_name, pw->pw_gid, u->groups, &n) < 0)
        n = PROC_GROUPS_MAX;
    u->ngroups = (size_t)n;
    return 0;
}

/* Make the attempt directory (fresh) and its sdk/ subdirectory, which the
 * ranks' user owns: the ranks write their progress and commits there, and
 * nothing else of the directory. */
static int
proc_job_mkdir(struct proc_job *job, const struct proc_user *u, char *why,
    size_t len)
{
    char *sdk = xasprintf("%s/%s", job->dir, SUPFILE_SDK_DIR);
    int rc;

    /* Left by an attempt this agent did not adopt: start clean. */
    rmtree_at(AT_FDCWD, job->dir, NULL);
    if (mkdir(job->dir, 0711) < 0 || mkdir(sdk, 0700) < 0) {
        rc = -errno;
        snprintf(why, len, "cannot create job directory '%s': %s", job->dir,
            strerror(errno));
    } else if (u->switch_user && chown(sdk, u->uid, u->gid) < 0) {
        rc = -errno;
        snprintf(why, len, "cannot give '%s' to user %u: %s", sdk,
            (unsigned)u->uid, strerror(errno));
    } else {
        rc = 0;
    }
    free(sdk);
    return rc;
}

void
proc_job_set_launch(struct proc_job *job, const struct proto_launch *l)
{
    free(job->checkpoint_dir);
    free(job->resume_from);
    job->checkpoint_dir = xstrdup(l->checkpoint_dir != NULL
        ? l->checkpoint_dir : "");
    job->resume_from = xstrdup(l->resume_from != NULL ? l->resume_from : "");
    job->resume_step = l->resume_step;
    job->keep_checkpoints = l->keep_checkpoints;
    job->scan_checkpoints = l->scan_checkpoints;
}

int
proc_job_prepare(struct proc_job *job, const struct proto_launch *l,
    int64_t lease_ms, char *why, size_t len)
{
    struct proc_table *pt = job->pt;
    struct agentd *ad = pt->ad;
    struct proc_user u = { 0 };
    struct supfile_spec spec;
    struct passwd *pw = NULL;
    struct stat st;
    char mkwhy[512], **base = NULL, *dir;
    int rc, mkrc;
    size_t i;

    rc = proc_user_lookup(ad, l, &u, &pw, why, len);
    if (u.switch_user) {
        job->uid = u.uid;
        job->gid = u.gid;
    }
    base = proc_base_env(u.switch_user ? pw : NULL);
    /* Made even for a launch that fails already: it holds the final
     * status.json a restarted agent reports. */
    mkrc = proc_job_mkdir(job, &u, mkwhy, sizeof(mkwhy));
    if (mkrc < 0 && rc == 0) {
        rc = mkrc;
        snprintf(why, len, "%s", mkwhy);
    }

    /* The log directory is made even for a launch that fails already, so
     * the reason also lands in the rank's .err file (and the shipped
     * log). */
    dir = xasprintf("%s/%lld/%d", ad->log_dir, (long long)l->job,
        l->attempt);
    if ((mkrc = mkdirp(dir, 0755)) < 0 && rc == 0) {
        rc = mkrc;
        snprintf(why, len, "cannot create log directory '%s': %s",
            dir, strerror(-rc));
    }
    if (rc == 0 && u.switch_user && chown(dir, u.uid, u.gid) < 0) {
        rc = -errno;
        snprintf(why, len, "cannot give log directory '%s' to "
            "user '%s': %s", dir, l->user, strerror(errno));
    }
    free(dir);
    if (rc == 0 && l->argc == 0) {
        rc = -EINVAL;
        snprintf(why, len, "empty command line");
    }
    if (rc == 0) {
        if (stat(l->workdir, &st) < 0)
            rc = -errno;
        else if (!S_ISDIR(st.st_mode))
            rc = -ENOTDIR;
        if (rc < 0)
            snprintf(why, len, "cannot change to working directory "
                "'%s': %s", l->workdir, strerror(-rc));
    }

    memset(&spec, 0, sizeof(spec));
    spec.job = l->job;
    spec.attempt = l->attempt;
    spec.kill_grace_ms = ad->kill_grace_ms;
    spec.nranks = l->nranks;
    spec.ranks = xcalloc(l->nranks + 1, sizeof(*spec.ranks));
    for (i = 0; i < l->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];
        struct supfile_spec_rank *sr = &spec.ranks[i];
        char *out = proc_log_path(pt, l->job, l->attempt, l->ranks[i].rank,
            "out");
        char *err = proc_log_path(pt, l->job, l->attempt, l->ranks[i].rank,
            "err");
        int orc;

        r->rank = l->ranks[i].rank;
        r->local_rank = l->ranks[i].local_rank;
        /* Created here, as the agent, so the log shipper can open them
         * now; the ranks append to them as their user. */
        if (rc == 0 && ((orc = proc_open_log(out, &u)) < 0
                || (orc = proc_open_log(err, &u)) < 0)) {
            rc = orc;
            snprintf(why, len, "cannot create output file in "
                "'%s/%lld/%d': %s", ad->log_dir, (long long)l->job,
                l->attempt, strerror(-orc));
        }
        proc_rank_set_paths(r, out, err);
        sr->rank = r->rank;
        sr->local_rank = r->local_rank;
        sr->argc = l->argc;
        sr->argv = l->argv;     /* borrowed until the save */
        sr->env = proc_build_env(l, &l->ranks[i], ad->node, base);
        proc_env_set(&sr->env, "LOCKSTEP_PROGRESS_FILE", r->progress_path);
        proc_env_set(&sr->env, "LOCKSTEP_COMMIT_FILE", r->commit_path);
        while (sr->env[sr->nenv] != NULL)
            sr->nenv++;
        sr->cwd = l->workdir;   /* borrowed */
        sr->uid = u.switch_user ? (int64_t)u.uid : -1;
        sr->gid = u.switch_user ? (int64_t)u.gid : -1;
        sr->groups = u.groups;  /* borrowed */
        sr->ngroups = u.switch_user ? u.ngroups : 0;
        sr->out_path = out;
        sr->err_path = err;
    }
    /* Also for a launch that fails: a restarted agent adopts the attempt
     * from it and reports the failure again. */
    if ((mkrc = supfile_spec_save(job->dir, &spec)) < 0 && rc == 0) {
        rc = mkrc;
        snprintf(why, len, "cannot write '%s/%s': %s", job->dir,
            SUPFILE_SPEC, strerror(-rc));
    }
    if (rc == 0 && (rc = supfile_lease_write(job->dir,
                        timeid_mono_ms() + lease_ms)) < 0)
        snprintf(why, len, "cannot write '%s/%s': %s", job->dir,
            SUPFILE_LEASE, strerror(-rc));

    for (i = 0; i < spec.nranks; i++) {
        proc_env_free(spec.ranks[i].env);
        free(spec.ranks[i].out_path);
        free(spec.ranks[i].err_path);
    }
    free(spec.ranks);
    free(u.groups);
    proc_env_free(base);
    return rc;
}
