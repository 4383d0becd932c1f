/*
 * auth.c - request identity: peer credentials, bearer tokens, agent MACs
 *
 * Nothing secret is compared with strcmp: token hashes are looked up by
 * value (the hash, not the token, is the key, so timing reveals nothing
 * useful) and agent MACs go through cred_equal().
 *
 * An agent request is checked in this order: the credential's form, its
 * MAC (under the node's key of the current cluster secret, then of the
 * previous one), then its time and its nonce. The MAC comes first so that
 * nothing unauthenticated reaches the nonce table or hears the clock.
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
#include "common/leaseping.h"
#include "common/log.h"
#include "common/names.h"
#include "common/proto.h"
#include "common/timeid.h"
#include "common/xalloc.h"
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
token_usable(const struct db_token *t, int64_t now, struct auth_ident *who,
    struct err *err)
{
    switch (cred_token_state(t->expires_ms, t->revoked_ms, now)) {
    case CRED_TOKEN_REVOKED:
        who->refused = REFUSAL_TOKEN_REVOKED;
        return err_set(err, -EACCES,
            "token %lld (%s..., user %s) was revoked; ask an operator for "
            "a new one",
            (long long)t->id, t->prefix, t->user);
    case CRED_TOKEN_EXPIRED:
        who->refused = REFUSAL_TOKEN_EXPIRED;
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
    if (rc == -ENOENT) {
        who->refused = REFUSAL_UNKNOWN_TOKEN;
        return err_set(err, -EACCES, "unknown token");
    }
    if (rc < 0)
        return err_set(err, rc, "cannot look up the token");
    /* Who it claims to be: the user's record of the refusal. */
    snprintf(who->user, sizeof(who->user), "%s", t.user);
    who->token_id = t.id;
    if ((rc = token_usable(&t, now, who, err)) == 0 &&
        cred_token_touch_due(t.last_used_ms, now))
        rc = schedd_db_check(sd, db_token_used(sd->db, t.id, now));
    if (rc == 0)
        who->operator= strcmp(t.role, "operator") == 0 ||
            schedd_is_operator_name(sd, t.user);
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
    if (token == NULL || *token == '\0') {
        who->refused = REFUSAL_NO_CREDENTIAL;
        return err_set(err, -EACCES,
            "this endpoint needs 'Authorization: Bearer <token>'");
    }
    return auth_bearer(sd, token, who, err);
}

static const char *const auth_key_names[] = {
    [AUTH_KEY_CURRENT] = "current",
    [AUTH_KEY_PREVIOUS] = "previous",
    [AUTH_KEY_LEGACY] = "legacy",
};

const char *
auth_agent_key_str(enum auth_agent_key k)
{
    return names_str(auth_key_names, AUTH_KEY_N, (int)k, "unknown");
}

/* The agent request was signed with key k: count it, and say so at most
 * once a minute when it is not the current key (a rotation or an upgrade
 * under way, docs/operations.md). */
static void
auth_agent_used(struct schedd *sd, enum auth_agent_key k, const char *node)
{
    int64_t now = timeid_mono_ms();

    sd->agent_auth_used[k]++;
    if (k == AUTH_KEY_CURRENT || (sd->agent_auth_logged_ms[k] != 0 &&
                                     now - sd->agent_auth_logged_ms[k] < 60000))
        return;
    sd->agent_auth_logged_ms[k] = now;
    log_notice("node %s signs with %s (%llu such requests so far)", node,
        k == AUTH_KEY_PREVIOUS ? "a key of the previous cluster secret"
                               : "the static credential (agent_auth_legacy)",
        (unsigned long long)sd->agent_auth_used[k]);
}

/* The static credential of before: accepted only with agent_auth_legacy
 * (an upgrade under way), compared in constant time. */
static int
auth_agent_legacy(struct schedd *sd, const struct cred_agent_cred *c,
    struct auth_ident *who, struct err *err)
{
    char mac[CRED_HEX_LEN + 1];
    bool ok = false;

    if (!sd->agent_auth_legacy) {
        who->refused = REFUSAL_LEGACY;
        return err_set(err, -EACCES,
            "node '%s' sent the static agent credential of before per-request "
            "MACs: upgrade its agent (or set agent_auth_legacy = true on the "
            "scheduler for the upgrade)",
            c->node);
    }
    cred_agent_mac(sd->secret, sd->secret_len, c->node, mac);
    ok = cred_equal(mac, c->mac);
    if (!ok && sd->secret_prev != NULL) {
        cred_agent_mac(sd->secret_prev, sd->secret_prev_len, c->node, mac);
        ok = cred_equal(mac, c->mac);
    }
    explicit_bzero(mac, sizeof(mac));
    if (!ok) {
        who->refused = REFUSAL_BAD_MAC;
        return err_set(err, -EACCES, "bad agent credential for node '%s'",
            c->node);
    }
    auth_agent_used(sd, AUTH_KEY_LEGACY, c->node);
    return 0;
}

void
auth_node_keys(const struct schedd *sd, struct node *node)
{
    if (node->key_gen == sd->secret_gen)
        return;
    cred_node_key(sd->secret, sd->secret_len, node->name, node->node_key);
    cred_mac_key_destroy(node->lease_mac);
    node->lease_mac = leaseping_key_create(node->node_key);
    node->key_gen = sd->secret_gen;
}

