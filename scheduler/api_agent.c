/*
 * api_agent.c - the agents' endpoints: status, work (long poll), logs
 *
 * Status: a report registers the node the first time its name is seen,
 * updates its resources when they change, keeps last_seen in memory only
 * (heartbeats must not each cost an fsync; schedd.c writes last_seen
 * lazily, batched), records rank state changes, and releases resources
 * the agent no longer holds. On registration, a new agent_id, or the
 * first report after the scheduler started, the report is reconciled with
 * the placements the scheduler expects there: a placement the agent has
 * seen (its generation ≤ the agent's) but does not report is lost.
 *
 * Work: the desired state of a node is every active attempt placed on
 * it. A long poll is answered at once when the agent's generation differs
 * from the node's, else when the node's desired state changes
 * (api_agent_wake, called after the change was written to the open
 * transaction; the HTTP server writes the reply only after the commit) or
 * when wait_ms runs out.
 */
#include "scheduler/api.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/logstore.h"

#define API_WORK_WAIT_MAX_MS 60000
#define API_LOG_CHUNK_MAX (1024 * 1024)

/* A waiting GET /v1/agent/work. */
struct api_waiter {
    uv_timer_t timer;
    struct schedd *sd;
    struct node *node;
    struct http_deferred *d;
    struct api_waiter *prev, *next;
};

/* ---- desired state ------------------------------------------------------ */

/* The work message for node: one launch per active attempt placed there.
 * The launches borrow the model's strings; only the rank arrays are ours
 * (so they are freed here, not with proto_work_release). */
static cJSON *
work_json(const struct node *node)
{
    struct proto_work w = { .gen = node->gen };
    cJSON *json;

    w.jobs = xcalloc(node->nholds + 1, sizeof(*w.jobs));
    for (size_t i = 0; i < node->nholds; i++) {
        const struct placement *p = node->holds[i];
        const struct attempt *a = p->attempt;
        const struct job *job = a->job;
        struct proto_launch *l;

        if (!attempt_state_active(a->state) || job == NULL)
            continue;
        l = &w.jobs[w.njobs++];
        l->job = job->id;
        l->attempt = a->num;
        l->name = job->spec.name;
        l->user = job->user;
        l->argv = job->spec.argv;
        l->argc = job->spec.argc;
        l->env = job->spec.env;
        l->nenv = job->spec.nenv;
        l->workdir = job->spec.workdir;
        l->nnodes = a->nnodes;
        l->node_rank = p->node_rank;
        l->ranks_per_node = a->ranks_per_node;
        l->world_size = a->nnodes * a->ranks_per_node;
        l->master_addr = a->master_addr;
        l->master_port = a->master_port;
        l->checkpoint_dir = job->spec.checkpoint_dir;
        l->resume_from = a->resume_from;
        l->resume_step = a->resume_step;
        l->keep_checkpoints = job->spec.keep_checkpoints;
        /* Node rank 0 scans the directory for the convention's COMPLETE
         * markers (and prunes beyond keep_checkpoints). */
        l->scan_checkpoints = p->node_rank == 0 &&
                              job->spec.checkpoint_dir[0] != '\0';
        l->dump_seq = a->dump_seq;
        l->nranks = (size_t)a->ranks_per_node;
        l->ranks = xcalloc(l->nranks, sizeof(*l->ranks));
        for (int lr = 0; lr < a->ranks_per_node; lr++) {
            struct proto_launch_rank *rk = &l->ranks[lr];

            rk->rank = p->node_rank * a->ranks_per_node + lr;
            rk->local_rank = lr;
            rk->gpus = xcalloc(p->ngpus + 1, sizeof(*rk->gpus));
            rk->ngpus = attempt_rank_gpus(p, a->ranks_per_node, lr,
                rk->gpus);
        }
    }
    json = proto_work_to_json(&w);
    for (size_t i = 0; i < w.njobs; i++) {
        for (size_t r = 0; r < w.jobs[i].nranks; r++)
            free(w.jobs[i].ranks[r].gpus);
        free(w.jobs[i].ranks);
    }
    free(w.jobs);
    return json;
}

/* ---- long polls --------------------------------------------------------- */

static void
waiter_close_cb(uv_handle_t *h)
{
    free(container_of((uv_timer_t *)h, struct api_waiter, timer));
}

