/*
 * schedd.c - the scheduler's context: model, commits, reload
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
 * At start-up every node's last_seen counts as "now", giving agents
 * node_timeout_ms to come back after a scheduler restart.
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
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/commitsync.h"
#include "scheduler/db.h"
#include "scheduler/logstore.h"
#include "scheduler/logwriter.h"
#include "scheduler/walckpt.h"

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
                  "will be rolled back",
            strerror(-rc));
    sd->failed = true;
    sd->db_errno = rc;
    return rc;
}

int
schedd_db_check(struct schedd *sd, int rc)
{
    return rc < 0 ? schedd_db_error(sd, rc) : 0;
}

bool
schedd_available(const struct schedd *sd)
{
    return !sd->failed && !sd->stopping;
}

void
schedd_unavailable_msg(const struct schedd *sd, int rc, char *buf, size_t len)
{
    if (rc != -ENOSPC && rc != -EDQUOT && rc != -EROFS)
        rc = sd->db_errno;
    if (rc == -ENOSPC || rc == -EDQUOT)
        snprintf(buf, len,
            "the scheduler's disk is full (state_dir '%s'); nothing was "
            "accepted, retry later",
            sd->state_dir);
    else if (rc == -EROFS)
        snprintf(buf, len,
            "the scheduler's disk is read-only (state_dir '%s'); nothing "
            "was accepted, retry later",
            sd->state_dir);
    else
        snprintf(buf, len,
            "the database cannot accept changes now; nothing was accepted, "
            "retry later");
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
    return schedd_db_check(sd, rc);
}

const char *
schedd_subject_job(char *buf, size_t len, int64_t id)
{
    snprintf(buf, len, "job/%lld", (long long)id);
    return buf;
}

const char *
schedd_subject_node(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "node/%s", name);
    return buf;
}

void
schedd_sched_trigger(struct schedd *sd)
{
    if (sd->hooks.sched_trigger && !sd->stopping)
        sd->hooks.sched_trigger(sd, sd->hooks.sched_arg);
}

void
schedd_sched_queued(struct schedd *sd, struct job *job)
{
    if (sd->hooks.sched_queued && !sd->stopping)
        sd->hooks.sched_queued(sd, job, sd->hooks.sched_arg);
    else
        schedd_sched_trigger(sd);
}

void
schedd_node_wake(struct schedd *sd, struct node *node)
{
    if (sd->hooks.node_changed)
        sd->hooks.node_changed(sd, node, sd->hooks.arg);
}

void
schedd_node_changed(struct schedd *sd, struct node *node)
{
    node->gen = schedd_next_gen(sd);
    schedd_node_wake(sd, node);
}

void
schedd_node_forget(struct schedd *sd, struct node *node)
{
    if (sd->hooks.node_removed)
        sd->hooks.node_removed(sd, node, sd->hooks.arg);
    /* Released placements of attempts still live elsewhere may name it. */
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        for (int k = 0; k < a->nnodes; k++) {
            if (a->placements[k].node == node)
                a->placements[k].node = NULL;
        }
    }
    node_table_remove(&sd->nodes, node);
    node_destroy(node);
}

bool
schedd_node_silent(const struct schedd *sd, const struct node *node,
    int64_t mono)
{
    if (node->lost)
        return node->nholds > 0;
    return node->agent_gone ||
           mono - node->last_seen_mono > 2 * (int64_t)sd->heartbeat_ms;
}

/* ---- the live attempts -------------------------------------------------- */

struct portpool *
schedd_node_ports(struct schedd *sd, struct node *node)
{
    if (node->ports == NULL) {
        node->ports = xcalloc(1, sizeof(*node->ports));
        portpool_init(node->ports, sd->master_port_base, sd->master_port_count);
    }
    return node->ports;
}

void
schedd_attempt_add(struct schedd *sd, struct attempt *a)
{
    if (a->nnodes > 0 && a->placements[0].node != NULL)
        portpool_mark(schedd_node_ports(sd, a->placements[0].node),
            a->master_port, true);
    a->prev = NULL;
    a->next = sd->attempts;
    if (sd->attempts)
        sd->attempts->prev = a;
    sd->attempts = a;
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
            node_hold_add(p->node, p);
    }
}

