/*
 * policy.c - failure classification, crash loops, backoff, blame (pure)
 *
 * The rules of docs/fault-tolerance.md as plain functions; lifecycle.c
 * and recovery.c gather the facts (from the model and the database) and
 * act on the answers. Keeping them here means one place decides, and the
 * unit tests can walk through every case without a cluster.
 */
#include "scheduler/policy.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/names.h"
#include "common/xalloc.h"

static const char *const policy_kind_names[POLICY_KIND_COUNT] = {
    [POLICY_KIND_RANK_EXIT] = "rank_exit",
    [POLICY_KIND_NODE_LOST] = "node_lost",
    [POLICY_KIND_HANG] = "hang",
    [POLICY_KIND_NODE_EXCLUDED] = "node_excluded",
    [POLICY_KIND_LOST_RANKS] = "lost_ranks",
    [POLICY_KIND_LAUNCH_FAILED] = "launch_failed",
};

const char *
policy_kind_str(enum policy_kind k)
{
    return names_str(policy_kind_names, POLICY_KIND_COUNT, k, "unknown");
}

int
policy_kind_parse(const char *s, enum policy_kind *out)
{
    int i = names_index(policy_kind_names, POLICY_KIND_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum policy_kind)i;
    return 0;
}

enum policy_budget
policy_classify(enum policy_kind kind, bool node_suspect)
{
    if ((kind == POLICY_KIND_RANK_EXIT && !node_suspect) ||
        kind == POLICY_KIND_LAUNCH_FAILED)
        return POLICY_BUDGET_JOB;
    return POLICY_BUDGET_INFRA;
}

/* ---- crash loops -------------------------------------------------------- */

static bool
sig_exit_equal(const struct policy_sig *a, const struct policy_sig *b)
{
    if (a->has_exit != b->has_exit)
        return false;
    return !a->has_exit ||
           (a->exit_code == b->exit_code && a->signal == b->signal);
}

/* Ranks match when equal, or - for a known step - whenever: every rank
 * of a data-parallel job runs the same code, and which of them is
 * reported first when all fail at the same step is a race. Without a step
 * there is less evidence, so the rank must match. */
static bool
rank_matches(const struct policy_sig *a, const struct policy_sig *b)
{
    return a->rank == b->rank || (a->rel_step >= 0 && b->rel_step >= 0);
}

/* Whether past attempt p shows the failure `now` again. */
static bool
past_repeats(const struct policy_sig *now, const struct policy_past *p)
{
    if (p->failure.kind != now->kind)
        return false;
    switch (now->kind) {
    case POLICY_KIND_RANK_EXIT:
        /* The same rank ended on its own there, the same way, at the same
         * distance from where that attempt resumed ... */
        if (p->rank_known && p->rank_end.has_exit &&
            sig_exit_equal(&p->rank_end, now) &&
            p->rank_end.rel_step == now->rel_step)
            return true;
        /* ... or that attempt's own evidence is the same failure. */
        return p->failure.has_exit && sig_exit_equal(&p->failure, now) &&
               p->failure.rel_step == now->rel_step &&
               rank_matches(&p->failure, now);
    case POLICY_KIND_HANG:
        return p->failure.rel_step == now->rel_step &&
               rank_matches(&p->failure, now);
    default:
        return false;
    }
}

static int
str_ptr_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names sorted (a new array of borrowed pointers; caller frees). */
static const char **
sorted_names(const char *const *v, size_t n)
{
    const char **s = xcalloc(n + 1, sizeof(*s));

    if (n)
        memcpy(s, v, n * sizeof(*s));
    qsort(s, n, sizeof(*s), str_ptr_cmp);
    return s;
}

static bool
same_node_set(const char **sorted, size_t n, const char *const *v, size_t m)
{
    const char **other;
    bool same = n == m;

    if (!same)
        return false;
    other = sorted_names(v, m);
    for (size_t i = 0; i < n && same; i++)
        same = strcmp(sorted[i], other[i]) == 0;
    free(other);
    return same;
}

