/*
 * schedd.c - the scheduler context: model, commits, the scheduling pass
 *
 * The model (nodes, unfinished jobs, live attempts) is loaded from SQLite
 * at start-up; after that every change is written to the iteration's
 * transaction as it is decided. The transaction is committed by the HTTP
 * server's flush hook before queued replies are written and, for changes
 * no reply waits on (timer decisions), by a uv_check at the end of the
 * iteration. Either order is safe: a failed commit marks the context
 * failed, every later commit attempt in that iteration fails too (so no
 * success reply goes out for rolled-back work), and the model is reloaded
 * from the database on the next iteration.
 *
 * The scheduling pass is deferred and coalesced: submits, exits, releases
 * and node changes only arm a timer, so a burst of requests costs one
 * pass, never one per request. The pass itself is pure (sched.c); this
 * file turns its decisions into placements (lifecycle.c).
 *
 * Heartbeats update last_seen in memory; the tick writes it at most every
 * SCHEDD_PERSIST_MS, batched in one transaction, so a heartbeat costs no
 * fsync. At start-up every node's last_seen counts as "now", giving agents
 * node_timeout_ms to come back after a scheduler restart.
 *
 * Restarts: a RESTARTING job enters the pass only once its backoff has
 * passed and every placement of its previous attempt is released (or its
 * node LOST, whose supervisors' leases have expired): an attempt never
 * starts while ranks of the one before may still run anywhere. Until then
 * its reserved nodes are marked so that no other job takes them; in the
 * pass it goes first, prefers those nodes and avoids the nodes blamed for
 * its recent failures (sched.c). All of that is in SQLite (the job's
 * not_before_ms and reserved, the attempts' placements, the blame table),
 * so a restarted scheduler continues exactly where it stopped.
 */
#include "scheduler/schedd.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/api.h"
#include "scheduler/db.h"
#include "scheduler/http.h"
#include "scheduler/logstore.h"
#include "scheduler/sched_pass.h"

/* Passes are at least this far apart, and at least twice as far as the
 * last one took, so a steady stream of triggers costs at most about a
 * third of the loop even on a huge cluster. */
#define SCHEDD_PASS_SPACING_MS 10
/* How often last_seen is written to the database. */
#define SCHEDD_PERSIST_MS 5000
/* How often an unplaced restarting job is tried again (see
 * schedd_restart_retry). */
#define SCHEDD_RESTART_RETRY_MS 5000

/* ---- small helpers ------------------------------------------------------ */

bool
schedd_is_operator_name(const struct schedd *sd, const char *user)
{
    for (size_t i = 0; i < sd->noperators; i++) {
        if (strcmp(sd->operators[i], user) == 0)
            return true;
    }
    return false;
}

static void
schedd_parse_operators(struct schedd *sd, const char *list)
{
    const char *p = list ? list : "";

    while (*p) {
        size_t n;

        while (*p == ',' || *p == ' ' || *p == '\t')
            p++;
        n = strcspn(p, ", \t");
        if (n == 0)
            break;
        sd->operators = xreallocarray(sd->operators, sd->noperators + 1,
            sizeof(*sd->operators));
        sd->operators[sd->noperators++] = xstrndup(p, n);
        p += n;
    }
}

uint64_t
schedd_next_gen(struct schedd *sd)
{
    return ++sd->gen;
}

int
schedd_db_error(struct schedd *sd, int rc)
{
    if (!sd->failed)
        log_error("a database write failed (%s); this iteration's changes "
            "will be rolled back", strerror(-rc));
    sd->failed = true;
    return rc;
}

bool
schedd_available(const struct schedd *sd)
{
    return !sd->failed && !sd->stopping;
}

int
schedd_event(struct schedd *sd, const char *actor, const char *subject,
    const char *kind, cJSON *detail)
{
    char *text = detail ? jsonx_print(detail) : NULL;
    int rc;

    cJSON_Delete(detail);
    rc = db_event_insert(sd->db, timeid_now_ms(), actor, subject, kind, text);
    free(text);
    if (rc < 0)
        return schedd_db_error(sd, rc);
    return 0;
}

/* ---- the model ---------------------------------------------------------- */

