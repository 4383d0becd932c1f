/*
 * obs.h - what on-call observes: the figures behind GET /metrics, the
 * loop's lag, the API's latency, and the events' retention
 *
 * obs_metrics writes the whole Prometheus exposition (metrics.h does the
 * format; docs/operations.md "Metrics" lists every family): the model
 * (nodes by state), the database (jobs and attempts by state, restarts,
 * failures by kind, ETTR as stats.c computes it, the alert queue), and
 * what this object measures while it runs:
 *  - the loop's lag: a uv timer asks to run every OBS_LAG_EVERY_MS and
 *    records how late it ran (uv_hrtime against when it was due), which
 *    is how long the loop was busy with something else;
 *  - each request's time in the API (obs_request, called by api.c with
 *    the route's pattern, never the raw path, so the labels stay few);
 *  - the commits' durations are schedd's (sd->commit_hist), and so are
 *    the scheduling passes' (sd->pass_hist, observed by pass.c).
 *
 * Per-node health-check results and durations have one place:
 * obs_node_checks() in obs.c (empty until the agent's checks report).
 *
 * Retention: obs_tick (tick.c) deletes events older than
 * event_retention_days, a bounded batch at a time, at most once a minute.
 */
#ifndef SCHEDULER_OBS_H
#define SCHEDULER_OBS_H

#include <stdint.h>

#include "common/err.h"
#include "common/sbuf.h"
#include "scheduler/schedd.h"

#define OBS_LAG_EVERY_MS 250

/* Start measuring (sd->obs is set). NULL with err set on failure. */
struct obs *obs_create(struct schedd *sd, struct err *err);
/* Stop and close; sd->obs is cleared. Accepts NULL. */
void obs_destroy(struct obs *obs);

/* One API request: its method, its route's pattern ("/v1/jobs/{}"; NULL:
 * no route matched) and the seconds it took. Accepts obs NULL. */
void obs_request(struct obs *obs, const char *method, const char *route,
    double seconds);
/* One request refused for want of the operator role (403). */
void obs_refused(struct obs *obs);

/* Append the exposition to out. Returns 0 or the negative errno of a
 * failed database read. */
int obs_metrics(struct schedd *sd, struct sbuf *out);

/* The periodic work: the events' retention. */
void obs_tick(struct schedd *sd, int64_t mono);

#endif
