/*
 * proc_env.c - pure helpers for starting ranks: environment, stderr tail
 *
 * Kept apart from proc.c, which owns processes and handles, so the unit
 * tests can check them without a loop. The rank environment is part of
 * the stable interface (docs/api.md): torchrun's variables, so a PyTorch
 * script runs unchanged, plus lockstep's own.
 */
#include "agent/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

/* The variables lockstep sets for every rank; a job's env may not
 * override them (docs/api.md). */
static const char *const proc_env_rank_keys[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
    "GROUP_RANK", "MASTER_ADDR", "MASTER_PORT", "LOCKSTEP_JOB_ID",
    "LOCKSTEP_ATTEMPT", "LOCKSTEP_NODE", "LOCKSTEP_CHECKPOINT_DIR",
    "LOCKSTEP_RESUME_FROM", "LOCKSTEP_RESUME_STEP", "CUDA_VISIBLE_DEVICES",
    "LOCKSTEP_PROGRESS_FILE", "LOCKSTEP_COMMIT_FILE",
    NULL,
};

/* Variables systemd gives the agent's service that describe the agent,
 * not the rank: a rank that inherited NOTIFY_SOCKET could talk to systemd
 * in the agent's name, one with JOURNAL_STREAM would think its stderr is
 * the journal. Prefixes end in '_'. */
static const char *const proc_env_service_keys[] = {
    "NOTIFY_SOCKET", "JOURNAL_STREAM", "INVOCATION_ID", "LISTEN_",
    "WATCHDOG_", NULL,
};

static bool
proc_env_key_is(const char *entry, const char *key)
{
    size_t n = strlen(key);

    return strncmp(entry, key, n) == 0 && entry[n] == '=';
}

static bool
proc_env_is_service(const char *entry)
{
    const char *const *k;
    size_t n;

    for (k = proc_env_service_keys; *k != NULL; k++) {
        n = strlen(*k);
        if ((*k)[n - 1] == '_' ? strncmp(entry, *k, n) == 0
                               : proc_env_key_is(entry, *k))
            return true;
    }
    return false;
}

static bool
proc_env_is_rank_key(const char *key)
{
    const char *const *k;

    for (k = proc_env_rank_keys; *k != NULL; k++) {
        if (strcmp(*k, key) == 0)
            return true;
    }
    return false;
}

static size_t
proc_env_count(char *const *env)
{
    size_t n = 0;

    while (env != NULL && env[n] != NULL)
        n++;
    return n;
}

const char *
proc_env_get(char *const *env, const char *key)
{
    size_t i, n = strlen(key);

    for (i = 0; env != NULL && env[i] != NULL; i++) {
        if (proc_env_key_is(env[i], key))
            return env[i] + n + 1;
    }
    return NULL;
}

void
proc_env_set(char ***envp, const char *key, const char *value)
{
    char **env = *envp;
    char *entry = xasprintf("%s=%s", key, value);
    size_t i, n = proc_env_count(env);

    for (i = 0; i < n; i++) {
        if (proc_env_key_is(env[i], key)) {
            free(env[i]);
            env[i] = entry;
            return;
        }
    }
    env = xreallocarray(env, n + 2, sizeof(*env));
    env[n] = entry;
    env[n + 1] = NULL;
    *envp = env;
}

void
proc_env_free(char **env)
{
    size_t i;

    for (i = 0; env != NULL && env[i] != NULL; i++)
        free(env[i]);
    free(env);
}

