/*
 * pass.c - run the scheduling pass over the model (pass.h)
 */
#include "scheduler/pass.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/launch.h"
#include "scheduler/sched_pass.h"

#define PASS_SPACING_MS 10
#define PASS_RESTART_RETRY_MS 5000

struct pass {
    struct schedd *sd;
    const struct sched_policy *policy;
    uv_timer_t timer;         /* deferred, coalesced pass */
    uv_timer_t backoff_timer; /* the next restart backoff to expire */
    bool closing;             /* pass_destroy was called */
    bool armed;
    int64_t last_mono;        /* when the last pass started */
    int64_t last_ms;          /* how long it took */
    int64_t restart_retry_ms; /* wall clock: a restarting job the last
                               * pass left unplaced is tried again from
                               * then; 0 none */
};

/* The input of one pass, built from the model. */
struct pass_input {
    struct sched_node *nodes; /* by node->idx */
    size_t nnodes;
    int *gpu_pool;
    struct sched_job *jobs;
    size_t njobs;
};

static void
pass_retry_at(struct pass *ps, int64_t at)
{
    if (ps->restart_retry_ms == 0 || at < ps->restart_retry_ms)
        ps->restart_retry_ms = at;
}

/* Mark the jobs whose earlier attempt still holds a placement. */
static void
pass_mark_draining(struct schedd *sd)
{
    for (struct job *job = job_table_first(&sd->jobs); job;
         job = job_table_next(job))
        job->draining = false;
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        struct job *job;

        if (proto_attempt_state_active(a->state) || attempt_fully_released(a))
            continue;
        job = job_table_find(&sd->jobs, a->job_id);
        if (job)
            job->draining = true;
    }
}

/* Every node with what is free on it, indexed by node->idx. */
static void
pass_nodes(struct schedd *sd, struct pass_input *in)
{
    size_t ngpus = 0, off = 0;

    in->nnodes = node_table_count(&sd->nodes);
    in->nodes = xcalloc(in->nnodes + 1, sizeof(*in->nodes));
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node))
        ngpus += node->ngpus;
    in->gpu_pool = xcalloc(ngpus + 1, sizeof(*in->gpu_pool));
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node)) {
        struct sched_node *n = &in->nodes[node->idx];

        n->name = node->name;
        n->schedulable = node_schedulable(node);
        n->suspect = node->state == NODE_STATE_SUSPECT;
        n->cpus = node->cpus;
        n->memory_mb = node->memory_mb;
        n->ngpus = node->ngpus;
        n->free_cpus = node_free_cpus(node);
        n->free_memory_mb = node_free_memory_mb(node);
        n->free_gpus = in->gpu_pool + off;
        n->nfree_gpus = node_free_gpus(node, n->free_gpus);
        off += node->ngpus;
        n->data = node;
    }
}

/* Why a restarting job is not in this pass, or NULL when it is. */
static char *
restart_wait(const struct job *job, int64_t now)
{
    const char *base = job->restart_reason ? job->restart_reason : "";

    if (job->draining)
        return xasprintf("%s; waiting for attempt %d to stop on every node",
            base, job->attempt);
    if (job->not_before_ms > now)
        return xasprintf("%s; next attempt in %lld ms", base,
            (long long)(job->not_before_ms - now));
    return NULL;
}

struct blamed_ctx {
    struct schedd *sd;
    size_t *idx;
    size_t n;
};

static int
blamed_add(const struct db_blame *b, void *arg)
{
    struct blamed_ctx *ctx = arg;
    struct node *node = node_table_find(&ctx->sd->nodes, b->node);

    if (node == NULL)
        return 0;
    for (size_t i = 0; i < ctx->n; i++) {
        if (ctx->idx[i] == node->idx)
            return 0;
    }
    ctx->idx = xreallocarray(ctx->idx, ctx->n + 1, sizeof(*ctx->idx));
    ctx->idx[ctx->n++] = node->idx;
    return 0;
}

/* A restarting job's view for the pass: its reserved nodes (preferred, in
 * node-rank order) and the nodes blamed for its recent failures. */
static int
restart_view(struct schedd *sd, struct job *job, struct sched_job *j,
    int64_t now)
{
    struct blamed_ctx ctx = { sd, NULL, 0 };
    size_t *prefer = xcalloc(job->nreserved + 1, sizeof(*prefer));
    size_t np = 0;
    int rc;

    for (size_t i = 0; i < job->nreserved; i++) {
        struct node *node = node_table_find(&sd->nodes, job->reserved[i]);

        if (node)
            prefer[np++] = node->idx;
    }
    j->restarting = true;
    j->prefer = prefer;
    j->nprefer = np;
    rc = db_blame_job_foreach(sd->db, job->id, now - sd->policy.blame_window_ms,
        blamed_add, &ctx);
    j->exclude = ctx.idx;
    j->nexclude = ctx.n;
    return rc;
}

