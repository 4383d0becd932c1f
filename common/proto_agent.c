/*
 * proto_agent.c - the messages between the scheduler and the agents
 *
 * The node report (POST /v1/agent/status) with each job's rank statuses,
 * the scheduler's reply to it, and the desired state (GET /v1/agent/work:
 * one launch per attempt the node runs). docs/api.md is the reference.
 */
#include "proto.h"
#include "proto_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "xalloc.h"

/* An array of at most PROTO_STEPS_MAX non-negative steps. */
static int
get_steps(const cJSON *obj, const char *key, int64_t **out, size_t *n,
    struct err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    size_t count;
    int64_t *v;
    int rc;

    if (arr == NULL)
        return 0;
    if ((rc = jsonx_count(arr, key, false, "an array of integers",
             PROTO_STEPS_MAX, &count, err)) < 0)
        return rc;
    v = xcalloc(count + 1, sizeof(*v));
    count = 0;
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsNumber(item) || item->valuedouble < 0 ||
            item->valuedouble > 9007199254740992.0 ||
            item->valuedouble != (double)(int64_t)item->valuedouble) {
            free(v);
            return err_set(err, -EINVAL,
                "field '%s[%zu]': must be a non-negative integer", key, count);
        }
        v[count++] = (int64_t)item->valuedouble;
    }
    *out = v;
    *n = count;
    return 0;
}

static void
add_steps(cJSON *obj, const char *key, const int64_t *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, key);

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, cJSON_CreateNumber((double)v[i]));
}

/* An array of at most PROTO_DIRECTIVES_MAX objects of one shape: each is
 * parsed by fn into element i of an array of `size` bytes per element. */
static int
get_objects(const cJSON *obj, const char *key, size_t size,
    int (*fn)(const cJSON *, void *, struct err *), void **out, size_t *n,
    struct err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    size_t count = 0;
    char *v;
    int rc;

    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr))
        return err_set(err, -EINVAL, "field '%s': must be an array", key);
    if ((size_t)cJSON_GetArraySize(arr) > PROTO_DIRECTIVES_MAX)
        return err_set(err, -EINVAL, "field '%s': more than %d entries", key,
            PROTO_DIRECTIVES_MAX);
    v = xcalloc((size_t)cJSON_GetArraySize(arr) + 1, size);
    cJSON_ArrayForEach(item, arr) {
        if ((rc = fn(item, v + count * size, err)) < 0) {
            err_prefix(err, "field '%s[%zu]': ", key, count);
            free(v);
            return rc;
        }
        count++;
    }
    *out = v;
    *n = count;
    return 0;
}

static int
ack_from_json(const cJSON *json, void *out, struct err *err)
{
    static const char *const keys[] = { "seq", "step", "duration_ms", NULL };
    struct proto_ack *a = out;
    int64_t seq = 0;
    int rc;

    a->step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_int(json, "seq", true, 1, INT64_MAX / 2, &seq, err)) ||
        (rc = jsonx_get_int(json, "step", false, -1, INT64_MAX / 2, &a->step,
             err)) ||
        (rc = jsonx_get_int(json, "duration_ms", false, 0, INT64_MAX / 2,
             &a->duration_ms, err)))
        return rc;
    a->seq = (uint64_t)seq;
    return 0;
}

static void
add_acks(cJSON *obj, const struct proto_ack *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, "acks");

    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();

        jsonx_add_int(o, "seq", (int64_t)v[i].seq);
        jsonx_add_int(o, "step", v[i].step);
        jsonx_add_int(o, "duration_ms", v[i].duration_ms);
        cJSON_AddItemToArray(arr, o);
    }
}

bool
proto_section_name_valid(const char *name)
{
    size_t n = 0;

    for (; name[n] != '\0'; n++) {
        char c = name[n];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                (c >= '0' && c <= '9') || c == '_' || c == '.' || c == ':' ||
                c == '-'))
            return false;
    }
    return n > 0 && n <= PROTO_SECTION_NAME_MAX;
}

static int
section_from_json(const cJSON *json, void *out, struct err *err)
{
    static const char *const keys[] = { "name", "p50_us", "p99_us", "n", NULL };
    struct proto_section *s = out;
    char *name = NULL;
    int rc;

    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_str(json, "name", true, PROTO_SECTION_NAME_MAX, &name,
             err)) ||
        (rc = jsonx_get_int(json, "p50_us", true, 0, INT64_MAX / 2, &s->p50_us,
             err)) ||
        (rc = jsonx_get_int(json, "p99_us", false, 0, INT64_MAX / 2, &s->p99_us,
             err)) ||
        (rc = jsonx_get_int(json, "n", false, 0, INT64_MAX / 2, &s->n, err)))
        goto out;
    if (!proto_section_name_valid(name))
        rc = err_set(err, -EINVAL, "field 'name': invalid section name '%s'",
            name);
    else
        memcpy(s->name, name, strlen(name) + 1);
