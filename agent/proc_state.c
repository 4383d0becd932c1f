/*
 * proc_state.c - what the supervisors record, and re-adoption after a
 * restart of the agent
 *
 * status.json is written by the supervisor on every change (supervisor.h);
 * proc_state_refresh() applies a new version to the held job: ranks that
 * started, ranks that ended (exit code, signal, fenced), and "done". The
 * ranks' ends are final once read: a later version can only add to them.
 *
 * On start-up every attempt directory in <state_dir>/jobs is re-adopted.
 * Its spec.json names the ranks and their files; status.json says how far
 * they got; supervisor.pid (or the status) names the supervisor, which is
 * recognised by /proc/<pid>/exe and its argument (a recycled pid is never
 * mistaken for it):
 *
 *   - a live supervisor is watched again, by polling its pid (it is not
 *     our child any more), with the exit codes it recorded;
 *   - a supervisor that finished (status "done") left final statuses:
 *     they are reported, and the job is released when the scheduler no
 *     longer wants it;
 *   - a supervisor that died before it finished (killed, OOM) leaves ranks
 *     nobody holds a lease for: their process groups are killed (when the
 *     group is still the one recorded) and they are reported lost.
 *
 * Adopted jobs count as desired until the scheduler's first answer, so the
 * register status lists them and the scheduler decides.
 */
#include "agent/proc_state.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/proc_ckpt.h"
#include "agent/proc_directive.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "agent/proc_progress.h"
#include "agent/procfs.h"
#include "agent/rmtree.h"
#include "agent/supfile.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

bool
proc_state_refresh(struct proc_job *job)
{
    struct supfile_status st;
    struct supfile_stamp stamp;
    struct err err = { 0 };
    int64_t now_mono = timeid_mono_ms(), now_ms = timeid_now_ms();
    char *path = xasprintf("%s/%s", job->dir, SUPFILE_STATUS);
    bool changed = false;
    size_t i;
    int rc;

    rc = supfile_stamp_get(path, &stamp);
    free(path);
    if (rc < 0 || supfile_stamp_equal(&stamp, &job->status_stamp))
        return false;
    job->status_stamp = stamp;
    if (supfile_status_load(job->dir, &st, &err) < 0) {
        log_warn("job=%lld attempt=%d ignoring its status.json: %s",
            (long long)job->job, job->attempt, err.msg);
        return false;
    }
    for (i = 0; i < job->nranks && i < st.nranks; i++) {
        const struct supfile_rank_status *rs = &st.ranks[i];
        struct proc_rank *r = &job->ranks[i];

        if (rs->rank != r->rank) {
            log_warn("job=%lld attempt=%d status.json entry %zu is rank %d, "
                     "expected rank %d",
                (long long)job->job, job->attempt, i, rs->rank, r->rank);
            continue;
        }
        if (r->state == PROTO_RANK_PENDING && (rs->pid > 0 || rs->exited)) {
            r->pid = rs->pid;
            r->proc_start = rs->proc_start;
            r->start_ms = rs->start_ms;
            r->start_mono_ms = proc_progress_mono_of(rs->start_ms, now_mono,
                now_ms);
            r->state = PROTO_RANK_RUNNING;
            changed = true;
            if (rs->pid > 0)
                log_info("job=%lld attempt=%d rank=%d pid=%d running",
                    (long long)job->job, job->attempt, r->rank, r->pid);
        }
        if (rs->exited && r->state == PROTO_RANK_RUNNING) {
            r->fenced = rs->fenced;
            free(r->launch_error);
            r->launch_error = rs->launch_error[0] ? xstrdup(rs->launch_error)
                                                  : NULL;
            proc_rank_ended(r, PROTO_RANK_EXITED, rs->exit_code, rs->signal,
                rs->end_ms);
            changed = true;
        }
    }
    if (st.done && !job->done) {
        job->done = true;
        changed = true;
        for (i = 0; i < job->nranks; i++) {
            struct proc_rank *r = &job->ranks[i];

            /* Done but silent about a rank: nothing will say more. */
            if (proc_rank_live(r))
                proc_rank_ended(r, PROTO_RANK_LOST, -1, 0, 0);
        }
        if (st.fenced)
            log_warn("job=%lld attempt=%d its supervisor fenced the ranks "
                     "(lease expired)",
                (long long)job->job, job->attempt);
    }
    supfile_status_release(&st);
    if (changed)
        proc_job_rank_ended(job);
    return changed;
}

