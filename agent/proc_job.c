/*
 * proc_job.c - the job and rank objects of the proc table
 *
 * The bottom of the proc pieces (proc_job.h): a job's lifetime (created
 * linked into the table, closed once every handle and thread-pool request
 * it owns is done, then freed), the end of a rank, the identity-checked
 * kill of a rank's process group, and the hand-over of a rank's output
 * files to the log shipper. Everything here runs on the loop thread and
 * calls nothing above it: a change goes up through the table's hook.
 */
#include "agent/proc_job.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agent/agentd.h"
#include "agent/logship.h"
#include "agent/proc_int.h"
#include "agent/procfs.h"
#include "agent/supfile.h"
#include "agent/tail.h"
#include "common/ctlfile.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

/* ---- lifetime ----------------------------------------------------------- */

struct proc_job *
proc_job_new(struct proc_table *pt, int64_t jobid, int attempt, size_t nranks,
    char *dir)
{
    struct proc_job *job = xcalloc(1, sizeof(*job));
    size_t i;
    int rc;

    job->pt = pt;
    job->job = jobid;
    job->attempt = attempt;
    job->dir = dir;
    job->ctl_path = xasprintf("%s/%s/%s", dir, SUPFILE_SDK_DIR,
        SUPFILE_CONTROL);
    job->uid = job->gid = -1;
    job->nranks = nranks;
    job->ranks = xcalloc(nranks > 0 ? nranks : 1, sizeof(*job->ranks));
    for (i = 0; i < nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        r->job = job;
        r->state = PROTO_RANK_PENDING;
        r->exit_code = -1;
        r->step = -1;
        logship_output_init(&r->output, jobid, attempt, 0, NULL, NULL);
    }
    job->checkpoint_dir = xstrdup("");
    job->resume_from = xstrdup("");
    job->resume_step = -1;
    /* uv_timer_init cannot fail on Unix: a failure is a broken
     * invariant. */
    if ((rc = uv_timer_init(pt->ad->loop, &job->kill_timer)) < 0 ||
        (rc = uv_timer_init(pt->ad->loop, &job->dump.timer)) < 0)
        fatalx("cannot create timer: %s", uv_strerror(rc));
    job->kill_timer.data = job;
    job->dump.timer.data = job;
    job->open_handles = 2;

    job->next = pt->jobs;
    if (pt->jobs != NULL)
        pt->jobs->prev = job;
    pt->jobs = job;
    pt->njobs++;
    return job;
}

static void
proc_job_free(struct proc_job *job)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        struct proc_rank *r = &job->ranks[i];

        logship_output_release(&r->output);
        free(r->stderr_tail);
        free(r->launch_error);
        free(r->out_path);
        free(r->err_path);
        free(r->progress_path);
        free(r->commit_path);
        free(r->ckpt_steps);
        free(r->dump);
    }
    free(job->ranks);
    free(job->dir);
    free(job->checkpoint_dir);
    free(job->resume_from);
    free(job->ckpt_base);
    free(job->ckpt_complete);
    free(job->ckpt_deleting);
    free(job->directives);
    free(job->ctl_path);
    free(job);
}

void
proc_job_handle_closed(struct proc_job *job)
{
    if (--job->open_handles == 0 && job->closing)
        proc_job_free(job);
}

static void
proc_job_timer_close_cb(uv_handle_t *h)
{
    proc_job_handle_closed(h->data);
}

static void
proc_job_sv_close_cb(uv_handle_t *h)
{
    struct proc_job *job = container_of((uv_process_t *)h, struct proc_job,
        sv_process);

    job->has_process = false;
    proc_job_handle_closed(job);
}

void
proc_job_sv_close(struct proc_job *job)
{
    uv_close((uv_handle_t *)&job->sv_process, proc_job_sv_close_cb);
}

void
proc_job_unlink(struct proc_job *job)
{
    struct proc_table *pt = job->pt;
    size_t i;

    for (i = 0; i < job->nranks; i++)
        logship_remove(&job->ranks[i].output);
    if (job->prev != NULL)
        job->prev->next = job->next;
    else
        pt->jobs = job->next;
    if (job->next != NULL)
        job->next->prev = job->prev;
    job->prev = job->next = NULL;
    pt->njobs--;
}

void
proc_job_close(struct proc_job *job)
{
    job->closing = true;
    /* The file stays with the attempt directory; the ranks keep their
     * mappings. */
    ctlfile_close(job->ctl);
    job->ctl = NULL;
    uv_close((uv_handle_t *)&job->kill_timer, proc_job_timer_close_cb);
    uv_close((uv_handle_t *)&job->dump.timer, proc_job_timer_close_cb);
    if (job->has_process && !uv_is_closing((uv_handle_t *)&job->sv_process))
        proc_job_sv_close(job);
}

