/*
 * event.h - the one path every job, attempt and node state change takes
 *
 * Each function here applies the transition table (job.h) or recomputes
 * the derived state (node.h), sets the fields that go with the new state,
 * writes the row and the event (actor, subject, kind, detail) into the
 * iteration's transaction, logs the change, and starts what must follow:
 * the nodes of a withdrawn attempt are woken (their agents tear it down),
 * a finished job leaves the model, and the scheduling pass is triggered
 * when what can be placed may have changed. Nothing else in the scheduler
 * assigns a job's or an attempt's state (tests/lint/check-layout.py fails
 * if anything does).
 *
 * Every function returns 0, -EINVAL when the table forbids the change
 * (then nothing changed, in memory or in the database), or the negative
 * errno of a failed write (already recorded with schedd_db_error: the
 * iteration will be rolled back and the model reloaded).
 */
#ifndef SCHEDULER_EVENT_H
#define SCHEDULER_EVENT_H

#include <cjson/cJSON.h>

#include "scheduler/schedd.h"

/* A new job (PENDING): its row (job->id is set), the job_submitted event,
 * then it joins the model (the table takes ownership, also on failure:
 * then the job is freed) and the pass is triggered. */
int event_job_submitted(struct schedd *sd, struct job *job);

/* What goes with a job's state change. */
struct event_job_change {
    struct attempt *attempt; /* the attempt concerned, or NULL */
    const char *actor;       /* NULL: the scheduler */
    const char *reason;      /* the job's new reason; NULL: "" */
    cJSON *detail;           /* the event's detail (taken); NULL: {} */
};

/*
 * Move job to `to`, writing the event job_<to in lowercase> with c's
 * actor and detail and setting c's reason. What goes with each state:
 *  - PLACED: c->attempt becomes the job's current (latest) attempt; a
 *    restart's backoff, reservation and restart reason are cleared;
 *  - RUNNING: start_ms (c->attempt's running_ms), the first time;
 *  - RESTARTING: the reason is kept as the restart reason (each pass adds
 *    what the job waits for); the pass is triggered;
 *  - PENDING (a requeue, from PLACED or RUNNING): the pass is triggered;
 *  - SUCCEEDED, FAILED, CANCELLED: end_ms (SUCCEEDED: c->attempt's end,
 *    and its start when the job was never seen running); reservation and
 *    backoff cleared, and the hold; the job leaves the model and is
 *    FREED before this returns (the caller must not touch it again, also
 *    on error), and the pass is triggered (its reservation is gone).
 * c->detail is consumed whatever happens.
 */
int event_job(struct schedd *sd, struct job *job, enum proto_job_state to,
    struct event_job_change *c);

/*
 * A fact of job changed without a state change (lockstep hold and
 * release set job->held_by first): the reason becomes c->reason (NULL:
 * unchanged), the row is written, then the event `kind` with c's actor
 * and detail (consumed whatever happens), and the scheduling pass is
 * triggered (what may be placed has changed). c->attempt is unused.
 */
int event_job_fact(struct schedd *sd, struct job *job, const char *kind,
    struct event_job_change *c);

/*
 * Move attempt a to `to` with `reason` (NULL: unchanged). Leaving the
 * active states sets end_ms, takes the attempt out of its job (a->job and
 * job->cur are cleared) and out of every node's desired state, so their
 * agents tear its ranks down. Attempts have no events of their own: the
 * job's event tells the story.
 */
int event_attempt(struct schedd *sd, struct attempt *a,
    enum proto_attempt_state to, const char *reason);

/* What goes with a node's change. */
struct event_node_change {
    const char *actor; /* NULL: the scheduler */
    const char *why;   /* the detail's reason; NULL or "": none */
    const char *kind;  /* the state-change event's kind, written
                        * even when the state shown stays the
                        * same (node_excluded); NULL: node_<state>,
                        * written only when it changed */
    const char *fact;  /* a fact someone set (node_cordoned): its
                        * event, {reason}, is written when the
                        * state shown did not change; NULL none */
    cJSON *extra;      /* fields added to the state-change event's
                        * detail (taken); NULL none */
};

/*
 * Recompute node's derived state from its facts (lost, cordoned,
 * unhealthy, holds), which the caller has just set. The row is written
 * when anything is to be recorded; the event is node_<state> (or c->kind)
 * with {from, to, reason, extra...} when the state changed or c->kind is
 * set, else c->fact with {reason}. The pass is triggered when the node
 * is or was UP or SUSPECT (schedulable). c may be NULL (a refresh by the
 * scheduler).
 */
int event_node(struct schedd *sd, struct node *node,
    struct event_node_change *c);

#endif
