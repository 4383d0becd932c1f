/*
 * nodes_health.c - apply a node's health findings (nodes_health.h)
 */
#include "scheduler/nodes_health.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/event.h"
#include "scheduler/recovery.h"

#define HEALTH_REASON_MAX 700

const char *
nodes_health_reason(const struct node *node, char *buf, size_t len)
{
    const struct health *h = node->health;

    buf[0] = '\0';
    if (h == NULL)
        return buf;
    if (health_excluded(h, buf, len))
        return buf;
    if (h->waiting) {
        snprintf(buf, len,
            "new boot: waiting for the first full pass of "
            "its health checks");
        return buf;
    }
    health_suspect(h, buf, len);
    return buf;
}

static int
health_event(struct schedd *sd, const struct node *node, const char *actor,
    const char *kind, cJSON *detail)
{
    char subject[PROTO_NODE_NAME_MAX + 8];

    return schedd_event(sd, actor ? actor : SCHEDD_ACTOR,
        schedd_subject_node(subject, sizeof(subject), node->name), kind,
        detail);
}

static cJSON *
finding_json(const struct health_finding *f)
{
    cJSON *d = cJSON_CreateObject();

    jsonx_add_str(d, "check", f->check);
    jsonx_add_str(d, "code", f->code);
    jsonx_add_str(d, "scope", f->scope);
    jsonx_add_str(d, "status", proto_check_status_str(f->status));
    jsonx_add_str(d, "evidence", f->evidence);
    cJSON_AddBoolToObject(d, "excluding", f->excluding);
    jsonx_add_int(d, "consecutive", f->consecutive);
    return d;
}

/* Write what changed of node's findings and checks, with an event for
 * each finding opened, latched or cleared. closed_by/why: who closed
 * findings by acknowledgement (NULL: none). */
static int
health_write(struct schedd *sd, struct node *node, int64_t now,
    const char *closed_by, const char *closed_why)
{
    struct health *h = node->health;
    int rc = 0;

    for (size_t i = 0; i < h->nfindings && rc == 0; i++) {
        struct health_finding *f = &h->findings[i];
        const char *kind = NULL;
        cJSON *d;

        if (!f->dirty)
            continue;
        rc = schedd_db_check(sd, db_health_finding_put(sd->db, node->name, f,
                                     now, closed_by, closed_why));
        if (!f->open)
            kind = "health_finding_cleared";
        else if (f->announce)
            kind = f->excluding ? "health_finding_excluding"
                                : "health_finding_opened";
        if (rc < 0 || kind == NULL)
            continue;
        d = finding_json(f);
        if (!f->open)
            jsonx_add_str(d, "how", f->closed_how);
        rc = health_event(sd, node,
            f->closed_how && strcmp(f->closed_how, "ack") == 0 ? closed_by
                                                               : NULL,
            kind, d);
    }
    for (size_t i = 0; i < h->nchecks && rc == 0; i++) {
        if (h->checks[i].dirty)
            rc = schedd_db_check(sd,
                db_health_check_put(sd->db, node->name, &h->checks[i], now));
    }
    return rc;
}

/*
 * After node's findings changed: note a new exclusion (flapping), write
 * the changes, move the node's state, and fail the jobs there when its
 * findings newly exclude it. was: whether they excluded it before.
 */
static int
health_settle(struct schedd *sd, struct node *node, bool was, int64_t now,
    const char *actor, const char *why)
{
    struct health *h = node->health;
    struct event_node_change c = { .actor = actor };
    char reason[HEALTH_REASON_MAX];
    bool excluded = health_excluded(h, NULL, 0);
    int rc;

    if (!was && excluded)
        health_note_exclusion(h, &sd->health, now);
    nodes_health_reason(node, reason, sizeof(reason));
    if ((rc = health_write(sd, node, now, actor, why)) < 0 ||
        (rc = schedd_db_check(sd, db_node_update(sd->db, node))) < 0)
        return rc;
    health_written(h);
    c.why = why && *why ? why : reason;
    if (!was && excluded) {
        c.kind = "node_excluded";
        log_notice("node=%s excluded: %s", node->name, reason);
    } else if (!excluded && h->waiting &&
               node_state_compute(node) != node->state) {
        /* Not schedulable until its first full pass: not a fault. */
        c.kind = "node_health_wait";
    }
    if ((rc = event_node(sd, node, &c)) < 0)
        return rc;
    if (!was && excluded)
        return recovery_exclude(sd, node, SCHEDD_ACTOR, RECOVERY_EXCLUDE_HEALTH,
            reason, NULL);
    return 0;
}

