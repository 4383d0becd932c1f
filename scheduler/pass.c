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
#include "scheduler/quota.h"
#include "scheduler/sched_pass.h"

#define PASS_SPACING_MS 10
#define PASS_RESTART_RETRY_MS 5000
#define PASS_SHAPES 32

/* A request shape judged against the last pass's nodes (pass_queued). */
struct pass_shape {
    struct sched_job job; /* its nodes and per-node resources */
    bool never;           /* could never fit: reason in job.reason */
};

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
    uint64_t seq;             /* passes run (job->draining) */
    struct sched_job *jobs;   /* the queue's input, kept between passes
                               * (no allocation per pass) */
    size_t jobs_cap;
    /* What the last pass found, for a job queued since (pass_queued):
     * the job that blocked the queue (0 none) and the schedulable nodes'
     * largest resources and count (sched.c's cheap never-fit test). */
    int64_t blocker;
    int64_t max_cpus, max_gpus, max_memory_mb;
    size_t nschedulable;
    /* The last pass's nodes (kept; valid while nodes_valid, which only a
     * pass that built them sets) and the shapes judged against them. */
    struct sched_node *nodes;
    size_t nodes_cap;
    int *gpu_pool;
    size_t gpu_cap;
    size_t nnodes;
    uint64_t sig;        /* the last pass's nodes: what a never-fit
                          * verdict depends on (pass_nodes); never 0 */
    uint64_t parked_sig; /* the nodes the parked jobs could never fit */
    bool nodes_valid;
    struct pass_shape shapes[PASS_SHAPES];
    size_t nshapes;
};

/* The input of one pass, built from the model. */
struct pass_input {
    struct sched_node *nodes; /* by node->idx */
    size_t nnodes;
    int *gpu_pool;
    struct sched_job *jobs;
    size_t njobs;
    struct quota_running running; /* per user, for user_max_running_jobs */
};

static void
pass_retry_at(struct pass *ps, int64_t at)
{
    if (ps->restart_retry_ms == 0 || at < ps->restart_retry_ms)
        ps->restart_retry_ms = at;
}

/* Mark the jobs whose earlier attempt still holds a placement: their
 * draining is this pass's number (no walk over every job to clear it). */
static void
pass_mark_draining(struct pass *ps)
{
    struct schedd *sd = ps->sd;

    ps->seq++;
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        struct job *job;

        if (proto_attempt_state_active(a->state) || attempt_fully_released(a))
            continue;
        job = job_table_find(&sd->jobs, a->job_id);
        if (job)
            job->draining = ps->seq;
    }
}

/* What "could never fit" depends on: every node's totals and whether it
 * takes work (FNV-1a; never 0). While it stays the same, a job the pass
 * found could never fit still cannot, and the pass skips it. */
static uint64_t
pass_sig(const struct pass_input *in)
{
    uint64_t h = 14695981039346656037ULL;

    for (size_t i = 0; i < in->nnodes; i++) {
        const struct sched_node *n = &in->nodes[i];
        uint64_t v[4] = { (uint64_t)n->schedulable, (uint64_t)n->cpus,
            (uint64_t)n->ngpus, (uint64_t)n->memory_mb };

        for (int k = 0; k < 4; k++)
            h = (h ^ v[k]) * 1099511628211ULL;
    }
    h = (h ^ in->nnodes) * 1099511628211ULL;
    return h ? h : 1;
}

/* Every node with what is free on it, indexed by node->idx, into the
 * arrays kept between passes. */
static void
pass_nodes(struct pass *ps, struct pass_input *in)
{
    struct schedd *sd = ps->sd;
    size_t ngpus = 0, off = 0;

    in->nnodes = node_table_count(&sd->nodes);
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node))
        ngpus += node->ngpus;
    if (in->nnodes + 1 > ps->nodes_cap) {
        ps->nodes_cap = in->nnodes + 1;
        ps->nodes = xreallocarray(ps->nodes, ps->nodes_cap, sizeof(*ps->nodes));
    }
    if (ngpus + 1 > ps->gpu_cap) {
        ps->gpu_cap = ngpus + 1;
        ps->gpu_pool = xreallocarray(ps->gpu_pool, ps->gpu_cap,
            sizeof(*ps->gpu_pool));
    }
    memset(ps->nodes, 0, (in->nnodes + 1) * sizeof(*ps->nodes));
    in->nodes = ps->nodes;
    in->gpu_pool = ps->gpu_pool;
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
        /* Every master port of it held: it takes no new attempt for now
         * (simpler than letting it be any node rank but 0; with ports
         * per node that means master_port_count attempts mastered there). */
        n->free_masters = node->ports != NULL ? portpool_nfree(node->ports)
                                              : sd->master_port_count;
        if (n->free_masters == 0) {
            n->free_cpus = 0;
            n->free_memory_mb = 0;
            n->nfree_gpus = 0;
        }
        n->data = node;
    }
    ps->sig = pass_sig(in);
}

