/*
 * test_policy.c - the failure decisions of scheduler/policy.c
 *
 * Pure functions over plain values: which budget a failure spends, crash
 * loops (same failure on different nodes), backoff, the restart decision,
 * blame thresholds, which rank hung, and which nodes a restart keeps.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/policy.h"
#include "tests/tap.h"

static const struct policy_config cfg = {
    .crash_loop_threshold = 2,
    .backoff_ms = 500,
    .backoff_max_ms = 60000,
    .blame_threshold = 3,
    .blame_window_ms = 3600000,
};

static void
test_kinds(void)
{
    enum policy_kind k;

    for (int i = 0; i < POLICY_KIND_COUNT; i++) {
        ok(policy_kind_parse(policy_kind_str((enum policy_kind)i), &k) == 0 &&
                k == (enum policy_kind)i,
            "kind %s round-trips", policy_kind_str((enum policy_kind)i));
    }
    ok(policy_kind_parse("bogus", &k) < 0, "an unknown kind is refused");
    is_str(policy_kind_str(POLICY_KIND_NODE_LOST), "node_lost",
        "the API's word");
}

static void
test_classify(void)
{
    static const struct {
        enum policy_kind kind;
        bool suspect; /* the node is suspect for other reasons */
        enum policy_budget want;
        const char *name;
    } cases[] = {
        { POLICY_KIND_RANK_EXIT, false, POLICY_BUDGET_JOB,
            "a rank exit is the job's own failure" },
        { POLICY_KIND_RANK_EXIT, true, POLICY_BUDGET_INFRA,
            "... unless its node is suspect for other reasons" },
        { POLICY_KIND_NODE_LOST, false, POLICY_BUDGET_INFRA,
            "node loss is the infrastructure's" },
        { POLICY_KIND_HANG, false, POLICY_BUDGET_INFRA,
            "a hang is the infrastructure's" },
        { POLICY_KIND_NODE_EXCLUDED, false, POLICY_BUDGET_INFRA,
            "an exclusion is the infrastructure's" },
        { POLICY_KIND_LOST_RANKS, false, POLICY_BUDGET_INFRA,
            "lost ranks are the infrastructure's" },
        { POLICY_KIND_LAUNCH_FAILED, true, POLICY_BUDGET_JOB,
            "a launch failure is the job's own, whatever the node" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++)
        ok(policy_classify(cases[i].kind, cases[i].suspect) == cases[i].want,
            "%s", cases[i].name);
}

static struct policy_sig
exit_sig(int rank, int64_t rel, int code, int sig)
{
    struct policy_sig s = {
        .kind = POLICY_KIND_RANK_EXIT,
        .rank = rank,
        .rel_step = rel,
        .has_exit = true,
        .exit_code = code,
        .signal = sig,
    };

    return s;
}

