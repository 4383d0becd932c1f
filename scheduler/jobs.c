/*
 * jobs.c - submit, cancel and commit checkpoints of jobs (jobs.h)
 */
#include "scheduler/jobs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/checkpoint.h"
#include "scheduler/db.h"
#include "scheduler/event.h"
#include "scheduler/sched_pass.h"

int
jobs_submit(struct schedd *sd, const char *user, struct proto_job_spec *spec,
    struct job **out)
{
    struct job *job = job_create();
    int rc;

    proto_job_spec_release(&job->spec);
    job->spec = *spec;
    memset(spec, 0, sizeof(*spec));
    job->user = xstrdup(user);
    job->submit_ms = timeid_now_ms();
    rc = event_job_submitted(sd, job);
    *out = rc < 0 ? NULL : job;
    return rc;
}

bool
jobs_filter_live(const struct db_job_filter *filter)
{
    if (filter->ended)
        return false;
    if (filter->has_state)
        return !proto_job_state_finished(filter->state);
    return !filter->all;
}

int
jobs_foreach_live(struct schedd *sd, const struct db_job_filter *filter,
    int (*fn)(struct job *job, void *arg), void *arg)
{
    int64_t n = 0;
    int rc = 0;

    for (struct job *job = job_table_last(&sd->jobs); job && rc == 0;
         job = job_table_prev(job)) {
        if (filter->limit > 0 && n >= filter->limit)
            break;
        if ((filter->user && strcmp(job->user, filter->user) != 0) ||
            (filter->has_state && job->state != filter->state) ||
            (filter->name && strcmp(job->spec.name, filter->name) != 0))
            continue;
        n++;
        rc = fn(job, arg);
    }
    return rc;
}

int
jobs_submit_many(struct schedd *sd, const char *user,
    struct proto_job_spec *specs, size_t n, int64_t **ids)
{
    int64_t *out = xcalloc(n + 1, sizeof(*out));
    int rc = 0;

    for (size_t i = 0; i < n && rc == 0; i++) {
        struct job *job;

        rc = jobs_submit(sd, user, &specs[i], &job);
        if (rc == 0)
            out[i] = job->id;
    }
    if (rc < 0) {
        free(out);
        out = NULL;
    }
    *ids = out;
    return rc;
}

/* A batch of n jobs that would take user past the queued-jobs limit,
 * though one more job would not: QUOTA_QUEUED with why, else QUOTA_OK. */
static enum quota_verdict
quota_batch(struct schedd *sd, const char *user, bool op, size_t queued,
    size_t n, char *why, size_t len, int64_t *retry_s)
{
    const struct quota_limits *l = op ? &sd->quota_cfg.op : &sd->quota_cfg.user;
    const char *who = op ? "operator" : "user";

    if (n <= 1 || l->max_queued <= 0 || queued >= (size_t)l->max_queued ||
        queued + n <= (size_t)l->max_queued)
        return QUOTA_OK;
    sd->quota.refused_queued++;
    snprintf(why, len,
        "%s %s has %zu queued jobs; %zu more would pass the limit of %d "
        "(max queued jobs per %s)",
        who, user, queued, n, l->max_queued, who);
    *retry_s = 30;
    return QUOTA_QUEUED;
}

int
jobs_quota(struct schedd *sd, const char *user, bool op, size_t n, char *why,
    size_t len, int64_t *retry_s)
{
    int64_t now = timeid_mono_ms();
    size_t queued = job_table_user(&sd->jobs, user).queued;
    struct quota_user *qu = NULL;
    enum quota_verdict v;
    char subject[128];
    cJSON *detail;
    int rc, k;

    v = quota_batch(sd, user, op, queued, n, why, len, retry_s);
    if (v == QUOTA_OK)
        v = quota_check(&sd->quota, &sd->quota_cfg, user, op, queued, now, why,
            len, retry_s, &qu);
    if (v == QUOTA_OK)
        return 0;
    k = v == QUOTA_QUEUED ? 0 : 1;
    if (qu != NULL && qu->last_event_ms[k] != 0 &&
        now - qu->last_event_ms[k] < 10000) {
        qu->quiet[k]++;
        return -EBUSY;
    }
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "user", user);
    jsonx_add_str(detail, "limit", v == QUOTA_QUEUED ? "queued" : "rate");
    jsonx_add_str(detail, "reason", why);
    if (qu != NULL) {
        cJSON_AddNumberToObject(detail, "refused_since_last_event",
            (double)qu->quiet[k]);
        qu->last_event_ms[k] = now;
        qu->quiet[k] = 0;
    }
    snprintf(subject, sizeof(subject), "user/%s", user);
    log_notice("submission of %s refused: %s", user, why);
    rc = schedd_event(sd, user, subject, "submit_refused", detail);
    return rc < 0 ? rc : -EBUSY;
}