void
proc_job_ship(struct proc_job *job)
{
    size_t i;

    /* Each output goes first in the shipper's list: last rank first, so
     * that the newest job's ranks are visited in order. */
    for (i = job->nranks; i-- > 0;)
        logship_add(job->pt->ad->logship, &job->ranks[i].output);
}

/* ---- state -------------------------------------------------------------- */

bool
proc_rank_live(const struct proc_rank *r)
{
    return r->state == PROTO_RANK_RUNNING || r->state == PROTO_RANK_PENDING;
}

bool
proc_job_all_ended(const struct proc_job *job)
{
    size_t i;

    for (i = 0; i < job->nranks; i++) {
        if (proc_rank_live(&job->ranks[i]))
            return false;
    }
    return true;
}

bool
proc_job_supervised(const struct proc_job *job)
{
    return job->sv_pid > 0 && !job->sv_gone && !job->done;
}

void
proc_rank_set_paths(struct proc_rank *r, const char *out_path,
    const char *err_path)
{
    const char *dir = r->job->dir;

    r->out_path = xstrdup(out_path);
    r->err_path = xstrdup(err_path);
    r->progress_path = xasprintf("%s/%s/rank-%d.progress", dir, SUPFILE_SDK_DIR,
        r->rank);
    r->commit_path = xasprintf("%s/%s/rank-%d.ckpt", dir, SUPFILE_SDK_DIR,
        r->rank);
    logship_output_init(&r->output, r->job->job, r->job->attempt, r->rank,
        r->out_path, r->err_path);
}

void
proc_job_rank_ended(struct proc_job *job)
{
    if (proc_job_all_ended(job) && job->finished_ms == 0) {
        job->finished_ms = timeid_mono_ms();
        uv_timer_stop(&job->kill_timer);
    }
}

void
proc_rank_ended(struct proc_rank *r, enum proto_rank_state state, int exit_code,
    int signal, int64_t end_ms)
{
    struct proc_job *job = r->job;

    r->state = state;
    r->exit_code = exit_code;
    r->signal = signal;
    r->end_ms = end_ms > 0 ? end_ms : timeid_now_ms();
    r->end_mono_ms = timeid_mono_ms();
    free(r->stderr_tail);
    r->stderr_tail = tail_read(r->err_path, PROTO_TAIL_MAX);
    if (state == PROTO_RANK_LOST)
        log_info("job=%lld attempt=%d rank=%d pid=%d lost (its supervisor "
                 "ended before it; exit status unknown)",
            (long long)job->job, job->attempt, r->rank, r->pid);
    else if (signal != 0)
        log_info("job=%lld attempt=%d rank=%d pid=%d exited signal=%d%s",
            (long long)job->job, job->attempt, r->rank, r->pid, signal,
            r->fenced ? " (fenced: lease expired)" : "");
    else
        log_info("job=%lld attempt=%d rank=%d pid=%d exited code=%d",
            (long long)job->job, job->attempt, r->rank, r->pid, exit_code);
}

void
proc_rank_kill_group(const struct proc_rank *r, int sig)
{
    char want_job[48], want_att[48];
    const char *env[] = { want_job, want_att, NULL };

    /* A group whose leader is gone is ours only if its members carry the
     * rank environment of this very attempt (proc_env.c). */
    snprintf(want_job, sizeof(want_job), "LOCKSTEP_JOB_ID=%" PRId64,
        r->job->job);
    snprintf(want_att, sizeof(want_att), "LOCKSTEP_ATTEMPT=%d",
        r->job->attempt);
    if (r->pid <= 0 || !procfs_group_is(r->pid, r->proc_start, env))
        return;
    if (kill(-r->pid, sig) < 0 && errno != ESRCH)
        log_warn("job=%lld attempt=%d rank=%d pid=%d cannot send signal "
                 "%d to process group: %s",
            (long long)r->job->job, r->job->attempt, r->rank, r->pid, sig,
            strerror(errno));
}

/* ---- the table's hook and paths ----------------------------------------- */

void
proc_notify(struct proc_table *pt)
{
    if (pt->change_fn != NULL)
        pt->change_fn(pt->change_arg);
}

char *
proc_log_path(const struct proc_table *pt, int64_t job, int attempt, int rank,
    const char *stream)
{
    return xasprintf("%s/%lld/%d/rank-%d.%s", pt->ad->log_dir, (long long)job,
        attempt, rank, stream);
}