static int
schedd_attempt_load_cb(struct attempt *a, void *arg)
{
    struct schedd *sd = arg;

    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        p->node = p->node_name ? node_table_find(&sd->nodes, p->node_name)
                               : NULL;
        if (p->node == NULL) {
            log_error("job=%lld attempt=%d: placement on unknown node '%s'",
                (long long)a->job_id, a->num,
                p->node_name ? p->node_name : "");
            attempt_destroy(a);
            return -EIO;
        }
        if (!p->released)
            node_hold_add(p->node, p);
        if (p->gen > sd->gen)
            sd->gen = p->gen;
    }
    if (attempt_state_active(a->state)) {
        struct job *job = job_table_find(&sd->jobs, a->job_id);

        if (job && job->attempt == a->num) {
            a->job = job;
            job->cur = a;
        } else {
            log_warn("job=%lld attempt=%d is active but its job is not; "
                "leaving it out of the desired state", (long long)a->job_id,
                a->num);
        }
    }
    {
        struct job *job = job_table_find(&sd->jobs, a->job_id);
        int rc;

        /* SDK commits of the job's latest attempt that are not complete
         * yet keep counting where they stopped. */
        if (job && job->attempt == a->num &&
            (rc = schedd_ckpt_load(sd, job, a)) < 0) {
            attempt_destroy(a);
            return rc;
        }
    }
    schedd_port_mark(sd, a->master_port, true);
    a->next = sd->attempts;
    if (sd->attempts)
        sd->attempts->prev = a;
    sd->attempts = a;
    return 0;
}

static void
schedd_model_clear(struct schedd *sd)
{
    struct attempt *a = sd->attempts;

    for (struct node *node = sd->nodes.head; node; node = node->next)
        api_agent_abort(sd, node);
    while (a) {
        struct attempt *next = a->next;

        attempt_destroy(a);
        a = next;
    }
    sd->attempts = NULL;
    if (sd->jobs.buckets)
        job_table_release(&sd->jobs);
    if (sd->nodes.buckets)
        node_table_release(&sd->nodes);
    if (sd->ports_used)
        memset(sd->ports_used, 0, (size_t)sd->port_count);
}

static int
schedd_model_load(struct schedd *sd, struct err *err)
{
    int64_t mono = timeid_mono_ms();
    uint64_t base = (uint64_t)timeid_now_ms() * 1000;
    size_t nlive = 0;
    int rc;

    node_table_init(&sd->nodes);
    job_table_init(&sd->jobs);
    /* Generations grow across restarts: start from the wall clock (in
     * ms × 1000), and above anything stored. */
    if (sd->gen < base)
        sd->gen = base;
    if ((rc = db_nodes_load(sd->db, &sd->nodes)) < 0)
        return err_set(err, rc, "cannot load nodes from the database");
    if ((rc = db_jobs_load_unfinished(sd->db, &sd->jobs)) < 0)
        return err_set(err, rc, "cannot load jobs from the database");
    for (struct job *job = sd->jobs.head; job; job = job->next) {
        if (job->state == JOB_STATE_RESTARTING)
            job->restart_reason = xstrdup(job->reason);
    }
    if ((rc = db_attempts_load_live(sd->db, schedd_attempt_load_cb, sd)) < 0)
        return err_set(err, rc, "cannot load attempts from the database");
    for (struct node *node = sd->nodes.head; node; node = node->next) {
        node->last_seen_mono = mono;
        node->reconciled = false;
        node->gen = schedd_next_gen(sd);
        node->state = node_state_compute(node);
    }
    for (struct attempt *a = sd->attempts; a; a = a->next)
        nlive++;
    log_info("loaded %zu node(s), %zu unfinished job(s), %zu live "
        "attempt(s)", sd->nodes.count, sd->jobs.count, nlive);
    return 0;
}

static void
schedd_reload_cb(uv_timer_t *t)
{
    struct schedd *sd = container_of(t, struct schedd, reload_timer);
    struct err err;

    err_clear(&err);
    log_warn("reloading state from the database after a failed write");
    schedd_model_clear(sd);
    if (schedd_model_load(sd, &err) < 0)
        fatalx("cannot reload state: %s", err.msg);
    sd->failed = false;
    schedd_sched_trigger(sd);
}

