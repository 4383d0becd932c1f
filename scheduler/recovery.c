/*
 * recovery.c - a failed attempt: evidence, blame, exclusion, what next
 *
 * docs/fault-tolerance.md §Recovery. Every failure, whatever found it (a
 * rank report, the node-loss timer, a reconcile, the hang watchdog, an
 * exclusion), ends up in schedd_attempt_failed(), which in one
 * transaction:
 *
 *  1. ends the attempt (FAILED, failed_ms from the evidence, detected_ms
 *     now, the evidence as JSON) and takes it out of every node's desired
 *     state, so the agents tear every rank down;
 *  2. looks for a crash loop in the job's earlier failures (policy.c);
 *  3. blames the node the evidence points to (a blame row and a node
 *     event; withdrawn at once when the failure is the job's own
 *     deterministic bug), and excludes that node when it has now been
 *     blamed by enough different jobs;
 *  4. decides (policy.c): FAILED for a crash loop or a spent budget, else
 *     RESTARTING with a backoff, keeping the attempt's healthy nodes
 *     reserved for the next attempt (restart in place: the job does not
 *     go back through the queue);
 *  5. records one job_failure event with the evidence, then the decision
 *     (job_restarting or job_failed).
 *
 * The next attempt is placed by the scheduling pass (schedd.c) once the
 * backoff has passed and this attempt is released everywhere.
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
#include "scheduler/db.h"

#define ACTOR_SCHEDULER "scheduler"
/* A rank of an earlier attempt that ended later than this after that
 * attempt's failure was detected was most likely killed by the teardown
 * (SIGKILL after the grace), not by the failure itself: it is no evidence
 * for a crash loop. */
#define RECOVERY_OWN_EXIT_SLACK_MS 1000
/* Failures listed in an exclusion reason (the event has them all). */
#define RECOVERY_REASON_FAILURES 6

void
schedd_failure_init(struct schedd_failure *f, enum policy_kind kind)
{
    memset(f, 0, sizeof(*f));
    f->kind = kind;
    f->rank = -1;
    f->last_step = -1;
}

static int
db_check(struct schedd *sd, int rc)
{
    return rc < 0 ? schedd_db_error(sd, rc) : 0;
}

/* The evidence as the API shows it (docs/api.md): fields that do not
 * apply are left out. */
static cJSON *
failure_json(const struct schedd_failure *f)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "kind", policy_kind_str(f->kind));
    if (f->node)
        jsonx_add_str(o, "node", f->node);
    if (f->rank >= 0)
        jsonx_add_int(o, "rank", f->rank);
    if (f->has_exit) {
        jsonx_add_int(o, "exit_code", f->exit_code);
        jsonx_add_int(o, "signal", f->signal);
    }
    if (f->fenced)
        cJSON_AddBoolToObject(o, "fenced", true);
    if (f->last_step >= 0)
        jsonx_add_int(o, "last_step", f->last_step);
    if (f->last_heartbeat_ms > 0)
        jsonx_add_int(o, "last_heartbeat_ms", f->last_heartbeat_ms);
    if (f->kind == POLICY_KIND_HANG)
        jsonx_add_int(o, "idle_ms", f->idle_ms);
    if (f->source)
        jsonx_add_str(o, "source", f->source);
    if (f->actor)
        jsonx_add_str(o, "actor", f->actor);
    if (f->stderr_tail && *f->stderr_tail)
        jsonx_add_str(o, "stderr_tail", f->stderr_tail);
    return o;
}

static int64_t
rel_step(int64_t step, int64_t resume_step)
{
    if (step < 0)
        return -1;
    return step - (resume_step > 0 ? resume_step : 0);
}

