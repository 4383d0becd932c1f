/*
 * rankstats.c - per-rank statistics by window (rankstats.h)
 */
#include "scheduler/rankstats.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/straggler.h"

static int64_t
window_ms(const struct schedd *sd)
{
    return sd->rank_stats_window_ms > 0 ? sd->rank_stats_window_ms
                                        : RANKSTATS_WINDOW_MS;
}

void
rankstats_rank(struct schedd *sd, struct attempt *a, const struct placement *p,
    const struct proto_rank_status *in)
{
    (void)sd;
    if (in->rank / a->ranks_per_node != p->node_rank)
        return;
    if (a->stats == NULL) {
        if (!proto_attempt_state_active(a->state))
            return;
        a->stats = rankwin_create(a->nranks, timeid_mono_ms());
    }
    rankwin_step(a->stats, in->rank, in->step, in->step_p50_us,
        in->step_p99_us);
    if (in->nsections > 0)
        rankwin_sections(a->stats, in->rank, in->sections, in->nsections);
    for (size_t i = 0; i < in->nacks; i++) {
        const struct attempt_directive *d = attempt_directive_find(a,
            in->acks[i].seq);

        if (d == NULL || (d->kind != PROTO_DIRECTIVE_GC &&
                             d->kind != PROTO_DIRECTIVE_CHECKPOINT))
            continue;
        rankwin_ack(a->stats, in->rank, d->seq, d->kind == PROTO_DIRECTIVE_GC,
            in->acks[i].step, in->acks[i].duration_ms);
    }
}

/* Write a's window (one row per rank that reported in it), prune the
 * job's old windows and start the next window. */
static int
rankstats_flush(struct schedd *sd, struct attempt *a, int64_t mono)
{
    struct rankwin *w = a->stats;
    int64_t median, now = timeid_now_ms();
    int rc = 0;

    if (!rankwin_any(w)) {
        rankwin_next(w, mono);
        return 0;
    }
    median = rankwin_median(w);
    for (size_t i = 0; i < w->nranks && rc == 0; i++) {
        const struct rankwin_rank *r = &w->ranks[i];
        const struct placement *p = &a->placements[a->ranks[i].node_rank];
        struct db_rank_stat row = { .job_id = a->job_id,
            .attempt = a->num,
            .rank = (int)i,
            .window_ms = now,
            .node = p->node_name ? p->node_name : "" };

        if (!r->reported && r->gc_count == 0 && r->ckpt_count == 0)
            continue;
        rankwin_summarize(w, (int)i, median, &row.s);
        if (row.s.slow)
            log_debug("job=%lld attempt=%d rank=%zu slow in this window: "
                      "%lld us per step, the job's median %lld us",
                (long long)a->job_id, a->num, i, (long long)row.s.step_p50_us,
                (long long)median);
        rc = schedd_db_check(sd, db_rank_stat_insert(sd->db, &row));
    }
    if (rc == 0)
        rc = schedd_db_check(sd,
            db_rank_stats_prune(sd->db, a->job_id, RANKWIN_KEEP));
    if (rc == 0)
        rc = straggler_window(sd, a, now);
    rankwin_next(w, mono);
    return rc;
}

int
rankstats_attempt(struct schedd *sd, struct attempt *a)
{
    int rc;

    if (a->stats == NULL || proto_attempt_state_active(a->state))
        return 0;
    rc = rankstats_flush(sd, a, timeid_mono_ms());
    rankwin_destroy(a->stats);
    a->stats = NULL;
    return rc;
}

int
rankstats_tick(struct schedd *sd)
{
    int64_t mono = timeid_mono_ms();
    int rc = 0;

    for (struct attempt *a = sd->attempts; a && rc == 0; a = a->next) {
        if (a->stats == NULL)
            continue;
        if (!proto_attempt_state_active(a->state))
            rc = rankstats_attempt(sd, a);
        else if (mono - a->stats->start_ms >= window_ms(sd))
            rc = rankstats_flush(sd, a, mono);
    }
    return rc;
}

/* ---- the view ----------------------------------------------------------- */

/* One rank's rows of the attempt shown, newest first. */
struct view_rank {
    bool seen;
    char *node;
    struct rankwin_summary newest;
    bool judged[RANKWIN_KEEP], slow[RANKWIN_KEEP];
    size_t n;
    int64_t gc_count, gc_max_ms, ckpt_count, ckpt_max_ms, gc_p50_ms;
};

struct view {
    int attempt;               /* the newest attempt with rows */
    int64_t newest_ms, cur_ms; /* the newest window; the row's */
    int64_t median_us;         /* the newest window's */
    size_t nwindows;
    struct view_rank *ranks;
    size_t nranks;
};

static int
view_attempt_row(const struct db_rank_stat *r, void *arg)
{
    struct view *v = arg;

    if (r->attempt > v->attempt)
        v->attempt = r->attempt;
    return 0;
}

static struct view_rank *
view_rank(struct view *v, int rank)
{
    if ((size_t)rank >= v->nranks) {
        size_t n = (size_t)rank + 1;

        v->ranks = xrealloc(v->ranks, n * sizeof(*v->ranks));
        memset(v->ranks + v->nranks, 0, (n - v->nranks) * sizeof(*v->ranks));
        v->nranks = n;
    }
    return &v->ranks[rank];
}

