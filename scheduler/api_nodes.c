/*
 * api_nodes.c - list and show nodes; cordon and uncordon them
 *
 * Nodes are all in the in-memory model, so views come from it (free
 * resources and held jobs exist only there). Cordoning is a flag next to
 * the node's other facts (lost, unhealthy); the state people see is
 * derived from them (node.h), so a cordoned node that gets lost and comes
 * back is still cordoned. An automatic exclusion (blame) is another flag
 * with its own reason; only an operator's uncordon clears it. `cordon`
 * with "evict": true also restarts the jobs running there elsewhere
 * (recovery.c, failure kind node_excluded, not counted as blame).
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

#define API_NODE_EVENTS 50
#define API_REASON_MAX 1024

static cJSON *
node_json(const struct node *node)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *labels, *jobs;
    int *free_gpus = xcalloc(node->ngpus + 1, sizeof(*free_gpus));
    size_t nfree = node_free_gpus(node, free_gpus);

    jsonx_add_str(o, "name", node->name);
    jsonx_add_str(o, "state", node_state_str(node->state));
    if (node->lost) {
        char buf[96];

        snprintf(buf, sizeof(buf), "no status for %lld ms",
            (long long)(timeid_now_ms() - node->last_seen_ms));
        jsonx_add_str(o, "reason", buf);
    } else if (node->cordoned) {
        jsonx_add_str(o, "reason", node->reason);
    } else if (node->unhealthy) {
        jsonx_add_str(o, "reason", node->health_reason);
    } else if (node->state == NODE_STATE_UP && !node->reconciled) {
        jsonx_add_str(o, "reason",
            "no status since the scheduler started; no new work until then");
    } else if (node->state == NODE_STATE_UP && node->agent_gone) {
        jsonx_add_str(o, "reason",
            "agent connection closed; no new work until it returns");
    } else {
        jsonx_add_str(o, "reason", "");
    }
    jsonx_add_str(o, "addr", node->addr);
    jsonx_add_int(o, "cpus", node->cpus);
    jsonx_add_int(o, "memory_mb", node->memory_mb);
    jsonx_add_int_array(o, "gpus", node->gpus, node->ngpus);
    labels = cJSON_AddObjectToObject(o, "labels");
    for (size_t i = 0; i < node->nlabels; i++)
        cJSON_AddStringToObject(labels, node->labels[i].key,
            node->labels[i].value);
    jsonx_add_int(o, "free_cpus", node_free_cpus(node));
    jsonx_add_int(o, "free_memory_mb", node_free_memory_mb(node));
    jsonx_add_int_array(o, "free_gpus", free_gpus, nfree);
    jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < node->nholds; i++) {
        int64_t id = node->holds[i]->attempt->job_id;
        bool dup = false;

        for (size_t j = 0; j < i && !dup; j++)
            dup = node->holds[j]->attempt->job_id == id;
        if (!dup)
            cJSON_AddItemToArray(jobs, cJSON_CreateNumber((double)id));
    }
    jsonx_add_int(o, "last_seen_ms", node->last_seen_ms);
    jsonx_add_int(o, "registered_ms", node->registered_ms);
    free(free_gpus);
    return o;
}

static int
node_ptr_cmp(const void *a, const void *b)
{
    const struct node *x = *(const struct node *const *)a;
    const struct node *y = *(const struct node *const *)b;

    return strcmp(x->name, y->name);
}

int
api_nodes_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node **v = xcalloc(sd->nodes.count + 1, sizeof(*v));
    cJSON *arr = cJSON_CreateArray();
    size_t n = 0;

    for (struct node *node = sd->nodes.head; node; node = node->next)
        v[n++] = node;
    qsort(v, n, sizeof(*v), node_ptr_cmp);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, node_json(v[i]));
    free(v);
    http_resp_json(resp, 200, arr);
    return 0;
}

static int
node_find(struct schedd *sd, const struct api_req *r, struct node **out,
    struct err *err)
{
    *out = r->arg ? node_table_find(&sd->nodes, r->arg) : NULL;
    if (*out == NULL)
        return err_set(err, -ENOENT, "no node '%.64s'", r->arg ? r->arg : "");
    return 0;
}

/* The node object plus its newest events. */
static int
node_view(struct schedd *sd, const struct node *node, cJSON **out)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    cJSON *o = node_json(node);
    int rc;

    snprintf(subject, sizeof(subject), "node/%s", node->name);
    cJSON_AddItemToObject(o, "events",
        api_events_json(sd, subject, API_NODE_EVENTS, &rc));
    if (rc < 0) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return 0;
}