int
schedd_commit(struct schedd *sd)
{
    int rc;

    if (sd->failed) {
        db_txn_rollback(sd->db);
        sd->rolled_back = true;
        if (!uv_is_active((uv_handle_t *)&sd->reload_timer) && !sd->stopping)
            uv_timer_start(&sd->reload_timer, schedd_reload_cb, 0, 0);
        return -EIO;
    }
    rc = db_txn_commit(sd->db);
    if (rc < 0) {
        log_error("cannot commit to the database: %s", strerror(-rc));
        sd->failed = true;
        sd->rolled_back = true;
        if (!sd->stopping)
            uv_timer_start(&sd->reload_timer, schedd_reload_cb, 0, 0);
    }
    return rc;
}

int
schedd_flush(struct schedd *sd)
{
    int rc = schedd_commit(sd);

    if (sd->rolled_back) {
        sd->rolled_back = false;
        return rc < 0 ? rc : -EIO;
    }
    return rc;
}

static void
schedd_commit_check_cb(uv_check_t *c)
{
    struct schedd *sd = container_of(c, struct schedd, commit_check);

    if (sd->failed || db_txn_is_open(sd->db))
        schedd_commit(sd);
}

/* ---- the scheduling pass ------------------------------------------------ */

/*
 * When to look at an unplaced restarting job again without any event.
 * The backoff timer and the events that change what fits (releases, nodes
 * coming up, submits) normally trigger the pass; but what keeps a restart
 * from fitting can also lapse silently (the blame window of the nodes it
 * avoids), and a restart must never be forgotten. So the tick retries it:
 * at its backoff deadline, else every SCHEDD_RESTART_RETRY_MS.
 */
static void
schedd_restart_retry(struct schedd *sd, int64_t at)
{
    if (sd->restart_retry_ms == 0 || at < sd->restart_retry_ms)
        sd->restart_retry_ms = at;
}

/* Mark the jobs whose earlier attempt still holds a placement. */
static void
schedd_mark_draining(struct schedd *sd)
{
    for (struct job *job = sd->jobs.head; job; job = job->next)
        job->draining = false;
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        struct job *job;

        if (attempt_state_active(a->state) || attempt_fully_released(a))
            continue;
        job = job_table_find(&sd->jobs, a->job_id);
        if (job)
            job->draining = true;
    }
}

/* Why a restarting job is not in this pass, or NULL when it is. */
static char *
schedd_restart_wait(const struct schedd *sd, const struct job *job,
    int64_t now)
{
    const char *base = job->restart_reason ? job->restart_reason : "";

    if (job->draining)
        return xasprintf("%s; waiting for attempt %d to stop on every node",
            base, job->attempt);
    if (job->not_before_ms > now)
        return xasprintf("%s; next attempt in %lld ms", base,
            (long long)(job->not_before_ms - now));
    (void)sd;
    return NULL;
}

struct blamed_ctx {
    struct schedd *sd;
    size_t *idx;
    size_t n;
    size_t cap;
};

static int
schedd_blamed_add(const struct db_blame *b, void *arg)
{
    struct blamed_ctx *ctx = arg;
    struct node *node = node_table_find(&ctx->sd->nodes, b->node);

    if (node == NULL)
        return 0;
    for (size_t i = 0; i < ctx->n; i++) {
        if (ctx->idx[i] == node->pass_idx)
            return 0;
    }
    if (ctx->n == ctx->cap) {
        ctx->cap = ctx->cap ? 2 * ctx->cap : 4;
        ctx->idx = xreallocarray(ctx->idx, ctx->cap, sizeof(*ctx->idx));
    }
    ctx->idx[ctx->n++] = node->pass_idx;
    return 0;
}

/* A restarting job's view for the pass: its reserved nodes (preferred, in
 * node-rank order) and the nodes blamed for its recent failures. */