void
schedd_attempt_drop(struct schedd *sd, struct attempt *a)
{
    if (a->job && a->job->cur == a)
        a->job->cur = NULL;
    /* A forgotten master node took its pool with it. */
    if (a->nnodes > 0 && a->placements[0].node != NULL)
        portpool_mark(schedd_node_ports(sd, a->placements[0].node),
            a->master_port, false);
    if (a->prev)
        a->prev->next = a->next;
    else if (sd->attempts == a)
        sd->attempts = a->next;
    if (a->next)
        a->next->prev = a->prev;
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
            node_hold_remove(p->node, p);
    }
    attempt_destroy(a);
}

struct job *
schedd_attempt_job(struct schedd *sd, const struct attempt *a)
{
    if (a->job)
        return a->job;
    return job_table_find(&sd->jobs, a->job_id);
}

struct attempt *
schedd_job_latest(struct schedd *sd, const struct job *job)
{
    if (job->cur)
        return job->cur;
    for (struct attempt *a = sd->attempts; a; a = a->next) {
        if (a->job_id == job->id && a->num == job->attempt)
            return a;
    }
    return NULL;
}

/* ---- the model ---------------------------------------------------------- */

static int
schedd_tally_load_cb(int rank, int64_t step, void *arg)
{
    struct attempt *a = arg;

    attempt_tally_add(a, step);
    if (rank >= 0 && (size_t)rank < a->nranks && step > a->ranks[rank].ckpt_max)
        a->ranks[rank].ckpt_max = step;
    return 0;
}

/* Resolve a loaded attempt's nodes and job; false when a node it holds is
 * unknown (a corrupt database). A released placement may name a node an
 * operator removed since. */
static bool
schedd_attempt_resolve(struct schedd *sd, struct attempt *a)
{
    struct job *job = job_table_find(&sd->jobs, a->job_id);

    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        p->node = p->node_name ? node_table_find(&sd->nodes, p->node_name)
                               : NULL;
        if (p->node == NULL && !p->released) {
            log_error("job=%lld attempt=%d: placement on unknown node '%s'",
                (long long)a->job_id, a->num, p->node_name ? p->node_name : "");
            return false;
        }
        if (p->gen > sd->gen)
            sd->gen = p->gen;
    }
    if (!proto_attempt_state_active(a->state))
        return true;
    if (job && job->attempt == a->num) {
        a->job = job;
        job->cur = a;
    } else {
        log_warn("job=%lld attempt=%d is active but its job is not; "
                 "leaving it out of the desired state",
            (long long)a->job_id, a->num);
    }
    return true;
}

static int
schedd_attempt_load_cb(struct attempt *a, void *arg)
{
    struct schedd *sd = arg;
    struct job *job;
    int rc;

    if (!schedd_attempt_resolve(sd, a)) {
        attempt_destroy(a);
        return -EIO;
    }
    /* SDK commits of the job's latest attempt that are not complete yet
     * keep counting where they stopped. */
    job = job_table_find(&sd->jobs, a->job_id);
    if (job && job->attempt == a->num &&
        (rc = db_commits_foreach(sd->db, job->id, a->num, job->ckpt_step,
             schedd_tally_load_cb, a)) < 0) {
        attempt_destroy(a);
        return rc;
    }
    schedd_attempt_add(sd, a);
    return 0;
}

static void
schedd_model_clear(struct schedd *sd)
{
    struct attempt *a = sd->attempts;

    if (sd->hooks.model_reset)
        sd->hooks.model_reset(sd, sd->hooks.arg);
    while (a) {
        struct attempt *next = a->next;

        attempt_destroy(a);
        a = next;
    }
    sd->attempts = NULL;
    job_table_release(&sd->jobs);
    node_table_release(&sd->nodes);
}

