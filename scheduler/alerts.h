/*
 * alerts.h - raising an alert: one row in the queue, in the change's
 * transaction
 *
 * An alert is raised by the code that makes the change it reports, at
 * the moment it makes it, so there is exactly one per occurrence: a node
 * excluded automatically (alerts_node_excluded: every automatic exclusion
 * path calls it), a node declared LOST (alerts_node_lost, nodes.c), a job
 * that ends FAILED (alerts_job_failed, event.c). The row
 * (schema/0010-alerts.sql) is written in the loop iteration's
 * transaction, so it commits with the change or not at all, and it
 * survives a scheduler restart until it is delivered.
 *
 * Alerts are off when alert_webhook_url is empty: nothing is queued. The
 * queue holds at most alert_queue_max rows; a new alert on a full queue
 * drops the oldest (logged, and counted in sd->alerts_dropped, which
 * /metrics shows). Delivery is webhook.c's, woken through the
 * alert_queued hook.
 *
 * Each returns 0 or the negative errno of a failed write (already
 * recorded with schedd_db_error).
 */
#ifndef SCHEDULER_ALERTS_H
#define SCHEDULER_ALERTS_H

#include <stdint.h>

#include "scheduler/schedd.h"

/* The kinds (the body's "kind"). */
#define ALERT_NODE_EXCLUDED "node_excluded"
#define ALERT_NODE_LOST "node_lost"
#define ALERT_JOB_FAILED "job_failed"

/* Queue an alert of kind about node (NULL: none) and job_id (0: none). */
int alerts_raise(struct schedd *sd, const char *kind, const char *node,
    int64_t job_id, const char *reason);

/* node was taken out of service by the scheduler itself (blame, a health
 * finding); reason says why. */
int alerts_node_excluded(struct schedd *sd, const struct node *node,
    const char *reason);
/* node was declared LOST. */
int alerts_node_lost(struct schedd *sd, const struct node *node,
    const char *reason);
/* job ended FAILED for good (no restart follows). */
int alerts_job_failed(struct schedd *sd, const struct job *job,
    const char *reason);

#endif
