/*
 * pmixsrv.c - the agent's PMIx server, on libpmix (pmixsrv.h)
 *
 * libpmix runs its own progress thread and calls the host (us) there: the
 * upcalls of pmixsrv_module below. Each copies what it needs (the proc,
 * the message, a fence's data: the arguments belong to libpmix) into a
 * work item, queues it under px->lock and wakes the loop with
 * uv_async_send, the one thread-safe libuv call; pmixsrv_async_cb drains
 * the whole queue (wake-ups coalesce) and replies from the loop thread.
 * libpmix thread-shifts replies and non-blocking calls itself, so calling
 * it from the loop is safe; its blocking calls (a NULL callback) are made
 * only from the loop thread, never from its own.
 *
 * Registration is blocking (register_nspace, register_client,
 * setup_fork): it happens while proc_start.c writes spec.json, before the
 * ranks exist, and takes well under a millisecond per rank.
 *
 * Pitfalls of libpmix 4.2 (docs: the PMIx notes): client_connected gets a
 * NULL callback (5.x gates the connection on it: both are handled); a
 * node without PMIX_HOSTNAME crashes register_nspace, so every node gets
 * one; a fence whose participants are all local never reaches us (the
 * library completes it), so fence_nb means other nodes are involved.
 */
#include "agent/pmixsrv.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>
#include <uv.h>

#include "agent/agentd.h"
#include "agent/mkdirp.h"
#include "agent/pmixsrv_event.h"
#include "agent/pmixsrv_info.h"
#include "agent/pmixsrv_net.h"
#include "agent/rmtree.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

/* After a rank's abort, how long the other ranks of its attempt on this
 * node keep running: the aborting rank exits by itself within it, so its
 * exit (its code, its stderr with the message) is the attempt's first
 * failure, not that of a rank we stopped. */
#define PMIXSRV_ABORT_GRACE_MS 1000

/* The Open MPI 4.1 direct-launch setting (set where the job's env has
 * none): without it a schizo component claims every process that no
 * resource manager it knows started (the fallback, orte, as a singleton:
 * each rank "rank 0 of 1", no error); with no component claiming, ess
 * picks pmi from the PMIx variables. Tried and left out: OMPI_MCA_ess=pmi
 * (the PMIx notes' recommendation) makes an mpirun started inside a rank
 * exit 1 without a word, and the binding settings
 * (hwloc_base_binding_policy=none, orte_externally_bound=1) change
 * nothing for directly launched ranks (the notes found them unbound
 * either way) but would turn off a nested mpirun's binding. */
static const char *const pmixsrv_ompi_env[][2] = {
    { "OMPI_MCA_schizo", "^orte,slurm" },
};

enum pmixsrv_work_kind {
    PMIXSRV_WORK_CONNECTED,
    PMIXSRV_WORK_FINALIZED,
    PMIXSRV_WORK_ABORT,
    PMIXSRV_WORK_FENCE,
    PMIXSRV_WORK_DMODEX,
    PMIXSRV_WORK_NOTIFIED,
    PMIXSRV_WORK_DMODEX_DONE,
};

/* One upcall, copied off libpmix's thread. */
struct pmixsrv_work {
    enum pmixsrv_work_kind kind;
    pmix_proc_t proc;   /* the client; a direct modex's target */
    pmix_proc_t *procs; /* a fence's participants (copy) */
    size_t nprocs;
    int status; /* abort */
    char *msg;  /* abort; never NULL */
    char *data; /* a fence's local contribution (copy) */
    size_t ndata;
    int timeout_s;          /* a fence's PMIX_TIMEOUT; 0 none */
    uint64_t id;            /* a served direct modex's request */
    pmix_op_cbfunc_t op_cb; /* may be NULL (client_connected) */
    pmix_modex_cbfunc_t modex_cb;
    void *cbdata; /* NOTIFIED: the struct pmixsrv_note (not ours to free) */
    struct pmixsrv_work *next;
};

/* A registered namespace: one attempt on this node. */
struct pmixsrv_ns {
    char name[PMIX_MAX_NSLEN + 1];
    int64_t job;
    int attempt;
    int world;
    int *local; /* the ranks on this node */
    size_t nlocal;
    int64_t stop_due_ms;        /* monotonic: 0 none, -1 done */
    struct pmixsrv_net_ns *net; /* for fences across nodes */
    struct pmixsrv_seen seen;   /* directives notified (pmixsrv_directives) */
    struct pmixsrv_ns *next;
};

