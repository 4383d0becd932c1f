/*
 * proto.c - messages between the CLI, the scheduler and the agents
 *
 * Every _from_json validates the whole message before anyone sees it
 * (seatd's client_handle_opcode): type, range and length of each field,
 * no unknown fields, "version" present and understood. On failure the
 * partially built struct is released, so callers never free half a message.
 */
#include "proto.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jsonx.h"
#include "xalloc.h"

/* ---- small helpers ------------------------------------------------------ */

bool
proto_valid_name(const char *s, size_t max)
{
    size_t n = 0;

    if (s == NULL || *s == '\0')
        return false;
    for (; s[n]; n++) {
        unsigned char c = (unsigned char)s[n];
        if (!(isalnum(c) || c == '.' || c == '_' || c == '-'))
            return false;
    }
    return n <= max;
}

bool
proto_valid_env_key(const char *s)
{
    if (s == NULL || !(isalpha((unsigned char)*s) || *s == '_'))
        return false;
    for (s++; *s; s++) {
        if (!(isalnum((unsigned char)*s) || *s == '_'))
            return false;
    }
    return true;
}

void
proto_kv_array_free(struct proto_kv *kv, size_t n)
{
    if (kv == NULL)
        return;
    for (size_t i = 0; i < n; i++) {
        free(kv[i].key);
        free(kv[i].value);
    }
    free(kv);
}

int
proto_kv_parse(const char *s, struct proto_kv *kv, struct err *err)
{
    const char *eq = strchr(s, '=');

    if (eq == NULL || eq == s)
        return err_set(err, -EINVAL, "'%s' is not of the form KEY=VALUE", s);
    kv->key = xstrndup(s, (size_t)(eq - s));
    kv->value = xstrdup(eq + 1);
    return 0;
}

static int
cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

int
proto_parse_id_list(const char *s, int **out, size_t *n, struct err *err)
{
    const char *p = s;
    int *ids = NULL;
    size_t count = 0, cap = 0;

    while (*p) {
        char *end;
        long lo, hi;

        if (!isdigit((unsigned char)*p))
            goto bad;
        lo = strtol(p, &end, 10);
        hi = lo;
        p = end;
        if (*p == '-') {
            p++;
            if (!isdigit((unsigned char)*p))
                goto bad;
            hi = strtol(p, &end, 10);
            p = end;
        }
        if (lo < 0 || hi < lo || hi >= PROTO_GPUS_MAX ||
            count + (size_t)(hi - lo + 1) > PROTO_GPUS_MAX)
            goto bad;
        for (long i = lo; i <= hi; i++) {
            if (count == cap) {
                cap = cap ? cap * 2 : 8;
                ids = xreallocarray(ids, cap, sizeof(*ids));
            }
            ids[count++] = (int)i;
        }
        if (*p == ',')
            p++;
        else if (*p != '\0')
            goto bad;
    }
    if (count > 1) {
        size_t w = 1;
        qsort(ids, count, sizeof(*ids), cmp_int);
        for (size_t r = 1; r < count; r++) {
            if (ids[r] != ids[w - 1])
                ids[w++] = ids[r];
        }
        count = w;
    }
    *out = ids;
    *n = count;
    return 0;
bad:
    free(ids);
    return err_set(err, -EINVAL,
        "'%s' is not a list of ids like 0-3,6 (each below %d)", s,
        PROTO_GPUS_MAX);
}

