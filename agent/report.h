/*
 * report.h - the agent's two conversations with the scheduler
 *
 * Status: POST /v1/agent/status at start-up with "register": true, then
 * every heartbeat_ms (the scheduler's reply sets it) and at once whenever
 * a rank changes state or a health check's results change; each lists
 * every (job, attempt) held and, once a check has finished, the node's
 * health (health_fill). A status
 * that announces a rank's end waits (up to 2 s) until that rank's output
 * is shipped, so a job the scheduler sees finished has its whole output
 * readable. After any failure the next status registers again, so a
 * restarted scheduler reconciles with what this node runs.
 *
 * Work: GET /v1/agent/work long poll, always outstanding once the node is
 * registered, re-issued as soon as one returns; each reply is the desired
 * state, applied at once (proc_apply). A status reply whose gen differs
 * from the applied one makes sure a fetch happens promptly.
 *
 * Every accepted status renews the lease of every job's supervisor
 * (proc_status_ok): until then + the reply's lease_ms (5000 when absent),
 * counted from when the status was sent.
 *
 * Failures (scheduler down, 5xx, 4xx) never touch running ranks; requests
 * are retried with exponential backoff (100 ms doubling to 5 s, jittered;
 * the status retries at least every lease_ms / 4 while supervisors hold
 * leases, so a short outage does not fence them). Each distinct error is
 * logged once, and its end once.
 *
 * Everything runs on the loop thread.
 */
#ifndef AGENT_REPORT_H
#define AGENT_REPORT_H

#include "common/err.h"

struct agentd;
struct report;

/* Sets up the timers and hooks itself to rank changes (ad->procs). */
struct report *report_create(struct agentd *ad, struct err *err);
/* Sends the register status (and, once accepted, starts the work loop). */
int report_start(struct report *rp);
/* Stops and closes; freed once the timers are closed. In-flight requests
 * must be dropped with curlx_destroy in the same loop turn. Accepts NULL. */
void report_destroy(struct report *rp);

/* A rank changed: send a status now (coalesced within one loop turn). */
void report_kick(struct report *rp);

#endif
