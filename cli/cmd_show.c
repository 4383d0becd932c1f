/*
 * cmd_show.c - lockstep show: a job, and what happened in each attempt
 *
 * The answer to "why did my job restart at 3 a.m.?": every attempt with
 * its nodes, its start and end, the reason it ended, which rank failed
 * with which exit code or signal, and the tail of that rank's stderr.
 */
#include "cli/cli.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeid.h"
#include "common/xalloc.h"

static const char *
sig_name(int64_t sig, char *buf, size_t len)
{
    const char *abbrev = sig > 0 && sig < NSIG ? sigabbrev_np((int)sig) : NULL;

    if (abbrev)
        snprintf(buf, len, "signal %lld (SIG%s)", (long long)sig, abbrev);
    else
        snprintf(buf, len, "signal %lld", (long long)sig);
    return buf;
}

/* The kind of the newest failure among the attempts ("hang"), or NULL. */
static const char *
latest_failure_kind(const cJSON *job)
{
    const cJSON *attempts = cJSON_GetObjectItemCaseSensitive(job, "attempts");
    const char *kind = NULL;
    const cJSON *a;

    cJSON_ArrayForEach(a, attempts) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, "failure");

        if (cJSON_IsObject(f) && *cli_jstr(f, "kind"))
            kind = cli_jstr(f, "kind");
    }
    return kind;
}

/* "rank 1, exit code 3" or "rank 1, killed by SIGKILL": how the rank that
 * failed the job ended. A rank that hung or was lost has no exit status:
 * then the failure's kind says what happened. */
static void
print_failure(const cJSON *job)
{
    int64_t rank = cli_jint(job, "failed_rank", -1);
    int64_t sig = cli_jint(job, "signal", 0);
    const char *kind;
    char buf[64];

    printf("  failure:     ");
    if (rank >= 0)
        printf("rank %lld, ", (long long)rank);
    if (!cli_jhas_num(job, "exit_code")) {
        kind = latest_failure_kind(job);
        printf("no exit status (%s)\n", kind ? kind : "unknown");
    } else if (sig > 0) {
        printf("killed by %s\n", sig_name(sig, buf, sizeof(buf)));
    } else {
        printf("exit code %lld\n", (long long)cli_jint(job, "exit_code", 0));
    }
}

static void
print_times(const char *label, int64_t ms, int64_t now)
{
    char when[64], age[32];

    if (ms <= 0) {
        printf("  %-12s -\n", label);
        return;
    }
    printf("  %-12s %s (%s ago)\n", label, cli_fmt_time(ms, when, sizeof(when)),
        cli_fmt_age(ms, now, age, sizeof(age)));
}

/* "+1.2s" from `from` to `to`, or "-" when either is unknown. */
static const char *
delta(int64_t from, int64_t to, char *buf, size_t len)
{
    char d[32];

    if (from <= 0 || to <= 0 || to < from) {
        snprintf(buf, len, "-");
        return buf;
    }
    snprintf(buf, len, "+%s", timeid_fmt_duration(to - from, d, sizeof(d)));
    return buf;
}

/* What failed an attempt, with the evidence the scheduler kept. */
static void
print_attempt_failure(const cJSON *a, const cJSON *next)
{
    const cJSON *f = cJSON_GetObjectItemCaseSensitive(a, "failure");
    const cJSON *dumps, *d;
    int64_t failed = cli_jint(a, "failed_ms", 0);
    char b1[32], b2[32], b3[32], sig[64];

    if (!cJSON_IsObject(f))
        return;
    printf("  failure:   %s", cli_jstr(f, "kind"));
    if (*cli_jstr(f, "node"))
        printf(" on %s", cli_jstr(f, "node"));
    if (cli_jhas_num(f, "rank") && cli_jint(f, "rank", -1) >= 0)
        printf(", rank %lld", (long long)cli_jint(f, "rank", -1));
    if (cli_jint(f, "signal", 0) > 0)
        printf(", killed by %s",
            sig_name(cli_jint(f, "signal", 0), sig, sizeof(sig)));
    else if (cli_jhas_num(f, "exit_code") && cli_jint(f, "exit_code", 0))
        printf(", exit code %lld", (long long)cli_jint(f, "exit_code", 0));
    if (cli_jhas_num(f, "last_step") && cli_jint(f, "last_step", -1) >= 0)
        printf(", last step %lld", (long long)cli_jint(f, "last_step", -1));
    printf("\n");
    if (cli_jint(f, "idle_ms", 0) > 0)
        printf("  watchdog:  no progress for %s (measured by %s)\n",
            timeid_fmt_duration(cli_jint(f, "idle_ms", 0), b1, sizeof(b1)),
            *cli_jstr(f, "source") ? cli_jstr(f, "source") : "-");
    printf("  blamed:    %s\n",
        *cli_jstr(f, "blamed") ? cli_jstr(f, "blamed") : "no node");
    printf("  recovery:  detected %s, released %s, next attempt running %s "
           "after the failure\n",
        delta(failed, cli_jint(a, "detected_ms", 0), b1, sizeof(b1)),
        delta(failed, cli_jint(a, "released_ms", 0), b2, sizeof(b2)),
        delta(failed, next ? cli_jint(next, "running_ms", 0) : 0, b3,
            sizeof(b3)));
    dumps = cJSON_GetObjectItemCaseSensitive(f, "dumps");
    cJSON_ArrayForEach(d, dumps) {
        printf("\n  stack dump of rank %lld:\n",
            (long long)cli_jint(d, "rank", 0));
        cli_print_indented(stdout, "    | ", cli_jstr(d, "dump"));
    }
}

