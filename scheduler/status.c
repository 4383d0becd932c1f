/*
 * status.c - apply an agent's status report (status.h)
 *
 * The first final state a rank reports is its evidence; later reports of
 * a final rank change nothing, and a pending report never moves a rank
 * backwards. Rank progress (step, idle time) changes with every report
 * and stays in memory (the hang watchdog reads it); only state changes,
 * dumps and checkpoint commits are written.
 *
 * A rank that failed while a peer node of its attempt is silent waits for
 * that node: when a node is cut off, its supervisors' lease runs out and
 * they kill its ranks; the ranks on the healthy nodes then fail in the
 * next collective, and their agents report that at once - well before the
 * silent node can be declared lost. Deciding then would blame a healthy
 * node and charge the job's own budget. So a rank exit waits while a peer
 * node is silent: either it reports again (and the exit is decided with
 * its evidence) or the node-loss timer fails the attempt as node_lost,
 * which it is.
 */
#include "scheduler/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/cadences.h"
#include "scheduler/checkpoint.h"
#include "scheduler/db.h"
#include "scheduler/directive.h"
#include "scheduler/event.h"
#include "scheduler/failure.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_health.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/planned.h"
#include "scheduler/rankstats.h"
#include "scheduler/recovery.h"
#include "scheduler/watchdog.h"

/* ---- outcomes ----------------------------------------------------------- */

static int
attempt_succeed(struct schedd *sd, struct attempt *a)
{
    struct job *job = a->job;
    struct event_job_change c = { .attempt = a };
    int rc;

    /* A hang being documented is overruled by a clean finish. */
    a->dump_deadline_ms = 0;
    if (!a->has_failure)
        attempt_set_failure(a, NULL, false);
    if (a->running_ms == 0)
        a->running_ms = a->start_ms;
    rc = event_attempt(sd, a, PROTO_ATTEMPT_SUCCEEDED, "");
    if (rc < 0 || job == NULL)
        return rc;
    /* Getting to the end on other nodes confirms earlier blame. */
    if ((rc = recovery_attempt_succeeded(sd, a)) < 0)
        return rc;
    c.detail = cJSON_CreateObject();
    jsonx_add_int(c.detail, "attempt", a->num);
    return event_job(sd, job, PROTO_JOB_SUCCEEDED, &c);
}

static int
attempt_running(struct schedd *sd, struct attempt *a)
{
    struct job *job = a->job;
    struct event_job_change c = { .attempt = a };
    int rc;

    a->running_ms = timeid_now_ms();
    rc = event_attempt(sd, a, PROTO_ATTEMPT_RUNNING, NULL);
    if (rc < 0 || job == NULL ||
        !job_transition_ok(job->state, PROTO_JOB_RUNNING))
        return rc;
    c.detail = cJSON_CreateObject();
    jsonx_add_int(c.detail, "attempt", a->num);
    return event_job(sd, job, PROTO_JOB_RUNNING, &c);
}

/* Another node of attempt a (not the one of rank r) that has gone
 * silent, or NULL (see the top of this file). */
static const struct node *
attempt_silent_peer(const struct schedd *sd, const struct attempt *a,
    const struct attempt_rank *r)
{
    int64_t mono = timeid_mono_ms();

    for (int k = 0; k < a->nnodes; k++) {
        const struct node *node = a->placements[k].node;

        if (k == r->node_rank || node == NULL || a->placements[k].released)
            continue;
        if (schedd_node_silent(sd, node, mono))
            return node;
    }
    return NULL;
}

