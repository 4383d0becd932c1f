/*
 * straggler.c - stragglers from the ranks' timed sections (straggler.h)
 */
#include "scheduler/straggler.h"

#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/xalloc.h"
#include "scheduler/db.h"
#include "scheduler/nodes_health.h"
#include "scheduler/rankwin.h"

/* Node events looked at for an earlier raise of the same attempt. */
#define STRAGGLER_EVENTS_SCAN 200

static double
ratio_of(const struct schedd *sd)
{
    return sd->straggler_ratio >= 1.01 ? sd->straggler_ratio
                                       : RANKWIN_STRAGGLER_RATIO;
}

static int
windows_of(const struct schedd *sd)
{
    return sd->straggler_windows >= 1 ? sd->straggler_windows
                                      : RANKWIN_STRAGGLER_K;
}

/* ---- the rule over the stored windows ----------------------------------- */

/* One rank's section over the attempt's stored windows, newest first. */
struct sec_hist {
    int rank;
    char *node, *section;
    int64_t p50_us, p99_us, n, median_us; /* the newest window's */
    bool judged[RANKWIN_KEEP], slow[RANKWIN_KEEP];
    size_t nwin;
    /* The rule's verdict (sec_judge). */
    int nslow, njudged;
    bool straggling;
};

struct sec_eval {
    struct sec_hist *h;
    size_t n, cap;
};

static int
eval_row(const struct db_rank_section *r, void *arg)
{
    struct sec_eval *e = arg;
    struct sec_hist *h = NULL;

    for (size_t i = 0; i < e->n && h == NULL; i++)
        if (e->h[i].rank == r->rank && strcmp(e->h[i].section, r->section) == 0)
            h = &e->h[i];
    if (h == NULL) {
        if (e->n == e->cap) {
            e->cap = e->cap ? e->cap * 2 : 16;
            e->h = xreallocarray(e->h, e->cap, sizeof(*e->h));
        }
        h = &e->h[e->n++];
        memset(h, 0, sizeof(*h));
        h->rank = r->rank;
        h->node = xstrdup(r->node);
        h->section = xstrdup(r->section);
        h->p50_us = r->p50_us;
        h->p99_us = r->p99_us;
        h->n = r->n;
        h->median_us = r->median_us;
    }
    if (h->nwin < RANKWIN_KEEP) {
        h->judged[h->nwin] = r->median_us > 0;
        h->slow[h->nwin] = r->slow;
        h->nwin++;
    }
    return 0;
}

static void
eval_free(struct sec_eval *e)
{
    for (size_t i = 0; i < e->n; i++) {
        free(e->h[i].node);
        free(e->h[i].section);
    }
    free(e->h);
}

static double
hist_ratio(const struct sec_hist *h)
{
    return h->median_us > 0 ? (double)h->p50_us / (double)h->median_us : 0;
}

/* Read the attempt's rows and judge every rank's sections. */
static int
eval_load(struct schedd *sd, int64_t job_id, int attempt, struct sec_eval *e)
{
    int rc;

    memset(e, 0, sizeof(*e));
    rc = db_rank_sections_foreach(sd->db, job_id, attempt, eval_row, e);
    for (size_t i = 0; rc == 0 && i < e->n; i++) {
        struct sec_hist *h = &e->h[i];

        h->straggling = rankwin_straggling(h->judged, h->slow, h->nwin,
            windows_of(sd), &h->nslow, &h->njudged);
    }
    return rc;
}

/* The worst straggling section of node (highest ratio), or NULL. */
static const struct sec_hist *
eval_worst(const struct sec_eval *e, const char *node)
{
    const struct sec_hist *w = NULL;

    for (size_t i = 0; i < e->n; i++) {
        const struct sec_hist *h = &e->h[i];

        if (h->straggling && strcmp(h->node, node) == 0 &&
            (w == NULL || hist_ratio(h) > hist_ratio(w)))
            w = h;
    }
    return w;
}

