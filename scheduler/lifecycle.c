/*
 * lifecycle.c - what happens to attempts, jobs and nodes
 *
 * Every function here follows the same order: check the transition table,
 * write the decision (rows and an event) into the iteration's transaction,
 * then change the model and wake whoever must act on it (the nodes' long
 * polls). The replies those wake-ups produce are written only after the
 * transaction commits (see http.h), so an agent never hears of a launch or
 * a teardown that a crash could undo.
 *
 * If a database write fails, the iteration is marked failed
 * (schedd_db_error): it will be rolled back and the model reloaded, so the
 * in-memory changes made after the failure do not outlive it.
 *
 * Invariants: a->job is set only while attempt a is active, and then
 * a->job->cur == a. An attempt stays in the live list while it is active
 * or any of its placements is unreleased.
 */
#include "scheduler/schedd.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/api.h"
#include "scheduler/db.h"

#define ACTOR_SCHEDULER "scheduler"

static void
subject_job(char *buf, size_t len, int64_t id)
{
    snprintf(buf, len, "job/%lld", (long long)id);
}

static int
db_check(struct schedd *sd, int rc)
{
    return rc < 0 ? schedd_db_error(sd, rc) : 0;
}

static int
job_save(struct schedd *sd, struct job *job)
{
    return db_check(sd, db_job_update(sd->db, job));
}

/* Remove a finished job from the model. */
static void
job_finish(struct schedd *sd, struct job *job)
{
    if (job->cur)
        job->cur->job = NULL;
    job->cur = NULL;
    job_table_remove(&sd->jobs, job);
    job_destroy(job);
}

/* Take attempt a out of every node's desired state: its agents tear it
 * down. (Its master port stays taken until the attempt is dropped: rank 0
 * may still listen on it while it is being killed.) */
static void
attempt_withdraw(struct schedd *sd, struct attempt *a)
{
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node)
            schedd_node_changed(sd, p->node);
    }
}

static int
attempt_set_state(struct schedd *sd, struct attempt *a,
    enum attempt_state to, const char *reason)
{
    if (!attempt_transition_ok(a->state, to))
        return -EINVAL;
    a->state = to;
    if (!attempt_state_active(to))
        a->end_ms = timeid_now_ms();
    if (reason)
        attempt_set_reason(a, reason);
    return db_check(sd, db_attempt_update(sd->db, a));
}

void
schedd_attempt_drop(struct schedd *sd, struct attempt *a)
{
    if (a->job && a->job->cur == a)
        a->job->cur = NULL;
    schedd_port_mark(sd, a->master_port, false);
    if (a->prev)
        a->prev->next = a->next;
    else if (sd->attempts == a)
        sd->attempts = a->next;
    if (a->next)
        a->next->prev = a->prev;
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
            node_hold_remove(p->node, p);
    }
    attempt_destroy(a);
}

/* Drop a finished attempt once nothing holds it any more. */
static void
attempt_maybe_drop(struct schedd *sd, struct attempt *a)
{
    if (!attempt_state_active(a->state) && attempt_fully_released(a))
        schedd_attempt_drop(sd, a);
}

/* ---- placing ------------------------------------------------------------ */

int
schedd_place(struct schedd *sd, struct job *job, struct node **nodes,
    const int *gpus, int port)
{
    const struct proto_job_spec *s = &job->spec;
    struct attempt *a;
    char subject[32];
    cJSON *detail, *names;
    int rc;

    if (!job_transition_ok(job->state, JOB_STATE_PLACED))
        return -EINVAL;
    a = attempt_create(job->id, job->attempt + 1, s->nodes,
        s->ranks_per_node);
    a->start_ms = timeid_now_ms();
    free(a->master_addr);
    a->master_addr = xstrdup(nodes[0]->addr);
    a->master_port = port;
    for (int k = 0; k < s->nodes; k++) {
        struct placement *p = &a->placements[k];

        p->node_name = xstrdup(nodes[k]->name);
        p->node = nodes[k];
        p->ngpus = (size_t)s->gpus_per_node;
        p->gpus = xcalloc(p->ngpus + 1, sizeof(*p->gpus));
        if (p->ngpus)
            memcpy(p->gpus, gpus + (size_t)k * p->ngpus,
                p->ngpus * sizeof(*p->gpus));
        p->cpus = s->ranks_per_node * s->cpus_per_rank;
        p->memory_mb = s->memory_mb_per_node;
        /* The generation that first carries this placement: an agent
         * reporting this gen or later has seen it. */
        nodes[k]->gen = schedd_next_gen(sd);
        p->gen = nodes[k]->gen;
    }

    rc = db_check(sd, db_attempt_insert(sd->db, a));
    job->state = JOB_STATE_PLACED;
    job->attempt = a->num;
    job_set_reason(job, "");
    if (rc == 0)
        rc = job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    names = cJSON_AddArrayToObject(detail, "nodes");
    for (int k = 0; k < s->nodes; k++)
        cJSON_AddItemToArray(names, cJSON_CreateString(nodes[k]->name));
    jsonx_add_str(detail, "master_addr", a->master_addr);
    jsonx_add_int(detail, "master_port", port);
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject, "job_placed", detail);
    else
        cJSON_Delete(detail);

    /* The model, then the agents (whose replies wait for the commit). */
    a->job = job;
    job->cur = a;
    a->next = sd->attempts;
    if (sd->attempts)
        sd->attempts->prev = a;
    sd->attempts = a;
    schedd_port_mark(sd, port, true);
    for (int k = 0; k < s->nodes; k++) {
        node_hold_add(nodes[k], &a->placements[k]);
        api_agent_wake(sd, nodes[k]);
    }
    log_info("job=%lld attempt=%d placed on %d node(s) master=%s:%d",
        (long long)job->id, a->num, s->nodes, a->master_addr, port);
    return rc;
}

