/*
 * quota.c - per-user limits, pure: submissions, and the running jobs the
 * scheduling pass counts
 */
#include "scheduler/quota.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/job.h"

/* Forget users whose bucket has been full for a while (idle). */
static void
quota_prune(struct quota *q, const struct quota_limits *l, int64_t now_ms)
{
    size_t i = 0;
    int64_t full_ms;

    if (l->submit_rate <= 0)
        return;
    full_ms = (int64_t)l->submit_burst * 1000 / l->submit_rate + 60000;
    while (i < q->n) {
        int64_t last = q->users[i].bucket.last_ms;

        for (int k = 0; k < 2; k++)
            if (q->users[i].last_event_ms[k] > last)
                last = q->users[i].last_event_ms[k];
        if (now_ms - last > full_ms) {
            free(q->users[i].name);
            q->users[i] = q->users[--q->n];
        } else {
            i++;
        }
    }
}

static struct quota_user *
quota_user(struct quota *q, const char *user)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->users[i].name, user) == 0)
            return &q->users[i];
    if (q->n == q->cap) {
        q->cap = q->cap ? q->cap * 2 : 16;
        q->users = xreallocarray(q->users, q->cap, sizeof(*q->users));
    }
    memset(&q->users[q->n], 0, sizeof(q->users[q->n]));
    q->users[q->n].name = xstrdup(user);
    return &q->users[q->n++];
}

enum quota_verdict
quota_check(struct quota *q, const struct quota_config *cfg, const char *user,
    bool op, size_t queued, int64_t now_ms, char *msg, size_t len,
    int64_t *retry_s, struct quota_user **qu)
{
    const struct quota_limits *l = op ? &cfg->op : &cfg->user;
    const char *who = op ? "operator" : "user";
    struct quota_user *u = NULL;
    int64_t retry_ms = 0;

    *qu = NULL;
    if (l->max_queued > 0 && queued >= (size_t)l->max_queued) {
        q->refused_queued++;
        snprintf(msg, len,
            "%s %s has %zu queued jobs; the limit is %d (max queued jobs "
            "per %s)",
            who, user, queued, l->max_queued, who);
        *retry_s = 30;
        *qu = quota_user(q, user);
        return QUOTA_QUEUED;
    }
    if (l->submit_rate <= 0)
        return QUOTA_OK;
    quota_prune(q, l, now_ms);
    u = quota_user(q, user);
    if (tbucket_take(&u->bucket, l->submit_rate,
            l->submit_burst > 0 ? l->submit_burst : 1, now_ms, &retry_ms)) {
        return QUOTA_OK;
    }
    q->refused_rate++;
    snprintf(msg, len,
        "%s %s submits too fast: the limit is %d per second (burst %d); %zu "
        "jobs queued",
        who, user, l->submit_rate, l->submit_burst, queued);
    *retry_s = (retry_ms + 999) / 1000;
    *qu = u;
    return QUOTA_RATE;
}

void
quota_release(struct quota *q)
{
    for (size_t i = 0; i < q->n; i++)
        free(q->users[i].name);
    free(q->users);
    memset(q, 0, sizeof(*q));
}

/* ---- running jobs per user ---------------------------------------------- */

struct quota_run_user {
    struct itab_link link; /* first: the table's link is the element */
    const char *user;      /* borrowed */
    int running;
};

static size_t
quota_hash(const char *s)
{
    uint64_t h = 14695981039346656037ULL; /* FNV-1a */

    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (size_t)h;
}

static bool
quota_run_user_is(const struct itab_link *l, const void *key)
{
    return strcmp(((const struct quota_run_user *)l)->user, key) == 0;
}

int *
quota_running_slot(struct quota_running *qr, const char *user)
{
    size_t h = quota_hash(user);
    struct itab_link *l = itab_find(&qr->t, h, quota_run_user_is, user);
    struct quota_run_user *u = (struct quota_run_user *)l;

    if (u == NULL) {
        u = xcalloc(1, sizeof(*u));
        u->user = user;
        u->running = (int)job_table_user(qr->jt, user).running;
        itab_add(&qr->t, &u->link, h);
    }
    return &u->running;
}

void
quota_running_init(struct quota_running *qr, const struct job_table *t)
{
    itab_init(&qr->t);
    qr->jt = t;
}

static void
quota_run_user_free(struct itab_link *l)
{
    free(l);
}

void
quota_running_release(struct quota_running *qr)
{
    itab_release(&qr->t, quota_run_user_free);
}
