/*
 * api_view.h - the JSON shapes of jobs, attempts and nodes (docs/api.md)
 *
 * Job views are built from the database (which includes the iteration's
 * uncommitted changes, and every reply waits for the commit), so a job
 * looks the same whether it is still in the in-memory model or finished
 * long ago. One exception: why a queued job is waiting is recomputed by
 * every scheduling pass and kept in memory only (writing it would cost a
 * row update per queued job per pass), so the in-memory reason is shown
 * for jobs the model holds. Nodes are all in the model, so their views
 * come from it (free resources and held jobs exist only there).
 */
#ifndef SCHEDULER_API_VIEW_H
#define SCHEDULER_API_VIEW_H

#include <cjson/cJSON.h>

#include "scheduler/goodput.h"
#include "scheduler/schedd.h"

/* The job object without attempts, checkpoints, goodput and events (the
 * listing's shape). Caller owns it. */
cJSON *api_view_job(struct schedd *sd, const struct job *job);
/* Hide the values of a job object's "env" (each becomes null), keeping
 * the names: what a viewer who is not the job's owner sees. */
void api_view_env_names(cJSON *job);
/* The job object of a job just submitted: empty attempts, checkpoints
 * and goodput. */
cJSON *api_view_job_new(struct schedd *sd, const struct job *job);
/* The reply to a batch submission: {"count": n, "ids": [...]}. */
cJSON *api_view_job_ids(const int64_t *ids, size_t n);
/* The full view (GET /v1/jobs/ID): the job object, its checkpoints,
 * goodput, attempts and newest events. */
int api_view_job_full(struct schedd *sd, const struct job *job, cJSON **out);
/* The job's "goodput" object. */
cJSON *api_view_goodput(const struct goodput *g, int world_size);

/* The node object. */
cJSON *api_view_node(const struct node *node);
/* The ids of the jobs holding resources on node, each once (an array). */
cJSON *api_view_node_jobs(const struct node *node);
/* The node object plus its newest blame rows ("blame", each with its
 * status) and newest events. */
int api_view_node_full(struct schedd *sd, const struct node *node, cJSON **out);

#endif