static void
waiter_unlink(struct api_waiter *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else if (w->node->waiters == w)
        w->node->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
    uv_timer_stop(&w->timer);
    uv_close((uv_handle_t *)&w->timer, waiter_close_cb);
}

/* Answer w with the node's desired state and forget it. */
static void
waiter_answer(struct api_waiter *w)
{
    struct http_resp *resp = http_deferred_resp(w->d);

    resp->durable = true;
    http_resp_json(resp, 200, work_json(w->node));
    http_deferred_finish(w->d);
    waiter_unlink(w);
}

static void
waiter_timeout_cb(uv_timer_t *t)
{
    waiter_answer(container_of(t, struct api_waiter, timer));
}

static void
waiter_cancel_cb(struct http_deferred *d, void *arg)
{
    struct api_waiter *w = arg;
    struct node *node = w->node;

    waiter_unlink(w);
    if (node->waiters == NULL && !w->sd->stopping) {
        log_info("node=%s agent connection closed; no new work until it "
            "returns", node->name);
        node->agent_gone = true;
    }
}

/* Any request from the node's agent shows it is there. */
static void
agent_heard(struct schedd *sd, struct node *node)
{
    if (!node->agent_gone)
        return;
    node->agent_gone = false;
    schedd_sched_trigger(sd);
}

void
api_agent_wake(struct schedd *sd, struct node *node)
{
    while (node->waiters)
        waiter_answer(node->waiters);
}

void
api_agent_abort(struct schedd *sd, struct node *node)
{
    while (node->waiters) {
        struct api_waiter *w = node->waiters;
        struct http_resp *resp = http_deferred_resp(w->d);

        resp->durable = false;
        http_resp_error(resp, 503, "unavailable",
            "the scheduler is reloading its state; retry");
        http_deferred_finish(w->d);
        waiter_unlink(w);
    }
}

/* ---- query helpers ------------------------------------------------------ */

/* The node= parameter, which must name the authenticated agent's node. */
static int
agent_node_param(const struct api_req *r, char *buf, size_t len,
    struct err *err)
{
    if (http_query_get(r->http, "node", buf, len) == NULL)
        return err_set(err, -EINVAL, "missing field 'node' (query)");
    if (strcmp(buf, r->who.node) != 0)
        return err_set(err, -EPERM,
            "the credential is for node '%s', not '%.64s'", r->who.node,
            buf);
    return 0;
}

static int
query_int_required(const struct api_req *r, const char *key, int64_t min,
    int64_t max, int64_t *out, struct err *err)
{
    int rc = api_query_int(r->http, key, min, max, out, err);

    if (rc == -ENOENT)
        return err_set(err, -EINVAL, "missing field '%s' (query)", key);
    return rc;
}

/* ---- status ------------------------------------------------------------- */

static bool
report_lists(const struct proto_node_report *rep, const struct attempt *a)
{
    for (size_t i = 0; i < rep->njobs; i++) {
        if (rep->jobs[i].job == a->job_id &&
            rep->jobs[i].attempt == a->num)
            return true;
    }
    return false;
}

/* Whether a job status carries checkpoint or progress data (what fencing
 * rejects from an attempt that is not the job's latest). */
static const char *
status_payload(const struct proto_job_status *js)
{
    if (js->ncheckpoints > 0)
        return "checkpoint scan";
    for (size_t i = 0; i < js->nranks; i++) {
        if (js->ranks[i].nckpt_steps > 0)
            return "checkpoint commits";
    }
    for (size_t i = 0; i < js->nranks; i++) {
        if (js->ranks[i].state == PROTO_RANK_RUNNING)
            return "progress";
    }
    return NULL;
}

static struct placement *
node_hold_find(const struct node *node, int64_t job, int attempt)
{
    for (size_t i = 0; i < node->nholds; i++) {
        struct placement *p = node->holds[i];

        if (p->attempt->job_id == job && p->attempt->num == attempt)
            return p;
    }
    return NULL;
}

static int
node_event(struct schedd *sd, const struct node *node, const char *kind,
    cJSON *detail)
{
    char subject[PROTO_NODE_NAME_MAX + 8];
    char actor[PROTO_NODE_NAME_MAX + 8];

    snprintf(subject, sizeof(subject), "node/%s", node->name);
    snprintf(actor, sizeof(actor), "agent/%s", node->name);
    return schedd_event(sd, actor, subject, kind, detail);
}