/* Parse an object of string → string into kv pairs. */
static int
kv_from_json(const cJSON *obj, const char *key, size_t maxn, bool env_keys,
    size_t maxval, struct proto_kv **out, size_t *n, struct err *err)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    struct proto_kv *kv;
    size_t i = 0, count;

    if (map == NULL)
        return 0;
    if (!cJSON_IsObject(map))
        return err_set(err, -EINVAL,
            "field '%s': must be an object of strings", key);
    count = (size_t)cJSON_GetArraySize(map);
    if (count > maxn)
        return err_set(err, -EINVAL, "field '%s': more than %zu entries",
            key, maxn);
    kv = xcalloc(count + 1, sizeof(*kv));
    cJSON_ArrayForEach(item, map) {
        const cJSON *other;
        int rc = 0;

        if (env_keys && !proto_valid_env_key(item->string))
            rc = err_set(err, -EINVAL,
                "field '%s': '%.40s' is not a valid variable name", key,
                item->string);
        else if (!env_keys && !proto_valid_name(item->string, PROTO_NAME_MAX))
            rc = err_set(err, -EINVAL,
                "field '%s': '%.40s' is not a valid label name", key,
                item->string);
        else if (!cJSON_IsString(item) || item->valuestring == NULL)
            rc = err_set(err, -EINVAL, "field '%s.%s': must be a string", key,
                item->string);
        else if (strlen(item->valuestring) > maxval)
            rc = err_set(err, -EINVAL, "field '%s.%s': longer than %zu bytes",
                key, item->string, maxval);
        for (other = item->next; rc == 0 && other; other = other->next) {
            if (strcmp(other->string, item->string) == 0)
                rc = err_set(err, -EINVAL, "field '%s.%s' given twice", key,
                    item->string);
        }
        if (rc < 0) {
            proto_kv_array_free(kv, i);
            return rc;
        }
        kv[i].key = xstrdup(item->string);
        kv[i].value = xstrdup(item->valuestring);
        i++;
    }
    *out = kv;
    *n = count;
    return 0;
}

static void
kv_to_json(cJSON *obj, const char *key, const struct proto_kv *kv, size_t n)
{
    cJSON *map = cJSON_AddObjectToObject(obj, key);

    for (size_t i = 0; i < n; i++)
        cJSON_AddStringToObject(map, kv[i].key, kv[i].value);
}