/* Decide what the ranks' states mean for an active attempt. */
static int
attempt_decide(struct schedd *sd, struct attempt *a)
{
    const struct attempt_rank *bad;
    const struct node *silent;
    struct failure_case fc;

    if (!proto_attempt_state_active(a->state))
        return 0;
    if (a->dump_deadline_ms > 0) {
        /* A hang is being documented: ranks dying now (SIGUSR1 without
         * a handler, the stopped rank) are part of it, not new evidence.
         * Only a clean finish overrules the watchdog. */
        return attempt_all_succeeded(a) ? attempt_succeed(sd, a) : 0;
    }
    bad = attempt_first_failure(a);
    /* A rank that could not be started is no consequence of a silent
     * peer: decided at once. */
    if (bad && bad->state == PROTO_RANK_EXITED && !bad->fenced &&
        bad->launch_error == NULL &&
        (silent = attempt_silent_peer(sd, a, bad)) != NULL) {
        log_debug("job=%lld attempt=%d rank=%d failed while node=%s is "
                  "silent; waiting for it before deciding",
            (long long)a->job_id, a->num, bad->rank, silent->name);
        return 0;
    }
    if (bad) {
        failure_case_init(&fc, POLICY_KIND_RANK_EXIT);
        failure_case_rank(&fc, a, bad, a->placements[bad->node_rank].node,
            sd->started_ms, sd->lease_ms);
        return recovery_fail(sd, a, &fc);
    }
    if (attempt_all_succeeded(a))
        return attempt_succeed(sd, a);
    if (a->state == PROTO_ATTEMPT_STARTING && attempt_all_started(a))
        return attempt_running(sd, a);
    return 0;
}

/* ---- ranks -------------------------------------------------------------- */

static bool
rank_final(enum proto_rank_state s)
{
    return s == PROTO_RANK_EXITED || s == PROTO_RANK_LOST;
}

/* Apply one rank's status; true when its row must be written. */
static bool
rank_apply(struct attempt *a, struct attempt_rank *rk,
    const struct proto_rank_status *in, int64_t mono)
{
    bool exited, dirty = false;

    /* Progress, for the watchdog (in memory: it changes every report). */
    rk->idle_ms = in->idle_ms;
    rk->progress = in->progress;
    rk->seen_mono = mono;
    if (in->step >= 0)
        rk->step = in->step;
    rk->step_p50_us = in->step_p50_us;
    rk->step_p99_us = in->step_p99_us;
    if (in->dump && strcmp(in->dump, rk->dump) != 0) {
        free(rk->dump);
        rk->dump = xstrdup(in->dump);
        dirty = true;
    }
    if (rank_final(rk->state) || in->state == PROTO_RANK_PENDING)
        return dirty;
    exited = in->state == PROTO_RANK_EXITED;
    if (rk->state == in->state && rk->pid == in->pid && !exited)
        return dirty;
    attempt_rank_uncount(a, rk);
    rk->state = in->state;
    rk->pid = in->pid;
    rk->start_ms = in->start_ms;
    rk->end_ms = in->end_ms;
    rk->has_exit = exited;
    rk->exit_code = exited ? in->exit_code : 0;
    rk->signal = exited ? in->signal : 0;
    attempt_rank_count(a, rk);
    rk->fenced = in->fenced;
    if (in->state == PROTO_RANK_LOST && rk->end_ms == 0)
        rk->end_ms = timeid_now_ms();
    free(rk->stderr_tail);
    rk->stderr_tail = xstrdup(in->stderr_tail ? in->stderr_tail : "");
    free(rk->launch_error);
    rk->launch_error = exited && in->launch_error && in->launch_error[0]
                           ? xstrdup(in->launch_error)
                           : NULL;
    return true;
}

/* The SDK commits of one rank (of the job's latest attempt). */
static int
rank_commits(struct schedd *sd, struct job *job, struct attempt *a,
    struct attempt_rank *rk, const struct proto_rank_status *in)
{
    for (size_t c = 0; c < in->nckpt_steps; c++) {
        int64_t step = in->ckpt_steps[c];
        int rc;

        if (step <= rk->ckpt_max || step <= job->ckpt_step)
            continue;
        rc = checkpoint_commit(sd, job, a, rk->rank, step, "sdk", NULL);
        if (rc < 0)
            return rc;
        if (step > rk->ckpt_max)
            rk->ckpt_max = step;
    }
    return 0;
}

/* Apply a job status from the agent of placement p's node (only the
 * ranks that run there), then decide. */