/* One group of the counts' recount (db_count_fn): a state the build
 * does not know is left out, as the gauges have no series for it. */
static int
schedd_count_job_cb(const char *state, int64_t n, int64_t restarts, void *arg)
{
    struct schedd_counts *c = arg;
    enum proto_job_state s;

    if (proto_job_state_parse(state, &s) == 0)
        c->jobs[s] += n;
    c->restarts += restarts;
    return 0;
}

static int
schedd_count_attempt_cb(const char *state, int64_t n, int64_t restarts,
    void *arg)
{
    struct schedd_counts *c = arg;
    enum proto_attempt_state s;

    (void)restarts;
    if (proto_attempt_state_parse(state, &s) == 0)
        c->attempts[s] += n;
    return 0;
}

int
schedd_counts_load(struct db *db, struct schedd_counts *c)
{
    int rc;

    memset(c, 0, sizeof(*c));
    if ((rc = db_jobs_count_by_state(db, schedd_count_job_cb, c)) < 0)
        return rc;
    return db_attempts_count_by_state(db, schedd_count_attempt_cb, c);
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
    if ((rc = db_health_load(sd->db, &sd->nodes)) < 0)
        return err_set(err, rc, "cannot load node health from the database");
    if ((rc = db_jobs_load_unfinished(sd->db, &sd->jobs)) < 0)
        return err_set(err, rc, "cannot load jobs from the database");
    for (struct job *job = job_table_first(&sd->jobs); job;
         job = job_table_next(job)) {
        if (job->state == PROTO_JOB_RESTARTING)
            job->restart_reason = xstrdup(job->reason);
    }
    if ((rc = db_attempts_load_live(sd->db, schedd_attempt_load_cb, sd)) < 0)
        return err_set(err, rc, "cannot load attempts from the database");
    if ((rc = schedd_counts_load(sd->db, &sd->counts)) < 0)
        return err_set(err, rc, "cannot count jobs in the database");
    for (struct node *node = node_table_first(&sd->nodes); node;
         node = node_table_next(node)) {
        node->last_seen_mono = mono;
        /* What the scheduler before us may have granted, at most. */
        node->told_until_mono = mono + sd->heartbeat_ms + sd->lease_ms;
        node->told_lease_ms = sd->lease_ms;
        node->told_interval_ms = sd->heartbeat_ms;
        node->reconciled = false;
        node->gen = schedd_next_gen(sd);
        node->state = node_state_compute(node);
    }
    for (struct attempt *a = sd->attempts; a; a = a->next)
        nlive++;
    log_info("loaded %zu node(s), %zu unfinished job(s), %zu live "
             "attempt(s)",
        node_table_count(&sd->nodes), job_table_count(&sd->jobs), nlive);
    return 0;
}

int
schedd_reload(struct schedd *sd, struct err *err)
{
    int rc;

    schedd_model_clear(sd);
    if ((rc = schedd_model_load(sd, err)) < 0)
        return rc;
    sd->failed = false;
    schedd_sched_trigger(sd);
    return 0;
}

static void
schedd_reload_cb(uv_timer_t *t)
{
    struct schedd *sd = container_of(t, struct schedd, reload_timer);
    struct err err;

    err_clear(&err);
    log_warn("reloading state from the database after a failed write");
    if (schedd_reload(sd, &err) < 0)
        fatalx("cannot reload state: %s", err.msg);
}

/* ---- commits ------------------------------------------------------------ */

/* A replica's commit: the transaction's changes, the local commit, then
 * the proposal. A failed local commit proposes nothing (the changes are
 * rolled back here as everywhere); a failed proposal leaves a change
 * that no other replica has, which the replicate hook answers by
 * giving up the lead (repl.h). */
static int
schedd_commit_replicated(struct schedd *sd)
{
    void *cs = NULL;
    size_t len = 0;
    int rc;

    if ((rc = db_txn_changes(sd->db, &cs, &len)) < 0) {
        db_txn_rollback(sd->db);
        return rc;
    }
    if ((rc = db_txn_commit(sd->db)) < 0) {
        free(cs);
        return rc;
    }
    if (len == 0)
        return 0;
    return sd->hooks.replicate(sd, cs, len, sd->hooks.repl_arg);
}