/* An attempt's first lines: when it ran, why it ended, where it resumed. */
static void
print_attempt_times(const cJSON *a, int64_t now)
{
    int64_t start = cli_jint(a, "start_ms", 0), end = cli_jint(a, "end_ms", 0);
    const char *reason = cli_jstr(a, "reason");
    char t1[64], t2[64], dur[32];

    printf("\nattempt %lld  %s\n", (long long)cli_jint(a, "attempt", 0),
        cli_jstr(a, "state"));
    printf("  started:   %s\n", cli_fmt_time(start, t1, sizeof(t1)));
    if (end > 0)
        printf("  ended:     %s (ran %s)\n", cli_fmt_time(end, t2, sizeof(t2)),
            timeid_fmt_duration(start > 0 ? end - start : -1, dur,
                sizeof(dur)));
    else if (start > 0)
        printf("  running:   %s\n",
            timeid_fmt_duration(now - start, dur, sizeof(dur)));
    if (*reason)
        printf("  reason:    %s\n", reason);
    if (cli_jint(a, "resume_step", -1) >= 0)
        printf("  resumed:   from step %lld (%s)\n",
            (long long)cli_jint(a, "resume_step", -1),
            cli_jstr(a, "resume_from"));
    else
        printf("  resumed:   no (fresh start)\n");
}

/* "n1 (node rank 0, GPUs 0-3), n2 (...)" */
static void
print_attempt_nodes(const cJSON *nodes)
{
    const cJSON *it;

    if (cJSON_GetArraySize(nodes) <= 0)
        return;
    printf("  nodes:     ");
    cJSON_ArrayForEach(it, nodes) {
        char *gpus = cli_fmt_int_list(
            cJSON_GetObjectItemCaseSensitive(it, "gpus"), true);

        printf("%s%s (node rank %lld, GPUs %s)", it == nodes->child ? "" : ", ",
            cli_jstr(it, "node"), (long long)cli_jint(it, "node_rank", 0),
            gpus);
        free(gpus);
    }
    printf("\n");
}

/* A rank is called slow when its median step time is this much above the
 * median of every rank's (docs/cadence.md). */
#define SHOW_SLOW_RATIO 1.25

static int
cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

/* The median over the ranks of their median step time (us); 0 when fewer
 * than two ranks report one. */
static int64_t
ranks_step_median(const cJSON *ranks)
{
    int n = cJSON_GetArraySize(ranks), k = 0;
    int64_t *v = xcalloc((size_t)n + 1, sizeof(*v)), m = 0;
    const cJSON *it;

    cJSON_ArrayForEach(it, ranks) {
        if (cli_jint(it, "step_p50_us", 0) > 0)
            v[k++] = cli_jint(it, "step_p50_us", 0);
    }
    if (k >= 2) {
        qsort(v, (size_t)k, sizeof(*v), cmp_i64);
        m = v[k / 2];
    }
    free(v);
    return m;
}

/* The STEP and STEP TIME cells of a rank (the SDK's figures). */
static void
rank_step_cells(struct cli_table *t, const cJSON *it, int64_t median)
{
    int64_t p50 = cli_jint(it, "step_p50_us", 0);

    if (cli_jint(it, "step", -1) >= 0)
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "step", 0));
    else
        cli_table_cell(t, "-");
    if (p50 <= 0)
        cli_table_cell(t, "-");
    else
        cli_table_cell(t, "%.1f/%.1f ms%s", (double)p50 / 1000,
            (double)cli_jint(it, "step_p99_us", 0) / 1000,
            median > 0 && (double)p50 > SHOW_SLOW_RATIO * (double)median
                ? " slow"
                : "");
}

