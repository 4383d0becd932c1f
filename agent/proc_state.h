/*
 * proc_state.h - what the supervisors record, and re-adoption after a
 * restart of the agent
 *
 * See proc_state.c. Called by the table (proc.c) on the loop thread.
 */
#ifndef AGENT_PROC_STATE_H
#define AGENT_PROC_STATE_H

#include <stdbool.h>

struct proc_job;
struct proc_table;

/* Re-adopt the attempt directories a previous agent left in pt's jobs
 * directory (proc_create): each becomes a held job, desired until the
 * scheduler says otherwise. */
void proc_state_adopt(struct proc_table *pt);

/*
 * Apply dir/status.json if it changed since job->status_stamp: ranks
 * start, end (exit status, fenced, stderr tail), and job->done. Returns
 * whether anything changed.
 */
bool proc_state_refresh(struct proc_job *job);

/* The supervisor of job is gone: read its last status and, unless it was
 * done, kill its live ranks' process groups and mark them lost. */
void proc_state_supervisor_gone(struct proc_job *job, const char *why);

#endif
