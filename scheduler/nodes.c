/*
 * nodes.c - registration, loss, cordons and releases of nodes (nodes.h)
 */
#include "scheduler/nodes.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/alerts.h"
#include "scheduler/blame.h"
#include "scheduler/db.h"
#include "scheduler/event.h"
#include "scheduler/failure.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/planned.h"
#include "scheduler/recovery.h"

/* ---- what agents report ------------------------------------------------- */

static int
agent_event(struct schedd *sd, const struct node *node, const char *kind,
    cJSON *detail)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    char actor[PROTO_NODE_NAME_MAX + 8];

    snprintf(actor, sizeof(actor), "agent/%s", node->name);
    return schedd_event(sd, actor,
        schedd_subject_node(subject, sizeof(subject), node->name), kind,
        detail);
}

static cJSON *
resources_json(const struct proto_node_report *rep)
{
    cJSON *d = cJSON_CreateObject();

    jsonx_add_str(d, "addr", rep->addr);
    jsonx_add_int(d, "cpus", rep->res.cpus);
    jsonx_add_int(d, "memory_mb", rep->res.memory_mb);
    jsonx_add_int_array(d, "gpus", rep->res.gpus, rep->res.ngpus);
    return d;
}

/* Take the node's resources from its agent's report; true when anything
 * changed (then the inventory's generation moves on). */
static bool
nodes_update_resources(struct schedd *sd, struct node *node,
    const struct proto_node_report *rep)
{
    const struct proto_resources *res = &rep->res;
    const char *was = node_label(node, "rack");
    const char *now = proto_kv_value(res->labels, res->nlabels, "rack");
    bool moved = (was == NULL) != (now == NULL) ||
                 (was != NULL && strcmp(was, now) != 0);

    if (!node_update_resources(node, rep->addr, res->cpus, res->memory_mb,
            res->gpus, res->ngpus, res->labels, res->nlabels))
        return false;
    node_table_touch(&sd->nodes);
    /* Its rack orders witness sets (its own and others'): rank it anew,
     * unless it is joining (nodes_register does). */
    if (moved && node_table_find(&sd->nodes, node->name) == node) {
        nodes_witness_left(sd, node);
        nodes_witness_joined(sd, node);
    }
    return true;
}

/* A node seen for the first time. */
static int
nodes_register(struct schedd *sd, const struct proto_node_report *rep,
    int64_t now, struct node **out)
{
    struct node *node = node_create(rep->node);
    int rc;

    nodes_update_resources(sd, node, rep);
    free(node->agent_id);
    node->agent_id = xstrdup(rep->agent_id);
    node->registered_ms = now;
    node->last_seen_ms = now;
    node->last_seen_saved_ms = now;
    node->last_seen_mono = timeid_mono_ms();
    node->told_until_mono = node->last_seen_mono + sd->heartbeat_ms +
                            sd->lease_ms;
    node->told_lease_ms = sd->lease_ms;
    node->told_interval_ms = sd->heartbeat_ms;
    node->reconciled = true;
    node->gen = schedd_next_gen(sd);
    rc = db_node_insert(sd->db, node);
    if (rc < 0) {
        node_destroy(node);
        return schedd_db_error(sd, rc);
    }
    rc = agent_event(sd, node, "node_registered", resources_json(rep));
    if (rc < 0) {
        node_destroy(node);
        return rc;
    }
    node_table_add(&sd->nodes, node);
    nodes_witness_joined(sd, node);
    log_info("node=%s registered addr=%s cpus=%d memory_mb=%lld gpus=%zu",
        node->name, node->addr, node->cpus, (long long)node->memory_mb,
        node->ngpus);
    schedd_sched_trigger(sd);
    *out = node;
    return 0;
}

