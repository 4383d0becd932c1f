/*
 * api_admin.c - GET /v1/admin/backup: the online backup
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

#include "common/log.h"
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