static int64_t
json_int(const cJSON *o, const char *key, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

/*
 * Whether failure `now` of attempt a is a crash loop, from the job's
 * earlier failures in the database. matched (room for a->num ints, caller
 * frees) lists the attempts that repeated it; *nmatched their count.
 */
static int
crash_loop_find(struct schedd *sd, const struct attempt *a,
    const struct policy_sig *now, bool *loop, int **matched,
    size_t *nmatched)
{
    struct db_failure_row *rows = NULL;
    struct policy_past *past = NULL;
    const char **nodes = NULL;
    bool *hit = NULL;
    size_t nrows = 0, npast = 0;
    int rc;

    *loop = false;
    *matched = NULL;
    *nmatched = 0;
    if (now->rank < 0 || (now->kind != POLICY_KIND_RANK_EXIT &&
                             now->kind != POLICY_KIND_HANG))
        return 0;
    rc = db_job_failures(sd->db, a->job_id, now->rank, &rows, &nrows);
    if (rc < 0)
        return schedd_db_error(sd, rc);
    past = xcalloc(nrows + 1, sizeof(*past));
    for (size_t i = 0; i < nrows; i++) {
        const struct db_failure_row *r = &rows[i];
        struct policy_past *p;
        cJSON *ev;

        if (r->attempt == a->num)
            continue;
        p = &past[npast++];
        p->attempt = r->attempt;
        p->failure.kind = r->kind;
        ev = cJSON_Parse(r->failure ? r->failure : "{}");
        p->failure.rank = (int)json_int(ev, "rank", -1);
        p->failure.has_exit =
            cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(ev,
                "exit_code"));
        p->failure.exit_code = (int)json_int(ev, "exit_code", 0);
        p->failure.signal = (int)json_int(ev, "signal", 0);
        p->failure.rel_step = rel_step(json_int(ev, "last_step", -1),
            r->resume_step);
        cJSON_Delete(ev);
        p->rank_known = r->rank_known && r->rank_state == PROTO_RANK_EXITED &&
                        r->rank_has_exit &&
                        (r->detected_ms <= 0 ||
                            r->rank_end_ms <= r->detected_ms +
                                                  RECOVERY_OWN_EXIT_SLACK_MS);
        p->rank_end.rank = now->rank;
        p->rank_end.has_exit = r->rank_has_exit;
        p->rank_end.exit_code = r->rank_exit_code;
        p->rank_end.signal = r->rank_signal;
        p->rank_end.rel_step = rel_step(r->rank_step, r->resume_step);
        p->nodes = (const char *const *)r->nodes;
        p->nnodes = r->nnodes;
    }
    nodes = xcalloc((size_t)a->nnodes + 1, sizeof(*nodes));
    for (int k = 0; k < a->nnodes; k++)
        nodes[k] = a->placements[k].node_name;
    hit = xcalloc(npast + 1, sizeof(*hit));
    *loop = policy_crash_loop(now, nodes, (size_t)a->nnodes, past, npast,
        sd->policy.crash_loop_threshold, hit);
    *matched = xcalloc(npast + 1, sizeof(**matched));
    for (size_t i = 0; i < npast; i++) {
        if (hit[i])
            (*matched)[(*nmatched)++] = past[i].attempt;
    }
    free(hit);
    free(nodes);
    free(past);
    db_failure_rows_free(rows, nrows);
    return 0;
}

/* ---- blame and exclusion ------------------------------------------------ */

struct blame_ctx {
    struct policy_blame *v;
    size_t n;
    cJSON *evidence;            /* array of the failures */
    char list[512];             /* "job 4 attempt 1 (rank_exit), ..." */
    size_t listed;
};