char **
proc_build_env(const struct proto_launch *l,
    const struct proto_launch_rank *r, const char *node, char *const *base)
{
    char **env = xcalloc(proc_env_count(base) + 1, sizeof(*env));
    struct sbuf gpus;
    char num[32];
    size_t i, n = 0;

    for (i = 0; base != NULL && base[i] != NULL; i++) {
        if (strchr(base[i], '=') == NULL || proc_env_is_service(base[i]))
            continue;
        env[n++] = xstrdup(base[i]);
    }
    env[n] = NULL;

    for (i = 0; i < l->nenv; i++) {
        if (!proc_env_is_rank_key(l->env[i].key))
            proc_env_set(&env, l->env[i].key, l->env[i].value);
    }

#define SET_INT(k, v)                                                     \
    do {                                                                  \
        snprintf(num, sizeof(num), "%" PRId64, (int64_t)(v));             \
        proc_env_set(&env, (k), num);                                     \
    } while (0)
    SET_INT("RANK", r->rank);
    SET_INT("WORLD_SIZE", l->world_size);
    SET_INT("LOCAL_RANK", r->local_rank);
    SET_INT("LOCAL_WORLD_SIZE", l->ranks_per_node);
    SET_INT("NODE_RANK", l->node_rank);
    SET_INT("GROUP_RANK", l->node_rank);
    proc_env_set(&env, "MASTER_ADDR",
        l->master_addr != NULL ? l->master_addr : "");
    SET_INT("MASTER_PORT", l->master_port);
    SET_INT("LOCKSTEP_JOB_ID", l->job);
    SET_INT("LOCKSTEP_ATTEMPT", l->attempt);
    proc_env_set(&env, "LOCKSTEP_NODE", node);
    proc_env_set(&env, "LOCKSTEP_CHECKPOINT_DIR",
        l->checkpoint_dir != NULL ? l->checkpoint_dir : "");
    proc_env_set(&env, "LOCKSTEP_RESUME_FROM",
        l->resume_from != NULL ? l->resume_from : "");
    if (l->resume_step >= 0)
        SET_INT("LOCKSTEP_RESUME_STEP", l->resume_step);
    else
        proc_env_set(&env, "LOCKSTEP_RESUME_STEP", "");
#undef SET_INT

    sbuf_init(&gpus);
    for (i = 0; i < r->ngpus; i++)
        sbuf_addf(&gpus, "%s%d", i > 0 ? "," : "", r->gpus[i]);
    proc_env_set(&env, "CUDA_VISIBLE_DEVICES", gpus.buf);
    sbuf_release(&gpus);
    return env;
}

/* Length of the valid UTF-8 sequence at p (at most n bytes), or 0. */
static size_t
proc_utf8_len(const unsigned char *p, size_t n)
{
    size_t len, i;
    unsigned char lo = 0x80, hi = 0xbf;

    if (p[0] < 0x80)
        return 1;
    if (p[0] >= 0xc2 && p[0] <= 0xdf)
        len = 2;
    else if (p[0] >= 0xe0 && p[0] <= 0xef)
        len = 3;
    else if (p[0] >= 0xf0 && p[0] <= 0xf4)
        len = 4;
    else
        return 0;
    if (len > n)
        return 0;
    /* Second-byte limits rule out overlong forms, surrogates and code
     * points above U+10FFFF. */
    if (p[0] == 0xe0)
        lo = 0xa0;
    else if (p[0] == 0xed)
        hi = 0x9f;
    else if (p[0] == 0xf0)
        lo = 0x90;
    else if (p[0] == 0xf4)
        hi = 0x8f;
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (i = 2; i < len; i++) {
        if (p[i] < 0x80 || p[i] > 0xbf)
            return 0;
    }
    return len;
}

char *
proc_read_tail(const char *path, size_t max)
{
    unsigned char *buf = NULL;
    struct sbuf out;
    struct stat st;
    size_t n = 0, start = 0, len;
    off_t off;
    ssize_t got;
    int fd;

    sbuf_init(&out);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sbuf_detach(&out, NULL);
    if (fstat(fd, &st) < 0 || st.st_size <= 0 || max == 0)
        goto done;
    off = st.st_size > (off_t)max ? st.st_size - (off_t)max : 0;
    buf = xmalloc(max);
    while (n < max) {
        got = pread(fd, buf + n, max - n, off + (off_t)n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    if (off > 0) {
        /* Begin at a line start; keep a lone long line rather than
         * nothing. */
        unsigned char *nl = memchr(buf, '\n', n);

        if (nl != NULL && (size_t)(nl - buf) + 1 < n)
            start = (size_t)(nl - buf) + 1;
        else
            while (start < n && (buf[start] & 0xc0) == 0x80)
                start++;        /* the tail of a cut character */
    }
    while (start < n) {
        len = buf[start] == '\0' ? 0 : proc_utf8_len(buf + start, n - start);
        if (len == 0) {
            sbuf_addch(&out, '?');
            start++;
        } else {
            sbuf_add(&out, buf + start, len);
            start += len;
        }
    }
done:
    free(buf);
    close(fd);
    return sbuf_detach(&out, NULL);
}

int
proc_spawn_exit_code(int rc)
{
    return rc == -ENOENT ? 127 : 126;
}
