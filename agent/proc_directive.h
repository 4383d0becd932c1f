/*
 * proc_directive.h - the scheduler's directives to a job's ranks
 *
 * Each launch lists the directives this node's ranks have not
 * acknowledged yet (docs/architecture.md "Directives"). The agent carries
 * out each one once (by its kind: a stack dump is the agent's own work,
 * proc_dump.c) and acknowledges it for every rank here in each status
 * report for as long as the launch still lists it, so duplicates are
 * harmless and a scheduler that restarted hears the acks again. A
 * directive of another attempt never reaches this job: launches are per
 * (job, attempt). Loop thread.
 */
#ifndef AGENT_PROC_DIRECTIVE_H
#define AGENT_PROC_DIRECTIVE_H

#include <stdbool.h>

#include "common/proto.h"

struct proc_job;

/* The directives of launch l for job. A fresh attempt carries nothing
 * out for directives issued before it started (there was nothing to dump
 * then): they are acknowledged as they are. */
void proc_directive_set(struct proc_job *job, const struct proto_launch *l,
    bool fresh);
/* The acks of every rank of js (allocated; released with the report). */
void proc_directive_report(const struct proc_job *job,
    struct proto_job_status *js);

#endif