int
nodes_report(struct schedd *sd, const struct proto_node_report *rep,
    int64_t now, struct node **out, bool *fresh_agent)
{
    struct node *node = node_table_find(&sd->nodes, rep->node);
    bool changed;
    int rc;

    *fresh_agent = false;
    if (node == NULL)
        return nodes_register(sd, rep, now, out);
    *out = node;
    changed = nodes_update_resources(sd, node, rep);
    if (strcmp(node->agent_id, rep->agent_id) != 0) {
        free(node->agent_id);
        node->agent_id = xstrdup(rep->agent_id);
        *fresh_agent = true;
        changed = true;
    }
    if (rep->reg)
        *fresh_agent = true;
    if (!changed)
        return 0;
    rc = db_node_update(sd->db, node);
    if (rc < 0)
        return schedd_db_error(sd, rc);
    rc = agent_event(sd, node,
        *fresh_agent ? "node_registered" : "node_updated", resources_json(rep));
    if (rc < 0)
        return rc;
    log_info("node=%s %s", node->name,
        *fresh_agent ? "agent (re)started" : "resources changed");
    schedd_sched_trigger(sd);
    return 0;
}

void
nodes_heard(struct schedd *sd, struct node *node)
{
    if (!node->agent_gone)
        return;
    node->agent_gone = false;
    schedd_sched_trigger(sd);
}

bool
nodes_pinged(struct schedd *sd, struct node *node, int64_t now, int64_t mono,
    bool stopping)
{
    if (node->lost || node->removing)
        return false;
    node->last_seen_ms = now;
    node->last_seen_mono = mono;
    node->ping_mono = mono;
    node->ping_stopped = stopping;
    nodes_witness_seen(sd, node, mono);
    nodes_heard(sd, node);
    return true;
}

int
nodes_seen(struct schedd *sd, struct node *node, int64_t now)
{
    struct event_node_change c = { .why = "status received" };

    node->last_seen_ms = now;
    node->last_seen_mono = timeid_mono_ms();
    nodes_witness_seen(sd, node, node->last_seen_mono);
    nodes_heard(sd, node);
    if (!node->lost)
        return 0;
    node->lost = false;
    if (node->lost_waiting)
        log_notice("node=%s is back; its jobs go on", node->name);
    node->lost_waiting = false;
    return event_node(sd, node, &c);
}

void
nodes_agent_gone(struct schedd *sd, struct node *node)
{
    if (sd->stopping)
        return;
    log_info("node=%s agent connection closed; no new work until it "
             "returns",
        node->name);
    node->agent_gone = true;
}

/* ---- loss --------------------------------------------------------------- */

int
nodes_placement_lost(struct schedd *sd, struct placement *p,
    enum policy_kind kind, const char *why)
{
    struct attempt *a = p->attempt;
    const struct attempt_rank *first = NULL;
    struct failure_case fc;
    int rpn = a->ranks_per_node;

    for (int l = 0; l < rpn; l++) {
        struct attempt_rank *rk = &a->ranks[p->node_rank * rpn + l];
        int rc;

        if (rk->state == PROTO_RANK_EXITED || rk->state == PROTO_RANK_LOST)
            continue;
        attempt_rank_uncount(a, rk);
        rk->state = PROTO_RANK_LOST;
        attempt_rank_count(a, rk);
        rk->end_ms = timeid_now_ms();
        rc = schedd_db_check(sd, db_rank_update(sd->db, a, rk));
        if (rc < 0)
            return rc;
        if (first == NULL)
            first = rk;
    }
    if (!proto_attempt_state_active(a->state))
        return 0;
    if (first == NULL)
        first = &a->ranks[p->node_rank * rpn];
    failure_case_init(&fc, kind);
    failure_case_lost(&fc, a, p, first, kind, why);
    return recovery_fail(sd, a, &fc);
}

