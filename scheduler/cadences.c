/*
 * cadences.c - every rank of an attempt acts at the same step
 * (cadences.h)
 */
#include "scheduler/cadences.h"

#include <errno.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "scheduler/db.h"
#include "scheduler/directive.h"

/* The two cadences of an attempt, as a table. */
struct cadence_kind {
    enum proto_directive_kind kind;
    const struct proto_cadence *every;
    struct cadence_clock *clock;
};

static size_t
cadence_kinds(struct attempt *a, const struct job *job,
    struct cadence_kind out[2])
{
    out[0] = (struct cadence_kind){ PROTO_DIRECTIVE_GC, &job->spec.gc_every,
        &a->gc };
    out[1] = (struct cadence_kind){ PROTO_DIRECTIVE_CHECKPOINT,
        &job->spec.checkpoint_every, &a->ckpt };
    return 2;
}

static int64_t
cadences_lead(const struct schedd *sd)
{
    return sd->heartbeat_ms + CADENCES_MARGIN_MS;
}

/* Whether a has anything to do with cadences now: running, of a job that
 * is still there. */
static bool
cadences_live(const struct attempt *a)
{
    return a->job != NULL && a->state == PROTO_ATTEMPT_RUNNING;
}

static int
cadences_post(struct schedd *sd, struct attempt *a,
    enum proto_directive_kind kind, struct cadence_clock *k, int64_t step,
    int64_t now)
{
    uint64_t seq = 0;
    int rc = directive_post(sd, a, kind, step, &seq);

    if (rc == 0) {
        cadence_posted(k, seq, step, now, cadences_lead(sd));
        log_info("job=%lld attempt=%d %s at step %lld (fastest rank at %lld, "
                 "%.1f steps/s)",
            (long long)a->job_id, a->num, proto_directive_kind_str(kind),
            (long long)step, (long long)a->rate.step, a->rate.per_ms * 1000);
    }
    return rc;
}

/* The pending action of ck is over once every live rank acknowledged
 * it. */
static void
cadences_settle(struct attempt *a, const struct cadence_kind *ck)
{
    if (ck->clock->pending != 0 && directive_done(a, ck->clock->pending))
        cadence_done(ck->clock, ck->clock->pending);
}

/* Post every action of a that is due at now. */
static int
cadences_due(struct schedd *sd, struct attempt *a, int64_t now)
{
    struct cadence_kind ks[2];
    size_t n = cadence_kinds(a, a->job, ks);
    int rc = 0;

    if (!a->cadence_started)
        return 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        cadences_settle(a, &ks[i]);
        int64_t step = cadence_due(ks[i].every, ks[i].clock, &a->rate, now,
            cadences_lead(sd));

        if (step >= 0)
            rc = cadences_post(sd, a, ks[i].kind, ks[i].clock, step, now);
    }
    return rc;
}

int
cadences_report(struct schedd *sd, struct attempt *a, int64_t fastest)
{
    int64_t now = timeid_mono_ms();

    if (!cadences_live(a))
        return 0;
    cadence_observe(&a->rate, fastest, now);
    if (!a->cadence_started && fastest >= 0) {
        cadence_clock_init(&a->gc, now, -1);
        cadence_clock_init(&a->ckpt, now, a->resume_step);
        a->cadence_started = true;
    }
    return cadences_due(sd, a, now);
}

/* Give up on k's pending action when the ranks have not acknowledged it
 * within the cadence's patience: the directive is marked done (it stops
 * being delivered) and an event says which ranks never answered. */