static int
schedd_restart_view(struct schedd *sd, struct job *job, struct sched_job *j,
    int64_t now)
{
    struct blamed_ctx ctx = { sd, NULL, 0, 0 };
    size_t *prefer = xcalloc(job->nreserved + 1, sizeof(*prefer));
    size_t np = 0;
    int rc;

    for (size_t i = 0; i < job->nreserved; i++) {
        struct node *node = node_table_find(&sd->nodes, job->reserved[i]);

        if (node)
            prefer[np++] = node->pass_idx;
    }
    j->restarting = true;
    j->prefer = prefer;
    j->nprefer = np;
    rc = db_blame_job_foreach(sd->db, job->id,
        now - sd->policy.blame_window_ms, schedd_blamed_add, &ctx);
    j->exclude = ctx.idx;
    j->nexclude = ctx.n;
    return rc;
}

static void
schedd_sched_run(struct schedd *sd)
{
    struct sched_node *sn = NULL;
    struct sched_job *sj = NULL;
    struct node **chosen = NULL;
    int *gpu_pool = NULL;
    size_t nn = 0, nj = 0, ngpus = 0, off = 0;
    int64_t now = timeid_now_ms();
    int rc = 0;

    sd->restart_retry_ms = 0;
    schedd_mark_draining(sd);
    for (struct job *job = sd->jobs.head; job; job = job->next)
        nj += job_state_queued(job->state);
    if (nj == 0)
        return;

    sn = xcalloc(sd->nodes.count + 1, sizeof(*sn));
    for (struct node *node = sd->nodes.head; node; node = node->next)
        ngpus += node->ngpus;
    gpu_pool = xcalloc(ngpus + 1, sizeof(*gpu_pool));
    for (struct node *node = sd->nodes.head; node; node = node->next) {
        struct sched_node *n = &sn[nn];

        node->pass_idx = nn++;
        n->name = node->name;
        n->schedulable = node_schedulable(node);
        n->cpus = node->cpus;
        n->memory_mb = node->memory_mb;
        n->ngpus = node->ngpus;
        n->free_cpus = node_free_cpus(node);
        n->free_memory_mb = node_free_memory_mb(node);
        n->free_gpus = gpu_pool + off;
        n->nfree_gpus = node_free_gpus(node, n->free_gpus);
        off += node->ngpus;
        n->data = node;
    }

    sj = xcalloc(nj, sizeof(*sj));
    nj = 0;
    for (struct job *job = sd->jobs.head; job; job = job->next) {
        struct sched_job *j;

        if (!job_state_queued(job->state))
            continue;
        if (job->state == JOB_STATE_RESTARTING) {
            char *wait = schedd_restart_wait(sd, job, now);

            /* Restart in place: nobody else gets its nodes meanwhile. */
            for (size_t i = 0; i < job->nreserved; i++) {
                struct node *node = node_table_find(&sd->nodes,
                    job->reserved[i]);

                if (node)
                    sn[node->pass_idx].reserved_for = job->id;
            }
            if (wait) {
                job_set_reason(job, wait);
                free(wait);
                if (!job->draining)
                    schedd_restart_retry(sd, job->not_before_ms);
                continue;
            }
        }
        j = &sj[nj++];
        j->id = job->id;
        j->priority = job->spec.priority;
        j->nodes = job->spec.nodes;
        j->ranks_per_node = job->spec.ranks_per_node;
        j->gpus_per_node = job->spec.gpus_per_node;
        j->cpus_per_rank = job->spec.cpus_per_rank;
        j->memory_mb_per_node = job->spec.memory_mb_per_node;
        j->data = job;
        if (job->state == JOB_STATE_RESTARTING && rc == 0)
            rc = schedd_restart_view(sd, job, j, now);
    }
    if (rc < 0) {
        schedd_db_error(sd, rc);
        goto out;
    }

    sched_pass(&sched_policy_fifo, sn, nn, sj, nj,
        (size_t)schedd_ports_free(sd));

    for (size_t i = 0; i < nj; i++) {
        struct sched_job *j = &sj[i];
        struct job *job = j->data;
        int port;

        if (!j->placed || rc < 0) {
            if (!j->placed && job->state == JOB_STATE_RESTARTING) {
                char *why = xasprintf("%s; %s", job->restart_reason
                                                    ? job->restart_reason
                                                    : "restarting",
                    j->reason);

                job_set_reason(job, why);
                free(why);
                schedd_restart_retry(sd, now + SCHEDD_RESTART_RETRY_MS);
            } else if (!j->placed) {
                job_set_reason(job, j->reason);
            }
            continue;
        }
        port = schedd_port_alloc(sd);
        if (port < 0) {
            job_set_reason(job, "no free master port");
            continue;
        }
        chosen = xreallocarray(chosen, (size_t)j->nodes, sizeof(*chosen));
        for (int k = 0; k < j->nodes; k++)
            chosen[k] = sn[j->node_idx[k]].data;
        rc = schedd_place(sd, job, chosen, j->gpus, port);
    }
out:
    for (size_t i = 0; i < nj; i++) {
        free((void *)sj[i].prefer);
        free((void *)sj[i].exclude);
        sched_job_release(&sj[i]);
    }
    free(chosen);
    free(gpu_pool);
    free(sn);
    free(sj);
    schedd_backoff_arm(sd);
}

