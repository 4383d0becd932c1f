/*
 * blame.c - blame put on nodes: recorded, settled, counted, reset
 *
 * blame.h states the rules; policy.c decides each case.
 */
#include "scheduler/blame.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/event.h"

/* Failures listed in an exclusion reason (the event has them all). */
#define BLAME_REASON_FAILURES 6

/* ---- counting ----------------------------------------------------------- */

struct blame_ctx {
    struct policy_blame *v;
    size_t n;
    cJSON *evidence; /* array of the failures */
    char list[512];  /* "job 4 attempt 1 (rank_exit), ..." */
    size_t listed;
};

static int
blame_collect(const struct db_blame *b, void *arg)
{
    struct blame_ctx *ctx = arg;
    struct policy_blame row = {
        .job_id = b->job_id,
        .time_ms = b->time_ms,
        .status = b->status,
        .consequence = strcmp(b->kind,
                           policy_kind_str(POLICY_KIND_NODE_EXCLUDED)) == 0,
    };
    size_t off = strlen(ctx->list);
    cJSON *o, *ev;

    if (!policy_blame_counts(&row))
        return 0;
    o = cJSON_CreateObject();
    ev = cJSON_Parse(b->evidence);
    ctx->v = xreallocarray(ctx->v, ctx->n + 1, sizeof(*ctx->v));
    ctx->v[ctx->n++] = row;
    jsonx_add_int(o, "job", b->job_id);
    jsonx_add_int(o, "attempt", b->attempt);
    jsonx_add_int(o, "time_ms", b->time_ms);
    jsonx_add_str(o, "kind", b->kind);
    if (ev)
        cJSON_AddItemToObject(o, "evidence", ev);
    cJSON_AddItemToArray(ctx->evidence, o);
    if (ctx->listed < BLAME_REASON_FAILURES && off < sizeof(ctx->list)) {
        snprintf(ctx->list + off, sizeof(ctx->list) - off,
            "%sjob %lld attempt %d (%s)", ctx->listed ? ", " : "",
            (long long)b->job_id, b->attempt, b->kind);
        ctx->listed++;
    }
    return 0;
}

int
blame_exclusion(struct schedd *sd, const struct node *node, int64_t now,
    char **reason, cJSON **evidence)
{
    struct blame_ctx ctx;
    size_t jobs;
    int rc;

    *reason = NULL;
    *evidence = NULL;
    memset(&ctx, 0, sizeof(ctx));
    ctx.evidence = cJSON_CreateArray();
    rc = schedd_db_check(sd,
        db_blame_node_foreach(sd->db, node->name,
            now - sd->policy.blame_window_ms, blame_collect, &ctx));
    if (rc < 0 || !policy_blame_exceeds(&sd->policy, ctx.v, ctx.n, now)) {
        free(ctx.v);
        cJSON_Delete(ctx.evidence);
        return rc;
    }
    jobs = policy_blame_jobs(ctx.v, ctx.n, now, sd->policy.blame_window_ms);
    *reason = xasprintf(BLAME_REASON "%zu different jobs within %lld s: %s%s",
        jobs, (long long)(sd->policy.blame_window_ms / 1000), ctx.list,
        ctx.n > ctx.listed ? ", ..." : "");
    *evidence = ctx.evidence;
    free(ctx.v);
    return 1;
}

/* Record the blame of fc (of attempt a) on its node: a blame row (its
 * evidence without the dumps, fc->blame_status, the step its rank had
 * reached) and a node_blamed event. */
int
blame_record(struct schedd *sd, const struct attempt *a,
    const struct failure_case *fc, int64_t now)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    bool withdrawn = fc->ev.blame == EVIDENCE_BLAME_WITHDRAWN;
    struct evidence shown;
    cJSON *ev, *detail;
    char *text;
    int rc;

    /* The blame row keeps the evidence as it was before any withdrawal. */
    evidence_copy(&shown, &fc->ev);
    shown.blame = withdrawn ? EVIDENCE_BLAME_NONE : EVIDENCE_BLAME_BLAMED;
    ev = evidence_to_json(&shown);
    evidence_release(&shown);
    text = jsonx_print(ev);
    rc = schedd_db_check(sd, db_blame_insert(sd->db, fc->ev.node, a->job_id,
                                 a->num, now, policy_kind_str(fc->ev.kind),
                                 text, fc->blame_status, fc->ev.last_step));
    free(text);
    if (rc < 0) {
        cJSON_Delete(ev);
        return rc;
    }
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "job", a->job_id);
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_str(detail, "kind", policy_kind_str(fc->ev.kind));
    jsonx_add_str(detail, "reason", a->reason);
    jsonx_add_str(detail, "status", policy_blame_status_str(fc->blame_status));
    if (withdrawn)
        cJSON_AddBoolToObject(detail, "withdrawn", true);
    cJSON_AddItemToObject(detail, "evidence", ev);
    return schedd_event(sd, SCHEDD_ACTOR,
        schedd_subject_node(subject, sizeof(subject), fc->ev.node),
        "node_blamed", detail);
}

