/*
 * event.c - the one path of every job, attempt and node state change
 *
 * event.h says what each change sets and starts. The order is always the
 * same: check the table, change the model, write the row, write the
 * event, log, then the follow-ups. The rows and the event are in the
 * iteration's transaction, and every reply and every long-poll answer
 * that depends on them is written only after it commits (http.h), so an
 * agent never hears of a launch or a teardown that a crash could undo.
 *
 * A failed write marks the iteration failed (schedd_db_error): it will be
 * rolled back and the model reloaded, so in-memory changes made after the
 * failure do not outlive it. That is why a follow-up (a finished job
 * leaving the model) happens even when its write failed.
 */
#include "scheduler/event.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/alerts.h"
#include "scheduler/db.h"

/* "job_placed", "node_up", ...: prefix + the state in lowercase. */
static const char *
event_kind(char *buf, size_t len, const char *prefix, const char *state)
{
    size_t n = (size_t)snprintf(buf, len, "%s%s", prefix, state);

    for (size_t i = 0; i < n && i < len; i++)
        buf[i] = (char)tolower((unsigned char)buf[i]);
    return buf;
}

/* Write detail (taken) as the event kind of subject, unless rc failed. */
static int
event_write(struct schedd *sd, int rc, const char *actor, const char *subject,
    const char *kind, cJSON *detail)
{
    if (detail == NULL)
        detail = cJSON_CreateObject();
    if (rc < 0) {
        cJSON_Delete(detail);
        return rc;
    }
    return schedd_event(sd, actor ? actor : SCHEDD_ACTOR, subject, kind,
        detail);
}

int
event_job_submitted(struct schedd *sd, struct job *job)
{
    char subject[32];
    cJSON *detail;
    int rc;

    assert(job->state == PROTO_JOB_PENDING);
    rc = db_job_insert(sd->db, job);
    if (rc < 0) {
        job_destroy(job);
        return schedd_db_error(sd, rc);
    }
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "name", job->spec.name);
    jsonx_add_int(detail, "nodes", job->spec.nodes);
    jsonx_add_int(detail, "ranks_per_node", job->spec.ranks_per_node);
    jsonx_add_int(detail, "gpus_per_node", job->spec.gpus_per_node);
    jsonx_add_int(detail, "priority", job->spec.priority);
    rc = schedd_event(sd, job->user,
        schedd_subject_job(subject, sizeof(subject), job->id), "job_submitted",
        detail);
    if (rc < 0) {
        job_destroy(job);
        return rc;
    }
    sd->counts.jobs[PROTO_JOB_PENDING]++;
    job_table_add(&sd->jobs, job);
    schedd_sched_queued(sd, job);
    log_info("job=%lld submitted by %s name=%s nodes=%d", (long long)job->id,
        job->user, job->spec.name, job->spec.nodes);
    return 0;
}

/* The fields that go with job's new state (event.h). */
static void
event_job_fields(struct job *job, enum proto_job_state to, struct attempt *a,
    const char *reason, int64_t now)
{
    job_set_reason(job, reason ? reason : "");
    switch (to) {
    case PROTO_JOB_PLACED:
        job->cur = a;
        job->attempt = a->num;
        job->not_before_ms = 0;
        job_set_reserved(job, NULL, 0);
        free(job->restart_reason);
        job->restart_reason = NULL;
        break;
    case PROTO_JOB_RUNNING:
        if (job->start_ms == 0)
            job->start_ms = a ? a->running_ms : now;
        break;
    case PROTO_JOB_RESTARTING:
        free(job->restart_reason);
        job->restart_reason = xstrdup(reason ? reason : "");
        break;
    case PROTO_JOB_SUCCEEDED:
        job->end_ms = a ? a->end_ms : now;
        if (job->start_ms == 0)
            job->start_ms = a ? a->start_ms : now;
        break;
    case PROTO_JOB_FAILED:
    case PROTO_JOB_CANCELLED:
        job->end_ms = now;
        break;
    case PROTO_JOB_PENDING:
        break;
    }
    if (proto_job_state_finished(to)) {
        job_set_reserved(job, NULL, 0);
        job->not_before_ms = 0;
        job_set_held(job, NULL);
    }
}

/* A finished job leaves the model; its reservation (if any) is gone, so
 * others may use those nodes. */
static void
event_job_finish(struct schedd *sd, struct job *job)
{
    if (job->cur)
        job->cur->job = NULL;
    job->cur = NULL;
    job_table_remove(&sd->jobs, job);
    job_destroy(job);
    schedd_sched_trigger(sd);
}

/* The counts for /metrics (schedd.h): the job moves from one state to
 * another; a placement brings a new attempt (launch.c inserts its row
 * just before); every restart goes through RESTARTING (recovery.c
 * counts it in the job's budget just before). */
static void
event_job_count(struct schedd *sd, enum proto_job_state from,
    enum proto_job_state to, const struct attempt *a)
{
    sd->counts.jobs[from]--;
    sd->counts.jobs[to]++;
    if (to == PROTO_JOB_PLACED && a != NULL)
        sd->counts.attempts[a->state]++;
    if (to == PROTO_JOB_RESTARTING)
        sd->counts.restarts++;
}

int
event_job(struct schedd *sd, struct job *job, enum proto_job_state to,
    struct event_job_change *c)
{
    enum proto_job_state from = job->state;
    char subject[32], kind[32];
    int rc;

