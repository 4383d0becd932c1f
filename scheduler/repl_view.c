/*
 * repl_view.c - what a replica shows (GET /v1/health's replication
 * fields, GET /v1/replicas, the leader's URL for not_leader) and the
 * membership changes an operator makes (repl.h)
 */
#include "scheduler/repl.h"
#include "scheduler/repl_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/schedd.h"

/* ---- what the API shows
 * --------------------------------------------------------- */

const char *
repl_leader_url(struct repl *r, char *buf, size_t len)
{
    raft_id id = 0;
    const char *address = NULL;

    raft_leader(&r->raft, &id, &address);
    if (id == 0 || id == r->id)
        return NULL;
    if (db_txn_is_open(r->sd->db) ||
        db_replica_url(r->sd->db, id, buf, len) < 0 || buf[0] == '\0')
        return NULL;
    return buf;
}

static const char *
repl_state_str(int state)
{
    switch (state) {
    case RAFT_FOLLOWER:
        return "follower";
    case RAFT_CANDIDATE:
        return "candidate";
    case RAFT_LEADER:
        return "leader";
    default:
        return "unavailable";
    }
}

void
repl_health(struct repl *r, cJSON *o)
{
    raft_id id = 0;
    const char *address = NULL;
    char url[512];
    const char *leader;

    raft_leader(&r->raft, &id, &address);
    jsonx_add_str(o, "role", repl_state_str(raft_state(&r->raft)));
    cJSON_AddBoolToObject(o, "serving", repl_serving(r));
    jsonx_add_int(o, "replica_id", (int64_t)r->id);
    jsonx_add_int(o, "term", (int64_t)r->raft.current_term);
    jsonx_add_int(o, "applied", (int64_t)raft_last_applied(&r->raft));
    jsonx_add_int(o, "leader_id", (int64_t)id);
    if (id == r->id)
        leader = r->url;
    else
        leader = repl_leader_url(r, url, sizeof(url));
    if (leader)
        jsonx_add_str(o, "leader", leader);
    else
        cJSON_AddNullToObject(o, "leader");
}

static const char *
repl_role_str(int role)
{
    switch (role) {
    case RAFT_VOTER:
        return "voter";
    case RAFT_STANDBY:
        return "standby";
    default:
        return "spare";
    }
}

cJSON *
repl_members(struct repl *r)
{
    const struct raft_configuration *c = &r->raft.configuration;
    raft_index last = raft_last_index(&r->raft);
    cJSON *o = cJSON_CreateObject(), *list;
    char url[512];

    jsonx_add_int(o, "term", (int64_t)r->raft.current_term);
    jsonx_add_int(o, "leader_id", (int64_t)r->id);
    jsonx_add_int(o, "last_index", (int64_t)last);
    jsonx_add_int(o, "commit_index", (int64_t)r->raft.commit_index);
    list = cJSON_AddArrayToObject(o, "replicas");
    for (unsigned i = 0; i < c->n; i++) {
        const struct raft_server *s = &c->servers[i];
        cJSON *m = cJSON_CreateObject();
        raft_index match = last;

        jsonx_add_int(m, "id", (int64_t)s->id);
        jsonx_add_str(m, "address", s->address);
        jsonx_add_str(m, "role", repl_role_str(s->role));
        if (s->id == r->id) {
            jsonx_add_str(m, "state", "leader");
            jsonx_add_str(m, "url", r->url ? r->url : "");
        } else {
            if (r->raft.state == RAFT_LEADER && r->raft.leader_state.progress)
                match = r->raft.leader_state.progress[i].match_index;
            jsonx_add_str(m, "state",
                r->raft.leader_state.progress &&
                        r->raft.leader_state.progress[i].recent_recv
                    ? "follower"
                    : "follower (not heard this election timeout)");
            if (db_replica_url(r->sd->db, s->id, url, sizeof(url)) == 0)
                jsonx_add_str(m, "url", url);
            else
                jsonx_add_str(m, "url", "");
        }
        jsonx_add_int(m, "match_index", (int64_t)match);
        jsonx_add_int(m, "lag", (int64_t)(last - match));
        cJSON_AddItemToArray(list, m);
    }
    return o;
}

/* ---- membership
 * ---------------------------------------------------------------- */

struct repl_change {
    struct raft_change req;
    struct repl *r;
    uint64_t id;
    bool adding; /* raft_add done: raft_assign next */
    repl_change_fn *done;
    void *arg;
};

static bool
repl_member(const struct repl *r, uint64_t id)
{
    const struct raft_configuration *c = &r->raft.configuration;

    for (unsigned i = 0; i < c->n; i++) {
        if (c->servers[i].id == id)
            return true;
    }
    return false;
}