struct pmixsrv {
    struct agentd *ad;
    char *dir;
    uv_async_t async;
    uv_timer_t timer;
    pthread_mutex_t lock;
    struct pmixsrv_work *head, *tail; /* under lock */
    struct pmixsrv_ns *ns;
    struct pmixsrv_note *notes; /* events libpmix has not completed */
    pmixsrv_abort_fn abort_fn;
    pmixsrv_stop_fn stop_fn;
    void *hook_arg;
    struct pmixsrv_net *net; /* the fences relayed across nodes */
};

/* Fences and modex requests carry no pointer of ours: the one server of
 * the process. Set on the loop thread before PMIx_server_init, cleared
 * after PMIx_server_finalize, so libpmix's thread sees it set. */
static struct pmixsrv *pmixsrv_self;

/* ---- upcalls (libpmix's thread) ---------------------------------------- */

static struct pmixsrv_work *
pmixsrv_work_new(enum pmixsrv_work_kind kind, const pmix_proc_t *proc)
{
    struct pmixsrv_work *w = xcalloc(1, sizeof(*w));

    w->kind = kind;
    if (proc != NULL)
        w->proc = *proc;
    return w;
}

static void
pmixsrv_work_free(struct pmixsrv_work *w)
{
    free(w->procs);
    free(w->msg);
    free(w->data);
    free(w);
}

static pmix_status_t
pmixsrv_enqueue(struct pmixsrv_work *w)
{
    struct pmixsrv *px = pmixsrv_self;

    pthread_mutex_lock(&px->lock);
    if (px->tail != NULL)
        px->tail->next = w;
    else
        px->head = w;
    px->tail = w;
    pthread_mutex_unlock(&px->lock);
    uv_async_send(&px->async);
    return PMIX_SUCCESS;
}

static pmix_status_t
pmixsrv_connected_cb(const pmix_proc_t *proc, void *server_object,
    pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_CONNECTED, proc);

    w->op_cb = cbfunc; /* NULL in libpmix 4.2 */
    w->cbdata = cbdata;
    return pmixsrv_enqueue(w);
}

static pmix_status_t
pmixsrv_finalized_cb(const pmix_proc_t *proc, void *server_object,
    pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_FINALIZED, proc);

    w->op_cb = cbfunc;
    w->cbdata = cbdata;
    return pmixsrv_enqueue(w);
}

static pmix_status_t
pmixsrv_abort_cb(const pmix_proc_t *proc, void *server_object, int status,
    const char msg[], pmix_proc_t procs[], size_t nprocs,
    pmix_op_cbfunc_t cbfunc, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_ABORT, proc);

    w->status = status;
    w->msg = xstrdup(msg != NULL ? msg : "");
    w->op_cb = cbfunc;
    w->cbdata = cbdata;
    return pmixsrv_enqueue(w);
}

/* A fence's PMIX_TIMEOUT (seconds), 0 when none. */
static int
pmixsrv_fence_timeout(const pmix_info_t info[], size_t ninfo)
{
    for (size_t i = 0; i < ninfo; i++) {
        if (PMIX_CHECK_KEY(&info[i], PMIX_TIMEOUT) &&
            info[i].value.type == PMIX_INT && info[i].value.data.integer > 0)
            return info[i].value.data.integer;
    }
    return 0;
}

static pmix_status_t
pmixsrv_fence_cb(const pmix_proc_t procs[], size_t nprocs,
    const pmix_info_t info[], size_t ninfo, char *data, size_t ndata,
    pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_FENCE, NULL);

    if (nprocs > 0) {
        w->procs = xcalloc(nprocs, sizeof(*w->procs));
        memcpy(w->procs, procs, nprocs * sizeof(*w->procs));
        w->nprocs = nprocs;
    }
    if (ndata > 0) {
        w->data = xmalloc(ndata);
        memcpy(w->data, data, ndata);
        w->ndata = ndata;
    }
    w->timeout_s = pmixsrv_fence_timeout(info, ninfo);
    w->modex_cb = cbfunc;
    w->cbdata = cbdata;
    return pmixsrv_enqueue(w);
}