/* Whether an open health finding excludes node (a FAIL or HUNG result of
 * its checks, a check unreliable, flapping): hard evidence against it
 * (policy_blame_in.node_finding). This is the one place the node-health
 * findings answer; a SUSPECT node's soft findings (a WARN, a straggler)
 * do not make a user's failure the node's. */
static bool
node_has_finding(const struct node *node)
{
    return node != NULL && node->health != NULL &&
           health_excluded(node->health, NULL, 0);
}

/* The status fc's blame row gets: withdrawn in a crash loop, else by the
 * class of its evidence (policy_blame_class). */
enum policy_blame_status
blame_status_of(struct schedd *sd, const struct failure_case *fc, bool loop)
{
    struct policy_blame_in in = {
        .kind = fc->ev.kind,
        .has_exit = fc->ev.has_exit,
        .signal = fc->ev.signal,
        .node_suspect = fc->suspect,
        .node_finding = node_has_finding(
            node_table_find(&sd->nodes, fc->ev.node)),
    };

    if (loop)
        return POLICY_BLAME_WITHDRAWN;
    return policy_blame_class(&sd->policy, &in) == POLICY_CLASS_HARD
               ? POLICY_BLAME_CONFIRMED
               : POLICY_BLAME_PROVISIONAL;
}

/* ---- settling provisional blame ----------------------------------------- */

/* A provisional row, copied out of the query. */
struct pending_row {
    int64_t id;
    char *node;
    int64_t job_id;
    int attempt;
    int64_t step;
};

struct pending_ctx {
    int64_t job_id; /* only this job's rows; 0: all */
    struct pending_row *v;
    size_t n;
};

static int
pending_collect(const struct db_blame *b, void *arg)
{
    struct pending_ctx *ctx = arg;
    struct pending_row *r;

    if (ctx->job_id != 0 && b->job_id != ctx->job_id)
        return 0;
    ctx->v = xreallocarray(ctx->v, ctx->n + 1, sizeof(*ctx->v));
    r = &ctx->v[ctx->n++];
    r->id = b->id;
    r->node = xstrdup(b->node);
    r->job_id = b->job_id;
    r->attempt = b->attempt;
    r->step = b->step;
    return 0;
}

/* The lowest step a's ranks that report steps have reached; -1 none. */
static int64_t
attempt_low_step(const struct attempt *a)
{
    int64_t low = -1;

    for (size_t r = 0; r < a->nranks; r++) {
        int64_t s = a->ranks[r].step;

        if (s >= 0 && (low < 0 || s < low))
            low = s;
    }
    return low;
}

/* What the job has done since row r failed: the policy's input. job is r's
 * job (NULL: over), a its latest attempt (NULL: none live), ended whether
 * the job ends now. */
static void
pending_input(const struct pending_row *r, const struct job *job,
    const struct attempt *a, bool ended, struct policy_blame_pending *p)
{
    memset(p, 0, sizeof(*p));
    p->attempt = r->attempt;
    p->step = r->step;
    p->job_live = job != NULL && !ended &&
                  !proto_job_state_finished(job->state);
    p->next_step = -1;
    if (a == NULL)
        return;
    p->next_attempt = a->num;
    for (int k = 0; k < a->nnodes; k++)
        p->next_on_node |= a->placements[k].node_name &&
                           strcmp(a->placements[k].node_name, r->node) == 0;
    p->next_succeeded = a->state == PROTO_ATTEMPT_SUCCEEDED;
    p->next_step = attempt_low_step(a);
}

/* The note a settled row keeps. */
static void
settle_note(char *buf, size_t len, const struct pending_row *r,
    const struct policy_blame_pending *p)
{
    const char *where = p->next_on_node ? "on this node" : "on other nodes";
    bool later = p->next_attempt > r->attempt;

    if (later && p->next_succeeded)
        snprintf(buf, len, "attempt %d succeeded %s", p->next_attempt, where);
    else if (later && p->next_step >= 0 && p->next_step > r->step)
        snprintf(buf, len, "attempt %d got past step %lld %s", p->next_attempt,
            (long long)r->step, where);
    else
        snprintf(buf, len,
            "job %lld ended without getting past step %lld "
            "elsewhere",
            (long long)r->job_id, (long long)r->step);
}