int
nodes_release(struct schedd *sd, struct placement *p)
{
    struct attempt *a = p->attempt;
    struct node *node = p->node;
    int rc;

    if (p->released)
        return 0;
    rc = schedd_db_check(sd, db_placement_release(sd->db, p));
    if (rc < 0)
        return rc;
    p->released = true;
    if (node) {
        node_hold_remove(node, p);
        rc = event_node(sd, node, NULL);
    }
    log_debug("job=%lld attempt=%d node=%s released", (long long)a->job_id,
        a->num, p->node_name);
    if (rc == 0 && attempt_fully_released(a) && a->released_ms == 0) {
        a->released_ms = timeid_now_ms();
        rc = schedd_db_check(sd, db_attempt_update(sd->db, a));
        log_info("job=%lld attempt=%d released by every node",
            (long long)a->job_id, a->num);
    }
    schedd_sched_trigger(sd);
    if (!proto_attempt_state_active(a->state) && attempt_fully_released(a))
        schedd_attempt_drop(sd, a);
    return rc;
}

/* The node is LOST (why: its silence, or its agent found gone). Its
 * attempts fail once nodes_replace_lost allows it (nodes_tick), or each
 * when its supervisor says its ranks are dead (nodes_fenced). */
static int
nodes_lost(struct schedd *sd, struct node *node, const char *why)
{
    struct event_node_change c = { 0 };
    int rc;

    node->lost = true;
    node->lost_how = NODE_LOST_TIMEOUT;
    node->lost_waiting = false;
    c.why = why;
    rc = event_node(sd, node, &c);
    if (rc == 0)
        rc = alerts_node_lost(sd, node, why);
    schedd_sched_trigger(sd);
    return rc;
}

/* The lost node's attempts fail and everything it held is released, once
 * its witnesses allow it (nodes_witness.h); until then they wait, and the
 * first wait is logged and recorded as an event. */
static int
nodes_replace_lost(struct schedd *sd, struct node *node, int64_t mono)
{
    char subject[PROTO_NODE_NAME_MAX + 8], why[200];
    int rc = 0;

    if (!nodes_witness_may_replace(sd, node, mono, why, sizeof(why))) {
        cJSON *d;

        if (node->lost_waiting)
            return 0;
        node->lost_waiting = true;
        log_notice("node=%s lost; its jobs are not replaced yet: %s",
            node->name, why);
        d = cJSON_CreateObject();
        jsonx_add_str(d, "why", why);
        return schedd_event(sd, "scheduler",
            schedd_subject_node(subject, sizeof(subject), node->name),
            "node_lost_jobs_wait", d);
    }
    node->lost_waiting = false;
    for (size_t i = 0; i < node->nholds && rc == 0; i++) {
        struct placement *p = node->holds[i];

        if (proto_attempt_state_active(p->attempt->state))
            rc = nodes_placement_lost(sd, p, POLICY_KIND_NODE_LOST,
                "node lost");
    }
    /*
     * Release everything the node held. Its agent cannot say so, but it
     * need not: every supervisor there renews its lease only through a
     * status exchange or with its witnesses' word, lease_ms <
     * node_timeout_ms (main.c refuses anything else), and the witnesses'
     * gate has passed, so by now each one has SIGKILLed its ranks
     * (docs/fault-tolerance.md "Scheduler outages"). The next attempt of
     * those jobs may therefore start at once, and still never overlaps
     * the ranks it replaces.
     */
    while (rc == 0 && node->nholds > 0)
        rc = nodes_release(sd, node->holds[0]);
    schedd_sched_trigger(sd);
    return rc;
}

/* Forget node: its row is marked removed, the event written, and it
 * leaves the model. actor: who asked. */
static int
nodes_forget(struct schedd *sd, struct node *node, const char *actor)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    int rc;

    rc = schedd_db_check(sd, db_node_remove(sd->db, node->name));
    if (rc == 0)
        rc = schedd_db_check(sd,
            db_health_forget(sd->db, node->name, timeid_now_ms()));
    if (rc == 0)
        rc = schedd_event(sd, actor,
            schedd_subject_node(subject, sizeof(subject), node->name),
            "node_removed", NULL);
    if (rc < 0)
        return rc;
    log_notice("node=%s removed by %s", node->name, actor);
    nodes_witness_left(sd, node);
    schedd_node_forget(sd, node);
    schedd_sched_trigger(sd);
    return 0;
}