/* The evidence of a straggling section. */
static cJSON *
hist_json(const struct sec_hist *h, bool full)
{
    cJSON *o = cJSON_CreateObject();

    jsonx_add_str(o, "node", h->node);
    jsonx_add_int(o, "rank", h->rank);
    jsonx_add_str(o, "section", h->section);
    jsonx_add_int(o, "p50_us", h->p50_us);
    if (full) {
        jsonx_add_int(o, "p99_us", h->p99_us);
        jsonx_add_int(o, "n", h->n);
    }
    jsonx_add_int(o, "median_us", h->median_us);
    cJSON_AddNumberToObject(o, "ratio",
        (double)(int64_t)(hist_ratio(h) * 1000 + 0.5) / 1000);
    jsonx_add_int(o, "slow_windows", h->nslow);
    jsonx_add_int(o, "judged_windows", h->njudged);
    if (full)
        cJSON_AddBoolToObject(o, "straggling", h->straggling);
    return o;
}

/* ---- raising ------------------------------------------------------------ */

struct seen_arg {
    int64_t job_id;
    int attempt;
    bool found;
};

static int
seen_event(const struct db_event *ev, void *arg)
{
    struct seen_arg *s = arg;
    cJSON *d;
    int64_t job = -1, attempt = -1;

    if (s->found || strcmp(ev->kind, "straggler") != 0)
        return 0;
    d = cJSON_Parse(ev->detail);
    if (jsonx_get_int(d, "job", true, 0, INT64_MAX, &job, NULL) == 0 &&
        jsonx_get_int(d, "attempt", true, 0, INT64_MAX, &attempt, NULL) == 0 &&
        job == s->job_id && attempt == s->attempt)
        s->found = true;
    cJSON_Delete(d);
    return 0;
}

/* Node p is SUSPECT: a soft finding "straggler" scoped to the job, which
 * excludes the node once it stands in straggler_jobs_exclude jobs. */
static int
raise_finding(struct schedd *sd, const struct attempt *a,
    const struct placement *p, const struct sec_hist *h)
{
    char scope[32];
    char *why;
    int rc;

    snprintf(scope, sizeof(scope), "job:%lld", (long long)a->job_id);
    why = xasprintf("job %lld attempt %d: rank %d spends %lld us per step in "
                    "section %s, %.2fx the job's median (%lld us), slow in "
                    "%d of %d windows",
        (long long)a->job_id, a->num, h->rank, (long long)h->p50_us, h->section,
        hist_ratio(h), (long long)h->median_us, h->nslow, h->njudged);
    rc = nodes_soft_finding(sd, p->node, "straggler", scope, why);
    free(why);
    return rc;
}

/* Raise node p (found a straggler by h) unless it was already for a. */
static int
raise_node(struct schedd *sd, struct attempt *a, const struct placement *p,
    const struct sec_hist *h)
{
    struct seen_arg seen = { .job_id = a->job_id, .attempt = a->num };
    char subject[PROTO_NODE_NAME_MAX + 8];
    cJSON *ev;
    int rc;

    schedd_subject_node(subject, sizeof(subject), p->node_name);
    rc = db_events_foreach(sd->db, subject, STRAGGLER_EVENTS_SCAN, seen_event,
        &seen);
    if (rc < 0 || seen.found)
        return schedd_db_check(sd, rc);
    ev = hist_json(h, false);
    jsonx_add_int(ev, "job", a->job_id);
    jsonx_add_int(ev, "attempt", a->num);
    jsonx_add_int(ev, "windows", h->nslow);
    cJSON_AddNumberToObject(ev, "straggler_ratio", ratio_of(sd));
    log_warn("job=%lld attempt=%d node %s is a straggler: rank %d spends "
             "%lld us per step in section %s, %.2fx the job's median (%lld "
             "us), slow in %d of %d windows",
        (long long)a->job_id, a->num, p->node_name, h->rank,
        (long long)h->p50_us, h->section, hist_ratio(h),
        (long long)h->median_us, h->nslow, h->njudged);
    rc = schedd_event(sd, SCHEDD_ACTOR, subject, "straggler", ev);
    return rc < 0 || p->node == NULL ? rc : raise_finding(sd, a, p, h);
}

