/*
 * proc_dump.h - stack dumps of every rank of a job, on the scheduler's
 * request
 *
 * A request is a sequence number: today the launch's dump_seq, reported
 * back as the job's dump_seq once served (docs/fault-tolerance.md). The
 * table (proc.c) hands each launch's number in, and lets this module fill
 * in and drop the dumps of its status reports. Loop thread.
 */
#ifndef AGENT_PROC_DUMP_H
#define AGENT_PROC_DUMP_H

#include <stdint.h>

#include "common/proto.h"

struct proc_job;

/* A fresh attempt: requests up to seq are void (there was nothing to
 * dump before it started). */
void proc_dump_init(struct proc_job *job, uint64_t seq);
/* The launch asks for dump seq: begin serving it unless it is served or
 * one is running (a running dump serves it next). */
void proc_dump_request(struct proc_job *job, uint64_t seq);

/* Fill js->dump_seq and the dumps of js->ranks (allocated, one per rank
 * of job) for status report `seq`. */
void proc_dump_report(struct proc_job *job, struct proto_job_status *js,
    uint64_t seq);
/* The scheduler accepted report `seq`: the dumps it carried are
 * delivered (it keeps them in the failure event) and dropped. */
void proc_dump_delivered(struct proc_job *job, uint64_t seq);

#endif