static pmix_status_t
pmixsrv_dmodex_cb(const pmix_proc_t *proc, const pmix_info_t info[],
    size_t ninfo, pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_DMODEX, proc);

    /* PMIX_REQUIRED_KEY needs nothing: the owner's libpmix answers once
     * the rank committed, which is when its keys are there. */
    w->timeout_s = pmixsrv_fence_timeout(info, ninfo);
    w->modex_cb = cbfunc;
    w->cbdata = cbdata;
    return pmixsrv_enqueue(w);
}

/* libpmix is done with an event's info list (pmixsrv_directives). */
static void
pmixsrv_notified_cb(pmix_status_t status, void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_NOTIFIED, NULL);

    w->status = status;
    w->cbdata = cbdata;
    pmixsrv_enqueue(w);
}

/* The owner's libpmix has the data of a rank another node asked for
 * (pmixsrv_serve): cbdata is the request's id. */
static void
pmixsrv_dmodex_done_cb(pmix_status_t status, char *data, size_t sz,
    void *cbdata)
{
    struct pmixsrv_work *w = pmixsrv_work_new(PMIXSRV_WORK_DMODEX_DONE, NULL);

    w->id = *(uint64_t *)cbdata;
    free(cbdata);
    w->status = status;
    if (status == PMIX_SUCCESS && sz > 0) {
        w->data = xmalloc(sz);
        memcpy(w->data, data, sz);
        w->ndata = sz;
    }
    pmixsrv_enqueue(w);
}

/* Everything not listed (spawn, connect, publish, lookup, ...) is NULL:
 * libpmix answers PMIX_ERR_NOT_SUPPORTED itself. */
static pmix_server_module_t pmixsrv_module = {
    .client_connected = pmixsrv_connected_cb,
    .client_finalized = pmixsrv_finalized_cb,
    .abort = pmixsrv_abort_cb,
    .fence_nb = pmixsrv_fence_cb,
    .direct_modex = pmixsrv_dmodex_cb,
};

/* Completions libpmix calls on its thread that need nothing of ours. */
static void
pmixsrv_op_done_cb(pmix_status_t status, void *cbdata)
{
}

static void
pmixsrv_release_cb(void *cbdata)
{
    free(cbdata);
}

/* ---- namespaces (loop thread) ------------------------------------------ */

static struct pmixsrv_ns *
pmixsrv_ns_find(const struct pmixsrv *px, const char *name)
{
    struct pmixsrv_ns *ns;

    for (ns = px->ns; ns != NULL; ns = ns->next) {
        if (strcmp(ns->name, name) == 0)
            return ns;
    }
    return NULL;
}

static bool
pmixsrv_ns_local(const struct pmixsrv_ns *ns, pmix_rank_t rank)
{
    size_t i;

    if (rank == PMIX_RANK_WILDCARD)
        return ns->nlocal >= (size_t)ns->world;
    for (i = 0; i < ns->nlocal; i++) {
        if ((pmix_rank_t)ns->local[i] == rank)
            return true;
    }
    return false;
}

/* Registers the namespace of launch l; NULL when libpmix refused. */
static struct pmixsrv_ns *
pmixsrv_ns_register(struct pmixsrv *px, const struct proto_launch *l)
{
    struct pmixsrv_ns *ns = xcalloc(1, sizeof(*ns));
    pmix_data_array_t info;
    pmix_status_t rc;
    size_t i;

    snprintf(ns->name, sizeof(ns->name), "%lld.%d", (long long)l->job,
        l->attempt);
    ns->job = l->job;
    ns->attempt = l->attempt;
    ns->world = l->world_size;
    ns->nlocal = l->nranks;
    ns->local = xcalloc(l->nranks + 1, sizeof(*ns->local));
    for (i = 0; i < l->nranks; i++)
        ns->local[i] = l->ranks[i].rank;
    rc = pmixsrv_info_ns(ns->name, l, px->ad->node, &info);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_server_register_nspace(ns->name, (int)l->nranks,
            (pmix_info_t *)info.array, info.size, NULL, NULL);
    /* Blocking calls say so with OPERATION_SUCCEEDED. */
    if (rc == PMIX_OPERATION_SUCCEEDED)
        rc = PMIX_SUCCESS;
    PMIx_Data_array_destruct(&info);
    if (rc != PMIX_SUCCESS) {
        log_error("job=%lld attempt=%d cannot register PMIx namespace "
                  "'%s': %s",
            (long long)l->job, l->attempt, ns->name, PMIx_Error_string(rc));
        free(ns->local);
        free(ns);
        return NULL;
    }
    log_info("job=%lld attempt=%d PMIx namespace '%s' registered "
             "world_size=%d local=%zu",
        (long long)l->job, l->attempt, ns->name, ns->world, ns->nlocal);
    ns->net = pmixsrv_net_ns_new(px->net, l);
    ns->next = px->ns;
    px->ns = ns;
    return ns;
}