out:
    free(name);
    return rc;
}

static void
add_sections(cJSON *obj, const struct proto_section *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, "sections");

    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();

        jsonx_add_str(o, "name", v[i].name);
        jsonx_add_int(o, "p50_us", v[i].p50_us);
        jsonx_add_int(o, "p99_us", v[i].p99_us);
        jsonx_add_int(o, "n", v[i].n);
        cJSON_AddItemToArray(arr, o);
    }
}

static int
directive_from_json(const cJSON *json, void *out, struct err *err)
{
    static const char *const keys[] = { "seq", "kind", "step", NULL };
    struct proto_directive *d = out;
    char *kind = NULL;
    int64_t seq = 0;
    int rc;

    d->step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_int(json, "seq", true, 1, INT64_MAX / 2, &seq, err)) ||
        (rc = jsonx_get_str(json, "kind", true, 32, &kind, err)) ||
        (rc = jsonx_get_int(json, "step", false, -1, INT64_MAX / 2, &d->step,
             err)))
        goto out;
    d->seq = (uint64_t)seq;
    if (proto_directive_kind_parse(kind, &d->kind) < 0)
        rc = err_set(err, -EINVAL, "field 'kind': unknown directive '%s'",
            kind);
out:
    free(kind);
    return rc;
}

static void
add_directives(cJSON *obj, const struct proto_directive *v, size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(obj, "directives");

    for (size_t i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject();

        jsonx_add_int(o, "seq", (int64_t)v[i].seq);
        jsonx_add_str(o, "kind", proto_directive_kind_str(v[i].kind));
        jsonx_add_int(o, "step", v[i].step);
        cJSON_AddItemToArray(arr, o);
    }
}

static int
rank_status_from_json(const cJSON *json, struct proto_rank_status *r,
    struct err *err)
{
    static const char *const keys[] = { "rank", "state", "pid", "start_ms",
        "end_ms", "exit_code", "signal", "stderr_tail", "fenced", "step",
        "idle_ms", "progress", "dump", "ckpt_steps", "acks", "step_p50_us",
        "step_p99_us", "launch_error", "sections", NULL };
    char *state = NULL, *progress = NULL;
    int rc;

    memset(r, 0, sizeof(*r));
    r->step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = proto_get_int(json, "rank", true, 0, INT32_MAX, &r->rank, err)) ||
        (rc = jsonx_get_str(json, "state", true, 16, &state, err)) ||
        (rc = proto_get_int(json, "pid", false, 0, INT32_MAX, &r->pid, err)) ||
        (rc = jsonx_get_int(json, "start_ms", false, 0, INT64_MAX / 2,
             &r->start_ms, err)) ||
        (rc = jsonx_get_int(json, "end_ms", false, 0, INT64_MAX / 2, &r->end_ms,
             err)) ||
        (rc = proto_get_int(json, "exit_code", false, -1, 255, &r->exit_code,
             err)) ||
        (rc = proto_get_int(json, "signal", false, 0, 128, &r->signal, err)) ||
        (rc = jsonx_get_str(json, "stderr_tail", false, PROTO_TAIL_MAX * 2,
             &r->stderr_tail, err)) ||
        (rc = jsonx_get_bool(json, "fenced", false, &r->fenced, err)) ||
        (rc = jsonx_get_str(json, "launch_error", false, PROTO_TAIL_MAX,
             &r->launch_error, err)) ||
        (rc = jsonx_get_int(json, "step", false, -1, INT64_MAX / 2, &r->step,
             err)) ||
        (rc = jsonx_get_int(json, "idle_ms", false, 0, INT64_MAX / 2,
             &r->idle_ms, err)) ||
        (rc = jsonx_get_str(json, "progress", false, 16, &progress, err)) ||
        (rc = jsonx_get_str(json, "dump", false, PROTO_DUMP_MAX * 2, &r->dump,
             err)) ||
        (rc = get_steps(json, "ckpt_steps", &r->ckpt_steps, &r->nckpt_steps,
             err)) ||
        (rc = get_objects(json, "acks", sizeof(*r->acks), ack_from_json,
             (void **)&r->acks, &r->nacks, err)) ||
        (rc = jsonx_get_int(json, "step_p50_us", false, 0, INT64_MAX / 2,
             &r->step_p50_us, err)) ||
        (rc = jsonx_get_int(json, "step_p99_us", false, 0, INT64_MAX / 2,
             &r->step_p99_us, err)) ||
        (rc = get_objects(json, "sections", sizeof(*r->sections),
             section_from_json, (void **)&r->sections, &r->nsections, err)))
        goto fail;
    if (r->nsections > PROTO_SECTIONS_MAX) {
        rc = err_set(err, -EINVAL, "field 'sections': more than %d sections",
            PROTO_SECTIONS_MAX);
        goto fail;
    }
    if (proto_rank_state_parse(state, &r->state) < 0) {
        rc = err_set(err, -EINVAL, "field 'state': unknown rank state '%s'",
            state);
        goto fail;
    }
    if (progress && proto_progress_parse(progress, &r->progress) < 0) {
        rc = err_set(err, -EINVAL,
            "field 'progress': unknown progress source '%s'", progress);
        goto fail;
    }
    free(state);
    free(progress);
    return 0;
