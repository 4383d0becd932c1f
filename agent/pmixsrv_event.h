/*
 * pmixsrv_event.h - a gc or checkpoint directive as a PMIx event
 *
 * The pieces of pmixsrv.c's event push that need no running loop: which
 * listed directives are new (once per seq), the event's code and info
 * list, and the PMIx_Notify_event call itself. The codes and payload keys
 * are public, in sdk/c/lockstep.h (LOCKSTEP_PMIX_*; docs/cadence.md).
 */
#ifndef AGENT_PMIXSRV_EVENT_H
#define AGENT_PMIXSRV_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include <pmix_common.h>

#include "common/proto.h"

/* The seqs of one namespace's directives already notified. */
struct pmixsrv_seen {
    uint64_t *seqs;
    size_t n;
};

/* An event handed to libpmix: its info list, which must live until
 * libpmix's completion callback (pmixsrv.c keeps it in a list). */
struct pmixsrv_note {
    pmix_info_t *info;
    size_t ninfo;
    struct pmixsrv_note *next;
};

/* The event code of directive kind k (LOCKSTEP_PMIX_EVENT_*); 0 for a
 * kind that is not the ranks' (a stack dump). */
int pmixsrv_event_code(enum proto_directive_kind k);

/*
 * Which of the listed directives ds[0..n) to notify: those with an event
 * code whose seq *seen does not hold. Their indices are written to fresh
 * (room for n) in listing order; returns how many. *seen then holds the
 * seqs of exactly the listed directives that have a code: one that is no
 * longer listed is done (every local rank acknowledged it) and is
 * forgotten, so *seen is never larger than the listing.
 */
size_t pmixsrv_event_fresh(struct pmixsrv_seen *seen,
    const struct proto_directive *ds, size_t n, size_t *fresh);

void pmixsrv_seen_free(struct pmixsrv_seen *seen);

/*
 * The info list of the event for directive d of attempt `attempt`, whose
 * namespace is nspace: the payload (LOCKSTEP_PMIX_KEY_*), the custom range
 * {nspace, PMIX_RANK_WILDCARD} and PMIX_EVENT_NON_DEFAULT. Allocated with
 * PMIX_INFO_CREATE into *info; free with PMIX_INFO_FREE(*info, *ninfo).
 */
void pmixsrv_event_info(const char *nspace, int attempt,
    const struct proto_directive *d, pmix_info_t **info, size_t *ninfo);

/*
 * Notify every rank of namespace nspace of directive d (a kind with a
 * code), source {nspace, PMIX_RANK_UNDEF}, cached by libpmix for ranks
 * that register their handler later. On PMIX_SUCCESS, *note (allocated)
 * holds the info list and cb(status, *note) will be called on libpmix's
 * thread once libpmix is done with it; on any other status nothing is
 * pending and *note is NULL. Loop thread.
 */
pmix_status_t pmixsrv_event_notify(const char *nspace, int attempt,
    const struct proto_directive *d, pmix_op_cbfunc_t cb,
    struct pmixsrv_note **note);

/* Free a note libpmix is done with (or a server that is gone). */
void pmixsrv_note_free(struct pmixsrv_note *note);

#endif