/*
 * Whether node, silent, holding attempts and granted short leases (its
 * lease pings were heard), is lost before node_timeout_ms: its leases
 * have run out, and its witnesses' gate has passed, so its ranks are
 * dead and its jobs can be replaced now (docs/fault-tolerance.md "Short
 * leases for busy nodes"). Says why in why (cap bytes) when so.
 */
static bool
nodes_short_lost(struct schedd *sd, struct node *node, int64_t mono, char *why,
    size_t cap)
{
    char wait[200];
    int64_t silent = mono - node->last_seen_mono;

    /* The last grant was short (nodes_witness_grant): what the gate
     * waits past is seconds. */
    if (node->nholds == 0 || !node->told_short ||
        silent <= 2 * (int64_t)sd->lease_ping_ms)
        return false;
    if (!nodes_witness_may_replace(sd, node, mono, wait, sizeof(wait)))
        return false;
    snprintf(why, cap,
        "no status or lease ping for %lld ms: its short leases ran out",
        (long long)silent);
    return true;
}

int
nodes_tick(struct schedd *sd, int64_t mono)
{
    struct node *next;

    for (struct node *node = node_table_first(&sd->nodes); node; node = next) {
        int rc;

        next = node_table_next(node);
        if (node->removing && node->nholds == 0) {
            if ((rc = nodes_forget(sd, node, node->removing_by)) < 0)
                return rc;
            continue;
        }
        if (node->lost) {
            if (node->nholds > 0 &&
                (rc = nodes_replace_lost(sd, node, mono)) < 0)
                return rc;
            continue;
        }
        char why[120];

        if (mono - node->last_seen_mono > (int64_t)sd->node_timeout_ms)
            snprintf(why, sizeof(why), "no status for %d ms",
                sd->node_timeout_ms);
        else if (!nodes_short_lost(sd, node, mono, why, sizeof(why)))
            continue;
        log_notice("node=%s lost: %s", node->name, why);
        if ((rc = nodes_lost(sd, node, why)) < 0)
            return rc;
        if (mono - node->last_seen_mono <= (int64_t)sd->node_timeout_ms)
            node->lost_how = NODE_LOST_SHORT;
        if ((rc = nodes_replace_lost(sd, node, mono)) < 0)
            return rc;
    }
    return 0;
}

int
nodes_fenced(struct schedd *sd, struct node *node, int64_t job, int attempt)
{
    static const char why[] = "its agent is gone and its supervisor killed "
                              "its ranks";
    struct placement *p = NULL;
    int rc = 0;

    for (size_t i = 0; i < node->nholds && p == NULL; i++) {
        struct attempt *a = node->holds[i]->attempt;

        if (a->job_id == job && a->num == attempt)
            p = node->holds[i];
    }
    if (p == NULL || p->released)
        return 0; /* old news: a notice sent again, or after the node's loss */
    log_notice("node=%s job=%lld attempt=%d %s: the attempt is replaced now",
        node->name, (long long)job, attempt, why);
    /* The agent is gone for good (nobody took its supervisor over within
     * the grace). A live agent (its lock file deleted under it) loses the
     * attempt, not the node. */
    if (node->agent_gone && !node->lost) {
        rc = nodes_lost(sd, node,
            "its agent is gone (its supervisors' notice)");
        node->lost_how = NODE_LOST_GONE;
    }
    if (rc == 0 && proto_attempt_state_active(p->attempt->state))
        rc = nodes_placement_lost(sd, p, POLICY_KIND_NODE_LOST, why);
    if (rc == 0)
        rc = nodes_release(sd, p);
    return rc;
}

void
nodes_stalled(struct schedd *sd, int64_t mono, int64_t stall_ms)
{
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node))
        node_stalled(node, mono, stall_ms);
    sd->stalled_ms += stall_ms;
    if (stall_ms >= sd->node_timeout_ms / 4)
        log_warn("the scheduler's loop stalled for %lld ms: no node's "
                 "silence counts it",
            (long long)stall_ms);
}