fail:
    free(state);
    free(progress);
    free(r->stderr_tail);
    free(r->launch_error);
    free(r->dump);
    free(r->ckpt_steps);
    free(r->acks);
    free(r->sections);
    memset(r, 0, sizeof(*r));
    return rc;
}

static cJSON *
rank_status_to_json(const struct proto_rank_status *r)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "rank", r->rank);
    jsonx_add_str(o, "state", proto_rank_state_str(r->state));
    jsonx_add_int(o, "pid", r->pid);
    jsonx_add_int(o, "start_ms", r->start_ms);
    if (r->state == PROTO_RANK_EXITED || r->state == PROTO_RANK_LOST) {
        jsonx_add_int(o, "end_ms", r->end_ms);
        jsonx_add_int(o, "exit_code", r->exit_code);
        jsonx_add_int(o, "signal", r->signal);
        jsonx_add_str(o, "stderr_tail", r->stderr_tail ? r->stderr_tail : "");
        if (r->fenced)
            cJSON_AddBoolToObject(o, "fenced", true);
        if (r->launch_error)
            jsonx_add_str(o, "launch_error", r->launch_error);
    }
    jsonx_add_int(o, "step", r->step);
    jsonx_add_int(o, "idle_ms", r->idle_ms);
    jsonx_add_str(o, "progress", proto_progress_str(r->progress));
    if (r->dump)
        jsonx_add_str(o, "dump", r->dump);
    if (r->nckpt_steps)
        add_steps(o, "ckpt_steps", r->ckpt_steps, r->nckpt_steps);
    if (r->nacks)
        add_acks(o, r->acks, r->nacks);
    if (r->step_p50_us > 0)
        jsonx_add_int(o, "step_p50_us", r->step_p50_us);
    if (r->step_p99_us > 0)
        jsonx_add_int(o, "step_p99_us", r->step_p99_us);
    if (r->nsections)
        add_sections(o, r->sections, r->nsections);
    return o;
}

static void
job_status_release(struct proto_job_status *j)
{
    for (size_t i = 0; i < j->nranks; i++) {
        free(j->ranks[i].stderr_tail);
        free(j->ranks[i].launch_error);
        free(j->ranks[i].dump);
        free(j->ranks[i].ckpt_steps);
        free(j->ranks[i].acks);
        free(j->ranks[i].sections);
    }
    free(j->ranks);
    free(j->checkpoints);
    memset(j, 0, sizeof(*j));
}

static int
job_status_from_json(const cJSON *json, struct proto_job_status *j,
    struct err *err)
{
    static const char *const keys[] = { "job", "attempt", "ranks",
        "checkpoints", NULL };
    const cJSON *ranks, *item;
    size_t n;
    int rc;

    memset(j, 0, sizeof(*j));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &j->job,
             err)) ||
        (rc = proto_get_int(json, "attempt", true, 1, INT32_MAX, &j->attempt,
             err)) ||
        (rc = get_steps(json, "checkpoints", &j->checkpoints, &j->ncheckpoints,
             err)))
        goto fail;
    ranks = cJSON_GetObjectItemCaseSensitive(json, "ranks");
    n = (size_t)cJSON_GetArraySize(ranks);
    if (!cJSON_IsArray(ranks))
        rc = err_set(err, -EINVAL, "field 'ranks': must be an array");
    else if (n > PROTO_RANKS_PER_NODE_MAX)
        rc = err_set(err, -EINVAL, "field 'ranks': more than %d entries",
            PROTO_RANKS_PER_NODE_MAX);
    if (rc < 0)
        goto fail;
    j->ranks = xcalloc(n + 1, sizeof(*j->ranks));
    cJSON_ArrayForEach(item, ranks) {
        rc = rank_status_from_json(item, &j->ranks[j->nranks], err);
        if (rc < 0) {
            err_prefix(err, "job %lld rank entry %zu: ", (long long)j->job,
                j->nranks);
            goto fail;
        }
        j->nranks++;
    }
    return 0;