static int
view_row(const struct db_rank_stat *r, void *arg)
{
    struct view *v = arg;
    struct view_rank *vr;

    if (r->attempt != v->attempt || r->rank < 0)
        return 0;
    if (v->nwindows == 0 || v->cur_ms != r->window_ms) {
        if (v->nwindows == 0) {
            v->newest_ms = r->window_ms;
            v->median_us = r->s.median_us;
        }
        v->cur_ms = r->window_ms;
        v->nwindows++;
    }
    vr = view_rank(v, r->rank);
    if (!vr->seen) {
        vr->seen = true;
        vr->node = xstrdup(r->node);
        vr->newest = r->s;
        vr->gc_p50_ms = -1;
    }
    if (vr->gc_p50_ms < 0 && r->s.gc_count > 0)
        vr->gc_p50_ms = r->s.gc_p50_ms;
    if (vr->n < RANKWIN_KEEP) {
        vr->judged[vr->n] = r->s.median_us > 0 && r->s.step_p50_us > 0;
        vr->slow[vr->n] = r->s.slow;
        vr->n++;
    }
    vr->gc_count += r->s.gc_count;
    vr->ckpt_count += r->s.ckpt_count;
    if (r->s.gc_max_ms > vr->gc_max_ms)
        vr->gc_max_ms = r->s.gc_max_ms;
    if (r->s.ckpt_max_ms > vr->ckpt_max_ms)
        vr->ckpt_max_ms = r->s.ckpt_max_ms;
    return 0;
}

/* One rank's object; *persistent: whether the rule calls it slow. */
static cJSON *
view_rank_json(const struct view_rank *vr, int rank, bool *persistent)
{
    cJSON *o = cJSON_CreateObject();
    int nslow, njudged;

    *persistent = rankwin_persistent(vr->judged, vr->slow, vr->n, &nslow,
        &njudged);
    jsonx_add_int(o, "rank", rank);
    jsonx_add_str(o, "node", vr->node);
    jsonx_add_int(o, "step", vr->newest.step);
    jsonx_add_int(o, "step_p50_us", vr->newest.step_p50_us);
    jsonx_add_int(o, "step_p99_us", vr->newest.step_p99_us);
    jsonx_add_int(o, "gc_count", vr->gc_count);
    jsonx_add_int(o, "gc_p50_ms", vr->gc_p50_ms < 0 ? 0 : vr->gc_p50_ms);
    jsonx_add_int(o, "gc_max_ms", vr->gc_max_ms);
    jsonx_add_int(o, "checkpoint_count", vr->ckpt_count);
    jsonx_add_int(o, "checkpoint_max_ms", vr->ckpt_max_ms);
    jsonx_add_int(o, "slow_windows", nslow);
    jsonx_add_int(o, "judged_windows", njudged);
    cJSON_AddBoolToObject(o, "persistently_slow", *persistent);
    return o;
}

static void
add_step_or_null(cJSON *o, const char *key, int64_t step)
{
    if (step >= 0)
        jsonx_add_int(o, key, step);
    else
        cJSON_AddNullToObject(o, key);
}

/* The object of a view with rows. */
static cJSON *
view_json(const struct schedd *sd, const struct view *v, int64_t last_ckpt)
{
    cJSON *o = cJSON_CreateObject(), *ranks, *slow, *rule;
    int64_t gc_step = -1;
    bool first = true;

    jsonx_add_int(o, "attempt", v->attempt);
    jsonx_add_int(o, "window_ms", window_ms(sd));
    jsonx_add_int(o, "windows", (int64_t)v->nwindows);
    jsonx_add_int(o, "newest_window_ms", v->newest_ms);
    jsonx_add_int(o, "median_step_p50_us", v->median_us);
    rule = cJSON_AddObjectToObject(o, "slow_rule");
    cJSON_AddNumberToObject(rule, "ratio", RANKWIN_SLOW_RATIO);
    jsonx_add_int(rule, "windows", RANKWIN_SLOW_K);
    jsonx_add_int(rule, "of", RANKWIN_SLOW_M);
    ranks = cJSON_AddArrayToObject(o, "ranks");
    slow = cJSON_AddArrayToObject(o, "slow_ranks");
    for (size_t i = 0; i < v->nranks; i++) {
        const struct view_rank *vr = &v->ranks[i];
        bool persistent;

        if (!vr->seen)
            continue;
        /* Every rank collected by then: the lowest of their last. */
        if (first || vr->newest.gc_step < gc_step)
            gc_step = vr->newest.gc_step;
        first = false;
        cJSON_AddItemToArray(ranks, view_rank_json(vr, (int)i, &persistent));
        if (persistent)
            cJSON_AddItemToArray(slow,
                cJSON_Duplicate(
                    cJSON_GetArrayItem(ranks, cJSON_GetArraySize(ranks) - 1),
                    true));
    }
    add_step_or_null(o, "last_gc_step", gc_step);
    add_step_or_null(o, "last_checkpoint_step", last_ckpt);
    return o;
}

cJSON *
rankstats_view(struct schedd *sd, int64_t job_id, int64_t last_ckpt, int *rc)
{
    struct view v;
    cJSON *o = NULL;

    memset(&v, 0, sizeof(v));
    *rc = db_rank_stats_foreach(sd->db, job_id, view_attempt_row, &v);
    if (*rc == 0 && v.attempt > 0)
        *rc = db_rank_stats_foreach(sd->db, job_id, view_row, &v);
    if (*rc == 0)
        o = v.attempt > 0 ? view_json(sd, &v, last_ckpt) : cJSON_CreateNull();
    if (*rc == 0 && v.attempt > 0 &&
        (*rc = straggler_view(sd, job_id, v.attempt, o)) < 0) {
        cJSON_Delete(o);
        o = NULL;
    }
    for (size_t i = 0; i < v.nranks; i++)
        free(v.ranks[i].node);
    free(v.ranks);
    return o;
}