static int
status_attempt(struct schedd *sd, struct placement *p,
    const struct proto_job_status *st)
{
    struct attempt *a = p->attempt;
    struct job *job = schedd_attempt_job(sd, a);
    /* Checkpoints count for the job's latest attempt only (fencing). A
     * failed latest attempt still tearing down may finish committing a
     * checkpoint: its data is as good as when it was running. */
    bool latest = job && job->attempt == a->num;
    int64_t mono = timeid_mono_ms(), fastest = -1;
    int rc;

    for (size_t i = 0; i < st->nranks; i++) {
        const struct proto_rank_status *in = &st->ranks[i];
        struct attempt_rank *rk;

        if (in->rank < 0 || (size_t)in->rank >= a->nranks)
            continue;
        if (in->step > fastest)
            fastest = in->step;
        rk = &a->ranks[in->rank];
        /* On the clock the watchdog reads: the loop's stalls are not
         * the rank's idleness (watchdog.c). */
        if (rank_apply(a, rk, in, mono - sd->stalled_ms) &&
            (rc = schedd_db_check(sd, db_rank_update(sd->db, a, rk))) < 0)
            return rc;
        if (latest && (rc = rank_commits(sd, job, a, rk, in)) < 0)
            return rc;
        if ((rc = directive_acks(sd, a, p, in)) < 0 ||
            (rc = cadences_acks(sd, a, p, in)) < 0)
            return rc;
        rankstats_rank(sd, a, p, in);
    }
    if ((rc = cadences_report(sd, a, fastest)) < 0)
        return rc;
    if (latest && p->node_rank == 0 && st->ncheckpoints > 0 &&
        (rc = checkpoint_scan(sd, job, a, st->checkpoints, st->ncheckpoints)) <
            0)
        return rc;
    if ((rc = watchdog_dumps(sd, a)) < 0 || (rc = attempt_decide(sd, a)) < 0 ||
        (rc = rankstats_attempt(sd, a)) < 0)
        return rc;
    return planned_check(sd, a);
}

/* ---- the report --------------------------------------------------------- */

static bool
report_lists(const struct proto_node_report *rep, const struct attempt *a)
{
    for (size_t i = 0; i < rep->njobs; i++) {
        if (rep->jobs[i].job == a->job_id && rep->jobs[i].attempt == a->num)
            return true;
    }
    return false;
}

static struct placement *
node_hold_find(const struct node *node, int64_t job, int attempt)
{
    for (size_t i = 0; i < node->nholds; i++) {
        struct placement *p = node->holds[i];

        if (p->attempt->job_id == job && p->attempt->num == attempt)
            return p;
    }
    return NULL;
}

/* Placements the agent has seen but does not hold are lost. */
static int
status_reconcile(struct schedd *sd, struct node *node,
    const struct proto_node_report *rep, bool fresh_agent)
{
    uint64_t seen = rep->gen;
    int rc = 0;

    if (!fresh_agent && node->reconciled)
        return 0;
    if (fresh_agent && node->agent_gen > seen)
        seen = node->agent_gen;
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];

        if (proto_attempt_state_active(p->attempt->state) && p->gen <= seen &&
            !report_lists(rep, p->attempt))
            rc = nodes_placement_lost(sd, p, POLICY_KIND_LOST_RANKS,
                "the node's agent does not hold it");
    }
    if (!node->reconciled)
        schedd_sched_trigger(sd);
    node->reconciled = true;
    return rc;
}

/* Whether a job status carries checkpoint or progress data (what fencing
 * rejects from an attempt that is not the job's latest). */
static const char *
status_payload(const struct proto_job_status *js)
{
    if (js->ncheckpoints > 0)
        return "checkpoint scan";
    for (size_t i = 0; i < js->nranks; i++) {
        if (js->ranks[i].nckpt_steps > 0)
            return "checkpoint commits";
    }
    for (size_t i = 0; i < js->nranks; i++) {
        if (js->ranks[i].state == PROTO_RANK_RUNNING)
            return "progress";
    }
    return NULL;
}