static void
schedd_sched_timer_cb(uv_timer_t *t)
{
    struct schedd *sd = container_of(t, struct schedd, sched_timer);

    int64_t start = timeid_mono_ms();

    sd->sched_armed = false;
    sd->last_pass_mono = start;
    if (!schedd_available(sd))
        return;
    schedd_sched_run(sd);
    sd->last_pass_ms = timeid_mono_ms() - start;
    if (sd->last_pass_ms > 100)
        log_info("scheduling pass took %lld ms", (long long)sd->last_pass_ms);
}

static void
schedd_backoff_cb(uv_timer_t *t)
{
    struct schedd *sd = container_of(t, struct schedd, backoff_timer);

    schedd_sched_trigger(sd);
}

void
schedd_backoff_arm(struct schedd *sd)
{
    int64_t now = timeid_now_ms(), next = 0;
    int rc;

    if (sd->stopping || sd->nhandles == 0)
        return;
    for (struct job *job = sd->jobs.head; job; job = job->next) {
        if (job->state == JOB_STATE_RESTARTING && job->not_before_ms > now &&
            (next == 0 || job->not_before_ms < next))
            next = job->not_before_ms;
    }
    if (next == 0)
        return;
    rc = uv_timer_start(&sd->backoff_timer, schedd_backoff_cb,
        (uint64_t)(next - now), 0);
    if (rc < 0)
        log_error("cannot arm the backoff timer: %s", uv_strerror(rc));
}

void
schedd_sched_trigger(struct schedd *sd)
{
    int64_t since, spacing = SCHEDD_PASS_SPACING_MS;
    uint64_t delay = 0;
    int rc;

    if (sd->sched_armed || sd->stopping)
        return;
    if (2 * sd->last_pass_ms > spacing)
        spacing = 2 * sd->last_pass_ms;
    since = timeid_mono_ms() - sd->last_pass_mono;
    if (since >= 0 && since < spacing)
        delay = (uint64_t)(spacing - since);
    rc = uv_timer_start(&sd->sched_timer, schedd_sched_timer_cb, delay, 0);
    if (rc < 0) {
        log_error("cannot arm the scheduling timer: %s", uv_strerror(rc));
        return;
    }
    sd->sched_armed = true;
}

/* ---- tick: node timeouts and lazy last_seen ----------------------------- */

static void
schedd_persist_last_seen(struct schedd *sd)
{
    for (struct node *node = sd->nodes.head; node; node = node->next) {
        int rc;

        if (node->last_seen_ms == node->last_seen_saved_ms)
            continue;
        rc = db_node_touch(sd->db, node->name, node->last_seen_ms);
        if (rc < 0) {
            schedd_db_error(sd, rc);
            return;
        }
        node->last_seen_saved_ms = node->last_seen_ms;
    }
}

static void
schedd_tick_cb(uv_timer_t *t)
{
    struct schedd *sd = container_of(t, struct schedd, tick_timer);
    int64_t mono = timeid_mono_ms();

    if (!schedd_available(sd))
        return;
    for (struct node *node = sd->nodes.head; node; node = node->next) {
        if (!node->lost &&
            mono - node->last_seen_mono > (int64_t)sd->node_timeout_ms) {
            log_notice("node=%s lost: no status for %d ms", node->name,
                sd->node_timeout_ms);
            if (schedd_node_lost(sd, node) < 0)
                return;
        }
    }
    if (mono - sd->last_persist_mono >= SCHEDD_PERSIST_MS) {
        sd->last_persist_mono = mono;
        schedd_persist_last_seen(sd);
    }
    schedd_watchdog_tick(sd);
    if (sd->restart_retry_ms > 0 && timeid_now_ms() >= sd->restart_retry_ms) {
        sd->restart_retry_ms = 0;
        schedd_sched_trigger(sd);
    }
}