static void
test_crash_loop(void)
{
    static const char *const ab[] = { "a", "b" };
    static const char *const ba[] = { "b", "a" };
    static const char *const bc[] = { "b", "c" };
    static const char *const cd[] = { "c", "d" };
    struct policy_sig now = exit_sig(0, 4, 1, 0);
    struct policy_past past[2];
    bool matched[2];

    memset(past, 0, sizeof(past));
    past[0].attempt = 1;
    past[0].failure = exit_sig(2, 4, 1, 0);
    past[0].nodes = ab;
    past[0].nnodes = 2;
    ok(!policy_crash_loop(&now, ab, 2, past, 0, 2, NULL),
        "a first failure is never a loop");
    ok(policy_crash_loop(&now, bc, 2, past, 1, 2, matched),
        "same exit at the same step on other nodes: a loop");
    ok(matched[0], "attempt 1 is named as a repeat");
    ok(!policy_crash_loop(&now, ba, 2, past, 1, 2, NULL),
        "the same failure on the same set of nodes is not (maybe the "
        "nodes)");
    ok(!policy_crash_loop(&now, bc, 2, past, 1, 3, NULL),
        "below the threshold it is not");

    past[0].failure = exit_sig(2, 5, 1, 0);
    ok(!policy_crash_loop(&now, bc, 2, past, 1, 2, NULL),
        "another step is another failure");
    {
        struct policy_sig killed = exit_sig(0, -1, -1, 9);
        struct policy_past kp = past[0];

        kp.failure = exit_sig(0, -1, -1, 9);
        ok(!policy_crash_loop(&killed, bc, 2, &kp, 1, 2, NULL),
            "SIGKILL on the same rank on other nodes is not a loop: it "
            "comes from outside the program (OOM killer, operator)");
        killed.signal = 11;
        kp.failure.signal = 11;
        ok(policy_crash_loop(&killed, bc, 2, &kp, 1, 2, NULL),
            "SIGSEGV on the same rank on other nodes is");
    }
    past[0].failure = exit_sig(2, 4, 2, 0);
    ok(!policy_crash_loop(&now, bc, 2, past, 1, 2, NULL),
        "another exit code is another failure");
    past[0].failure = exit_sig(0, 4, 0, 9);
    ok(!policy_crash_loop(&now, bc, 2, past, 1, 2, NULL),
        "a signal is not an exit code");

    /* Without a step the rank must match. */
    now = exit_sig(1, -1, 3, 0);
    past[0].failure = exit_sig(0, -1, 3, 0);
    ok(!policy_crash_loop(&now, bc, 2, past, 1, 2, NULL),
        "no step: a different rank is a different failure");
    past[0].failure = exit_sig(1, -1, 3, 0);
    ok(policy_crash_loop(&now, bc, 2, past, 1, 2, NULL),
        "no step: the same rank and code elsewhere is a loop");

    /* How the current rank ended in the earlier attempt counts too. */
    now = exit_sig(3, -1, 1, 0);
    past[0].failure = exit_sig(0, -1, 1, 0);
    past[0].rank_known = true;
    past[0].rank_end = exit_sig(3, -1, 1, 0);
    ok(policy_crash_loop(&now, cd, 2, past, 1, 2, NULL),
        "rank 3 also exited 1 there: a loop even though rank 0 was "
        "reported first");
    past[0].rank_end = exit_sig(3, -1, 0, 15);
    ok(!policy_crash_loop(&now, cd, 2, past, 1, 2, NULL),
        "rank 3 was torn down there (SIGTERM): no evidence");

    /* Hangs and infrastructure kinds. */
    now.kind = POLICY_KIND_HANG;
    now.rank = 1;
    now.rel_step = 7;
    past[0].rank_known = false;
    past[0].failure.kind = POLICY_KIND_HANG;
    past[0].failure.rank = 2;
    past[0].failure.rel_step = 7;
    ok(policy_crash_loop(&now, cd, 2, past, 1, 2, NULL),
        "a hang at the same step elsewhere is a loop");
    now.kind = POLICY_KIND_NODE_LOST;
    past[0].failure.kind = POLICY_KIND_NODE_LOST;
    ok(!policy_crash_loop(&now, cd, 2, past, 1, 2, NULL), "node loss never is");

    /* Threshold 3 needs two repeats. */
    now = exit_sig(0, 4, 1, 0);
    past[0].failure = exit_sig(0, 4, 1, 0);
    past[0].rank_known = false;
    past[1] = past[0];
    past[1].attempt = 2;
    past[1].nodes = bc;
    ok(policy_crash_loop(&now, cd, 2, past, 2, 3, matched) && matched[0] &&
            matched[1],
        "threshold 3: three occurrences on different nodes");
}

static void
test_sig_str(void)
{
    struct policy_sig s = exit_sig(0, 4, 1, 0);
    char buf[160];

    policy_sig_str(&s, buf, sizeof(buf));
    is_str(buf, "rank 0 exited with code 1 at step 4 after its resume point",
        "an exit at a step");
    s = exit_sig(3, -1, -1, 9);
    policy_sig_str(&s, buf, sizeof(buf));
    is_str(buf, "rank 3 killed by signal 9 before reporting any step",
        "a signal without a step");
}

static void
test_backoff(void)
{
    is_int(policy_backoff_ms(&cfg, 1, POLICY_BUDGET_INFRA), 0,
        "the first infrastructure failure restarts at once");
    is_int(policy_backoff_ms(&cfg, 1, POLICY_BUDGET_JOB), 500,
        "the first own failure waits restart_backoff_ms");
    is_int(policy_backoff_ms(&cfg, 2, POLICY_BUDGET_JOB), 1000, "doubles");
    is_int(policy_backoff_ms(&cfg, 3, POLICY_BUDGET_INFRA), 2000,
        "doubles for infrastructure too after the first");
    is_int(policy_backoff_ms(&cfg, 20, POLICY_BUDGET_JOB), 60000,
        "capped at restart_backoff_max_ms");
    is_int(policy_backoff_ms(&cfg, 1000, POLICY_BUDGET_JOB), 60000,
        "no overflow for a long streak");

    is_int(policy_streak(&cfg, 0, 10, false), 1, "a first failure");
    is_int(policy_streak(&cfg, 3, 10, false), 4, "a quick failure grows it");
    is_int(policy_streak(&cfg, 3, 60000, false), 1,
        "a long run starts a new streak");
    is_int(policy_streak(&cfg, 3, 10, true), 1,
        "a new checkpoint starts a new streak");
}

