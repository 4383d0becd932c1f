/*
 * supfile.c - formats of the supervisor files, atomic writes
 *
 * spec.json and status.json are JSON objects with "version": 1, checked
 * field by field with jsonx like every other message of lockstep: the
 * agent and the supervisor may come from different builds during an
 * upgrade, and a file damaged on disk must be refused, not half used.
 * Unknown fields are tolerated so that a newer writer can add some.
 */
#include "agent/supfile.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

/* ---- files -------------------------------------------------------------- */

static int
supfile_write_all(int fd, const char *p, size_t len)
{
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

int
supfile_write_atomic(const char *dir, const char *name, const void *data,
    size_t len, mode_t mode)
{
    char *path = xasprintf("%s/%s", dir, name);
    char *tmp = xasprintf("%s/%s.tmp", dir, name);
    int fd, rc;

    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
    if (fd < 0) {
        rc = -errno;
        goto out;
    }
    rc = supfile_write_all(fd, data, len);
    if (close(fd) < 0 && rc == 0 && errno != EINTR)
        rc = -errno;
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -errno;
    if (rc < 0)
        unlink(tmp);
out:
    free(tmp);
    free(path);
    return rc;
}

int
supfile_read(const char *path, size_t max, char **text, size_t *len)
{
    struct stat st;
    size_t got = 0, cap;
    ssize_t n;
    char *buf;
    int fd, rc = 0;

    *text = NULL;
    *len = 0;
    /* Some of these files are written by ranks: never follow a link, never
     * block on a FIFO planted there. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        close(fd);
        return rc;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    if (st.st_size > (off_t)max) {
        close(fd);
        return -EFBIG;
    }
    /* The file may grow between fstat and read: read to EOF, bounded. */
    cap = (size_t)st.st_size + 1;
    buf = xmalloc(cap + 1);
    for (;;) {
        if (got == cap) {
            if (cap > max) {
                rc = -EFBIG;
                break;
            }
            cap *= 2;
            buf = xrealloc(buf, cap + 1);
        }
        n = read(fd, buf + got, cap - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            break;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    if (rc == 0 && got > max)
        rc = -EFBIG;
    if (rc < 0) {
        free(buf);
        return rc;
    }
    buf[got] = '\0';
    *text = buf;
    *len = got;
    return 0;
}

static int
supfile_load_json(const char *dir, const char *name, cJSON **root,
    struct err *err)
{
    char *path = xasprintf("%s/%s", dir, name), *text = NULL;
    size_t len;
    int rc;

    rc = supfile_read(path, SUPFILE_MAX_BYTES, &text, &len);
    if (rc < 0)
        err_set(err, rc, "cannot read '%s': %s", path, strerror(-rc));
    else
        rc = jsonx_parse(text, len, root, err);
    free(text);
    free(path);
    return rc;
}

static int
supfile_save_json(const char *dir, const char *name, cJSON *root)
{
    char *text = jsonx_print(root);
    int rc;

    cJSON_Delete(root);
    rc = supfile_write_atomic(dir, name, text, strlen(text), 0600);
    free(text);
    return rc;
}

/* Load dir/name and check the head every file with ranks has: "version"
 * 1, "job" and "attempt". *root: caller deletes, also on failure. */
static int
supfile_load_head(const char *dir, const char *name, cJSON **root, int64_t *job,
    int *attempt, struct err *err)
{
    int64_t a = 0;
    int rc;

    if ((rc = supfile_load_json(dir, name, root, err)) < 0 ||
        (rc = jsonx_check_version(*root, 1, err)) ||
        (rc = jsonx_get_int(*root, "job", true, 1, INT64_MAX, job, err)) ||
        (rc = jsonx_get_int(*root, "attempt", true, 1, INT32_MAX, &a, err)))
        return rc;
    *attempt = (int)a;
    return 0;
}

/* Reads one entry of "ranks" into the zeroed element r. */
typedef int supfile_rank_from_fn(const cJSON *o, void *r, struct err *err);
/* One element r of a ranks array as a new JSON object. */
typedef cJSON *supfile_rank_to_fn(const void *r);

/* The "ranks" array of root, each entry read by from_json into a new
 * array of elements of size bytes, handed over in *out with its length
 * in *n (caller frees) as soon as the array is there: after a failed
 * entry the caller's release frees what was read. */
static int
supfile_get_ranks(const cJSON *root, size_t size,
    supfile_rank_from_fn *from_json, void **out, size_t *n, struct err *err)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(root, "ranks");
    const cJSON *item;
    char *v;
    size_t i = 0;
    int rc;

    if (!cJSON_IsArray(ranks))
        return err_set(err, -EINVAL, "field 'ranks': must be an array");
    *n = (size_t)cJSON_GetArraySize(ranks);
    v = xcalloc(*n + 1, size);
    *out = v;
    cJSON_ArrayForEach(item, ranks) {
        if ((rc = from_json(item, v + size * i++, err)) < 0)
            return rc;
    }
    return 0;
}

/* Add the n elements of size bytes at ranks to root as "ranks". */
static void
supfile_add_ranks(cJSON *root, const void *ranks, size_t size, size_t n,
    supfile_rank_to_fn *to_json)
{
    cJSON *arr = cJSON_AddArrayToObject(root, "ranks");

    for (size_t i = 0; i < n; i++)
        cJSON_AddItemToArray(arr, to_json((const char *)ranks + size * i));
}

/* A new file object with the head supfile_load_head checks. */
static cJSON *
supfile_new_root(int64_t job, int attempt)
{
    cJSON *root = cJSON_CreateObject();

    jsonx_add_int(root, "version", 1);
    jsonx_add_int(root, "job", job);
    jsonx_add_int(root, "attempt", attempt);
    return root;
}

int
supfile_stamp_get(const char *path, struct supfile_stamp *stamp)
{
    struct stat st;

    if (stat(path, &st) < 0)
        return -errno;
    stamp->ino = (uint64_t)st.st_ino;
    stamp->size = (int64_t)st.st_size;
    stamp->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 +
                      st.st_mtim.tv_nsec;
    return 0;
}

bool
supfile_stamp_equal(const struct supfile_stamp *a,
    const struct supfile_stamp *b)
{
    return a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

/* ---- spec.json ---------------------------------------------------------- */

static int
supfile_get_gids(const cJSON *o, const char *key, gid_t **out, size_t *n,
    struct err *err)
{
    const cJSON *arr = cJSON_GetObjectItemCaseSensitive(o, key), *item;
    size_t i = 0, count;
    gid_t *v;

    *out = NULL;
    *n = 0;
    if (arr == NULL)
        return 0;
    if (!cJSON_IsArray(arr))
        return err_set(err, -EINVAL, "field '%s': must be an array", key);
    count = (size_t)cJSON_GetArraySize(arr);
    if (count > SUPFILE_GROUPS_MAX)
        return err_set(err, -EINVAL, "field '%s': too many entries", key);
    v = xcalloc(count + 1, sizeof(*v));
    cJSON_ArrayForEach(item, arr) {
        if (!cJSON_IsNumber(item) || item->valuedouble < 0 ||
            item->valuedouble > 4294967294.0 ||
            item->valuedouble != (double)(int64_t)item->valuedouble) {
            free(v);
            return err_set(err, -EINVAL,
                "field '%s[%zu]': must be a group "
                "id",
                key, i);
        }
        v[i++] = (gid_t)item->valuedouble;
    }
    *out = v;
    *n = count;
    return 0;
}

static void
supfile_spec_rank_release(struct supfile_spec_rank *r)
{
    size_t i;

    for (i = 0; i < r->argc; i++)
        free(r->argv[i]);
    free(r->argv);
    for (i = 0; i < r->nenv; i++)
        free(r->env[i]);
    free(r->env);
    free(r->cwd);
    free(r->groups);
    free(r->out_path);
    free(r->err_path);
    memset(r, 0, sizeof(*r));
}

static int
supfile_spec_rank_from_json(const cJSON *o, void *arg, struct err *err)
{
    struct supfile_spec_rank *r = arg;
    int64_t rank = 0, local_rank = 0;
    int rc;

    r->uid = r->gid = -1;
    if ((rc = jsonx_get_int(o, "rank", true, 0, INT32_MAX, &rank, err)) ||
        (rc = jsonx_get_int(o, "local_rank", false, 0, INT32_MAX, &local_rank,
             err)) ||
        (rc = jsonx_get_str_array(o, "argv", true, 1024 * 1024,
             SUPFILE_ENV_LEN_MAX, &r->argv, &r->argc, err)) ||
        (rc = jsonx_get_str_array(o, "env", true, SUPFILE_ENV_MAX,
             SUPFILE_ENV_LEN_MAX, &r->env, &r->nenv, err)) ||
        (rc = jsonx_get_str(o, "cwd", true, PATH_MAX, &r->cwd, err)) ||
        (rc = jsonx_get_int(o, "uid", false, -1, 4294967294LL, &r->uid, err)) ||
        (rc = jsonx_get_int(o, "gid", false, -1, 4294967294LL, &r->gid, err)) ||
        (rc = supfile_get_gids(o, "groups", &r->groups, &r->ngroups, err)) ||
        (rc = jsonx_get_str(o, "stdout", true, PATH_MAX, &r->out_path, err)) ||
        (rc = jsonx_get_str(o, "stderr", true, PATH_MAX, &r->err_path, err)))
        return rc;
    r->rank = (int)rank;
    r->local_rank = (int)local_rank;
    return 0;
}

static cJSON *
supfile_spec_rank_to_json(const void *arg)
{
    const struct supfile_spec_rank *r = arg;
    cJSON *o = cJSON_CreateObject();
    cJSON *groups;

    jsonx_add_int(o, "rank", r->rank);
    jsonx_add_int(o, "local_rank", r->local_rank);
    jsonx_add_str_array(o, "argv", r->argv, r->argc);
    jsonx_add_str_array(o, "env", r->env, r->nenv);
    jsonx_add_str(o, "cwd", r->cwd);
    jsonx_add_int(o, "uid", r->uid);
    jsonx_add_int(o, "gid", r->gid);
    groups = cJSON_AddArrayToObject(o, "groups");
    for (size_t g = 0; g < r->ngroups; g++)
        cJSON_AddItemToArray(groups, cJSON_CreateNumber((double)r->groups[g]));
    jsonx_add_str(o, "stdout", r->out_path);
    jsonx_add_str(o, "stderr", r->err_path);
    return o;
}

/* The optional "node" and "fence_key" of spec.json. */
static int
supfile_get_fence(const cJSON *root, struct supfile_spec *spec, struct err *err)
{
    char *node = NULL, *key = NULL;
    int rc;

    if ((rc = jsonx_get_str(root, "node", false, PROTO_NODE_NAME_MAX, &node,
             err)) < 0 ||
        (rc = jsonx_get_str(root, "fence_key", false, CRED_HEX_LEN, &key,
             err)) < 0)
        goto out;
    if (key != NULL && strlen(key) != CRED_HEX_LEN) {
        rc = err_set(err, -EINVAL, "fence_key: not %d hex digits",
            CRED_HEX_LEN);
        goto out;
    }
    if (node != NULL && key != NULL) {
        memcpy(spec->node, node, strlen(node) + 1);
        memcpy(spec->fence_key, key, CRED_HEX_LEN + 1);
    }
out:
    free(node);
    if (key != NULL)
        explicit_bzero(key, strlen(key));
    free(key);
    return rc;
}

int
supfile_spec_load(const char *dir, struct supfile_spec *spec, struct err *err)
{
    cJSON *root = NULL;
    void *ranks = NULL;
    int64_t grace = 0;
    int rc;

    memset(spec, 0, sizeof(*spec));
    if ((rc = supfile_load_head(dir, SUPFILE_SPEC, &root, &spec->job,
             &spec->attempt, err)) ||
        (rc = jsonx_get_int(root, "kill_grace_ms", true, 0, 86400000, &grace,
             err)) ||
        (rc = jsonx_get_int(root, "orphan_ms", false, 0, 86400000,
             &spec->orphan_ms, err)) ||
        (rc = supfile_get_fence(root, spec, err)))
        goto out;
    rc = supfile_get_ranks(root, sizeof(*spec->ranks),
        supfile_spec_rank_from_json, &ranks, &spec->nranks, err);
    spec->ranks = ranks;
    spec->kill_grace_ms = grace;
out:
    cJSON_Delete(root);
    if (rc < 0)
        supfile_spec_release(spec);
    return rc;
}

int
supfile_spec_save(const char *dir, const struct supfile_spec *spec)
{
    cJSON *root = supfile_new_root(spec->job, spec->attempt);

    jsonx_add_int(root, "kill_grace_ms", spec->kill_grace_ms);
    if (spec->orphan_ms > 0)
        jsonx_add_int(root, "orphan_ms", spec->orphan_ms);
    if (spec->node[0] != '\0' && spec->fence_key[0] != '\0') {
        jsonx_add_str(root, "node", spec->node);
        jsonx_add_str(root, "fence_key", spec->fence_key);
    }
    supfile_add_ranks(root, spec->ranks, sizeof(*spec->ranks), spec->nranks,
        supfile_spec_rank_to_json);
    return supfile_save_json(dir, SUPFILE_SPEC, root);
}

void
supfile_spec_release(struct supfile_spec *spec)
{
    size_t i;

    for (i = 0; i < spec->nranks; i++)
        supfile_spec_rank_release(&spec->ranks[i]);
    free(spec->ranks);
    memset(spec, 0, sizeof(*spec));
}

/* ---- status.json -------------------------------------------------------- */

static int
supfile_rank_status_from_json(const cJSON *o, void *arg, struct err *err)
{
    struct supfile_rank_status *r = arg;
    int64_t rank = 0, pid = 0, start = 0, code = 0, sig = 0;
    int64_t start_ms = 0, end_ms = 0;
    char *state = NULL, *launch = NULL;
    int rc;

    if ((rc = jsonx_get_int(o, "rank", true, 0, INT32_MAX, &rank, err)) ||
        (rc = jsonx_get_int(o, "pid", true, 0, INT32_MAX, &pid, err)) ||
        (rc = jsonx_get_int(o, "proc_start", false, 0, INT64_MAX, &start,
             err)) ||
        (rc = jsonx_get_str(o, "state", true, 16, &state, err)) ||
        (rc = jsonx_get_int(o, "exit_code", false, -1, 255, &code, err)) ||
        (rc = jsonx_get_int(o, "signal", false, 0, 128, &sig, err)) ||
        (rc = jsonx_get_int(o, "start_ms", false, 0, INT64_MAX, &start_ms,
             err)) ||
        (rc = jsonx_get_int(o, "end_ms", false, 0, INT64_MAX, &end_ms, err)) ||
        (rc = jsonx_get_bool(o, "fenced", false, &r->fenced, err)) ||
        (rc = jsonx_get_str(o, "launch_error", false,
             SUPFILE_LAUNCH_ERROR_MAX * 4, &launch, err)))
        goto out;
    if (strcmp(state, "running") != 0 && strcmp(state, "exited") != 0) {
        rc = err_set(err, -EINVAL, "field 'state': unknown state '%s'", state);
        goto out;
    }
    r->rank = (int)rank;
    r->pid = (int)pid;
    r->proc_start = (uint64_t)start;
    r->exited = strcmp(state, "exited") == 0;
    r->exit_code = (int)code;
    r->signal = (int)sig;
    r->start_ms = start_ms;
    r->end_ms = end_ms;
    snprintf(r->launch_error, sizeof(r->launch_error), "%s",
        launch ? launch : "");
out:
    free(state);
    free(launch);
    return rc;
}

static cJSON *
supfile_rank_status_to_json(const void *arg)
{
    const struct supfile_rank_status *r = arg;
    cJSON *o = cJSON_CreateObject();

    jsonx_add_int(o, "rank", r->rank);
    jsonx_add_int(o, "pid", r->pid);
    jsonx_add_int(o, "proc_start", (int64_t)r->proc_start);
    jsonx_add_str(o, "state", r->exited ? "exited" : "running");
    jsonx_add_int(o, "exit_code", r->exit_code);
    jsonx_add_int(o, "signal", r->signal);
    jsonx_add_int(o, "start_ms", r->start_ms);
    jsonx_add_int(o, "end_ms", r->end_ms);
    cJSON_AddBoolToObject(o, "fenced", r->fenced);
    if (r->launch_error[0])
        jsonx_add_str(o, "launch_error", r->launch_error);
    return o;
}

int
supfile_status_load(const char *dir, struct supfile_status *st, struct err *err)
{
    cJSON *root = NULL;
    void *ranks = NULL;
    int64_t pid = 0;
    int rc;

    memset(st, 0, sizeof(*st));
    if ((rc = supfile_load_head(dir, SUPFILE_STATUS, &root, &st->job,
             &st->attempt, err)) ||
        (rc = jsonx_get_int(root, "pid", true, 1, INT32_MAX, &pid, err)) ||
        (rc = jsonx_get_bool(root, "fenced", false, &st->fenced, err)) ||
        (rc = jsonx_get_bool(root, "stopping", false, &st->stopping, err)) ||
        (rc = jsonx_get_bool(root, "done", true, &st->done, err)))
        goto out;
    rc = supfile_get_ranks(root, sizeof(*st->ranks),
        supfile_rank_status_from_json, &ranks, &st->nranks, err);
    st->ranks = ranks;
    st->pid = (int)pid;
out:
    cJSON_Delete(root);
    if (rc < 0)
        supfile_status_release(st);
    return rc;
}

int
supfile_status_save(const char *dir, const struct supfile_status *st)
{
    cJSON *root = supfile_new_root(st->job, st->attempt);

    jsonx_add_int(root, "pid", st->pid);
    cJSON_AddBoolToObject(root, "fenced", st->fenced);
    cJSON_AddBoolToObject(root, "stopping", st->stopping);
    cJSON_AddBoolToObject(root, "done", st->done);
    supfile_add_ranks(root, st->ranks, sizeof(*st->ranks), st->nranks,
        supfile_rank_status_to_json);
    return supfile_save_json(dir, SUPFILE_STATUS, root);
}

void
supfile_status_release(struct supfile_status *st)
{
    free(st->ranks);
    memset(st, 0, sizeof(*st));
}

/* ---- lease -------------------------------------------------------------- */

int
supfile_lease_write(const char *dir, int64_t deadline_ms)
{
    char buf[32];
    int n = snprintf(buf, sizeof(buf), "%" PRId64 "\n", deadline_ms);

    return supfile_write_atomic(dir, SUPFILE_LEASE, buf, (size_t)n, 0600);
}

int
supfile_lease_read(const char *dir, int64_t *deadline_ms)
{
    char *path = xasprintf("%s/%s", dir, SUPFILE_LEASE), *text = NULL, *end;
    long long v;
    size_t len;
    int rc;

    rc = supfile_read(path, 64, &text, &len);
    free(path);
    if (rc < 0)
        return rc;
    errno = 0;
    v = strtoll(text, &end, 10);
    while (*end == '\n' || *end == ' ' || *end == '\r' || *end == '\t')
        end++;
    if (errno != 0 || end == text || *end != '\0' || v < 0)
        rc = -EINVAL;
    else
        *deadline_ms = (int64_t)v;
    free(text);
    return rc;
}

/* ---- the agent's lock, the scheduler's address --------------------------- */

static int
supfile_agent_open(const char *jobs_dir, int flags, int *fd)
{
    char *path = xasprintf("%s/%s", jobs_dir, SUPFILE_AGENT_LOCK);
    int f = open(path, flags | O_CLOEXEC | O_NOFOLLOW, 0600);

    free(path);
    if (f < 0)
        return -errno;
    *fd = f;
    return 0;
}

int
supfile_agent_lock(const char *jobs_dir, int *fd)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
    int f = -1, rc;

    if ((rc = supfile_agent_open(jobs_dir, O_RDWR | O_CREAT, &f)) < 0)
        return rc;
    if (fcntl(f, F_OFD_SETLK, &fl) < 0) {
        rc = errno == EACCES ? -EAGAIN : -errno;
        close(f);
        return rc;
    }
    *fd = f;
    return 0;
}

int
supfile_agent_lock_open(const char *jobs_dir, int *fd)
{
    return supfile_agent_open(jobs_dir, O_RDONLY, fd);
}

int
supfile_agent_alive(int fd)
{
    struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

    if (fcntl(fd, F_OFD_GETLK, &fl) < 0)
        return -errno;
    return fl.l_type != F_UNLCK;
}

int
supfile_agent_stopped_mark(const char *jobs_dir)
{
    return supfile_write_atomic(jobs_dir, SUPFILE_AGENT_STOPPED, "stopped\n", 8,
        0644);
}

int
supfile_agent_stopped_clear(const char *jobs_dir)
{
    char *path = xasprintf("%s/%s", jobs_dir, SUPFILE_AGENT_STOPPED);
    int rc = unlink(path) < 0 && errno != ENOENT ? -errno : 0;

    free(path);
    return rc;
}

bool
supfile_agent_stopped(const char *jobs_dir)
{
    char *path = xasprintf("%s/%s", jobs_dir, SUPFILE_AGENT_STOPPED);
    bool there = access(path, F_OK) == 0;

    free(path);
    return there;
}

int
supfile_sched_addr_write(const char *jobs_dir, const char *ip, int port)
{
    char buf[96];
    int n = snprintf(buf, sizeof(buf), "%s %d\n", ip, port);

    if (n < 0 || (size_t)n >= sizeof(buf))
        return -EINVAL;
    return supfile_write_atomic(jobs_dir, SUPFILE_SCHED_ADDR, buf, (size_t)n,
        0644);
}

int
supfile_sched_addr_read(const char *jobs_dir, char *ip, size_t iplen, int *port)
{
    char *path = xasprintf("%s/%s", jobs_dir, SUPFILE_SCHED_ADDR);
    char *text = NULL, *sp, *end;
    size_t len;
    long p;
    int rc;

    rc = supfile_read(path, 96, &text, &len);
    free(path);
    if (rc < 0)
        return rc;
    rc = -EINVAL;
    sp = strchr(text, ' ');
    if (sp == NULL || sp == text || (size_t)(sp - text) >= iplen)
        goto out;
    errno = 0;
    p = strtol(sp + 1, &end, 10);
    if (errno != 0 || end == sp + 1 || (*end != '\n' && *end != '\0') ||
        p <= 0 || p > 65535)
        goto out;
    memcpy(ip, text, (size_t)(sp - text));
    ip[sp - text] = '\0';
    *port = (int)p;
    rc = 0;
out:
    free(text);
    return rc;
}

/* ---- exit codes --------------------------------------------------------- */

int
supfile_exec_exit_code(int rc)
{
    return rc == -ENOENT ? 127 : 126;
}