int
blame_settle(struct schedd *sd, int64_t job_id, const struct attempt *a,
    bool ended, int64_t now, struct node ***confirmed, size_t *nconfirmed)
{
    struct pending_ctx ctx = { .job_id = job_id };
    int rc;

    rc = schedd_db_check(sd,
        db_blame_provisional_foreach(sd->db, pending_collect, &ctx));
    for (size_t i = 0; i < ctx.n && rc == 0; i++) {
        struct pending_row *r = &ctx.v[i];
        struct job *job = job_table_find(&sd->jobs, r->job_id);
        const struct attempt *next = a && a->job_id == r->job_id ? a : NULL;
        struct policy_blame_pending p;
        enum policy_blame_verdict v;
        struct node *node;
        char note[160];

        if (next == NULL && job != NULL)
            next = schedd_job_latest(sd, job);
        pending_input(r, job, next, ended && r->job_id == job_id, &p);
        v = policy_blame_settle(&p);
        if (v == POLICY_SETTLE_KEEP)
            continue;
        settle_note(note, sizeof(note), r, &p);
        rc = schedd_db_check(sd,
            db_blame_settle(sd->db, r->id, r->job_id, r->attempt,
                v == POLICY_SETTLE_CONFIRM ? POLICY_BLAME_CONFIRMED
                                           : POLICY_BLAME_WITHDRAWN,
                now, note));
        log_info("node=%s blame of job=%lld attempt=%d %s: %s", r->node,
            (long long)r->job_id, r->attempt,
            v == POLICY_SETTLE_CONFIRM ? "confirmed" : "withdrawn", note);
        node = node_table_find(&sd->nodes, r->node);
        if (v == POLICY_SETTLE_CONFIRM && node) {
            *confirmed = xreallocarray(*confirmed, *nconfirmed + 1,
                sizeof(**confirmed));
            (*confirmed)[(*nconfirmed)++] = node;
        }
    }
    for (size_t i = 0; i < ctx.n; i++)
        free(ctx.v[i].node);
    free(ctx.v);
    return rc;
}

/* ---- re-evaluating an exclusion ----------------------------------------- */

/* Whether node's exclusion is blame's (never an operator's cordon, nor an
 * exclusion for any other cause). */
static bool
excluded_by_blame(const struct node *node)
{
    return node->unhealthy && node->health_reason &&
           strncmp(node->health_reason, BLAME_REASON, strlen(BLAME_REASON)) ==
               0;
}

/* Lift node's exclusion by blame: its counted blame fell to `jobs`
 * different jobs, below blame_threshold. */
static int
exclusion_lift(struct schedd *sd, struct node *node, size_t jobs)
{
    char why[256];
    struct event_node_change c = {
        .why = why,
        .kind = "node_exclusion_lifted",
    };

    snprintf(why, sizeof(why),
        "blame withdrawn: now blamed for failures of %zu different jobs "
        "within %lld s, below blame_threshold %d",
        jobs, (long long)(sd->policy.blame_window_ms / 1000),
        sd->policy.blame_threshold);
    node->unhealthy = false;
    free(node->health_reason);
    node->health_reason = xstrdup("");
    log_notice("node=%s exclusion lifted: %s", node->name, why);
    return event_node(sd, node, &c);
}

/* After blame was withdrawn: every node excluded by blame whose counted
 * blame now falls below the threshold is excluded no longer. */
int
blame_reevaluate(struct schedd *sd, int64_t now)
{
    int rc = 0;

    for (struct node *node = node_table_first(&sd->nodes); node && rc == 0;
         node = node_table_next(node)) {
        struct blame_ctx ctx;

        if (!excluded_by_blame(node))
            continue;
        memset(&ctx, 0, sizeof(ctx));
        ctx.evidence = cJSON_CreateArray();
        rc = schedd_db_check(sd,
            db_blame_node_foreach(sd->db, node->name,
                now - sd->policy.blame_window_ms, blame_collect, &ctx));
        if (rc == 0 && !policy_blame_exceeds(&sd->policy, ctx.v, ctx.n, now))
            rc = exclusion_lift(sd, node,
                policy_blame_jobs(ctx.v, ctx.n, now,
                    sd->policy.blame_window_ms));
        free(ctx.v);
        cJSON_Delete(ctx.evidence);
    }
    return rc;
}

/* A crash loop: the blame of the attempts it repeated is withdrawn, and
 * the exclusions that blame caused are re-evaluated. */
int
blame_withdraw_loop(struct schedd *sd, const struct attempt *a,
    const int *matched, size_t nmatched, int64_t now)
{
    char note[96];
    int rc = 0;

    snprintf(note, sizeof(note),
        "attempt %d failed the same way on other nodes "
        "(deterministic)",
        a->num);
    for (size_t i = 0; i < nmatched && rc == 0; i++)
        rc = schedd_db_check(sd,
            db_blame_withdraw(sd->db, a->job_id, matched[i], now, note));
    return rc == 0 ? blame_reevaluate(sd, now) : rc;
}

int
blame_reset(struct schedd *sd, const struct node *node, const char *actor)
{
    char note[160];

    snprintf(note, sizeof(note), "reset by %s's uncordon", actor);
    return schedd_db_check(sd,
        db_blame_reset(sd->db, node->name, timeid_now_ms(), note));
}