static void
strv_free(char **v, size_t n)
{
    if (v == NULL)
        return;
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static int
get_int(const cJSON *obj, const char *key, bool required, int64_t min,
    int64_t max, int *out, struct err *err)
{
    int64_t v = *out;
    int rc = jsonx_get_int(obj, key, required, min, max, &v, err);

    if (rc == 0)
        *out = (int)v;
    return rc;
}

/* ---- job spec ----------------------------------------------------------- */

void
proto_job_spec_init(struct proto_job_spec *spec)
{
    memset(spec, 0, sizeof(*spec));
    spec->nodes = 1;
    spec->ranks_per_node = 1;
    spec->cpus_per_rank = 1;
    spec->max_restarts = PROTO_DEFAULT_MAX_RESTARTS;
    spec->max_infra_restarts = PROTO_DEFAULT_MAX_INFRA_RESTARTS;
    spec->hang_timeout_s = PROTO_DEFAULT_HANG_TIMEOUT_S;
}

void
proto_job_spec_release(struct proto_job_spec *spec)
{
    free(spec->name);
    strv_free(spec->argv, spec->argc);
    proto_kv_array_free(spec->env, spec->nenv);
    free(spec->workdir);
    free(spec->checkpoint_dir);
    memset(spec, 0, sizeof(*spec));
}

static int
check_path(const char *field, const char *p, bool allow_empty,
    struct err *err)
{
    if (p == NULL || *p == '\0') {
        if (allow_empty)
            return 0;
        return err_set(err, -EINVAL, "field '%s': must not be empty", field);
    }
    if (p[0] != '/')
        return err_set(err, -EINVAL,
            "field '%s': '%.60s' is not an absolute path", field, p);
    if (strlen(p) > PROTO_PATH_MAX)
        return err_set(err, -EINVAL, "field '%s': longer than %d bytes",
            field, PROTO_PATH_MAX);
    return 0;
}

static int
check_range(const char *field, int64_t v, int64_t min, int64_t max,
    struct err *err)
{
    if (v < min || v > max)
        return err_set(err, -EINVAL,
            "field '%s': must be between %lld and %lld, got %lld", field,
            (long long)min, (long long)max, (long long)v);
    return 0;
}

int
proto_job_spec_validate(const struct proto_job_spec *spec, struct err *err)
{
    int rc;

    if (spec->argc == 0 || spec->argv == NULL)
        return err_set(err, -EINVAL, "field 'argv': the command is empty");
    if (spec->argc > PROTO_ARGV_MAX)
        return err_set(err, -EINVAL, "field 'argv': more than %d arguments",
            PROTO_ARGV_MAX);
    if (spec->argv[0] == NULL || spec->argv[0][0] == '\0')
        return err_set(err, -EINVAL,
            "field 'argv': the command name (argv[0]) is empty");
    for (size_t i = 0; i < spec->argc; i++) {
        if (strlen(spec->argv[i]) > PROTO_ARG_LEN_MAX)
            return err_set(err, -EINVAL,
                "field 'argv[%zu]': longer than %d bytes", i,
                PROTO_ARG_LEN_MAX);
    }
    if (spec->name && !proto_valid_name(spec->name, PROTO_NAME_MAX))
        return err_set(err, -EINVAL,
            "field 'name': '%.40s' must be 1-%d characters of A-Z a-z 0-9 . _ -",
            spec->name, PROTO_NAME_MAX);
    if ((rc = check_range("nodes", spec->nodes, 1, PROTO_NODES_MAX, err)) ||
        (rc = check_range("ranks_per_node", spec->ranks_per_node, 1,
             PROTO_RANKS_PER_NODE_MAX, err)) ||
        (rc = check_range("gpus_per_node", spec->gpus_per_node, 0,
             PROTO_GPUS_MAX, err)) ||
        (rc = check_range("cpus_per_rank", spec->cpus_per_rank, 0,
             PROTO_CPUS_MAX, err)) ||
        (rc = check_range("memory_mb_per_node", spec->memory_mb_per_node, 0,
             (int64_t)1 << 40, err)) ||
        (rc = check_range("priority", spec->priority, -1000, 1000, err)) ||
        (rc = check_range("max_restarts", spec->max_restarts, 0, 1000, err)) ||
        (rc = check_range("max_infra_restarts", spec->max_infra_restarts, 0,
             10000, err)) ||
        (rc = check_range("hang_timeout_s", spec->hang_timeout_s, 0,
             PROTO_HANG_TIMEOUT_MAX, err)) ||
        (rc = check_range("keep_checkpoints", spec->keep_checkpoints, 0,
             100000, err)))
        return rc;
    if (spec->nenv > PROTO_ENV_MAX)
        return err_set(err, -EINVAL, "field 'env': more than %d entries",
            PROTO_ENV_MAX);
    for (size_t i = 0; i < spec->nenv; i++) {
        if (!proto_valid_env_key(spec->env[i].key))
            return err_set(err, -EINVAL,
                "field 'env': '%.40s' is not a valid variable name",
                spec->env[i].key);
        if (strlen(spec->env[i].value) > PROTO_ENV_VALUE_MAX)
            return err_set(err, -EINVAL,
                "field 'env.%s': longer than %d bytes", spec->env[i].key,
                PROTO_ENV_VALUE_MAX);
    }
    if ((rc = check_path("workdir", spec->workdir, true, err)) ||
        (rc = check_path("checkpoint_dir", spec->checkpoint_dir, true, err)))
        return rc;
    return 0;
}

/* The default job name: the basename of argv[0], cut to the name rules. */
static char *
default_name(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    char *name;
    size_t n = 0;

    base = base ? base + 1 : argv0;
    name = xcalloc(PROTO_NAME_MAX + 1, 1);
    for (; *base && n < PROTO_NAME_MAX; base++) {
        unsigned char c = (unsigned char)*base;
        name[n++] = isalnum(c) || c == '.' || c == '_' || c == '-' ? (char)c
                                                                   : '_';
    }
    if (n == 0)
        strcpy(name, "job");
    return name;
}

int
proto_job_spec_from_json(const cJSON *json, struct proto_job_spec *spec,
    struct err *err)
{
    static const char *const keys[] = { "version", "name", "argv", "nodes",
        "ranks_per_node", "gpus_per_node", "cpus_per_rank",
        "memory_mb_per_node", "priority", "env", "workdir", "max_restarts",
        "max_infra_restarts", "hang_timeout_s", "keep_checkpoints",
        "checkpoint_dir", NULL };
    int rc;

    proto_job_spec_init(spec);
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_str(json, "name", false, PROTO_NAME_MAX * 4,
             &spec->name, err)) ||
        (rc = jsonx_get_str_array(json, "argv", true, PROTO_ARGV_MAX,
             PROTO_ARG_LEN_MAX, &spec->argv, &spec->argc, err)) ||
        (rc = get_int(json, "nodes", false, 1, PROTO_NODES_MAX, &spec->nodes,
             err)) ||
        (rc = get_int(json, "ranks_per_node", false, 1,
             PROTO_RANKS_PER_NODE_MAX, &spec->ranks_per_node, err)) ||
        (rc = get_int(json, "gpus_per_node", false, 0, PROTO_GPUS_MAX,
             &spec->gpus_per_node, err)) ||
        (rc = get_int(json, "cpus_per_rank", false, 0, PROTO_CPUS_MAX,
             &spec->cpus_per_rank, err)) ||
        (rc = jsonx_get_int(json, "memory_mb_per_node", false, 0,
             (int64_t)1 << 40, &spec->memory_mb_per_node, err)) ||
        (rc = get_int(json, "priority", false, -1000, 1000, &spec->priority,
             err)) ||
        (rc = kv_from_json(json, "env", PROTO_ENV_MAX, true,
             PROTO_ENV_VALUE_MAX, &spec->env, &spec->nenv, err)) ||
        (rc = jsonx_get_str(json, "workdir", false, PROTO_PATH_MAX,
             &spec->workdir, err)) ||
        (rc = get_int(json, "max_restarts", false, 0, 1000,
             &spec->max_restarts, err)) ||
        (rc = get_int(json, "max_infra_restarts", false, 0, 10000,
             &spec->max_infra_restarts, err)) ||
        (rc = get_int(json, "hang_timeout_s", false, 0,
             PROTO_HANG_TIMEOUT_MAX, &spec->hang_timeout_s, err)) ||
        (rc = get_int(json, "keep_checkpoints", false, 0, 100000,
             &spec->keep_checkpoints, err)) ||
        (rc = jsonx_get_str(json, "checkpoint_dir", false, PROTO_PATH_MAX,
             &spec->checkpoint_dir, err)))
        goto fail;
    if ((rc = proto_job_spec_validate(spec, err)) < 0)
        goto fail;
    if (spec->name == NULL)
        spec->name = default_name(spec->argv[0]);
    if (spec->workdir == NULL || spec->workdir[0] == '\0') {
        free(spec->workdir);
        spec->workdir = xstrdup("/");
    }
    if (spec->checkpoint_dir == NULL)
        spec->checkpoint_dir = xstrdup("");
    return 0;
