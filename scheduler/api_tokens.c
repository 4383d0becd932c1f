/*
 * api_tokens.c - health, whoami and bearer tokens (api_tokens.h)
 */
#include "scheduler/api_tokens.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cred.h"
#include "common/jsonx.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/api_obs.h"
#include "scheduler/buildinfo.h"
#include "scheduler/db.h"
#include "scheduler/repl.h"

int
api_health_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "status", "ok");
    jsonx_add_str(o, "version", buildinfo_version());
    /* A replica says which it is and where the leader is. */
    if (sd->repl)
        repl_health(sd->repl, o);
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
/* A token's lifetime when POST /v1/tokens gives none (docs/api.md):
 * 30 days, long enough for a month of campaigns, short enough that a
 * forgotten or leaked token dies by itself. The longest: 10 years. */
#define TOKEN_TTL_DEFAULT_S (30LL * 86400)
#define TOKEN_TTL_MAX_S (3650LL * 86400)

/* {"version":1,"user":U,"role":R,"ttl_s":S}: n's fields (user and role
 * allocated: caller frees them). */
static int
token_body(const struct api_req *r, struct auth_token_new *n, char **user,
    char **role, struct err *err)
{
    static const char *const keys[] = { "version", "user", "role", "ttl_s",
        NULL };
    int64_t ttl_s = TOKEN_TTL_DEFAULT_S;
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) < 0 ||
        (rc = jsonx_check_keys(json, keys, err)) < 0 ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) < 0 ||
        (rc = jsonx_get_str(json, "user", true, AUTH_USER_MAX, user, err)) <
            0 ||
        (rc = jsonx_get_str(json, "role", false, 16, role, err)) < 0 ||
        (rc = jsonx_get_int(json, "ttl_s", false, 0, TOKEN_TTL_MAX_S, &ttl_s,
             err)) < 0) {
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
    n->user = *user;
    n->role = *role;
    n->actor = r->who.user;
    n->ttl_ms = ttl_s * 1000;
    return 0;
}

int
api_tokens_create(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char *user = NULL, *role = NULL, *token = NULL;
    struct auth_token_new n;
    int64_t id = 0;
    cJSON *o;
    int rc;

    if ((rc = token_body(r, &n, &user, &role, err)) == 0 &&
        (rc = auth_token_create(sd, &n, &token, &id, err)) == 0) {
        o = cJSON_CreateObject();
        jsonx_add_str(o, "token", token);
        jsonx_add_int(o, "id", id);
        jsonx_add_str(o, "user", user);
        jsonx_add_str(o, "role", role);
        jsonx_add_int(o, "expires_ms",
            n.ttl_ms > 0 ? timeid_now_ms() + n.ttl_ms : 0);
        http_resp_json(resp, 201, o);
        explicit_bzero(token, strlen(token));
    }
    free(token);
    free(user);
    free(role);
    return rc;
}

/* One token as GET /v1/tokens shows it: never its secret or hash. */
static int
token_add(const struct db_token *t, void *arg)
{
    cJSON *o = cJSON_CreateObject();
    int64_t now = timeid_now_ms();
    static const char *const states[] = { "valid", "expired", "revoked" };

    jsonx_add_int(o, "id", t->id);
    jsonx_add_str(o, "prefix", t->prefix);
    jsonx_add_str(o, "user", t->user);
    jsonx_add_str(o, "role", t->role);
    jsonx_add_str(o, "created_by", t->created_by);
    jsonx_add_int(o, "created_ms", t->created_ms);
    jsonx_add_int(o, "expires_ms", t->expires_ms);
    jsonx_add_int(o, "revoked_ms", t->revoked_ms);
    jsonx_add_int(o, "last_used_ms", t->last_used_ms);
    jsonx_add_str(o, "state",
        states[cred_token_state(t->expires_ms, t->revoked_ms, now)]);
    cJSON_AddItemToArray(arg, o);
    return 0;
}

int
api_tokens_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char user[AUTH_USER_MAX + 1];
    const char *filter = NULL;
    cJSON *arr;
    int rc;

    if (http_query_get(r->http, "user", user, sizeof(user)) && user[0])
        filter = user;
    if (!r->who.operator) {
        if (filter && strcmp(filter, r->who.user) != 0)
            return err_set(err, -EPERM,
                "only operators may list other users' tokens");
        filter = r->who.user;
    }
    arr = cJSON_CreateArray();
    if ((rc = db_tokens_foreach(sd->db, filter, token_add, arr)) < 0) {
        cJSON_Delete(arr);
        return rc;
    }
    http_resp_json(resp, 200, arr);
    return 0;
}

int
api_tokens_revoke(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    const char *s = r->arg;
    char *end = NULL;
    long long id;
    cJSON *o;
    int rc;

    errno = 0;
    id = s ? strtoll(s, &end, 10) : 0;
    if (s == NULL || *s < '0' || *s > '9' || errno != 0 || *end != '\0' ||
        id <= 0)
        return err_set(err, -ENOENT, "no token '%.40s'", s ? s : "");
    /* A refusal (403) is recorded by api.c, as every refusal is. */
    rc = auth_token_revoke(sd, &r->who, id, err);
    if (rc < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "id", id);
    cJSON_AddBoolToObject(o, "revoked", true);
    http_resp_json(resp, 200, o);
    return 0;
}