int
jobs_resolve_resume(struct schedd *sd, struct proto_job_spec *spec,
    const char *user, bool read_all, struct err *err)
{
    struct job *from = NULL;
    int rc;

    spec->resume_step = -1;
    if (spec->resume_from_job <= 0) {
        if (spec->resume_from != NULL && spec->resume_from[0] != '\0')
            spec->resume_step = proto_ckpt_path_step(spec->resume_from);
        return 0;
    }
    rc = db_job_get(sd->db, spec->resume_from_job, &from);
    if (rc == -ENOENT)
        return err_set(err, -EINVAL, "field 'resume_from_job': no job %lld",
            (long long)spec->resume_from_job);
    if (rc < 0)
        return rc;
    if (!read_all && strcmp(from->user, user) != 0)
        rc = err_set(err, -EPERM,
            "field 'resume_from_job': job %lld belongs to another user",
            (long long)from->id);
    else if (from->ckpt_step < 0 || from->spec.checkpoint_dir[0] == '\0')
        rc = err_set(err, -EINVAL,
            "field 'resume_from_job': job %lld has no complete checkpoint "
            "%s",
            (long long)from->id,
            from->ckpt_step < 0 ? "to resume from"
                                : "with a path (it has no checkpoint "
                                  "directory)");
    if (rc == 0) {
        free(spec->resume_from);
        spec->resume_from = job_ckpt_path(from, from->ckpt_step);
        spec->resume_step = from->ckpt_step;
    }
    job_destroy(from);
    return rc;
}

/* The cached answer for spec's shape at the inventory's generation, or
 * NULL. */
static const struct schedd_fit *
fits_cached(const struct schedd *sd, const struct proto_job_spec *spec)
{
    for (size_t i = 0; i < SCHEDD_FITS; i++) {
        const struct schedd_fit *f = &sd->fits[i];

        if (f->gen == sd->nodes.gen && f->nodes == spec->nodes &&
            f->ranks_per_node == spec->ranks_per_node &&
            f->gpus_per_node == spec->gpus_per_node &&
            f->cpus_per_rank == spec->cpus_per_rank &&
            f->memory_mb_per_node == spec->memory_mb_per_node)
            return f;
    }
    return NULL;
}

/* Judge spec's shape against every node (sched_fits_ever) and keep the
 * answer in the cache, replacing the oldest entry. */
static const struct schedd_fit *
fits_judge(struct schedd *sd, const struct proto_job_spec *spec)
{
    size_t n = node_table_count(&sd->nodes), i = 0;
    struct schedd_fit *f = &sd->fits[sd->fits_next];
    struct sched_node *nodes = xcalloc(n + 1, sizeof(*nodes));
    struct sched_job j;

    sd->fits_next = (sd->fits_next + 1) % SCHEDD_FITS;
    for (const struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node), i++) {
        nodes[i].name = node->name;
        nodes[i].schedulable = node_schedulable(node);
        nodes[i].cpus = node->cpus;
        nodes[i].memory_mb = node->memory_mb;
        nodes[i].ngpus = node->ngpus;
    }
    memset(&j, 0, sizeof(j));
    j.nodes = f->nodes = spec->nodes;
    j.ranks_per_node = f->ranks_per_node = spec->ranks_per_node;
    j.gpus_per_node = f->gpus_per_node = spec->gpus_per_node;
    j.cpus_per_rank = f->cpus_per_rank = spec->cpus_per_rank;
    j.memory_mb_per_node = f->memory_mb_per_node = spec->memory_mb_per_node;
    f->why[0] = '\0';
    f->fits = sched_fits_ever(nodes, n, &j, f->why, sizeof(f->why));
    f->gen = sd->nodes.gen;
    free(nodes);
    return f;
}

int
jobs_check_fits(struct schedd *sd, const struct proto_job_spec *spec, char *why,
    size_t len)
{
    const struct schedd_fit *f;

    if (spec->wait_for_nodes || node_table_count(&sd->nodes) == 0 ||
        timeid_now_ms() - sd->started_ms < sd->node_timeout_ms)
        return 0;
    /* The answer depends only on the nodes' inventory (their state does
     * not count), so a shape is judged once per change of it. */
    if ((f = fits_cached(sd, spec)) == NULL)
        f = fits_judge(sd, spec);
    if (f->fits)
        return 0;
    snprintf(why, len,
        "this job can never run on this cluster: %s; submit it with "
        "\"wait_for_nodes\": true (lockstep submit --wait-for-nodes) to "
        "queue it until nodes join",
        f->why);
    return -ERANGE;
}

int
jobs_cancel(struct schedd *sd, struct job *job, const char *actor)
{
    struct event_job_change c = { .actor = actor };
    struct attempt *a = job->cur;
    char *reason;
    int rc = 0;

    if (proto_job_state_finished(job->state))
        return 0;
    if (!job_transition_ok(job->state, PROTO_JOB_CANCELLED))
        return -EINVAL;
    reason = xasprintf("cancelled by %s", actor);
    if (a && proto_attempt_state_active(a->state)) {
        /* A hang being documented ends with the job. */
        a->dump_deadline_ms = 0;
        if (!a->has_failure)
            attempt_set_failure(a, NULL, false);
        rc = event_attempt(sd, a, PROTO_ATTEMPT_CANCELLED, reason);
        if (rc < 0) {
            free(reason);
            return rc;
        }
    }
    c.attempt = a;
    c.reason = reason;
    c.detail = cJSON_CreateObject();
    if (a)
        jsonx_add_int(c.detail, "attempt", a->num);
    rc = event_job(sd, job, PROTO_JOB_CANCELLED, &c);
    free(reason);
    return rc;
}