/* One row per rank: where it ran, how far it got and how it ended. */
static void
print_attempt_ranks(const cJSON *ranks)
{
    static const char *const headers[] = { "RANK", "NODE", "LOCAL", "STATE",
        "EXIT", "SIGNAL", "STEP", "STEP TIME p50/p99" };
    int64_t median = ranks_step_median(ranks);
    struct cli_table *t;
    const cJSON *it;
    char sig[64];

    if (cJSON_GetArraySize(ranks) <= 0)
        return;
    t = cli_table_create(headers, ARRAY_SIZE(headers));
    cJSON_ArrayForEach(it, ranks) {
        const char *state = cli_jstr(it, "state");
        bool exited = strcmp(state, "exited") == 0;
        int64_t s = cli_jint(it, "signal", 0);

        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "rank", 0));
        cli_table_cell(t, "%s", cli_jstr(it, "node"));
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "local_rank", 0));
        cli_table_cell(t, "%s", state);
        if (exited && s == 0 && cli_jhas_num(it, "exit_code"))
            cli_table_cell(t, "%lld", (long long)cli_jint(it, "exit_code", 0));
        else
            cli_table_cell(t, "-");
        cli_table_cell(t, "%s", s > 0 ? sig_name(s, sig, sizeof(sig)) : "-");
        rank_step_cells(t, it, median);
    }
    printf("\n");
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* The stderr of every rank that failed: usually one, the culprit. */
static void
print_failed_stderr(const cJSON *ranks)
{
    const cJSON *it;

    cJSON_ArrayForEach(it, ranks) {
        const char *tail = cli_jstr(it, "stderr_tail");
        bool failed = cli_jint(it, "exit_code", 0) != 0 ||
                      cli_jint(it, "signal", 0) != 0 ||
                      strcmp(cli_jstr(it, "state"), "lost") == 0;

        if (*tail && failed) {
            printf("\n  stderr of rank %lld (last lines):\n",
                (long long)cli_jint(it, "rank", 0));
            cli_print_indented(stdout, "    | ", tail);
        }
    }
}

/* next: the attempt after a (its start ends a's recovery), or NULL. */
static void
print_attempt(const cJSON *a, const cJSON *next, int64_t now)
{
    const cJSON *ranks = cJSON_GetObjectItemCaseSensitive(a, "ranks");

    print_attempt_times(a, now);
    print_attempt_failure(a, next);
    if (*cli_jstr(a, "master_addr"))
        printf("  master:    %s:%lld\n", cli_jstr(a, "master_addr"),
            (long long)cli_jint(a, "master_port", 0));
    print_attempt_nodes(cJSON_GetObjectItemCaseSensitive(a, "nodes"));
    print_attempt_ranks(ranks);
    print_failed_stderr(ranks);
}

/* The newest complete checkpoints the registry knows. */
static void
print_checkpoints(const cJSON *job)
{
    const cJSON *cks = cJSON_GetObjectItemCaseSensitive(job, "checkpoints");
    int n = cJSON_GetArraySize(cks), shown = 0;
    char when[64];

    if (n <= 0)
        return;
    printf("  complete:    %d checkpoint(s); newest:\n", n);
    for (int i = n - 1; i >= 0 && shown < 3; i--, shown++) {
        const cJSON *c = cJSON_GetArrayItem(cks, i);

        printf("               step %lld (attempt %lld, %s, %s)\n",
            (long long)cli_jint(c, "step", 0),
            (long long)cli_jint(c, "attempt", 0), cli_jstr(c, "source"),
            cli_fmt_time(cli_jint(c, "complete_ms", 0), when, sizeof(when)));
    }
}

/* The job's cadences, and the last step every rank collected garbage at
 * (the newest attempt's newest done gc directive). */
