/*
 * api_view.c - the JSON shapes of jobs, attempts and nodes (api_view.h)
 */
#include "scheduler/api_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/api_req.h"
#include "scheduler/api_view_health.h"
#include "scheduler/db.h"
#include "scheduler/failure.h"
#include "scheduler/nodes_health.h"
#include "scheduler/rankstats.h"
#include "scheduler/stats.h"

#define API_VIEW_JOB_EVENTS 50
#define API_VIEW_NODE_EVENTS 50
/* Blame rows a node's view lists, newest first. */
#define API_VIEW_NODE_BLAME 20
/* Stack dumps shown with a hang (every rank keeps its own). */
#define API_VIEW_DUMPS_MAX 64

static void
add_int_or_null(cJSON *o, const char *key, bool known, int64_t v)
{
    if (known)
        jsonx_add_int(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* ---- jobs --------------------------------------------------------------- */

static cJSON *
attempt_nodes(const struct attempt *a)
{
    cJSON *nodes = cJSON_CreateArray();

    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];
        cJSON *n = cJSON_CreateObject();

        jsonx_add_str(n, "node", p->node_name ? p->node_name : "");
        jsonx_add_int(n, "node_rank", p->node_rank);
        jsonx_add_int_array(n, "gpus", p->gpus, p->ngpus);
        cJSON_AddItemToArray(nodes, n);
    }
    return nodes;
}

static cJSON *
attempt_ranks(const struct attempt *a)
{
    cJSON *ranks = cJSON_CreateArray();

    for (size_t i = 0; i < a->nranks; i++) {
        const struct attempt_rank *rk = &a->ranks[i];
        const struct placement *p = &a->placements[rk->node_rank];
        cJSON *r = cJSON_CreateObject();

        jsonx_add_int(r, "rank", rk->rank);
        jsonx_add_str(r, "node", p->node_name ? p->node_name : "");
        jsonx_add_int(r, "local_rank", rk->local_rank);
        jsonx_add_str(r, "state", proto_rank_state_str(rk->state));
        add_int_or_null(r, "exit_code", rk->has_exit, rk->exit_code);
        add_int_or_null(r, "signal", rk->has_exit, rk->signal);
        jsonx_add_str(r, "stderr_tail", rk->stderr_tail);
        jsonx_add_int(r, "step", rk->step);
        if (rk->step_p50_us > 0) {
            jsonx_add_int(r, "step_p50_us", rk->step_p50_us);
            jsonx_add_int(r, "step_p99_us", rk->step_p99_us);
        }
        cJSON_AddItemToArray(ranks, r);
    }
    return ranks;
}

/* The attempt's directives, oldest first (the newest
 * ATTEMPT_DIRECTIVES_MAX). */
static cJSON *
attempt_directives(const struct attempt *a)
{
    cJSON *arr = cJSON_CreateArray();

    for (size_t i = 0; i < a->ndirectives; i++) {
        const struct attempt_directive *d = &a->directives[i];
        cJSON *o = cJSON_CreateObject();

        jsonx_add_int(o, "seq", (int64_t)d->seq);
        jsonx_add_str(o, "kind", proto_directive_kind_str(d->kind));
        jsonx_add_int(o, "step", d->step);
        jsonx_add_int(o, "issued_ms", d->issued_ms);
        jsonx_add_int(o, "done_ms", d->done_ms);
        cJSON_AddItemToArray(arr, o);
    }
    return arr;
}

/* The attempt's failure: its evidence and, for a hang, the stack dumps
 * of its ranks (the hung rank's first). */
static cJSON *
attempt_failure(const struct attempt *a)
{
    cJSON *f;

    if (!a->has_failure)
        return cJSON_CreateNull();
    f = evidence_to_json(&a->failure);
    if (a->failure.kind == POLICY_KIND_HANG)
        cJSON_AddItemToObject(f, "dumps",
            failure_dumps_json(a, a->failure.rank, API_VIEW_DUMPS_MAX));
    return f;
}

static const char *
stop_kind_str(enum attempt_stop_kind kind)
{
    switch (kind) {
    case ATTEMPT_STOP_EVICT:
        return "evict";
    case ATTEMPT_STOP_CANCEL:
        return "cancel";
    case ATTEMPT_STOP_REQUEUE:
        break;
    }
    return "requeue";
}

