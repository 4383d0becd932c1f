/*
 * recovery.c - apply the decision on a failed attempt
 *
 * recovery.h lists the steps. The decisions themselves are pure
 * (failure.c classifies, policy.c decides); this file gathers what they
 * need from the model and the database, and applies what they say
 * through the event path (event.h). Work that a failure causes (an
 * exclusion, the failures of the attempts on an excluded node) goes into
 * a queue that the outermost call drains in order.
 */
#include "scheduler/recovery.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/alerts.h"
#include "scheduler/blame.h"
#include "scheduler/db.h"
#include "scheduler/event.h"

/* A rank of an earlier attempt that ended later than this after that
 * attempt's failure was detected was most likely killed by the teardown
 * (SIGKILL after the grace), not by the failure itself: it is no evidence
 * for a crash loop. */
#define RECOVERY_OWN_EXIT_SLACK_MS 1000
/* Stack dumps the job_failure event of a hang carries. */
#define RECOVERY_DUMPS_MAX 64

struct recovery_item {
    struct attempt *a; /* a failure, or NULL: an exclusion */
    struct failure_case fc;
    struct node *node; /* an exclusion */
    char *actor;
    enum recovery_exclude how;
    char *reason;
    cJSON *evidence;
    STAILQ_ENTRY(recovery_item) link;
};

struct recovery {
    struct schedd *sd;
    STAILQ_HEAD(, recovery_item) queue;
    bool running;
};

struct recovery *
recovery_create(struct schedd *sd)
{
    struct recovery *rc = xcalloc(1, sizeof(*rc));

    rc->sd = sd;
    STAILQ_INIT(&rc->queue);
    sd->recovery = rc;
    return rc;
}

static void
item_free(struct recovery_item *it)
{
    failure_case_release(&it->fc);
    free(it->actor);
    free(it->reason);
    cJSON_Delete(it->evidence);
    free(it);
}

/* The first item of the queue, taken off it; NULL when empty. */
static struct recovery_item *
recovery_pop(struct recovery *rc)
{
    struct recovery_item *it = STAILQ_FIRST(&rc->queue);

    if (it != NULL)
        STAILQ_REMOVE_HEAD(&rc->queue, link);
    return it;
}

void
recovery_destroy(struct recovery *rc)
{
    struct recovery_item *it;

    if (rc == NULL)
        return;
    while ((it = recovery_pop(rc)) != NULL)
        item_free(it);
    if (rc->sd->recovery == rc)
        rc->sd->recovery = NULL;
    free(rc);
}

/* ---- what the decision needs ------------------------------------------- */

static int64_t
rel_step(int64_t step, int64_t resume_step)
{
    if (step < 0)
        return -1;
    return step - (resume_step > 0 ? resume_step : 0);
}

/* An earlier failure of the job, as the crash-loop test wants it. */
static void
past_from_row(struct policy_past *p, const struct db_failure_row *r, int rank)
{
    const struct evidence *f = &r->failure;

    p->attempt = r->attempt;
    p->failure.kind = f->kind;
    p->failure.rank = f->rank;
    p->failure.has_exit = f->has_exit;
    p->failure.exit_code = f->exit_code;
    p->failure.signal = f->signal;
    p->failure.rel_step = rel_step(f->last_step, r->resume_step);
    p->rank_known = r->rank_known && r->rank_state == PROTO_RANK_EXITED &&
                    r->rank_has_exit &&
                    (r->detected_ms <= 0 ||
                        r->rank_end_ms <=
                            r->detected_ms + RECOVERY_OWN_EXIT_SLACK_MS);
    p->rank_end.rank = rank;
    p->rank_end.has_exit = r->rank_has_exit;
    p->rank_end.exit_code = r->rank_exit_code;
    p->rank_end.signal = r->rank_signal;
    p->rank_end.rel_step = rel_step(r->rank_step, r->resume_step);
    p->nodes = (const char *const *)r->nodes;
    p->nnodes = r->nnodes;
}

/*
 * Whether failure `sig` of attempt a is a crash loop, from the job's
 * earlier failures in the database. *matched (caller frees) lists the
 * attempts that repeated it.
 */
