/*
 * api_jobctl.h - hold, release and requeue jobs
 *
 * POST /v1/jobs/ID/hold, POST /v1/jobs/ID/release and POST
 * /v1/jobs/ID/requeue (docs/api.md "Hold, release, requeue"). The job's
 * owner and operators may do them. Each replies 200 with the job object;
 * what cannot be done to the job in its state is a 409 with a code
 * (job_control_refusal): ended, not_queued, not_held, not_running.
 */
#ifndef SCHEDULER_API_JOBCTL_H
#define SCHEDULER_API_JOBCTL_H

#include "scheduler/api_req.h"

api_handler_fn api_jobs_hold;
api_handler_fn api_jobs_release;
api_handler_fn api_jobs_requeue;

#endif
