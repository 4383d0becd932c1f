/*
 * api_stats.c - GET /v1/stats (stats.h computes the figures)
 */
#include "scheduler/api_stats.h"

#include "common/jsonx.h"
#include "scheduler/stats.h"

int
api_stats_get(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct stats_cluster s;
    cJSON *o, *f;
    int rc;

    (void)r;
    (void)err;
    if ((rc = stats_cluster(sd, &s)) < 0)
        return rc;
    o = cJSON_CreateObject();
    jsonx_add_int(o, "jobs", s.jobs);
    jsonx_add_int(o, "wall_ms", s.total.wall_ms);
    jsonx_add_int(o, "productive_ms", s.total.productive_ms);
    jsonx_add_int(o, "lost_ms", s.total.lost_ms);
    jsonx_add_int(o, "recovery_ms", s.total.recovery_ms);
    cJSON_AddNumberToObject(o, "ettr", s.total.ettr);
    jsonx_add_int(o, "rank_productive_ms", s.rank_productive_ms);
    f = cJSON_AddObjectToObject(o, "failures");
    for (int k = 0; k < POLICY_KIND_COUNT; k++)
        jsonx_add_int(f, policy_kind_str((enum policy_kind)k), s.failures[k]);
    http_resp_json(resp, 200, o);
    return 0;
}