/*
 * Group commit (docs/architecture.md "Durable replies"): a single
 * scheduler with db_synchronous=full runs SQLite with synchronous=NORMAL,
 * so a commit writes the WAL without an fsync, and commitsync fdatasyncs
 * the WAL off the loop; a reply is held until every commit before it is
 * synced (schedd_commit_wait's ticket, released by schedd_committed).
 * One fsync then covers every commit made while the previous one ran.
 */
static void
schedd_synced_cb(uint64_t seq, void *arg)
{
    struct schedd *sd = arg;

    sd->syncs++;
    schedd_committed(sd, seq, 0);
}

/* A transaction was committed: count it, and have it synced. */
static void
schedd_count_commit(struct schedd *sd)
{
    sd->commit_seq++;
    if (sd->sync)
        commitsync_request(sd->sync, sd->commit_seq);
    walckpt_poke(sd->walck, db_wal_pages(sd->db));
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
    if (db_txn_is_open(sd->db)) {
        uint64_t t0 = uv_hrtime();

        rc = sd->hooks.replicate ? schedd_commit_replicated(sd)
                                 : db_txn_commit(sd->db);
        metrics_hist_observe(&sd->commit_hist,
            (double)(uv_hrtime() - t0) / 1e9);
        if (rc == 0 && sd->db_errno != 0) {
            log_notice("the database accepts changes again");
            sd->db_errno = 0;
        }
        if (rc == 0)
            schedd_count_commit(sd);
    } else {
        rc = db_txn_commit(sd->db);
    }
    if (rc < 0) {
        log_error("cannot commit to the database: %s", strerror(-rc));
        sd->db_errno = rc;
        sd->failed = true;
        sd->rolled_back = true;
        if (!sd->stopping)
            uv_timer_start(&sd->reload_timer, schedd_reload_cb, 0, 0);
    }
    return rc;
}

/* Bytes of rank output that may wait for the writer thread: past it,
 * agents are asked to send again later (logwriter.h). */
#define SCHEDD_LOG_QUEUE_MAX (64 << 20)

struct schedd_log_op {
    struct schedd *sd;
    schedd_log_done_fn *done;
    void *arg;
};

static void
schedd_log_written(void *arg, int rc, int64_t size,
    const struct logwriter_chunk *w)
{
    struct schedd_log_op *op = arg;
    struct schedd *sd = op->sd;
    struct schedd_log_chunk c = { w->job, w->attempt, w->rank, w->err_stream,
        w->offset, w->data, w->len };

    /* A leader that stops replicates nothing more: the agent is not
     * answered, and sends it again to the next one. */
    if (rc == 0 && sd->hooks.replicate_log != NULL && c.len > 0 &&
        size >= c.offset + (int64_t)c.len)
        rc = sd->stopping ? -ECANCELED
                          : sd->hooks.replicate_log(sd, &c, sd->hooks.repl_arg);
    op->done(sd, rc, size, op->arg);
    free(op);
}

/* A chunk refused for the queue's length: noted at most every 10 s. An
 * agent sends a refused chunk again later; one from the leader
 * (applied) is lost on this replica. */
static void
schedd_log_refused(struct schedd *sd, bool applied)
{
    int64_t mono = timeid_mono_ms();

    sd->log_refused++;
    if (mono - sd->log_refused_noted_ms < 10000)
        return;
    if (applied)
        log_warn("the log store is behind (%zu bytes wait to be written): "
                 "output the leader stored is dropped on this replica "
                 "(%llu chunks refused)",
            logwriter_queued(sd->logw), (unsigned long long)sd->log_refused);
    else
        log_notice("the log store is behind (%zu bytes wait to be "
                   "written): agents send their output again later (%llu "
                   "chunks refused)",
            logwriter_queued(sd->logw), (unsigned long long)sd->log_refused);
    sd->log_refused_noted_ms = mono;
}