static void
pmixsrv_ns_unlink(struct pmixsrv *px, struct pmixsrv_ns *ns)
{
    struct pmixsrv_ns **p;

    for (p = &px->ns; *p != NULL; p = &(*p)->next) {
        if (*p == ns) {
            *p = ns->next;
            break;
        }
    }
    PMIx_server_deregister_nspace(ns->name, pmixsrv_op_done_cb, NULL);
    pmixsrv_net_ns_free(px->net, ns->net);
    pmixsrv_seen_free(&ns->seen);
    free(ns->local);
    free(ns);
}

/* Whether the job's env turns PMIx off (LOCKSTEP_PMIX=0). */
static bool
pmixsrv_job_off(const struct proto_launch *l)
{
    size_t i;

    for (i = 0; i < l->nenv; i++) {
        if (strcmp(l->env[i].key, "LOCKSTEP_PMIX") == 0)
            return strcmp(l->env[i].value, "0") == 0 ||
                   strcmp(l->env[i].value, "off") == 0;
    }
    return false;
}

/* The index of key's entry in env, or -1. */
static ssize_t
pmixsrv_env_find(char *const *env, const char *key, size_t n)
{
    ssize_t i;

    for (i = 0; env[i] != NULL; i++) {
        if (strncmp(env[i], key, n) == 0 && env[i][n] == '=')
            return i;
    }
    return -1;
}

/* Puts entry ("K=V", taken over) into the heap env *envp (the layout of
 * proc_env.h, whose helpers this module may not call: proc calls us),
 * replacing K's entry when replace, else dropping entry when K is set. */
static void
pmixsrv_env_put(char ***envp, char *entry, bool replace)
{
    char **env = *envp;
    size_t n = 0;
    ssize_t i = pmixsrv_env_find(env, entry, strcspn(entry, "="));

    if (i >= 0) {
        if (replace) {
            free(env[i]);
            env[i] = entry;
        } else {
            free(entry);
        }
        return;
    }
    while (env[n] != NULL)
        n++;
    env = xreallocarray(env, n + 2, sizeof(*env));
    env[n] = entry;
    env[n + 1] = NULL;
    *envp = env;
}

int
pmixsrv_rank_env(struct pmixsrv *px, const struct proto_launch *l, size_t i,
    uid_t uid, gid_t gid, char ***env)
{
    char ns_name[PMIX_MAX_NSLEN + 1];
    struct pmixsrv_ns *ns;
    pmix_proc_t proc;
    pmix_status_t rc;
    char **fenv;
    size_t k;

    if (px == NULL || i >= l->nranks || pmixsrv_job_off(l))
        return 0;
    snprintf(ns_name, sizeof(ns_name), "%lld.%d", (long long)l->job,
        l->attempt);
    ns = pmixsrv_ns_find(px, ns_name);
    if (ns == NULL && (ns = pmixsrv_ns_register(px, l)) == NULL)
        return -EIO;
    memset(&proc, 0, sizeof(proc));
    PMIX_LOAD_PROCID(&proc, ns->name, (pmix_rank_t)l->ranks[i].rank);
    rc = PMIx_server_register_client(&proc, uid, gid, px, NULL, NULL);
    if (rc == PMIX_OPERATION_SUCCEEDED)
        rc = PMIX_SUCCESS;
    fenv = xcalloc(1, sizeof(*fenv)); /* libpmix reallocs it */
    if (rc == PMIX_SUCCESS)
        rc = PMIx_server_setup_fork(&proc, &fenv);
    if (rc != PMIX_SUCCESS) {
        log_error("job=%lld attempt=%d rank=%d cannot register PMIx "
                  "client: %s",
            (long long)l->job, l->attempt, l->ranks[i].rank,
            PMIx_Error_string(rc));
        for (k = 0; fenv[k] != NULL; k++)
            free(fenv[k]);
        free(fenv);
        return -EIO;
    }
    /* setup_fork's entries replace; they are ours (fenv is freed). */
    for (k = 0; fenv[k] != NULL; k++) {
        if (strchr(fenv[k], '=') != NULL)
            pmixsrv_env_put(env, fenv[k], true);
        else
            free(fenv[k]);
    }
    free(fenv);
    /* proc_env drops the agent's PMIX_* from every rank; a PMIx rank must
     * use the store the server was told to (pmixsrv_create). */
    if (getenv("PMIX_MCA_gds") != NULL)
        pmixsrv_env_put(env,
            xasprintf("PMIX_MCA_gds=%s", getenv("PMIX_MCA_gds")), true);
    for (k = 0; k < sizeof(pmixsrv_ompi_env) / sizeof(pmixsrv_ompi_env[0]); k++)
        pmixsrv_env_put(env,
            xasprintf("%s=%s", pmixsrv_ompi_env[k][0], pmixsrv_ompi_env[k][1]),
            false);
    return 0;
}

