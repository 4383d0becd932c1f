/*
 * api_stats.h - GET /v1/stats: cluster-wide goodput and failure counts
 */
#ifndef SCHEDULER_API_STATS_H
#define SCHEDULER_API_STATS_H

#include "scheduler/api_req.h"

api_handler_fn api_stats_get;

#endif