fail:
    proto_job_spec_release(spec);
    return rc;
}

cJSON *
proto_job_spec_to_json(const struct proto_job_spec *spec)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "version", PROTO_VERSION);
    if (spec->name)
        jsonx_add_str(o, "name", spec->name);
    jsonx_add_str_array(o, "argv", spec->argv, spec->argc);
    jsonx_add_int(o, "nodes", spec->nodes);
    jsonx_add_int(o, "ranks_per_node", spec->ranks_per_node);
    jsonx_add_int(o, "gpus_per_node", spec->gpus_per_node);
    jsonx_add_int(o, "cpus_per_rank", spec->cpus_per_rank);
    jsonx_add_int(o, "memory_mb_per_node", spec->memory_mb_per_node);
    jsonx_add_int(o, "priority", spec->priority);
    kv_to_json(o, "env", spec->env, spec->nenv);
    if (spec->workdir)
        jsonx_add_str(o, "workdir", spec->workdir);
    jsonx_add_int(o, "max_restarts", spec->max_restarts);
    jsonx_add_int(o, "max_infra_restarts", spec->max_infra_restarts);
    jsonx_add_int(o, "hang_timeout_s", spec->hang_timeout_s);
    jsonx_add_int(o, "keep_checkpoints", spec->keep_checkpoints);
    if (spec->checkpoint_dir)
        jsonx_add_str(o, "checkpoint_dir", spec->checkpoint_dir);
    return o;
}

/* ---- rank state --------------------------------------------------------- */

static const char *const rank_state_names[] = {
    [PROTO_RANK_PENDING] = "pending",
    [PROTO_RANK_RUNNING] = "running",
    [PROTO_RANK_EXITED] = "exited",
    [PROTO_RANK_LOST] = "lost",
};

