/*
 * proc_directive.c - carry out and acknowledge directives (proc_directive.h)
 *
 * Which directives a launch lists is kept per job. Those the agent carries
 * out itself (a stack dump) are acknowledged once the module that does the
 * work says so (proc_dump.c). Those the ranks carry out (gc, checkpoint:
 * docs/cadence.md) are published in the attempt's control file
 * (common/ctlfile.h) and, for PMIx clients, notified as PMIx events
 * (pmixsrv.h), and each rank acknowledges them in its own progress
 * file (proc_progress.c). Either way the acks are recomputed for every
 * report rather than kept.
 */
#include "agent/proc_directive.h"

#include <stdlib.h>
#include <string.h>

#include "agent/agentd.h"
#include "agent/pmixsrv.h"
#include "agent/proc_dump.h"
#include "agent/proc_int.h"
#include "agent/proc_job.h"
#include "common/ctlfile.h"
#include "common/log.h"
#include "common/xalloc.h"

static void
proc_directive_release(struct proc_job *job)
{
    free(job->directives);
    job->directives = NULL;
    job->ndirectives = 0;
}

/* The control file's kind of a directive kind; 0 for the agent's own. */
static uint32_t
proc_directive_ctl_kind(enum proto_directive_kind k)
{
    switch (k) {
    case PROTO_DIRECTIVE_GC:
        return CTLFILE_KIND_GC;
    case PROTO_DIRECTIVE_CHECKPOINT:
        return CTLFILE_KIND_CHECKPOINT;
    case PROTO_DIRECTIVE_DUMP:
        break;
    }
    return 0;
}

/* Whether directive i of job is one for the ranks that no newer listed
 * directive pushes out of its slot of the control file. */
static bool
proc_directive_postable(const struct proc_job *job, size_t i)
{
    const struct proto_directive *d = &job->directives[i];

    if (proto_directive_target(d->kind) != PROTO_TARGET_RANK ||
        proc_directive_ctl_kind(d->kind) == 0 || d->seq == 0)
        return false;
    for (size_t j = 0; j < job->ndirectives; j++) {
        const struct proto_directive *o = &job->directives[j];

        if (proto_directive_target(o->kind) == PROTO_TARGET_RANK &&
            o->seq > d->seq && (o->seq - d->seq) % CTLFILE_SLOTS == 0)
            return false;
    }
    return true;
}

/* Publish job's rank-targeted directives in its control file (if open)
 * and, when the agent's PMIx server serves the attempt, as PMIx events.
 * Posting what is there already changes nothing. */
static void
proc_directive_post(struct proc_job *job)
{
    uint64_t logged = job->ctl_logged;

    pmixsrv_directives(job->pt->ad->pmixsrv, job->job, job->attempt,
        job->directives, job->ndirectives);
    if (job->ctl == NULL)
        return;
    for (size_t i = 0; i < job->ndirectives; i++) {
        const struct proto_directive *d = &job->directives[i];

        if (!proc_directive_postable(job, i))
            continue;
        ctlfile_post(job->ctl, d->seq, proc_directive_ctl_kind(d->kind),
            d->step);
        if (d->seq <= job->ctl_logged)
            continue;
        log_info("job=%lld attempt=%d directive seq=%llu kind=%s step=%lld "
                 "posted to the ranks",
            (long long)job->job, job->attempt, (unsigned long long)d->seq,
            proto_directive_kind_str(d->kind), (long long)d->step);
        if (d->seq > logged)
            logged = d->seq;
    }
    job->ctl_logged = logged;
}

void
proc_directive_open(struct proc_job *job)
{
    int rc;

    if (job->ctl != NULL)
        return;
    rc = ctlfile_open(job->ctl_path, (uint64_t)job->attempt, &job->ctl);
    if (rc < 0) {
        log_error("job=%lld attempt=%d cannot open control file '%s': %s "
                  "(its ranks get no gc or checkpoint directives)",
            (long long)job->job, job->attempt, job->ctl_path, strerror(-rc));
        return;
    }
    proc_directive_post(job);
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
    proc_directive_post(job);
}

/* Whether the agent has carried out directive d (one of its own kinds)
 * for all of job's ranks, and how long it took. */
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

/* The ack of rank r for directive d, when its SDK listed one. */
static bool
proc_directive_rank_ack(const struct proc_rank *r,
    const struct proto_directive *d, struct proto_ack *out)
{
    for (size_t i = 0; i < r->nacks; i++) {
        if (r->acks[i].seq == d->seq) {
            *out = r->acks[i];
            return true;
        }
    }
    return false;
}

void
proc_directive_report(const struct proc_job *job, struct proto_job_status *js)
{
    struct proto_ack *acks = xcalloc(job->ndirectives + 1, sizeof(*acks));
    bool *done = xcalloc(job->ndirectives + 1, sizeof(*done));
    int64_t *ms = xcalloc(job->ndirectives + 1, sizeof(*ms));

    /* The agent's own work is done for all its ranks at once. */
    for (size_t i = 0; i < job->ndirectives; i++)
        done[i] = proto_directive_target(job->directives[i].kind) ==
                      PROTO_TARGET_AGENT &&
                  proc_directive_done(job, &job->directives[i], &ms[i]);
    for (size_t r = 0; r < js->nranks && r < job->nranks; r++) {
        size_t n = 0;

        for (size_t i = 0; i < job->ndirectives; i++) {
            const struct proto_directive *d = &job->directives[i];

            if (done[i]) {
                acks[n].seq = d->seq;
                acks[n].step = -1;
                acks[n].duration_ms = ms[i];
                n++;
            } else if (proto_directive_target(d->kind) == PROTO_TARGET_RANK &&
                       proc_directive_rank_ack(&job->ranks[r], d, &acks[n])) {
                n++;
            }
        }
        if (n == 0)
            continue;
        js->ranks[r].acks = xcalloc(n, sizeof(*acks));
        memcpy(js->ranks[r].acks, acks, n * sizeof(*acks));
        js->ranks[r].nacks = n;
    }
    free(ms);
    free(done);
    free(acks);
}