fail:
    /* What was read so far (the checkpoints, the ranks before the bad
     * one): the caller counts only complete entries. */
    job_status_release(j);
    return rc;
}

/* ---- node report -------------------------------------------------------- */

void
proto_resources_release(struct proto_resources *res)
{
    free(res->gpus);
    proto_kv_array_free(res->labels, res->nlabels);
    memset(res, 0, sizeof(*res));
}

void
proto_node_report_release(struct proto_node_report *rep)
{
    free(rep->node);
    free(rep->agent_id);
    free(rep->addr);
    proto_resources_release(&rep->res);
    for (size_t i = 0; i < rep->njobs; i++)
        job_status_release(&rep->jobs[i]);
    free(rep->jobs);
    if (rep->health) {
        proto_health_release(rep->health);
        free(rep->health);
    }
    memset(rep, 0, sizeof(*rep));
}

/* The optional "health" object (agents before it send none). */
static int
health_from_json(const cJSON *json, struct proto_node_report *rep,
    struct err *err)
{
    const cJSON *h = cJSON_GetObjectItemCaseSensitive(json, "health");
    int rc;

    if (h == NULL)
        return 0;
    rep->health = xcalloc(1, sizeof(*rep->health));
    if ((rc = proto_health_from_json(h, rep->health, err)) < 0) {
        free(rep->health);
        rep->health = NULL;
    }
    return rc;
}

int
proto_node_report_from_json(const cJSON *json, struct proto_node_report *rep,
    struct err *err)
{
    static const char *const keys[] = { "version", "node", "register",
        "agent_id", "addr", "cpus", "memory_mb", "gpus", "labels", "gen",
        "jobs", "health", "witness_port", NULL };
    struct proto_resources *res = &rep->res;
    const cJSON *jobs, *item;
    int64_t gen = 0;
    int rc;

    memset(rep, 0, sizeof(*rep));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_str(json, "node", true, PROTO_NODE_NAME_MAX, &rep->node,
             err)) ||
        (rc = jsonx_get_bool(json, "register", false, &rep->reg, err)) ||
        (rc = jsonx_get_str(json, "agent_id", true, 128, &rep->agent_id,
             err)) ||
        (rc = jsonx_get_str(json, "addr", true, 255, &rep->addr, err)) ||
        (rc = proto_get_int(json, "cpus", true, 0, 1 << 20, &res->cpus, err)) ||
        (rc = jsonx_get_int(json, "memory_mb", true, 0, (int64_t)1 << 40,
             &res->memory_mb, err)) ||
        (rc = jsonx_get_int_array(json, "gpus", false, PROTO_GPUS_MAX, 0,
             PROTO_GPUS_MAX - 1, &res->gpus, &res->ngpus, err)) ||
        (rc = proto_kv_from_json(json, "labels", PROTO_LABELS_MAX, false, 256,
             &res->labels, &res->nlabels, err)) ||
        (rc = jsonx_get_int(json, "gen", false, 0, INT64_MAX, &gen, err)) ||
        (rc = proto_get_int(json, "witness_port", false, 0, 65535,
             &rep->witness_port, err)))
        goto fail;
    rep->gen = (uint64_t)gen;
    if (!proto_valid_name(rep->node, PROTO_NODE_NAME_MAX)) {
        rc = err_set(err, -EINVAL,
            "field 'node': '%.40s' is not a valid "
            "node name",
            rep->node);
        goto fail;
    }
    if (rep->addr[0] == '\0') {
        rc = err_set(err, -EINVAL, "field 'addr': must not be empty");
        goto fail;
    }
    jobs = cJSON_GetObjectItemCaseSensitive(json, "jobs");
    if (jobs != NULL) {
        size_t n;

        if (!cJSON_IsArray(jobs)) {
            rc = err_set(err, -EINVAL, "field 'jobs': must be an array");
            goto fail;
        }
        n = (size_t)cJSON_GetArraySize(jobs);
        if (n > 4096) {
            rc = err_set(err, -EINVAL, "field 'jobs': more than 4096 entries");
            goto fail;
        }
        rep->jobs = xcalloc(n + 1, sizeof(*rep->jobs));
        cJSON_ArrayForEach(item, jobs) {
            rc = job_status_from_json(item, &rep->jobs[rep->njobs], err);
            if (rc < 0) {
                err_prefix(err, "field 'jobs[%zu]': ", rep->njobs);
                goto fail;
            }
            rep->njobs++;
        }
    }
    if ((rc = health_from_json(json, rep, err)) < 0)
        goto fail;
    return 0;