static cJSON *
attempt_json(const struct attempt *a)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "attempt", a->num);
    jsonx_add_str(o, "state", proto_attempt_state_str(a->state));
    jsonx_add_int(o, "start_ms", a->start_ms);
    jsonx_add_int(o, "end_ms", a->end_ms);
    jsonx_add_str(o, "reason", a->reason);
    jsonx_add_str(o, "master_addr", a->master_addr);
    jsonx_add_int(o, "master_port", a->master_port);
    jsonx_add_int(o, "resume_step", a->resume_step);
    jsonx_add_str(o, "resume_from", a->resume_from);
    jsonx_add_int(o, "running_ms", a->running_ms);
    jsonx_add_int(o, "failed_ms", a->failed_ms);
    jsonx_add_int(o, "detected_ms", a->detected_ms);
    jsonx_add_int(o, "released_ms", a->released_ms);
    cJSON_AddItemToObject(o, "failure", attempt_failure(a));
    cJSON_AddItemToObject(o, "nodes", attempt_nodes(a));
    cJSON_AddItemToObject(o, "ranks", attempt_ranks(a));
    cJSON_AddItemToObject(o, "directives", attempt_directives(a));
    if (a->stop) {
        cJSON *st = cJSON_AddObjectToObject(o, "stop");

        jsonx_add_str(st, "kind", stop_kind_str(a->stop->kind));
        jsonx_add_int(st, "checkpoint_step", a->stop->step);
        jsonx_add_int(st, "deadline_ms", a->stop->deadline_ms);
        jsonx_add_str(st, "node", a->stop->node);
        if (a->stop->kind == ATTEMPT_STOP_REQUEUE)
            cJSON_AddBoolToObject(st, "hold", a->stop->hold);
    }
    return o;
}

/* The spec's part of the job object. */
static void
job_spec_json(cJSON *o, const struct proto_job_spec *s)
{
    jsonx_add_int(o, "priority", s->priority);
    jsonx_add_int(o, "nodes", s->nodes);
    jsonx_add_int(o, "ranks_per_node", s->ranks_per_node);
    jsonx_add_int(o, "gpus_per_node", s->gpus_per_node);
    jsonx_add_int(o, "cpus_per_rank", s->cpus_per_rank);
    jsonx_add_int(o, "memory_mb_per_node", s->memory_mb_per_node);
    jsonx_add_str_array(o, "argv", s->argv, s->argc);
    proto_kv_to_json(o, "env", s->env, s->nenv);
    jsonx_add_str(o, "workdir", s->workdir);
    jsonx_add_int(o, "max_restarts", s->max_restarts);
    jsonx_add_int(o, "max_infra_restarts", s->max_infra_restarts);
    jsonx_add_int(o, "hang_timeout_s", s->hang_timeout_s);
    jsonx_add_int(o, "keep_checkpoints", s->keep_checkpoints);
    jsonx_add_int(o, "gc_every_s", s->gc_every.s);
    jsonx_add_int(o, "gc_every_steps", s->gc_every.steps);
    jsonx_add_int(o, "checkpoint_every_s", s->checkpoint_every.s);
    jsonx_add_int(o, "checkpoint_every_steps", s->checkpoint_every.steps);
    jsonx_add_str(o, "resume_from", s->resume_from ? s->resume_from : "");
    jsonx_add_int(o, "resume_from_step", s->resume_step);
    jsonx_add_int(o, "resume_from_job", s->resume_from_job);
}

cJSON *
api_view_job(struct schedd *sd, const struct job *job)
{
    const struct job *live = job_table_find(&sd->jobs, job->id);
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "id", job->id);
    jsonx_add_str(o, "name", job->spec.name);
    jsonx_add_str(o, "user", job->user);
    jsonx_add_str(o, "state", proto_job_state_str(job->state));
    jsonx_add_str(o, "reason",
        live && live->state == job->state ? live->reason : job->reason);
    jsonx_add_str(o, "held_by", live ? live->held_by : job->held_by);
    job_spec_json(o, &job->spec);
    jsonx_add_int(o, "restarts", job->restarts);
    jsonx_add_int(o, "infra_restarts", job->infra_restarts);
    jsonx_add_str(o, "checkpoint_dir", job->spec.checkpoint_dir);
    jsonx_add_int(o, "submit_ms", job->submit_ms);
    jsonx_add_int(o, "start_ms", job->start_ms);
    jsonx_add_int(o, "end_ms", job->end_ms);
    jsonx_add_int(o, "attempt", job->attempt);
    add_int_or_null(o, "exit_code", job->has_exit, job->exit_code);
    add_int_or_null(o, "failed_rank", job->failed_rank >= 0, job->failed_rank);
    add_int_or_null(o, "signal", job->has_exit, job->signal);
    jsonx_add_str(o, "stderr_tail", job->stderr_tail ? job->stderr_tail : "");
    return o;
}

void
api_view_env_names(cJSON *job)
{
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(job, "env");
    const cJSON *it;
    cJSON *names;

    if (!cJSON_IsObject(env))
        return;
    names = cJSON_CreateObject();
    cJSON_ArrayForEach(it, env) {
        cJSON_AddNullToObject(names, it->string);
    }
    cJSON_ReplaceItemInObjectCaseSensitive(job, "env", names);
}

