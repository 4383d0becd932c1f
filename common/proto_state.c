/*
 * proto_state.c - the states of jobs, attempts and ranks, by name
 *
 * The names are the ones the API, the database and the CLI use (docs/
 * api.md); the scheduler's transition tables (scheduler/job.c) and the
 * CLI's formatting both work from these, so a state is spelled in one
 * place. The kinds of directives are here too, for the same reason.
 */
#include "proto.h"

#include <string.h>

#include "names.h"
#include "xalloc.h"

static const char *const job_state_names[PROTO_JOB_STATE_COUNT] = {
    [PROTO_JOB_PENDING] = "PENDING",
    [PROTO_JOB_PLACED] = "PLACED",
    [PROTO_JOB_RUNNING] = "RUNNING",
    [PROTO_JOB_RESTARTING] = "RESTARTING",
    [PROTO_JOB_SUCCEEDED] = "SUCCEEDED",
    [PROTO_JOB_FAILED] = "FAILED",
    [PROTO_JOB_CANCELLED] = "CANCELLED",
};

static const char *const attempt_state_names[PROTO_ATTEMPT_STATE_COUNT] = {
    [PROTO_ATTEMPT_STARTING] = "STARTING",
    [PROTO_ATTEMPT_RUNNING] = "RUNNING",
    [PROTO_ATTEMPT_SUCCEEDED] = "SUCCEEDED",
    [PROTO_ATTEMPT_FAILED] = "FAILED",
    [PROTO_ATTEMPT_CANCELLED] = "CANCELLED",
};

const char *
proto_job_state_str(enum proto_job_state s)
{
    return names_str(job_state_names, PROTO_JOB_STATE_COUNT, s, "UNKNOWN");
}

int
proto_job_state_parse(const char *s, enum proto_job_state *out)
{
    int i = names_index(job_state_names, PROTO_JOB_STATE_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum proto_job_state)i;
    return 0;
}

bool
proto_job_state_finished(enum proto_job_state s)
{
    return s == PROTO_JOB_SUCCEEDED || s == PROTO_JOB_FAILED ||
           s == PROTO_JOB_CANCELLED;
}

bool
proto_job_state_queued(enum proto_job_state s)
{
    return s == PROTO_JOB_PENDING || s == PROTO_JOB_RESTARTING;
}

const char *
proto_attempt_state_str(enum proto_attempt_state s)
{
    return names_str(attempt_state_names, PROTO_ATTEMPT_STATE_COUNT, s,
        "UNKNOWN");
}

int
proto_attempt_state_parse(const char *s, enum proto_attempt_state *out)
{
    int i = names_index(attempt_state_names, PROTO_ATTEMPT_STATE_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum proto_attempt_state)i;
    return 0;
}

bool
proto_attempt_state_active(enum proto_attempt_state s)
{
    return s == PROTO_ATTEMPT_STARTING || s == PROTO_ATTEMPT_RUNNING;
}

static const char *const rank_state_names[] = {
    [PROTO_RANK_PENDING] = "pending",
    [PROTO_RANK_RUNNING] = "running",
    [PROTO_RANK_EXITED] = "exited",
    [PROTO_RANK_LOST] = "lost",
};

const char *
proto_rank_state_str(enum proto_rank_state s)
{
    return names_str(rank_state_names, ARRAY_SIZE(rank_state_names), s,
        "unknown");
}

int
proto_rank_state_parse(const char *s, enum proto_rank_state *out)
{
    int i = names_index(rank_state_names, ARRAY_SIZE(rank_state_names), s);

    if (i < 0)
        return i;
    *out = (enum proto_rank_state)i;
    return 0;
}

bool
proto_rank_state_final(enum proto_rank_state s)
{
    return s == PROTO_RANK_EXITED || s == PROTO_RANK_LOST;
}

static const char *const progress_names[] = {
    [PROTO_PROGRESS_NONE] = "none",
    [PROTO_PROGRESS_STEP] = "step",
    [PROTO_PROGRESS_OUTPUT] = "output",
};

const char *
proto_progress_str(enum proto_progress p)
{
    return names_str(progress_names, ARRAY_SIZE(progress_names), p, "unknown");
}

int
proto_progress_parse(const char *s, enum proto_progress *out)
{
    int i = names_index(progress_names, ARRAY_SIZE(progress_names), s);

    if (i < 0)
        return i;
    *out = (enum proto_progress)i;
    return 0;
}

static const char *const directive_kind_names[PROTO_DIRECTIVE_KIND_COUNT] = {
    [PROTO_DIRECTIVE_DUMP] = "dump",
    [PROTO_DIRECTIVE_GC] = "gc",
    [PROTO_DIRECTIVE_CHECKPOINT] = "checkpoint",
};

const char *
proto_directive_kind_str(enum proto_directive_kind k)
{
    return names_str(directive_kind_names, PROTO_DIRECTIVE_KIND_COUNT, k,
        "unknown");
}

int
proto_directive_kind_parse(const char *s, enum proto_directive_kind *out)
{
    int i = names_index(directive_kind_names, PROTO_DIRECTIVE_KIND_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum proto_directive_kind)i;
    return 0;
}

enum proto_directive_target
proto_directive_target(enum proto_directive_kind k)
{
    switch (k) {
    case PROTO_DIRECTIVE_DUMP:
        break;
    case PROTO_DIRECTIVE_GC:
    case PROTO_DIRECTIVE_CHECKPOINT:
        return PROTO_TARGET_RANK;
    }
    return PROTO_TARGET_AGENT;
}

/* ---- the rank environment ---------------------------------------------- */

static const char *const rank_env_keys[] = {
    "RANK",
    "WORLD_SIZE",
    "LOCAL_RANK",
    "LOCAL_WORLD_SIZE",
    "NODE_RANK",
    "GROUP_RANK",
    "GROUP_WORLD_SIZE",
    "ROLE_RANK",
    "ROLE_WORLD_SIZE",
    "ROLE_NAME",
    "TORCHELASTIC_RESTART_COUNT",
    "TORCHELASTIC_MAX_RESTARTS",
    "TORCHELASTIC_RUN_ID",
    "MASTER_ADDR",
    "MASTER_PORT",
    "LOCKSTEP_JOB_ID",
    "LOCKSTEP_ATTEMPT",
    "LOCKSTEP_NODE",
    "LOCKSTEP_CHECKPOINT_DIR",
    "LOCKSTEP_RESUME_FROM",
    "LOCKSTEP_RESUME_STEP",
    "CUDA_VISIBLE_DEVICES",
    "LOCKSTEP_PROGRESS_FILE",
    "LOCKSTEP_COMMIT_FILE",
    "LOCKSTEP_CONTROL_FILE",
    "LOCKSTEP_GC_MANAGED",
    "PWD",
    NULL,
};

bool
proto_rank_env_key(const char *key)
{
    for (const char *const *k = rank_env_keys; *k != NULL; k++) {
        if (strcmp(*k, key) == 0)
            return true;
    }
    return false;
}