static int
crash_loop_find(struct schedd *sd, const struct attempt *a,
    const struct policy_sig *sig, bool *loop, int **matched, size_t *nmatched)
{
    struct db_failure_row *rows = NULL;
    struct policy_past *past;
    const char **nodes;
    bool *hit;
    size_t nrows = 0, npast = 0;
    int rc;

    *loop = false;
    *matched = NULL;
    *nmatched = 0;
    if (sig->rank < 0 ||
        (sig->kind != POLICY_KIND_RANK_EXIT && sig->kind != POLICY_KIND_HANG))
        return 0;
    rc = db_job_failures(sd->db, a->job_id, sig->rank, &rows, &nrows);
    if (rc < 0)
        return schedd_db_error(sd, rc);
    past = xcalloc(nrows + 1, sizeof(*past));
    for (size_t i = 0; i < nrows; i++) {
        if (rows[i].attempt != a->num)
            past_from_row(&past[npast++], &rows[i], sig->rank);
    }
    nodes = xcalloc((size_t)a->nnodes + 1, sizeof(*nodes));
    for (int k = 0; k < a->nnodes; k++)
        nodes[k] = a->placements[k].node_name;
    hit = xcalloc(npast + 1, sizeof(*hit));
    *loop = policy_crash_loop(sig, nodes, (size_t)a->nnodes, past, npast,
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

/* Keep the failed attempt's healthy nodes for the next one. */
static void
reserve_nodes(struct job *job, const struct attempt *a, const char *blamed)
{
    size_t n = (size_t)a->nnodes + 1, nkept = 0;
    const char **names = xcalloc(n, sizeof(*names));
    const char **kept = xcalloc(n, sizeof(*kept));
    bool *usable = xcalloc(n, sizeof(*usable));
    bool *keep = xcalloc(n, sizeof(*keep));

    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];

        names[k] = p->node_name;
        usable[k] = p->node && p->node->state == NODE_STATE_UP;
    }
    policy_keep_nodes(names, usable, (size_t)a->nnodes, blamed, keep);
    for (int k = 0; k < a->nnodes; k++) {
        if (keep[k])
            kept[nkept++] = names[k];
    }
    job_set_reserved(job, kept, nkept);
    free(keep);
    free(usable);
    free(kept);
    free(names);
}

/* ---- blame -------------------------------------------------------------- */

static void recovery_push(struct recovery *rc, struct recovery_item *it);
static void push_excluded(struct schedd *sd, struct placement *p,
    const char *actor, bool blame, const char *why);
static int recovery_run(struct schedd *sd);

/* Queue node's exclusion when the failures blamed on it (counted) within
 * the window come from enough different jobs. */
static int
blame_check(struct schedd *sd, struct node *node, int64_t now)
{
    struct recovery_item *it;
    cJSON *evidence;
    char *reason;
    int rc;

    if (node->unhealthy ||
        (rc = blame_exclusion(sd, node, now, &reason, &evidence)) <= 0)
        return node->unhealthy ? 0 : rc;
    it = xcalloc(1, sizeof(*it));
    it->node = node;
    it->actor = xstrdup(SCHEDD_ACTOR);
    it->how = RECOVERY_EXCLUDE_BLAME;
    it->reason = reason;
    it->evidence = evidence;
    recovery_push(sd->recovery, it);
    return 0;
}

/* Settle provisional blame (blame_settle) and check the nodes whose blame
 * it confirmed. */
static int
settle_check(struct schedd *sd, int64_t job_id, const struct attempt *a,
    bool ended, int64_t now)
{
    struct node **confirmed = NULL;
    size_t n = 0;
    int rc = blame_settle(sd, job_id, a, ended, now, &confirmed, &n);

    for (size_t i = 0; i < n && rc == 0; i++)
        rc = blame_check(sd, confirmed[i], now);
    free(confirmed);
    return rc;
}

/* ---- a failure ---------------------------------------------------------- */

/* End attempt a as FAILED with fc's evidence. */
static int
fail_attempt(struct schedd *sd, struct attempt *a,
    const struct failure_case *fc, int64_t now)
{
    attempt_set_failure(a, &fc->ev, true);
    a->detected_ms = now;
    a->failed_ms = fc->ev.failed_ms > 0 && fc->ev.failed_ms <= now
                       ? fc->ev.failed_ms
                       : now;
    if (a->failed_ms < a->start_ms)
        a->failed_ms = a->start_ms;
    a->dump_deadline_ms = 0;
    return event_attempt(sd, a, PROTO_ATTEMPT_FAILED, fc->reason);
}

