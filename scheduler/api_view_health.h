/*
 * api_view_health.h - the JSON shapes of a node's health (docs/api.md
 * "Node health")
 */
#ifndef SCHEDULER_API_VIEW_HEALTH_H
#define SCHEDULER_API_VIEW_HEALTH_H

#include <cjson/cJSON.h>

#include "scheduler/schedd.h"

/* The node object's "health": null for a node whose agent sends none,
 * else {boot_id, waiting, findings (open), excluding, summary}. */
cJSON *api_view_health_summary(const struct node *node);

/* Add to o (the node object of GET /v1/nodes/NAME) "checks" (each
 * check's latest run), "findings" (open ones, then recently closed ones)
 * and "health_history" (results that changed something, newest first). */
int api_view_health_full(struct schedd *sd, const struct node *node, cJSON *o);

#endif
