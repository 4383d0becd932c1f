/*
 * policy.h - what to do about a failure (pure decisions)
 *
 * docs/fault-tolerance.md §Recovery and §Blame. Every decision the
 * failure handling takes is a function here over plain values, so unit
 * tests (tests/unit/test_policy.c) check them without a loop, a database
 * or a clock: which budget a failure spends, whether the job is in a
 * crash loop (its own deterministic bug), how long to back off, which
 * rank hung, whether a node has been blamed often enough to exclude it,
 * and which nodes a restarting job keeps.
 *
 * Pure: no I/O, no clock, no globals. Strings are borrowed for the call.
 */
#ifndef SCHEDULER_POLICY_H
#define SCHEDULER_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The failure kinds, as the API and the database spell them. */
enum policy_kind {
    POLICY_KIND_RANK_EXIT,     /* a rank exited non-zero or by a signal */
    POLICY_KIND_NODE_LOST,     /* no agent status for node_timeout_ms */
    POLICY_KIND_HANG,          /* a rank made no progress in time */
    POLICY_KIND_NODE_EXCLUDED, /* the node left UP under the job */
    POLICY_KIND_LOST_RANKS,    /* the agent no longer holds the ranks */
    POLICY_KIND_LAUNCH_FAILED, /* a rank could not be started (its working
                                * directory, its command, its user) */
};
#define POLICY_KIND_COUNT 6

const char *policy_kind_str(enum policy_kind k);
int policy_kind_parse(const char *s, enum policy_kind *out);

/* The two restart budgets. */
enum policy_budget {
    POLICY_BUDGET_JOB,   /* max_restarts: the job's own failures */
    POLICY_BUDGET_INFRA, /* max_infra_restarts */
};

/* Scheduler-wide settings (docs/config.md). */
struct policy_config {
    int crash_loop_threshold; /* >= 2 */
    int64_t backoff_ms;       /* after the first failure */
    int64_t backoff_max_ms;   /* the cap; also "a run this long is not
                               * part of a loop" */
    int blame_threshold;      /* distinct jobs */
    int64_t blame_window_ms;
    uint64_t blame_hw_signals; /* bit n: signal n is the hardware's
                                * (blame_hardware_signals) */
};

/*
 * A rank exit is the job's own failure unless its node is suspect for
 * other reasons (it was fenced, lost, excluded), and a launch failure is
 * always the job's own; every other kind is the infrastructure's.
 */
enum policy_budget policy_classify(enum policy_kind kind, bool node_suspect);

/* ---- crash loops -------------------------------------------------------- */

/* A failure's signature. */
struct policy_sig {
    enum policy_kind kind;
    int rank;         /* -1: none */
    int64_t rel_step; /* last step minus the resumed step; -1
                       * when the rank reported no step */
    bool has_exit;    /* exit_code and signal are known */
    int exit_code;
    int signal;
};

/* An earlier failed attempt of the same job, as the crash-loop test needs
 * it: its own failure evidence, and rank_end, how the rank of the
 * *current* failure ended in that attempt (its own exit, at its own
 * relative step) when that is known. When every rank of a data-parallel
 * job crashes at the same step, which of them is reported first is a
 * race; so a past attempt repeats the failure when that rank failed the
 * same way there, or when its evidence is the same exit at the same
 * known relative step (any rank; without a step, the same rank). */
struct policy_past {
    int attempt;
    struct policy_sig failure; /* that attempt's own evidence */
    bool rank_known;
    struct policy_sig rank_end; /* kind unused */
    const char *const *nodes;   /* the nodes it ran on */
    size_t nnodes;
};

/*
 * Whether failure `now`, of an attempt that ran on nodes[0..nnodes), is a
 * crash loop: the same signature (kind, rank, relative step, exit code,
 * signal; see struct policy_past for how ranks compare) occurred on
 * `threshold` attempts in all (this one included),
 * and those attempts did not all run on the same set of nodes. Only rank
 * exits and hangs can loop; node loss, exclusion and lost ranks are never
 * the job's deterministic bug. matched[i] (room for npast, may be NULL)
 * is set for each past attempt that repeats the signature.
 */
bool policy_crash_loop(const struct policy_sig *now, const char *const *nodes,
    size_t nnodes, const struct policy_past *past, size_t npast, int threshold,
    bool *matched);

/* "rank 0 exited with code 1 at step 4 after its resume point" into buf. */
void policy_sig_str(const struct policy_sig *s, char *buf, size_t len);

/* ---- restart decision --------------------------------------------------- */

struct policy_budgets {
    int restarts; /* spent from max_restarts */
    int max_restarts;
    int infra_restarts; /* spent from max_infra_restarts */
    int max_infra_restarts;
};

