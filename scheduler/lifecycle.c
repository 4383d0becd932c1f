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
 * Failures are recorded and decided in recovery.c; this file turns the
 * agents' reports into evidence (attempt_decide, schedd_placement_lost)
 * and hands it over.
 *
 * Invariants: a->job is set only while attempt a is active, and then
 * a->job->cur == a. An attempt stays in the live list while it is active
 * or any of its placements is unreleased. A job's next attempt is placed
 * only once every placement of its previous one is released (schedd.c),
 * so two attempts of a job never run at the same time.
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

int
schedd_job_save(struct schedd *sd, struct job *job)
{
    return db_check(sd, db_job_update(sd->db, job));
}

int
schedd_attempt_save(struct schedd *sd, struct attempt *a)
{
    return db_check(sd, db_attempt_update(sd->db, a));
}

void
schedd_job_finish(struct schedd *sd, struct job *job)
{
    if (job->cur)
        job->cur->job = NULL;
    job->cur = NULL;
    job_table_remove(&sd->jobs, job);
    job_destroy(job);
    /* Its reservation (if any) is gone: others may use those nodes. */
    schedd_sched_trigger(sd);
}

struct job *
schedd_attempt_job(struct schedd *sd, const struct attempt *a)
{
    if (a->job)
        return a->job;
    return job_table_find(&sd->jobs, a->job_id);
}

/* A new generation for every node of attempt a: a withdrawn attempt is
 * torn down, a changed launch (dump_seq) is seen. (A withdrawn attempt's
 * master port stays taken until the attempt is dropped: rank 0 may still
 * listen on it while it is being killed.) */
void
schedd_attempt_wake_nodes(struct schedd *sd, struct attempt *a)
{
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
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
    return schedd_attempt_save(sd, a);
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

/* The job_placed event: where, and for a restart what it resumes from and
 * which nodes it kept. */
static cJSON *
placed_detail(const struct job *job, const struct attempt *a,
    struct node **nodes)
{
    cJSON *detail = cJSON_CreateObject();
    cJSON *names = cJSON_AddArrayToObject(detail, "nodes");

    jsonx_add_int(detail, "attempt", a->num);
    for (int k = 0; k < a->nnodes; k++)
        cJSON_AddItemToArray(names, cJSON_CreateString(nodes[k]->name));
    jsonx_add_str(detail, "master_addr", a->master_addr);
    jsonx_add_int(detail, "master_port", a->master_port);
    if (a->resume_step >= 0) {
        jsonx_add_int(detail, "resume_step", a->resume_step);
        jsonx_add_str(detail, "resume_from", a->resume_from);
    }
    if (job->nreserved > 0) {
        cJSON *kept = cJSON_AddArrayToObject(detail, "kept");

        for (int k = 0; k < a->nnodes; k++) {
            for (size_t i = 0; i < job->nreserved; i++) {
                if (strcmp(job->reserved[i], nodes[k]->name) == 0) {
                    cJSON_AddItemToArray(kept,
                        cJSON_CreateString(nodes[k]->name));
                    break;
                }
            }
        }
    }
    return detail;
}

int
schedd_place(struct schedd *sd, struct job *job, struct node **nodes,
    const int *gpus, int port)
{
    const struct proto_job_spec *s = &job->spec;
    struct attempt *a;
    char subject[32];
    cJSON *detail;
    int rc;

    if (!job_transition_ok(job->state, JOB_STATE_PLACED))
        return -EINVAL;
    a = attempt_create(job->id, job->attempt + 1, s->nodes,
        s->ranks_per_node);
    a->start_ms = timeid_now_ms();
    free(a->master_addr);
    a->master_addr = xstrdup(nodes[0]->addr);
    a->master_port = port;
    /* Resume from the highest complete checkpoint; never from one that
     * not every rank committed (those are not in the registry). */
    if (job->ckpt_step >= 0) {
        char *path = schedd_ckpt_path(job, job->ckpt_step);

        attempt_set_resume(a, job->ckpt_step, path);
        free(path);
    }
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
    detail = placed_detail(job, a, nodes);
    job->state = JOB_STATE_PLACED;
    job->attempt = a->num;
    job->not_before_ms = 0;
    job_set_reserved(job, NULL, 0);
    free(job->restart_reason);
    job->restart_reason = NULL;
    job_set_reason(job, "");
    if (rc == 0)
        rc = schedd_job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
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
    log_info("job=%lld attempt=%d placed on %d node(s) master=%s:%d%s",
        (long long)job->id, a->num, s->nodes, a->master_addr, port,
        a->resume_step >= 0 ? " (resuming)" : "");
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

    a->dump_deadline_ms = 0;
    if (a->failure && !a->has_failure)
        attempt_set_failure(a, POLICY_KIND_HANG, NULL);
    if (a->running_ms == 0)
        a->running_ms = a->start_ms;
    rc = attempt_set_state(sd, a, ATTEMPT_STATE_SUCCEEDED, "");
    if (rc < 0)
        return rc;
    schedd_attempt_wake_nodes(sd, a);
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
    rc = schedd_job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject, "job_succeeded",
            detail);
    else
        cJSON_Delete(detail);
    log_info("job=%lld attempt=%d succeeded", (long long)job->id, a->num);
    schedd_job_finish(sd, job);
    return rc;
}

