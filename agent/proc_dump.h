/*
 * proc_dump.h - stack dumps of every rank of a job, on the scheduler's
 * request
 *
 * A request is the sequence number of a dump directive (proc_directive.c
 * hands it in, and asks whether it was served). The table (proc.c) lets
 * this module fill in and drop the dumps of its status reports. Loop
 * thread.
 */
#ifndef AGENT_PROC_DUMP_H
#define AGENT_PROC_DUMP_H

#include <stdbool.h>
#include <stdint.h>

#include "common/proto.h"

struct proc_job;

/* A fresh attempt: requests up to seq are void (there was nothing to
 * dump before it started). */
void proc_dump_init(struct proc_job *job, uint64_t seq);
/* The launch asks for dump seq: begin serving it unless it is served or
 * one is running (a running dump serves it next). */
void proc_dump_request(struct proc_job *job, uint64_t seq);

/* Whether request seq has been served; *duration_ms: how long the dump
 * that served it took. */
bool proc_dump_served(const struct proc_job *job, uint64_t seq,
    int64_t *duration_ms);

/* Fill the dumps of js->ranks (allocated, one per rank of job) for status
 * report `seq`. */
void proc_dump_report(struct proc_job *job, struct proto_job_status *js,
    uint64_t seq);
/* The scheduler accepted report `seq`: the dumps it carried are
 * delivered (it keeps them in the failure event) and dropped. */
void proc_dump_delivered(struct proc_job *job, uint64_t seq);

#endif