static cJSON *
resources_json(const struct proto_node_report *rep)
{
    cJSON *d = cJSON_CreateObject();

    jsonx_add_str(d, "addr", rep->addr);
    jsonx_add_int(d, "cpus", rep->cpus);
    jsonx_add_int(d, "memory_mb", rep->memory_mb);
    jsonx_add_int_array(d, "gpus", rep->gpus, rep->ngpus);
    return d;
}

/* Create the node, or bring its resources and agent identity up to date.
 * *fresh_agent: a registration or a new agent process. */
static int
status_node(struct schedd *sd, const struct proto_node_report *rep,
    int64_t now, struct node **out, bool *fresh_agent)
{
    struct node *node = node_table_find(&sd->nodes, rep->node);
    bool changed;
    int rc;

    *fresh_agent = false;
    if (node == NULL) {
        node = node_create(rep->node);
        node_update_resources(node, rep->addr, rep->cpus, rep->memory_mb,
            rep->gpus, rep->ngpus, rep->labels, rep->nlabels);
        free(node->agent_id);
        node->agent_id = xstrdup(rep->agent_id);
        node->registered_ms = now;
        node->last_seen_ms = now;
        node->last_seen_saved_ms = now;
        node->last_seen_mono = timeid_mono_ms();
        node->reconciled = true;
        node->gen = schedd_next_gen(sd);
        rc = db_node_insert(sd->db, node);
        if (rc < 0) {
            node_destroy(node);
            return schedd_db_error(sd, rc);
        }
        rc = node_event(sd, node, "node_registered", resources_json(rep));
        if (rc < 0) {
            node_destroy(node);
            return rc;
        }
        node_table_add(&sd->nodes, node);
        log_info("node=%s registered addr=%s cpus=%d memory_mb=%lld gpus=%zu",
            node->name, node->addr, node->cpus, (long long)node->memory_mb,
            node->ngpus);
        schedd_sched_trigger(sd);
        *out = node;
        return 0;
    }
    *out = node;
    changed = node_update_resources(node, rep->addr, rep->cpus,
        rep->memory_mb, rep->gpus, rep->ngpus, rep->labels, rep->nlabels);
    if (strcmp(node->agent_id, rep->agent_id) != 0) {
        free(node->agent_id);
        node->agent_id = xstrdup(rep->agent_id);
        *fresh_agent = true;
        changed = true;
    }
    if (rep->reg)
        *fresh_agent = true;
    if (changed) {
        rc = db_node_update(sd->db, node);
        if (rc < 0)
            return schedd_db_error(sd, rc);
        rc = node_event(sd, node, *fresh_agent ? "node_registered"
                                               : "node_updated",
            resources_json(rep));
        if (rc < 0)
            return rc;
        log_info("node=%s %s", node->name,
            *fresh_agent ? "agent (re)started" : "resources changed");
        schedd_sched_trigger(sd);
    }
    return 0;
}