void
pmixsrv_job_end(struct pmixsrv *px, int64_t job, int attempt)
{
    char name[PMIX_MAX_NSLEN + 1];
    struct pmixsrv_ns *ns;

    if (px == NULL)
        return;
    snprintf(name, sizeof(name), "%lld.%d", (long long)job, attempt);
    if ((ns = pmixsrv_ns_find(px, name)) == NULL)
        return;
    log_debug("job=%lld attempt=%d PMIx namespace deregistered", (long long)job,
        attempt);
    pmixsrv_ns_unlink(px, ns);
}

void
pmixsrv_directives(struct pmixsrv *px, int64_t job, int attempt,
    const struct proto_directive *ds, size_t n)
{
    char name[PMIX_MAX_NSLEN + 1];
    struct pmixsrv_note *note;
    struct pmixsrv_ns *ns;
    size_t *fresh, nfresh;
    pmix_status_t rc;

    if (px == NULL)
        return;
    snprintf(name, sizeof(name), "%lld.%d", (long long)job, attempt);
    if ((ns = pmixsrv_ns_find(px, name)) == NULL)
        return;
    fresh = xcalloc(n + 1, sizeof(*fresh));
    nfresh = pmixsrv_event_fresh(&ns->seen, ds, n, fresh);
    for (size_t k = 0; k < nfresh; k++) {
        const struct proto_directive *d = &ds[fresh[k]];

        rc = pmixsrv_event_notify(ns->name, attempt, d, pmixsrv_notified_cb,
            &note);
        if (note != NULL) {
            note->next = px->notes;
            px->notes = note;
        }
        if (rc != PMIX_SUCCESS && rc != PMIX_OPERATION_SUCCEEDED)
            log_error("job=%lld attempt=%d cannot notify the ranks of "
                      "directive seq=%llu: %s (the control file has it)",
                (long long)job, attempt, (unsigned long long)d->seq,
                PMIx_Error_string(rc));
        else
            log_info("job=%lld attempt=%d directive seq=%llu kind=%s "
                     "step=%lld notified as PMIx event %d",
                (long long)job, attempt, (unsigned long long)d->seq,
                proto_directive_kind_str(d->kind), (long long)d->step,
                pmixsrv_event_code(d->kind));
    }
    free(fresh);
}

void
pmixsrv_set_hooks(struct pmixsrv *px, pmixsrv_abort_fn abort_fn,
    pmixsrv_stop_fn stop_fn, void *arg)
{
    if (px == NULL)
        return;
    px->abort_fn = abort_fn;
    px->stop_fn = stop_fn;
    px->hook_arg = arg;
}

/* ---- the work (loop thread) -------------------------------------------- */

static void pmixsrv_timer_cb(uv_timer_t *t);

static void
pmixsrv_timer_arm(struct pmixsrv *px)
{
    struct pmixsrv_ns *ns;
    int64_t due = 0, now = timeid_mono_ms();
    int rc;

    for (ns = px->ns; ns != NULL; ns = ns->next) {
        if (ns->stop_due_ms > 0 && (due == 0 || ns->stop_due_ms < due))
            due = ns->stop_due_ms;
    }
    if (due == 0)
        return;
    rc = uv_timer_start(&px->timer, pmixsrv_timer_cb,
        (uint64_t)(due > now ? due - now : 0), 0);
    if (rc < 0)
        log_error("cannot start PMIx abort timer: %s", uv_strerror(rc));
}