const char *
proto_rank_state_str(enum proto_rank_state s)
{
    if ((size_t)s >= ARRAY_SIZE(rank_state_names))
        return "unknown";
    return rank_state_names[s];
}

int
proto_rank_state_parse(const char *s, enum proto_rank_state *out)
{
    for (size_t i = 0; i < ARRAY_SIZE(rank_state_names); i++) {
        if (strcmp(s, rank_state_names[i]) == 0) {
            *out = (enum proto_rank_state)i;
            return 0;
        }
    }
    return -EINVAL;
}

static const char *const progress_names[] = {
    [PROTO_PROGRESS_NONE] = "none",
    [PROTO_PROGRESS_STEP] = "step",
    [PROTO_PROGRESS_OUTPUT] = "output",
};

const char *
proto_progress_str(enum proto_progress p)
{
    if ((size_t)p >= ARRAY_SIZE(progress_names))
        return "unknown";
    return progress_names[p];
}

int
proto_progress_parse(const char *s, enum proto_progress *out)
{
    for (size_t i = 0; i < ARRAY_SIZE(progress_names); i++) {
        if (strcmp(s, progress_names[i]) == 0) {
            *out = (enum proto_progress)i;
            return 0;
        }
    }
    return -EINVAL;
}

/* An array of at most PROTO_STEPS_MAX non-negative steps. */
static int
get_steps(const cJSON *obj, const char *key, int64_t **out, size_t *n,
    struct err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    size_t count;
    int64_t *v;

    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr))
        return err_set(err, -EINVAL,
            "field '%s': must be an array of integers", key);
    count = (size_t)cJSON_GetArraySize(arr);
    if (count > PROTO_STEPS_MAX)
        return err_set(err, -EINVAL, "field '%s': more than %d entries", key,
            PROTO_STEPS_MAX);
    v = xcalloc(count + 1, sizeof(*v));
    count = 0;
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsNumber(item) || item->valuedouble < 0 ||
            item->valuedouble > 9007199254740992.0 ||
            item->valuedouble != (double)(int64_t)item->valuedouble) {
            free(v);
            return err_set(err, -EINVAL,
                "field '%s[%zu]': must be a non-negative integer", key,
                count);
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

static int
rank_status_from_json(const cJSON *json, struct proto_rank_status *r,
    struct err *err)
{
    static const char *const keys[] = { "rank", "state", "pid", "start_ms",
        "end_ms", "exit_code", "signal", "stderr_tail", "fenced", "step",
        "idle_ms", "progress", "dump", "ckpt_steps", NULL };
    char *state = NULL, *progress = NULL;
    int rc;

    memset(r, 0, sizeof(*r));
    r->step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = get_int(json, "rank", true, 0, INT32_MAX, &r->rank, err)) ||
        (rc = jsonx_get_str(json, "state", true, 16, &state, err)) ||
        (rc = get_int(json, "pid", false, 0, INT32_MAX, &r->pid, err)) ||
        (rc = jsonx_get_int(json, "start_ms", false, 0, INT64_MAX / 2,
             &r->start_ms, err)) ||
        (rc = jsonx_get_int(json, "end_ms", false, 0, INT64_MAX / 2,
             &r->end_ms, err)) ||
        (rc = get_int(json, "exit_code", false, -1, 255, &r->exit_code,
             err)) ||
        (rc = get_int(json, "signal", false, 0, 128, &r->signal, err)) ||
        (rc = jsonx_get_str(json, "stderr_tail", false, PROTO_TAIL_MAX * 2,
             &r->stderr_tail, err)) ||
        (rc = jsonx_get_bool(json, "fenced", false, &r->fenced, err)) ||
        (rc = jsonx_get_int(json, "step", false, -1, INT64_MAX / 2, &r->step,
             err)) ||
        (rc = jsonx_get_int(json, "idle_ms", false, 0, INT64_MAX / 2,
             &r->idle_ms, err)) ||
        (rc = jsonx_get_str(json, "progress", false, 16, &progress, err)) ||
        (rc = jsonx_get_str(json, "dump", false, PROTO_DUMP_MAX * 2, &r->dump,
             err)) ||
        (rc = get_steps(json, "ckpt_steps", &r->ckpt_steps, &r->nckpt_steps,
             err)))
        goto fail;
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
    free(r->dump);
    free(r->ckpt_steps);
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
    }
    jsonx_add_int(o, "step", r->step);
    jsonx_add_int(o, "idle_ms", r->idle_ms);
    jsonx_add_str(o, "progress", proto_progress_str(r->progress));
    if (r->dump)
        jsonx_add_str(o, "dump", r->dump);
    if (r->nckpt_steps)
        add_steps(o, "ckpt_steps", r->ckpt_steps, r->nckpt_steps);
    return o;
}