static int
cadences_abandon(struct schedd *sd, struct attempt *a,
    const struct cadence_kind *ck, int64_t now)
{
    struct attempt_directive *d;
    char subject[32];
    cJSON *detail;
    int rc;

    if (ck->clock->pending == 0 ||
        now - ck->clock->pending_ms < cadence_patience_ms(ck->every, &a->rate))
        return 0;
    d = attempt_directive_find(a, ck->clock->pending);
    cadence_done(ck->clock, ck->clock->pending);
    if (d == NULL || d->done_ms > 0)
        return 0;
    d->done_ms = timeid_now_ms();
    log_warn("job=%lld attempt=%d %s at step %lld: %zu of %zu ranks "
             "acknowledged it in %lld s; giving up on it",
        (long long)a->job_id, a->num, proto_directive_kind_str(d->kind),
        (long long)d->step, d->nacked, a->nranks,
        (long long)((now - d->issued_ms) / 1000));
    if ((rc = schedd_db_check(sd, db_directive_done(sd->db, a, d))) < 0)
        return rc;
    detail = cJSON_CreateObject();
    jsonx_add_int(detail, "attempt", a->num);
    jsonx_add_str(detail, "kind", proto_directive_kind_str(d->kind));
    jsonx_add_int(detail, "seq", (int64_t)d->seq);
    jsonx_add_int(detail, "step", d->step);
    jsonx_add_int(detail, "acknowledged", (int64_t)d->nacked);
    jsonx_add_int(detail, "ranks", (int64_t)a->nranks);
    return schedd_event(sd, SCHEDD_ACTOR,
        schedd_subject_job(subject, sizeof(subject), a->job_id),
        "cadence_abandoned", detail);
}

int
cadences_tick(struct schedd *sd)
{
    int64_t now = timeid_mono_ms();
    int rc = 0;

    for (struct attempt *a = sd->attempts; a && rc == 0; a = a->next) {
        struct cadence_kind ks[2];
        size_t n;

        if (!cadences_live(a) || !a->cadence_started)
            continue;
        n = cadence_kinds(a, a->job, ks);
        for (size_t i = 0; i < n && rc == 0; i++)
            rc = cadences_abandon(sd, a, &ks[i], now);
        if (rc == 0)
            rc = cadences_due(sd, a, now);
    }
    return rc;
}

int
cadences_acks(struct schedd *sd, struct attempt *a, const struct placement *p,
    const struct proto_rank_status *in)
{
    int rc = 0;

    if (in->rank / a->ranks_per_node != p->node_rank)
        return 0;

    for (size_t i = 0; i < in->nacks && rc == 0; i++) {
        struct attempt_directive *d = attempt_directive_find(a,
            in->acks[i].seq);
        char subject[32];
        cJSON *detail;

        if (d == NULL || d->late ||
            proto_directive_target(d->kind) != PROTO_TARGET_RANK ||
            d->step < 0 || in->acks[i].step <= d->step)
            continue;
        d->late = true;
        log_warn("job=%lld attempt=%d rank=%d %s %llu was due at step %lld "
                 "and happened at step %lld (late)",
            (long long)a->job_id, a->num, in->rank,
            proto_directive_kind_str(d->kind), (unsigned long long)d->seq,
            (long long)d->step, (long long)in->acks[i].step);
        detail = cJSON_CreateObject();
        jsonx_add_int(detail, "attempt", a->num);
        jsonx_add_str(detail, "kind", proto_directive_kind_str(d->kind));
        jsonx_add_int(detail, "seq", (int64_t)d->seq);
        jsonx_add_int(detail, "rank", in->rank);
        jsonx_add_int(detail, "step", d->step);
        jsonx_add_int(detail, "acted_step", in->acks[i].step);
        jsonx_add_int(detail, "duration_ms", in->acks[i].duration_ms);
        rc = schedd_event(sd, SCHEDD_ACTOR,
            schedd_subject_job(subject, sizeof(subject), a->job_id),
            "cadence_late", detail);
    }
    return rc;
}

int
cadences_now(struct schedd *sd, struct attempt *a,
    enum proto_directive_kind kind, int64_t *step, uint64_t *seq)
{
    struct cadence_clock *k = kind == PROTO_DIRECTIVE_GC ? &a->gc : &a->ckpt;
    int64_t now = timeid_mono_ms();
    int64_t at = cadence_predict(&a->rate, now + cadences_lead(sd));
    int rc;

    *step = -1;
    *seq = 0;
    /* One already pending that comes as soon serves; a later one (the
     * next multiple of a step cadence) does not: this one goes first. */
    if (k->pending != 0 && !directive_done(a, k->pending) &&
        (at < 0 || k->pending_step <= at + 1)) {
        *step = k->pending_step;
        *seq = k->pending;
        return -EBUSY;
    }
    if (!cadences_live(a) || at < 0)
        return -EAGAIN;
    *step = at + 1;
    rc = cadences_post(sd, a, kind, k, *step, now);
    *seq = k->pending;
    return rc;
}
