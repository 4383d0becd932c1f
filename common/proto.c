/*
 * proto.c - messages between the CLI, the scheduler and the agents
 *
 * Every _from_json validates the whole message before anyone sees it
 * (seatd's client_handle_opcode): type, range and length of each field,
 * no unknown fields, "version" present and understood. On failure the
 * partially built struct is released, so callers never free half a message.
 */
#include "proto.h"
#include "proto_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
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

const char *
proto_kv_value(const struct proto_kv *kv, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(kv[i].key, key) == 0)
            return kv[i].value;
    return NULL;
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
int
proto_kv_from_json(const cJSON *obj, const char *key, size_t maxn,
    bool env_keys, size_t maxval, struct proto_kv **out, size_t *n,
    struct err *err)
{
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(obj, key);
    const cJSON *item;
    struct proto_kv *kv;
    size_t i = 0, count;
    int rc;

    if (map == NULL)
        return 0;
    if ((rc = jsonx_count(map, key, true, "an object of strings", maxn, &count,
             err)) < 0)
        return rc;
    kv = xcalloc(count + 1, sizeof(*kv));
    cJSON_ArrayForEach(item, map) {
        const cJSON *other;

        rc = 0;
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

void
proto_kv_to_json(cJSON *obj, const char *key, const struct proto_kv *kv,
    size_t n)
{
    cJSON *map = cJSON_AddObjectToObject(obj, key);

    for (size_t i = 0; i < n; i++)
        cJSON_AddStringToObject(map, kv[i].key, kv[i].value);
}

int
proto_get_int(const cJSON *obj, const char *key, bool required, int64_t min,
    int64_t max, int *out, struct err *err)
{
    int64_t v = *out;
    int rc = jsonx_get_int(obj, key, required, min, max, &v, err);

    if (rc == 0)
        *out = (int)v;
    return rc;
}

/* ---- cadence ------------------------------------------------------------ */

int
proto_cadence_parse(const char *text, struct proto_cadence *out,
    struct err *err)
{
    static const struct {
        const char *suffix;
        int64_t mult;
        bool steps;
    } units[] = { { "", 1, false }, { "s", 1, false }, { "m", 60, false },
        { "h", 3600, false }, { "step", 1, true }, { "steps", 1, true },
        { " step", 1, true }, { " steps", 1, true } };
    const char *p = text;
    int64_t v = 0;

    memset(out, 0, sizeof(*out));
    if (text == NULL || strcmp(text, "off") == 0 || strcmp(text, "0") == 0)
        return 0;
    if (!isdigit((unsigned char)*p))
        goto bad;
    for (; isdigit((unsigned char)*p); p++) {
        if (v > PROTO_CADENCE_STEPS_MAX)
            goto range;
        v = v * 10 + (*p - '0');
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (strcmp(p, units[i].suffix) != 0)
            continue;
        if (v == 0)
            return 0;
        if (units[i].steps) {
            if (v > PROTO_CADENCE_STEPS_MAX)
                goto range;
            out->steps = v;
        } else {
            if (v > PROTO_CADENCE_S_MAX / units[i].mult)
                goto range;
            out->s = v * units[i].mult;
        }
        return 0;
    }
bad:
    return err_set(err, -EINVAL,
        "'%.40s' is not a duration (90s, 5m, 1h) or a step count (500steps)",
        text);
range:
    return err_set(err, -EINVAL,
        "'%.40s' is too long: at most %ds (7 days) or %lld steps", text,
        PROTO_CADENCE_S_MAX, (long long)PROTO_CADENCE_STEPS_MAX);
}

const char *
proto_cadence_format(const struct proto_cadence *c, char *buf, size_t len)
{
    if (c->steps > 0)
        snprintf(buf, len, "%lld step%s", (long long)c->steps,
            c->steps == 1 ? "" : "s");
    else if (c->s > 0 && c->s % 3600 == 0)
        snprintf(buf, len, "%lldh", (long long)(c->s / 3600));
    else if (c->s > 0 && c->s % 60 == 0)
        snprintf(buf, len, "%lldm", (long long)(c->s / 60));
    else if (c->s > 0)
        snprintf(buf, len, "%llds", (long long)c->s);
    else
        snprintf(buf, len, "off");
    return buf;
}

/* A cadence from the spec fields "<name>_s" and "<name>_steps": at most
 * one of them. */
static int
cadence_from_json(const cJSON *json, const char *name, struct proto_cadence *c,
    struct err *err)
{
    char ks[64], kn[64];
    int rc;

    snprintf(ks, sizeof(ks), "%s_s", name);
    snprintf(kn, sizeof(kn), "%s_steps", name);
    if ((rc = jsonx_get_int(json, ks, false, 0, PROTO_CADENCE_S_MAX, &c->s,
             err)) ||
        (rc = jsonx_get_int(json, kn, false, 0, PROTO_CADENCE_STEPS_MAX,
             &c->steps, err)))
        return rc;
    if (c->s > 0 && c->steps > 0)
        return err_set(err, -EINVAL,
            "fields '%s' and '%s': give one of them, not both", ks, kn);
    return 0;
}

static void
cadence_to_json(cJSON *o, const char *name, const struct proto_cadence *c)
{
    char k[64];

    if (c->s > 0) {
        snprintf(k, sizeof(k), "%s_s", name);
        jsonx_add_int(o, k, c->s);
    }
    if (c->steps > 0) {
        snprintf(k, sizeof(k), "%s_steps", name);
        jsonx_add_int(o, k, c->steps);
    }
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
    spec->resume_step = -1;
}

void
proto_job_spec_release(struct proto_job_spec *spec)
{
    free(spec->name);
    xstrv_free(spec->argv, spec->argc);
    proto_kv_array_free(spec->env, spec->nenv);
    free(spec->workdir);
    free(spec->checkpoint_dir);
    free(spec->resume_from);
    memset(spec, 0, sizeof(*spec));
}

int64_t
proto_ckpt_path_step(const char *path)
{
    size_t n;
    const char *p;
    int64_t v = 0;

    if (path == NULL)
        return -1;
    n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    p = path + n;
    while (p > path && p[-1] != '/')
        p--;
    if ((size_t)(path + n - p) <= 5 || strncmp(p, "step-", 5) != 0)
        return -1;
    p += 5;
    if (*p == '0' && p + 1 < path + n)
        return -1;
    for (; p < path + n; p++) {
        if (*p < '0' || *p > '9' || v > (INT64_MAX / 2 - 9) / 10)
            return -1;
        v = v * 10 + (*p - '0');
    }
    return v;
}

static int
check_path(const char *field, const char *p, bool allow_empty, struct err *err)
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
        return err_set(err, -EINVAL, "field '%s': longer than %d bytes", field,
            PROTO_PATH_MAX);
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

static int
check_cadence(const char *field, const struct proto_cadence *c, struct err *err)
{
    if (c->s < 0 || c->s > PROTO_CADENCE_S_MAX || c->steps < 0 ||
        c->steps > PROTO_CADENCE_STEPS_MAX)
        return err_set(err, -EINVAL, "field '%s': out of range", field);
    if (c->s > 0 && c->steps > 0)
        return err_set(err, -EINVAL,
            "field '%s': a duration or a step count, not both", field);
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
        (rc = check_range("keep_checkpoints", spec->keep_checkpoints, 0, 100000,
             err)) ||
        (rc = check_cadence("gc_every", &spec->gc_every, err)) ||
        (rc = check_cadence("checkpoint_every", &spec->checkpoint_every, err)))
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
            return err_set(err, -EINVAL, "field 'env.%s': longer than %d bytes",
                spec->env[i].key, PROTO_ENV_VALUE_MAX);
    }
    if ((rc = check_path("workdir", spec->workdir, true, err)) ||
        (rc = check_path("checkpoint_dir", spec->checkpoint_dir, true, err)) ||
        (rc = check_path("resume_from", spec->resume_from, true, err)) ||
        (rc = check_range("resume_from_job", spec->resume_from_job, 0,
             INT64_MAX / 2, err)))
        return rc;
    if (spec->resume_from != NULL && spec->resume_from[0] != '\0' &&
        spec->resume_from_job > 0)
        return err_set(err, -EINVAL,
            "fields 'resume_from' and 'resume_from_job': give one, not both");
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
        "checkpoint_dir", "gc_every_s", "gc_every_steps", "checkpoint_every_s",
        "checkpoint_every_steps", "wait_for_nodes", "resume_from",
        "resume_from_job", NULL };
    int rc;

    proto_job_spec_init(spec);
    if ((rc = jsonx_check_keys(json, keys, err)) ||
        (rc = jsonx_check_version(json, PROTO_VERSION, err)) ||
        (rc = jsonx_get_str(json, "name", false, PROTO_NAME_MAX * 4,
             &spec->name, err)) ||
        (rc = jsonx_get_str_array(json, "argv", true, PROTO_ARGV_MAX,
             PROTO_ARG_LEN_MAX, &spec->argv, &spec->argc, err)) ||
        (rc = proto_get_int(json, "nodes", false, 1, PROTO_NODES_MAX,
             &spec->nodes, err)) ||
        (rc = proto_get_int(json, "ranks_per_node", false, 1,
             PROTO_RANKS_PER_NODE_MAX, &spec->ranks_per_node, err)) ||
        (rc = proto_get_int(json, "gpus_per_node", false, 0, PROTO_GPUS_MAX,
             &spec->gpus_per_node, err)) ||
        (rc = proto_get_int(json, "cpus_per_rank", false, 0, PROTO_CPUS_MAX,
             &spec->cpus_per_rank, err)) ||
        (rc = jsonx_get_int(json, "memory_mb_per_node", false, 0,
             (int64_t)1 << 40, &spec->memory_mb_per_node, err)) ||
        (rc = proto_get_int(json, "priority", false, -1000, 1000,
             &spec->priority, err)) ||
        (rc = proto_kv_from_json(json, "env", PROTO_ENV_MAX, true,
             PROTO_ENV_VALUE_MAX, &spec->env, &spec->nenv, err)) ||
        (rc = jsonx_get_str(json, "workdir", false, PROTO_PATH_MAX,
             &spec->workdir, err)) ||
        (rc = proto_get_int(json, "max_restarts", false, 0, 1000,
             &spec->max_restarts, err)) ||
        (rc = proto_get_int(json, "max_infra_restarts", false, 0, 10000,
             &spec->max_infra_restarts, err)) ||
        (rc = proto_get_int(json, "hang_timeout_s", false, 0,
             PROTO_HANG_TIMEOUT_MAX, &spec->hang_timeout_s, err)) ||
        (rc = proto_get_int(json, "keep_checkpoints", false, 0, 100000,
             &spec->keep_checkpoints, err)) ||
        (rc = jsonx_get_str(json, "checkpoint_dir", false, PROTO_PATH_MAX,
             &spec->checkpoint_dir, err)) ||
        (rc = cadence_from_json(json, "gc_every", &spec->gc_every, err)) ||
        (rc = cadence_from_json(json, "checkpoint_every",
             &spec->checkpoint_every, err)) ||
        (rc = jsonx_get_bool(json, "wait_for_nodes", false,
             &spec->wait_for_nodes, err)) ||
        (rc = jsonx_get_str(json, "resume_from", false, PROTO_PATH_MAX,
             &spec->resume_from, err)) ||
        (rc = jsonx_get_int(json, "resume_from_job", false, 1, INT64_MAX / 2,
             &spec->resume_from_job, err)))
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
    if (spec->resume_from == NULL)
        spec->resume_from = xstrdup("");
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
    proto_kv_to_json(o, "env", spec->env, spec->nenv);
    if (spec->workdir)
        jsonx_add_str(o, "workdir", spec->workdir);
    jsonx_add_int(o, "max_restarts", spec->max_restarts);
    jsonx_add_int(o, "max_infra_restarts", spec->max_infra_restarts);
    jsonx_add_int(o, "hang_timeout_s", spec->hang_timeout_s);
    jsonx_add_int(o, "keep_checkpoints", spec->keep_checkpoints);
    if (spec->checkpoint_dir)
        jsonx_add_str(o, "checkpoint_dir", spec->checkpoint_dir);
    cadence_to_json(o, "gc_every", &spec->gc_every);
    cadence_to_json(o, "checkpoint_every", &spec->checkpoint_every);
    if (spec->wait_for_nodes)
        cJSON_AddBoolToObject(o, "wait_for_nodes", true);
    if (spec->resume_from != NULL && spec->resume_from[0] != '\0')
        jsonx_add_str(o, "resume_from", spec->resume_from);
    if (spec->resume_from_job > 0)
        jsonx_add_int(o, "resume_from_job", spec->resume_from_job);
    return o;
}