/* The job_failure event: the evidence, with when and which budget. */
static int
failure_event(struct schedd *sd, const struct job *job, const struct attempt *a,
    const struct failure_case *fc, enum policy_budget budget)
{
    char subject[32];
    cJSON *ev = evidence_to_json(&fc->ev);

    if (fc->ev.kind == POLICY_KIND_HANG)
        cJSON_AddItemToObject(ev, "dumps",
            failure_dumps_json(a, fc->ev.rank, RECOVERY_DUMPS_MAX));
    jsonx_add_int(ev, "attempt", a->num);
    jsonx_add_int(ev, "failed_ms", a->failed_ms);
    jsonx_add_str(ev, "budget", budget == POLICY_BUDGET_JOB ? "job" : "infra");
    return schedd_event(sd, SCHEDD_ACTOR,
        schedd_subject_job(subject, sizeof(subject), job->id), "job_failure",
        ev);
}

/* Apply the plan to job: spend the budget and reserve its nodes on a
 * restart, then the job's state change with the decision as detail. */
static int
apply_plan(struct schedd *sd, struct job *job, const struct attempt *a,
    const struct policy_plan *plan, const char *blamed, int64_t now)
{
    struct event_job_change c = { .reason = plan->text };
    bool restart = plan->d.action == POLICY_RESTART;

    if (restart) {
        if (plan->d.budget == POLICY_BUDGET_JOB)
            job->restarts++;
        else
            job->infra_restarts++;
        job->fail_streak = plan->d.streak;
        job->not_before_ms = now + plan->d.backoff_ms;
        reserve_nodes(job, a, blamed);
    }
    c.detail = cJSON_CreateObject();
    jsonx_add_int(c.detail, "attempt", a->num);
    jsonx_add_str(c.detail, "reason", plan->text);
    if (restart) {
        jsonx_add_int(c.detail, "backoff_ms", plan->d.backoff_ms);
        jsonx_add_str_array(c.detail, "kept", job->reserved, job->nreserved);
    }
    if (plan->d.action == POLICY_FAIL_DETERMINISTIC)
        cJSON_AddBoolToObject(c.detail, "deterministic", true);
    if (plan->d.action == POLICY_FAIL_LAUNCH)
        cJSON_AddBoolToObject(c.detail, "launch_failed", true);
    return event_job(sd, job, restart ? PROTO_JOB_RESTARTING : PROTO_JOB_FAILED,
        &c);
}

/* The plan's input for failure fc of attempt a of job. */
static void
plan_input(const struct job *job, const struct attempt *a,
    const struct failure_case *fc, struct policy_plan_in *in)
{
    in->kind = fc->ev.kind;
    in->suspect = fc->suspect;
    in->attempt = a->num;
    in->reason = fc->reason;
    in->budgets.restarts = job->restarts;
    in->budgets.max_restarts = job->spec.max_restarts;
    in->budgets.infra_restarts = job->infra_restarts;
    in->budgets.max_infra_restarts = job->spec.max_infra_restarts;
    in->prev_streak = job->fail_streak;
    in->ran_ms = a->running_ms > 0 ? a->failed_ms - a->running_ms : 0;
    in->new_checkpoint = job->ckpt_step > a->resume_step;
}

/* Decide on the failure of a (of job) and apply it. */
static int
decide(struct schedd *sd, struct job *job, struct attempt *a,
    struct failure_case *fc, const struct policy_sig *sig, bool loop,
    const int *matched, size_t nmatched, int64_t now)
{
    struct policy_plan_in in = { .sig = sig,
        .crash_loop = loop,
        .matched = matched,
        .nmatched = nmatched };
    struct policy_plan plan;
    struct node *blamed = NULL;
    int rc = 0;

    /* The job's failed_rank / exit_code / signal describe a rank that
     * failed; an eviction or exclusion is nothing the rank did. */
    if (fc->ev.rank >= 0 && fc->ev.kind != POLICY_KIND_NODE_EXCLUDED)
        job_set_failure(job, fc->ev.rank, fc->ev.has_exit, fc->ev.exit_code,
            fc->ev.signal, fc->ev.stderr_tail);
    plan_input(job, a, fc, &in);
    policy_plan(&sd->policy, &in, &plan);
    if (fc->ev.blame != EVIDENCE_BLAME_NONE)
        rc = blame_record(sd, a, fc, now);
    if (rc == 0 && nmatched > 0)
        rc = blame_withdraw_loop(sd, a, matched, nmatched, now);
    /* What this attempt did settles the job's earlier provisional blame
     * (after a crash loop withdrew what it repeated); a job that ends
     * withdraws what it did not confirm. */
    if (rc == 0)
        rc = settle_check(sd, job->id, a, plan.d.action != POLICY_RESTART, now);
    if (fc->ev.blame == EVIDENCE_BLAME_BLAMED &&
        fc->blame_status == POLICY_BLAME_CONFIRMED)
        blamed = node_table_find(&sd->nodes, fc->ev.node);
    if (rc == 0)
        rc = failure_event(sd, job, a, fc, plan.d.budget);
    log_notice("job=%lld attempt=%d failed (%s: %s)%s", (long long)job->id,
        a->num, policy_kind_str(fc->ev.kind), fc->reason,
        plan.d.action == POLICY_RESTART ? "; restarting" : "");
    if (rc == 0)
        rc = apply_plan(sd, job, a, &plan,
            fc->ev.blame != EVIDENCE_BLAME_NONE ? fc->ev.node : NULL, now);
    /* A node blamed often enough is excluded (queued), which fails
     * whatever else runs there. */
    if (rc == 0 && blamed)
        rc = blame_check(sd, blamed, now);
    return rc;
}