static void
print_cadence(const cJSON *job, const cJSON *attempts)
{
    struct proto_cadence gc = { cli_jint(job, "gc_every_s", 0),
        cli_jint(job, "gc_every_steps", 0) };
    struct proto_cadence ck = { cli_jint(job, "checkpoint_every_s", 0),
        cli_jint(job, "checkpoint_every_steps", 0) };
    const cJSON *last = cJSON_GetArrayItem(attempts,
        cJSON_GetArraySize(attempts) - 1);
    const cJSON *it;
    int64_t gc_step = -1;
    char g[32], c[32];

    if (!proto_cadence_set(&gc) && !proto_cadence_set(&ck))
        return;
    cJSON_ArrayForEach(it,
        cJSON_GetObjectItemCaseSensitive(last, "directives")) {
        if (strcmp(cli_jstr(it, "kind"), "gc") == 0 &&
            cli_jint(it, "done_ms", 0) > 0 &&
            cli_jint(it, "step", -1) > gc_step)
            gc_step = cli_jint(it, "step", -1);
    }
    printf("  cadence:     gc %s%s, checkpoint %s%s\n",
        proto_cadence_set(&gc) ? "every " : "",
        proto_cadence_format(&gc, g, sizeof(g)),
        proto_cadence_set(&ck) ? "every " : "",
        proto_cadence_format(&ck, c, sizeof(c)));
    if (gc_step >= 0)
        printf("               last gc of every rank at step %lld\n",
            (long long)gc_step);
}

/* One row per rank of the stored step statistics (rank_stats). */
static void
print_rank_stats_table(const cJSON *ranks)
{
    static const char *const headers[] = { "RANK", "NODE", "STEP",
        "STEP TIME p50/p99", "GC n p50/max", "CHECKPOINT n max", "SLOW" };
    struct cli_table *t = cli_table_create(headers, ARRAY_SIZE(headers));
    const cJSON *it;

    cJSON_ArrayForEach(it, ranks) {
        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "rank", 0));
        cli_table_cell(t, "%s", cli_jstr(it, "node"));
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "step", -1));
        if (cli_jint(it, "step_p50_us", 0) > 0)
            cli_table_cell(t, "%.1f/%.1f ms",
                (double)cli_jint(it, "step_p50_us", 0) / 1000,
                (double)cli_jint(it, "step_p99_us", 0) / 1000);
        else
            cli_table_cell(t, "-");
        cli_table_cell(t, "%lld %lld/%lld ms",
            (long long)cli_jint(it, "gc_count", 0),
            (long long)cli_jint(it, "gc_p50_ms", 0),
            (long long)cli_jint(it, "gc_max_ms", 0));
        cli_table_cell(t, "%lld %lld ms",
            (long long)cli_jint(it, "checkpoint_count", 0),
            (long long)cli_jint(it, "checkpoint_max_ms", 0));
        cli_table_cell(t, "%lld of %lld%s",
            (long long)cli_jint(it, "slow_windows", 0),
            (long long)cli_jint(it, "judged_windows", 0),
            cJSON_IsTrue(
                cJSON_GetObjectItemCaseSensitive(it, "persistently_slow"))
                ? " persistent"
                : "");
    }
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* The timed sections (rank_stats.sections) and the straggling nodes. */
static void
print_sections(const cJSON *st)
{
    static const char *const headers[] = { "RANK", "NODE", "SECTION",
        "TIME p50/p99", "MEDIAN", "RATIO", "SLOW" };
    const cJSON *secs = cJSON_GetObjectItemCaseSensitive(st, "sections");
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(st, "stragglers");
    struct cli_table *t;
    const cJSON *it;

    if (cJSON_GetArraySize(secs) == 0)
        return;
    cJSON_ArrayForEach(it, nodes) {
        printf("               straggler: node %s, rank %lld, section %s: "
               "%.1f ms per step, %.2fx the median %.1f ms (slow in %lld of "
               "the last %lld windows)\n",
            cli_jstr(it, "node"), (long long)cli_jint(it, "rank", 0),
            cli_jstr(it, "section"), (double)cli_jint(it, "p50_us", 0) / 1000,
            cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(it, "ratio")),
            (double)cli_jint(it, "median_us", 0) / 1000,
            (long long)cli_jint(it, "slow_windows", 0),
            (long long)cli_jint(it, "judged_windows", 0));
    }
    if (cJSON_GetArraySize(nodes) == 0)
        printf("               stragglers: none\n");
    t = cli_table_create(headers, ARRAY_SIZE(headers));
    cJSON_ArrayForEach(it, secs) {
        cli_table_row(t);
        cli_table_cell(t, "%lld", (long long)cli_jint(it, "rank", 0));
        cli_table_cell(t, "%s", cli_jstr(it, "node"));
        cli_table_cell(t, "%s", cli_jstr(it, "section"));
        cli_table_cell(t, "%.1f/%.1f ms",
            (double)cli_jint(it, "p50_us", 0) / 1000,
            (double)cli_jint(it, "p99_us", 0) / 1000);
        cli_table_cell(t, "%.1f ms",
            (double)cli_jint(it, "median_us", 0) / 1000);
        cli_table_cell(t, "%.2f",
            cJSON_GetNumberValue(
                cJSON_GetObjectItemCaseSensitive(it, "ratio")));
        cli_table_cell(t, "%lld of %lld%s",
            (long long)cli_jint(it, "slow_windows", 0),
            (long long)cli_jint(it, "judged_windows", 0),
            cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(it, "straggling"))
                ? " straggler"
                : "");
    }
    cli_table_print(t, stdout, 2);
    cli_table_destroy(t);
}