static int
blame_collect(const struct db_blame *b, void *arg)
{
    struct blame_ctx *ctx = arg;
    cJSON *o = cJSON_CreateObject();
    cJSON *ev = cJSON_Parse(b->evidence);
    size_t off = strlen(ctx->list);

    ctx->v = xreallocarray(ctx->v, ctx->n + 1, sizeof(*ctx->v));
    ctx->v[ctx->n].job_id = b->job_id;
    ctx->v[ctx->n].time_ms = b->time_ms;
    ctx->n++;
    jsonx_add_int(o, "job", b->job_id);
    jsonx_add_int(o, "attempt", b->attempt);
    jsonx_add_int(o, "time_ms", b->time_ms);
    jsonx_add_str(o, "kind", b->kind);
    if (ev)
        cJSON_AddItemToObject(o, "evidence", ev);
    cJSON_AddItemToArray(ctx->evidence, o);
    if (ctx->listed < RECOVERY_REASON_FAILURES && off < sizeof(ctx->list)) {
        snprintf(ctx->list + off, sizeof(ctx->list) - off,
            "%sjob %lld attempt %d (%s)", ctx->listed ? ", " : "",
            (long long)b->job_id, b->attempt, b->kind);
        ctx->listed++;
    }
    return 0;
}

/* Exclude node when the failures blamed on it within the window come from
 * enough different jobs. */
static int
blame_check(struct schedd *sd, struct node *node, int64_t now)
{
    struct blame_ctx ctx;
    char reason[768];
    size_t jobs;
    int rc;

    if (node->unhealthy)
        return 0;
    memset(&ctx, 0, sizeof(ctx));
    ctx.evidence = cJSON_CreateArray();
    rc = db_blame_node_foreach(sd->db, node->name,
        now - sd->policy.blame_window_ms, blame_collect, &ctx);
    if (rc < 0) {
        free(ctx.v);
        cJSON_Delete(ctx.evidence);
        return schedd_db_error(sd, rc);
    }
    if (!policy_blame_exceeds(&sd->policy, ctx.v, ctx.n, now)) {
        free(ctx.v);
        cJSON_Delete(ctx.evidence);
        return 0;
    }
    jobs = policy_blame_jobs(ctx.v, ctx.n, now, sd->policy.blame_window_ms);
    snprintf(reason, sizeof(reason), "blamed for failures of %zu different "
        "jobs within %lld s: %s%s", jobs,
        (long long)(sd->policy.blame_window_ms / 1000), ctx.list,
        ctx.n > ctx.listed ? ", ..." : "");
    free(ctx.v);
    return schedd_node_exclude(sd, node, ACTOR_SCHEDULER, SCHEDD_EXCLUDE_BLAME,
        reason, ctx.evidence);
}

/* Record the blame of failure f (of attempt a) on its node. */
static int
blame_record(struct schedd *sd, const struct attempt *a,
    const struct schedd_failure *f, const cJSON *evidence, bool withdrawn,
    int64_t now)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    char *text = jsonx_print(evidence);
    cJSON *detail;
    int rc;

    rc = db_check(sd, db_blame_insert(sd->db, f->node, a->job_id, a->num,
        now, policy_kind_str(f->kind), text, withdrawn));
    free(text);
    if (rc < 0)
        return rc;
    snprintf(subject, sizeof(subject), "node/%s", f->node);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "job", a->job_id);
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_str(detail, "kind", policy_kind_str(f->kind));
    jsonx_add_str(detail, "reason", a->reason);
    if (withdrawn)
        cJSON_AddBoolToObject(detail, "withdrawn", true);
    cJSON_AddItemToObject(detail, "evidence",
        cJSON_Duplicate(evidence, true));
    return schedd_event(sd, ACTOR_SCHEDULER, subject, "node_blamed", detail);
}

