/*
 * test_pmixsrv_event.c - unit tests for agent/pmixsrv_event.c: which
 * listed directives become PMIx events (once per seq, forgotten once no
 * longer listed), their codes, and the event's info list as a rank reads
 * it. A build without libpmix skips them all.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "version.h"

#if LOCKSTEP_HAVE_PMIX
#include <pmix.h>

#include "agent/pmixsrv_event.h"
#include "sdk/c/lockstep.h"
#include "tests/tap.h"

static const pmix_info_t *
find(const pmix_info_t *info, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++) {
        if (PMIX_CHECK_KEY(&info[i], key))
            return &info[i];
    }
    return NULL;
}

static void
test_codes(void)
{
    is_int(pmixsrv_event_code(PROTO_DIRECTIVE_GC), LOCKSTEP_PMIX_EVENT_GC,
        "gc has its code");
    is_int(pmixsrv_event_code(PROTO_DIRECTIVE_CHECKPOINT),
        LOCKSTEP_PMIX_EVENT_CHECKPOINT, "checkpoint has its code");
    is_int(pmixsrv_event_code(PROTO_DIRECTIVE_DUMP), 0,
        "a stack dump (the agent's own) is no event");
    ok(LOCKSTEP_PMIX_EVENT_GC < PMIX_EXTERNAL_ERR_BASE &&
            LOCKSTEP_PMIX_EVENT_CHECKPOINT < PMIX_EXTERNAL_ERR_BASE &&
            LOCKSTEP_PMIX_EVENT_GC != LOCKSTEP_PMIX_EVENT_CHECKPOINT,
        "the codes are distinct custom codes, below PMIX_EXTERNAL_ERR_BASE");
}

static void
test_fresh(void)
{
    struct pmixsrv_seen seen = { NULL, 0 };
    struct proto_directive ds[] = {
        { 1, PROTO_DIRECTIVE_GC, 100 },
        { 2, PROTO_DIRECTIVE_DUMP, -1 },
        { 3, PROTO_DIRECTIVE_CHECKPOINT, 200 },
    };
    struct proto_directive later[] = {
        { 3, PROTO_DIRECTIVE_CHECKPOINT, 200 },
        { 4, PROTO_DIRECTIVE_GC, 300 },
    };
    size_t fresh[4];

    is_int(pmixsrv_event_fresh(&seen, ds, 0, fresh), 0, "nothing listed");
    is_int(pmixsrv_event_fresh(&seen, ds, 3, fresh), 2,
        "the first listing: gc and checkpoint, not the dump");
    ok(fresh[0] == 0 && fresh[1] == 2, "their indices, in listing order");
    is_int(seen.n, 2, "both remembered");
    is_int(pmixsrv_event_fresh(&seen, ds, 3, fresh), 0,
        "the same listing again: nothing (duplicates are harmless)");
    is_int(pmixsrv_event_fresh(&seen, later, 2, fresh), 1,
        "seq 1 done, seq 4 new: only seq 4");
    is_int(fresh[0], 1, "its index");
    ok(seen.n == 2 && seen.seqs[0] == 3 && seen.seqs[1] == 4,
        "seq 1, no longer listed, is forgotten");
    is_int(pmixsrv_event_fresh(&seen, later, 0, fresh), 0, "an empty listing");
    is_int(seen.n, 0, "forgets everything");
    pmixsrv_seen_free(&seen);
    ok(seen.seqs == NULL && seen.n == 0, "freed");
}

static void
test_info(void)
{
    struct proto_directive d = { 7, PROTO_DIRECTIVE_CHECKPOINT, 4200 };
    const pmix_info_t *in;
    pmix_info_t *info;
    size_t n;
    pmix_proc_t *p;

    pmixsrv_event_info("12.3", 3, &d, &info, &n);
    is_int(n, 6, "six entries");
    in = find(info, n, LOCKSTEP_PMIX_KEY_KIND);
    ok(in != NULL && in->value.type == PMIX_STRING &&
            strcmp(in->value.data.string, "checkpoint") == 0,
        "kind: the string \"checkpoint\"");
    in = find(info, n, LOCKSTEP_PMIX_KEY_STEP);
    ok(in != NULL && in->value.type == PMIX_INT64 &&
            in->value.data.int64 == 4200,
        "step: int64 4200");
    in = find(info, n, LOCKSTEP_PMIX_KEY_SEQ);
    ok(in != NULL && in->value.type == PMIX_UINT64 &&
            in->value.data.uint64 == 7,
        "seq: uint64 7");
    in = find(info, n, LOCKSTEP_PMIX_KEY_ATTEMPT);
    ok(in != NULL && in->value.type == PMIX_UINT32 &&
            in->value.data.uint32 == 3,
        "attempt: uint32 3");
    in = find(info, n, PMIX_EVENT_NON_DEFAULT);
    ok(in != NULL && in->value.type == PMIX_BOOL && in->value.data.flag,
        "non-default: Open MPI's default handler never sees it");
    in = find(info, n, PMIX_EVENT_CUSTOM_RANGE);
    ok(in != NULL && in->value.type == PMIX_DATA_ARRAY &&
            in->value.data.darray != NULL &&
            in->value.data.darray->type == PMIX_PROC &&
            in->value.data.darray->size == 1,
        "custom range: one proc");
    if (in != NULL && in->value.type == PMIX_DATA_ARRAY &&
        in->value.data.darray != NULL) {
        p = in->value.data.darray->array;
        ok(PMIX_CHECK_NSPACE(p->nspace, "12.3") &&
                p->rank == PMIX_RANK_WILDCARD,
            "{the attempt's namespace, every rank} (a copy)");
    } else {
        skip(1, "no range");
    }
    ok(find(info, n, PMIX_EVENT_DO_NOT_CACHE) == NULL,
        "cached: a rank registering later still gets it");
    PMIX_INFO_FREE(info, n);

    d.kind = PROTO_DIRECTIVE_GC;
    d.step = -1;
    pmixsrv_event_info("12.3", 3, &d, &info, &n);
    in = find(info, n, LOCKSTEP_PMIX_KEY_KIND);
    ok(in != NULL && strcmp(in->value.data.string, "gc") == 0, "kind: gc");
    in = find(info, n, LOCKSTEP_PMIX_KEY_STEP);
    ok(in != NULL && in->value.data.int64 == -1, "step -1 (at once) kept");
    PMIX_INFO_FREE(info, n);
}

int
main(void)
{
    plan(NO_PLAN);
    test_codes();
    test_fresh();
    test_info();
    return done_testing();
}
#else
#include "tests/tap.h"

int
main(void)
{
    plan(NO_PLAN);
    skip(1, "a build without libpmix");
    return done_testing();
}
#endif
