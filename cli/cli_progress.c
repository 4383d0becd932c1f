/*
 * cli_progress.c - a job's progress as one line per change (cli.h)
 *
 * `submit --wait` polls the job and hands each reply here; what changed
 * since the last reply becomes lines such as
 *
 *   job 7 PENDING: needs 3 nodes with 1 CPU each; the cluster has 1 node
 *   job 7 PLACED on n1, n2 (attempt 1)
 *   job 7 RUNNING (attempt 1)
 *   job 7 RESTARTING after attempt 1: rank 0 exited with code 3
 *   job 7 PLACED on n2, n3 (attempt 2)
 *   job 7 RUNNING (attempt 2)
 *
 * A pending job's reason is told again when it changes (a node joined);
 * a restarting one's is not (it counts down to the next attempt).
 * A poll can miss a short state: an attempt number that grew says the
 * job was placed again, so the placement is always printed, and a
 * restart that was not seen is told from the previous attempt's reason.
 * The final state is not printed here: the caller prints the outcome.
 */
#include "cli/cli.h"

#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"

void
cli_progress_init(struct cli_progress *p, int64_t id)
{
    memset(p, 0, sizeof(*p));
    p->id = id;
    p->reason = xstrdup("");
}

void
cli_progress_release(struct cli_progress *p)
{
    free(p->reason);
    p->reason = NULL;
}

/* The entry of job's "attempts" for attempt num, or NULL. */
static const cJSON *
find_attempt(const cJSON *job, int64_t num)
{
    const cJSON *atts = cJSON_GetObjectItemCaseSensitive(job, "attempts");
    const cJSON *a;

    cJSON_ArrayForEach(a, atts) {
        if (cli_jint(a, "attempt", 0) == num)
            return a;
    }
    return NULL;
}

/* "job 7 PLACED on n1, n2 (attempt 1)". */
static void
add_placed(const struct cli_progress *p, const cJSON *job, int64_t num,
    struct sbuf *out)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(
        find_attempt(job, num), "nodes");
    const cJSON *n;
    const char *sep = " on ";

    sbuf_addf(out, "job %lld PLACED", (long long)p->id);
    cJSON_ArrayForEach(n, nodes) {
        sbuf_addf(out, "%s%s", sep, cli_jstr(n, "node"));
        sep = ", ";
    }
    sbuf_addf(out, " (attempt %lld)\n", (long long)num);
}

/* "job 7 RESTARTING after attempt 1: why". */
static void
add_restarting(struct cli_progress *p, int64_t num, const char *why,
    struct sbuf *out)
{
    sbuf_addf(out, "job %lld RESTARTING after attempt %lld%s%s\n",
        (long long)p->id, (long long)num, *why ? ": " : "", why);
    p->restarted = num;
}

void
cli_progress_update(struct cli_progress *p, const cJSON *job, struct sbuf *out)
{
    const char *state = cli_jstr(job, "state");
    const char *reason = cli_jstr(job, "reason");
    int64_t num = cli_jint(job, "attempt", 0);
    bool restarting = strcmp(state, "RESTARTING") == 0;
    bool changed = strcmp(state, p->state) != 0 ||
                   (strcmp(state, "PENDING") == 0 &&
                       strcmp(reason, p->reason) != 0);

    if (num > p->attempt) {
        const char *why = cli_jstr(find_attempt(job, p->attempt), "reason");

        /* A restart the polls missed is told; a requeue (the job went
         * back to PENDING, "requeued by USER") is not a restart. */
        if (p->attempt > 0 && p->restarted < p->attempt &&
            strcmp(p->state, "PENDING") != 0 &&
            strncmp(why, "requeued", 8) != 0)
            add_restarting(p, p->attempt, why, out);
        add_placed(p, job, num, out);
        p->attempt = num;
        changed = strcmp(state, "PLACED") != 0;
    }
    if (changed && !cli_job_state_final(state)) {
        if (restarting)
            add_restarting(p, num, reason, out);
        else if (strcmp(state, "RUNNING") == 0)
            sbuf_addf(out, "job %lld RUNNING (attempt %lld)\n",
                (long long)p->id, (long long)num);
        else if (strcmp(state, "PLACED") != 0)
            sbuf_addf(out, "job %lld %s%s%s\n", (long long)p->id, state,
                *reason ? ": " : "", reason);
    }
    snprintf(p->state, sizeof(p->state), "%s", state);
    free(p->reason);
    p->reason = xstrdup(reason);
}
