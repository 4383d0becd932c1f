/*
 * webhook.h - delivering queued alerts: a libcurl POST on the loop
 *
 * The queue is the alerts table (alerts.h raises, schema/0010-alerts.sql
 * keeps). One alert is in flight at a time, oldest first: it is read
 * once its row is committed, POSTed to alert_webhook_url as JSON
 *
 *   {"id": 12, "kind": "node_excluded", "node": "n3", "job": null,
 *    "reason": "...", "time": "2026-11-25T00:10:00.000Z",
 *    "time_ms": 1795..., "version": "0.9.0", "tries": 0}
 *
 * through common/curlx (libcurl's multi interface on the loop: nothing
 * ever blocks it), with alert_webhook_timeout_ms bounding the whole
 * request. A 2xx deletes the row. Anything else (no answer, a refused
 * connection, a timeout, any other status) counts a try and waits
 * 1 s × 2^(tries-1), at most alert_backoff_max_ms, before the next: the
 * wait is stored in the row, so a restarted scheduler keeps it. Delivery
 * is at least once: a scheduler that dies between a receiver's 2xx and
 * the row's deletion sends that alert again, with the same id.
 *
 * Counters for /metrics: sent, failed tries.
 */
#ifndef SCHEDULER_WEBHOOK_H
#define SCHEDULER_WEBHOOK_H

#include <stdint.h>

#include "common/err.h"
#include "scheduler/schedd.h"

struct webhook;

struct webhook_stats {
    uint64_t sent;   /* delivered (2xx) since start-up */
    uint64_t failed; /* failed tries since start-up */
};

/* Split an http(s) URL into the server ("http://h:p") and the path with
 * its query ("/hook?x=1"; "/" when none): *server and *path are new
 * strings. -EINVAL with err naming the key when url is not one. */
int webhook_split_url(const char *url, char **server, char **path,
    struct err *err);

/* Start delivering (sd->alert_url set; NULL and no error when it is not)
 * and register the alert_queued hook. Returns NULL with err set on
 * failure. */
struct webhook *webhook_create(struct schedd *sd, struct err *err);
/* Abort a request in flight (its row stays queued) and close. Accepts
 * NULL. */
void webhook_destroy(struct webhook *wh);
/* Accepts NULL (zeros). */
void webhook_get_stats(const struct webhook *wh, struct webhook_stats *out);

#endif