static void
repl_change_cb(struct raft_change *req, int status)
{
    struct repl_change *ch = req->data;
    struct repl *r = ch->r;
    char msg[RAFT_ERRMSG_BUF_SIZE + 64];
    int rc;

    if (status == 0 && ch->adding) {
        /* Added as a spare; a voter once it caught up (libraft's rounds). */
        ch->adding = false;
        rc = raft_assign(&r->raft, &ch->req, ch->id, RAFT_VOTER,
            repl_change_cb);
        if (rc == 0)
            return;
        status = rc;
    }
    if (status != 0) {
        snprintf(msg, sizeof(msg), "replica %" PRIu64 ": %s", ch->id,
            raft_strerror(status));
        log_warn("replica=%" PRIu64 " membership change failed: %s", r->id,
            msg);
        ch->done(ch->arg, status == RAFT_NOCONNECTION ? -ETIMEDOUT : -EIO, msg);
    } else {
        log_notice("replica=%" PRIu64 " membership changed: replica %" PRIu64
                   " %s",
            r->id, ch->id,
            repl_member(r, ch->id) ? "is a voter" : "was removed");
        ch->done(ch->arg, 0, "");
    }
    free(ch);
}

static struct repl_change *
repl_change_new(struct repl *r, uint64_t id, repl_change_fn *done, void *arg)
{
    struct repl_change *ch = xcalloc(1, sizeof(*ch));

    ch->r = r;
    ch->id = id;
    ch->done = done;
    ch->arg = arg;
    ch->req.data = ch;
    return ch;
}

static int
repl_change_check(struct repl *r, uint64_t id, struct err *err)
{
    if (!repl_serving(r))
        return err_set(err, -EPERM, "this replica does not lead");
    if (id == 0 || id > 65535)
        return err_set(err, -EINVAL,
            "invalid field 'id': a replica id is 1 to 65535");
    if (r->raft.leader_state.change != NULL ||
        r->raft.configuration_uncommitted_index != 0)
        return err_set(err, -EBUSY,
            "another membership change is under way; retry once it is done");
    return 0;
}

int
repl_add(struct repl *r, uint64_t id, const char *address, const char *url,
    repl_change_fn *done, void *arg, struct err *err)
{
    struct repl_change *ch;
    char host[256];
    int rc;

    if ((rc = repl_change_check(r, id, err)) < 0)
        return rc;
    if (repl_member(r, id))
        return err_set(err, -EEXIST, "replica %" PRIu64 " is a member already",
            id);
    if (strchr(address, ':') == NULL || address[0] == ':' ||
        sscanf(address, "%255[^:]:%*d", host) != 1)
        return err_set(err, -EINVAL,
            "invalid field 'address': '%s' is not HOST:PORT", address);
    if (url && url[0] && strncmp(url, "http://", 7) != 0 &&
        strncmp(url, "https://", 8) != 0)
        return err_set(err, -EINVAL,
            "invalid field 'url': '%s' is not an http:// or https:// URL", url);
    if (url && url[0] &&
        schedd_db_check(r->sd, db_replica_set(r->sd->db, id, address, url, 0)) <
            0)
        return err_set(err, -EIO, "cannot record replica %" PRIu64 "'s URL",
            id);
    ch = repl_change_new(r, id, done, arg);
    ch->adding = true;
    rc = raft_add(&r->raft, &ch->req, id, address, repl_change_cb);
    if (rc != 0) {
        free(ch);
        return err_set(err, rc == RAFT_DUPLICATEADDRESS ? -EEXIST : -EIO,
            "cannot add replica %" PRIu64 " at %s: %s", id, address,
            raft_strerror(rc));
    }
    log_notice("replica=%" PRIu64 " adding replica %" PRIu64 " at %s", r->id,
        id, address);
    return 0;
}

int
repl_remove(struct repl *r, uint64_t id, repl_change_fn *done, void *arg,
    struct err *err)
{
    struct repl_change *ch;
    int rc;

    if ((rc = repl_change_check(r, id, err)) < 0)
        return rc;
    if (!repl_member(r, id))
        return err_set(err, -ENOENT, "replica %" PRIu64 " is not a member", id);
    if (id == r->id)
        return err_set(err, -EINVAL,
            "replica %" PRIu64 " leads and cannot remove itself: stop it "
            "(another replica then leads) and remove it there",
            id);
    ch = repl_change_new(r, id, done, arg);
    rc = raft_remove(&r->raft, &ch->req, id, repl_change_cb);
    if (rc != 0) {
        free(ch);
        return err_set(err, -EIO, "cannot remove replica %" PRIu64 ": %s", id,
            raft_strerror(rc));
    }
    log_notice("replica=%" PRIu64 " removing replica %" PRIu64, r->id, id);
    return 0;
}
