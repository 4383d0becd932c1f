/*
 * health.h - the agent's health checks: each a child process with a
 * deadline, on its own interval
 *
 * The checks: the built-ins of health_checks (lockstep-check NAME with the
 * options this node's settings call for, see docs/config.md "Health checks")
 * and every executable file of health_checks_dir ("site:<file name>"). Each
 * runs as a child in its own session and process group (stdin /dev/null, stdout
 * read up to 64 KiB, stderr up to 2 KiB for evidence), concurrently with
 * the others and independently of them, and again interval_ms after its
 * previous run ended. Nothing here blocks the loop: a check never delays a
 * heartbeat, a rank launch or another check.
 *
 * A run ends when its process exits: the rest of its group is killed and
 * what its stdout pipe holds is read (for at most 200 ms more: a
 * grandchild that keeps the pipe open does not stall it). Its stdout is
 * one JSON result object or an array of them; bad output or a non-zero
 * exit is UNKNOWN (check.bad_output, check.failed), never PASS. At
 * timeout_ms the group gets SIGTERM, after health_kill_grace_ms SIGKILL:
 * TIMEOUT (check.timeout). A process still there 1 s after SIGKILL is
 * stuck in the kernel: HUNG (check.hung), and the check is not started
 * again while that process exists.
 *
 * The latest run's results of every check go into each node report
 * (health_fill); a run whose (status, code, scope) set differs from the
 * check's previous one calls the change hook (report sends a status).
 */
#ifndef AGENT_HEALTH_H
#define AGENT_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct health;

typedef void (*health_change_fn)(void *arg);

/* Builds the check list from ad's settings (reads health_checks_dir and
 * each site check's header). Fails (NULL, err set) only when the
 * directory cannot be read. */
struct health *health_create(struct agentd *ad, struct err *err);
/* Starts every check now. */
void health_start(struct health *h);
/* Kills the checks running and closes; freed once its handles are closed.
 * Accepts NULL. */
void health_destroy(struct health *h);

/* fn(arg) when a check's results changed (NULL: none). */
void health_set_change_cb(struct health *h, health_change_fn fn, void *arg);

/* The node's health now, for a report (proto_health_release and free it):
 * from the first report on (full_pass false, maybe no results, until
 * every check ran once), or NULL when no check is configured. */
struct proto_health *health_fill(const struct health *h);

/* How many checks are configured. */
size_t health_ncheck(const struct health *h);

#endif