static void
pmixsrv_timer_cb(uv_timer_t *t)
{
    struct pmixsrv *px = container_of(t, struct pmixsrv, timer);
    int64_t now = timeid_mono_ms();
    struct pmixsrv_ns *ns;

    for (ns = px->ns; ns != NULL; ns = ns->next) {
        if (ns->stop_due_ms <= 0 || ns->stop_due_ms > now)
            continue;
        ns->stop_due_ms = -1;
        if (px->stop_fn != NULL)
            px->stop_fn(px->hook_arg, ns->job, ns->attempt);
    }
    pmixsrv_timer_arm(px);
}

static void
pmixsrv_do_abort(struct pmixsrv *px, struct pmixsrv_work *w)
{
    struct pmixsrv_ns *ns = pmixsrv_ns_find(px, w->proc.nspace);

    if (ns == NULL) {
        log_warn("PMIx abort from rank %u of unknown namespace '%s'",
            w->proc.rank, w->proc.nspace);
    } else {
        log_notice("job=%lld attempt=%d rank=%u called abort status=%d: %s",
            (long long)ns->job, ns->attempt, w->proc.rank, w->status, w->msg);
        if (px->abort_fn != NULL)
            px->abort_fn(px->hook_arg, ns->job, ns->attempt, (int)w->proc.rank,
                w->status, w->msg);
        if (ns->stop_due_ms == 0) {
            ns->stop_due_ms = timeid_mono_ms() + PMIXSRV_ABORT_GRACE_MS;
            pmixsrv_timer_arm(px);
        }
    }
    /* Releases the rank from PMIx_Abort: it exits on its own. */
    if (w->op_cb != NULL)
        w->op_cb(PMIX_SUCCESS, w->cbdata);
}

/* A fence reaches us only when it spans other servers (libpmix completes
 * local ones): relay it through the scheduler (pmixsrv_net.h). Local
 * participants only (a future libpmix that asks anyway) complete with
 * our data; participants of several namespaces (spawned jobs) are not
 * supported. */
static void
pmixsrv_do_fence(struct pmixsrv *px, struct pmixsrv_work *w)
{
    struct pmixsrv_ns *ns = NULL, *first = NULL;
    bool local = true, one_ns = true;
    char *copy;
    size_t i;

    for (i = 0; i < w->nprocs; i++) {
        ns = pmixsrv_ns_find(px, w->procs[i].nspace);
        if (i == 0)
            first = ns;
        one_ns = one_ns && ns != NULL && ns == first;
        local = local && ns != NULL && pmixsrv_ns_local(ns, w->procs[i].rank);
    }
    if (local) {
        copy = w->data;
        w->data = NULL;
        w->modex_cb(PMIX_SUCCESS, copy, w->ndata, w->cbdata, pmixsrv_release_cb,
            copy);
        return;
    }
    if (one_ns && first != NULL) {
        pmixsrv_net_fence(px->net, first->net, w->procs, w->nprocs,
            w->data != NULL ? w->data : "", w->ndata, w->timeout_s, w->modex_cb,
            w->cbdata);
        return;
    }
    log_warn("a PMIx fence names %s namespace '%s': not supported, "
             "failing it",
        one_ns ? "unknown" : "more than one",
        w->nprocs > 0 ? w->procs[0].nspace : "");
    w->modex_cb(PMIX_ERR_NOT_SUPPORTED, NULL, 0, w->cbdata, NULL, NULL);
}

/* libpmix is done with note: free its info list. */
static void
pmixsrv_do_notified(struct pmixsrv *px, struct pmixsrv_work *w)
{
    struct pmixsrv_note **p;

    if (w->status != PMIX_SUCCESS)
        log_warn("a PMIx event completed with %s",
            PMIx_Error_string(w->status));
    for (p = &px->notes; *p != NULL; p = &(*p)->next) {
        if (*p == w->cbdata) {
            *p = (*p)->next;
            pmixsrv_note_free(w->cbdata);
            break;
        }
    }
}

/* A local rank asks for the data of a rank of another node: relay it
 * (pmixsrv_net.h). */
