/*
 * watchdog.c - hangs: no progress for the job's hang_timeout_s
 *
 * Each agent report carries, for every rank, how long it has made no
 * progress (idle_ms, measured by the agent from the SDK's step reports,
 * or from output when the rank reports no steps) and which of the two it
 * measured. The tick adds the time since that report and, once a rank of
 * a RUNNING attempt passes the job's timeout, picks the rank furthest
 * behind (policy.c): its peers block in the next collective waiting for
 * it. An attempt in which some rank has shown no progress at all yet is
 * still starting (imports, rendezvous, loading a checkpoint; the ranks
 * that printed something meanwhile wait for the others): every rank then
 * gets at least WATCHDOG_STARTUP_MS before it counts as hung.
 *
 * Before the teardown, the evidence: the attempt's dump_seq goes up in
 * every node's launch, and each agent signals its ranks (SIGUSR1: Python
 * stacks into stderr) and reports /proc state and kernel stacks as the
 * ranks' `dump`, then reports that dump_seq as served. The attempt fails
 * as a hang once every node served it, or after dump_timeout_ms. A rank
 * whose dump shows it stopped or in uninterruptible sleep is then the
 * better culprit than the one progress pointed at (its peers wait in S).
 *
 * While it waits, the hang's evidence sits in the attempt's failure column
 * with dump_deadline_ms set (both persisted), so a scheduler restarted in
 * the middle finishes the same hang, with the same deadline.
 */
#include "scheduler/schedd.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonx.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

/* Dumps kept in the failure's evidence (each rank's stays in its row). */
#define WATCHDOG_DUMPS_MAX 64
/* The least a rank that has not shown any progress yet gets. */
#define WATCHDOG_STARTUP_MS (300 * 1000)

/* The rank's idle time now, or -1 when it is not watched: not running, or
 * no report since the scheduler started. */
static int64_t
rank_idle_now(const struct attempt_rank *rk, int64_t mono)
{
    if (rk->state != PROTO_RANK_RUNNING || rk->seen_mono == 0)
        return -1;
    return rk->idle_ms + (mono - rk->seen_mono);
}

/*
 * Whether a's ranks can be judged now. Not while a node of it is silent
 * or gone (the ranks elsewhere then wait for its ranks: node loss is the
 * failure, and the node-loss timer finds it), nor while a failed rank's
 * verdict waits for such a node (lifecycle.c).
 */
static bool
attempt_watchable(const struct schedd *sd, const struct attempt *a,
    int64_t mono)
{
    for (int k = 0; k < a->nnodes; k++) {
        const struct node *node = a->placements[k].node;

        if (node == NULL || node->lost || schedd_node_silent(sd, node, mono))
            return false;
    }
    return attempt_first_failure(a) == NULL;
}

/* Hang detected: ask every node for stack dumps and start the wait. */
static int
hang_start(struct schedd *sd, struct attempt *a, const struct attempt_rank *rk,
    int64_t idle, int64_t now)
{
    const struct placement *p = &a->placements[rk->node_rank];
    cJSON *ev = cJSON_CreateObject();
    char *text;
    int rc;

    jsonx_add_int(ev, "rank", rk->rank);
    jsonx_add_str(ev, "node", p->node_name);
    jsonx_add_int(ev, "idle_ms", idle);
    jsonx_add_str(ev, "source", proto_progress_str(rk->progress));
    jsonx_add_int(ev, "last_step", rk->step);
    jsonx_add_int(ev, "failed_ms", now - idle);
    if (p->node)
        jsonx_add_int(ev, "last_heartbeat_ms", p->node->last_seen_ms);
    text = jsonx_print(ev);
    cJSON_Delete(ev);
    attempt_set_failure(a, POLICY_KIND_HANG, text);
    free(text);
    a->has_failure = false;     /* evidence pending: not failed yet */
    a->dump_seq++;
    a->dump_deadline_ms = now + sd->dump_timeout_ms;
    rc = schedd_attempt_save(sd, a);
    if (rc < 0)
        return rc;
    log_notice("job=%lld attempt=%d rank=%d node=%s hung: no progress for "
        "%lld ms (%s); collecting stack dumps", (long long)a->job_id, a->num,
        rk->rank, p->node_name, (long long)idle,
        proto_progress_str(rk->progress));
    schedd_attempt_wake_nodes(sd, a);
    if (sd->dump_timeout_ms <= 0)
        return schedd_watchdog_finish(sd, a);
    return 0;
}

static int64_t
json_int(const cJSON *o, const char *key, int64_t def)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

    return cJSON_IsNumber(v) ? (int64_t)v->valuedouble : def;
}