int
schedd_node_exclude(struct schedd *sd, struct node *node, const char *actor,
    enum schedd_exclude how, const char *reason, cJSON *evidence)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    char why[400];
    int rc = 0;

    snprintf(subject, sizeof(subject), "node/%s", node->name);
    if (how == SCHEDD_EXCLUDE_BLAME) {
        enum node_state old = node->state;
        cJSON *detail;

        if (node->unhealthy) {
            cJSON_Delete(evidence);
            return 0;
        }
        /* Never reversed automatically: only an operator's uncordon
         * clears it (api_nodes.c). */
        node->unhealthy = true;
        free(node->health_reason);
        node->health_reason = xstrdup(reason);
        node->state = node_state_compute(node);
        rc = db_check(sd, db_node_update(sd->db, node));
        detail = cJSON_CreateObject();
        jsonx_add_str(detail, "from", node_state_str(old));
        jsonx_add_str(detail, "to", node_state_str(node->state));
        jsonx_add_str(detail, "reason", reason);
        if (evidence)
            cJSON_AddItemToObject(detail, "failures", evidence);
        if (rc == 0)
            rc = schedd_event(sd, actor, subject, "node_excluded", detail);
        else
            cJSON_Delete(detail);
        log_notice("node=%s excluded: %s", node->name, reason);
        schedd_sched_trigger(sd);
        snprintf(why, sizeof(why), "node %s excluded: %s", node->name,
            reason);
    } else {
        cJSON_Delete(evidence);
        snprintf(why, sizeof(why), "node %s evicted by %s%s%s", node->name,
            actor, reason && *reason ? ": " : "", reason ? reason : "");
    }
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];
        struct attempt *a = p->attempt;
        const struct attempt_rank *first;
        struct schedd_failure f;

        if (!attempt_state_active(a->state))
            continue;
        first = &a->ranks[(size_t)p->node_rank * (size_t)a->ranks_per_node];
        schedd_failure_init(&f, POLICY_KIND_NODE_EXCLUDED);
        f.node = node->name;
        f.rank = first->rank;
        f.last_step = first->step;
        f.actor = actor;
        f.last_heartbeat_ms = node->last_seen_ms;
        /* An operator's eviction is maintenance, not the node's fault. */
        f.blame = how == SCHEDD_EXCLUDE_BLAME;
        f.reason = why;
        rc = schedd_attempt_failed(sd, a, &f);
    }
    return rc;
}

/* ---- the decision ------------------------------------------------------- */

static const char *
budget_words(enum policy_budget b)
{
    return b == POLICY_BUDGET_JOB ? "the job's own failures"
                                  : "infrastructure failures";
}

/* Keep the failed attempt's healthy nodes for the next one. */
static void
reserve_nodes(struct schedd *sd, struct job *job, const struct attempt *a,
    const char *blamed)
{
    const char **names = xcalloc((size_t)a->nnodes + 1, sizeof(*names));
    bool *usable = xcalloc((size_t)a->nnodes + 1, sizeof(*usable));
    bool *keep = xcalloc((size_t)a->nnodes + 1, sizeof(*keep));
    const char **kept = xcalloc((size_t)a->nnodes + 1, sizeof(*kept));
    size_t n = 0;

    (void)sd;
    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];

        names[k] = p->node_name;
        usable[k] = p->node && p->node->state == NODE_STATE_UP;
    }
    policy_keep_nodes(names, usable, (size_t)a->nnodes, blamed, keep);
    for (int k = 0; k < a->nnodes; k++) {
        if (keep[k])
            kept[n++] = names[k];
    }
    job_set_reserved(job, kept, n);
    free(kept);
    free(keep);
    free(usable);
    free(names);
}

int
schedd_attempt_failed(struct schedd *sd, struct attempt *a,
    struct schedd_failure *f)
{
    struct job *job = a->job;
    struct policy_decision d;
    struct policy_sig sig;
    struct policy_budgets budgets;
    enum policy_budget budget;
    int64_t now = timeid_now_ms();
    int *matched = NULL;
    size_t nmatched = 0;
    bool loop = false, blamed;
    char subject[32], sigbuf[160], text[1024];
    char reason[256];
    cJSON *ev = NULL, *detail;
    char *evtext;
    int rc;

    if (!attempt_state_active(a->state)) {
        cJSON_Delete(f->dumps);
        return 0;
    }
    if (a->dump_deadline_ms > 0 && f->kind != POLICY_KIND_HANG) {
        /* The hang was seen first: what happens to the attempt while its
         * dumps are collected is a consequence. */
        cJSON_Delete(f->dumps);
        return schedd_watchdog_finish(sd, a);
    }
    if (f->reason)
        snprintf(reason, sizeof(reason), "%s", f->reason);
    else
        snprintf(reason, sizeof(reason), "%s on node %s",
            policy_kind_str(f->kind), f->node ? f->node : "?");