static void
test_decide(void)
{
    /* budgets, which budget pays, crash loop, streak; the action and
     * (-1: not checked) the backoff */
    static const struct {
        struct policy_budgets b;
        enum policy_budget budget;
        bool loop;
        int streak;
        enum policy_action action;
        int64_t backoff_ms;
        const char *name;
    } cases[] = {
        { { 0, 3, 0, 20 }, POLICY_BUDGET_JOB, false, 1, POLICY_RESTART, 500,
            "budget left: restart after the backoff" },
        { { 3, 3, 0, 20 }, POLICY_BUDGET_JOB, false, 4, POLICY_FAIL_BUDGET, -1,
            "own budget spent: FAILED" },
        { { 3, 3, 0, 20 }, POLICY_BUDGET_INFRA, false, 1, POLICY_RESTART, 0,
            "the other budget is separate" },
        { { 3, 3, 20, 20 }, POLICY_BUDGET_INFRA, false, 1, POLICY_FAIL_BUDGET,
            -1, "infrastructure budget spent" },
        { { 0, 3, 20, 20 }, POLICY_BUDGET_JOB, true, 2,
            POLICY_FAIL_DETERMINISTIC, -1,
            "a crash loop ends the job whatever the budget" },
        { { 0, 0, 20, 20 }, POLICY_BUDGET_JOB, false, 1, POLICY_FAIL_BUDGET, -1,
            "max_restarts 0: no restart" },
    };

    for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
        struct policy_budgets b = cases[i].b;
        struct policy_decision d;

        policy_decide(&cfg, cases[i].budget, cases[i].loop, &b, cases[i].streak,
            &d);
        ok(d.action == cases[i].action &&
                (cases[i].backoff_ms < 0 ||
                    d.backoff_ms == cases[i].backoff_ms),
            "%s", cases[i].name);
    }
}

/* The whole plan: a launch failure is never restarted, whatever is left
 * of any budget, and its reason comes first; a rank exit still is. */
static void
test_plan(void)
{
    struct policy_sig sig = exit_sig(0, -1, 127, 0);
    struct policy_plan_in in = {
        .kind = POLICY_KIND_LAUNCH_FAILED,
        .sig = &sig,
        .attempt = 1,
        .reason = "launch failed: cannot execute 'train.py': No such file "
                  "or directory (rank 0 on node n1)",
        .budgets = { 0, 3, 0, 20 },
        .prev_streak = 0,
    };
    struct policy_plan plan;

    sig.kind = POLICY_KIND_LAUNCH_FAILED;
    policy_plan(&cfg, &in, &plan);
    ok(plan.d.action == POLICY_FAIL_LAUNCH,
        "plan: a launch failure with budget left is not restarted");
    is_int(plan.d.backoff_ms, 0, "plan: ... and waits for nothing");
    is_str(plan.text,
        "launch failed: cannot execute 'train.py': No such file or "
        "directory (rank 0 on node n1); not restarted: a rank that cannot "
        "be started fails the same way again (no node is blamed)",
        "plan: the cause is the reason's beginning");
    in.crash_loop = true;
    policy_plan(&cfg, &in, &plan);
    ok(plan.d.action == POLICY_FAIL_LAUNCH,
        "plan: not called a deterministic failure either");

    sig.kind = POLICY_KIND_RANK_EXIT;
    in.kind = POLICY_KIND_RANK_EXIT;
    in.crash_loop = false;
    in.reason = "rank 0 exited with code 127";
    policy_plan(&cfg, &in, &plan);
    ok(plan.d.action == POLICY_RESTART && plan.d.budget == POLICY_BUDGET_JOB,
        "plan: a rank that ran and exited 127 is restarted");
    is_str(plan.text,
        "attempt 1 failed: rank 0 exited with code 127; restarting (restart "
        "1 of 3 for the job's own failures, after 500 ms of backoff)",
        "plan: restart text");
}

