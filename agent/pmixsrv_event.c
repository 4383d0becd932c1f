/*
 * pmixsrv_event.c - a gc or checkpoint directive as a PMIx event
 * (pmixsrv_event.h)
 *
 * What the PMIx notes measured with libpmix 4.2.2 and Open MPI 4.1 (§5):
 * a custom code reaches exactly the ranks that registered a handler for
 * it; PMIX_RANGE_CUSTOM with {nspace, wildcard} names the attempt's ranks
 * whatever else the server hosts; without PMIX_EVENT_NON_DEFAULT, a
 * handler that passes the event on lets it reach Open MPI's default
 * handler, which aborts the rank; the server caches a notification (512
 * events, 120 s: the MCA parameters pmix_max_events and
 * pmix_event_eviction_time) and replays it to a rank that registers later.
 */
#include "agent/pmixsrv_event.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <pmix.h>

#include "common/xalloc.h"
#include "sdk/c/lockstep.h"

int
pmixsrv_event_code(enum proto_directive_kind k)
{
    switch (k) {
    case PROTO_DIRECTIVE_CHECKPOINT:
        return LOCKSTEP_PMIX_EVENT_CHECKPOINT;
    case PROTO_DIRECTIVE_GC:
        return LOCKSTEP_PMIX_EVENT_GC;
    case PROTO_DIRECTIVE_DUMP:
        break;
    }
    return 0;
}

static bool
pmixsrv_seen_has(const struct pmixsrv_seen *seen, uint64_t seq)
{
    for (size_t i = 0; i < seen->n; i++) {
        if (seen->seqs[i] == seq)
            return true;
    }
    return false;
}

size_t
pmixsrv_event_fresh(struct pmixsrv_seen *seen, const struct proto_directive *ds,
    size_t n, size_t *fresh)
{
    uint64_t *now = xcalloc(n + 1, sizeof(*now));
    size_t nnow = 0, nfresh = 0;

    for (size_t i = 0; i < n; i++) {
        if (pmixsrv_event_code(ds[i].kind) == 0)
            continue;
        if (!pmixsrv_seen_has(seen, ds[i].seq))
            fresh[nfresh++] = i;
        now[nnow++] = ds[i].seq;
    }
    free(seen->seqs);
    seen->seqs = now;
    seen->n = nnow;
    return nfresh;
}

void
pmixsrv_seen_free(struct pmixsrv_seen *seen)
{
    free(seen->seqs);
    seen->seqs = NULL;
    seen->n = 0;
}

void
pmixsrv_event_info(const char *nspace, int attempt,
    const struct proto_directive *d, pmix_info_t **info, size_t *ninfo)
{
    const char *kind = proto_directive_kind_str(d->kind);
    uint32_t att = attempt > 0 ? (uint32_t)attempt : 0;
    pmix_data_array_t range;
    pmix_proc_t all;
    bool yes = true;
    pmix_info_t *in;

    PMIX_INFO_CREATE(in, 6);
    PMIX_INFO_LOAD(&in[0], LOCKSTEP_PMIX_KEY_KIND, kind, PMIX_STRING);
    PMIX_INFO_LOAD(&in[1], LOCKSTEP_PMIX_KEY_STEP, &d->step, PMIX_INT64);
    PMIX_INFO_LOAD(&in[2], LOCKSTEP_PMIX_KEY_SEQ, &d->seq, PMIX_UINT64);
    PMIX_INFO_LOAD(&in[3], LOCKSTEP_PMIX_KEY_ATTEMPT, &att, PMIX_UINT32);
    /* The range is copied in: `all` may live on the stack. */
    PMIX_LOAD_PROCID(&all, nspace, PMIX_RANK_WILDCARD);
    range.type = PMIX_PROC;
    range.size = 1;
    range.array = &all;
    PMIX_INFO_LOAD(&in[4], PMIX_EVENT_CUSTOM_RANGE, &range, PMIX_DATA_ARRAY);
    PMIX_INFO_LOAD(&in[5], PMIX_EVENT_NON_DEFAULT, &yes, PMIX_BOOL);
    *info = in;
    *ninfo = 6;
}

pmix_status_t
pmixsrv_event_notify(const char *nspace, int attempt,
    const struct proto_directive *d, pmix_op_cbfunc_t cb,
    struct pmixsrv_note **note)
{
    struct pmixsrv_note *nt = xcalloc(1, sizeof(*nt));
    pmix_proc_t source;
    pmix_status_t rc;

    *note = NULL;
    pmixsrv_event_info(nspace, attempt, d, &nt->info, &nt->ninfo);
    PMIX_LOAD_PROCID(&source, nspace, PMIX_RANK_UNDEF);
    rc = PMIx_Notify_event(pmixsrv_event_code(d->kind), &source,
        PMIX_RANGE_CUSTOM, nt->info, nt->ninfo, cb, nt);
    if (rc != PMIX_SUCCESS) {
        /* Done already (OPERATION_SUCCEEDED) or refused: no callback. */
        pmixsrv_note_free(nt);
        return rc;
    }
    *note = nt;
    return rc;
}

void
pmixsrv_note_free(struct pmixsrv_note *note)
{
    if (note == NULL)
        return;
    PMIX_INFO_FREE(note->info, note->ninfo);
    free(note);
}
