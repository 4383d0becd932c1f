/*
 * api_tokens.c - health, whoami and bearer tokens (api_tokens.h)
 */
#include "scheduler/api_tokens.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"
#include "version.h"

int
api_health_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "status", "ok");
    jsonx_add_str(o, "version", LOCKSTEP_VERSION);
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_whoami_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "user", r->who.user);
    jsonx_add_str(o, "role", r->who.operator? "operator" : "user");
    http_resp_json(resp, 200, o);
    return 0;
}

/* {"version":1,"user":"...","role":"user|operator"}; caller frees. */
static int
token_body(const struct api_req *r, char **user, char **role, struct err *err)
{
    static const char *const keys[] = { "version", "user", "role", NULL };
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0 ||
        (rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_str(json, "user", true, AUTH_USER_MAX, user, err)) <
            0 ||
        (rc = jsonx_get_str(json, "role", false, 16, role, err)) < 0) {
        cJSON_Delete(json);
        return rc;
    }
    cJSON_Delete(json);
    if (!proto_valid_name(*user, AUTH_USER_MAX))
        return err_set(err, -EINVAL,
            "field 'user': '%.40s' is not a valid "
            "user name",
            *user);
    if (*role == NULL)
        *role = xstrdup("user");
    if (strcmp(*role, "user") != 0 && strcmp(*role, "operator") != 0)
        return err_set(err, -EINVAL,
            "field 'role': must be \"user\" or \"operator\", got '%s'", *role);
    return 0;
}

int
api_tokens_create(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char *user = NULL, *role = NULL, *token = NULL;
    cJSON *o;
    int rc;

    if ((rc = token_body(r, &user, &role, err)) == 0 &&
        (rc = auth_token_create(sd, user, role, r->who.user, &token, err)) ==
            0) {
        o = cJSON_CreateObject();
        jsonx_add_str(o, "token", token);
        jsonx_add_str(o, "user", user);
        jsonx_add_str(o, "role", role);
        http_resp_json(resp, 201, o);
        explicit_bzero(token, strlen(token));
    }
    free(token);
    free(user);
    free(role);
    return rc;
}