bool
policy_crash_loop(const struct policy_sig *now, const char *const *nodes,
    size_t nnodes, const struct policy_past *past, size_t npast, int threshold,
    bool *matched)
{
    const char **mine;
    size_t count = 1;
    bool elsewhere = false;

    if (matched)
        memset(matched, 0, npast * sizeof(*matched));
    if (now->kind != POLICY_KIND_RANK_EXIT && now->kind != POLICY_KIND_HANG)
        return false;
    /* SIGKILL cannot be sent by a program's own bug: it comes from the
     * OOM killer, an operator or a fault injector. Random kills that
     * happened to hit the same rank on different nodes (likely when no
     * step is reported) must not end a healthy job as "deterministic". */
    if (now->kind == POLICY_KIND_RANK_EXIT && now->has_exit &&
        now->signal == SIGKILL)
        return false;
    mine = sorted_names(nodes, nnodes);
    for (size_t i = 0; i < npast; i++) {
        if (!past_repeats(now, &past[i]))
            continue;
        count++;
        if (matched)
            matched[i] = true;
        if (!same_node_set(mine, nnodes, past[i].nodes, past[i].nnodes))
            elsewhere = true;
    }
    free(mine);
    /* Seen often enough, and not tied to one set of machines: the same
     * failure followed the job from node to node. */
    return threshold >= 2 && count >= (size_t)threshold && elsewhere;
}

void
policy_sig_str(const struct policy_sig *s, char *buf, size_t len)
{
    size_t off = 0;

    if (s->kind == POLICY_KIND_HANG)
        off = (size_t)snprintf(buf, len, "rank %d hung", s->rank);
    else if (s->has_exit && s->signal != 0)
        off = (size_t)snprintf(buf, len, "rank %d killed by signal %d", s->rank,
            s->signal);
    else if (s->has_exit)
        off = (size_t)snprintf(buf, len, "rank %d exited with code %d", s->rank,
            s->exit_code);
    else
        off = (size_t)snprintf(buf, len, "rank %d failed (%s)", s->rank,
            policy_kind_str(s->kind));
    if (off >= len)
        return;
    if (s->rel_step >= 0)
        snprintf(buf + off, len - off,
            " at step %lld after its resume "
            "point",
            (long long)s->rel_step);
    else
        snprintf(buf + off, len - off, " before reporting any step");
}

/* ---- restart decision --------------------------------------------------- */

int
policy_streak(const struct policy_config *c, int prev, int64_t ran_ms,
    bool new_checkpoint)
{
    if (new_checkpoint || ran_ms >= c->backoff_max_ms || prev < 0)
        return 1;
    return prev + 1;
}

int64_t
policy_backoff_ms(const struct policy_config *c, int streak,
    enum policy_budget budget)
{
    int64_t d = c->backoff_ms;

    if (streak <= 1 && budget == POLICY_BUDGET_INFRA)
        return 0;
    for (int i = 1; i < streak && d < c->backoff_max_ms; i++)
        d *= 2;
    if (d > c->backoff_max_ms)
        d = c->backoff_max_ms;
    return d < 0 ? 0 : d;
}

void
policy_decide(const struct policy_config *c, enum policy_budget budget,
    bool crash_loop, const struct policy_budgets *b, int streak,
    struct policy_decision *out)
{
    bool spent;

    memset(out, 0, sizeof(*out));
    out->budget = budget;
    out->streak = streak;
    if (crash_loop) {
        out->action = POLICY_FAIL_DETERMINISTIC;
        return;
    }
    spent = budget == POLICY_BUDGET_JOB
                ? b->restarts >= b->max_restarts
                : b->infra_restarts >= b->max_infra_restarts;
    if (spent) {
        out->action = POLICY_FAIL_BUDGET;
        return;
    }
    out->action = POLICY_RESTART;
    out->backoff_ms = policy_backoff_ms(c, streak, budget);
}

/* ---- the recovery plan --------------------------------------------------- */

static const char *
budget_words(enum policy_budget b)
{
    return b == POLICY_BUDGET_JOB ? "the job's own failures"
                                  : "infrastructure failures";
}

static void
plan_text_deterministic(const struct policy_plan_in *in, char *text, size_t len)
{
    char sigbuf[160];
    size_t off;

    policy_sig_str(in->sig, sigbuf, sizeof(sigbuf));
    off = (size_t)snprintf(text, len,
        "deterministic failure: %s, on "
        "attempts",
        sigbuf);
    for (size_t i = 0; i < in->nmatched && off < len; i++)
        off += (size_t)snprintf(text + off, len - off, " %d,", in->matched[i]);
    if (off < len)
        snprintf(text + off, len - off,
            " %d on different nodes: the job's "
            "own bug, not restarted (the nodes are not blamed)",
            in->attempt);
}

void
policy_plan(const struct policy_config *c, const struct policy_plan_in *in,
    struct policy_plan *out)
{
    enum policy_budget budget = policy_classify(in->kind, in->suspect);
    const struct policy_budgets *b = &in->budgets;
    bool job = budget == POLICY_BUDGET_JOB;
    int used = job ? b->restarts : b->infra_restarts;
    int max = job ? b->max_restarts : b->max_infra_restarts;
    size_t n;

