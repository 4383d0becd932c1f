/*
 * proc_directive.c - carry out and acknowledge directives (proc_directive.h)
 *
 * Which directives a launch lists is kept per job; what has been carried
 * out is read from the module that does the work (a stack dump request is
 * served once proc_dump.c says so), so the acks are recomputed for every
 * report rather than kept.
 */
#include "agent/proc_directive.h"

#include <stdlib.h>
#include <string.h>

#include "agent/proc_dump.h"
#include "agent/proc_job.h"
#include "common/log.h"
#include "common/xalloc.h"

static void
proc_directive_release(struct proc_job *job)
{
    free(job->directives);
    job->directives = NULL;
    job->ndirectives = 0;
}

void
proc_directive_set(struct proc_job *job, const struct proto_launch *l,
    bool fresh)
{
    uint64_t dump = 0;

    proc_directive_release(job);
    job->directives = xcalloc(l->ndirectives + 1, sizeof(*job->directives));
    if (l->ndirectives > 0)
        memcpy(job->directives, l->directives,
            l->ndirectives * sizeof(*job->directives));
    job->ndirectives = l->ndirectives;
    for (size_t i = 0; i < l->ndirectives; i++) {
        const struct proto_directive *d = &l->directives[i];

        switch (d->kind) {
        case PROTO_DIRECTIVE_DUMP:
            if (d->seq > dump)
                dump = d->seq;
            break;
        case PROTO_DIRECTIVE_GC:
        case PROTO_DIRECTIVE_CHECKPOINT:
            break;
        }
    }
    if (fresh)
        proc_dump_init(job, dump);
    else if (dump > 0)
        proc_dump_request(job, dump);
}

/* Whether job has carried out directive d, and how long it took. */
static bool
proc_directive_done(const struct proc_job *job, const struct proto_directive *d,
    int64_t *duration_ms)
{
    switch (d->kind) {
    case PROTO_DIRECTIVE_DUMP:
        return proc_dump_served(job, d->seq, duration_ms);
    case PROTO_DIRECTIVE_GC:
    case PROTO_DIRECTIVE_CHECKPOINT:
        break;
    }
    return false;
}

void
proc_directive_report(const struct proc_job *job, struct proto_job_status *js)
{
    struct proto_ack *acks = xcalloc(job->ndirectives + 1, sizeof(*acks));
    size_t n = 0;

    for (size_t i = 0; i < job->ndirectives; i++) {
        const struct proto_directive *d = &job->directives[i];
        int64_t ms = 0;

        if (!proc_directive_done(job, d, &ms))
            continue;
        acks[n].seq = d->seq;
        acks[n].step = -1;
        acks[n].duration_ms = ms;
        n++;
    }
    /* Every kind so far is the agent's own work, done for all its ranks
     * at once. */
    for (size_t r = 0; r < js->nranks && n > 0; r++) {
        js->ranks[r].acks = xcalloc(n, sizeof(*acks));
        memcpy(js->ranks[r].acks, acks, n * sizeof(*acks));
        js->ranks[r].nacks = n;
    }
    free(acks);
}