/* A restarting job: reserve its nodes; whether it may be placed now. */
static bool
restart_ready(struct pass *ps, struct pass_input *in, struct job *job,
    int64_t now)
{
    char *wait = restart_wait(job, now);

    /* Restart in place: nobody else gets its nodes meanwhile. */
    for (size_t i = 0; i < job->nreserved; i++) {
        struct node *node = node_table_find(&ps->sd->nodes, job->reserved[i]);

        if (node)
            in->nodes[node->idx].reserved_for = job->id;
    }
    if (wait == NULL)
        return true;
    job_set_reason(job, wait);
    free(wait);
    if (!job->draining)
        pass_retry_at(ps, job->not_before_ms);
    return false;
}

/* Whether a queued job may be in this pass as far as the user is
 * concerned: not while held (its reason, "held by ...", is the hold's),
 * and a requeued job not until its earlier attempt stopped everywhere. */
static bool
pending_ready(struct job *job)
{
    char *why;

    if (job_held(job))
        return false;
    if (job->state != PROTO_JOB_PENDING || !job->draining)
        return true;
    why = xasprintf("requeued; waiting for attempt %d to stop on every node",
        job->attempt);
    job_set_reason(job, why);
    free(why);
    return false;
}

/* The queued jobs that may be placed now. */
static int
pass_jobs(struct pass *ps, struct pass_input *in, int64_t now)
{
    struct schedd *sd = ps->sd;
    int rc = 0;

    for (struct job *job = job_table_first(&sd->jobs); job;
         job = job_table_next(job))
        in->njobs += proto_job_state_queued(job->state);
    in->jobs = xcalloc(in->njobs + 1, sizeof(*in->jobs));
    in->njobs = 0;
    for (struct job *job = job_table_first(&sd->jobs); job;
         job = job_table_next(job)) {
        struct sched_job *j;

        if (!proto_job_state_queued(job->state) || !pending_ready(job) ||
            (job->state == PROTO_JOB_RESTARTING &&
                !restart_ready(ps, in, job, now)))
            continue;
        j = &in->jobs[in->njobs++];
        j->id = job->id;
        j->priority = job->spec.priority;
        j->nodes = job->spec.nodes;
        j->ranks_per_node = job->spec.ranks_per_node;
        j->gpus_per_node = job->spec.gpus_per_node;
        j->cpus_per_rank = job->spec.cpus_per_rank;
        j->memory_mb_per_node = job->spec.memory_mb_per_node;
        j->data = job;
        if (job->state == PROTO_JOB_RESTARTING && rc == 0)
            rc = restart_view(sd, job, j, now);
    }
    return rc;
}

/* Why job j was not placed, into its reason. */
static void
pass_unplaced(struct pass *ps, struct sched_job *j, int64_t now)
{
    struct job *job = j->data;
    char *why;

    if (job->state != PROTO_JOB_RESTARTING) {
        job_set_reason(job, j->reason);
        return;
    }
    why = xasprintf("%s; %s",
        job->restart_reason ? job->restart_reason : "restarting", j->reason);
    job_set_reason(job, why);
    free(why);
    pass_retry_at(ps, now + PASS_RESTART_RETRY_MS);
}

/* Turn the pass's decisions into placements. */
static int
pass_apply(struct pass *ps, struct pass_input *in, int64_t now)
{
    struct node **chosen = NULL;
    int rc = 0;

    for (size_t i = 0; i < in->njobs; i++) {
        struct sched_job *j = &in->jobs[i];
        struct job *job = j->data;
        int port;

        if (!j->placed) {
            pass_unplaced(ps, j, now);
            continue;
        }
        if (rc < 0)
            continue;
        if ((port = portpool_alloc(&ps->sd->ports)) < 0) {
            job_set_reason(job, "no free master port");
            continue;
        }
        chosen = xreallocarray(chosen, (size_t)j->nodes, sizeof(*chosen));
        for (int k = 0; k < j->nodes; k++)
            chosen[k] = in->nodes[j->node_idx[k]].data;
        rc = launch_place(ps->sd, job, chosen, j->gpus, port);
    }
    free(chosen);
    return rc;
}

static void
pass_input_release(struct pass_input *in)
{
    for (size_t i = 0; i < in->njobs; i++) {
        free((void *)in->jobs[i].prefer);
        free((void *)in->jobs[i].exclude);
        sched_job_release(&in->jobs[i]);
    }
    free(in->jobs);
    free(in->gpu_pool);
    free(in->nodes);
}

static void pass_backoff_arm(struct pass *ps);

