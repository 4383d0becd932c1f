/*
 * proc_start.h - the directory of a job attempt that is about to start
 *
 * See proc_start.c. Called by the table (proc.c) on the loop thread.
 */
#ifndef AGENT_PROC_START_H
#define AGENT_PROC_START_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

struct proc_job;

/*
 * Write job's attempt directory for launch l and its first lease, now +
 * lease_ms, and set its ranks' paths. Returns 0, or -errno with the
 * reason for a person in why (then proc_job_fail) and *launch set when
 * the reason is the job's own (its user, its working directory, an empty
 * command: a launch failure), not the agent's.
 */
int proc_job_prepare(struct proc_job *job, const struct proto_launch *l,
    int64_t lease_ms, char *why, size_t len, bool *launch);
/* Every rank of job exited with the code of rc (supfile_exec_exit_code)
 * and why as its stderr, and as its launch error when `launch`; the final
 * status.json is written. */
void proc_job_fail(struct proc_job *job, int rc, const char *why, bool launch);
/* Take the checkpoint settings of launch l (also for adopted jobs). */
void proc_job_set_launch(struct proc_job *job, const struct proto_launch *l);

#endif