void
proc_state_supervisor_gone(struct proc_job *job, const char *why)
{
    size_t i;

    job->sv_gone = true;
    proc_state_refresh(job);
    if (job->done)
        return;
    log_warn("job=%lld attempt=%d %s, its ranks had not ended: killing "
             "their process groups",
        (long long)job->job, job->attempt, why);
    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        if (!proc_rank_live(r))
            continue;
        proc_rank_kill_group(r, SIGKILL);
        proc_rank_ended(r, PROTO_RANK_LOST, -1, 0, 0);
    }
    job->done = true;
    proc_job_rank_ended(job);
}

/* The supervisor's pid from supervisor.pid, or 0. */
static int
proc_state_read_pid(const char *dir)
{
    char *path = xasprintf("%s/%s", dir, SUPFILE_PID), *text = NULL;
    size_t len;
    long pid = 0;

    if (supfile_read(path, 64, &text, &len) == 0)
        pid = strtol(text, NULL, 10);
    free(text);
    free(path);
    return pid > 0 && pid <= INT32_MAX ? (int)pid : 0;
}

static void
proc_state_adopt_dir(struct proc_table *pt, const char *name, int64_t jobid,
    int attempt)
{
    struct supfile_spec spec;
    struct supfile_status st;
    struct err err = { 0 };
    struct proc_job *job;
    char *dir = xasprintf("%s/%s", pt->jobs_dir, name), *stop;
    int pid, fd, rc;
    size_t i;

    if (supfile_spec_load(dir, &spec, &err) < 0 || spec.job != jobid ||
        spec.attempt != attempt) {
        if (err.msg[0] == '\0')
            snprintf(err.msg, sizeof(err.msg),
                "spec.json is for job %lld "
                "attempt %d",
                (long long)spec.job, spec.attempt);
        supfile_spec_release(&spec);
        pid = proc_state_read_pid(dir);
        if (pid > 0 && procfs_runs(pid, SUPFILE_EXE, dir)) {
            /* Its lease is not renewed either: it stops on its own. */
            stop = xasprintf("%s/%s", dir, SUPFILE_STOP);
            fd = open(stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (fd >= 0)
                close(fd);
            free(stop);
            log_error("cannot adopt '%s': %s (its supervisor pid=%d was "
                      "asked to stop)",
                dir, err.msg, pid);
        } else {
            log_error("cannot adopt '%s': %s (removing it)", dir, err.msg);
            if ((rc = rmtree_at(AT_FDCWD, dir, NULL)) < 0)
                log_error("cannot remove '%s': %s", dir, strerror(-rc));
        }
        free(dir);
        return;
    }

    job = proc_job_new(pt, jobid, attempt, spec.nranks, dir);
    job->desired = true;
    if (spec.nranks > 0) {
        job->uid = spec.ranks[0].uid;
        job->gid = spec.ranks[0].gid;
    }
    for (i = 0; i < spec.nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        r->rank = spec.ranks[i].rank;
        r->local_rank = spec.ranks[i].local_rank;
        proc_rank_set_paths(r, spec.ranks[i].out_path, spec.ranks[i].err_path);
    }
    supfile_spec_release(&spec);
    proc_job_ship(job);
    proc_ckpt_base_load(job);

    pid = 0;
    if (supfile_status_load(dir, &st, &err) == 0) {
        pid = st.pid;
        supfile_status_release(&st);
    }
    if (pid == 0)
        pid = proc_state_read_pid(dir);
    job->sv_pid = pid;
    if (pid > 0 && procfs_runs(pid, SUPFILE_EXE, dir)) {
        job->sv_adopted = true;
        proc_state_refresh(job);
        /* Its ranks have it mapped: kept as it is. */
        if (!job->done)
            proc_directive_open(job);
        log_info("job=%lld attempt=%d adopted supervisor pid=%d",
            (long long)jobid, attempt, pid);
    } else {
        proc_state_supervisor_gone(job, "supervisor ended while no agent "
                                        "ran");
        log_info("job=%lld attempt=%d adopted (supervisor gone)",
            (long long)jobid, attempt);
    }
}

/*
 * A record of an agent from before supervisors (<job>.<attempt>.json):
 * its ranks run without a lease, so they are killed (when their process
 * group is still the recorded one) and the record removed; the scheduler
 * sees them missing from the register status and restarts the attempt.
 */
static void
proc_state_legacy(const char *path)
{
    const cJSON *ranks, *item;
    cJSON *root = NULL;
    char *text = NULL;
    int64_t pid, start;
    size_t len;

    if (supfile_read(path, 4u << 20, &text, &len) == 0 &&
        jsonx_parse(text, len, &root, NULL) == 0 &&
        cJSON_IsArray(
            ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks"))) {
        cJSON_ArrayForEach(item, ranks) {
            pid = start = 0;
            if (jsonx_get_int(item, "pid", true, 1, INT32_MAX, &pid, NULL) <
                    0 ||
                jsonx_get_int(item, "proc_start", false, 0, INT64_MAX, &start,
                    NULL) < 0)
                continue;
            /* Started by an agent of the same node: the job and attempt
             * are in the file name, checked by their start time. */
            if (start != 0 && procfs_start_time((int)pid) == (uint64_t)start &&
                kill(-(int)pid, SIGKILL) == 0)
                log_warn("killed process group %lld left by an agent "
                         "without supervisors ('%s')",
                    (long long)pid, path);
        }
    }
    cJSON_Delete(root);
    free(text);
    if (unlink(path) < 0 && errno != ENOENT)
        log_error("cannot remove '%s': %s", path, strerror(errno));
}

/* "<job>.<attempt>" with both positive decimal numbers, and what follows
 * (the rest of the name) in *rest. */
static bool
proc_state_parse_name(const char *name, int64_t *job, int *attempt,
    const char **rest)
{
    char *end;
    long long j;
    long a;

    if (name[0] < '1' || name[0] > '9')
        return false;
    errno = 0;
    j = strtoll(name, &end, 10);
    if (errno != 0 || *end != '.' || end[1] < '1' || end[1] > '9')
        return false;
    a = strtol(end + 1, &end, 10);
    if (errno != 0 || a > INT32_MAX)
        return false;
    *job = j;
    *attempt = (int)a;
    *rest = end;
    return true;
}

void
proc_state_adopt(struct proc_table *pt)
{
    const char *dir = pt->jobs_dir, *rest;
    struct dirent *de;
    int64_t jobid;
    int attempt;
    char *path;
    DIR *d;

    d = opendir(dir);
    if (d == NULL) {
        log_error("cannot read '%s': %s", dir, strerror(errno));
        return;
    }
    while ((de = readdir(d)) != NULL) {
        if (!proc_state_parse_name(de->d_name, &jobid, &attempt, &rest))
            continue;
        path = xasprintf("%s/%s", dir, de->d_name);
        if (rest[0] == '\0')
            proc_state_adopt_dir(pt, de->d_name, jobid, attempt);
        else if (strcmp(rest, ".json") == 0)
            proc_state_legacy(path);
        else if (strcmp(rest, ".json.tmp") == 0)
            unlink(path);
        free(path);
    }
    closedir(d);
}