static void
pmixsrv_do_dmodex(struct pmixsrv *px, struct pmixsrv_work *w)
{
    struct pmixsrv_ns *ns = pmixsrv_ns_find(px, w->proc.nspace);

    if (ns == NULL || pmixsrv_ns_local(ns, w->proc.rank)) {
        log_warn("PMIx data of rank %u of namespace '%s' asked for: %s",
            w->proc.rank, w->proc.nspace,
            ns == NULL ? "unknown namespace" : "the rank is local");
        w->modex_cb(ns == NULL ? PMIX_ERR_NOT_FOUND : PMIX_ERR_NOT_SUPPORTED,
            NULL, 0, w->cbdata, NULL, NULL);
        return;
    }
    pmixsrv_net_dmodex(px->net, ns->net, w->proc.rank, w->timeout_s,
        w->modex_cb, w->cbdata);
}

/* Another node asks for the data of rank of (job, attempt), one of ours
 * (pmixsrv_net_serve_fn): libpmix answers once the rank committed it. */
static void
pmixsrv_serve(void *arg, uint64_t id, int64_t job, int attempt, uint32_t rank)
{
    struct pmixsrv *px = arg;
    uint64_t *ctx;
    pmix_proc_t proc;
    char name[PMIX_MAX_NSLEN + 1];
    pmix_status_t rc;

    snprintf(name, sizeof(name), "%lld.%d", (long long)job, attempt);
    if (pmixsrv_ns_find(px, name) == NULL) {
        /* Not registered here (an attempt adopted after an agent
         * restart): libpmix would wait for it forever. */
        log_warn("job=%lld attempt=%d the PMIx data of rank %u cannot be "
                 "given: the namespace is not served by this agent",
            (long long)job, attempt, rank);
        pmixsrv_net_modex_answer(px->net, id, PMIX_ERR_NOT_FOUND, NULL, 0);
        return;
    }
    ctx = xmalloc(sizeof(*ctx));
    memset(&proc, 0, sizeof(proc));
    PMIX_LOAD_PROCID(&proc, name, rank);
    *ctx = id;
    rc = PMIx_server_dmodex_request(&proc, pmixsrv_dmodex_done_cb, ctx);
    if (rc != PMIX_SUCCESS) {
        log_warn("job=%lld attempt=%d the PMIx data of rank %u cannot be "
                 "given: %s",
            (long long)job, attempt, rank, PMIx_Error_string(rc));
        free(ctx);
        pmixsrv_net_modex_answer(px->net, id, rc, NULL, 0);
    }
}

static void
pmixsrv_do(struct pmixsrv *px, struct pmixsrv_work *w)
{
    switch (w->kind) {
    case PMIXSRV_WORK_CONNECTED:
    case PMIXSRV_WORK_FINALIZED:
        log_debug("PMIx client %s rank=%u %s", w->proc.nspace, w->proc.rank,
            w->kind == PMIXSRV_WORK_CONNECTED ? "connected" : "finalized");
        if (w->op_cb != NULL)
            w->op_cb(PMIX_SUCCESS, w->cbdata);
        break;
    case PMIXSRV_WORK_ABORT:
        pmixsrv_do_abort(px, w);
        break;
    case PMIXSRV_WORK_FENCE:
        pmixsrv_do_fence(px, w);
        break;
    case PMIXSRV_WORK_DMODEX:
        pmixsrv_do_dmodex(px, w);
        break;
    case PMIXSRV_WORK_DMODEX_DONE:
        pmixsrv_net_modex_answer(px->net, w->id, w->status,
            w->data != NULL ? w->data : "", w->ndata);
        break;
    case PMIXSRV_WORK_NOTIFIED:
        pmixsrv_do_notified(px, w);
        break;
    }
}

static struct pmixsrv_work *
pmixsrv_take(struct pmixsrv *px)
{
    struct pmixsrv_work *w;

    pthread_mutex_lock(&px->lock);
    w = px->head;
    px->head = px->tail = NULL;
    pthread_mutex_unlock(&px->lock);
    return w;
}

static void
pmixsrv_async_cb(uv_async_t *a)
{
    struct pmixsrv *px = container_of(a, struct pmixsrv, async);
    struct pmixsrv_work *w, *next;

    for (w = pmixsrv_take(px); w != NULL; w = next) {
        next = w->next;
        pmixsrv_do(px, w);
        pmixsrv_work_free(w);
    }
}

