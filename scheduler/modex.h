/*
 * modex.h - the PMIx direct modex requests the agents relay through the
 * scheduler (a rank's data fetched from the node that hosts it)
 *
 * docs/architecture.md "Multi-node MPI". A requester agent asks for the
 * data of a rank of another node (POST /v1/agent/modex, api_modex.c) and
 * waits as a token; the request is delivered to the owner node's agent
 * through its modex long poll (a poller, GET /v1/agent/modex): at once
 * when one is waiting, else when the next one comes; the owner's reply
 * (POST /v1/agent/modex/reply, naming the request's id) answers the
 * token with the rank's blob or the owner's error.
 *
 * A request fails, never hangs: its owner node's agent is gone
 * (modex_node_gone), its attempt ended (modex_sweep, with collective.h's
 * alive function: the same hooks as the collectives), its deadline
 * passed (modex_token_expired), the table is reset (modex_fail_all). A
 * requester whose connection went away is simply forgotten.
 *
 * Pure: no I/O, no clock. Tokens and pollers are opaque to the table;
 * each token is answered exactly once through the answer function (or
 * handed back by modex_token_gone), each poller is answered exactly once
 * through the deliver function (possibly with no request: modex_fail_all)
 * or handed back by modex_poller_gone.
 */
#ifndef SCHEDULER_MODEX_H
#define SCHEDULER_MODEX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"
#include "scheduler/collective.h"

/* A request as delivered to its owner. */
struct modex_item {
    uint64_t id;
    int64_t job;
    int attempt;
    uint32_t rank;
};

/* Called once per token: outcome COLL_DONE (data/len: the rank's blob),
 * COLL_FAILED or COLL_TIMEOUT (msg: why); all borrowed for the call. */
typedef void modex_answer_fn(void *token, enum coll_outcome outcome,
    const char *msg, const char *data, size_t len, void *arg);
/* Called once per poller with the requests for its node (items borrowed
 * for the call; n may be 0). */
typedef void modex_deliver_fn(void *poller, const struct modex_item *items,
    size_t n, void *arg);

struct modex_table;

struct modex_table *modex_table_create(modex_answer_fn *answer,
    modex_deliver_fn *deliver, void *arg);
/* Frees the table; tokens and pollers are dropped unanswered (the caller
 * answers them first with modex_fail_all). Accepts NULL. */
void modex_table_destroy(struct modex_table *t);

/* Asks owner (a node name) for the data of rank of (job, attempt),
 * waiting as token: delivered to a waiting poller of owner at once (the
 * deliver function runs before this returns), else kept for the next.
 * Returns the request's id (> 0). */
uint64_t modex_request(struct modex_table *t, int64_t job, int attempt,
    const char *owner, uint32_t rank, void *token);
/* node's agent polls as poller: the requests not yet delivered to node
 * are delivered at once (true: poller answered), else poller waits
 * (false). */
bool modex_poll(struct modex_table *t, const char *node, void *poller);
/* poller's connection went away or its wait ran out: forgotten, not
 * answered. Unknown pollers are ignored. */
void modex_poller_gone(struct modex_table *t, void *poller);

/* node answers request id: ok with data[0..len), else with the error
 * msg. Returns 0 (the token answered); -ENOENT (no such request: it
 * failed or timed out meanwhile) or -EPERM (node is not its owner), with
 * err set. */
int modex_reply(struct modex_table *t, uint64_t id, const char *node, bool ok,
    const char *data, size_t len, const char *msg, struct err *err);

/* token's connection went away: its request is dropped unanswered.
 * Unknown tokens are ignored. */
void modex_token_gone(struct modex_table *t, void *token);
/* token's deadline passed: answered COLL_TIMEOUT. */
void modex_token_expired(struct modex_table *t, void *token);
/* The requests to node fail with "node '<node>': <why>". */
void modex_node_gone(struct modex_table *t, const char *node, const char *why);
/* The requests of attempts for which alive() says no fail with its
 * reason. */
void modex_sweep(struct modex_table *t, coll_alive_fn *alive, void *arg);
/* Every request fails with why, every poller is answered with nothing. */
void modex_fail_all(struct modex_table *t, const char *why);

/* Requests not answered yet, pollers waiting (for tests). */
size_t modex_pending(const struct modex_table *t);
size_t modex_pollers(const struct modex_table *t);

#endif
