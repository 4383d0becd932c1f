/*
 * failure.c - failure evidence and its classification (pure)
 *
 * failure.h states the rules.
 */
#include "scheduler/failure.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/xalloc.h"

static char *
dup_or_null(const char *s)
{
    return s ? xstrdup(s) : NULL;
}

static void
set_str(char **dst, const char *s)
{
    char *copy = dup_or_null(s);

    free(*dst);
    *dst = copy;
}

void
failure_case_init(struct failure_case *fc, enum policy_kind kind)
{
    memset(fc, 0, sizeof(*fc));
    evidence_init(&fc->ev, kind);
}

void
failure_case_release(struct failure_case *fc)
{
    evidence_release(&fc->ev);
}

cJSON *
failure_dumps_json(const struct attempt *a, int hung, size_t max)
{
    cJSON *arr = cJSON_CreateArray();
    size_t n = 0;

    for (int pass = 0; pass < 2; pass++) {
        for (size_t r = 0; r < a->nranks && n < max; r++) {
            const struct attempt_rank *rk = &a->ranks[r];
            cJSON *d;

            if ((pass == 0) != ((int)r == hung) || rk->dump[0] == '\0')
                continue;
            d = cJSON_CreateObject();
            jsonx_add_int(d, "rank", rk->rank);
            jsonx_add_str(d, "dump", rk->dump);
            cJSON_AddItemToArray(arr, d);
            n++;
        }
    }
    return arr;
}

/* ---- classification ------------------------------------------------------ */

/* The fields every rank-based case shares. */
static void
case_from_rank(struct failure_case *fc, const struct placement *p,
    const struct attempt_rank *r)
{
    fc->ev.node = dup_or_null(p->node_name);
    fc->ev.rank = r->rank;
    fc->ev.last_step = r->step;
    if (p->node)
        fc->ev.last_heartbeat_ms = p->node->last_seen_ms;
}

static void
reason_append(char *buf, size_t len, const char *what, const char *tail)
{
    size_t n = strlen(buf);

    if (n < len)
        snprintf(buf + n, len - n, " (%s%s)", what, tail);
}

void
failure_case_rank(struct failure_case *fc, const struct attempt *a,
    const struct attempt_rank *r, const struct node *node, int64_t started_ms,
    int64_t lease_ms)
{
    const struct placement *p = &a->placements[r->node_rank];
    char what[PROTO_NODE_NAME_MAX + 16];

    attempt_rank_failure_str(a, r, fc->reason, sizeof(fc->reason));
    if (r->state == PROTO_RANK_LOST) {
        fc->ev.kind = POLICY_KIND_LOST_RANKS;
        fc->blame = true;
    } else if (r->fenced) {
        fc->ev.kind = POLICY_KIND_NODE_LOST;
        fc->ev.fenced = true;
        fc->blame = r->end_ms <= 0 || r->end_ms > started_ms + lease_ms;
        snprintf(what, sizeof(what), "fenced: node %s",
            p->node_name ? p->node_name : "?");
        reason_append(fc->reason, sizeof(fc->reason), what,
            " was cut off from the scheduler");
    } else if (r->launch_error != NULL) {
        char where[96];
        int room;

        fc->ev.kind = POLICY_KIND_LAUNCH_FAILED;
        /* The cause is cut, never where it happened. */
        snprintf(where, sizeof(where), " (rank %d on node %.64s)", r->rank,
            p->node_name ? p->node_name : "?");
        room = (int)(sizeof(fc->reason) - strlen(where)) - 16;
        snprintf(fc->reason, sizeof(fc->reason), "launch failed: %.*s%s",
            room > 0 ? room : 0, r->launch_error, where);
    } else {
        fc->ev.kind = POLICY_KIND_RANK_EXIT;
        fc->blame = true;
        fc->suspect = node && (node->lost || node->unhealthy);
    }
    case_from_rank(fc, p, r);
    fc->ev.has_exit = r->has_exit;
    fc->ev.exit_code = r->exit_code;
    fc->ev.signal = r->signal;
    /* A launch failure's evidence is its cause (the rank's stderr holds
     * nothing else). */
    fc->ev.stderr_tail = dup_or_null(
        r->launch_error != NULL ? r->launch_error : r->stderr_tail);
    fc->ev.failed_ms = r->end_ms;
    if (node)
        fc->ev.last_heartbeat_ms = node->last_seen_ms;
}

void
failure_case_lost(struct failure_case *fc, const struct attempt *a,
    const struct placement *p, const struct attempt_rank *first,
    enum policy_kind kind, const char *why)
{
    fc->ev.kind = kind;
    attempt_rank_failure_str(a, first, fc->reason, sizeof(fc->reason));
    if (why && *why)
        reason_append(fc->reason, sizeof(fc->reason), why, "");
    case_from_rank(fc, p, first);
    fc->blame = true;
    fc->ev.failed_ms = kind == POLICY_KIND_NODE_LOST ? fc->ev.last_heartbeat_ms
                                                     : 0;
}

void
failure_case_excluded(struct failure_case *fc, const struct attempt *a,
    const struct placement *p, const char *actor, bool blame, const char *why)
{
    const struct attempt_rank *first =
        &a->ranks[(size_t)p->node_rank * (size_t)a->ranks_per_node];

    fc->ev.kind = POLICY_KIND_NODE_EXCLUDED;
    case_from_rank(fc, p, first);
    set_str(&fc->ev.actor, actor);
    fc->blame = blame;
    snprintf(fc->reason, sizeof(fc->reason), "%s", why ? why : "");
}

/* The rank whose dump shows it stopped or stuck, or -1. */
static int
stuck_rank(const struct attempt *a)
{
    for (size_t r = 0; r < a->nranks; r++) {
        if (policy_dump_stuck(a->ranks[r].dump))
            return (int)r;
    }
    return -1;
}

void
failure_case_hang(struct failure_case *fc, const struct attempt *a,
    const struct evidence *pending)
{
    int hung = pending->rank, stuck;

    evidence_copy(&fc->ev, pending);
    fc->ev.kind = POLICY_KIND_HANG;
    fc->ev.blame = EVIDENCE_BLAME_NONE;
    if (fc->ev.source == NULL)
        fc->ev.source = xstrdup("none");
    fc->blame = pending->node != NULL;
    if ((hung < 0 || (size_t)hung >= a->nranks ||
            !policy_dump_stuck(a->ranks[hung].dump)) &&
        (stuck = stuck_rank(a)) >= 0) {
        const struct attempt_rank *rk = &a->ranks[stuck];

        hung = stuck;
        fc->ev.rank = stuck;
        set_str(&fc->ev.node, a->placements[rk->node_rank].node_name);
        fc->ev.last_step = rk->step;
        if (rk->idle_ms > 0)
            fc->ev.idle_ms = rk->idle_ms;
        fc->blame = true;
    }
    if (hung >= 0 && (size_t)hung < a->nranks)
        set_str(&fc->ev.stderr_tail, a->ranks[hung].stderr_tail);
    snprintf(fc->reason, sizeof(fc->reason),
        "rank %d hung: no progress "
        "for %lld ms (watchdog measured %s)",
        hung, (long long)fc->ev.idle_ms, fc->ev.source);
}