/* ---- outcomes ----------------------------------------------------------- */

static int
attempt_succeed(struct schedd *sd, struct attempt *a)
{
    struct job *job = a->job;
    char subject[32];
    cJSON *detail;
    int rc;

    rc = attempt_set_state(sd, a, ATTEMPT_STATE_SUCCEEDED, "");
    if (rc < 0)
        return rc;
    attempt_withdraw(sd, a);
    a->job = NULL;
    if (job == NULL)
        return 0;
    job->cur = NULL;
    if (job_transition(job, JOB_STATE_SUCCEEDED) < 0)
        return -EINVAL;
    job->end_ms = a->end_ms;
    if (job->start_ms == 0)
        job->start_ms = a->start_ms;
    job_set_reason(job, "");
    rc = job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject, "job_succeeded",
            detail);
    else
        cJSON_Delete(detail);
    log_info("job=%lld attempt=%d succeeded", (long long)job->id, a->num);
    job_finish(sd, job);
    return rc;
}

static int
attempt_running(struct schedd *sd, struct attempt *a)
{
    struct job *job = a->job;
    char subject[32];
    cJSON *detail;
    int rc;

    rc = attempt_set_state(sd, a, ATTEMPT_STATE_RUNNING, NULL);
    if (rc < 0 || job == NULL)
        return rc;
    if (job_transition(job, JOB_STATE_RUNNING) < 0)
        return 0;
    if (job->start_ms == 0)
        job->start_ms = timeid_now_ms();
    rc = job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject, "job_running",
            detail);
    else
        cJSON_Delete(detail);
    log_info("job=%lld attempt=%d running", (long long)job->id, a->num);
    return rc;
}

int
schedd_attempt_fail(struct schedd *sd, struct attempt *a,
    const struct attempt_rank *r, const char *reason)
{
    struct job *job = a->job;
    const struct placement *p = &a->placements[r->node_rank];
    char subject[32];
    char *text;
    cJSON *detail;
    bool restart;
    int rc;

    if (!attempt_state_active(a->state))
        return 0;
    rc = attempt_set_state(sd, a, ATTEMPT_STATE_FAILED, reason);
    if (rc < 0)
        return rc;
    attempt_withdraw(sd, a);
    a->job = NULL;
    if (job == NULL)
        return 0;
    job->cur = NULL;
    job_set_failure(job, r->rank, r->has_exit, r->exit_code, r->signal,
        r->stderr_tail);
    /* Restarts used so far are a->num - 1. */
    restart = a->num <= job->spec.max_restarts;
    if (restart) {
        text = xasprintf("attempt %d failed: %s; restarting (restart %d of "
            "%d)", a->num, reason, a->num, job->spec.max_restarts);
        rc = job_transition(job, JOB_STATE_RESTARTING);
    } else {
        text = xstrdup(reason);
        rc = job_transition(job, JOB_STATE_FAILED);
        job->end_ms = a->end_ms;
    }
    if (rc < 0) {
        free(text);
        return rc;
    }
    job_set_reason(job, text);
    free(text);
    rc = job_save(sd, job);

    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_str(detail, "reason", reason);
    jsonx_add_int(detail, "rank", r->rank);
    jsonx_add_str(detail, "node", p->node_name);
    if (r->has_exit) {
        jsonx_add_int(detail, "exit_code", r->exit_code);
        jsonx_add_int(detail, "signal", r->signal);
    }
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject,
            restart ? "job_restarting" : "job_failed", detail);
    else
        cJSON_Delete(detail);
    if (restart) {
        log_notice("job=%lld attempt=%d failed (%s); restarting",
            (long long)job->id, a->num, reason);
        schedd_sched_trigger(sd);
    } else {
        log_notice("job=%lld attempt=%d failed (%s)", (long long)job->id,
            a->num, reason);
        job_finish(sd, job);
    }
    return rc;
}