cJSON *
api_view_goodput(const struct goodput *g, int world_size)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "wall_ms", g->wall_ms);
    jsonx_add_int(o, "productive_ms", g->productive_ms);
    jsonx_add_int(o, "lost_ms", g->lost_ms);
    jsonx_add_int(o, "recovery_ms", g->recovery_ms);
    cJSON_AddNumberToObject(o, "ettr", g->ettr);
    jsonx_add_int(o, "world_size", world_size);
    return o;
}

cJSON *
api_view_job_ids(const int64_t *ids, size_t n)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *a = cJSON_AddArrayToObject(o, "ids");

    jsonx_add_int(o, "count", (int64_t)n);
    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(a, cJSON_CreateNumber((double)ids[i]));
    return o;
}

cJSON *
api_view_job_new(struct schedd *sd, const struct job *job)
{
    cJSON *o = api_view_job(sd, job);
    struct goodput none;

    memset(&none, 0, sizeof(none));
    cJSON_AddArrayToObject(o, "checkpoints");
    cJSON_AddItemToObject(o, "goodput",
        api_view_goodput(&none, job->spec.nodes * job->spec.ranks_per_node));
    cJSON_AddArrayToObject(o, "attempts");
    return o;
}

static int
checkpoint_add(const struct db_checkpoint *c, void *arg)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "step", c->step);
    jsonx_add_int(o, "attempt", c->attempt);
    jsonx_add_str(o, "path", c->path);
    jsonx_add_int(o, "complete_ms", c->complete_ms);
    jsonx_add_str(o, "source", c->source);
    cJSON_AddItemToArray(arg, o);
    return 0;
}

/* Every attempt of the job, oldest first; the live one as the model has
 * it (with what is kept in memory only: step times, acks). */
static int
job_attempts(struct schedd *sd, const struct job *job, cJSON *arr)
{
    const struct job *live = job_table_find(&sd->jobs, job->id);
    struct attempt **atts = NULL;
    size_t n = 0;
    int rc = db_attempts_load_job(sd->db, job->id, &atts, &n);

    for (size_t i = 0; i < n; i++) {
        const struct attempt *a = atts[i];

        if (live && live->cur && live->cur->num == a->num)
            a = live->cur;
        cJSON_AddItemToArray(arr, attempt_json(a));
        attempt_destroy(atts[i]);
    }
    free(atts);
    return rc;
}

/* Add the latest limit events of subject to o as "events" and hand o over
 * in *out; on failure o is deleted. */
static int
view_add_events(struct schedd *sd, cJSON *o, const char *subject, int limit,
    cJSON **out)
{
    int rc;

    cJSON_AddItemToObject(o, "events", api_req_events(sd, subject, limit, &rc));
    if (rc < 0) {
        cJSON_Delete(o);
        return rc;
    }
    *out = o;
    return 0;
}

/* The job's "rank_stats" (rankstats.h), with the newest complete
 * checkpoint of the "checkpoints" already in o. */
static int
view_add_rank_stats(struct schedd *sd, cJSON *o, int64_t job_id)
{
    const cJSON *cks = cJSON_GetObjectItemCaseSensitive(o, "checkpoints");
    const cJSON *last = cJSON_GetArrayItem(cks, cJSON_GetArraySize(cks) - 1);
    const cJSON *step = cJSON_GetObjectItemCaseSensitive(last, "step");
    int rc;
    cJSON *st = rankstats_view(sd, job_id,
        cJSON_IsNumber(step) ? (int64_t)step->valuedouble : -1, &rc);

    if (st)
        cJSON_AddItemToObject(o, "rank_stats", st);
    return rc;
}

int
api_view_job_full(struct schedd *sd, const struct job *job, cJSON **out)
{
    int world = job->spec.nodes * job->spec.ranks_per_node;
    cJSON *o = api_view_job(sd, job);
    struct goodput g;
    char subject[32];
    int rc;

    *out = NULL;
    rc = db_checkpoints_foreach(sd->db, job->id, checkpoint_add,
        cJSON_AddArrayToObject(o, "checkpoints"));
    if (rc == 0)
        rc = view_add_rank_stats(sd, o, job->id);
    if (rc == 0)
        rc = stats_job(sd, job->id, &g);
    if (rc == 0) {
        cJSON_AddItemToObject(o, "goodput", api_view_goodput(&g, world));
        rc = job_attempts(sd, job, cJSON_AddArrayToObject(o, "attempts"));
    }
    if (rc < 0) {
        cJSON_Delete(o);
        return rc;
    }
    return view_add_events(sd, o,
        schedd_subject_job(subject, sizeof(subject), job->id),
        API_VIEW_JOB_EVENTS, out);
}

/* ---- nodes -------------------------------------------------------------- */

