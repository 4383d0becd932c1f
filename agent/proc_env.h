/*
 * proc_env.h - the environment of a rank (docs/api.md)
 *
 * Part of the stable interface: torchrun's variables, so a PyTorch script
 * runs unchanged, plus lockstep's own. Pure helpers, used by proc_start.c
 * when it writes spec.json.
 */
#ifndef AGENT_PROC_ENV_H
#define AGENT_PROC_ENV_H

#include "common/proto.h"

/*
 * The environment of one rank: `base` (NULL-terminated "K=V" strings:
 * the agent's own environment), minus the variables that describe the
 * agent's systemd service (NOTIFY_SOCKET, LISTEN_*, WATCHDOG_*,
 * JOURNAL_STREAM, INVOCATION_ID) and its PMIx settings (PMIX_*), then the job's
 * env (the submitter's environment, so its PATH finds the command), then the
 * rank variables of docs/api.md (torchrun's, lockstep's, PWD), which the job's
 * env cannot override (LOCKSTEP_PROGRESS_FILE, LOCKSTEP_COMMIT_FILE and
 * LOCKSTEP_CONTROL_FILE are among them: the caller sets those;
 * LOCKSTEP_GC_MANAGED is "1" when l->gc_managed, and absent otherwise),
 * and OMP_NUM_THREADS=1 when several ranks share the node and neither
 * set it. Returns a NULL-terminated array; caller frees with
 * proc_env_free.
 */
char **proc_build_env(const struct proto_launch *l,
    const struct proto_launch_rank *r, const char *node, char *const *base);
void proc_env_free(char **env);
/* Value of key in a NULL-terminated env, or NULL (borrowed). */
const char *proc_env_get(char *const *env, const char *key);
/* Set key=value in a heap env from proc_build_env (replacing). */
void proc_env_set(char ***env, const char *key, const char *value);

#endif