/* ---- lifetime ---------------------------------------------------------- */

static void
pmixsrv_free(void *arg)
{
    struct pmixsrv *px = arg;

    pthread_mutex_destroy(&px->lock);
    free(px->dir);
    free(px);
}

static pmix_status_t
pmixsrv_init(struct pmixsrv *px)
{
    pmix_data_array_t info;
    char *nspace = xasprintf("lockstep.agent.%s", px->ad->node);
    pmix_status_t rc;

    rc = pmixsrv_info_server(px->dir, nspace, &info);
    if (rc == PMIX_SUCCESS)
        rc = PMIx_server_init(&pmixsrv_module, (pmix_info_t *)info.array,
            info.size);
    PMIx_Data_array_destruct(&info);
    free(nspace);
    return rc;
}

/* <state_dir>/pmix, fresh and absolute (ranks start elsewhere). */
static int
pmixsrv_make_dir(struct pmixsrv *px, struct err *err)
{
    char *dir = xasprintf("%s/pmix", px->ad->state_dir), real[PATH_MAX];
    int rc;

    rmtree_at(AT_FDCWD, dir, NULL);
    if ((rc = mkdirp(dir, 0711)) < 0 ||
        (rc = realpath(dir, real) == NULL ? -errno : 0) < 0) {
        err_set(err, rc, "cannot create '%s': %s", dir, strerror(-rc));
        free(dir);
        return rc;
    }
    free(dir);
    px->dir = xstrdup(real);
    return 0;
}

struct pmixsrv *
pmixsrv_create(struct agentd *ad, struct err *err)
{
    struct pmixsrv *px;
    uv_handle_t *hs[2];
    pmix_status_t prc;
    int rc;

    err_clear(err);
    if (!ad->pmix_on)
        return NULL;
    px = xcalloc(1, sizeof(*px));
    px->ad = ad;
    if (pmixsrv_make_dir(px, err) < 0) {
        free(px);
        return NULL;
    }
    /* Ranks of another user cannot use the root-owned shared-memory
     * store: the hash store keeps a copy per rank and works for all. */
    if (ad->run_as_submitter && geteuid() == 0)
        setenv("PMIX_MCA_gds", "hash", 0);
    pthread_mutex_init(&px->lock, NULL);
    if ((rc = uv_async_init(ad->loop, &px->async, pmixsrv_async_cb)) < 0 ||
        (rc = uv_timer_init(ad->loop, &px->timer)) < 0)
        fatalx("cannot create PMIx handles: %s", uv_strerror(rc));
    pmixsrv_self = px;
    prc = pmixsrv_init(px);
    if (prc != PMIX_SUCCESS) {
        err_set(err, -EIO, "cannot start the PMIx server: %s",
            PMIx_Error_string(prc));
        pmixsrv_self = NULL;
        rmtree_at(AT_FDCWD, px->dir, NULL);
        hs[0] = (uv_handle_t *)&px->async;
        hs[1] = (uv_handle_t *)&px->timer;
        uvx_close(hs, 2, pmixsrv_free, px);
        return NULL;
    }
    px->net = pmixsrv_net_create(ad, pmixsrv_serve, px);
    log_info("PMIx server %s started in '%s'", PMIx_Get_version(), px->dir);
    return px;
}

void
pmixsrv_destroy(struct pmixsrv *px)
{
    struct pmixsrv_work *w, *next;
    uv_handle_t *hs[2];

    if (px == NULL)
        return;
    while (px->ns != NULL)
        pmixsrv_ns_unlink(px, px->ns);
    PMIx_server_finalize();
    pmixsrv_self = NULL;
    /* libpmix is gone: nobody is left to reply to, nor any event. */
    for (w = pmixsrv_take(px); w != NULL; w = next) {
        next = w->next;
        pmixsrv_work_free(w);
    }
    /* curlx_destroy dropped the fences in flight. */
    pmixsrv_net_destroy(px->net);
    while (px->notes != NULL) {
        struct pmixsrv_note *note = px->notes;

        px->notes = note->next;
        pmixsrv_note_free(note);
    }
    rmtree_at(AT_FDCWD, px->dir, NULL);
    hs[0] = (uv_handle_t *)&px->async;
    hs[1] = (uv_handle_t *)&px->timer;
    uvx_close(hs, 2, pmixsrv_free, px);
}