int
schedd_log_write(struct schedd *sd, const struct schedd_log_chunk *c,
    schedd_log_done_fn *done, void *arg)
{
    struct logwriter_chunk w = { c->job, c->attempt, c->rank, c->err_stream,
        c->offset, c->data, c->len };
    struct schedd_log_op *op;
    int rc;

    if (sd->logw == NULL)
        return -EAGAIN;
    op = xmalloc(sizeof(*op));
    *op = (struct schedd_log_op){ sd, done, arg };
    rc = logwriter_write(sd->logw, &w, false, schedd_log_written, op);
    if (rc < 0) {
        free(op);
        schedd_log_refused(sd, false);
    }
    return rc;
}

static void
schedd_log_applied(void *arg, int rc, int64_t size,
    const struct logwriter_chunk *w)
{
    (void)arg;
    (void)size;
    if (rc < 0 && rc != -ECANCELED)
        log_warn("cannot store output of job=%lld attempt=%d rank=%d from "
                 "the leader: %s",
            (long long)w->job, w->attempt, w->rank, strerror(-rc));
}

void
schedd_log_apply(struct schedd *sd, const struct schedd_log_chunk *c)
{
    struct logwriter_chunk w = { c->job, c->attempt, c->rank, c->err_stream,
        c->offset, c->data, c->len };

    /* The leader acknowledged this output already: past the forced
     * bound it is lost on this replica only, and said so. */
    if (sd->logw != NULL &&
        logwriter_write(sd->logw, &w, true, schedd_log_applied, NULL) < 0)
        schedd_log_refused(sd, true);
}

uint64_t
schedd_commit_wait(struct schedd *sd)
{
    if (sd->hooks.replicate_wait)
        return sd->hooks.replicate_wait(sd, sd->hooks.repl_arg);
    /* Every reply waits until all that was committed before it is on
     * disk: a reply that only reads may still show what a commit not yet
     * synced wrote. */
    if (sd->sync && commitsync_synced(sd->sync) < sd->commit_seq)
        return sd->commit_seq;
    return 0;
}

void
schedd_committed(struct schedd *sd, uint64_t ticket, int rc)
{
    if (sd->hooks.committed)
        sd->hooks.committed(sd, ticket, rc, sd->hooks.arg);
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
        rc = err_set(err, -EBUSY,
            "another lockstepd is using state "
            "directory '%s' (lock '%s' is held)",
            sd->state_dir, path);
        close(fd);
    } else {
        sd->lock_fd = fd;
    }
    free(path);
    return rc;
}

/* A replica's database is the state machine of its Raft log, rebuilt at
 * every start from the snapshot and the log (repl.h): empty it. A
 * database in a state directory that has no Raft state yet is a single
 * scheduler's, which this must never destroy. */
static int
schedd_replica_reset(const char *state_dir, struct err *err)
{
    static const char *const suffixes[] = { "", "-wal", "-shm" };
    char *raft = xasprintf("%s/raft", state_dir);
    char *db = xasprintf("%s/lockstep.db", state_dir);
    struct stat st;
    int rc = 0;

    if (stat(raft, &st) < 0 && stat(db, &st) == 0 && st.st_size > 0)
        rc = err_set(err, -EEXIST,
            "'%s' holds a single scheduler's database and there is no "
            "replica state beside it ('%s'): a replica would rebuild the "
            "database from its Raft log; move it away, or use another "
            "state_dir",
            db, raft);
    /* From here on the database is a replica's (repl.c keeps its Raft
     * files in that directory). */
    if (rc == 0 && mkdir(raft, 0750) < 0 && errno != EEXIST)
        rc = err_set(err, -errno, "cannot create directory '%s': %s", raft,
            strerror(errno));
    for (size_t i = 0; rc == 0 && i < ARRAY_SIZE(suffixes); i++) {
        char *f = xasprintf("%s%s", db, suffixes[i]);

        if (unlink(f) < 0 && errno != ENOENT)
            rc = err_set(err, -errno, "cannot remove '%s': %s", f,
                strerror(errno));
        free(f);
    }
    free(db);
    free(raft);
    return rc;
}

