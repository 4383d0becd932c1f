/*
 * cli_env.h - the submitter's environment a job takes along (--export)
 *
 * `lockstep submit` sends the environment it runs in with the job, as
 * `sbatch --export=ALL` does, so the ranks run the researcher's python,
 * venv or conda, and see their variables. Some variables never travel
 * (docs/api.md, "The job's environment"): credentials (every LOCKSTEP_*,
 * SSH_AUTH_SOCK, ...), the terminal and desktop session (TERM, DISPLAY,
 * XDG_SESSION_*, ...), the shell's bookkeeping (PWD, SHLVL, _) and every
 * variable lockstep sets for the ranks itself (RANK, MASTER_ADDR,
 * CUDA_VISIBLE_DEVICES, TORCHELASTIC_*, ...). Pure: the environment is an
 * argument, so the unit tests pass their own.
 */
#ifndef CLI_CLI_ENV_H
#define CLI_CLI_ENV_H

#include <stdbool.h>

#include "common/err.h"
#include "common/proto.h"

/* Whether the variable named key never travels with a job. */
bool cli_env_stays(const char *key);

/* Check a --export value: ALL, NONE, or a comma-separated list of NAME,
 * NAME=VALUE and ALL. Returns 0, or -EINVAL with err naming the bad
 * entry. */
int cli_env_export_check(const char *how, struct err *err);

/*
 * Add to spec->env what --export `how` (NULL: ALL) takes from env (a
 * NULL-terminated "K=V" array: the submitter's environment). A variable
 * spec->env already holds (an --env) keeps its value. ALL takes every
 * variable but those that never travel and those whose names are not
 * variable names (exported shell functions); a NAME takes that variable,
 * which must be set and must not be one that never travels; NAME=VALUE
 * sets it; NONE takes nothing. Fails, naming the limit and what to do,
 * when the result would exceed PROTO_ENV_MAX variables or a value
 * PROTO_ENV_VALUE_MAX bytes: nothing is ever cut silently. On failure
 * spec->env may hold part of the result; the caller gives up on the spec.
 */
int cli_env_export(struct proto_job_spec *spec, const char *how,
    char *const *env, struct err *err);

#endif