/* Decide what the ranks' states mean for an active attempt. */
static int
attempt_decide(struct schedd *sd, struct attempt *a)
{
    const struct attempt_rank *bad;
    char reason[160];

    if (!attempt_state_active(a->state))
        return 0;
    bad = attempt_first_failure(a);
    if (bad) {
        attempt_rank_failure_str(a, bad, reason, sizeof(reason));
        return schedd_attempt_fail(sd, a, bad, reason);
    }
    if (attempt_all_succeeded(a))
        return attempt_succeed(sd, a);
    if (a->state == ATTEMPT_STATE_STARTING && attempt_all_started(a))
        return attempt_running(sd, a);
    return 0;
}

static bool
rank_final(enum proto_rank_state s)
{
    return s == PROTO_RANK_EXITED || s == PROTO_RANK_LOST;
}

int
schedd_attempt_report(struct schedd *sd, struct attempt *a,
    const struct proto_job_status *st)
{
    for (size_t i = 0; i < st->nranks; i++) {
        const struct proto_rank_status *in = &st->ranks[i];
        struct attempt_rank *rk;
        bool exited;
        int rc;

        if (in->rank < 0 || (size_t)in->rank >= a->nranks)
            continue;
        rk = &a->ranks[in->rank];
        /* The first final state is the evidence; later reports of a
         * final rank change nothing. A pending report never moves a rank
         * backwards. */
        if (rank_final(rk->state) || in->state == PROTO_RANK_PENDING)
            continue;
        exited = in->state == PROTO_RANK_EXITED;
        if (rk->state == in->state && rk->pid == in->pid && !exited)
            continue;
        rk->state = in->state;
        rk->pid = in->pid;
        rk->start_ms = in->start_ms;
        rk->end_ms = in->end_ms;
        rk->has_exit = exited;
        rk->exit_code = exited ? in->exit_code : 0;
        rk->signal = exited ? in->signal : 0;
        if (in->state == PROTO_RANK_LOST && rk->end_ms == 0)
            rk->end_ms = timeid_now_ms();
        free(rk->stderr_tail);
        rk->stderr_tail = xstrdup(in->stderr_tail ? in->stderr_tail : "");
        rc = db_check(sd, db_rank_update(sd->db, a, rk));
        if (rc < 0)
            return rc;
    }
    return attempt_decide(sd, a);
}

int
schedd_placement_lost(struct schedd *sd, struct placement *p,
    const char *why)
{
    struct attempt *a = p->attempt;
    const struct attempt_rank *first = NULL;
    char reason[160];
    int rpn = a->ranks_per_node;

    for (int l = 0; l < rpn; l++) {
        struct attempt_rank *rk = &a->ranks[p->node_rank * rpn + l];
        int rc;

        if (rank_final(rk->state))
            continue;
        rk->state = PROTO_RANK_LOST;
        rk->end_ms = timeid_now_ms();
        rc = db_check(sd, db_rank_update(sd->db, a, rk));
        if (rc < 0)
            return rc;
        if (first == NULL)
            first = rk;
    }
    if (first == NULL || !attempt_state_active(a->state))
        return 0;
    attempt_rank_failure_str(a, first, reason, sizeof(reason));
    if (why && *why) {
        size_t n = strlen(reason);

        snprintf(reason + n, sizeof(reason) - n, " (%s)", why);
    }
    return schedd_attempt_fail(sd, a, first, reason);
}

int
schedd_placement_release(struct schedd *sd, struct placement *p)
{
    struct attempt *a = p->attempt;
    struct node *node = p->node;
    int rc;

    if (p->released)
        return 0;
    rc = db_check(sd, db_placement_release(sd->db, p));
    if (rc < 0)
        return rc;
    p->released = true;
    if (node) {
        node_hold_remove(node, p);
        rc = schedd_node_refresh(sd, node, ACTOR_SCHEDULER, NULL);
    }
    log_debug("job=%lld attempt=%d node=%s released", (long long)a->job_id,
        a->num, p->node_name);
    schedd_sched_trigger(sd);
    attempt_maybe_drop(sd, a);
    return rc;
}

/* ---- cancel ------------------------------------------------------------- */