fail:
    proto_node_report_release(rep);
    return rc;
}

cJSON *
proto_node_report_to_json(const struct proto_node_report *rep)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *jobs;

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_str(o, "node", rep->node);
    cJSON_AddBoolToObject(o, "register", rep->reg);
    jsonx_add_str(o, "agent_id", rep->agent_id);
    jsonx_add_str(o, "addr", rep->addr);
    jsonx_add_int(o, "cpus", rep->res.cpus);
    jsonx_add_int(o, "memory_mb", rep->res.memory_mb);
    jsonx_add_int_array(o, "gpus", rep->res.gpus, rep->res.ngpus);
    proto_kv_to_json(o, "labels", rep->res.labels, rep->res.nlabels);
    jsonx_add_int(o, "gen", (int64_t)rep->gen);
    if (rep->witness_port > 0)
        jsonx_add_int(o, "witness_port", rep->witness_port);
    jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < rep->njobs; i++) {
        const struct proto_job_status *j = &rep->jobs[i];
        cJSON *jo = cJSON_CreateObject();
        cJSON *ranks;

        jsonx_add_int(jo, "job", j->job);
        jsonx_add_int(jo, "attempt", j->attempt);
        if (j->ncheckpoints)
            add_steps(jo, "checkpoints", j->checkpoints, j->ncheckpoints);
        ranks = cJSON_AddArrayToObject(jo, "ranks");
        for (size_t r = 0; r < j->nranks; r++)
            cJSON_AddItemToArray(ranks, rank_status_to_json(&j->ranks[r]));
        cJSON_AddItemToArray(jobs, jo);
    }
    if (rep->health)
        cJSON_AddItemToObject(o, "health", proto_health_to_json(rep->health));
    return o;
}

/* ---- status reply ------------------------------------------------------- */

cJSON *
proto_status_reply_to_json(const struct proto_status_reply *r)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "heartbeat_ms", r->heartbeat_ms);
    jsonx_add_int(o, "gen", (int64_t)r->gen);
    jsonx_add_int(o, "lease_ms", r->lease_ms);
    if (r->lease_interval_ms > 0)
        jsonx_add_int(o, "lease_interval_ms", r->lease_interval_ms);
    if (r->ping_ms > 0)
        jsonx_add_int(o, "ping_ms", r->ping_ms);
    if (r->has_witnesses) {
        cJSON *ws = cJSON_AddArrayToObject(o, "witnesses");

        for (size_t i = 0; i < r->nwitnesses; i++) {
            cJSON *w = cJSON_CreateObject();

            jsonx_add_str(w, "node", r->witnesses[i].node);
            jsonx_add_str(w, "addr", r->witnesses[i].addr);
            jsonx_add_int(w, "port", r->witnesses[i].port);
            cJSON_AddItemToArray(ws, w);
        }
    }
    return o;
}

/* The status reply's "witnesses", when present. */
static int
witnesses_from_json(const cJSON *json, struct proto_status_reply *r,
    struct err *err)
{
    const cJSON *ws = cJSON_GetObjectItemCaseSensitive(json, "witnesses");
    const cJSON *w;
    int rc;

    if (ws == NULL)
        return 0;
    if (!cJSON_IsArray(ws) || cJSON_GetArraySize(ws) > PROTO_WITNESSES_MAX)
        return err_set(err, -EINVAL,
            "field 'witnesses': must be an array of at most %d",
            PROTO_WITNESSES_MAX);
    r->has_witnesses = true;
    cJSON_ArrayForEach(w, ws) {
        struct proto_witness *pw = &r->witnesses[r->nwitnesses];
        char *node = NULL, *addr = NULL;

        if ((rc = jsonx_get_str(w, "node", true, PROTO_NODE_NAME_MAX, &node,
                 err)) < 0 ||
            (rc = jsonx_get_str(w, "addr", true, sizeof(pw->addr) - 1, &addr,
                 err)) < 0 ||
            (rc = proto_get_int(w, "port", true, 0, 65535, &pw->port, err)) <
                0) {
            free(node);
            free(addr);
            return rc;
        }
        snprintf(pw->node, sizeof(pw->node), "%s", node);
        snprintf(pw->addr, sizeof(pw->addr), "%s", addr);
        free(node);
        free(addr);
        r->nwitnesses++;
    }
    return 0;
}

