/*
 * api_admin.c - GET /v1/admin/backup: the online backup; the replicas:
 * GET /v1/replicas, POST /v1/replicas (add one), POST
 * /v1/replicas/ID/remove
 *
 * The reply is the committed state as a database file (db_backup), read
 * while the scheduler goes on serving. Like every reply it is written
 * only after the iteration's commit; with replicas, only once everything
 * the leader wrote before it has a quorum, so a backup never holds state
 * a failover could undo.
 */
#include "scheduler/api_admin.h"

#include <errno.h>
#include <stdlib.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/repl.h"

int
api_admin_backup(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char *data = NULL;
    size_t len = 0;
    int rc;

    if ((rc = db_backup(sd->db, &data, &len, err)) < 0)
        return rc;
    resp->status = 200;
    resp->content_type = "application/vnd.sqlite3";
    sbuf_add(&resp->body, data, len);
    free(data);
    log_notice("backup taken by %s: %zu bytes", r->who.user, len);
    return 0;
}

int
api_replicas_list(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    (void)r;
    if (sd->repl == NULL)
        return err_set(err, -ENOENT,
            "this scheduler has no replicas (replica_id is 0)");
    http_resp_json(resp, 200, repl_members(sd->repl));
    return 0;
}

/* A membership change in flight: its deferred reply. */
struct admin_change {
    struct schedd *sd;
    struct http_deferred *d; /* NULL once its client went away */
};

static void
admin_change_cancel_cb(struct http_deferred *d, void *arg)
{
    struct admin_change *c = arg;

    (void)d;
    c->d = NULL;
}

static void
admin_change_done(void *arg, int rc, const char *msg)
{
    struct admin_change *c = arg;
    struct http_resp *resp;
    struct err err;

    if (c->d != NULL) {
        resp = http_deferred_resp(c->d);
        if (rc == 0) {
            http_resp_json(resp, 200, repl_members(c->sd->repl));
        } else {
            err_set(&err, rc, "%s", msg);
            api_req_error(resp, rc == -ETIMEDOUT ? -EAGAIN : rc, &err);
        }
        http_deferred_finish(c->d);
    }
    free(c);
}

/* {"version":1,"id":N,"address":"HOST:PORT","url":"http://..."}. */
static int
admin_add_body(const struct api_req *r, int64_t *id, char **address, char **url,
    struct err *err)
{
    static const char *const keys[] = { "version", "id", "address", "url",
        NULL };
    cJSON *json = NULL;
    int rc;

    if ((rc = api_req_body(r, &json, err)) == 0 &&
        (rc = jsonx_check_keys(json, keys, err)) == 0 &&
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) == 0 &&
        (rc = jsonx_get_int(json, "id", true, 1, 65535, id, err)) == 0 &&
        (rc = jsonx_get_str(json, "address", true, 255, address, err)) == 0)
        rc = jsonx_get_str(json, "url", false, 1023, url, err);
    cJSON_Delete(json);
    return rc;
}

int
api_replicas_add(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct admin_change *c;
    char *address = NULL, *url = NULL;
    int64_t id = 0;
    int rc;

    if (sd->repl == NULL)
        return err_set(err, -ENOENT,
            "this scheduler has no replicas (replica_id is 0)");
    if ((rc = admin_add_body(r, &id, &address, &url, err)) == 0) {
        c = xcalloc(1, sizeof(*c));
        c->sd = sd;
        rc = repl_add(sd->repl, (uint64_t)id, address, url, admin_change_done,
            c, err);
        if (rc == 0)
            c->d = http_resp_defer(resp, admin_change_cancel_cb, c);
        else
            free(c);
    }
    if (rc == 0)
        log_notice("replica %lld at %s added by %s", (long long)id, address,
            r->who.user);
    free(address);
    free(url);
    return rc;
}

int
api_replicas_remove(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct admin_change *c;
    char *end = NULL;
    unsigned long long id;
    int rc;

    if (sd->repl == NULL)
        return err_set(err, -ENOENT,
            "this scheduler has no replicas (replica_id is 0)");
    errno = 0;
    id = strtoull(r->arg, &end, 10);
    if (errno != 0 || *end != '\0' || id == 0)
        return err_set(err, -ENOENT, "no such replica: '%s'", r->arg);
    c = xcalloc(1, sizeof(*c));
    c->sd = sd;
    if ((rc = repl_remove(sd->repl, id, admin_change_done, c, err)) < 0) {
        free(c);
        return rc;
    }
    c->d = http_resp_defer(resp, admin_change_cancel_cb, c);
    log_notice("replica %llu removed by %s", id, r->who.user);
    return 0;
}