enum policy_action {
    POLICY_RESTART,
    POLICY_FAIL_BUDGET,        /* the budget it would spend is spent */
    POLICY_FAIL_DETERMINISTIC, /* a crash loop */
    POLICY_FAIL_LAUNCH,        /* a rank could not be started: never
                                * retried */
};

struct policy_decision {
    enum policy_action action;
    enum policy_budget budget;
    int streak;         /* consecutive failures, this one included */
    int64_t backoff_ms; /* RESTART: delay before the next attempt */
};

/*
 * The consecutive-failure count after a failure: an attempt that made
 * progress (ran at least backoff_max_ms, or completed a checkpoint) starts
 * a new streak at 1, else the streak grows.
 */
int policy_streak(const struct policy_config *c, int prev, int64_t ran_ms,
    bool new_checkpoint);

/*
 * restart_backoff_ms × 2^(streak-1), capped at backoff_max_ms; the first
 * infrastructure failure of a streak restarts at once (a lost node is no
 * reason to wait; the replacement is ready).
 */
int64_t policy_backoff_ms(const struct policy_config *c, int streak,
    enum policy_budget budget);

/* Crash loop first (FAIL_DETERMINISTIC), then the budget of `budget`
 * (FAIL_BUDGET when spent), else RESTART with its backoff. */
void policy_decide(const struct policy_config *c, enum policy_budget budget,
    bool crash_loop, const struct policy_budgets *b, int streak,
    struct policy_decision *out);

/* ---- the recovery plan --------------------------------------------------- */

/* What recovery knows of a failed attempt when it decides. */
struct policy_plan_in {
    enum policy_kind kind;
    bool suspect; /* a rank exit on a suspect node */
    const struct policy_sig *sig;
    bool crash_loop;
    const int *matched; /* the earlier attempts that repeated it */
    size_t nmatched;
    int attempt;        /* the failed attempt's number */
    const char *reason; /* the failure, as a sentence */
    struct policy_budgets budgets;
    int prev_streak;
    int64_t ran_ms;      /* how long it ran before failing */
    bool new_checkpoint; /* it completed a checkpoint */
};

struct policy_plan {
    struct policy_decision d;
    char text[1024]; /* the job's new reason */
};

/*
 * The whole decision on a failed attempt: which budget it spends
 * (policy_classify), the streak and backoff, restart or fail
 * (policy_decide), and the sentence that becomes the job's reason:
 * "deterministic failure: <signature>, on attempts 1, 2 on different
 * nodes: ...", "<reason>; no restart left for <budget> (N of M used)" or
 * "attempt N failed: <reason>; restarting (restart K of M for <budget>,
 * after B ms of backoff)". The restart count in the text includes this
 * restart; the caller spends it. A launch failure is never restarted
 * (POLICY_FAIL_LAUNCH: a rank that cannot be started fails the same way
 * again, and a wrong path is no node's fault): "<reason>; not restarted
 * ...", its cause first.
 */
void policy_plan(const struct policy_config *c, const struct policy_plan_in *in,
    struct policy_plan *out);

/* ---- blame -------------------------------------------------------------- */

/*
 * docs/fault-tolerance.md §Blame. A failure whose evidence points at its
 * node is HARD blame: it counts at once. Anything else that named a node
 * is PROVISIONAL: recorded with the step the rank had reached, never
 * counted, until the job's next attempt on other nodes confirms it (gets
 * past that step) or it is withdrawn (the failure followed the job, or
 * the job ended without confirming it).
 */
enum policy_blame_class {
    POLICY_CLASS_NONE,        /* no node is blamed */
    POLICY_CLASS_PROVISIONAL, /* recorded, counted only once confirmed */
    POLICY_CLASS_HARD,        /* counted at once */
};

/* What the evidence says about the node, as policy_blame_class needs it. */
struct policy_blame_in {
    enum policy_kind kind;
    bool has_exit; /* signal is known */
    int signal;
    bool node_suspect; /* the node was lost or excluded already */
    /* A health finding is open on the node: the one place where the
     * node's own checks count as hard evidence (recovery.c's
     * node_has_finding sets it). */
    bool node_finding;
};

/*
 * The class of a failure's blame: HARD for a lost or fenced node, lost
 * ranks, an exclusion, a health finding on the node, a rank exit on a
 * node already lost or excluded, and a signal in blame_hw_signals (a
 * machine check's SIGBUS); PROVISIONAL for any other rank exit (a plain
 * non-zero exit, a user-side signal) and for a hang; NONE for a launch
 * failure.
 */
enum policy_blame_class policy_blame_class(const struct policy_config *c,
    const struct policy_blame_in *in);

