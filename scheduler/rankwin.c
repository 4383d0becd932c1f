/*
 * rankwin.c - per-rank windows of step times and durations (rankwin.h)
 */
#include "scheduler/rankwin.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

static void
rank_clear_window(struct rankwin_rank *r)
{
    r->reported = false;
    r->step = -1;
    r->step_p50_us = 0;
    r->step_p99_us = 0;
    r->ngc_kept = 0;
    r->gc_count = 0;
    r->gc_max_ms = 0;
    r->ckpt_count = 0;
    r->ckpt_max_ms = 0;
    r->nsec = 0;
}

struct rankwin *
rankwin_create(size_t nranks, int64_t now)
{
    struct rankwin *w = xcalloc(1, sizeof(*w));

    w->nranks = nranks;
    w->ranks = xcalloc(nranks + 1, sizeof(*w->ranks));
    w->straggler_raised = xcalloc(nranks + 1, sizeof(*w->straggler_raised));
    for (size_t i = 0; i < nranks; i++) {
        rank_clear_window(&w->ranks[i]);
        w->ranks[i].gc_step = -1;
        w->ranks[i].ckpt_step = -1;
    }
    w->start_ms = now;
    return w;
}

void
rankwin_destroy(struct rankwin *w)
{
    if (w == NULL)
        return;
    free(w->ranks);
    free(w->straggler_raised);
    free(w);
}

static struct rankwin_rank *
rank_of(struct rankwin *w, int rank)
{
    return rank >= 0 && (size_t)rank < w->nranks ? &w->ranks[rank] : NULL;
}

void
rankwin_step(struct rankwin *w, int rank, int64_t step, int64_t p50_us,
    int64_t p99_us)
{
    struct rankwin_rank *r = rank_of(w, rank);

    if (r == NULL)
        return;
    if (step >= 0)
        r->step = step;
    if (p50_us > 0) {
        r->reported = true;
        r->step_p50_us = p50_us;
        r->step_p99_us = p99_us;
    }
}

bool
rankwin_ack(struct rankwin *w, int rank, uint64_t seq, bool gc, int64_t step,
    int64_t duration_ms)
{
    struct rankwin_rank *r = rank_of(w, rank);
    size_t n;

    if (r == NULL)
        return false;
    n = r->nseqs < RANKWIN_SEQS ? r->nseqs : RANKWIN_SEQS;
    for (size_t i = 0; i < n; i++)
        if (r->seqs[i] == seq)
            return false;
    r->seqs[r->nseqs++ % RANKWIN_SEQS] = seq;
    if (duration_ms < 0)
        duration_ms = 0;
    if (gc) {
        if (r->ngc_kept < RANKWIN_SAMPLES)
            r->gc_ms[r->ngc_kept++] = duration_ms;
        r->gc_count++;
        if (duration_ms > r->gc_max_ms)
            r->gc_max_ms = duration_ms;
        if (step > r->gc_step)
            r->gc_step = step;
    } else {
        r->ckpt_count++;
        if (duration_ms > r->ckpt_max_ms)
            r->ckpt_max_ms = duration_ms;
        if (step > r->ckpt_step)
            r->ckpt_step = step;
    }
    return true;
}

void
rankwin_sections(struct rankwin *w, int rank, const struct proto_section *sec,
    size_t n)
{
    struct rankwin_rank *r = rank_of(w, rank);

    if (r == NULL)
        return;
    r->nsec = 0;
    for (size_t i = 0; i < n && r->nsec < RANKWIN_SECTIONS; i++)
        if (proto_section_name_valid(sec[i].name) && sec[i].p50_us >= 0)
            r->sec[r->nsec++] = sec[i];
}

bool
rankwin_any(const struct rankwin *w)
{
    for (size_t i = 0; i < w->nranks; i++)
        if (w->ranks[i].reported || w->ranks[i].gc_count > 0 ||
            w->ranks[i].ckpt_count > 0)
            return true;
    return false;
}

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The nearest-rank median of v[0..n) (sorted in place): the
 * ceil(n/2)-th smallest. n > 0. */
static int64_t
median_of(int64_t *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_i64);
    return v[(n - 1) / 2];
}

int64_t
rankwin_median(const struct rankwin *w)
{
    int64_t *v = xcalloc(w->nranks + 1, sizeof(*v)), m = 0;
    size_t k = 0;

    for (size_t i = 0; i < w->nranks; i++)
        if (w->ranks[i].reported)
            v[k++] = w->ranks[i].step_p50_us;
    if (k >= 2)
        m = median_of(v, k);
    free(v);
    return m;
}

int64_t
rankwin_section_median(const struct rankwin *w, const char *name)
{
    int64_t *v = xcalloc(w->nranks + 1, sizeof(*v)), m = 0;
    size_t k = 0;

    for (size_t i = 0; i < w->nranks; i++)
        for (size_t j = 0; j < w->ranks[i].nsec; j++)
            if (strcmp(w->ranks[i].sec[j].name, name) == 0) {
                v[k++] = w->ranks[i].sec[j].p50_us;
                break;
            }
    if (k >= 2)
        m = median_of(v, k);
    free(v);
    return m;
}

void
rankwin_summarize(const struct rankwin *w, int rank, int64_t median,
    struct rankwin_summary *out)
{
    const struct rankwin_rank *r = &w->ranks[rank];
    int64_t gc[RANKWIN_SAMPLES];

    memset(out, 0, sizeof(*out));
    out->step = r->step;
    out->step_p50_us = r->step_p50_us;
    out->step_p99_us = r->step_p99_us;
    out->median_us = median;
    out->slow = r->reported && rankwin_is_slow(r->step_p50_us, median);
    out->gc_count = r->gc_count;
    out->gc_max_ms = r->gc_max_ms;
    if (r->ngc_kept > 0) {
        memcpy(gc, r->gc_ms, r->ngc_kept * sizeof(*gc));
        out->gc_p50_ms = median_of(gc, r->ngc_kept);
    }
    out->gc_step = r->gc_step;
    out->ckpt_count = r->ckpt_count;
    out->ckpt_max_ms = r->ckpt_max_ms;
    out->ckpt_step = r->ckpt_step;
}

void
rankwin_next(struct rankwin *w, int64_t now)
{
    for (size_t i = 0; i < w->nranks; i++)
        rank_clear_window(&w->ranks[i]);
    w->start_ms = now;
}

bool
rankwin_is_slow(int64_t p50_us, int64_t median_us)
{
    return median_us > 0 &&
           (double)p50_us > RANKWIN_SLOW_RATIO * (double)median_us;
}

bool
rankwin_persistent(const bool *judged, const bool *slow, size_t n, int *nslow,
    int *njudged)
{
    *nslow = 0;
    *njudged = 0;
    for (size_t i = 0; i < n && *njudged < RANKWIN_SLOW_M; i++) {
        if (!judged[i])
            continue;
        (*njudged)++;
        if (slow[i])
            (*nslow)++;
    }
    return *nslow >= RANKWIN_SLOW_K;
}

bool
rankwin_is_straggler(int64_t p50_us, int64_t median_us, double ratio)
{
    return median_us > 0 && (double)p50_us > ratio * (double)median_us;
}

bool
rankwin_straggling(const bool *judged, const bool *slow, size_t n, int k,
    int *nslow, int *njudged)
{
    rankwin_persistent(judged, slow, n, nslow, njudged);
    return *nslow >= k;
}
