/*
 * tick.h - the scheduler's periodic work
 *
 * Every quarter of the node timeout (between 50 ms and 1 s): nodes silent
 * for node_timeout_ms become LOST (nodes.h), hangs are looked for and
 * dump waits ended (watchdog.h), an unplaced restart is retried when due
 * (pass.h), and every TICK_PERSIST_MS the nodes' last_seen is written in
 * one batch. A tick that runs late measures a stall of the loop, which no
 * node's silence counts (nodes_stalled).
 */
#ifndef SCHEDULER_TICK_H
#define SCHEDULER_TICK_H

#include "common/err.h"
#include "scheduler/schedd.h"

struct tick;

/* Start ticking. Returns NULL with err set. */
struct tick *tick_create(struct schedd *sd, struct err *err);
/* Write last_seen once more and close the timer; freed once closed.
 * Accepts NULL. */
void tick_destroy(struct tick *t);

#endif