    /* 1. End the attempt. */
    sig.kind = f->kind;
    sig.rank = f->rank;
    sig.rel_step = rel_step(f->last_step, a->resume_step);
    sig.has_exit = f->has_exit;
    sig.exit_code = f->exit_code;
    sig.signal = f->signal;
    if (job && (rc = crash_loop_find(sd, a, &sig, &loop, &matched,
                    &nmatched)) < 0) {
        cJSON_Delete(f->dumps);
        return rc;
    }
    blamed = f->blame && f->node != NULL;
    ev = failure_json(f);
    if (blamed)
        jsonx_add_str(ev, loop ? "blame_withdrawn" : "blamed", f->node);
    if (f->dumps) {
        cJSON_AddItemToObject(ev, "dumps", f->dumps);
        f->dumps = NULL;
    }
    a->state = ATTEMPT_STATE_FAILED;
    a->end_ms = now;
    attempt_set_reason(a, reason);
    a->detected_ms = now;
    a->failed_ms = f->failed_ms > 0 && f->failed_ms <= now ? f->failed_ms
                                                            : now;
    if (a->failed_ms < a->start_ms)
        a->failed_ms = a->start_ms;
    a->dump_deadline_ms = 0;
    evtext = jsonx_print(ev);
    attempt_set_failure(a, f->kind, evtext);
    free(evtext);
    rc = schedd_attempt_save(sd, a);
    schedd_attempt_wake_nodes(sd, a);
    a->job = NULL;
    if (job == NULL || rc < 0) {
        cJSON_Delete(ev);
        free(matched);
        return rc;
    }
    job->cur = NULL;
    /* The job's failed_rank / exit_code / signal describe a rank that
     * failed; an eviction or exclusion is nothing the rank did. */
    if (f->rank >= 0 && f->kind != POLICY_KIND_NODE_EXCLUDED)
        job_set_failure(job, f->rank, f->has_exit, f->exit_code, f->signal,
            f->stderr_tail);

    /* 2-4. Decide. */
    budget = policy_classify(f->kind, f->node_suspect);
    budgets.restarts = job->restarts;
    budgets.max_restarts = job->spec.max_restarts;
    budgets.infra_restarts = job->infra_restarts;
    budgets.max_infra_restarts = job->spec.max_infra_restarts;
    policy_decide(&sd->policy, budget, loop, &budgets,
        policy_streak(&sd->policy, job->fail_streak,
            a->running_ms > 0 ? a->failed_ms - a->running_ms : 0,
            job->ckpt_step > a->resume_step),
        &d);
    if (blamed) {
        /* The blame keeps the evidence without the (large) dumps. */
        cJSON *bev = cJSON_Duplicate(ev, true);

        cJSON_DeleteItemFromObjectCaseSensitive(bev, "dumps");
        cJSON_DeleteItemFromObjectCaseSensitive(bev, "blame_withdrawn");
        rc = blame_record(sd, a, f, bev, loop, now);
        cJSON_Delete(bev);
    }
    for (size_t i = 0; i < nmatched && rc == 0; i++)
        rc = db_check(sd, db_blame_withdraw(sd->db, a->job_id, matched[i]));

