/*
 * directive.c - the channel from the scheduler to the ranks (directive.h)
 */
#include "scheduler/directive.h"

#include <stdlib.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"

int
directive_post(struct schedd *sd, struct attempt *a,
    enum proto_directive_kind kind, int64_t step, uint64_t *seq)
{
    struct attempt_directive *d = attempt_directive_add(a, kind, step,
        timeid_now_ms());
    int rc;

    if (seq)
        *seq = d->seq;
    log_info("job=%lld attempt=%d directive %llu: %s%s", (long long)a->job_id,
        a->num, (unsigned long long)d->seq, proto_directive_kind_str(kind),
        step >= 0 ? " at a step" : "");
    rc = schedd_db_check(sd, db_directive_insert(sd->db, a, d));
    for (int k = 0; k < a->nnodes; k++) {
        struct placement *p = &a->placements[k];

        if (p->node && !p->released)
            schedd_node_changed(sd, p->node);
    }
    return rc;
}

/* The nodes of a that still count: not lost, not released. */
static bool *
live_nodes(const struct attempt *a)
{
    bool *live = xcalloc((size_t)a->nnodes + 1, sizeof(*live));

    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];

        live[k] = !p->released && p->node && !p->node->lost;
    }
    return live;
}

bool
directive_done(const struct attempt *a, uint64_t seq)
{
    const struct attempt_directive *d = attempt_directive_find(a, seq);
    bool *live, done;

    if (d == NULL)
        return false;
    if (d->done_ms > 0)
        return true;
    live = live_nodes(a);
    done = attempt_directive_live_done(a, d, live);
    free(live);
    return done;
}

int
directive_acks(struct schedd *sd, struct attempt *a, const struct placement *p,
    const struct proto_rank_status *in)
{
    int rc = 0;

    if (in->rank / a->ranks_per_node != p->node_rank)
        return 0;
    for (size_t i = 0; i < in->nacks && rc == 0; i++) {
        struct attempt_directive *d = attempt_directive_find(a,
            in->acks[i].seq);

        if (d == NULL || !attempt_directive_ack(a, d, in->rank))
            continue;
        log_debug("job=%lld attempt=%d rank=%d directive %llu done in "
                  "%lld ms",
            (long long)a->job_id, a->num, in->rank, (unsigned long long)d->seq,
            (long long)in->acks[i].duration_ms);
        if (d->done_ms == 0 && directive_done(a, d->seq)) {
            d->done_ms = timeid_now_ms();
            rc = schedd_db_check(sd, db_directive_done(sd->db, a, d));
        }
    }
    return rc;
}

void
directive_launch(const struct attempt *a, const struct placement *p,
    struct proto_launch *l)
{
    l->directives = xcalloc(a->ndirectives + 1, sizeof(*l->directives));
    l->ndirectives = 0;
    for (size_t i = 0; i < a->ndirectives; i++) {
        const struct attempt_directive *d = &a->directives[i];
        struct proto_directive *out;

        if (d->done_ms > 0 || attempt_directive_node_done(a, d, p->node_rank))
            continue;
        out = &l->directives[l->ndirectives++];
        out->seq = d->seq;
        out->kind = d->kind;
        out->step = d->step;
    }
}