static void
job_status_release(struct proto_job_status *j)
{
    for (size_t i = 0; i < j->nranks; i++) {
        free(j->ranks[i].stderr_tail);
        free(j->ranks[i].dump);
        free(j->ranks[i].ckpt_steps);
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
        "checkpoints", "dump_seq", NULL };
    const cJSON *ranks, *item;
    int64_t dump_seq = 0;
    size_t n;
    int rc;

    memset(j, 0, sizeof(*j));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &j->job,
             err)) ||
        (rc = get_int(json, "attempt", true, 1, INT32_MAX, &j->attempt, err)) ||
        (rc = jsonx_get_int(json, "dump_seq", false, 0, INT64_MAX / 2,
             &dump_seq, err)) ||
        (rc = get_steps(json, "checkpoints", &j->checkpoints,
             &j->ncheckpoints, err)))
        return rc;
    j->dump_seq = (uint64_t)dump_seq;
    ranks = cJSON_GetObjectItemCaseSensitive(json, "ranks");
    if (!cJSON_IsArray(ranks))
        return err_set(err, -EINVAL, "field 'ranks': must be an array");
    n = (size_t)cJSON_GetArraySize(ranks);
    if (n > PROTO_RANKS_PER_NODE_MAX)
        return err_set(err, -EINVAL, "field 'ranks': more than %d entries",
            PROTO_RANKS_PER_NODE_MAX);
    j->ranks = xcalloc(n + 1, sizeof(*j->ranks));
    cJSON_ArrayForEach(item, ranks) {
        rc = rank_status_from_json(item, &j->ranks[j->nranks], err);
        if (rc < 0) {
            err_prefix(err, "job %lld rank entry %zu: ", (long long)j->job,
                j->nranks);
            job_status_release(j);
            return rc;
        }
        j->nranks++;
    }
    return 0;
}

/* ---- node report -------------------------------------------------------- */

void
proto_node_report_release(struct proto_node_report *rep)
{
    free(rep->node);
    free(rep->agent_id);
    free(rep->addr);
    free(rep->gpus);
    proto_kv_array_free(rep->labels, rep->nlabels);
    for (size_t i = 0; i < rep->njobs; i++)
        job_status_release(&rep->jobs[i]);
    free(rep->jobs);
    memset(rep, 0, sizeof(*rep));
}

int
proto_node_report_from_json(const cJSON *json, struct proto_node_report *rep,
    struct err *err)
{
    static const char *const keys[] = { "version", "node", "register",
        "agent_id", "addr", "cpus", "memory_mb", "gpus", "labels", "gen",
        "jobs", NULL };
    const cJSON *jobs, *item;
    int64_t gen = 0;
    int rc;

