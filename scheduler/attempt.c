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
    cadence_rate_init(&a->rate);
    cadence_clock_init(&a->gc, 0, -1);
    cadence_clock_init(&a->ckpt, 0, -1);
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
    a->npending = a->nranks;
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
    free(a->nodes_json);
    for (size_t r = 0; r < a->nranks; r++) {
        free(a->ranks[r].stderr_tail);
        free(a->ranks[r].launch_error);
        free(a->ranks[r].dump);
    }
    free(a->ranks);
    free(a->reason);
    free(a->master_addr);
    free(a->resume_from);
    evidence_release(&a->failure);
    for (size_t i = 0; i < a->ndirectives; i++)
        free(a->directives[i].acked);
    free(a->directives);
    free(a->tallies);
    attempt_set_stop(a, NULL);
    rankwin_destroy(a->stats);
    free(a);
}

void
attempt_stop_free(struct attempt_stop *stop)
{
    if (stop == NULL)
        return;
    free(stop->node);
    free(stop->actor);
    free(stop->reason);
    free(stop);
}

void
attempt_set_stop(struct attempt *a, const struct attempt_stop *stop)
{
    attempt_stop_free(a->stop);
    a->stop = NULL;
    if (stop == NULL)
        return;
    a->stop = xcalloc(1, sizeof(*a->stop));
    *a->stop = *stop;
    a->stop->node = xstrdup(stop->node ? stop->node : "");
    a->stop->actor = xstrdup(stop->actor ? stop->actor : "");
    a->stop->reason = xstrdup(stop->reason ? stop->reason : "");
}

void
attempt_set_reason(struct attempt *a, const char *reason)
{
    xstrset(&a->reason, reason);
}

void
attempt_set_failure(struct attempt *a, const struct evidence *e, bool failed)
{
    struct evidence copy;

    if (e)
        evidence_copy(&copy, e);
    evidence_release(&a->failure);
    if (e)
        a->failure = copy;
    a->has_failure = e && failed;
}

