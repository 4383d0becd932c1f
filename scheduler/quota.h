/*
 * quota.h - per-user submission limits, pure
 *
 * Two limits on POST /v1/jobs, each for users and (separately) for
 * operators, 0 meaning none: how many queued jobs (PENDING or held; a
 * RESTARTING job is counted too when held) a user may have, and how many
 * submissions per second (a token bucket per user: `rate` per second,
 * `burst` at once). A refusal is 429 with a message naming the limit and
 * the user's current count; nothing already accepted is touched.
 *
 * The per-user buckets live in a small table that forgets users whose
 * bucket has refilled (an idle user costs nothing).
 *
 * A third limit is the scheduling pass's: how many jobs one user may have
 * running (PLACED, RUNNING or RESTARTING), user_max_running_jobs, for
 * everyone alike (0: none). quota_running holds them per user for one
 * pass, starting from job_table_user's count (kept by the event path)
 * and counting the pass's placements (sched_pass.h holds the jobs back).
 */
#ifndef SCHEDULER_QUOTA_H
#define SCHEDULER_QUOTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/itab.h"
#include "common/tbucket.h"

struct quota_limits {
    int max_queued;  /* 0: none */
    int submit_rate; /* per second; 0: none */
    int submit_burst;
};

struct quota_config {
    struct quota_limits user;
    struct quota_limits op; /* operators */
    int max_running;        /* running jobs per user, anyone; 0: none */
};

struct quota_user {
    char *name;
    struct tbucket bucket;
    /* By verdict - 1 (QUOTA_QUEUED, QUOTA_RATE): */
    int64_t last_event_ms[2]; /* the last refusal event written */
    uint64_t quiet[2];        /* refusals since, without an event */
};

struct quota {
    struct quota_user *users;
    size_t n, cap;
    uint64_t refused_queued; /* 429s for the queued-jobs limit */
    uint64_t refused_rate;   /* 429s for the submission rate */
};

enum quota_verdict {
    QUOTA_OK,
    QUOTA_QUEUED, /* over the queued-jobs limit */
    QUOTA_RATE,   /* over the submission rate */
};

/* Judge one submission of user (queued: how many of its jobs are PENDING
 * or held, job_table_user's count, kept by the event path) at now_ms.
 * On a refusal, msg gets the reason ("user alice has 5 queued jobs; the
 * limit is 5") and *retry_s the seconds to wait (>= 1); the table entry
 * of the user in *qu (NULL when none) is for the caller's rate limit on
 * events. A refused submission consumes no token. */
enum quota_verdict quota_check(struct quota *q, const struct quota_config *cfg,
    const char *user, bool op, size_t queued, int64_t now_ms, char *msg,
    size_t len, int64_t *retry_s, struct quota_user **qu);

/* Free the table. */
void quota_release(struct quota *q);

/* Running jobs per user, for one scheduling pass. */
struct quota_running {
    struct itab t;              /* of struct quota_run_user, by name */
    const struct job_table *jt; /* borrowed */
};

/* Per-user counters over the jobs of t; t must outlive qr. */
void quota_running_init(struct quota_running *qr, const struct job_table *t);
/* user's counter, created at the count of its jobs that are PLACED,
 * RUNNING or RESTARTING (job_table_user); valid until
 * quota_running_release. The user name is borrowed: it must outlive
 * qr. */
int *quota_running_slot(struct quota_running *qr, const char *user);
void quota_running_release(struct quota_running *qr);

#endif