    policy_sig_str(&sig, sigbuf, sizeof(sigbuf));
    switch (d.action) {
    case POLICY_FAIL_DETERMINISTIC: {
        size_t off = (size_t)snprintf(text, sizeof(text),
            "deterministic failure: %s, on attempts", sigbuf);

        for (size_t i = 0; i < nmatched && off < sizeof(text); i++)
            off += (size_t)snprintf(text + off, sizeof(text) - off, " %d,",
                matched[i]);
        if (off < sizeof(text))
            snprintf(text + off, sizeof(text) - off, " %d on different "
                "nodes: the job's own bug, not restarted (the nodes are not "
                "blamed)", a->num);
        break;
    }
    case POLICY_FAIL_BUDGET:
        snprintf(text, sizeof(text), "%s; no restart left for %s "
            "(%d of %d used)", reason, budget_words(budget),
            budget == POLICY_BUDGET_JOB ? job->restarts
                                        : job->infra_restarts,
            budget == POLICY_BUDGET_JOB ? job->spec.max_restarts
                                        : job->spec.max_infra_restarts);
        break;
    case POLICY_RESTART:
        if (budget == POLICY_BUDGET_JOB)
            job->restarts++;
        else
            job->infra_restarts++;
        job->fail_streak = d.streak;
        job->not_before_ms = now + d.backoff_ms;
        reserve_nodes(sd, job, a, blamed ? f->node : NULL);
        snprintf(text, sizeof(text), "attempt %d failed: %s; restarting "
            "(restart %d of %d for %s", a->num, reason,
            budget == POLICY_BUDGET_JOB ? job->restarts
                                        : job->infra_restarts,
            budget == POLICY_BUDGET_JOB ? job->spec.max_restarts
                                        : job->spec.max_infra_restarts,
            budget_words(budget));
        if (d.backoff_ms > 0)
            snprintf(text + strlen(text), sizeof(text) - strlen(text),
                ", after %lld ms of backoff)", (long long)d.backoff_ms);
        else
            snprintf(text + strlen(text), sizeof(text) - strlen(text), ")");
        break;
    }
    if (d.action == POLICY_RESTART) {
        if (job_transition(job, JOB_STATE_RESTARTING) < 0) {
            cJSON_Delete(ev);
            free(matched);
            return -EINVAL;
        }
        free(job->restart_reason);
        job->restart_reason = xstrdup(text);
    } else {
        if (job_transition(job, JOB_STATE_FAILED) < 0) {
            cJSON_Delete(ev);
            free(matched);
            return -EINVAL;
        }
        job->end_ms = now;
        job_set_reserved(job, NULL, 0);
        job->not_before_ms = 0;
    }
    job_set_reason(job, text);
    if (rc == 0)
        rc = schedd_job_save(sd, job);

    /* 5. The failure (one event with the evidence), then the decision. */
    snprintf(subject, sizeof(subject), "job/%lld", (long long)job->id);
    jsonx_add_int(ev, "attempt", a->num);
    jsonx_add_int(ev, "failed_ms", a->failed_ms);
    jsonx_add_str(ev, "budget", budget == POLICY_BUDGET_JOB ? "job"
                                                            : "infra");
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject, "job_failure", ev);
    else
        cJSON_Delete(ev);
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_str(detail, "reason", text);
    if (d.action == POLICY_RESTART) {
        jsonx_add_int(detail, "backoff_ms", d.backoff_ms);
        jsonx_add_str_array(detail, "kept", job->reserved, job->nreserved);
    }
    if (d.action == POLICY_FAIL_DETERMINISTIC)
        cJSON_AddBoolToObject(detail, "deterministic", true);
    if (rc == 0)
        rc = schedd_event(sd, ACTOR_SCHEDULER, subject,
            d.action == POLICY_RESTART ? "job_restarting" : "job_failed",
            detail);
    else
        cJSON_Delete(detail);
    log_notice("job=%lld attempt=%d failed (%s: %s)%s", (long long)job->id,
        a->num, policy_kind_str(f->kind), reason,
        d.action == POLICY_RESTART ? "; restarting" : "");
    free(matched);

    /* A node blamed often enough is excluded, which fails whatever else
     * runs there. */
    if (rc == 0 && blamed && !loop) {
        struct node *node = node_table_find(&sd->nodes, f->node);

        if (node)
            rc = blame_check(sd, node, now);
    }
    if (d.action == POLICY_RESTART) {
        schedd_sched_trigger(sd);
        schedd_backoff_arm(sd);
    } else {
        schedd_job_finish(sd, job);
    }
    return rc;
}