/* While a hang waits for its dumps, what happens to the attempt is a
 * consequence of the hang: the hang is the failure. */
static void
hang_first(struct attempt *a, struct failure_case *fc)
{
    if (a->dump_deadline_ms <= 0 || fc->ev.kind == POLICY_KIND_HANG)
        return;
    failure_case_release(fc);
    failure_case_init(fc, POLICY_KIND_HANG);
    failure_case_hang(fc, a, &a->failure);
}

static int
process_failure(struct schedd *sd, struct attempt *a, struct failure_case *fc)
{
    struct job *job = a->job;
    struct policy_sig sig;
    int64_t now = timeid_now_ms();
    int *matched = NULL;
    size_t nmatched = 0;
    bool loop = false;
    int rc;

    if (!proto_attempt_state_active(a->state))
        return 0;
    hang_first(a, fc);
    sig.kind = fc->ev.kind;
    sig.rank = fc->ev.rank;
    sig.rel_step = rel_step(fc->ev.last_step, a->resume_step);
    sig.has_exit = fc->ev.has_exit;
    sig.exit_code = fc->ev.exit_code;
    sig.signal = fc->ev.signal;
    if (job &&
        (rc = crash_loop_find(sd, a, &sig, &loop, &matched, &nmatched)) < 0)
        return rc;
    if (fc->blame && fc->ev.node) {
        fc->ev.blame = loop ? EVIDENCE_BLAME_WITHDRAWN : EVIDENCE_BLAME_BLAMED;
        fc->blame_status = blame_status_of(sd, fc, loop);
    }
    rc = fail_attempt(sd, a, fc, now);
    if (job && rc == 0)
        rc = decide(sd, job, a, fc, &sig, loop, matched, nmatched, now);
    free(matched);
    return rc;
}

/* ---- exclusion ---------------------------------------------------------- */

/* Mark node UNHEALTHY (reversed only by an operator's uncordon, or when
 * withdrawn blame leaves too little to keep it: blame_reevaluate). */
static int
exclude_mark(struct schedd *sd, struct node *node, const char *actor,
    const char *reason, cJSON *evidence)
{
    struct event_node_change c = {
        .actor = actor,
        .why = reason,
        .kind = "node_excluded",
    };
    int rc;

    if (evidence) {
        c.extra = cJSON_CreateObject();
        cJSON_AddItemToObject(c.extra, "failures", evidence);
    }
    node->unhealthy = true;
    free(node->health_reason);
    node->health_reason = xstrdup(reason);
    log_notice("node=%s excluded: %s", node->name, reason);
    rc = event_node(sd, node, &c);
    return rc < 0 ? rc : alerts_node_excluded(sd, node, reason);
}

/* Whether an exclusion that blame_check queued (its reason says so) is
 * still due: a crash loop handled after it was queued may have withdrawn
 * some of the blame it counted. */
static bool
blame_still_due(struct schedd *sd, struct node *node, const char *why)
{
    cJSON *evidence;
    char *reason;
    int rc;

    if (strncmp(why, BLAME_REASON, strlen(BLAME_REASON)) != 0)
        return true;
    rc = blame_exclusion(sd, node, timeid_now_ms(), &reason, &evidence);
    free(reason);
    cJSON_Delete(evidence);
    return rc != 0;
}

