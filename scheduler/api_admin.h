/*
 * api_admin.h - operators' administration of the scheduler itself:
 * GET /v1/admin/backup, GET and POST /v1/replicas, POST
 * /v1/replicas/ID/remove (docs/api.md)
 */
#ifndef SCHEDULER_API_ADMIN_H
#define SCHEDULER_API_ADMIN_H

#include "scheduler/api_req.h"

api_handler_fn api_admin_backup;
api_handler_fn api_replicas_list;
api_handler_fn api_replicas_add;
api_handler_fn api_replicas_remove;

#endif