int
proto_status_reply_from_json(const cJSON *json, struct proto_status_reply *r,
    struct err *err)
{
    int64_t gen = 0;
    int rc;

    if ((rc = jsonx_get_int(json, "heartbeat_ms", false, PROTO_HEARTBEAT_MIN_MS,
             PROTO_HEARTBEAT_MAX_MS, &r->heartbeat_ms, err)) < 0 ||
        (rc = jsonx_get_int(json, "gen", true, 0, INT64_MAX, &gen, err)) < 0 ||
        (rc = jsonx_get_int(json, "lease_ms", false, PROTO_LEASE_MIN_MS,
             PROTO_LEASE_MAX_MS, &r->lease_ms, err)) < 0 ||
        (rc = jsonx_get_int(json, "lease_interval_ms", false, 0,
             PROTO_HEARTBEAT_MAX_MS, &r->lease_interval_ms, err)) < 0 ||
        (rc = jsonx_get_int(json, "ping_ms", false, 0, PROTO_HEARTBEAT_MAX_MS,
             &r->ping_ms, err)) < 0 ||
        (rc = witnesses_from_json(json, r, err)) < 0)
        return rc;
    r->gen = (uint64_t)gen;
    return 0;
}

/* ---- launch ------------------------------------------------------------- */

void
proto_launch_release(struct proto_launch *l)
{
    free(l->name);
    free(l->user);
    xstrv_free(l->argv, l->argc);
    proto_kv_array_free(l->env, l->nenv);
    free(l->workdir);
    free(l->master_addr);
    for (size_t i = 0; i < l->nranks; i++)
        free(l->ranks[i].gpus);
    free(l->ranks);
    free(l->checkpoint_dir);
    free(l->resume_from);
    free(l->directives);
    xstrv_free(l->nodes, l->nnodes_named);
    memset(l, 0, sizeof(*l));
}

static int
launch_rank_from_json(const cJSON *json, struct proto_launch_rank *r,
    struct err *err)
{
    static const char *const keys[] = { "rank", "local_rank", "gpus", NULL };
    int rc;

    memset(r, 0, sizeof(*r));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = proto_get_int(json, "rank", true, 0, INT32_MAX, &r->rank, err)) ||
        (rc = proto_get_int(json, "local_rank", true, 0,
             PROTO_RANKS_PER_NODE_MAX, &r->local_rank, err)) ||
        (rc = jsonx_get_int_array(json, "gpus", false, PROTO_GPUS_MAX, 0,
             PROTO_GPUS_MAX - 1, &r->gpus, &r->ngpus, err)))
        return rc;
    return 0;
}

/* The scalar and string fields of a launch. */
static int
launch_fields_from_json(const cJSON *json, struct proto_launch *l,
    struct err *err)
{
    int rc;