/* Note (once per node and attempt) that a report of an old attempt was
 * ignored. */
static int
status_stale(struct schedd *sd, struct node *node,
    const struct proto_job_status *js)
{
    const struct job *job = job_table_find(&sd->jobs, js->job);
    const char *what = status_payload(js);
    char subject[32], actor[PROTO_NODE_NAME_MAX + 8];
    cJSON *detail;

    if (job == NULL || js->attempt >= job->attempt || what == NULL ||
        (node->stale_job == js->job && node->stale_attempt == js->attempt))
        return 0;
    node->stale_job = js->job;
    node->stale_attempt = js->attempt;
    snprintf(actor, sizeof(actor), "agent/%s", node->name);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", js->attempt);
    jsonx_add_int(detail, "current", job->attempt);
    jsonx_add_str(detail, "node", node->name);
    jsonx_add_str(detail, "ignored", what);
    log_info("job=%lld attempt=%d node=%s: %s of an old attempt ignored",
        (long long)js->job, js->attempt, node->name, what);
    return schedd_event(sd, actor,
        schedd_subject_job(subject, sizeof(subject), js->job),
        "stale_attempt_rejected", detail);
}

/* One job status of the report: only the ranks that run on this node
 * count as its evidence. */
static int
status_job(struct schedd *sd, struct node *node, struct proto_job_status *js)
{
    struct placement *p = node_hold_find(node, js->job, js->attempt);
    struct proto_job_status view;
    size_t keep = 0;

    if (p == NULL)
        return status_stale(sd, node, js);
    for (size_t k = 0; k < js->nranks; k++) {
        if (js->ranks[k].rank / p->attempt->ranks_per_node == p->node_rank) {
            struct proto_rank_status tmp = js->ranks[keep];

            js->ranks[keep++] = js->ranks[k];
            js->ranks[k] = tmp;
        }
    }
    view = *js;
    view.nranks = keep;
    return status_attempt(sd, p, &view);
}

/* Release what the agent no longer holds and we no longer want. */
static int
status_release(struct schedd *sd, struct node *node,
    const struct proto_node_report *rep)
{
    int rc = 0;

    for (size_t i = 0; i < node->nholds && rc == 0;) {
        struct placement *p = node->holds[i];

        if (!proto_attempt_state_active(p->attempt->state) &&
            !report_lists(rep, p->attempt)) {
            rc = nodes_release(sd, p);
            continue;
        }
        i++;
    }
    return rc;
}

int
status_apply(struct schedd *sd, struct proto_node_report *rep, int64_t now,
    struct proto_status_reply *reply)
{
    struct node *node = NULL;
    bool fresh_agent;
    int rc;

    if ((rc = nodes_report(sd, rep, now, &node, &fresh_agent)) < 0 ||
        (rc = nodes_witness_port(sd, node, rep->witness_port)) < 0 ||
        (rc = nodes_seen(sd, node, now)) < 0 ||
        (rc = status_reconcile(sd, node, rep, fresh_agent)) < 0 ||
        (rc = nodes_health_report(sd, node, rep->agent_id, rep->health, now)) <
            0)
        return rc;
    node->agent_gen = rep->gen;
    /* New generations must exceed anything an agent has seen, even if the
     * wall clock went back across a scheduler restart. */
    if (rep->gen > sd->gen)
        sd->gen = rep->gen;
    for (size_t i = 0; i < rep->njobs && rc == 0; i++)
        rc = status_job(sd, node, &rep->jobs[i]);
    if (rc == 0)
        rc = status_release(sd, node, rep);
    if (rc < 0)
        return rc;
    reply->heartbeat_ms = sd->heartbeat_ms;
    reply->gen = node->gen;
    /* The agent renews every supervisor's lease to its send + lease_ms. */
    nodes_witness_grant(sd, node, &reply->lease_ms, &reply->lease_interval_ms);
    reply->ping_ms = sd->lease_ping_ms;
    return nodes_witness_reply(sd, node, reply);
}