    if (job_transition(job, to) < 0) {
        cJSON_Delete(c->detail);
        c->detail = NULL;
        return -EINVAL;
    }
    event_job_fields(job, to, c->attempt, c->reason, timeid_now_ms());
    event_job_count(sd, from, to, c->attempt);
    job_table_sync(&sd->jobs, job);
    rc = schedd_db_check(sd, db_job_update(sd->db, job));
    rc = event_write(sd, rc, c->actor,
        schedd_subject_job(subject, sizeof(subject), job->id),
        event_kind(kind, sizeof(kind), "job_", proto_job_state_str(to)),
        c->detail);
    c->detail = NULL;
    log_info("job=%lld attempt=%d %s -> %s%s%s", (long long)job->id,
        job->attempt, proto_job_state_str(from), proto_job_state_str(to),
        job->reason[0] ? ": " : "", job->reason);
    if (to == PROTO_JOB_FAILED && rc == 0)
        rc = alerts_job_failed(sd, job, job->reason);
    if (proto_job_state_finished(to))
        event_job_finish(sd, job);
    else if (to == PROTO_JOB_RESTARTING || to == PROTO_JOB_PENDING)
        schedd_sched_trigger(sd);
    return rc;
}

int
event_job_fact(struct schedd *sd, struct job *job, const char *kind,
    struct event_job_change *c)
{
    char subject[32];
    int rc;

    if (c->reason)
        job_set_reason(job, c->reason);
    job_table_sync(&sd->jobs, job); /* a hold or a release */
    rc = schedd_db_check(sd, db_job_update(sd->db, job));
    rc = event_write(sd, rc, c->actor,
        schedd_subject_job(subject, sizeof(subject), job->id), kind, c->detail);
    c->detail = NULL;
    log_info("job=%lld %s%s%s", (long long)job->id, kind,
        job->reason[0] ? ": " : "", job->reason);
    schedd_sched_trigger(sd);
    return rc;
}

/* A new generation for every node of attempt a: a withdrawn attempt is
 * torn down. (Its master port stays taken until the attempt is dropped:
 * rank 0 may still listen on it while it is being killed.) */
static void
event_attempt_withdraw(struct schedd *sd, struct attempt *a)
{
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
            schedd_node_changed(sd, p->node);
    }
    if (a->job && a->job->cur == a)
        a->job->cur = NULL;
    a->job = NULL;
}

int
event_attempt(struct schedd *sd, struct attempt *a, enum proto_attempt_state to,
    const char *reason)
{
    enum proto_attempt_state from = a->state;
    int rc;

    if (attempt_transition(a, to) < 0)
        return -EINVAL;
    if (!proto_attempt_state_active(to))
        a->end_ms = timeid_now_ms();
    if (reason)
        attempt_set_reason(a, reason);
    sd->counts.attempts[from]--;
    sd->counts.attempts[to]++;
    rc = schedd_db_check(sd, db_attempt_update(sd->db, a));
    log_debug("job=%lld attempt=%d %s -> %s", (long long)a->job_id, a->num,
        proto_attempt_state_str(from), proto_attempt_state_str(to));
    if (proto_attempt_state_active(from) && !proto_attempt_state_active(to))
        event_attempt_withdraw(sd, a);
    return rc;
}

static cJSON *
event_node_detail(enum node_state old, enum node_state now, const char *why,
    cJSON *extra)
{
    cJSON *detail = cJSON_CreateObject();

    jsonx_add_str(detail, "from", node_state_str(old));
    jsonx_add_str(detail, "to", node_state_str(now));
    if (why && *why)
        jsonx_add_str(detail, "reason", why);
    while (extra && extra->child) {
        cJSON *item = cJSON_DetachItemViaPointer(extra, extra->child);

        cJSON_AddItemToObject(detail, item->string, item);
    }
    cJSON_Delete(extra);
    return detail;
}

int
event_node(struct schedd *sd, struct node *node, struct event_node_change *c)
{
    struct event_node_change none = { 0 };
    enum node_state old = node->state;
    enum node_state now = node_state_compute(node);
    char subject[PROTO_NODE_NAME_MAX + 8], kind[32];
    const char *why;
    cJSON *detail;
    int rc;

    c = c ? c : &none;
    why = c->why ? c->why : "";
    if (now == old && c->kind == NULL && c->fact == NULL) {
        cJSON_Delete(c->extra);
        c->extra = NULL;
        return 0;
    }
    node->state = now;
    rc = schedd_db_check(sd, db_node_update(sd->db, node));
    schedd_subject_node(subject, sizeof(subject), node->name);
    if (now != old || c->kind) {
        detail = event_node_detail(old, now, why, c->extra);
        rc = event_write(sd, rc, c->actor, subject,
            c->kind
                ? c->kind
                : event_kind(kind, sizeof(kind), "node_", node_state_str(now)),
            detail);
        log_info("node=%s %s -> %s%s%s", node->name, node_state_str(old),
            node_state_str(now), *why ? ": " : "", why);
    } else {
        cJSON_Delete(c->extra);
        detail = cJSON_CreateObject();
        jsonx_add_str(detail, "reason", why);
        rc = event_write(sd, rc, c->actor, subject, c->fact, detail);
    }
    c->extra = NULL;
    if (now == NODE_STATE_UP || old == NODE_STATE_UP ||
        now == NODE_STATE_SUSPECT || old == NODE_STATE_SUSPECT)
        schedd_sched_trigger(sd);
    return rc;
}
