/*
 * tick.c - the scheduler's periodic work (tick.h)
 */
#include "scheduler/tick.h"

#include <stdlib.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"
#include "scheduler/cadences.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_health.h"
#include "scheduler/obs.h"
#include "scheduler/pass.h"
#include "scheduler/planned.h"
#include "scheduler/rankstats.h"
#include "scheduler/recovery.h"
#include "scheduler/watchdog.h"

/* How often last_seen is written to the database. */
#define TICK_PERSIST_MS 5000
/* How often the nodes are looked at when leases are short. */
#define TICK_SHORT_MS 200

struct tick {
    struct schedd *sd;
    uv_timer_t timer;
    int64_t every_ms;
    int64_t due_mono; /* when the timer should run next */
    int64_t last_persist_mono;
    /* The rest of the tick (watchdog, cadences, ...) runs at most this
     * often: the nodes are looked at more often only for short leases. */
    int64_t rest_every_ms;
    int64_t rest_mono;
};

/* The loop is stalled when the tick runs late: stopped (SIGSTOP, a
 * frozen VM) or busy in one callback. Whatever its cause, the loop heard
 * nobody meanwhile (a status is read only by the loop), so that time is
 * no node's silence (nodes_stalled). Measured before nodes_tick looks at
 * any silence: after a stall, libuv 1.44 runs the due timers before it
 * reads the statuses waiting in the sockets (a later libuv reads them
 * first; node_stalled leaves a node heard since the stall began as it
 * is). */
static void
tick_measure(struct tick *t, int64_t mono)
{
    int64_t late = mono - t->due_mono;

    t->due_mono = mono + t->every_ms;
    if (late > 0)
        nodes_stalled(t->sd, mono, late);
}

static void
tick_cb(uv_timer_t *timer)
{
    struct tick *t = container_of(timer, struct tick, timer);
    struct schedd *sd = t->sd;
    int64_t mono = timeid_mono_ms();

    tick_measure(t, mono);
    if (!schedd_available(sd) || nodes_tick(sd, mono) < 0)
        return;
    if (mono - t->rest_mono < t->rest_every_ms - t->every_ms / 2)
        return;
    t->rest_mono = mono;
    if (mono - t->last_persist_mono >= TICK_PERSIST_MS) {
        t->last_persist_mono = mono;
        nodes_persist_last_seen(sd);
        nodes_health_tick(sd, timeid_now_ms());
    }
    watchdog_tick(sd);
    cadences_tick(sd);
    rankstats_tick(sd);
    planned_tick(sd);
    recovery_blame_tick(sd);
    obs_tick(sd, mono);
    if (sd->pass)
        pass_tick(sd->pass, timeid_now_ms());
}

struct tick *
tick_create(struct schedd *sd, struct err *err)
{
    struct tick *t = xcalloc(1, sizeof(*t));
    uint64_t every = (uint64_t)(sd->node_timeout_ms / 4);
    int rc;

    if (every > 1000)
        every = 1000;
    if (every < 50)
        every = 50;
    t->sd = sd;
    t->rest_every_ms = (int64_t)every;
    /* A node on short leases is replaced seconds after it falls silent:
     * a second between looks would be a good part of that. */
    if (sd->lease_ping_ms > 0 && every > TICK_SHORT_MS)
        every = TICK_SHORT_MS;
    t->every_ms = (int64_t)every;
    t->last_persist_mono = timeid_mono_ms();
    t->due_mono = t->last_persist_mono + t->every_ms;
    uv_timer_init(sd->loop, &t->timer);
    rc = uv_timer_start(&t->timer, tick_cb, every, every);
    if (rc < 0) {
        err_set(err, rc, "cannot start the tick timer: %s", uv_strerror(rc));
        tick_destroy(t);
        return NULL;
    }
    return t;
}

void
tick_destroy(struct tick *t)
{
    if (t == NULL)
        return;
    uv_timer_stop(&t->timer);
    if (!t->sd->failed)
        nodes_persist_last_seen(t->sd);
    uvx_close_one((uv_handle_t *)&t->timer, free, t);
}
