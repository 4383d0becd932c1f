/*
 * api_jobs.h - submit, list, show and cancel jobs; commit checkpoints;
 * ask the ranks for a synchronized checkpoint or gc
 *
 * POST /v1/jobs, GET /v1/jobs, GET /v1/history, GET /v1/jobs/ID, POST
 * /v1/jobs/ID/cancel, POST /v1/jobs/ID/checkpoints and POST
 * /v1/jobs/ID/directives (docs/api.md). The job's owner and operators may see
 * and change a job; an agent may commit checkpoints.
 */
#ifndef SCHEDULER_API_JOBS_H
#define SCHEDULER_API_JOBS_H

#include "scheduler/api_req.h"

api_handler_fn api_jobs_submit;
api_handler_fn api_jobs_list;
/* Finished jobs with their goodput (GET /v1/history). */
api_handler_fn api_jobs_history;
api_handler_fn api_jobs_get;
api_handler_fn api_jobs_cancel;
api_handler_fn api_jobs_directive;
/* 409 stale_attempt for an attempt that is not the job's current one. */
api_handler_fn api_jobs_checkpoint;

#endif
