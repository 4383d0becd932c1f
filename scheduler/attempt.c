/*
 * attempt.c - attempts, their placements and ranks (pure helpers)
 *
 * The decisions about attempts (fail, succeed, cancel, release) need the
 * database and the desired state, so they live in lifecycle.c; this file
 * only builds, inspects and describes attempts.
 */
#include "scheduler/attempt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

struct attempt *
attempt_create(int64_t job_id, int num, int nnodes, int ranks_per_node)
{
    struct attempt *a = xcalloc(1, sizeof(*a));

    a->job_id = job_id;
    a->num = num;
    a->state = PROTO_ATTEMPT_STARTING;
    a->reason = xstrdup("");
    a->master_addr = xstrdup("");
    a->resume_step = -1;
    a->resume_from = xstrdup("");
    a->nnodes = nnodes;
    a->ranks_per_node = ranks_per_node;
    a->placements = xcalloc((size_t)nnodes, sizeof(*a->placements));
    for (int k = 0; k < nnodes; k++) {
        a->placements[k].attempt = a;
        a->placements[k].node_rank = k;
    }
    a->nranks = (size_t)nnodes * (size_t)ranks_per_node;
    a->ranks = xcalloc(a->nranks, sizeof(*a->ranks));
    for (size_t r = 0; r < a->nranks; r++) {
        a->ranks[r].rank = (int)r;
        a->ranks[r].node_rank = (int)(r / (size_t)ranks_per_node);
        a->ranks[r].local_rank = (int)(r % (size_t)ranks_per_node);
        a->ranks[r].state = PROTO_RANK_PENDING;
        a->ranks[r].stderr_tail = xstrdup("");
        a->ranks[r].dump = xstrdup("");
        a->ranks[r].step = -1;
        a->ranks[r].ckpt_max = -1;
    }
    return a;
}

void
attempt_destroy(struct attempt *a)
{
    if (a == NULL)
        return;
    for (int k = 0; k < a->nnodes; k++) {
        free(a->placements[k].node_name);
        free(a->placements[k].gpus);
    }
    free(a->placements);
    for (size_t r = 0; r < a->nranks; r++) {
        free(a->ranks[r].stderr_tail);
        free(a->ranks[r].dump);
    }
    free(a->ranks);
    free(a->reason);
    free(a->master_addr);
    free(a->resume_from);
    free(a->failure);
    free(a->tallies);
    free(a);
}

void
attempt_set_reason(struct attempt *a, const char *reason)
{
    char *copy = xstrdup(reason ? reason : "");

    free(a->reason);
    a->reason = copy;
}

void
attempt_set_failure(struct attempt *a, enum policy_kind kind,
    const char *json)
{
    char *copy = json ? xstrdup(json) : NULL;

    free(a->failure);
    a->failure = copy;
    a->has_failure = json != NULL;
    a->failure_kind = kind;
}

void
attempt_set_resume(struct attempt *a, int64_t step, const char *path)
{
    char *copy = xstrdup(path ? path : "");

    free(a->resume_from);
    a->resume_from = copy;
    a->resume_step = step;
}

int
attempt_tally_add(struct attempt *a, int64_t step)
{
    for (size_t i = 0; i < a->ntallies; i++) {
        if (a->tallies[i].step == step)
            return ++a->tallies[i].committed;
    }
    a->tallies = xreallocarray(a->tallies, a->ntallies + 1,
        sizeof(*a->tallies));
    a->tallies[a->ntallies].step = step;
    a->tallies[a->ntallies].committed = 1;
    a->ntallies++;
    return 1;
}

void
attempt_tally_prune(struct attempt *a, int64_t step)
{
    size_t keep = 0;

    for (size_t i = 0; i < a->ntallies; i++) {
        if (a->tallies[i].step > step)
            a->tallies[keep++] = a->tallies[i];
    }
    a->ntallies = keep;
}

struct placement *
attempt_placement_by_node(struct attempt *a, const char *name)
{
    for (int k = 0; k < a->nnodes; k++) {
        if (a->placements[k].node_name &&
            strcmp(a->placements[k].node_name, name) == 0)
            return &a->placements[k];
    }
    return NULL;
}

bool
attempt_fully_released(const struct attempt *a)
{
    for (int k = 0; k < a->nnodes; k++) {
        if (!a->placements[k].released)
            return false;
    }
    return true;
}

bool
attempt_all_started(const struct attempt *a)
{
    for (size_t r = 0; r < a->nranks; r++) {
        if (a->ranks[r].state == PROTO_RANK_PENDING)
            return false;
    }
    return true;
}

bool
attempt_all_succeeded(const struct attempt *a)
{
    for (size_t r = 0; r < a->nranks; r++) {
        const struct attempt_rank *rk = &a->ranks[r];

        if (rk->state != PROTO_RANK_EXITED || rk->exit_code != 0 ||
            rk->signal != 0)
            return false;
    }
    return true;
}

static bool
attempt_rank_failed(const struct attempt_rank *rk)
{
    return rk->state == PROTO_RANK_LOST ||
           (rk->state == PROTO_RANK_EXITED &&
               (rk->exit_code != 0 || rk->signal != 0));
}

/* The failure that came first (by end time; ranks with no end time count
 * as latest), the lowest rank on ties: when one rank crashes and its peers
 * then die of the broken collective, the crash is the evidence. */
const struct attempt_rank *
attempt_first_failure(const struct attempt *a)
{
    const struct attempt_rank *best = NULL;

    for (size_t r = 0; r < a->nranks; r++) {
        const struct attempt_rank *rk = &a->ranks[r];

        if (!attempt_rank_failed(rk))
            continue;
        if (best == NULL ||
            (rk->end_ms > 0 && (best->end_ms == 0 ||
                                   rk->end_ms < best->end_ms)))
            best = rk;
    }
    return best;
}

void
attempt_rank_failure_str(const struct attempt *a,
    const struct attempt_rank *r, char *buf, size_t len)
{
    const struct placement *p = &a->placements[r->node_rank];
    const char *node = p->node_name ? p->node_name : "?";

    if (r->state == PROTO_RANK_LOST)
        snprintf(buf, len, "rank %d lost on node %s", r->rank, node);
    else if (r->signal != 0)
        snprintf(buf, len, "rank %d killed by signal %d", r->rank,
            r->signal);
    else
        snprintf(buf, len, "rank %d exited with code %d", r->rank,
            r->exit_code);
}

size_t
attempt_rank_gpus(const struct placement *p, int ranks_per_node,
    int local_rank, int *out)
{
    size_t per;

    if (p->ngpus == 0)
        return 0;
    if (p->ngpus >= (size_t)ranks_per_node &&
        p->ngpus % (size_t)ranks_per_node == 0) {
        per = p->ngpus / (size_t)ranks_per_node;
        memcpy(out, p->gpus + per * (size_t)local_rank, per * sizeof(int));
        return per;
    }
    memcpy(out, p->gpus, p->ngpus * sizeof(int));
    return p->ngpus;
}
