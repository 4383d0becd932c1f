/*
 * collective.h - the PMIx collectives the agents relay through the
 * scheduler (a fence across nodes)
 *
 * docs/architecture.md "Multi-node MPI". Each agent whose node hosts
 * ranks of a cross-node fence contributes its PMIx server's blob once
 * (POST /v1/agent/collective, api_coll.c) and waits; when every
 * participating node has contributed, every contributor is answered
 * with the plain concatenation of the blobs, in the order of the
 * participant list (libpmix unpacks the concatenation; empty blobs count:
 * a fence is a barrier even when no data is collected).
 *
 * A collective is named by (job, attempt, id): the agents build the id
 * the same way from the participant set and a per-set counter (PMIx
 * issues fences over one set in the same order everywhere). The first
 * contribution fixes the participant list; later ones must name the same
 * nodes.
 *
 * Failure is fast and sticky: when a collective of an attempt fails (a
 * contributor's connection went away, a participant's agent is gone, a
 * timeout, the attempt ended), every pending collective of that attempt
 * is answered with the failure, and later contributions to any
 * collective of it are refused with the same message at once: an MPI job
 * whose fence failed cannot go on, and nobody waits for a node that will
 * never come. The record goes when the attempt is forgotten.
 *
 * Pure: no I/O, no clock. A contributor is an opaque token of the
 * caller's; each token is answered exactly once through the table's
 * answer function (possibly from inside the call that completed or
 * failed it), or handed back by coll_token_gone/coll_token_expired.
 */
#ifndef SCHEDULER_COLLECTIVE_H
#define SCHEDULER_COLLECTIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/err.h"

/* How an answer ends a contribution. */
enum coll_outcome {
    COLL_DONE,    /* data: the concatenation */
    COLL_FAILED,  /* msg: why (a node's agent went away, the attempt
                   * ended...) */
    COLL_TIMEOUT, /* msg: which nodes had not contributed */
};

/* Called once per token: outcome, msg (NULL for COLL_DONE) and data/len
 * (COLL_DONE only) are borrowed for the call. */
typedef void coll_answer_fn(void *token, enum coll_outcome outcome,
    const char *msg, const char *data, size_t len, void *arg);

/* Whether (job, attempt) may still run collectives; when not, why (into
 * why[len]). */
typedef bool coll_alive_fn(int64_t job, int attempt, char *why, size_t len,
    void *arg);

#define COLL_ID_MAX 128 /* bytes of an id */

struct coll_table;

struct coll_table *coll_table_create(coll_answer_fn *answer, void *arg);
/* Frees the table; pending tokens are dropped unanswered (the caller
 * answers them first with coll_fail_all when it must). Accepts NULL. */
void coll_table_destroy(struct coll_table *t);

/*
 * node contributes data[0..len) (copied) to collective id of (job,
 * attempt) among nodes[0..nnodes) (distinct names, node included),
 * waiting as token. Returns 0 (token is kept and answered later, or
 * already was: the collective completed); or, token not kept: -EINVAL
 * (node not among nodes, a duplicate name, or a participant list other
 * than the first contributor's), -EEXIST (node already contributed to
 * it), -EPIPE (the attempt's collectives failed earlier: err holds that
 * failure's message).
 */
int coll_contribute(struct coll_table *t, int64_t job, int attempt,
    const char *id, char *const *nodes, size_t nnodes, const char *node,
    const char *data, size_t len, void *token, struct err *err);

/* The attempt's collectives fail with why (answering every pending
 * token) and so will later ones. */
void coll_fail_attempt(struct coll_table *t, int64_t job, int attempt,
    const char *why);
/* Every attempt with a pending collective that names node fails with
 * "node '<node>': <why>" (its agent is gone). */
void coll_node_gone(struct coll_table *t, const char *node, const char *why);
/* token's connection went away: it is dropped unanswered and its
 * attempt fails with "node '<node>': <why>". Unknown tokens are ignored. */
void coll_token_gone(struct coll_table *t, void *token, const char *why);
/* token's deadline passed: its attempt fails, with COLL_TIMEOUT for the
 * tokens of token's collective (naming the nodes that had not
 * contributed) and COLL_FAILED for the others. */
void coll_token_expired(struct coll_table *t, void *token);
/* Attempts for which alive() says no fail with its reason and are
 * forgotten (no sticky record is kept for them: they are over). */
void coll_sweep(struct coll_table *t, coll_alive_fn *alive, void *arg);
/* Every pending token is answered COLL_FAILED with why; the table is
 * emptied. */
void coll_fail_all(struct coll_table *t, const char *why);

/* Pending contributions, and attempts with a record (for tests). */
size_t coll_pending(const struct coll_table *t);
size_t coll_attempts(const struct coll_table *t);

#endif