int
api_agent_status(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    struct proto_node_report rep;
    struct node *node = NULL;
    cJSON *json = NULL, *o;
    int64_t now = timeid_now_ms();
    bool fresh_agent;
    int rc;

    if ((rc = api_body_json(r->http, &json, err)) < 0)
        return rc;
    rc = proto_node_report_from_json(json, &rep, err);
    cJSON_Delete(json);
    if (rc < 0)
        return rc;
    if (strcmp(rep.node, r->who.node) != 0) {
        rc = err_set(err, -EPERM,
            "the credential is for node '%s', the report names '%s'",
            r->who.node, rep.node);
        goto out;
    }
    if ((rc = status_node(sd, &rep, now, &node, &fresh_agent)) < 0)
        goto out;
    node->last_seen_ms = now;
    node->last_seen_mono = timeid_mono_ms();
    agent_heard(sd, node);
    if (node->lost) {
        node->lost = false;
        if ((rc = schedd_node_refresh(sd, node, "scheduler",
                 "status received")) < 0)
            goto out;
    }

    /* Reconcile: placements the agent has seen but does not hold. A new
     * agent process also answers for what its predecessor had applied:
     * had it re-adopted those ranks, it would list them. */
    if (fresh_agent || !node->reconciled) {
        uint64_t seen = rep.gen;

        if (fresh_agent && node->agent_gen > seen)
            seen = node->agent_gen;
        for (size_t i = 0; i < node->nholds && rc == 0; i++) {
            struct placement *p = node->holds[i];

            if (attempt_state_active(p->attempt->state) && p->gen <= seen &&
                !report_lists(&rep, p->attempt))
                rc = schedd_placement_lost(sd, p, POLICY_KIND_LOST_RANKS,
                    "the node's agent does not hold it");
        }
        if (!node->reconciled)
            schedd_sched_trigger(sd);
        node->reconciled = true;
        if (rc < 0)
            goto out;
    }
    node->agent_gen = rep.gen;
    /* New generations must exceed anything an agent has seen, even if the
     * wall clock went back across a scheduler restart. */
    if (rep.gen > sd->gen)
        sd->gen = rep.gen;

    /* Rank states of what the agent runs for us. */
    for (size_t i = 0; i < rep.njobs && rc == 0; i++) {
        struct placement *p = node_hold_find(node, rep.jobs[i].job,
            rep.jobs[i].attempt);
        struct proto_job_status *js = &rep.jobs[i];
        const struct job *job;
        const char *what;
        size_t keep = 0;

        if (p == NULL) {
            /* Fencing: what an older attempt of a live job (on a node
             * whose placements were given up, e.g. a partition that
             * healed) still says is ignored, and said so once. */
            job = job_table_find(&sd->jobs, js->job);
            what = status_payload(js);
            if (job && js->attempt < job->attempt && what)
                rc = schedd_stale_report(sd, node, js->job, js->attempt,
                    what);
            continue;
        }
        /* Only the ranks that run on this node count as its evidence. */
        for (size_t k = 0; k < js->nranks; k++) {
            if (js->ranks[k].rank / p->attempt->ranks_per_node ==
                p->node_rank) {
                struct proto_rank_status tmp = js->ranks[keep];

                js->ranks[keep++] = js->ranks[k];
                js->ranks[k] = tmp;
            }
        }
        {
            struct proto_job_status view = *js;

            view.nranks = keep;
            rc = schedd_attempt_report(sd, p, &view);
        }
    }
    if (rc < 0)
        goto out;

    /* Release what the agent no longer holds and we no longer want. */
    for (size_t i = 0; i < node->nholds && rc == 0;) {
        struct placement *p = node->holds[i];

        if (!attempt_state_active(p->attempt->state) &&
            !report_lists(&rep, p->attempt)) {
            rc = schedd_placement_release(sd, p);
            continue;
        }
        i++;
    }
    if (rc < 0)
        goto out;

    o = cJSON_CreateObject();
    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "heartbeat_ms", sd->heartbeat_ms);
    jsonx_add_int(o, "gen", (int64_t)node->gen);
    /* The agent renews every supervisor's lease to now + lease_ms. */
    jsonx_add_int(o, "lease_ms", sd->lease_ms);
    http_resp_json(resp, 200, o);
out:
    proto_node_report_release(&rep);
    return rc;
}

/* ---- work --------------------------------------------------------------- */

int
api_agent_work(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char name[PROTO_NODE_NAME_MAX + 2];
    struct api_waiter *w;
    struct node *node;
    int64_t gen = 0, wait_ms = 0;
    int rc;

    if ((rc = agent_node_param(r, name, sizeof(name), err)) < 0)
        return rc;
    rc = api_query_int(r->http, "gen", 0, INT64_MAX, &gen, err);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    rc = api_query_int(r->http, "wait_ms", 0, INT64_MAX, &wait_ms, err);
    if (rc < 0 && rc != -ENOENT)
        return rc;
    if (wait_ms > API_WORK_WAIT_MAX_MS)
        wait_ms = API_WORK_WAIT_MAX_MS;
    node = node_table_find(&sd->nodes, name);
    if (node == NULL)
        return err_set(err, -ENOENT,
            "unknown node '%s'; POST /v1/agent/status first", name);
    agent_heard(sd, node);
    if (node->gen != (uint64_t)gen || wait_ms == 0) {
        http_resp_json(resp, 200, work_json(node));
        return 0;
    }
    w = xcalloc(1, sizeof(*w));
    w->sd = sd;
    w->node = node;
    rc = uv_timer_init(sd->loop, &w->timer);
    if (rc < 0) {
        free(w);
        return err_set(err, -EFAULT, "cannot start a timer: %s",
            uv_strerror(rc));
    }
    rc = uv_timer_start(&w->timer, waiter_timeout_cb, (uint64_t)wait_ms, 0);
    if (rc < 0) {
        uv_close((uv_handle_t *)&w->timer, waiter_close_cb);
        return err_set(err, -EFAULT, "cannot start a timer: %s",
            uv_strerror(rc));
    }
    w->d = http_resp_defer(resp, waiter_cancel_cb, w);
    w->next = node->waiters;
    if (node->waiters)
        node->waiters->prev = w;
    node->waiters = w;
    return 0;
}