    if ((rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &l->job,
             err)) ||
        (rc = proto_get_int(json, "attempt", true, 1, INT32_MAX, &l->attempt,
             err)) ||
        (rc = jsonx_get_str(json, "name", true, PROTO_NAME_MAX, &l->name,
             err)) ||
        (rc = jsonx_get_str(json, "user", true, 256, &l->user, err)) ||
        (rc = jsonx_get_str_array(json, "argv", true, PROTO_ARGV_MAX,
             PROTO_ARG_LEN_MAX, &l->argv, &l->argc, err)) ||
        (rc = proto_kv_from_json(json, "env", PROTO_ENV_MAX, true,
             PROTO_ENV_VALUE_MAX, &l->env, &l->nenv, err)) ||
        (rc = jsonx_get_str(json, "workdir", true, PROTO_PATH_MAX, &l->workdir,
             err)) ||
        (rc = proto_get_int(json, "nnodes", true, 1, PROTO_NODES_MAX,
             &l->nnodes, err)) ||
        (rc = proto_get_int(json, "node_rank", true, 0, PROTO_NODES_MAX - 1,
             &l->node_rank, err)) ||
        (rc = proto_get_int(json, "ranks_per_node", true, 1,
             PROTO_RANKS_PER_NODE_MAX, &l->ranks_per_node, err)) ||
        (rc = proto_get_int(json, "world_size", true, 1, INT32_MAX,
             &l->world_size, err)) ||
        (rc = jsonx_get_str(json, "master_addr", true, 255, &l->master_addr,
             err)) ||
        (rc = proto_get_int(json, "master_port", true, 1, 65535,
             &l->master_port, err)) ||
        (rc = jsonx_get_str(json, "checkpoint_dir", false, PROTO_PATH_MAX,
             &l->checkpoint_dir, err)) ||
        (rc = jsonx_get_str(json, "resume_from", false, PROTO_PATH_MAX,
             &l->resume_from, err)) ||
        (rc = jsonx_get_int(json, "resume_step", false, -1, INT64_MAX / 2,
             &l->resume_step, err)) ||
        (rc = proto_get_int(json, "keep_checkpoints", false, 0, 100000,
             &l->keep_checkpoints, err)) ||
        (rc = proto_get_int(json, "max_restarts", false, 0, 1000,
             &l->max_restarts, err)) ||
        (rc = jsonx_get_bool(json, "scan_checkpoints", false,
             &l->scan_checkpoints, err)) ||
        (rc = jsonx_get_bool(json, "gc_managed", false, &l->gc_managed, err)) ||
        (rc = jsonx_get_str_array(json, "nodes", false, PROTO_NODES_MAX,
             PROTO_NODE_NAME_MAX, &l->nodes, &l->nnodes_named, err)))
        return rc;
    if (l->argc == 0 || l->argv[0][0] == '\0')
        return err_set(err, -EINVAL, "field 'argv': the command is empty");
    if (l->node_rank >= l->nnodes)
        return err_set(err, -EINVAL,
            "field 'node_rank': %d is not below "
            "nnodes %d",
            l->node_rank, l->nnodes);
    if (l->nodes != NULL && l->nnodes_named != (size_t)l->nnodes)
        return err_set(err, -EINVAL, "field 'nodes': %zu names for nnodes %d",
            l->nnodes_named, l->nnodes);
    for (size_t k = 0; k < l->nnodes_named; k++) {
        if (!proto_valid_name(l->nodes[k], PROTO_NODE_NAME_MAX))
            return err_set(err, -EINVAL, "field 'nodes[%zu]': bad node name",
                k);
    }
    return 0;
}

/* The ranks of a launch: 1 to PROTO_RANKS_PER_NODE_MAX, each below
 * world_size. */
static int
launch_ranks_from_json(const cJSON *json, struct proto_launch *l,
    struct err *err)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(json, "ranks");
    const cJSON *item;
    size_t n;
    int rc;

    if (!cJSON_IsArray(ranks))
        return err_set(err, -EINVAL, "field 'ranks': must be an array");
    n = (size_t)cJSON_GetArraySize(ranks);
    if (n == 0 || n > PROTO_RANKS_PER_NODE_MAX)
        return err_set(err, -EINVAL,
            "field 'ranks': must hold 1 to %d "
            "ranks",
            PROTO_RANKS_PER_NODE_MAX);
    l->ranks = xcalloc(n, sizeof(*l->ranks));
    cJSON_ArrayForEach(item, ranks) {
        struct proto_launch_rank *r = &l->ranks[l->nranks];

        rc = launch_rank_from_json(item, r, err);
        l->nranks++;
        if (rc < 0) {
            err_prefix(err, "field 'ranks[%zu]': ", l->nranks - 1);
            return rc;
        }
        if (r->rank >= l->world_size)
            return err_set(err, -EINVAL,
                "field 'ranks[%zu]': rank %d is "
                "not below world_size %d",
                l->nranks - 1, r->rank, l->world_size);
    }
    return 0;
}

int
proto_launch_from_json(const cJSON *json, struct proto_launch *l,
    struct err *err)
{
    static const char *const keys[] = { "job", "attempt", "name", "user",
        "argv", "env", "workdir", "nnodes", "node_rank", "ranks_per_node",
        "world_size", "master_addr", "master_port", "ranks", "checkpoint_dir",
        "resume_from", "resume_step", "keep_checkpoints", "max_restarts",
        "scan_checkpoints", "gc_managed", "directives", "nodes", NULL };
    int rc;

