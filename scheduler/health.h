/*
 * health.h - a node's health findings and what they mean (pure)
 *
 * docs/fault-tolerance.md "Node health". An agent's node report carries
 * the latest results of every check it runs (proto_health). Every result
 * that is not PASS or SKIPPED opens or updates a finding, keyed by
 * (check, code, scope); a finding remembers when it was first and last
 * seen, its latest status, evidence and figures, how many occurrences it
 * stands for, and how many consecutive runs of its check raised it.
 * Runs are counted by the result's `run` (the check's run counter in its
 * agent process), so a report sent again counts once; a new agent process
 * (another agent id) starts the counters afresh.
 *
 * The policy (health_config):
 *
 *  - FAIL and HUNG are hard: the finding excludes the node at once.
 *  - WARN is soft: the node is SUSPECT (still schedulable, placed last);
 *    after soft_repeats consecutive runs the finding excludes it.
 *  - UNKNOWN and TIMEOUT: SUSPECT; after unreliable_repeats consecutive
 *    runs of one check the finding excludes it ("check unreliable").
 *  - Soft findings raised by the scheduler itself (health_soft: a
 *    straggler) are per scope (the job); when open findings of one code
 *    span soft_scopes_exclude scopes, they exclude the node. They expire
 *    soft_expire_ms after they were last raised, unless they exclude.
 *
 * A finding that does not exclude closes at the first run of its check
 * that does not raise it again. One that excludes is latched: it closes
 * only on its condition - a new boot (health_boot), its check passing
 * for holddown_ms (every run since the first passing one), or an
 * operator's acknowledgement (health_ack).
 *
 * Flapping: each time the node goes from not excluded to excluded by its
 * findings, the time is noted (health_note_exclusion); flap_count of
 * them within flap_window_ms open the finding "health.flapping", which
 * excludes the node until an operator acknowledges it (a new boot does
 * not clear it, nor does uncordon).
 *
 * A node whose agent reports health with a boot id other than the last
 * one it reported (a new or rebooted node) waits: it is not schedulable
 * until a report says full_pass (every configured check finished once).
 *
 * Pure: no I/O, no clock (times are passed in), no globals.
 */
#ifndef SCHEDULER_HEALTH_H
#define SCHEDULER_HEALTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/proto.h"

/* The check name of findings the scheduler raises itself. */
#define HEALTH_CHECK_SCHEDULER "scheduler"
#define HEALTH_CODE_FLAPPING "health.flapping"
/* Exclusion times kept for the flap rule. */
#define HEALTH_FLAP_MAX 32

/* Scheduler settings (docs/config.md "Node health"). */
struct health_config {
    int soft_repeats;       /* WARN runs before excluding; >= 1 */
    int unreliable_repeats; /* UNKNOWN/TIMEOUT runs; >= 1 */
    int64_t holddown_ms;    /* passing this long clears a latch */
    int flap_count;         /* exclusions within the window; >= 2 */
    int64_t flap_window_ms;
    int soft_scopes_exclude; /* straggler_jobs_exclude; >= 1 */
    int64_t soft_expire_ms;  /* a scheduler soft finding's life */
};

/* The defaults docs/config.md documents. */
void health_config_default(struct health_config *c);

struct health_finding {
    int64_t id; /* its database row; 0 until written */
    char *check;
    char *code;
    char *scope;
    enum proto_check_status status; /* the latest non-PASS one */
    char *evidence;
    struct proto_check_number *numbers;
    size_t nnumbers;
    int64_t first_ms; /* first and last seen */
    int64_t last_ms;
    int64_t count;      /* occurrences behind it (sum over runs) */
    int consecutive;    /* consecutive runs that raised it */
    uint64_t last_run;  /* the run that last raised it */
    bool excluding;     /* latched: it excludes the node */
    int64_t pass_since; /* a latched one: first passing run, 0 none */
    bool open;          /* false: closed (kept until written) */
    char *closed_how;   /* closed: "pass", "holddown", "boot", "ack",
                         * "expired"; NULL while open */
    bool dirty;         /* changed since written */
    bool announce;      /* opened or started excluding: an event */
};

/* A check's latest run as its agent reported it. */
struct health_check {
    char *check;
    uint64_t run;
    struct proto_check_result *results; /* that run's results */
    size_t nresults;
    bool dirty;
};

struct health {
    char *boot_id;  /* the last boot id reported; "" none */
    char *agent_id; /* the agent process the run counters are of */
    bool waiting;   /* a new boot without a full pass yet */
    struct health_finding *findings; /* open ones (and closed ones
                                      * not written yet) */
    size_t nfindings;
    struct health_check *checks;
    size_t nchecks;
    int64_t flaps[HEALTH_FLAP_MAX]; /* exclusion times, oldest first */
    size_t nflaps;
    bool excluded; /* health_excluded() when last noted */
    /* Findings an operator acknowledged in this boot ("check\tcode\tscope"):
     * a check that reports a standing finding again (a result with a
     * number "new" = 0, as the kernel log's) does not reopen it; a new
     * occurrence does. In memory only. */
    char **acked;
    size_t nacked;
};

struct health *health_create(void);
/* Accepts NULL. */
void health_destroy(struct health *h);

/*
 * Apply a report's health at now (wall clock) from agent process
 * agent_id. A new boot id closes every finding but flapping (as
 * health_boot) and makes the node wait for a full pass; full_pass ends
 * the wait. Returns true when anything changed (findings, checks, the
 * wait).
 */
bool health_apply(struct health *h, const struct health_config *c,
    const char *agent_id, const struct proto_health *rep, int64_t now);

/* A soft finding raised by the scheduler (check "scheduler") for code and
 * scope (e.g. "straggler", "job:12"), with evidence, at now. */
void health_soft(struct health *h, const struct health_config *c,
    const char *code, const char *scope, const char *evidence, int64_t now);

/* Close the scheduler's soft findings raised last before now minus
 * soft_expire_ms that do not exclude. True when any closed. */
bool health_expire(struct health *h, const struct health_config *c,
    int64_t now);

/*
 * An operator acknowledges the open findings of code (and scope, when
 * not NULL) at now: they close ("ack"); acknowledging flapping also
 * forgets the exclusions counted. Returns how many closed.
 */
size_t health_ack(struct health *h, const char *code, const char *scope,
    int64_t now);

/* Whether an open finding excludes the node; *why (may be NULL) is the
 * first one's description into buf. */
bool health_excluded(const struct health *h, char *buf, size_t len);
/* Whether an open finding does not exclude (the node is SUSPECT). */
bool health_suspect(const struct health *h, char *buf, size_t len);
/* Open findings. */
size_t health_open_count(const struct health *h);

/*
 * The node went from not excluded to excluded at now: note it for the
 * flap rule. Returns true when that opened "health.flapping".
 */
bool health_note_exclusion(struct health *h, const struct health_config *c,
    int64_t now);

/* A finding's one-line description: "FAIL gpu.ecc_uncorrectable gpu:3:
 * <evidence>" into buf. */
const char *health_finding_str(const struct health_finding *f, char *buf,
    size_t len);

/* Drop the closed findings (once written) and clear the dirty flags. */
void health_written(struct health *h);

/* For the loader: add a copy of a stored open finding, or of a check's
 * stored latest run (results taken). */
void health_add_finding(struct health *h, const struct health_finding *f);
void health_add_check(struct health *h, const char *check, uint64_t run,
    struct proto_check_result *results, size_t nresults);

#endif