static int
attempt_running(struct schedd *sd, struct attempt *a)
{
    struct job *job = a->job;
    char subject[32];
    cJSON *detail;
    int rc;

    a->running_ms = timeid_now_ms();
    rc = attempt_set_state(sd, a, ATTEMPT_STATE_RUNNING, NULL);
    if (rc < 0 || job == NULL)
        return rc;
    if (job_transition(job, JOB_STATE_RUNNING) < 0)
        return 0;
    if (job->start_ms == 0)
        job->start_ms = a->running_ms;
    rc = schedd_job_save(sd, job);
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

/*
 * The evidence a failed rank gives. A rank its supervisor fenced (the
 * lease ran out) says its node was cut off from the scheduler: that is a
 * lost node, not the job's doing - unless the lease ran out because this
 * scheduler itself was down (it expired before we were back for a whole
 * lease), which blames no node. A rank the agent reports lost is a lost
 * rank.
 */
static int
attempt_rank_failed(struct schedd *sd, struct attempt *a,
    const struct attempt_rank *r)
{
    const struct placement *p = &a->placements[r->node_rank];
    struct schedd_failure f;
    char reason[200];

    attempt_rank_failure_str(a, r, reason, sizeof(reason));
    if (r->state == PROTO_RANK_LOST) {
        schedd_failure_init(&f, POLICY_KIND_LOST_RANKS);
        f.blame = true;
    } else if (r->fenced) {
        schedd_failure_init(&f, POLICY_KIND_NODE_LOST);
        f.fenced = true;
        f.blame = r->end_ms <= 0 ||
                  r->end_ms > sd->started_ms + sd->lease_ms;
        snprintf(reason + strlen(reason), sizeof(reason) - strlen(reason),
            " (fenced: node %s was cut off from the scheduler)",
            p->node_name);
    } else {
        schedd_failure_init(&f, POLICY_KIND_RANK_EXIT);
        f.blame = true;
        f.node_suspect = p->node && (p->node->lost || p->node->unhealthy);
    }
    f.node = p->node_name;
    f.rank = r->rank;
    f.has_exit = r->has_exit;
    f.exit_code = r->exit_code;
    f.signal = r->signal;
    f.stderr_tail = r->stderr_tail;
    f.last_step = r->step;
    f.failed_ms = r->end_ms;
    f.reason = reason;
    if (p->node)
        f.last_heartbeat_ms = p->node->last_seen_ms;
    return schedd_attempt_failed(sd, a, &f);
}

/*
 * Whether another node of attempt a (not the one of rank r) has gone
 * silent: its agent's connection closed, or no status for two heartbeats.
 *
 * When a node is cut off, its supervisors' lease runs out and they kill
 * its ranks; the ranks on the healthy nodes then fail in the next
 * collective, and their agents report that at once - well before the
 * silent node can be declared lost. Deciding then would blame a healthy
 * node and charge the job's own budget. So a rank exit waits while a peer
 * node is silent: either it reports again (and the exit is decided with
 * its evidence) or the node-loss timer fails the attempt as node_lost,
 * which it is. Detection then takes what node loss takes anyway.
 */
bool
schedd_node_silent(const struct schedd *sd, const struct node *node,
    int64_t mono)
{
    return !node->lost &&
           (node->agent_gone ||
               mono - node->last_seen_mono > 2 * (int64_t)sd->heartbeat_ms);
}

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

    if (!attempt_state_active(a->state))
        return 0;
    if (a->dump_deadline_ms > 0) {
        /* A hang is being documented: ranks dying now (SIGUSR1 without
         * a handler, the stopped rank) are part of it, not new evidence.
         * Only a clean finish overrules the watchdog. */
        if (attempt_all_succeeded(a))
            return attempt_succeed(sd, a);
        return 0;
    }
    bad = attempt_first_failure(a);
    if (bad && bad->state == PROTO_RANK_EXITED && !bad->fenced &&
        (silent = attempt_silent_peer(sd, a, bad)) != NULL) {
        log_debug("job=%lld attempt=%d rank=%d failed while node=%s is "
            "silent; waiting for it before deciding", (long long)a->job_id,
            a->num, bad->rank, silent->name);
        return 0;
    }
    if (bad)
        return attempt_rank_failed(sd, a, bad);
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

/* Apply one rank's status; *dirty when its row must be written. */
static void
rank_apply(struct attempt_rank *rk, const struct proto_rank_status *in,
    int64_t mono, bool *dirty)
{
    bool exited;

    /* Progress, for the watchdog (in memory: it changes every report). */
    rk->idle_ms = in->idle_ms;
    rk->progress = in->progress;
    rk->seen_mono = mono;
    if (in->step >= 0)
        rk->step = in->step;
    if (in->dump && strcmp(in->dump, rk->dump) != 0) {
        free(rk->dump);
        rk->dump = xstrdup(in->dump);
        *dirty = true;
    }
    /* The first final state is the evidence; later reports of a final
     * rank change nothing. A pending report never moves a rank
     * backwards. */
    if (rank_final(rk->state) || in->state == PROTO_RANK_PENDING)
        return;
    exited = in->state == PROTO_RANK_EXITED;
    if (rk->state == in->state && rk->pid == in->pid && !exited)
        return;
    rk->state = in->state;
    rk->pid = in->pid;
    rk->start_ms = in->start_ms;
    rk->end_ms = in->end_ms;
    rk->has_exit = exited;
    rk->exit_code = exited ? in->exit_code : 0;
    rk->signal = exited ? in->signal : 0;
    rk->fenced = in->fenced;
    if (in->state == PROTO_RANK_LOST && rk->end_ms == 0)
        rk->end_ms = timeid_now_ms();
    free(rk->stderr_tail);
    rk->stderr_tail = xstrdup(in->stderr_tail ? in->stderr_tail : "");
    *dirty = true;
}

int
schedd_attempt_report(struct schedd *sd, struct placement *p,
    const struct proto_job_status *st)
{
    struct attempt *a = p->attempt;
    struct job *job = schedd_attempt_job(sd, a);
    /* Checkpoints count for the job's latest attempt only (fencing). A
     * failed latest attempt still tearing down may finish committing a
     * checkpoint: its data is as good as when it was running. */
    bool latest = job && job->attempt == a->num;
    int64_t mono = timeid_mono_ms();
    int rc;

    for (size_t i = 0; i < st->nranks; i++) {
        const struct proto_rank_status *in = &st->ranks[i];
        struct attempt_rank *rk;
        bool dirty = false;

        if (in->rank < 0 || (size_t)in->rank >= a->nranks)
            continue;
        rk = &a->ranks[in->rank];
        rank_apply(rk, in, mono, &dirty);
        if (dirty && (rc = db_check(sd, db_rank_update(sd->db, a, rk))) < 0)
            return rc;
        for (size_t c = 0; latest && c < in->nckpt_steps; c++) {
            int64_t step = in->ckpt_steps[c];

            if (step <= rk->ckpt_max || step <= job->ckpt_step)
                continue;
            rc = schedd_ckpt_commit(sd, job, a, rk->rank, step, "sdk", NULL);
            if (rc < 0)
                return rc;
            if (step > rk->ckpt_max)
                rk->ckpt_max = step;
        }
    }
    if (latest && p->node_rank == 0 && st->ncheckpoints > 0 &&
        (rc = schedd_ckpt_scan(sd, job, a, st->checkpoints,
             st->ncheckpoints)) < 0)
        return rc;
    p->dump_acked = st->dump_seq;
    if (attempt_state_active(a->state) && a->dump_deadline_ms > 0 &&
        (rc = schedd_watchdog_dumps(sd, a)) < 0)
        return rc;
    return attempt_decide(sd, a);
}

int
schedd_placement_lost(struct schedd *sd, struct placement *p,
    enum policy_kind kind, const char *why)
{
    struct attempt *a = p->attempt;
    const struct attempt_rank *first = NULL;
    struct schedd_failure f;
    char reason[200];
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
    if (!attempt_state_active(a->state))
        return 0;
    if (first == NULL)
        first = &a->ranks[p->node_rank * rpn];
    attempt_rank_failure_str(a, first, reason, sizeof(reason));
    if (why && *why) {
        size_t n = strlen(reason);

        snprintf(reason + n, sizeof(reason) - n, " (%s)", why);
    }
    schedd_failure_init(&f, kind);
    f.node = p->node_name;
    f.rank = first->rank;
    f.last_step = first->step;
    f.blame = true;
    f.reason = reason;
    if (p->node)
        f.last_heartbeat_ms = p->node->last_seen_ms;
    /* A lost node failed when it was last heard from; lost ranks when
     * the agent came back without them. */
    f.failed_ms = kind == POLICY_KIND_NODE_LOST ? f.last_heartbeat_ms : 0;
    return schedd_attempt_failed(sd, a, &f);
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
    if (rc == 0 && attempt_fully_released(a) && a->released_ms == 0) {
        a->released_ms = timeid_now_ms();
        rc = schedd_attempt_save(sd, a);
        log_info("job=%lld attempt=%d released by every node",
            (long long)a->job_id, a->num);
    }
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
        a->dump_deadline_ms = 0;
        if (a->failure && !a->has_failure)
            attempt_set_failure(a, POLICY_KIND_HANG, NULL);
        rc = attempt_set_state(sd, a, ATTEMPT_STATE_CANCELLED, reason);
        if (rc < 0) {
            free(reason);
            return rc;
        }
        schedd_attempt_wake_nodes(sd, a);
        a->job = NULL;
        job->cur = NULL;
    }
    job->state = JOB_STATE_CANCELLED;
    job->end_ms = timeid_now_ms();
    job->not_before_ms = 0;
    job_set_reserved(job, NULL, 0);
    job_set_reason(job, reason);
    free(reason);
    rc = schedd_job_save(sd, job);
    subject_job(subject, sizeof(subject), job->id);
    detail = cJSON_CreateObject();
    if (a)
        jsonx_add_int(detail, "attempt", a->num);
    if (rc == 0)
        rc = schedd_event(sd, actor, subject, "job_cancelled", detail);
    else
        cJSON_Delete(detail);
    log_info("job=%lld cancelled by %s", (long long)job->id, actor);
    schedd_job_finish(sd, job);
    if (a)
        attempt_maybe_drop(sd, a);
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
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];

        if (attempt_state_active(p->attempt->state))
            rc = schedd_placement_lost(sd, p, POLICY_KIND_NODE_LOST,
                "node lost");
    }
    /*
     * Release everything the node held. Its agent cannot say so, but it
     * need not: every supervisor there renews its lease only through a
     * status exchange, and lease_ms < node_timeout_ms (main.c refuses
     * anything else), so by now each one has SIGKILLed its ranks. The
     * next attempt of those jobs may therefore start at once, and still
     * never overlaps the ranks it replaces.
     */
    while (rc == 0 && node->nholds > 0)
        rc = schedd_placement_release(sd, node->holds[0]);
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
