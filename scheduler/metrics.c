/*
 * metrics.c - the Prometheus text exposition format (metrics.h)
 */
#include "scheduler/metrics.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const double metrics_latency_bounds[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
const size_t metrics_latency_nbounds = sizeof(metrics_latency_bounds) /
                                       sizeof(metrics_latency_bounds[0]);

void
metrics_hist_init(struct metrics_hist *h, const double *bounds, size_t nbounds)
{
    memset(h, 0, sizeof(*h));
    h->bounds = bounds;
    h->nbounds = nbounds < METRICS_HIST_MAX ? nbounds : METRICS_HIST_MAX;
}

void
metrics_hist_observe(struct metrics_hist *h, double v)
{
    size_t i = 0;

    while (i < h->nbounds && v > h->bounds[i])
        i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

void
metrics_escape_label(struct sbuf *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            sbuf_addstr(out, "\\\\");
        else if (*s == '"')
            sbuf_addstr(out, "\\\"");
        else if (*s == '\n')
            sbuf_addstr(out, "\\n");
        else
            sbuf_addch(out, *s);
    }
}

void
metrics_escape_help(struct sbuf *out, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '\\')
            sbuf_addstr(out, "\\\\");
        else if (*s == '\n')
            sbuf_addstr(out, "\\n");
        else
            sbuf_addch(out, *s);
    }
}

/* The shortest of %.15g, %.16g, %.17g that reads back as v. */
static void
metrics_shortest(struct sbuf *out, double v)
{
    char buf[40];

    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, v);
        if (strtod(buf, NULL) == v || prec == 17)
            break;
    }
    sbuf_addstr(out, buf);
}

void
metrics_value(struct sbuf *out, double v)
{
    if (isnan(v))
        sbuf_addstr(out, "NaN");
    else if (isinf(v))
        sbuf_addstr(out, v > 0 ? "+Inf" : "-Inf");
    else if (v == floor(v) && fabs(v) < 1e15)
        sbuf_addf(out, "%lld", (long long)v);
    else
        metrics_shortest(out, v);
}

void
metrics_family(struct sbuf *out, const char *name, const char *type,
    const char *help)
{
    sbuf_addf(out, "# HELP %s ", name);
    metrics_escape_help(out, help);
    sbuf_addf(out, "\n# TYPE %s %s\n", name, type);
}

/* name{labels[,extra="value"]} with extra == NULL for none. */
static void
metrics_head(struct sbuf *out, const char *name,
    const struct metrics_label *labels, const char *extra, const char *value)
{
    bool any = false;

    sbuf_addstr(out, name);
    for (size_t i = 0; labels && labels[i].name; i++) {
        sbuf_addstr(out, any ? "," : "{");
        sbuf_addf(out, "%s=\"", labels[i].name);
        metrics_escape_label(out, labels[i].value);
        sbuf_addch(out, '"');
        any = true;
    }
    if (extra) {
        sbuf_addstr(out, any ? "," : "{");
        sbuf_addf(out, "%s=\"", extra);
        metrics_escape_label(out, value);
        sbuf_addch(out, '"');
        any = true;
    }
    if (any)
        sbuf_addch(out, '}');
    sbuf_addch(out, ' ');
}

void
metrics_sample(struct sbuf *out, const char *name,
    const struct metrics_label *labels, double value)
{
    metrics_head(out, name, labels, NULL, NULL);
    metrics_value(out, value);
    sbuf_addch(out, '\n');
}

void
metrics_hist_write(struct sbuf *out, const char *name,
    const struct metrics_label *labels, const struct metrics_hist *h)
{
    struct sbuf n, le;
    uint64_t cum = 0;

    sbuf_init(&n);
    sbuf_init(&le);
    sbuf_addf(&n, "%s_bucket", name);
    for (size_t i = 0; i <= h->nbounds; i++) {
        cum += h->counts[i];
        sbuf_reset(&le);
        if (i < h->nbounds)
            metrics_value(&le, h->bounds[i]);
        else
            sbuf_addstr(&le, "+Inf");
        metrics_head(out, n.buf, labels, "le", le.buf);
        sbuf_addf(out, "%llu\n", (unsigned long long)cum);
    }
    sbuf_reset(&n);
    sbuf_addf(&n, "%s_sum", name);
    metrics_sample(out, n.buf, labels, h->sum);
    sbuf_reset(&n);
    sbuf_addf(&n, "%s_count", name);
    metrics_head(out, n.buf, labels, NULL, NULL);
    sbuf_addf(out, "%llu\n", (unsigned long long)h->count);
    sbuf_release(&n);
    sbuf_release(&le);
}