/* ---- logs --------------------------------------------------------------- */

/* Whether `rank` of (job, attempt) runs on node; -ENOENT when the attempt
 * or rank does not exist, -EPERM when it runs elsewhere. */
static int
log_rank_check(struct schedd *sd, const char *name, int64_t job,
    int attempt, int rank, struct err *err)
{
    const struct node *node = node_table_find(&sd->nodes, name);
    struct placement *p = node ? node_hold_find(node, job, attempt) : NULL;
    struct attempt *a = NULL;
    int rc;

    if (p) {
        if (rank / p->attempt->ranks_per_node == p->node_rank)
            return 0;
        return err_set(err, -EPERM, "rank %d of job %lld attempt %d does not "
            "run on node '%s'", rank, (long long)job, attempt, name);
    }
    rc = db_attempt_get(sd->db, job, attempt, &a);
    if (rc == -ENOENT)
        return err_set(err, -ENOENT, "no attempt %d of job %lld", attempt,
            (long long)job);
    if (rc < 0)
        return rc;
    if (rank < 0 || (size_t)rank >= a->nranks)
        rc = err_set(err, -ENOENT, "job %lld attempt %d has no rank %d",
            (long long)job, attempt, rank);
    else if (strcmp(a->placements[a->ranks[rank].node_rank].node_name,
                 name) != 0)
        rc = err_set(err, -EPERM, "rank %d of job %lld attempt %d does not "
            "run on node '%s'", rank, (long long)job, attempt, name);
    attempt_destroy(a);
    return rc;
}

int
api_agent_logs(struct schedd *sd, const struct api_req *r,
    struct http_resp *resp, struct err *err)
{
    char name[PROTO_NODE_NAME_MAX + 2], stream[8];
    int64_t job, attempt, rank, offset, size = 0;
    bool err_stream = false;
    cJSON *o;
    int rc;

    if ((rc = agent_node_param(r, name, sizeof(name), err)) < 0 ||
        (rc = query_int_required(r, "job", 1, INT64_MAX / 2, &job, err)) <
            0 ||
        (rc = query_int_required(r, "attempt", 1, INT32_MAX, &attempt,
             err)) < 0 ||
        (rc = query_int_required(r, "rank", 0, INT32_MAX, &rank, err)) < 0 ||
        (rc = query_int_required(r, "offset", 0, INT64_MAX / 2, &offset,
             err)) < 0)
        return rc;
    if (http_query_get(r->http, "stream", stream, sizeof(stream))) {
        if (strcmp(stream, "err") == 0)
            err_stream = true;
        else if (strcmp(stream, "out") != 0)
            return err_set(err, -EINVAL,
                "query parameter 'stream': must be out or err");
    }
    if (r->http->body_len > API_LOG_CHUNK_MAX)
        return err_set(err, -E2BIG, "log chunk over %d bytes",
            API_LOG_CHUNK_MAX);
    rc = log_rank_check(sd, name, job, (int)attempt, (int)rank, err);
    if (rc < 0)
        return rc;
    rc = logstore_write(sd->logs, job, (int)attempt, (int)rank, err_stream,
        offset, r->http->body, r->http->body_len, &size);
    if (rc < 0)
        return err_set(err, -EFAULT,
            "cannot store log of job %lld rank %d: %s", (long long)job,
            (int)rank, strerror(-rc));
    o = cJSON_CreateObject();
    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "size", size);
    http_resp_json(resp, 200, o);
    return 0;
}