/* The schedulable nodes' largest resources and count, for pass_queued. */
static void
pass_maxima(struct pass *ps, const struct pass_input *in)
{
    ps->max_cpus = ps->max_gpus = ps->max_memory_mb = 0;
    ps->nschedulable = 0;
    for (size_t i = 0; i < in->nnodes; i++) {
        const struct sched_node *n = &in->nodes[i];

        if (!n->schedulable)
            continue;
        ps->nschedulable++;
        if (n->cpus > ps->max_cpus)
            ps->max_cpus = n->cpus;
        if ((int64_t)n->ngpus > ps->max_gpus)
            ps->max_gpus = (int64_t)n->ngpus;
        if (n->memory_mb > ps->max_memory_mb)
            ps->max_memory_mb = n->memory_mb;
    }
}

/* Why a restarting job is not in this pass, or NULL when it is. */
static char *
restart_wait(const struct pass *ps, const struct job *job, int64_t now)
{
    const char *base = job->restart_reason ? job->restart_reason : "";

    if (job->draining == ps->seq)
        return xasprintf("%s; waiting for attempt %d to stop on every node",
            base, job->attempt);
    if (job->not_before_ms > now)
        return xasprintf("%s; next attempt in %lld ms", base,
            (long long)(job->not_before_ms - now));
    return NULL;
}

/* The nodes blamed for a job's recent failures as the store has them:
 * names and times, read into the job when blame changed since. */
struct blamed_read {
    char **names;
    int64_t *ms;
    size_t n;
};

static int
pass_blamed_copy(const struct db_blame *b, void *arg)
{
    struct blamed_read *r = arg;

    r->names = xreallocarray(r->names, r->n + 1, sizeof(*r->names));
    r->ms = xreallocarray(r->ms, r->n + 1, sizeof(*r->ms));
    r->names[r->n] = xstrdup(b->node);
    r->ms[r->n++] = b->time_ms;
    return 0;
}

/* The job's blamed nodes in memory: read from the store only when some
 * blame was written since the job's copy was read (db_blame_gen), so a
 * pass reads nothing in the common case. The window is applied on use. */
static int
blamed_refresh(struct schedd *sd, struct job *job, int64_t now)
{
    struct blamed_read r = { 0 };
    uint64_t gen = db_blame_gen(sd->db);
    int rc;

    if (job->blamed_gen == gen)
        return 0;
    /* The strings are borrowed for the callback only: copy as they come. */
    rc = db_blame_job_foreach(sd->db, job->id, now - sd->policy.blame_window_ms,
        pass_blamed_copy, &r);
    if (rc == 0)
        job_set_blamed(job, (const char *const *)r.names, r.ms, r.n, gen);
    for (size_t i = 0; i < r.n; i++)
        free(r.names[i]);
    free(r.names);
    free(r.ms);
    return rc;
}

/* A restarting job's view for the pass: its reserved nodes (preferred, in
 * node-rank order) and the nodes blamed for its recent failures. */
static int
restart_view(struct schedd *sd, struct job *job, struct sched_job *j,
    int64_t now)
{
    size_t *prefer = xcalloc(job->nreserved + 1, sizeof(*prefer));
    size_t *exclude = NULL, np = 0, nx = 0;
    int rc;

    for (size_t i = 0; i < job->nreserved; i++) {
        struct node *node = node_table_find(&sd->nodes, job->reserved[i]);

        if (node)
            prefer[np++] = node->idx;
    }
    j->restarting = true;
    j->prefer = prefer;
    j->nprefer = np;
    rc = blamed_refresh(sd, job, now);
    exclude = xcalloc(job->nblamed + 1, sizeof(*exclude));
    for (size_t i = 0; i < job->nblamed; i++) {
        struct node *node = node_table_find(&sd->nodes, job->blamed[i]);
        bool dup = false;

        if (node == NULL ||
            job->blamed_ms[i] < now - sd->policy.blame_window_ms)
            continue;
        for (size_t k = 0; k < nx && !dup; k++)
            dup = exclude[k] == node->idx;
        if (!dup)
            exclude[nx++] = node->idx;
    }
    j->exclude = exclude;
    j->nexclude = nx;
    return rc;
}

/* A restarting job: reserve its nodes; whether it may be placed now. */
static bool
restart_ready(struct pass *ps, struct pass_input *in, struct job *job,
    int64_t now)
{
    char *wait = restart_wait(ps, job, now);

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
    if (job->draining != ps->seq)
        pass_retry_at(ps, job->not_before_ms);
    return false;
}