/* ---- create / start / stop / destroy ------------------------------------ */

static int
schedd_mkdir(const char *path, struct err *err)
{
    if (mkdir(path, 0750) < 0 && errno != EEXIST)
        return err_set(err, -errno, "cannot create directory '%s': %s", path,
            strerror(errno));
    return 0;
}

/* One scheduler per state directory: a second one would fight over the
 * database and hand out the same work twice. */
static int
schedd_lock(struct schedd *sd, struct err *err)
{
    char *path = xasprintf("%s/lockstepd.lock", sd->state_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
    int rc = 0;

    if (fd < 0) {
        rc = err_set(err, -errno, "cannot open lock file '%s': %s", path,
            strerror(errno));
    } else if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
        rc = err_set(err, -EBUSY, "another lockstepd is using state "
            "directory '%s' (lock '%s' is held)", sd->state_dir, path);
        close(fd);
    } else {
        sd->lock_fd = fd;
    }
    free(path);
    return rc;
}

struct schedd *
schedd_create(uv_loop_t *loop, const struct schedd_opts *opts,
    struct err *err)
{
    struct schedd *sd = xcalloc(1, sizeof(*sd));
    char *path = NULL;

    sd->loop = loop;
    sd->lock_fd = -1;
    sd->state_dir = xstrdup(opts->state_dir);
    sd->secret = xstrndup(opts->secret, opts->secret_len);
    sd->secret_len = opts->secret_len;
    sd->self_uid = geteuid();
    sd->heartbeat_ms = opts->heartbeat_ms;
    sd->node_timeout_ms = opts->node_timeout_ms;
    sd->max_body = opts->max_body;
    sd->port_base = opts->master_port_base;
    sd->port_count = opts->master_port_count;
    sd->ports_used = xcalloc((size_t)sd->port_count + 1, 1);
    sd->lease_ms = opts->lease_ms;
    sd->dump_timeout_ms = opts->dump_timeout_ms;
    sd->policy = opts->policy;
    sd->started_ms = timeid_now_ms();
    schedd_parse_operators(sd, opts->operators);

    if (schedd_mkdir(sd->state_dir, err) < 0 || schedd_lock(sd, err) < 0)
        goto fail;
    path = xasprintf("%s/logs", sd->state_dir);
    sd->logs = logstore_create(path, err);
    free(path);
    if (sd->logs == NULL)
        goto fail;
    path = xasprintf("%s/lockstep.db", sd->state_dir);
    sd->db = db_open(path, opts->db_sync_full, err);
    free(path);
    if (sd->db == NULL)
        goto fail;
    if (schedd_model_load(sd, err) < 0)
        goto fail;
    /* Handles last: from here on schedd_stop() must close them. */
    uv_timer_init(loop, &sd->sched_timer);
    uv_timer_init(loop, &sd->tick_timer);
    uv_timer_init(loop, &sd->reload_timer);
    uv_timer_init(loop, &sd->backoff_timer);
    uv_check_init(loop, &sd->commit_check);
    sd->nhandles = 5;
    sd->last_persist_mono = timeid_mono_ms();
    return sd;
fail:
    schedd_destroy(sd);
    return NULL;
}