    memset(rep, 0, sizeof(*rep));
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_str(json, "node", true, PROTO_NODE_NAME_MAX,
             &rep->node, err)) ||
        (rc = jsonx_get_bool(json, "register", false, &rep->reg, err)) ||
        (rc = jsonx_get_str(json, "agent_id", true, 128, &rep->agent_id,
             err)) ||
        (rc = jsonx_get_str(json, "addr", true, 255, &rep->addr, err)) ||
        (rc = get_int(json, "cpus", true, 0, 1 << 20, &rep->cpus, err)) ||
        (rc = jsonx_get_int(json, "memory_mb", true, 0, (int64_t)1 << 40,
             &rep->memory_mb, err)) ||
        (rc = jsonx_get_int_array(json, "gpus", false, PROTO_GPUS_MAX, 0,
             PROTO_GPUS_MAX - 1, &rep->gpus, &rep->ngpus, err)) ||
        (rc = kv_from_json(json, "labels", PROTO_LABELS_MAX, false, 256,
             &rep->labels, &rep->nlabels, err)) ||
        (rc = jsonx_get_int(json, "gen", false, 0, INT64_MAX, &gen, err)))
        goto fail;
    rep->gen = (uint64_t)gen;
    if (!proto_valid_name(rep->node, PROTO_NODE_NAME_MAX)) {
        rc = err_set(err, -EINVAL, "field 'node': '%.40s' is not a valid "
            "node name", rep->node);
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
    jsonx_add_int(o, "cpus", rep->cpus);
    jsonx_add_int(o, "memory_mb", rep->memory_mb);
    jsonx_add_int_array(o, "gpus", rep->gpus, rep->ngpus);
    kv_to_json(o, "labels", rep->labels, rep->nlabels);
    jsonx_add_int(o, "gen", (int64_t)rep->gen);
    jobs = cJSON_AddArrayToObject(o, "jobs");
    for (size_t i = 0; i < rep->njobs; i++) {
        const struct proto_job_status *j = &rep->jobs[i];
        cJSON *jo = cJSON_CreateObject();
        cJSON *ranks;

        jsonx_add_int(jo, "job", j->job);
        jsonx_add_int(jo, "attempt", j->attempt);
        if (j->ncheckpoints)
            add_steps(jo, "checkpoints", j->checkpoints, j->ncheckpoints);
        if (j->dump_seq)
            jsonx_add_int(jo, "dump_seq", (int64_t)j->dump_seq);
        ranks = cJSON_AddArrayToObject(jo, "ranks");
        for (size_t r = 0; r < j->nranks; r++)
            cJSON_AddItemToArray(ranks, rank_status_to_json(&j->ranks[r]));
        cJSON_AddItemToArray(jobs, jo);
    }
    return o;
}

/* ---- launch ------------------------------------------------------------- */

void
proto_launch_release(struct proto_launch *l)
{
    free(l->name);
    free(l->user);
    strv_free(l->argv, l->argc);
    proto_kv_array_free(l->env, l->nenv);
    free(l->workdir);
    free(l->master_addr);
    for (size_t i = 0; i < l->nranks; i++)
        free(l->ranks[i].gpus);
    free(l->ranks);
    free(l->checkpoint_dir);
    free(l->resume_from);
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
        (rc = get_int(json, "rank", true, 0, INT32_MAX, &r->rank, err)) ||
        (rc = get_int(json, "local_rank", true, 0, PROTO_RANKS_PER_NODE_MAX,
             &r->local_rank, err)) ||
        (rc = jsonx_get_int_array(json, "gpus", false, PROTO_GPUS_MAX, 0,
             PROTO_GPUS_MAX - 1, &r->gpus, &r->ngpus, err)))
        return rc;
    return 0;
}

int
proto_launch_from_json(const cJSON *json, struct proto_launch *l,
    struct err *err)
{
    static const char *const keys[] = { "job", "attempt", "name", "user",
        "argv", "env", "workdir", "nnodes", "node_rank", "ranks_per_node",
        "world_size", "master_addr", "master_port", "ranks",
        "checkpoint_dir", "resume_from", "resume_step", "keep_checkpoints",
        "scan_checkpoints", "dump_seq", NULL };
    const cJSON *ranks, *item;
    int64_t dump_seq = 0;
    size_t n;
    int rc;

