/*
 * api_tokens.c - health, whoami and bearer tokens
 *
 * Tokens are shown once, at creation; only their SHA-256 is stored, so a
 * stolen database does not hand out credentials.
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cred.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
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
    jsonx_add_str(o, "role", r->who.operator ? "operator" : "user");
    http_resp_json(resp, 200, o);
    return 0;
}

int
api_tokens_create(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    static const char *const keys[] = { "version", "user", "role", NULL };
    char hash[CRED_HEX_LEN + 1];
    char *user = NULL, *role = NULL, *token = NULL;
    char subject[API_USER_MAX + 8];
    cJSON *json = NULL, *o, *detail;
    int rc;

    if ((rc = api_body_json(r->http, &json, err)) < 0 ||
        (rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_str(json, "user", true, API_USER_MAX, &user,
             err)) < 0 ||
        (rc = jsonx_get_str(json, "role", false, 16, &role, err)) < 0)
        goto out;
    if (!proto_valid_name(user, API_USER_MAX)) {
        rc = err_set(err, -EINVAL, "field 'user': '%.40s' is not a valid "
            "user name", user);
        goto out;
    }
    if (role == NULL)
        role = xstrdup("user");
    if (strcmp(role, "user") != 0 && strcmp(role, "operator") != 0) {
        rc = err_set(err, -EINVAL,
            "field 'role': must be \"user\" or \"operator\", got '%s'", role);
        goto out;
    }
    token = cred_token_new();
    if (token == NULL) {
        rc = err_set(err, -EIO, "cannot generate a token");
        goto out;
    }
    cred_sha256_hex(token, hash);
    rc = db_token_insert(sd->db, hash, user, role, timeid_now_ms());
    if (rc < 0) {
        schedd_db_error(sd, rc);
        goto out;
    }
    snprintf(subject, sizeof(subject), "user/%s", user);
    detail = cJSON_CreateObject();
    jsonx_add_str(detail, "role", role);
    rc = schedd_event(sd, r->who.user, subject, "token_created", detail);
    if (rc < 0)
        goto out;
    log_info("token created user=%s role=%s by=%s", user, role, r->who.user);
    o = cJSON_CreateObject();
    jsonx_add_str(o, "token", token);
    jsonx_add_str(o, "user", user);
    jsonx_add_str(o, "role", role);
    http_resp_json(resp, 201, o);
out:
    if (token)
        explicit_bzero(token, strlen(token));
    free(token);
    free(user);
    free(role);
    cJSON_Delete(json);
    return rc;
}