void
nodes_persist_last_seen(struct schedd *sd)
{
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node)) {
        int rc;

        if (node->last_seen_ms == node->last_seen_saved_ms)
            continue;
        rc = db_node_touch(sd->db, node->name, node->last_seen_ms);
        if (rc < 0) {
            schedd_db_error(sd, rc);
            return;
        }
        node->last_seen_saved_ms = node->last_seen_ms;
    }
}

/* ---- operators ---------------------------------------------------------- */

int
nodes_cordon(struct schedd *sd, struct node *node, const char *actor,
    bool cordon, const char *reason, bool evict)
{
    struct event_node_change c = {
        .actor = actor,
        .why = reason,
        .fact = cordon ? "node_cordoned" : "node_uncordoned",
    };
    int rc;

    node->cordoned = cordon;
    node->drain = false;
    free(node->cordon_by);
    node->cordon_by = xstrdup(cordon ? actor : "");
    node->cordon_at_ms = cordon ? timeid_now_ms() : 0;
    if (!cordon && node->removing) {
        /* The operator changed their mind: it stays. */
        node->removing = false;
        free(node->removing_by);
        node->removing_by = NULL;
    }
    if (!cordon) {
        /* An operator vouches for it: this clears a blame exclusion too
         * (which never reverses by itself). A health finding's exclusion
         * stays: it is the finding's (nodes_health_ack clears it). */
        node->unhealthy = false;
        free(node->health_reason);
        node->health_reason = xstrdup("");
        /* ... and starts its record afresh (the history is kept). */
        if ((rc = blame_reset(sd, node, actor)) < 0)
            return rc;
    }
    free(node->reason);
    node->reason = xstrdup(cordon ? reason : "");
    rc = event_node(sd, node, &c);
    if (rc < 0)
        return rc;
    log_info("node=%s %s by %s%s", node->name,
        cordon ? "cordoned" : "uncordoned", actor,
        evict ? " (evicting its jobs)" : "");
    if (evict)
        rc = planned_evict(sd, node, actor, node->reason);
    return rc;
}

int
nodes_drain(struct schedd *sd, struct node *node, const char *actor,
    const char *reason)
{
    struct event_node_change c = {
        .actor = actor,
        .why = reason,
        .kind = "node_drain",
    };

    node->cordoned = true;
    node->drain = true;
    free(node->cordon_by);
    node->cordon_by = xstrdup(actor);
    node->cordon_at_ms = timeid_now_ms();
    free(node->reason);
    node->reason = xstrdup(reason);
    log_info("node=%s drained by %s: %s", node->name, actor, reason);
    return event_node(sd, node, &c);
}

int
nodes_remove(struct schedd *sd, struct node *node, const char *actor,
    bool force, bool *pending)
{
    char reason[PROTO_NODE_NAME_MAX + 64];
    int rc;

    *pending = false;
    if (node->nholds == 0)
        return nodes_forget(sd, node, actor);
    if (!force)
        return -EBUSY;
    snprintf(reason, sizeof(reason), "being removed by %s", actor);
    if (!node->removing) {
        node->removing = true;
        node->removing_by = xstrdup(actor);
    }
    *pending = true;
    node->cordoned = true;
    free(node->cordon_by);
    node->cordon_by = xstrdup(actor);
    node->cordon_at_ms = timeid_now_ms();
    free(node->reason);
    node->reason = xstrdup(reason);
    rc = event_node(sd, node,
        &(struct event_node_change){ .actor = actor,
            .why = reason,
            .fact = "node_cordoned" });
    if (rc < 0)
        return rc;
    log_info("node=%s being removed by %s (evicting its jobs)", node->name,
        actor);
    return recovery_exclude(sd, node, actor, RECOVERY_EXCLUDE_OPERATOR, reason,
        NULL);
}