    memset(l, 0, sizeof(*l));
    l->resume_step = -1;
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_get_int(json, "job", true, 1, INT64_MAX / 2, &l->job,
             err)) ||
        (rc = get_int(json, "attempt", true, 1, INT32_MAX, &l->attempt,
             err)) ||
        (rc = jsonx_get_str(json, "name", true, PROTO_NAME_MAX, &l->name,
             err)) ||
        (rc = jsonx_get_str(json, "user", true, 256, &l->user, err)) ||
        (rc = jsonx_get_str_array(json, "argv", true, PROTO_ARGV_MAX,
             PROTO_ARG_LEN_MAX, &l->argv, &l->argc, err)) ||
        (rc = kv_from_json(json, "env", PROTO_ENV_MAX, true,
             PROTO_ENV_VALUE_MAX, &l->env, &l->nenv, err)) ||
        (rc = jsonx_get_str(json, "workdir", true, PROTO_PATH_MAX,
             &l->workdir, err)) ||
        (rc = get_int(json, "nnodes", true, 1, PROTO_NODES_MAX, &l->nnodes,
             err)) ||
        (rc = get_int(json, "node_rank", true, 0, PROTO_NODES_MAX - 1,
             &l->node_rank, err)) ||
        (rc = get_int(json, "ranks_per_node", true, 1,
             PROTO_RANKS_PER_NODE_MAX, &l->ranks_per_node, err)) ||
        (rc = get_int(json, "world_size", true, 1, INT32_MAX, &l->world_size,
             err)) ||
        (rc = jsonx_get_str(json, "master_addr", true, 255, &l->master_addr,
             err)) ||
        (rc = get_int(json, "master_port", true, 1, 65535, &l->master_port,
             err)) ||
        (rc = jsonx_get_str(json, "checkpoint_dir", false, PROTO_PATH_MAX,
             &l->checkpoint_dir, err)) ||
        (rc = jsonx_get_str(json, "resume_from", false, PROTO_PATH_MAX,
             &l->resume_from, err)) ||
        (rc = jsonx_get_int(json, "resume_step", false, -1, INT64_MAX / 2,
             &l->resume_step, err)) ||
        (rc = get_int(json, "keep_checkpoints", false, 0, 100000,
             &l->keep_checkpoints, err)) ||
        (rc = jsonx_get_bool(json, "scan_checkpoints", false,
             &l->scan_checkpoints, err)) ||
        (rc = jsonx_get_int(json, "dump_seq", false, 0, INT64_MAX / 2,
             &dump_seq, err)))
        goto fail;
    l->dump_seq = (uint64_t)dump_seq;
    if (l->argc == 0 || l->argv[0][0] == '\0') {
        rc = err_set(err, -EINVAL, "field 'argv': the command is empty");
        goto fail;
    }
    if (l->node_rank >= l->nnodes) {
        rc = err_set(err, -EINVAL, "field 'node_rank': %d is not below "
            "nnodes %d", l->node_rank, l->nnodes);
        goto fail;
    }
    ranks = cJSON_GetObjectItemCaseSensitive(json, "ranks");
    if (!cJSON_IsArray(ranks)) {
        rc = err_set(err, -EINVAL, "field 'ranks': must be an array");
        goto fail;
    }
    n = (size_t)cJSON_GetArraySize(ranks);
    if (n == 0 || n > PROTO_RANKS_PER_NODE_MAX) {
        rc = err_set(err, -EINVAL, "field 'ranks': must hold 1 to %d ranks",
            PROTO_RANKS_PER_NODE_MAX);
        goto fail;
    }
    l->ranks = xcalloc(n, sizeof(*l->ranks));
    cJSON_ArrayForEach(item, ranks) {
        rc = launch_rank_from_json(item, &l->ranks[l->nranks], err);
        if (rc < 0) {
            err_prefix(err, "field 'ranks[%zu]': ", l->nranks);
            goto fail;
        }
        if (l->ranks[l->nranks].rank >= l->world_size) {
            rc = err_set(err, -EINVAL, "field 'ranks[%zu]': rank %d is not "
                "below world_size %d", l->nranks, l->ranks[l->nranks].rank,
                l->world_size);
            l->nranks++;
            goto fail;
        }
        l->nranks++;
    }
    if (l->checkpoint_dir == NULL)
        l->checkpoint_dir = xstrdup("");
    if (l->resume_from == NULL)
        l->resume_from = xstrdup("");
    return 0;
fail:
    proto_launch_release(l);
    return rc;
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
    kv_to_json(o, "env", l->env, l->nenv);
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
    cJSON_AddBoolToObject(o, "scan_checkpoints", l->scan_checkpoints);
    jsonx_add_int(o, "dump_seq", (int64_t)l->dump_seq);
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
proto_work_from_json(const cJSON *json, struct proto_work *w,
    struct err *err)
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
