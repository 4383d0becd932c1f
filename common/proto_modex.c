/*
 * proto_modex.c - the direct modex requests and replies the agents relay
 * through the scheduler (proto.h; docs/api.md POST /v1/agent/modex)
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

#define PROTO_MODEX_ERROR_MAX 1024

void
proto_modex_req_release(struct proto_modex_req *m)
{
    free(m->node);
    free(m->owner);
    memset(m, 0, sizeof(*m));
}

int
proto_modex_req_from_json(const cJSON *json, struct proto_modex_req *m,
    struct err *err)
{
    static const char *const keys[] = { "version", "job", "attempt", "node",
        "owner", "rank", "timeout_ms", NULL };
    int rc;

    memset(m, 0, sizeof(*m));
    m->timeout_ms = PROTO_COLL_TIMEOUT_MS;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &m->job,
             err)) ||
        (rc = proto_get_int(json, "attempt", true, 1, INT32_MAX, &m->attempt,
             err)) ||
        (rc = jsonx_get_str(json, "node", true, PROTO_NODE_NAME_MAX, &m->node,
             err)) ||
        (rc = jsonx_get_str(json, "owner", true, PROTO_NODE_NAME_MAX, &m->owner,
             err)) ||
        (rc = jsonx_get_int(json, "rank", true, 0, INT32_MAX, &m->rank, err)) ||
        (rc = jsonx_get_int(json, "timeout_ms", false, 1,
             PROTO_COLL_TIMEOUT_MAX_MS, &m->timeout_ms, err)))
        goto fail;
    if (!proto_valid_name(m->node, PROTO_NODE_NAME_MAX))
        rc = err_set(err, -EINVAL, "field 'node': bad node name");
    else if (!proto_valid_name(m->owner, PROTO_NODE_NAME_MAX))
        rc = err_set(err, -EINVAL, "field 'owner': bad node name");
    if (rc == 0)
        return 0;
fail:
    proto_modex_req_release(m);
    return rc;
}

cJSON *
proto_modex_req_to_json(const struct proto_modex_req *m)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "job", m->job);
    jsonx_add_int(o, "attempt", m->attempt);
    jsonx_add_str(o, "node", m->node);
    jsonx_add_str(o, "owner", m->owner);
    jsonx_add_int(o, "rank", m->rank);
    jsonx_add_int(o, "timeout_ms", m->timeout_ms);
    return o;
}

void
proto_modex_reply_release(struct proto_modex_reply *m)
{
    free(m->node);
    free(m->data);
    free(m->error);
    memset(m, 0, sizeof(*m));
}

int
proto_modex_reply_from_json(const cJSON *json, struct proto_modex_reply *m,
    struct err *err)
{
    static const char *const keys[] = { "version", "id", "node", "data",
        "error", NULL };
    char *text = NULL;
    int rc;

    memset(m, 0, sizeof(*m));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_int(json, "id", true, 1, INT64_MAX, &m->id, err)) ||
        (rc = jsonx_get_str(json, "node", true, PROTO_NODE_NAME_MAX, &m->node,
             err)) ||
        (rc = jsonx_get_str(json, "data", false,
             PROTO_COLL_DATA_MAX / 3 * 4 + 4, &text, err)) ||
        (rc = jsonx_get_str(json, "error", false, PROTO_MODEX_ERROR_MAX,
             &m->error, err)))
        goto fail;
    if ((text == NULL) == (m->error == NULL)) {
        rc = err_set(err, -EINVAL,
            "exactly one of fields 'data' and 'error' "
            "must be given");
        goto fail;
    }
    if (text != NULL && b64_decode(text, &m->data, &m->len) < 0) {
        rc = err_set(err, -EINVAL, "field 'data': not base64");
        goto fail;
    }
    free(text);
    return 0;
fail:
    free(text);
    proto_modex_reply_release(m);
    return rc;
}

cJSON *
proto_modex_reply_to_json(const struct proto_modex_reply *m)
{
    cJSON *o = cJSON_CreateObject();
    char *text;

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "id", m->id);
    jsonx_add_str(o, "node", m->node);
    if (m->error != NULL) {
        jsonx_add_str(o, "error", m->error);
    } else {
        text = b64_encode(m->data, m->len);
        jsonx_add_str(o, "data", text);
        free(text);
    }
    return o;
}