    memset(out, 0, sizeof(*out));
    policy_decide(c, budget, in->crash_loop, b,
        policy_streak(c, in->prev_streak, in->ran_ms, in->new_checkpoint),
        &out->d);
    if (in->kind == POLICY_KIND_LAUNCH_FAILED) {
        out->d.action = POLICY_FAIL_LAUNCH;
        out->d.backoff_ms = 0;
    }
    switch (out->d.action) {
    case POLICY_FAIL_LAUNCH:
        snprintf(out->text, sizeof(out->text),
            "%s; not restarted: a rank that cannot be started fails the same "
            "way again (no node is blamed)",
            in->reason);
        break;
    case POLICY_FAIL_DETERMINISTIC:
        plan_text_deterministic(in, out->text, sizeof(out->text));
        break;
    case POLICY_FAIL_BUDGET:
        snprintf(out->text, sizeof(out->text),
            "%s; no restart left for %s "
            "(%d of %d used)",
            in->reason, budget_words(budget), used, max);
        break;
    case POLICY_RESTART:
        n = (size_t)snprintf(out->text, sizeof(out->text),
            "attempt %d "
            "failed: %s; restarting (restart %d of %d for %s",
            in->attempt, in->reason, used + 1, max, budget_words(budget));
        if (n >= sizeof(out->text))
            break;
        if (out->d.backoff_ms > 0)
            snprintf(out->text + n, sizeof(out->text) - n,
                ", after %lld ms "
                "of backoff)",
                (long long)out->d.backoff_ms);
        else
            snprintf(out->text + n, sizeof(out->text) - n, ")");
        break;
    }
}

/* ---- blame -------------------------------------------------------------- */

enum policy_blame_class
policy_blame_class(const struct policy_config *c,
    const struct policy_blame_in *in)
{
    switch (in->kind) {
    case POLICY_KIND_NODE_LOST:
    case POLICY_KIND_LOST_RANKS:
    case POLICY_KIND_NODE_EXCLUDED:
        return POLICY_CLASS_HARD;
    case POLICY_KIND_LAUNCH_FAILED:
        return POLICY_CLASS_NONE;
    case POLICY_KIND_RANK_EXIT:
        if (in->node_suspect ||
            (in->has_exit && in->signal > 0 && in->signal < 64 &&
                (c->blame_hw_signals & (UINT64_C(1) << in->signal))))
            return POLICY_CLASS_HARD;
        break;
    case POLICY_KIND_HANG:
        break;
    }
    return in->node_finding ? POLICY_CLASS_HARD : POLICY_CLASS_PROVISIONAL;
}

static const char *const blame_status_names[POLICY_BLAME_STATUS_COUNT] = {
    [POLICY_BLAME_PROVISIONAL] = "provisional",
    [POLICY_BLAME_CONFIRMED] = "confirmed",
    [POLICY_BLAME_WITHDRAWN] = "withdrawn",
    [POLICY_BLAME_RESET] = "reset",
};

const char *
policy_blame_status_str(enum policy_blame_status s)
{
    return names_str(blame_status_names, POLICY_BLAME_STATUS_COUNT, s,
        "unknown");
}

int
policy_blame_status_parse(const char *s, enum policy_blame_status *out)
{
    int i = names_index(blame_status_names, POLICY_BLAME_STATUS_COUNT, s);

    if (i < 0)
        return i;
    *out = (enum policy_blame_status)i;
    return 0;
}

bool
policy_blame_counts(const struct policy_blame *b)
{
    return b->status == POLICY_BLAME_CONFIRMED && !b->consequence;
}

static int
int64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

    return (x > y) - (x < y);
}

size_t
policy_blame_jobs(const struct policy_blame *v, size_t n, int64_t now,
    int64_t window_ms)
{
    int64_t *ids = xcalloc(n + 1, sizeof(*ids));
    size_t m = 0, distinct = 0;

    for (size_t i = 0; i < n; i++) {
        if (policy_blame_counts(&v[i]) && v[i].time_ms >= now - window_ms &&
            v[i].time_ms <= now)
            ids[m++] = v[i].job_id;
    }
    qsort(ids, m, sizeof(*ids), int64_cmp);
    for (size_t i = 0; i < m; i++)
        distinct += i == 0 || ids[i] != ids[i - 1];
    free(ids);
    return distinct;
}