    memset(l, 0, sizeof(*l));
    l->resume_step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = launch_fields_from_json(json, l, err)) ||
        (rc = launch_ranks_from_json(json, l, err)) ||
        (rc = get_objects(json, "directives", sizeof(*l->directives),
             directive_from_json, (void **)&l->directives, &l->ndirectives,
             err))) {
        proto_launch_release(l);
        return rc;
    }
    if (l->checkpoint_dir == NULL)
        l->checkpoint_dir = xstrdup("");
    if (l->resume_from == NULL)
        l->resume_from = xstrdup("");
    return 0;
}

cJSON *
proto_launch_to_json(const struct proto_launch *l)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *ranks;

    jsonx_add_int(o, "job", l->job);
    jsonx_add_int(o, "attempt", l->attempt);
    jsonx_add_str(o, "name", l->name);
    jsonx_add_str(o, "user", l->user);
    jsonx_add_str_array(o, "argv", l->argv, l->argc);
    proto_kv_to_json(o, "env", l->env, l->nenv);
    jsonx_add_str(o, "workdir", l->workdir);
    jsonx_add_int(o, "nnodes", l->nnodes);
    jsonx_add_int(o, "node_rank", l->node_rank);
    jsonx_add_int(o, "ranks_per_node", l->ranks_per_node);
    jsonx_add_int(o, "world_size", l->world_size);
    jsonx_add_str(o, "master_addr", l->master_addr);
    jsonx_add_int(o, "master_port", l->master_port);
    ranks = cJSON_AddArrayToObject(o, "ranks");
    for (size_t i = 0; i < l->nranks; i++) {
        cJSON *r = cJSON_CreateObject();

        jsonx_add_int(r, "rank", l->ranks[i].rank);
        jsonx_add_int(r, "local_rank", l->ranks[i].local_rank);
        jsonx_add_int_array(r, "gpus", l->ranks[i].gpus, l->ranks[i].ngpus);
        cJSON_AddItemToArray(ranks, r);
    }
    jsonx_add_str(o, "checkpoint_dir", l->checkpoint_dir);
    jsonx_add_str(o, "resume_from", l->resume_from);
    jsonx_add_int(o, "resume_step", l->resume_step);
    jsonx_add_int(o, "keep_checkpoints", l->keep_checkpoints);
    jsonx_add_int(o, "max_restarts", l->max_restarts);
    cJSON_AddBoolToObject(o, "scan_checkpoints", l->scan_checkpoints);
    if (l->gc_managed)
        cJSON_AddBoolToObject(o, "gc_managed", true);
    if (l->ndirectives)
        add_directives(o, l->directives, l->ndirectives);
    if (l->nodes_json != NULL)
        cJSON_AddItemToObject(o, "nodes", cJSON_CreateRaw(l->nodes_json));
    else if (l->nodes != NULL)
        jsonx_add_str_array(o, "nodes", l->nodes, l->nnodes_named);
    return o;
}

/* ---- work --------------------------------------------------------------- */

void
proto_work_release(struct proto_work *w)
{
    for (size_t i = 0; i < w->njobs; i++)
        proto_launch_release(&w->jobs[i]);
    free(w->jobs);
    memset(w, 0, sizeof(*w));
}

int
proto_work_from_json(const cJSON *json, struct proto_work *w, struct err *err)
{
    static const char *const keys[] = { "version", "gen", "jobs", NULL };
    const cJSON *jobs, *item;
    int64_t gen = 0;
    size_t n;
    int rc;

    memset(w, 0, sizeof(*w));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_int(json, "gen", true, 0, INT64_MAX, &gen, err)))
        return rc;
    w->gen = (uint64_t)gen;
    jobs = cJSON_GetObjectItemCaseSensitive(json, "jobs");
    if (!cJSON_IsArray(jobs))
        return err_set(err, -EINVAL, "field 'jobs': must be an array");
    n = (size_t)cJSON_GetArraySize(jobs);
    w->jobs = xcalloc(n + 1, sizeof(*w->jobs));
    cJSON_ArrayForEach(item, jobs) {
        rc = proto_launch_from_json(item, &w->jobs[w->njobs], err);
        if (rc < 0) {
            err_prefix(err, "field 'jobs[%zu]': ", w->njobs);
            proto_work_release(w);
            return rc;
        }
        w->njobs++;
    }
    return 0;
}

cJSON *
proto_work_to_json(const struct proto_work *w)
{
    cJSON *o = cJSON_CreateObject();
    cJSON *jobs;

    jsonx_add_int(o, "version", PROTO_VERSION);
    jsonx_add_int(o, "gen", (int64_t)w->gen);
    jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < w->njobs; i++)
        cJSON_AddItemToArray(jobs, proto_launch_to_json(&w->jobs[i]));
    return o;
}
