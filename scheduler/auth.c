/*
 * auth.c - request identity: peer credentials, bearer tokens, agent MACs
 *
 * Nothing secret is compared with strcmp: token hashes are looked up by
 * value (the hash, not the token, is the key, so timing reveals nothing
 * useful) and agent MACs go through cred_equal().
 */
#include "scheduler/auth.h"

#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "common/cred.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/timeid.h"
#include "scheduler/db.h"

void
auth_uid_name(uid_t uid, char *buf, size_t len)
{
    struct passwd pw, *res = NULL;
    char tmp[4096];

    if (getpwuid_r(uid, &pw, tmp, sizeof(tmp), &res) == 0 && res &&
        res->pw_name && strlen(res->pw_name) < len)
        snprintf(buf, len, "%s", res->pw_name);
    else
        snprintf(buf, len, "uid%lu", (unsigned long)uid);
}

/* The credential after "<scheme> " in the Authorization header, or NULL. */
static const char *
auth_scheme(const char *header, const char *scheme)
{
    size_t n = strlen(scheme);

    if (header == NULL || strncasecmp(header, scheme, n) != 0 ||
        header[n] != ' ')
        return NULL;
    header += n;
    while (*header == ' ')
        header++;
    return header;
}

int
auth_user(struct schedd *sd, const struct http_req *req, struct auth_ident *who,
    struct err *err)
{
    char hash[CRED_HEX_LEN + 1];
    char *user = NULL, *role = NULL;
    const char *token;
    int rc;

    memset(who, 0, sizeof(*who));
    if (req->is_unix) {
        auth_uid_name(req->peer_uid, who->user, sizeof(who->user));
        who->operator= req->peer_uid == 0 || req->peer_uid == sd->self_uid ||
            schedd_is_operator_name(sd, who->user);
        return 0;
    }
    token = auth_scheme(req->authorization, "Bearer");
    if (token == NULL || *token == '\0')
        return err_set(err, -EACCES,
            "this endpoint needs 'Authorization: Bearer <token>'");
    cred_sha256_hex(token, hash);
    rc = db_token_lookup(sd->db, hash, &user, &role);
    if (rc == -ENOENT)
        return err_set(err, -EACCES, "unknown token");
    if (rc < 0)
        return err_set(err, rc, "cannot look up the token");
    snprintf(who->user, sizeof(who->user), "%s", user);
    who->operator= strcmp(role, "operator") == 0 ||
        schedd_is_operator_name(sd, user);
    free(user);
    free(role);
    return 0;
}

int
auth_agent(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err)
{
    char mac[CRED_HEX_LEN + 1];
    char node[PROTO_NODE_NAME_MAX + 1];
    const char *cred, *colon;
    size_t n;

    memset(who, 0, sizeof(*who));
    cred = auth_scheme(req->authorization, "Agent");
    if (cred == NULL)
        return err_set(err, -EACCES,
            "agent endpoints need 'Authorization: Agent <node>:<mac>'");
    colon = strchr(cred, ':');
    n = colon ? (size_t)(colon - cred) : 0;
    if (colon == NULL || n == 0 || n > PROTO_NODE_NAME_MAX)
        return err_set(err, -EACCES, "malformed agent credential");
    memcpy(node, cred, n);
    node[n] = '\0';
    if (!proto_valid_name(node, PROTO_NODE_NAME_MAX))
        return err_set(err, -EACCES, "malformed agent credential");
    cred_agent_mac(sd->secret, sd->secret_len, node, mac);
    if (!cred_equal(mac, colon + 1))
        return err_set(err, -EACCES, "bad agent credential for node '%s'",
            node);
    who->agent = true;
    snprintf(who->node, sizeof(who->node), "%s", node);
    return 0;
}

int
auth_token_create(struct schedd *sd, const char *user, const char *role,
    const char *actor, char **token, struct err *err)
{
    char hash[CRED_HEX_LEN + 1];
    char subject[AUTH_USER_MAX + 8];
    cJSON *detail;
    int rc;

    *token = cred_token_new();
    if (*token == NULL)
        return err_set(err, -EIO, "cannot generate a token");
    cred_sha256_hex(*token, hash);
    rc = schedd_db_check(sd,
        db_token_insert(sd->db, hash, user, role, timeid_now_ms()));
    if (rc == 0) {
        snprintf(subject, sizeof(subject), "user/%s", user);
        detail = cJSON_CreateObject();
        jsonx_add_str(detail, "role", role);
        rc = schedd_event(sd, actor, subject, "token_created", detail);
    }
    if (rc < 0) {
        explicit_bzero(*token, strlen(*token));
        free(*token);
        *token = NULL;
        return rc;
    }
    log_info("token created user=%s role=%s by=%s", user, role, actor);
    return 0;
}