int
schedd_job_cancel(struct schedd *sd, struct job *job, const char *actor)
{
    struct attempt *a = job->cur;
    char subject[32];
    char *reason;
    cJSON *detail;
    int rc = 0;

    if (job_state_finished(job->state))
        return 0;
    if (!job_transition_ok(job->state, JOB_STATE_CANCELLED))
        return -EINVAL;
    reason = xasprintf("cancelled by %s", actor);
    if (a && attempt_state_active(a->state)) {
        rc = attempt_set_state(sd, a, ATTEMPT_STATE_CANCELLED, reason);
        if (rc < 0) {
            free(reason);
            return rc;
        }
        attempt_withdraw(sd, a);
        a->job = NULL;
        job->cur = NULL;
    }
    job->state = JOB_STATE_CANCELLED;
    job->end_ms = timeid_now_ms();
    job_set_reason(job, reason);
    free(reason);
    rc = job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    if (a)
        jsonx_add_int(detail, "attempt", a->num);
    if (rc == 0)
        rc = schedd_event(sd, actor, subject, "job_cancelled", detail);
    else
        cJSON_Delete(detail);
    log_info("job=%lld cancelled by %s", (long long)job->id, actor);
    job_finish(sd, job);
    if (a)
        attempt_maybe_drop(sd, a);
    schedd_sched_trigger(sd);
    return rc;
}

/* ---- nodes -------------------------------------------------------------- */

static const char *const node_event_kinds[NODE_STATE_COUNT] = {
    [NODE_STATE_UP] = "node_up",
    [NODE_STATE_CORDONED] = "node_cordoned",
    [NODE_STATE_DRAINING] = "node_draining",
    [NODE_STATE_UNHEALTHY] = "node_unhealthy",
    [NODE_STATE_LOST] = "node_lost",
};

int
schedd_node_refresh(struct schedd *sd, struct node *node, const char *actor,
    const char *why)
{
    enum node_state old = node->state;
    enum node_state now = node_state_compute(node);
    char subject[PROTO_NODE_NAME_MAX + 8];
    cJSON *detail;
    int rc;

    if (now == old)
        return 0;
    node->state = now;
    rc = db_check(sd, db_node_update(sd->db, node));
    snprintf(subject, sizeof(subject), "node/%s", node->name);
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "from", node_state_str(old));
    jsonx_add_str(detail, "to", node_state_str(now));
    if (why && *why)
        jsonx_add_str(detail, "reason", why);
    if (rc == 0)
        rc = schedd_event(sd, actor, subject, node_event_kinds[now], detail);
    else
        cJSON_Delete(detail);
    log_info("node=%s %s -> %s%s%s", node->name, node_state_str(old),
        node_state_str(now), why && *why ? ": " : "", why ? why : "");
    if (now == NODE_STATE_UP || old == NODE_STATE_UP)
        schedd_sched_trigger(sd);
    return rc;
}

void
schedd_node_changed(struct schedd *sd, struct node *node)
{
    node->gen = schedd_next_gen(sd);
    api_agent_wake(sd, node);
}

int
schedd_node_lost(struct schedd *sd, struct node *node)
{
    char why[96];
    int rc;

    if (node->lost)
        return 0;
    snprintf(why, sizeof(why), "no status for %d ms", sd->node_timeout_ms);
    node->lost = true;
    rc = schedd_node_refresh(sd, node, ACTOR_SCHEDULER, why);
    /* Failing an attempt withdraws it but leaves the hold: the node's
     * agent may still run its ranks, and only its report frees them. */
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];

        if (attempt_state_active(p->attempt->state))
            rc = schedd_placement_lost(sd, p, "node lost");
    }
    schedd_sched_trigger(sd);
    return rc;
}

/* ---- master ports ------------------------------------------------------- */

int
schedd_port_alloc(struct schedd *sd)
{
    for (int i = 0; i < sd->port_count; i++) {
        int idx = (sd->port_cursor + i) % sd->port_count;

        if (!sd->ports_used[idx]) {
            /* Hand out ports round-robin so a port freed a moment ago (its
             * old job possibly still tearing down) is reused last. */
            sd->port_cursor = (idx + 1) % sd->port_count;
            return sd->port_base + idx;
        }
    }
    return -EAGAIN;
}

void
schedd_port_mark(struct schedd *sd, int port, bool used)
{
    int idx = port - sd->port_base;

    if (idx >= 0 && idx < sd->port_count)
        sd->ports_used[idx] = used;
}

int
schedd_ports_free(const struct schedd *sd)
{
    int n = 0;

    for (int i = 0; i < sd->port_count; i++)
        n += !sd->ports_used[i];
    return n;
}
