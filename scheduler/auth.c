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

/* Whether token t may be used at now; an expired or revoked one is
 * -EACCES naming it. */
static int
token_usable(const struct db_token *t, int64_t now, struct err *err)
{
    switch (cred_token_state(t->expires_ms, t->revoked_ms, now)) {
    case CRED_TOKEN_REVOKED:
        return err_set(err, -EACCES,
            "token %lld (%s..., user %s) was revoked; ask an operator for "
            "a new one",
            (long long)t->id, t->prefix, t->user);
    case CRED_TOKEN_EXPIRED:
        return err_set(err, -EACCES,
            "token %lld (%s..., user %s) expired %lld s ago; ask an "
            "operator for a new one",
            (long long)t->id, t->prefix, t->user,
            (long long)((now - t->expires_ms) / 1000));
    case CRED_TOKEN_VALID:
        break;
    }
    return 0;
}

/* The user of a bearer token: valid, not expired, not revoked; its
 * last-used time written at most once a minute (cred.h). */
static int
auth_bearer(struct schedd *sd, const char *token, struct auth_ident *who,
    struct err *err)
{
    char hash[CRED_HEX_LEN + 1];
    int64_t now = timeid_now_ms();
    struct db_token t;
    int rc;

    cred_sha256_hex(token, hash);
    rc = db_token_find(sd->db, hash, &t);
    if (rc == -ENOENT)
        return err_set(err, -EACCES, "unknown token");
    if (rc < 0)
        return err_set(err, rc, "cannot look up the token");
    if ((rc = token_usable(&t, now, err)) == 0 &&
        cred_token_touch_due(t.last_used_ms, now))
        rc = schedd_db_check(sd, db_token_used(sd->db, t.id, now));
    if (rc == 0) {
        snprintf(who->user, sizeof(who->user), "%s", t.user);
        who->operator= strcmp(t.role, "operator") == 0 ||
            schedd_is_operator_name(sd, t.user);
        who->token_id = t.id;
    }
    db_token_release(&t);
    return rc;
}

int
auth_user(struct schedd *sd, const struct http_req *req, struct auth_ident *who,
    struct err *err)
{
    const char *token;

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
    return auth_bearer(sd, token, who, err);
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
auth_token_create(struct schedd *sd, const struct auth_token_new *n,
    char **token, int64_t *id, struct err *err)
{
    char hash[CRED_HEX_LEN + 1], prefix[AUTH_TOKEN_PREFIX_LEN + 1];
    char subject[AUTH_USER_MAX + 8];
    int64_t now = timeid_now_ms();
    struct db_token t = { .user = (char *)n->user,
        .role = (char *)n->role,
        .created_by = (char *)n->actor,
        .created_ms = now,
        .hash = hash,
        .prefix = prefix,
        .expires_ms = n->ttl_ms > 0 ? now + n->ttl_ms : 0 };
    cJSON *detail;
    int rc;

    *token = cred_token_new();
    if (*token == NULL)
        return err_set(err, -EIO, "cannot generate a token");
    cred_sha256_hex(*token, hash);
    snprintf(prefix, sizeof(prefix), "%s", *token);
    rc = schedd_db_check(sd, db_token_add(sd->db, &t, id));
    if (rc == 0) {
        snprintf(subject, sizeof(subject), "user/%s", n->user);
        detail = cJSON_CreateObject();
        jsonx_add_int(detail, "id", *id);
        jsonx_add_str(detail, "role", n->role);
        jsonx_add_int(detail, "expires_ms", t.expires_ms);
        rc = schedd_event(sd, n->actor, subject, "token_created", detail);
    }
    if (rc < 0) {
        explicit_bzero(*token, strlen(*token));
        free(*token);
        *token = NULL;
        return rc;
    }
    log_info("token %lld created user=%s role=%s by=%s expires_ms=%lld",
        (long long)*id, n->user, n->role, n->actor, (long long)t.expires_ms);
    return 0;
}

int
auth_token_revoke(struct schedd *sd, const struct auth_ident *who, int64_t id,
    struct err *err)
{
    char subject[AUTH_USER_MAX + 8];
    struct db_token t;
    cJSON *detail;
    int rc = db_token_get(sd->db, id, &t);

    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "no token %lld", (long long)id);
    if (rc < 0)
        return rc;
    if (!who->operator&& strcmp(t.user, who->user) != 0)
        rc = err_set(err, -EPERM,
            "token %lld belongs to another user: revoking it needs the "
            "operator role",
            (long long)id);
    else if (t.revoked_ms == 0 &&
             (rc = schedd_db_check(sd,
                  db_token_revoke(sd->db, id, timeid_now_ms()))) == 0) {
        snprintf(subject, sizeof(subject), "user/%s", t.user);
        detail = cJSON_CreateObject();
        jsonx_add_int(detail, "id", id);
        rc = schedd_event(sd, who->user, subject, "token_revoked", detail);
        log_info("token %lld of %s revoked by %s", (long long)id, t.user,
            who->user);
    }
    db_token_release(&t);
    return rc;
}
