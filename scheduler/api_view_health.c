/*
 * api_view_health.c - the JSON shapes of a node's health
 * (api_view_health.h)
 */
#include "scheduler/api_view_health.h"

#include <stdio.h>

#include "common/jsonx.h"
#include "scheduler/db.h"

#define API_VIEW_FINDINGS 50
#define API_VIEW_HISTORY 50

cJSON *
api_view_health_summary(const struct node *node)
{
    const struct health *h = node->health;
    size_t open = 0, excluding = 0;
    cJSON *o;
    char buf[64];

    if (h == NULL)
        return cJSON_CreateNull();
    for (size_t i = 0; i < h->nfindings; i++) {
        open += h->findings[i].open;
        excluding += h->findings[i].open && h->findings[i].excluding;
    }
    o = cJSON_CreateObject();
    jsonx_add_str(o, "boot_id", h->boot_id);
    cJSON_AddBoolToObject(o, "waiting", h->waiting);
    jsonx_add_int(o, "findings", (int64_t)open);
    jsonx_add_int(o, "excluding", (int64_t)excluding);
    if (h->waiting)
        snprintf(buf, sizeof(buf), "waiting for a full pass");
    else if (open == 0)
        snprintf(buf, sizeof(buf), "ok");
    else
        snprintf(buf, sizeof(buf), "%zu finding%s%s", open,
            open == 1 ? "" : "s", excluding ? " (excluding)" : "");
    jsonx_add_str(o, "summary", buf);
    return o;
}

static cJSON *
finding_view(const struct db_finding *r)
{
    const struct health_finding *f = &r->f;
    cJSON *o = cJSON_CreateObject();
    cJSON *nums = cJSON_AddObjectToObject(o, "numbers");

    jsonx_add_str(o, "check", f->check);
    jsonx_add_str(o, "code", f->code);
    jsonx_add_str(o, "scope", f->scope);
    jsonx_add_str(o, "status", proto_check_status_str(f->status));
    jsonx_add_str(o, "evidence", f->evidence);
    for (size_t i = 0; i < f->nnumbers; i++)
        cJSON_AddNumberToObject(nums, f->numbers[i].name, f->numbers[i].value);
    jsonx_add_int(o, "first_ms", f->first_ms);
    jsonx_add_int(o, "last_ms", f->last_ms);
    jsonx_add_int(o, "count", f->count);
    jsonx_add_int(o, "consecutive", f->consecutive);
    cJSON_AddBoolToObject(o, "excluding", f->excluding);
    jsonx_add_int(o, "passing_since_ms", f->pass_since);
    cJSON_AddBoolToObject(o, "open", f->open);
    jsonx_add_int(o, "closed_ms", r->closed_ms);
    jsonx_add_str(o, "closed_how", r->closed_how);
    jsonx_add_str(o, "closed_by", r->closed_by);
    jsonx_add_str(o, "closed_why", r->closed_why);
    return o;
}

static int
finding_add(const struct db_finding *r, void *arg)
{
    cJSON_AddItemToArray(arg, finding_view(r));
    return 0;
}

static int
history_add(const struct db_health_result *r, void *arg)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "check", r->check);
    jsonx_add_str(o, "code", r->code);
    jsonx_add_str(o, "scope", r->scope);
    jsonx_add_str(o, "status", r->status);
    jsonx_add_str(o, "evidence", r->evidence);
    jsonx_add_int(o, "run", r->run);
    jsonx_add_int(o, "at_ms", r->at_ms);
    cJSON_AddItemToArray(arg, o);
    return 0;
}

static cJSON *
checks_view(const struct health *h)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; h && i < h->nchecks; i++) {
        const struct health_check *hc = &h->checks[i];
        cJSON *c = cJSON_CreateObject();
        cJSON *res = cJSON_AddArrayToObject(c, "results");

        jsonx_add_str(c, "check", hc->check);
        jsonx_add_int(c, "run", (int64_t)hc->run);
        for (size_t k = 0; k < hc->nresults; k++)
            cJSON_AddItemToArray(res,
                proto_check_result_to_json(&hc->results[k]));
        cJSON_AddItemToArray(arr, c);
    }
    return arr;
}

int
api_view_health_full(struct schedd *sd, const struct node *node, cJSON *o)
{
    int rc;

    cJSON_AddItemToObject(o, "checks", checks_view(node->health));
    rc = schedd_db_check(sd,
        db_health_findings_foreach(sd->db, node->name, API_VIEW_FINDINGS,
            finding_add, cJSON_AddArrayToObject(o, "findings")));
    if (rc == 0)
        rc = schedd_db_check(sd,
            db_health_results_foreach(sd->db, node->name, API_VIEW_HISTORY,
                history_add, cJSON_AddArrayToObject(o, "health_history")));
    return rc;
}
