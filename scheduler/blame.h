/*
 * blame.h - blame put on nodes: recorded, settled, counted, reset
 *
 * docs/fault-tolerance.md §Blame and node exclusion. A failure whose
 * evidence names a node leaves a blame row (db.h) with a status
 * (policy.h): confirmed at once when the evidence points at the node
 * itself (policy_blame_class), else provisional until the job's next
 * attempt on other nodes gets past the failing step (confirmed) or the
 * job shows or ends otherwise (withdrawn). Only confirmed rows count
 * toward blame_threshold; an operator's uncordon resets a node's rows
 * (kept, no longer counted). Withdrawing counted blame re-evaluates the
 * exclusions it supported: one that no longer holds is lifted through
 * event_node (event node_exclusion_lifted), never an operator's cordon.
 *
 * The decisions are policy.c's; this file gathers their inputs from the
 * model and the database and writes what they say. Excluding a node is
 * recovery's (recovery.h): these functions say which nodes to check.
 */
#ifndef SCHEDULER_BLAME_H
#define SCHEDULER_BLAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/failure.h"
#include "scheduler/schedd.h"

/* How the reason of every exclusion by blame begins: what tells it from
 * an exclusion for any other cause when blame is withdrawn. */
#define BLAME_REASON "blamed for failures of "

/*
 * Whether node's counted blame within the window ending at now reaches
 * blame_threshold: 1, with the exclusion's *reason ("blamed for failures
 * of N different jobs within W s: job 4 attempt 1 (rank_exit), ...") and
 * *evidence (an array of the counted failures), both the caller's; 0 when
 * not; or a negative errno.
 */
int blame_exclusion(struct schedd *sd, const struct node *node, int64_t now,
    char **reason, cJSON **evidence);

/* The status failure fc's blame row gets: withdrawn in a crash loop
 * (loop), else confirmed or provisional by policy_blame_class, with the
 * node's health findings as evidence. */
enum policy_blame_status blame_status_of(struct schedd *sd,
    const struct failure_case *fc, bool loop);

/* Record the blame of fc (of attempt a, fc->blame_status) on its node: a
 * blame row with the step its rank had reached, and a node_blamed event. */
int blame_record(struct schedd *sd, const struct attempt *a,
    const struct failure_case *fc, int64_t now);

/* A crash loop: withdraw the blame of the attempts matched[0..n) of a's
 * job, then re-evaluate the exclusions (blame_reevaluate). */
int blame_withdraw_loop(struct schedd *sd, const struct attempt *a,
    const int *matched, size_t n, int64_t now);

/*
 * Settle the provisional rows (of job_id only, unless 0) by what their
 * jobs did since (policy_blame_settle): a is the attempt to judge them by
 * when the caller has it (else each job's latest live attempt); ended
 * says that job_id's job ends now. The nodes of the rows confirmed are
 * appended to *confirmed (*nconfirmed; the array the caller's to free,
 * the nodes borrowed), for the caller to check for exclusion.
 */
int blame_settle(struct schedd *sd, int64_t job_id, const struct attempt *a,
    bool ended, int64_t now, struct node ***confirmed, size_t *nconfirmed);

/* Every node excluded by blame whose counted blame fell below the
 * threshold is excluded no longer. */
int blame_reevaluate(struct schedd *sd, int64_t now);

/* An operator (actor) uncordoned node: its rows are reset. */
int blame_reset(struct schedd *sd, const struct node *node, const char *actor);

#endif