int
jobs_hold(struct schedd *sd, struct job *job, const char *actor)
{
    struct event_job_change c = { .actor = actor };
    char *reason;
    int rc;

    if (job_held(job))
        return 0;
    if (!proto_job_state_queued(job->state))
        return -EINVAL;
    job_set_held(job, actor);
    reason = xasprintf("held by %s", actor);
    c.reason = reason;
    c.detail = cJSON_CreateObject();
    jsonx_add_str(c.detail, "state", proto_job_state_str(job->state));
    rc = event_job_fact(sd, job, "job_held", &c);
    free(reason);
    return rc;
}

int
jobs_release(struct schedd *sd, struct job *job, const char *actor)
{
    struct event_job_change c = { .actor = actor };

    if (!job_held(job))
        return -EINVAL;
    c.detail = cJSON_CreateObject();
    jsonx_add_str(c.detail, "held_by", job->held_by);
    job_set_held(job, NULL);
    /* The pass says again what the job waits for. */
    c.reason = job->state == PROTO_JOB_RESTARTING && job->restart_reason
                   ? job->restart_reason
                   : "";
    return event_job_fact(sd, job, "job_released", &c);
}

/* The reason of a job requeued by actor. */
static char *
requeue_reason(const struct job *job, const char *actor, bool hold)
{
    char from[64] = "starts again from the beginning (no complete checkpoint)";

    if (job->ckpt_step >= 0)
        snprintf(from, sizeof(from), "resumes from step %lld",
            (long long)job->ckpt_step);
    if (hold)
        return xasprintf("held by %s; requeued, %s", actor, from);
    return xasprintf("requeued by %s; %s", actor, from);
}

int
jobs_requeue(struct schedd *sd, struct job *job, const char *actor, bool hold)
{
    struct event_job_change c = { .actor = actor };
    struct attempt *a = job->cur;
    char *why, *reason;
    int rc = 0;

    if (!job_transition_ok(job->state, PROTO_JOB_PENDING))
        return -EINVAL;
    why = xasprintf("requeued by %s", actor);
    if (a && proto_attempt_state_active(a->state)) {
        a->dump_deadline_ms = 0;
        if (!a->has_failure)
            attempt_set_failure(a, NULL, false);
        rc = event_attempt(sd, a, PROTO_ATTEMPT_CANCELLED, why);
    }
    free(why);
    if (rc < 0)
        return rc;
    if (hold)
        job_set_held(job, actor);
    reason = requeue_reason(job, actor, hold);
    c.attempt = a;
    c.reason = reason;
    c.detail = cJSON_CreateObject();
    jsonx_add_int(c.detail, "attempt", job->attempt);
    cJSON_AddBoolToObject(c.detail, "requeued", true);
    jsonx_add_int(c.detail, "resume_step", job->ckpt_step);
    cJSON_AddBoolToObject(c.detail, "held", hold);
    rc = event_job(sd, job, PROTO_JOB_PENDING, &c);
    free(reason);
    return rc;
}

/* Note a commit of an attempt that does not count. */
static int
commit_stale(struct schedd *sd, const struct job *job, int attempt, int rank,
    int64_t step, const char *actor)
{
    char subject[32];
    cJSON *detail = cJSON_CreateObject();

    jsonx_add_int(detail, "attempt", attempt);
    jsonx_add_int(detail, "current", job->attempt);
    jsonx_add_int(detail, "step", step);
    jsonx_add_int(detail, "rank", rank);
    jsonx_add_str(detail, "ignored", "checkpoint commit");
    return schedd_event(sd, actor,
        schedd_subject_job(subject, sizeof(subject), job->id),
        "stale_attempt_rejected", detail);
}

int
jobs_commit(struct schedd *sd, struct job *job, int attempt, int rank,
    int64_t step, const char *actor, struct jobs_commit_result *out,
    struct err *err)
{
    struct attempt *a = schedd_job_latest(sd, job);
    int rc;

    memset(out, 0, sizeof(*out));
    if (attempt != job->attempt || a == NULL) {
        out->current = job->attempt;
        out->ended = a == NULL && attempt == job->attempt;
        rc = commit_stale(sd, job, attempt, rank, step, actor);
        return rc < 0 ? rc : -ESTALE;
    }
    if ((size_t)rank >= a->nranks)
        return err_set(err, -EINVAL,
            "field 'rank': must be between 0 and "
            "%zu (the world size is %zu)",
            a->nranks - 1, a->nranks);
    rc = checkpoint_commit(sd, job, a, rank, step, "api", &out->committed);
    if (rc < 0)
        return rc;
    out->world_size = (int)a->nranks;
    /* True also when a later step is complete: this one can no longer
     * matter for a resume. */
    out->complete = step <= job->ckpt_step;
    return 0;
}