/* The results of rep that change what node's history last said (a new
 * run whose status differs from the previous one of the same result):
 * one history row each. */
static int
health_history(struct schedd *sd, struct node *node,
    const struct proto_health *rep, int64_t now)
{
    const struct health *h = node->health;
    int rc = 0;

    for (size_t i = 0; i < rep->nresults && rc == 0; i++) {
        const struct proto_check_result *r = &rep->results[i];
        const struct health_check *hc = NULL;
        bool same = false;

        for (size_t k = 0; k < h->nchecks && hc == NULL; k++) {
            if (strcmp(h->checks[k].check, r->check) == 0)
                hc = &h->checks[k];
        }
        if (hc && r->run <= hc->run && strcmp(h->agent_id, node->agent_id) == 0)
            continue;
        for (size_t k = 0; hc && k < hc->nresults && !same; k++) {
            const struct proto_check_result *p = &hc->results[k];

            same = strcmp(p->code, r->code) == 0 &&
                   strcmp(p->scope ? p->scope : "", r->scope ? r->scope : "") ==
                       0 &&
                   p->status == r->status;
        }
        if (!same)
            rc = schedd_db_check(sd,
                db_health_result_insert(sd->db, node->name, r, now));
    }
    return rc;
}

int
nodes_health_report(struct schedd *sd, struct node *node, const char *agent_id,
    const struct proto_health *health, int64_t now)
{
    bool fresh = node->health == NULL, was, changed;
    int rc;

    if (health == NULL)
        return 0;
    if (fresh) {
        node->health = health_create();
        log_info("node=%s its agent reports health checks", node->name);
    }
    was = health_excluded(node->health, NULL, 0);
    if ((rc = health_history(sd, node, health, now)) < 0)
        return rc;
    changed = health_apply(node->health, &sd->health, agent_id, health, now);
    changed |= health_expire(node->health, &sd->health, now);
    if (!changed && !fresh)
        return 0;
    return health_settle(sd, node, was, now, NULL, NULL);
}

int
nodes_soft_finding(struct schedd *sd, struct node *node, const char *code,
    const char *scope, const char *evidence)
{
    int64_t now = timeid_now_ms();
    bool was;

    if (node->health == NULL)
        node->health = health_create();
    was = health_excluded(node->health, NULL, 0);
    health_soft(node->health, &sd->health, code, scope, evidence, now);
    log_info("node=%s suspect: %s %s: %s", node->name, code, scope, evidence);
    return health_settle(sd, node, was, now, NULL, NULL);
}

int
nodes_health_ack(struct schedd *sd, struct node *node, const char *actor,
    const char *finding, const char *reason)
{
    char code[PROTO_CHECK_CODE_MAX + PROTO_CHECK_SCOPE_MAX + 2];
    char *at;
    cJSON *d;
    size_t n;
    bool was;
    int rc;

    if (node->health == NULL)
        return -ENOENT;
    snprintf(code, sizeof(code), "%s", finding);
    at = strchr(code, '@');
    if (at)
        *at++ = '\0';
    was = health_excluded(node->health, NULL, 0);
    n = health_ack(node->health, code, at, timeid_now_ms());
    if (n == 0)
        return -ENOENT;
    d = cJSON_CreateObject();
    jsonx_add_str(d, "finding", finding);
    jsonx_add_str(d, "reason", reason);
    jsonx_add_int(d, "closed", (int64_t)n);
    if ((rc = health_event(sd, node, actor, "node_health_ack", d)) < 0)
        return rc;
    log_notice("node=%s finding %s acknowledged by %s: %s", node->name, finding,
        actor, reason);
    return health_settle(sd, node, was, timeid_now_ms(), actor, reason);
}

void
nodes_health_tick(struct schedd *sd, int64_t now)
{
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node)) {
        bool was;

        if (node->health == NULL)
            continue;
        was = health_excluded(node->health, NULL, 0);
        if (health_expire(node->health, &sd->health, now) &&
            health_settle(sd, node, was, now, NULL, NULL) < 0)
            return;
    }
}