/* One pass; false when there was nothing queued to look at. */
static bool
pass_run(struct pass *ps)
{
    struct schedd *sd = ps->sd;
    struct pass_input in = { 0 };
    int64_t now = timeid_now_ms();
    size_t nqueued = 0;
    int rc;

    ps->restart_retry_ms = 0;
    pass_mark_draining(sd);
    for (struct job *job = job_table_first(&sd->jobs); job;
         job = job_table_next(job))
        nqueued += proto_job_state_queued(job->state);
    if (nqueued == 0)
        return false;
    pass_nodes(sd, &in);
    rc = pass_jobs(ps, &in, now);
    if (rc < 0) {
        schedd_db_error(sd, rc);
    } else {
        sched_pass(ps->policy, in.nodes, in.nnodes, in.jobs, in.njobs,
            (size_t)portpool_nfree(&sd->ports));
        pass_apply(ps, &in, now);
    }
    pass_input_release(&in);
    pass_backoff_arm(ps);
    return true;
}

/* ---- timers ------------------------------------------------------------- */

static void
pass_timer_cb(uv_timer_t *t)
{
    struct pass *ps = container_of(t, struct pass, timer);
    int64_t start = timeid_mono_ms();
    uint64_t t0 = uv_hrtime();

    ps->armed = false;
    ps->last_mono = start;
    if (!schedd_available(ps->sd))
        return;
    if (pass_run(ps))
        metrics_hist_observe(&ps->sd->pass_hist,
            (double)(uv_hrtime() - t0) / 1e9);
    ps->last_ms = timeid_mono_ms() - start;
    if (ps->last_ms > 100)
        log_info("scheduling pass took %lld ms", (long long)ps->last_ms);
}

static void
pass_backoff_cb(uv_timer_t *t)
{
    pass_trigger(container_of(t, struct pass, backoff_timer));
}

/* Arm the backoff timer for the earliest pending restart (if any). */
static void
pass_backoff_arm(struct pass *ps)
{
    int64_t now = timeid_now_ms(), next = 0;
    int rc;

    if (ps->sd->stopping || ps->closing)
        return;
    for (struct job *job = job_table_first(&ps->sd->jobs); job;
         job = job_table_next(job)) {
        if (job->state == PROTO_JOB_RESTARTING && job->not_before_ms > now &&
            (next == 0 || job->not_before_ms < next))
            next = job->not_before_ms;
    }
    if (next == 0)
        return;
    rc = uv_timer_start(&ps->backoff_timer, pass_backoff_cb,
        (uint64_t)(next - now), 0);
    if (rc < 0)
        log_error("cannot arm the backoff timer: %s", uv_strerror(rc));
}

void
pass_trigger(struct pass *ps)
{
    int64_t since, spacing = PASS_SPACING_MS;
    uint64_t delay = 0;
    int rc;

    if (ps->armed || ps->sd->stopping || ps->closing)
        return;
    if (2 * ps->last_ms > spacing)
        spacing = 2 * ps->last_ms;
    since = timeid_mono_ms() - ps->last_mono;
    if (since >= 0 && since < spacing)
        delay = (uint64_t)(spacing - since);
    rc = uv_timer_start(&ps->timer, pass_timer_cb, delay, 0);
    if (rc < 0) {
        log_error("cannot arm the scheduling timer: %s", uv_strerror(rc));
        return;
    }
    ps->armed = true;
}

void
pass_tick(struct pass *ps, int64_t now_ms)
{
    if (ps->restart_retry_ms > 0 && now_ms >= ps->restart_retry_ms) {
        ps->restart_retry_ms = 0;
        pass_trigger(ps);
    }
}

static void
pass_hook_trigger(struct schedd *sd, void *arg)
{
    (void)sd;
    pass_trigger(arg);
}

struct pass *
pass_create(struct schedd *sd, const char *policy, struct err *err)
{
    const struct sched_policy *p = sched_policy_find(policy ? policy : "fifo");
    struct pass *ps;

    if (p == NULL) {
        err_set(err, -EINVAL, "unknown scheduling policy '%s' (known: %s)",
            policy, sched_policy_names());
        return NULL;
    }
    ps = xcalloc(1, sizeof(*ps));
    ps->sd = sd;
    ps->policy = p;
    uv_timer_init(sd->loop, &ps->timer);
    uv_timer_init(sd->loop, &ps->backoff_timer);
    sd->pass = ps;
    sd->hooks.sched_trigger = pass_hook_trigger;
    sd->hooks.sched_arg = ps;
    return ps;
}

void
pass_destroy(struct pass *ps)
{
    uv_handle_t *hs[2];

    if (ps == NULL)
        return;
    if (ps->sd->pass == ps) {
        ps->sd->pass = NULL;
        ps->sd->hooks.sched_trigger = NULL;
        ps->sd->hooks.sched_arg = NULL;
    }
    ps->closing = true;
    hs[0] = (uv_handle_t *)&ps->timer;
    hs[1] = (uv_handle_t *)&ps->backoff_timer;
    uvx_close(hs, ARRAY_SIZE(hs), free, ps);
}
