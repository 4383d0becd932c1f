/*
 * test_metrics.c - the Prometheus text format (scheduler/metrics.c)
 *
 * HELP and TYPE lines, escaping of label values and HELP text, values
 * (integers, fractions, infinities, NaN), and a histogram's cumulative
 * buckets with +Inf, _sum and _count. The whole scheduler output is
 * checked by promtool in t1010.
 */
#include <math.h>
#include <string.h>

#include "scheduler/metrics.h"
#include "tests/tap.h"

static void
test_family(void)
{
    struct sbuf out;

    sbuf_init(&out);
    metrics_family(&out, "lockstep_nodes", "gauge",
        "nodes by state\\ and a\nnewline");
    is_str(out.buf,
        "# HELP lockstep_nodes nodes by state\\\\ and a\\nnewline\n"
        "# TYPE lockstep_nodes gauge\n",
        "HELP escapes backslash and newline; TYPE follows");
    sbuf_release(&out);
}

static void
test_labels(void)
{
    struct metrics_label l[] = { { "state", "UP" },
        { "reason", "a \"quoted\" back\\slash\nnew line" }, { NULL, NULL } };
    struct sbuf out;

    sbuf_init(&out);
    metrics_sample(&out, "lockstep_x", l, 3);
    is_str(out.buf,
        "lockstep_x{state=\"UP\",reason=\"a \\\"quoted\\\" back\\\\slash"
        "\\nnew line\"} 3\n",
        "label values escape quote, backslash and newline");
    sbuf_reset(&out);
    metrics_sample(&out, "lockstep_y", NULL, 0.25);
    is_str(out.buf, "lockstep_y 0.25\n", "no labels: no braces");
    sbuf_reset(&out);
    metrics_sample(&out, "lockstep_y", l + 2, 7);
    is_str(out.buf, "lockstep_y 7\n", "an empty label list: no braces");
    sbuf_release(&out);
}

static void
test_values(void)
{
    struct sbuf out;

    sbuf_init(&out);
    metrics_value(&out, 42);
    sbuf_addch(&out, ' ');
    metrics_value(&out, -3);
    sbuf_addch(&out, ' ');
    metrics_value(&out, INFINITY);
    sbuf_addch(&out, ' ');
    metrics_value(&out, -INFINITY);
    sbuf_addch(&out, ' ');
    metrics_value(&out, NAN);
    sbuf_addch(&out, ' ');
    metrics_value(&out, 0.1);
    is_str(out.buf, "42 -3 +Inf -Inf NaN 0.1",
        "integers plain, infinities and NaN by name, fractions shortest");
    sbuf_release(&out);
}

static void
test_hist(void)
{
    static const double b[] = { 0.01, 0.1, 1 };
    struct metrics_label l[] = { { "route", "GET /v1/jobs/{id}" },
        { NULL, NULL } };
    struct metrics_hist h;
    struct sbuf out;

    metrics_hist_init(&h, b, 3);
    metrics_hist_observe(&h, 0.005);
    metrics_hist_observe(&h, 0.01); /* on the bound: le is inclusive */
    metrics_hist_observe(&h, 0.5);
    metrics_hist_observe(&h, 3);
    is_int((int)h.count, 4, "four observations");
    sbuf_init(&out);
    metrics_hist_write(&out, "lockstep_req_seconds", l, &h);
    is_str(out.buf,
        "lockstep_req_seconds_bucket{route=\"GET /v1/jobs/{id}\",le=\"0.01\"} "
        "2\n"
        "lockstep_req_seconds_bucket{route=\"GET /v1/jobs/{id}\",le=\"0.1\"} "
        "2\n"
        "lockstep_req_seconds_bucket{route=\"GET /v1/jobs/{id}\",le=\"1\"} 3\n"
        "lockstep_req_seconds_bucket{route=\"GET /v1/jobs/{id}\",le=\"+Inf\"} "
        "4\n"
        "lockstep_req_seconds_sum{route=\"GET /v1/jobs/{id}\"} 3.515\n"
        "lockstep_req_seconds_count{route=\"GET /v1/jobs/{id}\"} 4\n",
        "cumulative buckets, +Inf equal to the count, _sum and _count");
    sbuf_reset(&out);
    metrics_hist_init(&h, b, 3);
    metrics_hist_write(&out, "lockstep_empty_seconds", NULL, &h);
    ok(strstr(out.buf, "lockstep_empty_seconds_bucket{le=\"+Inf\"} 0\n") &&
            strstr(out.buf, "lockstep_empty_seconds_count 0\n") &&
            strstr(out.buf, "lockstep_empty_seconds_sum 0\n"),
        "an empty histogram without labels: le alone, zeros");
    ok(metrics_latency_nbounds <= METRICS_HIST_MAX, "the latency bounds fit");
    metrics_hist_init(&h, metrics_latency_bounds, 100);
    is_int((int)h.nbounds, METRICS_HIST_MAX, "more bounds are clamped");
    sbuf_release(&out);
}

int
main(void)
{
    plan(NO_PLAN);
    test_family();
    test_labels();
    test_values();
    test_hist();
    return done_testing();
}