int
schedd_watchdog_finish(struct schedd *sd, struct attempt *a)
{
    cJSON *ev = cJSON_Parse(a->failure ? a->failure : "{}");
    const char *node, *source;
    struct schedd_failure f;
    char reason[200];
    size_t ndumps = 0;
    int hung;
    int rc;

    a->dump_deadline_ms = 0;
    hung = (int)json_int(ev, "rank", -1);
    node = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev,
        "node"));
    source = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(ev,
        "source"));
    schedd_failure_init(&f, POLICY_KIND_HANG);
    f.node = node;
    f.rank = hung;
    f.idle_ms = json_int(ev, "idle_ms", 0);
    f.source = source ? source : "none";
    f.last_step = json_int(ev, "last_step", -1);
    f.failed_ms = json_int(ev, "failed_ms", 0);
    f.last_heartbeat_ms = json_int(ev, "last_heartbeat_ms", 0);
    f.blame = node != NULL;
    /* The dumps may point at the culprit better than progress did. */
    if (hung < 0 || (size_t)hung >= a->nranks ||
        !policy_dump_stuck(a->ranks[hung].dump)) {
        for (size_t r = 0; r < a->nranks; r++) {
            const struct attempt_rank *rk = &a->ranks[r];

            if (!policy_dump_stuck(rk->dump))
                continue;
            log_info("job=%lld attempt=%d: rank %zu is stopped or stuck "
                "(its dump); blaming it rather than rank %d",
                (long long)a->job_id, a->num, r, hung);
            hung = (int)r;
            f.rank = hung;
            f.node = a->placements[rk->node_rank].node_name;
            f.last_step = rk->step;
            if (rk->idle_ms > 0)
                f.idle_ms = rk->idle_ms;
            f.blame = true;
            break;
        }
    }
    if (hung >= 0 && (size_t)hung < a->nranks)
        f.stderr_tail = a->ranks[hung].stderr_tail;
    /* The hung rank's dump first, then the others in rank order. */
    f.dumps = cJSON_CreateArray();
    for (size_t pass = 0; pass < 2; pass++) {
        for (size_t r = 0; r < a->nranks && ndumps < WATCHDOG_DUMPS_MAX;
             r++) {
            const struct attempt_rank *rk = &a->ranks[r];
            cJSON *d;

            if ((pass == 0) != ((int)r == hung) || rk->dump[0] == '\0')
                continue;
            d = cJSON_CreateObject();
            jsonx_add_int(d, "rank", rk->rank);
            jsonx_add_str(d, "dump", rk->dump);
            cJSON_AddItemToArray(f.dumps, d);
            ndumps++;
        }
    }
    snprintf(reason, sizeof(reason), "rank %d hung: no progress for %lld "
        "ms (watchdog measured %s)", hung, (long long)f.idle_ms, f.source);
    f.reason = reason;
    log_info("job=%lld attempt=%d: %zu stack dump(s) received",
        (long long)a->job_id, a->num, ndumps);
    rc = schedd_attempt_failed(sd, a, &f);
    cJSON_Delete(ev);
    return rc;
}

int
schedd_watchdog_dumps(struct schedd *sd, struct attempt *a)
{
    if (a->dump_deadline_ms <= 0 || !attempt_state_active(a->state))
        return 0;
    for (int k = 0; k < a->nnodes; k++) {
        const struct placement *p = &a->placements[k];

        /* A node that is gone sends nothing; the others decide. */
        if (p->released || p->node == NULL || p->node->lost)
            continue;
        if (p->dump_acked < a->dump_seq)
            return 0;
    }
    return schedd_watchdog_finish(sd, a);
}

void
schedd_watchdog_tick(struct schedd *sd)
{
    int64_t mono = timeid_mono_ms(), now = timeid_now_ms();
    int64_t *idle = NULL, *step = NULL, *limit = NULL;
    size_t cap = 0;

    for (struct attempt *a = sd->attempts; a; a = a->next) {
        const struct job *job = a->job;
        int64_t t;
        long pick;

        if (!attempt_state_active(a->state) || !schedd_available(sd))
            continue;
        if (a->dump_deadline_ms > 0) {
            if (now >= a->dump_deadline_ms) {
                log_info("job=%lld attempt=%d: stack dump wait over",
                    (long long)a->job_id, a->num);
                schedd_watchdog_finish(sd, a);
            }
            continue;
        }
        /* Only once every rank runs: before that, ranks waiting for a
         * peer that never started are not hung, the start is. */
        if (job == NULL || job->spec.hang_timeout_s <= 0 ||
            a->state != ATTEMPT_STATE_RUNNING ||
            !attempt_watchable(sd, a, mono))
            continue;
        if (a->nranks > cap) {
            cap = a->nranks;
            idle = xreallocarray(idle, cap, sizeof(*idle));
            step = xreallocarray(step, cap, sizeof(*step));
            limit = xreallocarray(limit, cap, sizeof(*limit));
        }
        t = (int64_t)job->spec.hang_timeout_s * 1000;
        for (size_t r = 0; r < a->nranks; r++) {
            if (a->ranks[r].state == PROTO_RANK_RUNNING &&
                a->ranks[r].progress == PROTO_PROGRESS_NONE &&
                t < WATCHDOG_STARTUP_MS)
                t = WATCHDOG_STARTUP_MS;
        }
        for (size_t r = 0; r < a->nranks; r++) {
            idle[r] = rank_idle_now(&a->ranks[r], mono);
            step[r] = a->ranks[r].step;
            limit[r] = t;
        }
        pick = policy_hang_pick(idle, step, limit, a->nranks);
        if (pick >= 0)
            hang_start(sd, a, &a->ranks[pick], idle[pick], now);
    }
    free(idle);
    free(step);
    free(limit);
}
