/*
 * proc_directive.h - the scheduler's directives to a job's ranks
 *
 * Each launch lists the directives this node's ranks have not
 * acknowledged yet (docs/architecture.md "Directives"). By its kind's
 * target, a directive is the agent's own work (a stack dump, proc_dump.c:
 * carried out once, acknowledged for every rank) or the ranks' (gc,
 * checkpoint: posted to the attempt's control file, <dir>/sdk/control,
 * which the SDK maps, and, when the agent's PMIx server serves the
 * attempt, notified once as a PMIx event, pmixsrv_directives; each rank
 * acknowledges it in its progress file with
 * the step it acted at, docs/cadence.md). The acks go in each status
 * report for as long as the launch still lists the directive, so
 * duplicates are harmless and a scheduler that restarted hears the acks
 * again. A directive of another attempt never reaches this job: launches
 * and control files are per (job, attempt). Loop thread.
 */
#ifndef AGENT_PROC_DIRECTIVE_H
#define AGENT_PROC_DIRECTIVE_H

#include <stdbool.h>

#include "common/proto.h"

struct proc_job;

/* Open (create, or adopt as it is) job's control file, job->ctl_path, and
 * post the rank-targeted directives listed so far. Before its ranks start
 * or when a restarted agent adopts running ranks; it is closed with the
 * job (proc_job_close). A failure is logged: the ranks then get no
 * directive and acknowledge none. */
void proc_directive_open(struct proc_job *job);
/* The directives of launch l for job; those for the ranks are posted to
 * the control file (once open; again on every call, which is free). A
 * fresh attempt carries nothing out for directives issued before it
 * started (there was nothing to dump then): they are acknowledged as
 * they are. */
void proc_directive_set(struct proc_job *job, const struct proto_launch *l,
    bool fresh);
/* The acks of every rank of js (allocated; released with the report):
 * the agent's own directives it carried out, and those of the ranks'
 * kinds that the rank's progress file acknowledges (sample it first). */
void proc_directive_report(const struct proc_job *job,
    struct proto_job_status *js);

#endif
