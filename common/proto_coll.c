/*
 * proto_coll.c - an agent's contribution to a relayed PMIx collective
 * (proto.h; docs/api.md POST /v1/agent/collective)
 *
 * The blob travels as base64 (it is libpmix's packed bytes).
 */
#include "common/proto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/b64.h"
#include "common/jsonx.h"
#include "common/xalloc.h"
#include "proto_int.h"

void
proto_coll_req_release(struct proto_coll_req *c)
{
    free(c->id);
    free(c->node);
    xstrv_free(c->nodes, c->nnodes);
    free(c->data);
    memset(c, 0, sizeof(*c));
}

static int
coll_nodes_check(const struct proto_coll_req *c, struct err *err)
{
    if (!proto_valid_name(c->node, PROTO_NODE_NAME_MAX))
        return err_set(err, -EINVAL, "field 'node': bad node name");
    if (c->nnodes == 0)
        return err_set(err, -EINVAL, "field 'nodes': must not be empty");
    for (size_t k = 0; k < c->nnodes; k++) {
        if (!proto_valid_name(c->nodes[k], PROTO_NODE_NAME_MAX))
            return err_set(err, -EINVAL, "field 'nodes[%zu]': bad node name",
                k);
    }
    return 0;
}

int
proto_coll_req_from_json(const cJSON *json, struct proto_coll_req *c,
    struct err *err)
{
    static const char *const keys[] = { "version", "job", "attempt", "id",
        "node", "nodes", "data", "timeout_ms", NULL };
    char *text = NULL;
    int rc;

    memset(c, 0, sizeof(*c));
    c->timeout_ms = PROTO_COLL_TIMEOUT_MS;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &c->job,
             err)) ||
        (rc = proto_get_int(json, "attempt", true, 1, INT32_MAX, &c->attempt,
             err)) ||
        (rc = jsonx_get_str(json, "id", true, PROTO_COLL_ID_MAX, &c->id,
             err)) ||
        (rc = jsonx_get_str(json, "node", true, PROTO_NODE_NAME_MAX, &c->node,
             err)) ||
        (rc = jsonx_get_str_array(json, "nodes", true, PROTO_NODES_MAX,
             PROTO_NODE_NAME_MAX, &c->nodes, &c->nnodes, err)) ||
        (rc = jsonx_get_str(json, "data", true, PROTO_COLL_DATA_MAX / 3 * 4 + 4,
             &text, err)) ||
        (rc = jsonx_get_int(json, "timeout_ms", false, 1,
             PROTO_COLL_TIMEOUT_MAX_MS, &c->timeout_ms, err)) ||
        (rc = coll_nodes_check(c, err)))
        goto fail;
    if (b64_decode(text, &c->data, &c->len) < 0) {
        rc = err_set(err, -EINVAL, "field 'data': not base64");
        goto fail;
    }
    free(text);
    return 0;
fail:
    free(text);
    proto_coll_req_release(c);
    return rc;
}

cJSON *
proto_coll_req_to_json(const struct proto_coll_req *c)
{
    cJSON *o = cJSON_CreateObject();
    char *text = b64_encode(c->data, c->len);

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "job", c->job);
    jsonx_add_int(o, "attempt", c->attempt);
    jsonx_add_str(o, "id", c->id);
    jsonx_add_str(o, "node", c->node);
    jsonx_add_str_array(o, "nodes", c->nodes, c->nnodes);
    jsonx_add_str(o, "data", text);
    jsonx_add_int(o, "timeout_ms", c->timeout_ms);
    free(text);
    return o;
}
