/*
 * metrics.h - the Prometheus text exposition format (0.0.4), pure
 *
 * What GET /metrics writes, one family at a time: a family's `# HELP`
 * and `# TYPE` lines (metrics_family), then its samples (metrics_sample,
 * metrics_hist_write). Label values are escaped as the format says
 * (backslash, double quote and newline); HELP text escapes backslash
 * and newline. Numbers are written so Prometheus reads them back exactly
 * enough: integers as integers, others with %.17g, and +Inf/-Inf/NaN by
 * their names.
 *
 * A histogram (struct metrics_hist) keeps cumulative-at-write bucket
 * counts for fixed upper bounds plus the sum and count of every
 * observation; metrics_hist_write writes <name>_bucket{le=...} for each
 * bound and +Inf, then <name>_sum and <name>_count.
 *
 * Nothing here knows the scheduler: observe.c gathers the figures.
 * Links common/ only (the model layer).
 */
#ifndef SCHEDULER_METRICS_H
#define SCHEDULER_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "common/sbuf.h"

/* The most finite bucket bounds a histogram may have. */
#define METRICS_HIST_MAX 16

struct metrics_hist {
    const double *bounds; /* ascending upper bounds (seconds); borrowed */
    size_t nbounds;       /* <= METRICS_HIST_MAX */
    uint64_t counts[METRICS_HIST_MAX + 1]; /* per bucket; last: > max */
    double sum;
    uint64_t count;
};

/* Latency buckets, in seconds: 0.5 ms to 10 s. */
extern const double metrics_latency_bounds[];
extern const size_t metrics_latency_nbounds;

/* Zero h and give it bounds (nbounds is clamped to METRICS_HIST_MAX). */
void metrics_hist_init(struct metrics_hist *h, const double *bounds,
    size_t nbounds);
/* Count one observation of v (seconds). */
void metrics_hist_observe(struct metrics_hist *h, double v);

/* A label: name (a valid label name; not escaped) and value (any text;
 * escaped). An array of them ends at the first with name NULL; a NULL
 * array is no labels. */
struct metrics_label {
    const char *name;
    const char *value;
};

/* `# HELP name help` and `# TYPE name type` (type: counter, gauge,
 * histogram, ...). */
void metrics_family(struct sbuf *out, const char *name, const char *type,
    const char *help);
/* `name{labels} value`. */
void metrics_sample(struct sbuf *out, const char *name,
    const struct metrics_label *labels, double value);
/* The samples of histogram h, with labels added to each (le last). */
void metrics_hist_write(struct sbuf *out, const char *name,
    const struct metrics_label *labels, const struct metrics_hist *h);

/* Append s to out escaped as a label value (\\, \", \n). */
void metrics_escape_label(struct sbuf *out, const char *s);
/* Append s to out escaped as HELP text (\\, \n). */
void metrics_escape_help(struct sbuf *out, const char *s);
/* Append v as the format writes a value. */
void metrics_value(struct sbuf *out, double v);

#endif
