/*
 * alerts.c - raising an alert (alerts.h)
 */
#include "scheduler/alerts.h"

#include <errno.h>

#include "common/log.h"
#include "common/timeid.h"
#include "scheduler/db.h"

/* Make room for one more: drop the oldest rows while the queue is full. */
static int
alerts_make_room(struct schedd *sd)
{
    struct db_alert old;
    int64_t n;
    int rc;

    if ((rc = db_alert_count(sd->db, &n)) < 0)
        return rc;
    while (n-- >= sd->alert_queue_max) {
        if ((rc = db_alert_oldest(sd->db, &old)) < 0)
            return rc == -ENOENT ? 0 : rc;
        log_warn("alert queue full (alert_queue_max=%d): dropping alert "
                 "%lld (%s%s%s)",
            sd->alert_queue_max, (long long)old.id, old.kind,
            old.node[0] ? " node=" : "", old.node);
        rc = db_alert_delete(sd->db, old.id);
        db_alert_free(&old);
        if (rc < 0)
            return rc;
        sd->alerts_dropped++;
    }
    return 0;
}

int
alerts_raise(struct schedd *sd, const char *kind, const char *node,
    int64_t job_id, const char *reason)
{
    struct db_alert a = {
        .time_ms = timeid_now_ms(),
        .kind = (char *)kind,
        .node = (char *)(node ? node : ""),
        .job_id = job_id,
        .reason = (char *)(reason ? reason : ""),
    };
    int64_t id = 0;
    int rc;

    if (sd->alert_url == NULL)
        return 0;
    if ((rc = alerts_make_room(sd)) < 0 ||
        (rc = db_alert_insert(sd->db, &a, &id)) < 0)
        return schedd_db_error(sd, rc);
    sd->alerts_raised++;
    log_info("alert %lld queued: %s%s%s%s", (long long)id, kind,
        a.node[0] ? " node=" : "", a.node, job_id ? " (job)" : "");
    if (sd->hooks.alert_queued)
        sd->hooks.alert_queued(sd, sd->hooks.alert_arg);
    return 0;
}

int
alerts_node_excluded(struct schedd *sd, const struct node *node,
    const char *reason)
{
    return alerts_raise(sd, ALERT_NODE_EXCLUDED, node->name, 0, reason);
}

int
alerts_node_lost(struct schedd *sd, const struct node *node, const char *reason)
{
    return alerts_raise(sd, ALERT_NODE_LOST, node->name, 0, reason);
}

int
alerts_job_failed(struct schedd *sd, const struct job *job, const char *reason)
{
    return alerts_raise(sd, ALERT_JOB_FAILED, NULL, job->id, reason);
}