/* The stored per-rank statistics (the newest attempt that has some):
 * kept by the scheduler once per window, so shown also after the attempt
 * ended and after a restart. */
static void
print_rank_stats(const cJSON *job)
{
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(job, "rank_stats");
    const cJSON *slow = cJSON_GetObjectItemCaseSensitive(st, "slow_ranks");
    const cJSON *it;
    char w[32];

    if (!cJSON_IsObject(st))
        return;
    printf("  step stats:  attempt %lld, last %lld window(s) of %s; median "
           "step time %.1f ms\n",
        (long long)cli_jint(st, "attempt", 0),
        (long long)cli_jint(st, "windows", 0),
        timeid_fmt_duration(cli_jint(st, "window_ms", 0), w, sizeof(w)),
        (double)cli_jint(st, "median_step_p50_us", 0) / 1000);
    if (cli_jhas_num(st, "last_gc_step"))
        printf("               last gc of every rank at step %lld\n",
            (long long)cli_jint(st, "last_gc_step", -1));
    if (cli_jhas_num(st, "last_checkpoint_step"))
        printf("               last complete checkpoint at step %lld\n",
            (long long)cli_jint(st, "last_checkpoint_step", -1));
    cJSON_ArrayForEach(it, slow) {
        printf("               persistently slow: rank %lld on %s (slow in "
               "%lld of the last %lld windows)\n",
            (long long)cli_jint(it, "rank", 0), cli_jstr(it, "node"),
            (long long)cli_jint(it, "slow_windows", 0),
            (long long)cli_jint(it, "judged_windows", 0));
    }
    if (cJSON_GetArraySize(slow) == 0)
        printf("               persistently slow: none\n");
    print_rank_stats_table(cJSON_GetObjectItemCaseSensitive(st, "ranks"));
    print_sections(st);
}

/* Effective training time ratio and where the rest went. */
static void
print_goodput(const cJSON *job)
{
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(job, "goodput");
    const cJSON *ettr;
    char w[32], p[32], l[32], r[32];

    if (!cJSON_IsObject(g) || cli_jint(g, "wall_ms", 0) <= 0)
        return;
    ettr = cJSON_GetObjectItemCaseSensitive(g, "ettr");
    printf("  goodput:     ETTR %.3f: productive %s, lost %s, recovery %s "
           "of %s wall-clock (x%lld ranks)\n",
        cJSON_IsNumber(ettr) ? ettr->valuedouble : 0.0,
        timeid_fmt_duration(cli_jint(g, "productive_ms", 0), p, sizeof(p)),
        timeid_fmt_duration(cli_jint(g, "lost_ms", 0), l, sizeof(l)),
        timeid_fmt_duration(cli_jint(g, "recovery_ms", 0), r, sizeof(r)),
        timeid_fmt_duration(cli_jint(g, "wall_ms", 0), w, sizeof(w)),
        (long long)cli_jint(g, "world_size", 0));
}

/* The names of the variables the job took along (the values are in
 * --json, for the job's owner), wrapped under the label. */
static void
print_env(const cJSON *env)
{
    const cJSON *it;
    size_t col = 15, n = cJSON_GetArraySize(env);

    printf("  env:         ");
    if (!cJSON_IsObject(env) || n == 0) {
        printf("-\n");
        return;
    }
    col += (size_t)printf("%zu variable%s:", n, n == 1 ? "" : "s");
    cJSON_ArrayForEach(it, env) {
        size_t len = strlen(it->string) + 1;

        if (col + len > 78) {
            printf("\n              ");
            col = 15;
        }
        printf(" %s", it->string);
        col += len;
    }
    printf("\n");
}