static void
test_blame(void)
{
    struct policy_blame v[] = {
        { 1, 1000 },
        { 1, 2000 },
        { 2, 3000 },
        { 3, 4000 },
        { 4, 10 },
    };
    int64_t now = 5000;
    struct policy_config c = cfg;

    c.blame_window_ms = 4500;
    is_int(policy_blame_jobs(v, 5, now, c.blame_window_ms), 3,
        "distinct jobs within the window (job 4 is too old)");
    ok(policy_blame_exceeds(&c, v, 5, now), "3 jobs reach the threshold");
    ok(!policy_blame_exceeds(&c, v, 3, now),
        "two failures of one job and one of another do not");
    c.blame_window_ms = 100;
    ok(!policy_blame_exceeds(&c, v, 5, now), "outside the window: not");
}

static void
test_blame_class(void)
{
    struct policy_config c = cfg;
    struct policy_blame_in in = { .kind = POLICY_KIND_RANK_EXIT,
        .has_exit = true };

    c.blame_hw_signals = UINT64_C(1) << SIGBUS;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_PROVISIONAL,
        "class: exit 1 (an ImportError) is provisional");
    in.signal = SIGSEGV;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_PROVISIONAL,
        "class: a user's SIGSEGV is provisional");
    in.signal = SIGBUS;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_HARD,
        "class: SIGBUS (a hardware signal) is hard");
    c.blame_hw_signals = 0;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_PROVISIONAL,
        "class: SIGBUS is provisional when not configured as hardware");
    in.has_exit = false;
    c.blame_hw_signals = UINT64_C(1) << SIGBUS;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_PROVISIONAL,
        "class: a signal not known to have happened is not hard");
    in.signal = 0;
    in.node_suspect = true;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_HARD,
        "class: a rank exit on a lost or excluded node is hard");
    in.node_suspect = false;
    in.kind = POLICY_KIND_HANG;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_PROVISIONAL,
        "class: a hang is provisional");
    in.node_finding = true;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_HARD,
        "class: a hang on a node with a health finding is hard");
    in.node_finding = false;
    in.kind = POLICY_KIND_NODE_LOST;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_HARD,
        "class: a lost (or fenced) node is hard");
    in.kind = POLICY_KIND_LOST_RANKS;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_HARD,
        "class: lost ranks are hard");
    in.kind = POLICY_KIND_LAUNCH_FAILED;
    ok(policy_blame_class(&c, &in) == POLICY_CLASS_NONE,
        "class: a launch failure blames no node");
}

static void
test_blame_status(void)
{
    enum policy_blame_status st;
    struct policy_blame v[] = {
        { .job_id = 1, .time_ms = 1000 },
        { .job_id = 2, .time_ms = 1000, .status = POLICY_BLAME_PROVISIONAL },
        { .job_id = 3, .time_ms = 1000, .status = POLICY_BLAME_WITHDRAWN },
        { .job_id = 4, .time_ms = 1000, .status = POLICY_BLAME_RESET },
        { .job_id = 5, .time_ms = 1000, .consequence = true },
        { .job_id = 6, .time_ms = 1000, .status = POLICY_BLAME_CONFIRMED },
    };
    struct policy_config c = cfg;

    is_str(policy_blame_status_str(POLICY_BLAME_PROVISIONAL), "provisional",
        "status name");
    ok(policy_blame_status_parse("reset", &st) == 0 && st == POLICY_BLAME_RESET,
        "status parse");
    ok(policy_blame_status_parse("blamed", &st) < 0, "status: unknown");
    is_int(policy_blame_jobs(v, 6, 2000, 10000), 2,
        "only confirmed rows that are no consequence count");
    c.blame_threshold = 3;
    ok(!policy_blame_exceeds(&c, v, 6, 2000),
        "provisional, withdrawn, reset and consequence rows never exclude");
    c.blame_threshold = 2;
    ok(policy_blame_exceeds(&c, v, 6, 2000), "two confirmed jobs reach 2");
}