/* Whether a queued job may be in this pass as far as the user is
 * concerned: not while held (its reason, "held by ...", is the hold's),
 * and a requeued job not until its earlier attempt stopped everywhere. */
static bool
pending_ready(const struct pass *ps, struct job *job)
{
    char *why;

    if (job_held(job))
        return false;
    if (job->state != PROTO_JOB_PENDING || job->draining != ps->seq)
        return true;
    why = xasprintf("requeued; waiting for attempt %d to stop on every node",
        job->attempt);
    job_set_reason(job, why);
    free(why);
    return false;
}

/* The queued jobs that may be placed now, in the queue's order (so the
 * pass sorts nothing), into the array kept between passes. */
static int
pass_jobs(struct pass *ps, struct pass_input *in, int64_t now)
{
    struct schedd *sd = ps->sd;
    size_t n = job_queue_count(&sd->jobs);
    int rc = 0;

    if (n > ps->jobs_cap) {
        ps->jobs_cap = n + n / 4;
        free(ps->jobs);
        ps->jobs = xcalloc(ps->jobs_cap, sizeof(*ps->jobs));
    }
    in->jobs = ps->jobs;
    in->njobs = 0;
    quota_running_init(&in->running, &sd->jobs);
    for (struct job *job = job_queue_first(&sd->jobs); job;
         job = job_queue_next(&sd->jobs, job)) {
        struct sched_job *j;

        if (!pending_ready(ps, job) || (job->state == PROTO_JOB_RESTARTING &&
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
        j->restarting = false;
        j->prefer = j->exclude = NULL;
        j->nprefer = j->nexclude = 0;
        if (sd->quota_cfg.max_running > 0) {
            j->user = job->user;
            j->user_running = quota_running_slot(&in->running, job->user);
            j->user_max = sd->quota_cfg.max_running;
        } else {
            j->user = NULL;
            j->user_running = NULL;
            j->user_max = 0;
        }
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

        /* Could never fit on these very nodes: out of the walk (its reason
         * stands) until they change (pass_run). */
        if (j->never && job->state == PROTO_JOB_PENDING)
            job_table_park(&ps->sd->jobs, job);
        if (!j->placed) {
            if (j->blocked)
                ps->blocker = j->id;
            pass_unplaced(ps, j, now);
            continue;
        }
        if (rc < 0)
            continue;
        chosen = xreallocarray(chosen, (size_t)j->nodes, sizeof(*chosen));
        for (int k = 0; k < j->nodes; k++)
            chosen[k] = in->nodes[j->node_idx[k]].data;
        /* Unique on its master node only (portpool.h); the pass gave
         * node rank 0 to a node with one free (sched_node.free_masters). */
        if ((port = portpool_alloc(schedd_node_ports(ps->sd, chosen[0]))) < 0) {
            job_set_reason(job, "no free master port");
            continue;
        }
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
    quota_running_release(&in->running);
}

static void pass_backoff_arm(struct pass *ps);

/* One pass; false when there was nothing queued to look at. */
static bool
pass_run(struct pass *ps)
{
    struct schedd *sd = ps->sd;
    struct pass_input in = { 0 };
    int64_t now = timeid_now_ms();
    int rc;

    ps->restart_retry_ms = 0;
    ps->blocker = 0;
    ps->nodes_valid = false;
    ps->nshapes = 0;
    if (job_queue_count(&sd->jobs) == 0)
        return false;
    pass_mark_draining(ps);
    pass_nodes(ps, &in);
    if (ps->sig != ps->parked_sig) {
        job_table_unpark_all(&sd->jobs);
        ps->parked_sig = ps->sig;
    }
    pass_maxima(ps, &in);
    rc = pass_jobs(ps, &in, now);
    if (rc < 0) {
        schedd_db_error(sd, rc);
    } else {
        sched_pass(ps->policy, in.nodes, in.nnodes, in.jobs, in.njobs,
            SIZE_MAX);
        pass_apply(ps, &in, now);
    }
    pass_input_release(&in);
    pass_backoff_arm(ps);
    ps->nodes_valid = rc >= 0;
    ps->nnodes = in.nnodes;
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
    /* Restarting jobs come first in the queue: only they are walked. */
    for (struct job *job = job_queue_first(&ps->sd->jobs);
         job && job->state == PROTO_JOB_RESTARTING;
         job = job_queue_next(&ps->sd->jobs, job)) {
        if (job->not_before_ms > now &&
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

/* job's shape judged against the last pass's nodes: whether it could
 * never fit there, with the pass's reason (cached per shape until the
 * next pass; NULL when the cache is full). */
static const struct pass_shape *
pass_shape(struct pass *ps, const struct job *job)
{
    const struct proto_job_spec *sp = &job->spec;
    struct pass_shape *s;

    for (size_t i = 0; i < ps->nshapes; i++) {
        s = &ps->shapes[i];
        if (s->job.nodes == sp->nodes &&
            s->job.ranks_per_node == sp->ranks_per_node &&
            s->job.gpus_per_node == sp->gpus_per_node &&
            s->job.cpus_per_rank == sp->cpus_per_rank &&
            s->job.memory_mb_per_node == sp->memory_mb_per_node)
            return s;
    }
    if (ps->nshapes == PASS_SHAPES)
        return NULL;
    s = &ps->shapes[ps->nshapes++];
    memset(s, 0, sizeof(*s));
    s->job.nodes = sp->nodes;
    s->job.ranks_per_node = sp->ranks_per_node;
    s->job.gpus_per_node = sp->gpus_per_node;
    s->job.cpus_per_rank = sp->cpus_per_rank;
    s->job.memory_mb_per_node = sp->memory_mb_per_node;
    s->never = sched_never_fits(ps->nodes, ps->nnodes, &s->job, s->job.reason,
        sizeof(s->job.reason));
    return s;
}

/* Whether job's user already has user_max_running_jobs running (the
 * pass would hold the job back, sched.c): the reason the pass gives. */
static bool
pass_user_at_limit(const struct pass *ps, const struct job *job, char *buf,
    size_t len)
{
    int max = ps->sd->quota_cfg.max_running;
    size_t running;

    if (max <= 0)
        return false;
    running = job_table_user(&ps->sd->jobs, job->user).running;
    if (running < (size_t)max)
        return false;
    snprintf(buf, len,
        "user %s has %zu running jobs; the limit is %d "
        "(user_max_running_jobs)",
        job->user, running, max);
    return true;
}

/*
 * Why the pass could not place a job submitted since it last ran, or
 * NULL when it might (a pass is needed). Nothing that could free room or
 * move the queue happened since (that would have triggered a pass, which
 * is still to come: armed), so the last pass's findings stand: the job
 * waits when its user is at the running-jobs limit, when it could never
 * fit on the schedulable nodes, when it comes after the job that blocked
 * the queue, or when no master port is free.
 * The reasons are the ones the pass gives (sched.c): a job behind the
 * blocker is told so unless the nodes' largest resources show at a
 * glance that it could never fit.
 */
static const char *
pass_wait_reason(struct pass *ps, const struct job *job, char *buf, size_t len)
{
    const struct proto_job_spec *sp = &job->spec;
    const struct job *blocker = ps->blocker
                                    ? job_table_find(&ps->sd->jobs, ps->blocker)
                                    : NULL;
    const struct pass_shape *shape;
    bool cheap;

    if (ps->armed || !ps->nodes_valid || job_held(job))
        return NULL;
    if (pass_user_at_limit(ps, job, buf, len))
        return buf;
    cheap = sp->gpus_per_node <= ps->max_gpus &&
            (int64_t)sp->ranks_per_node * sp->cpus_per_rank <= ps->max_cpus &&
            sp->memory_mb_per_node <= ps->max_memory_mb &&
            (size_t)sp->nodes <= ps->nschedulable;
    if (blocker && proto_job_state_queued(blocker->state) &&
        !job_held(blocker) && job_queue_before(blocker, job) && cheap) {
        snprintf(buf, len, "waiting behind job %lld", (long long)blocker->id);
        return buf;
    }
    if ((shape = pass_shape(ps, job)) == NULL)
        return NULL;
    if (shape->never)
        return shape->job.reason;
    return NULL;
}

static void
pass_hook_queued(struct schedd *sd, struct job *job, void *arg)
{
    struct pass *ps = arg;
    char buf[SCHED_REASON_MAX];
    const char *why = pass_wait_reason(ps, job, buf, sizeof(buf));

    (void)sd;
    if (why)
        job_set_reason(job, why);
    else
        pass_trigger(ps);
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
    sd->hooks.sched_queued = pass_hook_queued;
    sd->hooks.sched_arg = ps;
    return ps;
}

static void
pass_free(void *arg)
{
    struct pass *ps = arg;

    free(ps->jobs);
    free(ps->nodes);
    free(ps->gpu_pool);
    free(ps);
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
        ps->sd->hooks.sched_queued = NULL;
        ps->sd->hooks.sched_arg = NULL;
    }
    ps->closing = true;
    hs[0] = (uv_handle_t *)&ps->timer;
    hs[1] = (uv_handle_t *)&ps->backoff_timer;
    uvx_close(hs, ARRAY_SIZE(hs), pass_free, ps);
}