/* Whether c's MAC is right for req under the node key key. */
static bool
auth_agent_mac_ok(const unsigned char *key, const struct http_req *req,
    const struct cred_agent_cred *c, const char *target)
{
    char mac[CRED_HEX_LEN + 1];
    struct cred_agent_req r = { .node = c->node,
        .method = req->method,
        .target = target,
        .body = req->body,
        .body_len = req->body_len,
        .ts_ms = c->ts_ms,
        .nonce = c->nonce };

    cred_agent_req_mac(key, &r, mac);
    return cred_equal(mac, c->mac);
}

/* Which key signed the request, or -EACCES. */
static int
auth_agent_verify(struct schedd *sd, const struct http_req *req,
    const struct cred_agent_cred *c, struct auth_ident *who, struct err *err)
{
    char *target = req->query && req->query[0]
                       ? xasprintf("%s?%s", req->path, req->query)
                       : xstrdup(req->path);
    struct node *node = node_table_find(&sd->nodes, c->node);
    unsigned char key[CRED_KEY_LEN];
    int rc = -EACCES;

    /* A known node's key of the current secret is kept with it. */
    if (node != NULL) {
        auth_node_keys(sd, node);
        memcpy(key, node->node_key, sizeof(key));
    } else {
        cred_node_key(sd->secret, sd->secret_len, c->node, key);
    }
    if (auth_agent_mac_ok(key, req, c, target)) {
        rc = AUTH_KEY_CURRENT;
    } else if (sd->secret_prev != NULL) {
        cred_node_key(sd->secret_prev, sd->secret_prev_len, c->node, key);
        if (auth_agent_mac_ok(key, req, c, target))
            rc = AUTH_KEY_PREVIOUS;
    }
    explicit_bzero(key, sizeof(key));
    free(target);
    if (rc < 0) {
        who->refused = REFUSAL_BAD_MAC;
        return err_set(err, -EACCES,
            "bad agent credential for node '%s' (signed with another node's "
            "key, a key of a retired cluster secret, or over another "
            "request)",
            c->node);
    }
    return rc;
}

/* The request's time within the window, and the request not seen. */
static int
auth_agent_fresh(struct schedd *sd, const struct cred_agent_cred *c,
    struct auth_ident *who, struct err *err)
{
    int64_t now = timeid_now_ms();
    int win = sd->agent_auth_window_ms;
    unsigned char key[NONCES_KEY_LEN];
    char when[32];
    int rc;

    who->skew_ms = c->ts_ms - now;
    if (who->skew_ms > win || who->skew_ms < -win) {
        who->refused = REFUSAL_CLOCK_SKEW;
        return err_set(err, -EACCES,
            "the clock of node '%s' is %.1f s %s the scheduler's (%s); the "
            "limit is %d s: fix the node's clock (NTP)",
            c->node, (double)llabs(who->skew_ms) / 1000.0,
            who->skew_ms > 0 ? "ahead of" : "behind",
            timeid_fmt(now, when, sizeof(when)), win / 1000);
    }
    /* The MAC covers the nonce: it names the request. */
    cred_from_hex(c->mac, key, sizeof(key));
    rc = nonces_add(&sd->nonces, key, c->ts_ms + win, now);
    if (rc == -EEXIST) {
        who->refused = REFUSAL_REPLAY;
        return err_set(err, -EACCES,
            "replayed agent request of node '%s': this credential was used "
            "already (each request needs a new nonce)",
            c->node);
    }
    if (rc == -ENOSPC) {
        who->refused = REFUSAL_REPLAY_FULL;
        return err_set(err, -EAGAIN,
            "too many agent requests within %d s (%zu remembered); retry",
            win / 1000, nonces_count(&sd->nonces));
    }
    return 0;
}

int
auth_agent(struct schedd *sd, const struct http_req *req,
    struct auth_ident *who, struct err *err)
{
    struct cred_agent_cred c;
    const char *cred;
    int rc;

    memset(who, 0, sizeof(*who));
    cred = auth_scheme(req->authorization, "Agent");
    if (cred == NULL) {
        who->refused = REFUSAL_NO_CREDENTIAL;
        return err_set(err, -EACCES,
            "agent endpoints need 'Authorization: Agent "
            "<node>:<ts_ms>:<nonce>:<mac>'");
    }
    rc = cred_agent_parse(cred, &c);
    snprintf(who->node, sizeof(who->node), "%s", c.node);
    if (rc == -EPROTO) {
        rc = auth_agent_legacy(sd, &c, who, err);
    } else if (rc < 0) {
        who->refused = REFUSAL_BAD_CREDENTIAL;
        return err_set(err, -EACCES,
            "malformed agent credential: expected 'Agent "
            "<node>:<ts_ms>:<nonce>:<mac>' (docs/api.md \"Agent "
            "credentials\")");
    } else if ((rc = auth_agent_verify(sd, req, &c, who, err)) >= 0) {
        enum auth_agent_key k = (enum auth_agent_key)rc;

        if ((rc = auth_agent_fresh(sd, &c, who, err)) == 0)
            auth_agent_used(sd, k, c.node);
    }
    if (rc < 0)
        return rc;
    who->agent = true;
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