/* Why the node is not (or not fully) in service; "" when it is. */
static const char *
node_reason(const struct node *node, char *buf, size_t len)
{
    if (node->lost) {
        static const char *const how[] = {
            [NODE_LOST_TIMEOUT] = "",
            [NODE_LOST_GONE] = "its agent is gone (its supervisors' notice); ",
            [NODE_LOST_SHORT] = "its short leases ran out; ",
        };

        snprintf(buf, len, "%sno status for %lld ms", how[node->lost_how],
            (long long)(timeid_now_ms() - node->last_seen_ms));
        return buf;
    }
    if (node->cordoned)
        return node->reason;
    if (node->unhealthy)
        return node->health_reason;
    if (*nodes_health_reason(node, buf, len))
        return buf;
    if (node->state == NODE_STATE_UP && !node->reconciled)
        return "no status since the scheduler started; no new work until "
               "then";
    if (node->state == NODE_STATE_UP && node->agent_gone)
        return "agent connection closed; no new work until it returns";
    return "";
}

cJSON *
api_view_node_jobs(const struct node *node)
{
    cJSON *jobs = cJSON_CreateArray();

    for (size_t i = 0; i < node->nholds; i++) {
        int64_t id = node->holds[i]->attempt->job_id;
        bool dup = false;

        for (size_t j = 0; j < i && !dup; j++)
            dup = node->holds[j]->attempt->job_id == id;
        if (!dup)
            cJSON_AddItemToArray(jobs, cJSON_CreateNumber((double)id));
    }
    return jobs;
}

cJSON *
api_view_node(const struct node *node)
{
    cJSON *o = cJSON_CreateObject();
    int *free_gpus = xcalloc(node->ngpus + 1, sizeof(*free_gpus));
    size_t nfree = node_free_gpus(node, free_gpus);
    char buf[800];
    cJSON *ws;

    jsonx_add_str(o, "name", node->name);
    jsonx_add_str(o, "state", node_state_str(node->state));
    jsonx_add_str(o, "reason", node_reason(node, buf, sizeof(buf)));
    jsonx_add_str(o, "addr", node->addr);
    jsonx_add_int(o, "cpus", node->cpus);
    jsonx_add_int(o, "memory_mb", node->memory_mb);
    jsonx_add_int_array(o, "gpus", node->gpus, node->ngpus);
    proto_kv_to_json(o, "labels", node->labels, node->nlabels);
    jsonx_add_int(o, "free_cpus", node_free_cpus(node));
    jsonx_add_int(o, "free_memory_mb", node_free_memory_mb(node));
    jsonx_add_int_array(o, "free_gpus", free_gpus, nfree);
    cJSON_AddItemToObject(o, "jobs", api_view_node_jobs(node));
    cJSON_AddBoolToObject(o, "removing", node->removing);
    jsonx_add_int(o, "last_seen_ms", node->last_seen_ms);
    jsonx_add_int(o, "registered_ms", node->registered_ms);
    jsonx_add_str(o, "cordoned_by", node->cordon_by);
    jsonx_add_int(o, "cordoned_at_ms", node->cordon_at_ms);
    cJSON_AddBoolToObject(o, "drain", node->cordoned && node->drain);
    cJSON_AddItemToObject(o, "health", api_view_health_summary(node));
    ws = cJSON_AddArrayToObject(o, "witnesses");
    for (size_t i = 0; i < node->nwit_sent; i++)
        cJSON_AddItemToArray(ws, cJSON_CreateString(node->wit_sent[i]));
    cJSON_AddBoolToObject(o, "lost_jobs_wait",
        node->lost && node->lost_waiting);
    free(free_gpus);
    return o;
}

static int
blame_add(const struct db_blame *b, void *arg)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "job", b->job_id);
    jsonx_add_int(o, "attempt", b->attempt);
    jsonx_add_int(o, "time_ms", b->time_ms);
    jsonx_add_str(o, "kind", b->kind);
    jsonx_add_str(o, "status", policy_blame_status_str(b->status));
    jsonx_add_int(o, "step", b->step);
    if (b->settled_ms > 0) {
        jsonx_add_int(o, "settled_ms", b->settled_ms);
        jsonx_add_str(o, "note", b->note);
    }
    cJSON_AddItemToArray(arg, o);
    return 0;
}

int
api_view_node_full(struct schedd *sd, const struct node *node, cJSON **out)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    cJSON *o = api_view_node(node);
    int rc = api_view_health_full(sd, node, o);

    if (rc == 0)
        rc = db_blame_node_history(sd->db, node->name, API_VIEW_NODE_BLAME,
            blame_add, cJSON_AddArrayToObject(o, "blame"));

    if (rc < 0) {
        cJSON_Delete(o);
        return rc;
    }
    return view_add_events(sd, o,
        schedd_subject_node(subject, sizeof(subject), node->name),
        API_VIEW_NODE_EVENTS, out);
}