/* The status of a blame row, as the database and the API spell it. */
enum policy_blame_status {
    POLICY_BLAME_CONFIRMED,   /* "confirmed": counts (a row from before
                               * statuses existed is one) */
    POLICY_BLAME_PROVISIONAL, /* "provisional": waiting for the job */
    POLICY_BLAME_WITHDRAWN,   /* "withdrawn": the job's own failure */
    POLICY_BLAME_RESET,       /* "reset": before an operator's uncordon;
                               * history only */
};
#define POLICY_BLAME_STATUS_COUNT 4

const char *policy_blame_status_str(enum policy_blame_status s);
int policy_blame_status_parse(const char *s, enum policy_blame_status *out);

/* One blame row of a node, as the count needs it. */
struct policy_blame {
    int64_t job_id;
    int64_t time_ms;
    enum policy_blame_status status;
    bool consequence; /* kind node_excluded: the exclusion's effect on a
                       * job, never evidence of its own */
};

/* Whether a row counts toward the exclusion: confirmed, and no mere
 * consequence of an exclusion. */
bool policy_blame_counts(const struct policy_blame *b);

/* How many distinct jobs blamed the node within the window ending at
 * now, counting only the rows that count (policy_blame_counts). */
size_t policy_blame_jobs(const struct policy_blame *v, size_t n, int64_t now,
    int64_t window_ms);
/* Whether that reaches blame_threshold: the node is to be excluded (or,
 * when it was excluded by blame, stays so). */
bool policy_blame_exceeds(const struct policy_config *c,
    const struct policy_blame *v, size_t n, int64_t now);

/* A provisional row, and what the job has done since. */
struct policy_blame_pending {
    int attempt;       /* the attempt that failed on the node */
    int64_t step;      /* the step its rank had reached; -1: none */
    bool job_live;     /* the job is not over */
    int next_attempt;  /* the job's latest attempt; 0: none */
    bool next_on_node; /* it runs (ran) on the blamed node */
    bool next_succeeded;
    int64_t next_step; /* the lowest step its reporting ranks reached;
                        * -1: none reported */
};

enum policy_blame_verdict {
    POLICY_SETTLE_KEEP,     /* still provisional */
    POLICY_SETTLE_CONFIRM,  /* the job got past the failure elsewhere */
    POLICY_SETTLE_WITHDRAW, /* the job ended without confirming it */
};

/*
 * What becomes of a provisional row. A later attempt that does not run
 * on the blamed node confirms it when every rank of it that reports
 * steps has passed the step the failure happened at (any step >= 0
 * passes a failure before the first step), or when it succeeds (a
 * finished job got past every point; its last reported step may lag, so
 * it is not compared). A later attempt on the blamed node itself that
 * does the same withdraws it (the node ran past the failure), as does
 * the end of the job without either. Withdrawal by a crash loop is
 * recovery's (policy_crash_loop).
 */
enum policy_blame_verdict policy_blame_settle(
    const struct policy_blame_pending *p);

/*
 * Parse blame_hardware_signals: names (SIGBUS or BUS) or numbers, split
 * by commas or spaces; "" is none. Returns 0, or -EINVAL with the first
 * word not understood copied to bad (bad_len bytes).
 */
int policy_signals_parse(const char *s, uint64_t *mask, char *bad,
    size_t bad_len);

/* ---- hangs and restart placement ---------------------------------------- */

/*
 * The hung rank, or -1 when no rank's idle_ms[i] passed its limit_ms[i]
 * (a negative idle: not watched). Once one did, the pick among all
 * watched ranks is the one furthest behind: the lowest step (when both
 * steps are known, >= 0), then the longest idle. Its peers block in the
 * next collective waiting for it, so their idle time grows too: the
 * straggler is the evidence and its node is blamed.
 */
long policy_hang_pick(const int64_t *idle_ms, const int64_t *step,
    const int64_t *limit_ms, size_t n);

/*
 * Whether a rank's stack dump (as agents report it: a first line "rank R
 * pid P state S wchan ...", from /proc) shows a process that cannot be
 * running its own code: stopped (T, t) or in uninterruptible sleep (D,
 * typically a driver or a dead filesystem). Such a rank is the better
 * culprit of a hang than peers merely waiting (S) in a collective.
 */
bool policy_dump_stuck(const char *dump);

/*
 * Which nodes of a failed attempt a restarting job keeps reserved:
 * keep[k] is set for node rank k when usable[k] (its node is UP) and it
 * is not the blamed node (NULL: none). Returns how many are kept.
 */
size_t policy_keep_nodes(const char *const *nodes, const bool *usable, size_t n,
    const char *blamed, bool *keep);

#endif