static void
schedd_configure(struct schedd *sd, const struct schedd_opts *opts)
{
    sd->lock_fd = -1;
    sd->state_dir = xstrdup(opts->state_dir);
    schedd_set_secrets(sd, opts->secret, opts->secret_len, opts->secret_prev,
        opts->secret_prev_len);
    sd->agent_auth_window_ms = opts->agent_auth_window_ms > 0
                                   ? opts->agent_auth_window_ms
                                   : 30000;
    sd->agent_auth_legacy = opts->agent_auth_legacy;
    nonces_init(&sd->nonces, opts->agent_nonces_max);
    refusals_init(&sd->refusals);
    sd->self_uid = geteuid();
    sd->heartbeat_ms = opts->heartbeat_ms;
    sd->node_timeout_ms = opts->node_timeout_ms;
    sd->max_body = opts->max_body;
    sd->lease_ms = opts->lease_ms;
    sd->lease_ping_ms = opts->lease_ping_ms;
    sd->short_lease_ms = opts->short_lease_ms > 0 ? opts->short_lease_ms
                                                  : opts->lease_ms;
    sd->dump_timeout_ms = opts->dump_timeout_ms;
    sd->rank_stats_window_ms = opts->rank_stats_window_ms;
    sd->straggler_ratio = opts->straggler_ratio;
    sd->straggler_windows = opts->straggler_windows;
    sd->policy = opts->policy;
    sd->health = opts->health;
    sd->quota_cfg = opts->quota;
    sd->started_ms = timeid_now_ms();
    if (opts->alert_webhook_url && opts->alert_webhook_url[0])
        sd->alert_url = xstrdup(opts->alert_webhook_url);
    sd->alert_timeout_ms = opts->alert_webhook_timeout_ms;
    sd->alert_queue_max = opts->alert_queue_max;
    sd->alert_backoff_max_ms = opts->alert_backoff_max_ms;
    sd->event_retention_days = opts->event_retention_days;
    sd->metrics_token_required = opts->metrics_token_required;
    metrics_hist_init(&sd->commit_hist, metrics_latency_bounds,
        metrics_latency_nbounds);
    metrics_hist_init(&sd->pass_hist, metrics_latency_bounds,
        metrics_latency_nbounds);
    sd->master_port_base = opts->master_port_base;
    sd->master_port_count = opts->master_port_count;
    schedd_parse_operators(sd, opts->operators);
}

struct schedd *
schedd_create(uv_loop_t *loop, const struct schedd_opts *opts, struct err *err)
{
    struct schedd *sd = xcalloc(1, sizeof(*sd));
    char *path = NULL;

    sd->loop = loop;
    schedd_configure(sd, opts);
    if (schedd_mkdir(sd->state_dir, err) < 0 || schedd_lock(sd, err) < 0)
        goto fail;
    path = xasprintf("%s/logs", sd->state_dir);
    sd->logs = logstore_create(path, opts->log_max_bytes, err);
    free(path);
    if (sd->logs == NULL || (sd->logw = logwriter_create(loop, sd->logs,
                                 SCHEDD_LOG_QUEUE_MAX, err)) == NULL)
        goto fail;
    path = xasprintf("%s/lockstep.db", sd->state_dir);
    if (opts->replica && schedd_replica_reset(sd->state_dir, err) < 0) {
        free(path);
        goto fail;
    }
    /* A replica's database is rebuilt from its Raft log at every start
     * (the log is what is durable), so neither the guard against a lost
     * database nor the check at open applies to it, and it is never
     * fsynced. A single scheduler's full durability is commitsync's, not
     * SQLite's (see "commits" above). */
    sd->db = db_open(path,
        &(struct db_open_opts){ .sync_full = false,
            .guard = !opts->replica,
            .check_ms = opts->replica ? 0 : opts->db_check_ms },
        err);
    if (sd->db && opts->db_sync_full && !opts->replica)
        sd->sync = commitsync_create(loop, path, schedd_synced_cb, sd, err);
    /* A replica's database is never fsynced: its checkpoints cost little. */
    if (sd->db && !opts->replica) {
        db_wal_manual(sd->db);
        sd->walck = walckpt_create(loop, path);
    }
    free(path);
    if (sd->db == NULL ||
        (opts->db_sync_full && !opts->replica && sd->sync == NULL))
        goto fail;
    if (opts->replica && db_repl_enable(sd->db, err) < 0)
        goto fail;
    if (schedd_model_load(sd, err) < 0)
        goto fail;
    /* Handles last: from here on schedd_stop() must close them. */
    uv_timer_init(loop, &sd->reload_timer);
    uv_check_init(loop, &sd->commit_check);
    return sd;
fail:
    schedd_destroy(sd);
    return NULL;
}