void
attempt_set_resume(struct attempt *a, int64_t step, const char *path)
{
    xstrset(&a->resume_from, path);
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

/* ---- directives ------------------------------------------------------- */

/* Forget directives, the oldest done ones first (the oldest of all when
 * none is done), until there is room for one more. */
static void
directive_make_room(struct attempt *a)
{
    while (a->ndirectives >= ATTEMPT_DIRECTIVES_MAX) {
        size_t i = 0;

        while (i < a->ndirectives && a->directives[i].done_ms == 0)
            i++;
        if (i == a->ndirectives)
            i = 0;
        free(a->directives[i].acked);
        memmove(&a->directives[i], &a->directives[i + 1],
            (a->ndirectives - i - 1) * sizeof(*a->directives));
        a->ndirectives--;
    }
}

struct attempt_directive *
attempt_directive_load(struct attempt *a, uint64_t seq,
    enum proto_directive_kind kind, int64_t step, int64_t issued_ms,
    int64_t done_ms)
{
    struct attempt_directive *d;

    directive_make_room(a);
    a->directives = xreallocarray(a->directives, a->ndirectives + 1,
        sizeof(*a->directives));
    d = &a->directives[a->ndirectives++];
    memset(d, 0, sizeof(*d));
    d->seq = seq;
    d->kind = kind;
    d->step = step;
    d->issued_ms = issued_ms;
    d->done_ms = done_ms;
    d->acked = xcalloc(a->nranks + 1, sizeof(*d->acked));
    if (seq > a->directive_seq)
        a->directive_seq = seq;
    return d;
}

struct attempt_directive *
attempt_directive_add(struct attempt *a, enum proto_directive_kind kind,
    int64_t step, int64_t now)
{
    return attempt_directive_load(a, a->directive_seq + 1, kind, step, now, 0);
}

struct attempt_directive *
attempt_directive_find(const struct attempt *a, uint64_t seq)
{
    for (size_t i = 0; i < a->ndirectives; i++) {
        if (a->directives[i].seq == seq)
            return &a->directives[i];
    }
    return NULL;
}

bool
attempt_directive_ack(const struct attempt *a, struct attempt_directive *d,
    int rank)
{
    if (rank < 0 || (size_t)rank >= a->nranks || d->acked[rank])
        return false;
    d->acked[rank] = true;
    d->nacked++;
    return true;
}

bool
attempt_directive_node_done(const struct attempt *a,
    const struct attempt_directive *d, int k)
{
    for (int l = 0; l < a->ranks_per_node; l++) {
        if (!d->acked[(size_t)k * (size_t)a->ranks_per_node + (size_t)l])
            return false;
    }
    return true;
}

bool
attempt_directive_live_done(const struct attempt *a,
    const struct attempt_directive *d, const bool *live)
{
    for (int k = 0; k < a->nnodes; k++) {
        if (live[k] && !attempt_directive_node_done(a, d, k))
            return false;
    }
    return true;
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

static bool
attempt_rank_failed(const struct attempt_rank *rk)
{
    return rk->state == PROTO_RANK_LOST ||
           (rk->state == PROTO_RANK_EXITED &&
               (rk->exit_code != 0 || rk->signal != 0));
}

/* Add d (+1 or -1) to the counts rk is in. */
static void
attempt_rank_add(struct attempt *a, const struct attempt_rank *rk, int d)
{
    size_t *n = NULL;

    if (rk->state == PROTO_RANK_PENDING)
        n = &a->npending;
    else if (attempt_rank_failed(rk))
        n = &a->nfailed;
    else if (rk->state == PROTO_RANK_EXITED)
        n = &a->nsucceeded;
    if (n != NULL)
        *n = d > 0 ? *n + 1 : *n - 1;
}

void
attempt_rank_uncount(struct attempt *a, const struct attempt_rank *rk)
{
    attempt_rank_add(a, rk, -1);
}

void
attempt_rank_count(struct attempt *a, const struct attempt_rank *rk)
{
    attempt_rank_add(a, rk, +1);
}

void
attempt_recount(struct attempt *a)
{
    a->npending = a->nfailed = a->nsucceeded = 0;
    for (size_t r = 0; r < a->nranks; r++)
        attempt_rank_count(a, &a->ranks[r]);
}

bool
attempt_all_started(const struct attempt *a)
{
    return a->npending == 0;
}

bool
attempt_all_succeeded(const struct attempt *a)
{
    return a->nsucceeded == a->nranks;
}

/* The failure that came first (by end time; ranks with no end time count
 * as latest), the lowest rank on ties: when one rank crashes and its peers
 * then die of the broken collective, the crash is the evidence. */
const struct attempt_rank *
attempt_first_failure(const struct attempt *a)
{
    const struct attempt_rank *best = NULL;

    if (a->nfailed == 0)
        return NULL;

    for (size_t r = 0; r < a->nranks; r++) {
        const struct attempt_rank *rk = &a->ranks[r];

        if (!attempt_rank_failed(rk))
            continue;
        if (best == NULL || (rk->end_ms > 0 && (best->end_ms == 0 ||
                                                   rk->end_ms < best->end_ms)))
            best = rk;
    }
    return best;
}

void
attempt_rank_failure_str(const struct attempt *a, const struct attempt_rank *r,
    char *buf, size_t len)
{
    const struct placement *p = &a->placements[r->node_rank];
    const char *node = p->node_name ? p->node_name : "?";

    if (r->state == PROTO_RANK_LOST)
        snprintf(buf, len, "rank %d lost on node %s", r->rank, node);
    else if (r->signal != 0)
        snprintf(buf, len, "rank %d killed by signal %d", r->rank, r->signal);
    else
        snprintf(buf, len, "rank %d exited with code %d", r->rank,
            r->exit_code);
}

size_t
attempt_rank_gpus(const struct placement *p, int ranks_per_node, int local_rank,
    int *out)
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
