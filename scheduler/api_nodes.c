/*
 * api_nodes.c - the node endpoints (api_nodes.h): parse, call nodes.h,
 * format
 */
#include "scheduler/api_nodes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"
#include "scheduler/api_view.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_health.h"

#define API_REASON_MAX 1024

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
    struct node **v = xcalloc(node_table_count(&sd->nodes) + 1, sizeof(*v));
    cJSON *arr = cJSON_CreateArray();
    size_t n = 0;

    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node))
        v[n++] = node;
    qsort(v, n, sizeof(*v), node_ptr_cmp);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, api_view_node(v[i]));
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

/* The node's full view; its events as r may see them (docs/api.md). */
static int
reply_node(struct schedd *sd, const struct api_req *r, const struct node *node,
    struct http_resp *resp)
{
    cJSON *o;
    int rc = api_view_node_full(sd, node, &o);

    if (rc < 0)
        return rc;
    api_req_events_redact(r, cJSON_GetObjectItemCaseSensitive(o, "events"));
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_nodes_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node *node;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) < 0)
        return rc;
    return reply_node(sd, r, node, resp);
}

/* Parse {"version":1,"reason":"...","evict":false}; *reason: caller
 * frees. No body at all means no reason given. */
static int
cordon_body(const struct api_req *r, char **reason, bool *evict,
    struct err *err)
{
    static const char *const keys[] = { "version", "reason", "evict", NULL };
    cJSON *json = NULL;
    int rc;

    *reason = NULL;
    *evict = false;
    if (r->http->body_len > 0 &&
        ((rc = api_req_body(r, &json, err)) < 0 ||
            (rc = jsonx_check_keys(json, keys, err)) < 0 ||
            (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
            (rc = jsonx_get_str(json, "reason", false, API_REASON_MAX, reason,
                 err)) < 0 ||
            (rc = jsonx_get_bool(json, "evict", false, evict, err)) < 0)) {
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
    struct node *node;
    char *reason = NULL;
    bool evict = false;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) < 0 ||
        (rc = cordon_body(r, &reason, &evict, err)) < 0)
        return rc;
    if (evict && !cordon)
        rc = err_set(err, -EINVAL, "field 'evict': only a cordon can evict");
    else
        rc = nodes_cordon(sd, node, r->who.user, cordon, reason, evict);
    free(reason);
    if (rc < 0)
        return rc;
    return reply_node(sd, r, node, resp);
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

/* {"version":1,"reason":"..."} (reason required) and, for an ack,
 * "finding"; the strings are the caller's to free. */
static int
reason_body(const struct api_req *r, bool ack, char **reason, char **finding,
    struct err *err)
{
    static const char *const keys[] = { "version", "reason", "finding", NULL };
    cJSON *json = NULL;
    int rc;

    *reason = *finding = NULL;
    if ((rc = api_req_body(r, &json, err)) == 0 &&
        (rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0 &&
        (rc = jsonx_get_str(json, "reason", true, API_REASON_MAX, reason,
             err)) == 0 &&
        (rc = jsonx_get_str(json, "finding", ack,
             PROTO_CHECK_CODE_MAX + PROTO_CHECK_SCOPE_MAX + 1, finding, err)) ==
            0 &&
        **reason == '\0')
        rc = err_set(err, -EINVAL, "field 'reason': say why");
    if (rc == 0 && !ack && *finding)
        rc = err_set(err, -EINVAL, "field 'finding': only an ack names one");
    cJSON_Delete(json);
    return rc;
}

int
api_nodes_drain(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node *node;
    char *reason = NULL, *finding = NULL;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) == 0 &&
        (rc = reason_body(r, false, &reason, &finding, err)) == 0)
        rc = nodes_drain(sd, node, r->who.user, reason);
    free(reason);
    free(finding);
    if (rc < 0)
        return rc;
    return reply_node(sd, r, node, resp);
}

int
api_nodes_health_ack(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node *node;
    char *reason = NULL, *finding = NULL;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) == 0 &&
        (rc = reason_body(r, true, &reason, &finding, err)) == 0) {
        rc = nodes_health_ack(sd, node, r->who.user, finding, reason);
        if (rc == -ENOENT)
            rc = err_set(err, -ENOENT, "node %s has no open finding '%.300s'",
                node->name, finding);
    }
    free(reason);
    free(finding);
    if (rc < 0)
        return rc;
    return reply_node(sd, r, node, resp);
}

/* No body, or {"version":1,"force":true|false}. */
static int
remove_body(const struct api_req *r, bool *force, struct err *err)
{
    static const char *const keys[] = { "version", "force", NULL };
    cJSON *json = NULL;
    int rc;

    *force = false;
    if (r->http->body_len == 0)
        return 0;
    if ((rc = api_req_body(r, &json, err)) == 0 &&
        (rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0)
        rc = jsonx_get_bool(json, "force", false, force, err);
    cJSON_Delete(json);
    return rc;
}

/* 409 node_busy: which jobs hold node. */
static void
reply_busy(const struct node *node, struct http_resp *resp)
{
    cJSON *jobs = api_view_node_jobs(node);
    char *list = jsonx_print(jobs);

    http_resp_error(resp, 409, "node_busy",
        "node %s is held by jobs %s; wait for them, cancel them, or remove "
        "it with \"force\": true (they fail over as evicted)",
        node->name, list);
    free(list);
    cJSON_Delete(jobs);
}

int
api_nodes_remove(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct node *node;
    char name[PROTO_NODE_NAME_MAX + 1];
    bool force, pending;
    cJSON *o;
    int rc;

    if ((rc = node_find(sd, r, &node, err)) < 0 ||
        (rc = remove_body(r, &force, err)) < 0)
        return rc;
    snprintf(name, sizeof(name), "%s", node->name);
    rc = nodes_remove(sd, node, r->who.user, force, &pending);
    if (rc == -EBUSY) {
        reply_busy(node, resp);
        return 0;
    }
    if (rc < 0)
        return rc;
    if (pending) {
        http_resp_json(resp, 202, api_view_node(node));
        return 0;
    }
    o = cJSON_CreateObject();
    jsonx_add_str(o, "name", name);
    cJSON_AddTrueToObject(o, "removed");
    http_resp_json(resp, 200, o);
    return 0;
}