int
schedd_start(struct schedd *sd, struct err *err)
{
    int rc = uv_check_start(&sd->commit_check, schedd_commit_check_cb);

    if (rc < 0)
        return err_set(err, rc, "cannot start the commit hook: %s",
            uv_strerror(rc));
    return 0;
}

static void
schedd_closed(void *arg)
{
    struct schedd *sd = arg;

    /* Whatever the last callbacks wrote. */
    schedd_commit(sd);
    if (sd->stopped_cb)
        sd->stopped_cb(sd);
}

static void
schedd_sync_closed(void *arg)
{
    struct schedd *sd = arg;
    uv_handle_t *hs[] = {
        (uv_handle_t *)&sd->reload_timer,
        (uv_handle_t *)&sd->commit_check,
    };

    sd->sync = NULL;
    uvx_close(hs, ARRAY_SIZE(hs), schedd_closed, sd);
}

void
schedd_stop(struct schedd *sd, void (*cb)(struct schedd *sd))
{
    sd->stopping = true;
    sd->stopped_cb = cb;
    uv_timer_stop(&sd->reload_timer);
    /* The writes under way end; those still queued are answered 503. */
    logwriter_destroy(sd->logw);
    sd->logw = NULL;
    schedd_commit(sd);
    /* A checkpoint in flight ends on its own (and frees it). */
    walckpt_close(sd->walck);
    sd->walck = NULL;
    /* The last commits are synced before the handles close. */
    if (sd->sync)
        commitsync_close(sd->sync, schedd_sync_closed, sd);
    else
        schedd_sync_closed(sd);
}

void
schedd_destroy(struct schedd *sd)
{
    if (sd == NULL)
        return;
    schedd_model_clear(sd);
    walckpt_close(sd->walck);
    db_close(sd->db);
    logwriter_destroy(sd->logw);
    logstore_destroy(sd->logs);
    if (sd->lock_fd >= 0)
        close(sd->lock_fd);
    for (size_t i = 0; i < sd->noperators; i++)
        free(sd->operators[i]);
    free(sd->operators);
    quota_release(&sd->quota);
    free(sd->state_dir);
    free(sd->alert_url);
    schedd_set_secrets(sd, NULL, 0, NULL, 0);
    nonces_release(&sd->nonces);
    refusals_release(&sd->refusals);
    free(sd);
}

/* Wipe and free *s; copy new (len bytes; NULL: none) into it. */
static void
schedd_secret_replace(char **s, size_t *slen, const char *new, size_t len)
{
    if (*s != NULL)
        explicit_bzero(*s, *slen);
    free(*s);
    *s = new != NULL ? xstrndup(new, len) : NULL;
    *slen = new != NULL ? len : 0;
}

void
schedd_set_secrets(struct schedd *sd, const char *secret, size_t len,
    const char *prev, size_t prev_len)
{
    schedd_secret_replace(&sd->secret, &sd->secret_len, secret, len);
    schedd_secret_replace(&sd->secret_prev, &sd->secret_prev_len, prev,
        prev_len);
    sd->secret_gen++;
}