int
api_nodes_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node *node;
    cJSON *o;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) < 0 ||
        (rc = node_view(sd, node, &o)) < 0)
        return rc;
    http_resp_json(resp, 200, o);
    return 0;
}

/* Parse {"version":1,"reason":"...","evict":false}; *reason: caller
 * frees. */
static int
cordon_body(const struct api_req *r, char **reason, bool *evict,
    struct err *err)
{
    static const char *const keys[] = { "version", "reason", "evict",
        NULL };
    cJSON *json = NULL;
    int rc;

    *reason = NULL;
    *evict = false;
    /* No body at all means no reason given. */
    if (r->http->body_len == 0) {
        *reason = xstrdup("");
        return 0;
    }
    if ((rc = api_body_json(r->http, &json, err)) < 0 ||
        (rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_str(json, "reason", false, API_REASON_MAX, reason,
             err)) < 0 ||
        (rc = jsonx_get_bool(json, "evict", false, evict, err)) < 0) {
        cJSON_Delete(json);
        free(*reason);
        *reason = NULL;
        return rc;
    }
    cJSON_Delete(json);
    if (*reason == NULL)
        *reason = xstrdup("");
    return 0;
}

static int
node_set_cordon(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, bool cordon, struct err *err)
{
    enum node_state before;
    struct node *node;
    char *reason = NULL;
    char subject[PROTO_NODE_NAME_MAX + 8];
    cJSON *o, *detail;
    bool evict = false;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) < 0 ||
        (rc = cordon_body(r, &reason, &evict, err)) < 0)
        return rc;
    if (evict && !cordon) {
        free(reason);
        return err_set(err, -EINVAL,
            "field 'evict': only a cordon can evict");
    }
    before = node->state;
    node->cordoned = cordon;
    if (!cordon) {
        /* An operator vouches for it: this clears an automatic exclusion
         * too (which never reverses by itself). */
        node->unhealthy = false;
        free(node->health_reason);
        node->health_reason = xstrdup("");
    }
    free(node->reason);
    node->reason = cordon ? reason : xstrdup("");
    if (!cordon) {
        rc = schedd_node_refresh(sd, node, r->who.user, reason);
        free(reason);
    } else {
        rc = schedd_node_refresh(sd, node, r->who.user, node->reason);
    }
    if (rc < 0)
        return rc;
    if (node->state == before) {
        /* The state shown did not change (a LOST node, a second cordon):
         * still record who did what and why. */
        rc = db_node_update(sd->db, node);
        if (rc < 0)
            return schedd_db_error(sd, rc);
        snprintf(subject, sizeof(subject), "node/%s", node->name);
        detail = cJSON_CreateObject();
        jsonx_add_str(detail, "reason", cordon ? node->reason : "");
        rc = schedd_event(sd, r->who.user, subject,
            cordon ? "node_cordoned" : "node_uncordoned", detail);
        if (rc < 0)
            return rc;
    }
    log_info("node=%s %s by %s%s", node->name,
        cordon ? "cordoned" : "uncordoned", r->who.user,
        evict ? " (evicting its jobs)" : "");
    if (evict && (rc = schedd_node_exclude(sd, node, r->who.user,
                      SCHEDD_EXCLUDE_OPERATOR, node->reason, NULL)) < 0)
        return rc;
    if ((rc = node_view(sd, node, &o)) < 0)
        return rc;
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_nodes_cordon(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    return node_set_cordon(sd, r, resp, true, err);
}

int
api_nodes_uncordon(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    return node_set_cordon(sd, r, resp, false, err);
}
