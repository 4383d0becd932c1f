/*
 * api_logs.h - read a rank's shipped stdout/stderr
 *
 * GET /v1/jobs/ID/logs?rank=R[&attempt=N][&stream=out|err][&offset=O]
 * [&limit=L]: raw bytes, with the size held so far and the job's state in
 * headers, so `lockstep logs -f` can poll from its last offset and stop
 * once the job is finished and the size stops growing.
 */
#ifndef SCHEDULER_API_LOGS_H
#define SCHEDULER_API_LOGS_H

#include "scheduler/api_req.h"

api_handler_fn api_logs_get;

#endif