bool
policy_blame_exceeds(const struct policy_config *c,
    const struct policy_blame *v, size_t n, int64_t now)
{
    return c->blame_threshold > 0 &&
           policy_blame_jobs(v, n, now, c->blame_window_ms) >=
               (size_t)c->blame_threshold;
}

enum policy_blame_verdict
policy_blame_settle(const struct policy_blame_pending *p)
{
    bool past;

    if (p->next_attempt > p->attempt) {
        past = p->next_succeeded ||
               (p->next_step >= 0 && p->next_step > p->step);
        if (past)
            return p->next_on_node ? POLICY_SETTLE_WITHDRAW
                                   : POLICY_SETTLE_CONFIRM;
    }
    return p->job_live ? POLICY_SETTLE_KEEP : POLICY_SETTLE_WITHDRAW;
}

/* Signal names without "SIG", indexed by number (Linux). */
static const char *const signal_names[] = {
    [SIGHUP] = "HUP",
    [SIGINT] = "INT",
    [SIGQUIT] = "QUIT",
    [SIGILL] = "ILL",
    [SIGTRAP] = "TRAP",
    [SIGABRT] = "ABRT",
    [SIGBUS] = "BUS",
    [SIGFPE] = "FPE",
    [SIGKILL] = "KILL",
    [SIGUSR1] = "USR1",
    [SIGSEGV] = "SEGV",
    [SIGUSR2] = "USR2",
    [SIGPIPE] = "PIPE",
    [SIGALRM] = "ALRM",
    [SIGTERM] = "TERM",
    [SIGSYS] = "SYS",
    [SIGXCPU] = "XCPU",
    [SIGXFSZ] = "XFSZ",
};

/* One word of blame_hardware_signals as a signal number, or -1. */
static int
signal_word(const char *w)
{
    char *end;
    long n;

    if (strncasecmp(w, "SIG", 3) == 0)
        w += 3;
    for (size_t i = 0; i < sizeof(signal_names) / sizeof(*signal_names); i++) {
        if (signal_names[i] && strcasecmp(w, signal_names[i]) == 0)
            return (int)i;
    }
    errno = 0;
    n = strtol(w, &end, 10);
    if (*w == '\0' || *end != '\0' || errno || n < 1 || n > 63)
        return -1;
    return (int)n;
}

int
policy_signals_parse(const char *s, uint64_t *mask, char *bad, size_t bad_len)
{
    char *copy = xstrdup(s ? s : ""), *save = NULL, *w;
    int rc = 0;

    *mask = 0;
    for (w = strtok_r(copy, ", \t", &save); w && rc == 0;
         w = strtok_r(NULL, ", \t", &save)) {
        int sig = signal_word(w);

        if (sig < 0) {
            snprintf(bad, bad_len, "%s", w);
            rc = -EINVAL;
        } else {
            *mask |= UINT64_C(1) << sig;
        }
    }
    free(copy);
    return rc;
}

/* ---- hangs and restart placement ---------------------------------------- */

/* Whether rank a is further behind than rank b. */
static bool
hang_behind(const int64_t *idle, const int64_t *step, size_t a, size_t b)
{
    if (step && step[a] >= 0 && step[b] >= 0 && step[a] != step[b])
        return step[a] < step[b];
    return idle[a] > idle[b];
}

long
policy_hang_pick(const int64_t *idle_ms, const int64_t *step,
    const int64_t *limit_ms, size_t n)
{
    bool due = false;
    long best = -1;

    for (size_t i = 0; i < n && !due; i++)
        due = idle_ms[i] >= 0 && idle_ms[i] > limit_ms[i];
    if (!due)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (idle_ms[i] < 0)
            continue;
        if (best < 0 || hang_behind(idle_ms, step, i, (size_t)best))
            best = (long)i;
    }
    return best;
}

bool
policy_dump_stuck(const char *dump)
{
    const char *p, *eol;

    if (dump == NULL)
        return false;
    eol = strchr(dump, '\n');
    p = strstr(dump, " state ");
    if (p == NULL || (eol && p > eol))
        return false;
    p += strlen(" state ");
    return (*p == 'T' || *p == 't' || *p == 'D') &&
           (p[1] == ' ' || p[1] == '\n' || p[1] == '\0');
}

size_t
policy_keep_nodes(const char *const *nodes, const bool *usable, size_t n,
    const char *blamed, bool *keep)
{
    size_t kept = 0;

    for (size_t k = 0; k < n; k++) {
        keep[k] = usable[k] && nodes[k] &&
                  (blamed == NULL || strcmp(nodes[k], blamed) != 0);
        kept += keep[k];
    }
    return kept;
}