/* Write the bound port to path atomically (readers poll for the file). */
static int
schedd_write_port_file(const char *path, int port, struct err *err)
{
    char *tmp = xasprintf("%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    int rc = 0;

    if (f == NULL) {
        rc = err_set(err, -errno, "cannot write port file '%s': %s", tmp,
            strerror(errno));
    } else {
        fprintf(f, "%d\n", port);
        if (fclose(f) != 0)
            rc = err_set(err, -EIO, "cannot write port file '%s'", tmp);
        else if (rename(tmp, path) < 0)
            rc = err_set(err, -errno, "cannot rename '%s' to '%s': %s", tmp,
                path, strerror(errno));
    }
    free(tmp);
    return rc;
}

int
schedd_start(struct schedd *sd, const struct schedd_opts *opts,
    struct err *err)
{
    struct http_server_opts hopts = {
        .max_body = opts->max_body,
        .idle_timeout_ms = 0,
    };
    uint64_t tick;
    int bound = 0, rc;

    sd->http = http_server_create(sd->loop, &hopts, api_handle, api_flush,
        sd, err);
    if (sd->http == NULL)
        return err->code ? err->code : -EIO;
    if (opts->socket_path && opts->socket_path[0] &&
        (rc = http_server_listen_unix(sd->http, opts->socket_path, err)) < 0)
        return rc;
    if (opts->listen_host && opts->listen_host[0]) {
        rc = http_server_listen_tcp(sd->http, opts->listen_host,
            opts->listen_port, &bound, err);
        if (rc < 0)
            return rc;
        if (opts->port_file && opts->port_file[0] &&
            (rc = schedd_write_port_file(opts->port_file, bound, err)) < 0)
            return rc;
    }
    if ((rc = uv_check_start(&sd->commit_check, schedd_commit_check_cb)) < 0)
        return err_set(err, rc, "cannot start the commit hook: %s",
            uv_strerror(rc));
    tick = (uint64_t)(sd->node_timeout_ms / 4);
    if (tick > 1000)
        tick = 1000;
    if (tick < 50)
        tick = 50;
    if ((rc = uv_timer_start(&sd->tick_timer, schedd_tick_cb, tick, tick)) <
        0)
        return err_set(err, rc, "cannot start the tick timer: %s",
            uv_strerror(rc));
    schedd_sched_trigger(sd);
    log_notice("lockstepd started: tcp=%s:%d socket=%s state_dir=%s",
        opts->listen_host && opts->listen_host[0] ? opts->listen_host : "-",
        bound, opts->socket_path && opts->socket_path[0] ? opts->socket_path
                                                         : "-",
        sd->state_dir);
    return 0;
}

static void
schedd_handle_closed_cb(uv_handle_t *h)
{
    struct schedd *sd = h->data;

    if (--sd->nhandles > 0)
        return;
    /* Whatever the last callbacks wrote. */
    schedd_commit(sd);
    if (sd->stopped_cb)
        sd->stopped_cb(sd);
}

static void
schedd_close_handles(struct schedd *sd)
{
    uv_handle_t *hs[] = {
        (uv_handle_t *)&sd->sched_timer,
        (uv_handle_t *)&sd->tick_timer,
        (uv_handle_t *)&sd->reload_timer,
        (uv_handle_t *)&sd->backoff_timer,
        (uv_handle_t *)&sd->commit_check,
    };

    for (size_t i = 0; i < ARRAY_SIZE(hs); i++) {
        hs[i]->data = sd;
        uv_close(hs[i], schedd_handle_closed_cb);
    }
}

static void
schedd_http_closed_cb(void *arg)
{
    struct schedd *sd = arg;

    schedd_close_handles(sd);
}

void
schedd_stop(struct schedd *sd, void (*cb)(struct schedd *sd))
{
    sd->stopping = true;
    sd->stopped_cb = cb;
    uv_timer_stop(&sd->sched_timer);
    uv_timer_stop(&sd->tick_timer);
    uv_timer_stop(&sd->reload_timer);
    uv_timer_stop(&sd->backoff_timer);
    if (!sd->failed)
        schedd_persist_last_seen(sd);
    schedd_commit(sd);
    if (sd->http)
        http_server_close(sd->http, schedd_http_closed_cb, sd);
    else
        schedd_close_handles(sd);
}

void
schedd_destroy(struct schedd *sd)
{
    if (sd == NULL)
        return;
    schedd_model_clear(sd);
    db_close(sd->db);
    logstore_destroy(sd->logs);
    if (sd->lock_fd >= 0)
        close(sd->lock_fd);
    for (size_t i = 0; i < sd->noperators; i++)
        free(sd->operators[i]);
    free(sd->operators);
    free(sd->ports_used);
    free(sd->state_dir);
    if (sd->secret)
        explicit_bzero(sd->secret, sd->secret_len);
    free(sd->secret);
    free(sd);
}
