/*
 * tagent.h - one agent's proc table on a loop of its own, for the agent's
 * unit tests (test_agent.c, test_agent_cadence.c)
 *
 * Header-only, like tap.h: each test binary includes it once. The test
 * fills tmpdir (test_tmpdir) and supervisor_path (test_built_path of the
 * built lockstep-supervisor) before the first agent_up, and may set
 * tagent_on_change to hear the table's change hook.
 */
#ifndef TESTS_UNIT_TAGENT_H
#define TESTS_UNIT_TAGENT_H

#include <limits.h>
#include <string.h>

#include <uv.h>

#include "agent/agentd.h"
#include "agent/proc.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "tests/tap.h"

static char tmpdir[PATH_MAX];
static char supervisor_path[PATH_MAX + 64];
static proc_change_fn tagent_on_change;

/* Turn the loop until cond holds or timeout_ms passes. The proc table's
 * poll timer keeps the loop alive, so UV_RUN_ONCE always returns. */
#define RUN_UNTIL(loop, cond, timeout_ms)                                      \
    do {                                                                       \
        int64_t dl_ = timeid_mono_ms() + (timeout_ms);                         \
        while (!(cond) && timeid_mono_ms() < dl_)                              \
            uv_run((loop), UV_RUN_ONCE);                                       \
    } while (0)

static inline struct proc_job *
find_job(struct proc_table *pt, int64_t id, int attempt)
{
    struct proc_job *job;

    for (job = proc_jobs(pt); job != NULL; job = job->next) {
        if (job->job == id && job->attempt == attempt)
            return job;
    }
    return NULL;
}

static inline void
work_one(struct proto_work *w, struct proto_launch *l)
{
    memset(w, 0, sizeof(*w));
    w->gen = 1;
    w->jobs = l;
    w->njobs = 1;
}

/* One agent's worth of state, in tmpdir/<name>. */
struct tagent {
    struct agentd ad;
    uv_loop_t loop;
    struct proc_table *pt;
    struct proto_work work; /* launch()'s work reply */
};

static inline void
tagent_init(struct tagent *t, const char *name)
{
    memset(t, 0, sizeof(*t));
    uv_loop_init(&t->loop);
    t->ad.loop = &t->loop;
    t->ad.node = xstrdup("n1");
    t->ad.state_dir = xasprintf("%s/%s/state", tmpdir, name);
    t->ad.log_dir = xasprintf("%s/%s/logs", tmpdir, name);
    t->ad.kill_grace_ms = 300;
    t->ad.lock_fd = -1; /* orphan_grace_ms 0: no agent.lock */
    t->ad.run_as_submitter = false;
    t->ad.supervisor = xstrdup(supervisor_path);
}

/* A proc table on t, like a starting agent; the lease a status reply
 * would grant is long, so slow test machines fence nothing. */
static inline struct proc_table *
tagent_start(struct tagent *t)
{
    struct err err = { 0 };

    t->pt = proc_create(&t->ad, &err);
    if (t->pt == NULL) {
        diag("proc_create: %s", err.msg);
        return NULL;
    }
    if (tagent_on_change != NULL)
        proc_set_change_cb(t->pt, tagent_on_change, NULL);
    proc_status_ok(t->pt, 0, timeid_mono_ms(), 60000);
    return t->pt;
}

/* tagent_init and tagent_start: the proc table, or NULL. */
static inline struct proc_table *
agent_up(struct tagent *t, const char *name)
{
    tagent_init(t, name);
    return tagent_start(t);
}

/* Hand l to t's proc table in a work reply of its own (t->work), as the
 * scheduler would: the job as the table holds it, or NULL. */
static inline struct proc_job *
launch(struct tagent *t, struct proto_launch *l)
{
    work_one(&t->work, l);
    proc_apply(t->pt, &t->work);
    return find_job(t->pt, l->job, l->attempt);
}

static inline void
tagent_stop(struct tagent *t)
{
    proc_destroy(t->pt);
    t->pt = NULL;
    uv_run(&t->loop, UV_RUN_DEFAULT);
}

static inline void
tagent_release(struct tagent *t)
{
    if (t->pt != NULL)
        tagent_stop(t);
    is_int(uv_loop_close(&t->loop), 0, "uv_loop_close() == 0");
    free(t->ad.node);
    free(t->ad.state_dir);
    free(t->ad.log_dir);
    free(t->ad.supervisor);
}

#endif