/* What attempt 1 continued from (--resume-from), when anything. */
static void
print_resume(const cJSON *job)
{
    const char *from = cli_jstr(job, "resume_from");
    int64_t step = cli_jint(job, "resume_from_step", -1);
    int64_t src = cli_jint(job, "resume_from_job", 0);

    if (*from == '\0')
        return;
    printf("  resumes:     %s", from);
    if (step >= 0)
        printf(" (step %lld", (long long)step);
    else
        printf(" (step unknown");
    if (src > 0)
        printf(", job %lld's latest", (long long)src);
    printf(") until this job has a checkpoint of its own\n");
}

static void
print_job(const cJSON *job, const char *name)
{
    const cJSON *attempts = cJSON_GetObjectItemCaseSensitive(job, "attempts");
    const cJSON *env = cJSON_GetObjectItemCaseSensitive(job, "env");
    const char *reason = cli_jstr(job, "reason");
    const char *ckpt = cli_jstr(job, "checkpoint_dir");
    const char *tail = cli_jstr(job, "stderr_tail");
    int64_t now = timeid_now_ms();
    int64_t mem = cli_jint(job, "memory_mb_per_node", 0);
    int64_t nodes = cli_jint(job, "nodes", 0);
    int64_t rpn = cli_jint(job, "ranks_per_node", 0);
    int64_t nattempts = cJSON_GetArraySize(attempts);
    char *cmdline = cli_fmt_argv(cJSON_GetObjectItemCaseSensitive(job, "argv"));
    char membuf[32];
    const cJSON *a;

    printf("job %lld  %s  %s\n", (long long)cli_jint(job, "id", 0),
        cli_jstr(job, "name"), cli_jstr(job, "state"));
    if (*reason)
        printf("  reason:      %s\n", reason);
    printf("  user:        %s\n", cli_jstr(job, "user"));
    printf("  command:     %s\n", cmdline);
    printf("  workdir:     %s\n", cli_jstr(job, "workdir"));
    printf("  shape:       %lld node(s) × %lld rank(s) (world size %lld)\n",
        (long long)nodes, (long long)rpn, (long long)(nodes * rpn));
    printf("  resources:   per node %lld GPU(s) and %s memory; per rank %lld "
           "CPU(s)\n",
        (long long)cli_jint(job, "gpus_per_node", 0),
        mem > 0 ? cli_fmt_mb(mem, membuf, sizeof(membuf)) : "any",
        (long long)cli_jint(job, "cpus_per_rank", 0));
    printf("  priority:    %lld\n", (long long)cli_jint(job, "priority", 0));
    if (cli_jhas_num(job, "restarts"))
        printf("  restarts:    %lld of %lld for the job's own failures, "
               "%lld of %lld for infrastructure\n",
            (long long)cli_jint(job, "restarts", 0),
            (long long)cli_jint(job, "max_restarts", 0),
            (long long)cli_jint(job, "infra_restarts", 0),
            (long long)cli_jint(job, "max_infra_restarts", 0));
    else
        printf("  restarts:    %lld used of %lld allowed\n",
            (long long)(nattempts > 1 ? nattempts - 1 : 0),
            (long long)cli_jint(job, "max_restarts", 0));
    if (cli_jint(job, "hang_timeout_s", 0) > 0)
        printf("  watchdog:    restart after %llds without progress\n",
            (long long)cli_jint(job, "hang_timeout_s", 0));
    else
        printf("  watchdog:    off\n");
    print_cadence(job, attempts);
    printf("  checkpoints: %s\n", *ckpt ? ckpt : "-");
    print_resume(job);
    print_checkpoints(job);
    print_rank_stats(job);
    print_goodput(job);
    print_env(env);
    print_times("submitted:", cli_jint(job, "submit_ms", 0), now);
    print_times("started:", cli_jint(job, "start_ms", 0), now);
    print_times("ended:", cli_jint(job, "end_ms", 0), now);
    if (cli_jhas_num(job, "failed_rank") || cli_jint(job, "exit_code", 0) ||
        cli_jint(job, "signal", 0))
        print_failure(job);
    if (*tail) {
        printf("  stderr (last lines):\n");
        cli_print_indented(stdout, "    | ", tail);
    }
    cJSON_ArrayForEach(a, attempts)
        print_attempt(a, a->next, now);
    free(cmdline);
}

const struct cli_cmd cli_cmd_show = {
    .name = "show",
    .summary = "show a job and each of its attempts",
    CLI_ONE_JOB,
    CLI_GET("show JOB", "/v1/jobs", print_job),
};