static int
process_exclusion(struct schedd *sd, struct recovery_item *it)
{
    struct node *node = it->node;
    char why[400];
    int rc = 0;

    if (it->how == RECOVERY_EXCLUDE_BLAME) {
        cJSON *evidence = it->evidence;

        it->evidence = NULL;
        if (node->unhealthy || !blame_still_due(sd, node, it->reason)) {
            cJSON_Delete(evidence);
            return 0;
        }
        rc = exclude_mark(sd, node, it->actor, it->reason, evidence);
        snprintf(why, sizeof(why), "node %s excluded: %s", node->name,
            it->reason);
    } else if (it->how == RECOVERY_EXCLUDE_HEALTH) {
        snprintf(why, sizeof(why), "node %s excluded: %s", node->name,
            it->reason);
        rc = alerts_node_excluded(sd, node, it->reason);
    } else {
        snprintf(why, sizeof(why), "node %s evicted by %s%s%s", node->name,
            it->actor, it->reason[0] ? ": " : "", it->reason);
    }
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];

        if (it->how == RECOVERY_EXCLUDE_OPERATOR && p->attempt->stop)
            continue; /* its planned stop evicts it after its checkpoint */
        if (proto_attempt_state_active(p->attempt->state))
            push_excluded(sd, p, it->actor, it->how == RECOVERY_EXCLUDE_BLAME,
                why);
    }
    return rc;
}

/* Queue the failure of placement p's attempt: its node was excluded. */
static void
push_excluded(struct schedd *sd, struct placement *p, const char *actor,
    bool blame, const char *why)
{
    struct recovery_item *f = xcalloc(1, sizeof(*f));

    f->a = p->attempt;
    failure_case_init(&f->fc, POLICY_KIND_NODE_EXCLUDED);
    failure_case_excluded(&f->fc, p->attempt, p, actor, blame, why);
    recovery_push(sd->recovery, f);
}

/* ---- the queue ---------------------------------------------------------- */

static void
recovery_push(struct recovery *rc, struct recovery_item *it)
{
    STAILQ_INSERT_TAIL(&rc->queue, it, link);
}

/* Do the queued work in order, unless an outer call is doing it. After a
 * failed write the rest is dropped: the iteration is rolled back. */
static int
recovery_run(struct schedd *sd)
{
    struct recovery *r = sd->recovery;
    struct recovery_item *it;
    int rc = 0;

    if (r->running)
        return 0;
    r->running = true;
    while ((it = recovery_pop(r)) != NULL) {
        if (rc == 0)
            rc = it->a ? process_failure(sd, it->a, &it->fc)
                       : process_exclusion(sd, it);
        item_free(it);
    }
    r->running = false;
    return rc;
}

int
recovery_fail(struct schedd *sd, struct attempt *a, struct failure_case *fc)
{
    struct recovery_item *it = xcalloc(1, sizeof(*it));

    it->a = a;
    it->fc = *fc;
    memset(fc, 0, sizeof(*fc));
    recovery_push(sd->recovery, it);
    return recovery_run(sd);
}

int
recovery_exclude(struct schedd *sd, struct node *node, const char *actor,
    enum recovery_exclude how, const char *reason, cJSON *evidence)
{
    struct recovery_item *it = xcalloc(1, sizeof(*it));

    it->node = node;
    it->actor = xstrdup(actor);
    it->how = how;
    it->reason = xstrdup(reason ? reason : "");
    it->evidence = evidence;
    recovery_push(sd->recovery, it);
    return recovery_run(sd);
}

int
recovery_evict(struct schedd *sd, struct attempt *a, const char *node,
    const char *actor, const char *reason)
{
    struct placement *p = attempt_placement_by_node(a, node);
    char why[400];

    if (p == NULL || !proto_attempt_state_active(a->state))
        return 0;
    snprintf(why, sizeof(why), "node %s evicted by %s%s%s", node, actor,
        reason[0] ? ": " : "", reason);
    push_excluded(sd, p, actor, false, why);
    return recovery_run(sd);
}

int
recovery_blame_tick(struct schedd *sd)
{
    int rc = settle_check(sd, 0, NULL, false, timeid_now_ms());

    if (rc == 0)
        rc = recovery_run(sd);
    return rc;
}

int
recovery_attempt_succeeded(struct schedd *sd, const struct attempt *a)
{
    int rc = settle_check(sd, a->job_id, a, false, timeid_now_ms());

    if (rc == 0)
        rc = recovery_run(sd);
    return rc;
}