static void
test_blame_settle(void)
{
    struct policy_blame_pending p = { .attempt = 1,
        .step = 5,
        .job_live = true,
        .next_step = -1 };

    ok(policy_blame_settle(&p) == POLICY_SETTLE_KEEP,
        "settle: no next attempt yet: kept");
    p.next_attempt = 2;
    p.next_step = 5;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_KEEP,
        "settle: next attempt at the failing step: kept");
    p.next_step = 6;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_CONFIRM,
        "settle: next attempt past the step elsewhere: confirmed");
    p.next_on_node = true;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_WITHDRAW,
        "settle: past the step on the blamed node itself: withdrawn");
    p.next_on_node = false;
    p.next_step = -1;
    p.next_succeeded = true;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_CONFIRM,
        "settle: success elsewhere (steps unknown): confirmed");
    p.next_succeeded = false;
    p.step = -1;
    p.next_step = 0;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_CONFIRM,
        "settle: a failure before any step is passed by step 0");
    p.next_step = -1;
    p.job_live = false;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_WITHDRAW,
        "settle: the job ended without confirming: withdrawn");
    p.next_attempt = 1;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_WITHDRAW,
        "settle: --max-restarts 0 (no next attempt), job over: withdrawn");
    p.job_live = true;
    p.next_step = 100;
    ok(policy_blame_settle(&p) == POLICY_SETTLE_KEEP,
        "settle: the failing attempt itself never confirms");
}

static void
test_signals_parse(void)
{
    uint64_t m = 1;
    char bad[16] = "";

    ok(policy_signals_parse("", &m, bad, sizeof(bad)) == 0 && m == 0,
        "signals: empty is none");
    ok(policy_signals_parse("SIGBUS", &m, bad, sizeof(bad)) == 0 &&
            m == UINT64_C(1) << SIGBUS,
        "signals: SIGBUS");
    ok(policy_signals_parse("bus, ILL 4", &m, bad, sizeof(bad)) == 0 &&
            m == ((UINT64_C(1) << SIGBUS) | (UINT64_C(1) << SIGILL) |
                     (UINT64_C(1) << 4)),
        "signals: names without SIG, numbers, commas and spaces");
    ok(policy_signals_parse("SIGBUS,SIGNOPE", &m, bad, sizeof(bad)) == -EINVAL,
        "signals: an unknown name is refused");
    is_str(bad, "SIGNOPE", "signals: the bad word is named");
    ok(policy_signals_parse("64", &m, bad, sizeof(bad)) == -EINVAL,
        "signals: out of range");
}

static void
test_hang(void)
{
    int64_t idle[] = { 500, 5000, 4900, -1 };
    int64_t step[] = { 10, 10, 9, 3 };
    int64_t limit[] = { 4000, 4000, 4000, 4000 };
    int64_t nostep[] = { -1, -1, -1, -1 };

    is_int(policy_hang_pick(idle, step, limit, 4), 2,
        "the rank furthest behind (lowest step) among the watched ones");
    is_int(policy_hang_pick(idle, nostep, limit, 4), 1,
        "without steps: the longest idle");
    idle[1] = 3000;
    idle[2] = 3900;
    is_int(policy_hang_pick(idle, step, limit, 4), -1,
        "nobody past the limit: no hang");
    limit[2] = 3000;
    is_int(policy_hang_pick(idle, step, limit, 4), 2, "per-rank limits");
    idle[3] = 999999;
    limit[3] = 1000000;
    ok(policy_hang_pick(idle, step, limit, 4) == 3,
        "a rank under its own limit can still be the one behind");

    ok(policy_dump_stuck("rank 1 pid 42 state T wchan do_signal_stop\n"),
        "a stopped rank is stuck");
    ok(policy_dump_stuck("rank 1 pid 42 state D wchan nv_wait\nmore"),
        "uninterruptible sleep is stuck");
    ok(!policy_dump_stuck("rank 1 pid 42 state S wchan futex_wait\n"
                          "  thread 43 state T wchan x\n"),
        "a rank waiting in a collective is not (threads do not count)");
    ok(!policy_dump_stuck(""), "no dump");
    ok(!policy_dump_stuck(NULL), "NULL");
}

static void
test_keep(void)
{
    static const char *const nodes[] = { "n1", "n2", "n3" };
    bool usable[] = { true, true, false };
    bool keep[3];

    is_int(policy_keep_nodes(nodes, usable, 3, "n2", keep), 1,
        "keep the usable nodes but the blamed one");
    ok(keep[0] && !keep[1] && !keep[2], "n1 kept, n2 blamed, n3 down");
    is_int(policy_keep_nodes(nodes, usable, 3, NULL, keep), 2,
        "no blame: every usable node is kept");
}

int
main(void)
{
    plan(NO_PLAN);
    test_kinds();
    test_classify();
    test_crash_loop();
    test_sig_str();
    test_backoff();
    test_decide();
    test_plan();
    test_blame();
    test_blame_class();
    test_blame_status();
    test_blame_settle();
    test_signals_parse();
    test_hang();
    test_keep();
    return done_testing();
}