/* Write one row per rank and section of the window. */
static int
write_rows(struct schedd *sd, struct attempt *a, int64_t window_ms)
{
    const struct rankwin *w = a->stats;
    int rc = 0;

    for (size_t i = 0; i < w->nranks && rc == 0; i++) {
        const struct rankwin_rank *r = &w->ranks[i];
        const struct placement *p = &a->placements[a->ranks[i].node_rank];

        for (size_t j = 0; j < r->nsec && rc == 0; j++) {
            const struct proto_section *s = &r->sec[j];
            struct db_rank_section row = { .job_id = a->job_id,
                .attempt = a->num,
                .rank = (int)i,
                .window_ms = window_ms,
                .node = p->node_name ? p->node_name : "",
                .section = s->name,
                .p50_us = s->p50_us,
                .p99_us = s->p99_us,
                .n = s->n,
                .median_us = rankwin_section_median(w, s->name) };

            row.slow = rankwin_is_straggler(s->p50_us, row.median_us,
                ratio_of(sd));
            rc = schedd_db_check(sd, db_rank_section_insert(sd->db, &row));
        }
    }
    return rc;
}

int
straggler_window(struct schedd *sd, struct attempt *a, int64_t window_ms)
{
    struct sec_eval e;
    bool any = false;
    int rc;

    for (size_t i = 0; i < a->stats->nranks && !any; i++)
        any = a->stats->ranks[i].nsec > 0;
    if (!any)
        return 0;
    if ((rc = write_rows(sd, a, window_ms)) < 0 ||
        (rc = schedd_db_check(sd,
             db_rank_sections_prune(sd->db, a->job_id, RANKWIN_KEEP))) < 0)
        return rc;
    rc = schedd_db_check(sd, eval_load(sd, a->job_id, a->num, &e));
    for (size_t k = 0; rc == 0 && k < (size_t)a->nnodes; k++) {
        const struct placement *p = &a->placements[k];
        const struct sec_hist *h;

        if (p->node_name == NULL || a->stats->straggler_raised[k] ||
            (h = eval_worst(&e, p->node_name)) == NULL)
            continue;
        a->stats->straggler_raised[k] = true;
        rc = raise_node(sd, a, p, h);
    }
    eval_free(&e);
    return rc;
}

/* ---- the view ----------------------------------------------------------- */

int
straggler_view(struct schedd *sd, int64_t job_id, int attempt, cJSON *o)
{
    cJSON *rule, *secs, *nodes;
    struct sec_eval e;
    int rc = eval_load(sd, job_id, attempt, &e);

    if (rc < 0) {
        eval_free(&e);
        return rc;
    }
    rule = cJSON_AddObjectToObject(o, "straggler_rule");
    cJSON_AddNumberToObject(rule, "ratio", ratio_of(sd));
    jsonx_add_int(rule, "windows", windows_of(sd));
    jsonx_add_int(rule, "of", RANKWIN_SLOW_M);
    secs = cJSON_AddArrayToObject(o, "sections");
    nodes = cJSON_AddArrayToObject(o, "stragglers");
    for (size_t i = 0; i < e.n; i++) {
        const struct sec_hist *h = &e.h[i];
        bool first = true;

        cJSON_AddItemToArray(secs, hist_json(h, true));
        /* A node once, with its worst section, where it first appears. */
        for (size_t j = 0; j < i && first; j++)
            first = strcmp(e.h[j].node, h->node) != 0;
        if (first && (h = eval_worst(&e, h->node)) != NULL)
            cJSON_AddItemToArray(nodes, hist_json(h, false));
    }
    eval_free(&e);
    return 0;
}
