/*
 * proc_env.c - the environment of a rank
 *
 * The rank environment is part of the stable interface (docs/api.md):
 * torchrun's variables, so a PyTorch script runs unchanged, plus
 * lockstep's own. Pure (no I/O, no loop), so the unit tests check it
 * directly.
 */
#include "agent/proc_env.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sbuf.h"
#include "common/xalloc.h"

/* Variables of the agent's environment that describe the agent, not the
 * rank (systemd's for its service, and its PMIx settings): a rank that
 * inherited NOTIFY_SOCKET could talk to systemd in the agent's name, one with
 * JOURNAL_STREAM would think its stderr is the journal. Prefixes end in '_'. */
static const char *const proc_env_service_keys[] = {
    "NOTIFY_SOCKET",
    "JOURNAL_STREAM",
    "INVOCATION_ID",
    "LISTEN_",
    "WATCHDOG_",
    /* the agent's own PMIx settings (PMIX_MCA_gds): a rank gets PMIx
     * variables from the agent's server only (pmixsrv_rank_env) */
    "PMIX_",
    NULL,
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

/* Remove key from a heap env (absent is fine). */
static void
proc_env_unset(char **env, const char *key)
{
    size_t i, n = proc_env_count(env);

    for (i = 0; i < n; i++) {
        if (proc_env_key_is(env[i], key)) {
            free(env[i]);
            memmove(&env[i], &env[i + 1], (n - i) * sizeof(*env));
            return;
        }
    }
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
proc_build_env(const struct proto_launch *l, const struct proto_launch_rank *r,
    const char *node, char *const *base)
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
        if (!proto_rank_env_key(l->env[i].key))
            proc_env_set(&env, l->env[i].key, l->env[i].value);
    }

#define SET_INT(k, v)                                                          \
    do {                                                                       \
        snprintf(num, sizeof(num), "%" PRId64, (int64_t)(v));                  \
        proc_env_set(&env, (k), num);                                          \
    } while (0)
    SET_INT("RANK", r->rank);
    SET_INT("WORLD_SIZE", l->world_size);
    SET_INT("LOCAL_RANK", r->local_rank);
    SET_INT("LOCAL_WORLD_SIZE", l->ranks_per_node);
    SET_INT("NODE_RANK", l->node_rank);
    SET_INT("GROUP_RANK", l->node_rank);
    SET_INT("GROUP_WORLD_SIZE", l->nnodes);
    /* One role, as torchrun runs a script: its ranks are the job's. */
    SET_INT("ROLE_RANK", r->rank);
    SET_INT("ROLE_WORLD_SIZE", l->world_size);
    proc_env_set(&env, "ROLE_NAME", "default");
    SET_INT("TORCHELASTIC_RESTART_COUNT", l->attempt - 1);
    SET_INT("TORCHELASTIC_MAX_RESTARTS", l->max_restarts);
    SET_INT("TORCHELASTIC_RUN_ID", l->job);
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
    proc_env_set(&env, "PWD", l->workdir != NULL ? l->workdir : "/");
    /* torchrun's default: ranks sharing a node do not each start a thread
     * per core, unless the job (or the agent) says how many. */
    if (l->ranks_per_node > 1 && proc_env_get(env, "OMP_NUM_THREADS") == NULL)
        proc_env_set(&env, "OMP_NUM_THREADS", "1");
    /* Set only when the job has a GC cadence: the SDK then collects at
     * the scheduled steps only (docs/cadence.md). */
    if (l->gc_managed)
        proc_env_set(&env, "LOCKSTEP_GC_MANAGED", "1");
    else
        proc_env_unset(env, "LOCKSTEP_GC_MANAGED");

    sbuf_init(&gpus);
    for (i = 0; i < r->ngpus; i++)
        sbuf_addf(&gpus, "%s%d", i > 0 ? "," : "", r->gpus[i]);
    proc_env_set(&env, "CUDA_VISIBLE_DEVICES", gpus.buf);
    sbuf_release(&gpus);
    return env;
}
