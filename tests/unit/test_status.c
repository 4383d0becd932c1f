/*
 * test_status.c - the scheduler's side of agent reports, on a real
 * database, without a network
 *
 * A scheduler (schedd_create: its SQLite file and log store in a scratch
 * directory) is driven by node reports as its agents send them (JSON,
 * through status_apply), the way POST /v1/agent/status does:
 *
 * - witness sets when a node's "rack" label changes: every node's kept
 *   set is read first (so that each is kept), then one node moves to
 *   another rack, to no rack, from no rack, back and forth in a
 *   deterministic sequence; after each report every node's set equals
 *   witness_pick over the whole table, ranked from scratch. The test
 *   also counts that kept sets were really changed in place (not only
 *   ranked anew), so that it covers nodes_witness_joined's offers.
 * - a gang attempt's node list is in a node's desired state only until
 *   its agent reports the generation that first carried the placement:
 *   the desired state built for GET /v1/agent/work (launch_work, then
 *   proto_work_to_json) names the nodes, and once the agent reported
 *   that generation it no longer does; a node whose agent did not report
 *   it yet still gets the list.
 * - a supervisor's fence notice (nodes_fenced): the attempt fails and is
 *   released at once, the node LOST when its agent connection closed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "common/err.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/proto.h"
#include "common/timeid.h"
#include "common/witness.h"
#include "common/xalloc.h"
#include "scheduler/jobs.h"
#include "scheduler/launch.h"
#include "scheduler/node.h"
#include "scheduler/nodes.h"
#include "scheduler/nodes_witness.h"
#include "scheduler/recovery.h"
#include "scheduler/schedd.h"
#include "scheduler/status.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define NNODES 14

static char dir[PATH_MAX];
static uv_loop_t loop;

static struct schedd *
open_schedd_pings(const char *sub, int ping_ms)
{
    char state[PATH_MAX + 32];
    struct schedd_opts o = {
        .state_dir = state,
        .secret = "0123456789abcdef0123456789abcdef",
        .secret_len = 32,
        .heartbeat_ms = 1000,
        .node_timeout_ms = 10000,
        .lease_ms = 5000,
        .lease_ping_ms = ping_ms,
        .short_lease_ms = 1500,
        .master_port_base = 29500,
        .master_port_count = 100,
        .max_body = 1 << 20,
    };
    struct err err = { 0 };
    struct schedd *sd;

    snprintf(state, sizeof(state), "%s/%s", dir, sub);
    sd = schedd_create(&loop, &o, &err);
    if (sd == NULL)
        diag("schedd_create: %s", err.msg);
    return sd;
}

static struct schedd *
open_schedd(const char *sub)
{
    return open_schedd_pings(sub, 0);
}

static void
close_schedd(struct schedd *sd)
{
    schedd_stop(sd, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    schedd_destroy(sd);
}

/* Node name's report, as its agent sends it: rack NULL for none; jobs a
 * JSON array or NULL. 0 or status_apply's error; the iteration is
 * committed, as the loop does after each request. */
static int
report(struct schedd *sd, const char *name, const char *rack, uint64_t gen,
    const char *jobs)
{
    char text[1024];
    cJSON *json;
    struct proto_node_report rep;
    struct proto_status_reply reply = { 0 };
    struct err err = { 0 };
    int rc;

    snprintf(text, sizeof(text),
        "{\"version\":%d,\"node\":\"%s\",\"agent_id\":\"agent-%s\","
        "\"addr\":\"127.0.0.1\",\"cpus\":8,\"memory_mb\":4096,"
        "\"labels\":{%s%s%s\"zone\":\"z1\"},\"gen\":%llu%s%s}",
        PROTO_VERSION, name, name, rack ? "\"rack\":\"" : "", rack ? rack : "",
        rack ? "\"," : "", (unsigned long long)gen, jobs ? ",\"jobs\":" : "",
        jobs ? jobs : "");
    json = cJSON_Parse(text);
    if (json == NULL || proto_node_report_from_json(json, &rep, &err) < 0) {
        diag("bad report %s: %s", text, err.msg);
        cJSON_Delete(json);
        return -EINVAL;
    }
    cJSON_Delete(json);
    rc = status_apply(sd, &rep, 1000, &reply);
    proto_node_report_release(&rep);
    if (rc == 0)
        rc = schedd_commit(sd);
    if (rc < 0)
        diag("report of %s: %s", name, strerror(-rc));
    return rc;
}

/* ---- witness sets ------------------------------------------------------- */

/* Whether every node's set (as nodes_witness_set gives it, kept or not)
 * is witness_pick's over the whole table. */
static bool
sets_match_scratch(struct schedd *sd, const char *when)
{
    size_t n = node_table_count(&sd->nodes), i = 0;
    const char **names = xcalloc(n + 1, sizeof(*names));
    const char **racks = xcalloc(n + 1, sizeof(*racks));
    bool same = true;

    for (struct node *m = node_table_first(&sd->nodes); m;
         m = node_table_next(m), i++) {
        names[i] = m->name;
        racks[i] = node_label(m, "rack");
    }
    for (struct node *x = node_table_first(&sd->nodes); x;
         x = node_table_next(x)) {
        struct node *kept[WITNESS_MAX];
        size_t want[WITNESS_MAX];
        size_t nk = nodes_witness_set(sd, x, kept);
        size_t nw = witness_pick(x->name, node_label(x, "rack"), names, racks,
            n, want);
        bool eq = nk == nw;

        for (size_t j = 0; eq && j < nk; j++)
            eq = strcmp(kept[j]->name, names[want[j]]) == 0;
        if (!eq) {
            diag("%s: W(%s) kept %zu, from scratch %zu", when, x->name, nk, nw);
            for (size_t j = 0; j < nk || j < nw; j++)
                diag("  %zu: kept %s, from scratch %s", j,
                    j < nk ? kept[j]->name : "-",
                    j < nw ? names[want[j]] : "-");
            same = false;
        }
    }
    free(names);
    free(racks);
    return same;
}

/* What a node's kept set is before a report: its names, in order. */
struct snap {
    char names[WITNESS_MAX][PROTO_NODE_NAME_MAX + 1];
    size_t n;
};

static void
snap_take(const struct node *x, struct snap *s)
{
    s->n = x->nwit;
    for (size_t j = 0; j < x->nwit; j++)
        snprintf(s->names[j], sizeof(s->names[j]), "%s", x->wit[j]->name);
}

static bool
snap_differs(const struct node *x, const struct snap *s)
{
    if (s->n != x->nwit)
        return true;
    for (size_t j = 0; j < s->n; j++)
        if (strcmp(s->names[j], x->wit[j]->name) != 0)
            return true;
    return false;
}

/* How the kept sets of the other nodes fared in one move. */
struct fate {
    int changed_in_place; /* still kept, and different */
    int reranked;         /* dropped, to be ranked anew */
};

/* node moves to rack (NULL: none) by its own report; then every set is
 * compared with the one from scratch. */
static bool
move(struct schedd *sd, const char *node, const char *rack, struct fate *f)
{
    size_t n = node_table_count(&sd->nodes), i = 0;
    struct snap *before = xcalloc(n, sizeof(*before));
    char when[128];
    bool same;

    /* Every set kept, as after a round of status replies. */
    for (struct node *x = node_table_first(&sd->nodes); x;
         x = node_table_next(x), i++) {
        struct node *w[WITNESS_MAX];

        nodes_witness_set(sd, x, w);
        snap_take(x, &before[i]);
    }
    if (report(sd, node, rack, 0, NULL) < 0) {
        free(before);
        return false;
    }
    i = 0;
    for (struct node *x = node_table_first(&sd->nodes); x;
         x = node_table_next(x), i++) {
        if (strcmp(x->name, node) == 0)
            continue;
        if (!x->wit_known)
            f->reranked++;
        else if (snap_differs(x, &before[i]))
            f->changed_in_place++;
    }
    free(before);
    snprintf(when, sizeof(when), "%s to %s", node, rack ? rack : "no rack");
    same = sets_match_scratch(sd, when);
    return same;
}

static void
test_rack_change(void)
{
    static const char *const racks[] = { "r1", "r2", "r3", NULL };
    struct schedd *sd = open_schedd("witness");
    struct fate f = { 0 };
    unsigned seed = 12345;
    int bad = 0, moves = 0;

    ok(sd != NULL, "a scheduler on a scratch directory");
    if (sd == NULL)
        return;
    /* Racks of 6, 4 and 2 nodes and 2 nodes without one. */
    for (int k = 0; k < NNODES; k++) {
        char name[16];

        snprintf(name, sizeof(name), "n%02d", k);
        if (report(sd, name,
                k < 6    ? "r1"
                : k < 10 ? "r2"
                : k < 12 ? "r3"
                         : NULL,
                0, NULL) < 0)
            bad++;
    }
    is_int(bad, 0, "%d nodes registered", NNODES);
    is_int((int)node_table_count(&sd->nodes), NNODES, "all in the table");
    ok(sets_match_scratch(sd, "registered"),
        "after registration every set is the one from scratch");

    ok(move(sd, "n00", "r3", &f), "a node moves to another rack: every set "
                                  "is the one from scratch");
    ok(move(sd, "n07", NULL, &f), "a node loses its rack label: every set is "
                                  "the one from scratch");
    ok(move(sd, "n12", "r1", &f), "a node without a rack gets one: every set "
                                  "is the one from scratch");
    ok(move(sd, "n07", "r2", &f), "the node that lost its rack gets it back: "
                                  "every set is the one from scratch");
    /* A relabel that keeps the rack changes nothing. */
    ok(move(sd, "n03", "r1", &f), "a report with the same rack: every set "
                                  "is the one from scratch");
    for (int s = 0; s < 60; s++) {
        char name[16];

        seed = seed * 1103515245u + 12345u;
        snprintf(name, sizeof(name), "n%02u", (seed >> 16) % NNODES);
        seed = seed * 1103515245u + 12345u;
        if (!move(sd, name, racks[(seed >> 16) % 4], &f))
            bad++;
        moves++;
    }
    is_int(bad, 0,
        "%d random moves (to racks, to none, from none): every "
        "set is the one from scratch after each",
        moves);
    diag("sets changed in place: %d, ranked anew: %d", f.changed_in_place,
        f.reranked);
    ok(f.changed_in_place > 0,
        "some kept sets took the moved node in place (the offer path)");
    ok(f.reranked > 0,
        "some sets that held the moved node were dropped to be ranked anew");
    close_schedd(sd);
}

/* ---- a gang's node list ------------------------------------------------- */

/* Node's desired state as GET /v1/agent/work answers it, read back as
 * its agent reads the text; the entry of job (NULL when absent) in
 * *entry, the whole in the return (delete). */
static cJSON *
desired(const struct node *node, int64_t job, const cJSON **entry)
{
    struct proto_work w;
    cJSON *json, *item;
    char *text;

    launch_work(node, &w);
    json = proto_work_to_json(&w);
    launch_work_release(&w);
    text = jsonx_print(json);
    cJSON_Delete(json);
    json = cJSON_Parse(text);
    free(text);
    *entry = NULL;
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(json, "jobs")) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(item, "job");

        if (cJSON_IsNumber(id) && (int64_t)id->valuedouble == job)
            *entry = item;
    }
    return json;
}

/* The names in entry's "nodes", comma-separated; "" when it has none. */
static void
named(const cJSON *entry, char *buf, size_t len)
{
    const cJSON *item;
    size_t n = 0;

    buf[0] = '\0';
    cJSON_ArrayForEach(item, cJSON_GetObjectItemCaseSensitive(entry, "nodes"))
        n += (size_t)snprintf(buf + n, len - n, "%s%s", n ? "," : "",
            cJSON_GetStringValue(item));
}

static void
test_gang_nodes(void)
{
    struct schedd *sd = open_schedd("gang");
    const char *spec_text = "{\"version\":1,\"name\":\"gang\","
                            "\"argv\":[\"true\"],\"nodes\":3}";
    struct node *nodes[3];
    struct proto_job_spec spec;
    struct err err = { 0 };
    struct job *job = NULL;
    const cJSON *e0, *e1;
    cJSON *json, *d0, *d1;
    char list[256], jobs[256];
    uint64_t gen0, gen1;
    int rc;

    ok(sd != NULL, "a scheduler on a scratch directory");
    if (sd == NULL)
        return;
    rc = report(sd, "g0", NULL, 0, NULL);
    if (rc == 0)
        rc = report(sd, "g1", NULL, 0, NULL);
    if (rc == 0)
        rc = report(sd, "g2", NULL, 0, NULL);
    is_int(rc, 0, "three nodes registered");
    json = cJSON_Parse(spec_text);
    rc = proto_job_spec_from_json(json, &spec, &err);
    cJSON_Delete(json);
    is_int(rc, 0, "a three-node job's spec");
    is_int(jobs_submit(sd, "alice", &spec, &job), 0, "it is submitted");
    proto_job_spec_release(&spec);
    if (job == NULL) {
        close_schedd(sd);
        return;
    }
    for (int k = 0; k < 3; k++) {
        char name[8];

        snprintf(name, sizeof(name), "g%d", k);
        nodes[k] = node_table_find(&sd->nodes, name);
    }
    is_int(launch_place(sd, job, nodes, NULL, 29500), 0,
        "it is placed on "
        "g0, g1, g2");
    is_int(schedd_commit(sd), 0, "the placement is committed");
    gen0 = nodes[0]->gen;
    gen1 = nodes[1]->gen;

    d0 = desired(nodes[0], job->id, &e0);
    ok(e0 != NULL, "g0's desired state carries the attempt");
    named(e0, list, sizeof(list));
    is_str(list, "g0,g1,g2",
        "and, its agent not having seen it yet, the "
        "gang's nodes");
    cJSON_Delete(d0);

    /* g0's agent reports the generation that carried it, holding the
     * attempt (its rank running), as an agent does once it started it. */
    snprintf(jobs, sizeof(jobs),
        "[{\"job\":%lld,\"attempt\":1,\"ranks\":[{\"rank\":0,"
        "\"state\":\"running\",\"pid\":4242}]}]",
        (long long)job->id);
    is_int(report(sd, "g0", NULL, gen0, jobs), 0,
        "g0's agent reports generation %llu with the attempt",
        (unsigned long long)gen0);
    is_int((long long)nodes[0]->agent_gen, (long long)gen0,
        "the scheduler keeps the generation g0's agent reported");

    d0 = desired(nodes[0], job->id, &e0);
    d1 = desired(nodes[1], job->id, &e1);
    ok(e0 != NULL, "g0's later desired state still carries the attempt");
    ok(e0 != NULL && !cJSON_HasObjectItem(e0, "nodes"),
        "but no longer the gang's nodes");
    ok(e0 != NULL && cJSON_GetNumberValue(
                         cJSON_GetObjectItemCaseSensitive(e0, "nnodes")) == 3,
        "its size is still there");
    ok(e1 != NULL, "g1's desired state carries the attempt");
    named(e1, list, sizeof(list));
    is_str(list, "g0,g1,g2",
        "and the nodes, g1's agent having reported no "
        "generation since");
    cJSON_Delete(d0);
    cJSON_Delete(d1);

    /* g1's agent reports an older generation first: still the list. */
    is_int(report(sd, "g1", NULL, gen1 - 1, NULL), 0,
        "g1's agent reports the generation before the placement's");
    d1 = desired(nodes[1], job->id, &e1);
    named(e1, list, sizeof(list));
    is_str(list, "g0,g1,g2", "g1's desired state still names the nodes");
    cJSON_Delete(d1);
    close_schedd(sd);
}

/* Submit an n-node job of user alice and place it on nodes; NULL on
 * failure (said). */
static struct job *
place(struct schedd *sd, int n, struct node **nodes)
{
    char text[128];
    struct proto_job_spec spec;
    struct err err = { 0 };
    struct job *job = NULL;
    cJSON *json;
    int rc;

    snprintf(text, sizeof(text),
        "{\"version\":1,\"argv\":[\"true\"],\"nodes\":%d}", n);
    json = cJSON_Parse(text);
    rc = proto_job_spec_from_json(json, &spec, &err);
    cJSON_Delete(json);
    if (rc == 0) {
        rc = jobs_submit(sd, "alice", &spec, &job);
        proto_job_spec_release(&spec);
    }
    if (rc == 0)
        rc = launch_place(sd, job, nodes, NULL, 29500);
    if (rc == 0)
        rc = schedd_commit(sd);
    ok(rc == 0, "a %d-node job placed", n);
    return rc == 0 ? job : NULL;
}

/*
 * A supervisor's fence notice (nodes_fenced, which scheduler/fence.c
 * calls with a notice whose MAC is right): the attempt the node holds
 * fails as node_lost and the node's part is released at once; a node
 * whose agent connection closed is LOST for it, and says why; a notice
 * again, or about an attempt the node does not hold, changes nothing; a
 * node whose agent is still connected loses the attempt, not its state.
 */
static void
test_fenced(void)
{
    struct schedd *sd = open_schedd("fenced");
    struct recovery *rec;
    struct node *f[4], *pair[2];
    struct job *job, *job2;
    int64_t id;
    int rc = 0;

    ok(sd != NULL, "a scheduler on a scratch directory");
    if (sd == NULL)
        return;
    rec = recovery_create(sd); /* what decides on a failed attempt */
    for (int k = 0; k < 4 && rc == 0; k++) {
        char name[8];

        snprintf(name, sizeof(name), "f%d", k);
        rc = report(sd, name, NULL, 0, NULL);
        f[k] = node_table_find(&sd->nodes, name);
    }
    is_int(rc, 0, "four nodes registered");
    pair[0] = f[0];
    pair[1] = f[1];
    if ((job = place(sd, 2, pair)) == NULL) {
        recovery_destroy(rec);
        close_schedd(sd);
        return;
    }
    id = job->id;
    is_int((int)f[1]->nholds, 1, "f1 holds the attempt");

    is_int(nodes_fenced(sd, f[1], id, 7), 0, "a notice about attempt 7");
    ok(f[1]->nholds == 1 && job->cur != NULL && job->cur->num == 1 &&
            !f[1]->lost,
        "changes nothing: f1 holds no attempt 7");

    nodes_agent_gone(sd, f[1]);
    is_int(nodes_fenced(sd, f[1], id, 1), 0, "f1's notice about attempt 1");
    is_int(schedd_commit(sd), 0, "committed");
    ok(f[1]->lost && f[1]->lost_how == NODE_LOST_GONE,
        "f1, its agent connection closed, is LOST on the notice");
    is_int((int)f[1]->nholds, 0, "and holds nothing any more");
    is_int(job->infra_restarts, 1,
        "the job restarts on its infrastructure budget (node_lost)");
    ok(job->cur == NULL || job->cur->num == 2,
        "attempt 1 is over (the next one is attempt 2)");
    is_int(nodes_fenced(sd, f[1], id, 1), 0, "the same notice again");
    ok(job->infra_restarts == 1 && f[1]->nholds == 0,
        "changes nothing: attempt 1 is over");

    /* f3's agent is still connected (its lock file deleted under it,
     * say): its attempt fails, f3 stays UP. */
    pair[0] = f[2];
    pair[1] = f[3];
    if ((job2 = place(sd, 2, pair)) != NULL) {
        is_int(nodes_fenced(sd, f[3], job2->id, 1), 0,
            "f3's notice, its agent connected");
        is_int(schedd_commit(sd), 0, "committed");
        ok(!f[3]->lost && f[3]->nholds == 0 && job2->infra_restarts == 1,
            "the attempt failed and f3 released it; f3 is not LOST");
    }
    /* A one-node job: the notice releases its only placement. */
    pair[0] = f[2];
    if ((job2 = place(sd, 1, pair)) != NULL) {
        size_t held = f[2]->nholds;

        nodes_agent_gone(sd, f[2]);
        is_int(nodes_fenced(sd, f[2], job2->id, 1), 0,
            "f2's notice about a one-node job");
        is_int(schedd_commit(sd), 0, "committed");
        ok(f[2]->lost && f[2]->nholds < held && job2->infra_restarts == 1,
            "the attempt failed, f2 released it and is LOST");
    }
    recovery_destroy(rec);
    close_schedd(sd);
}

/* Every witness of node heard for a long time, the longest gap gap_ms
 * (the contact as nodes_witness_seen leaves it). */
static void
witnesses_heard(struct schedd *sd, struct node *node, int64_t mono,
    int64_t gap_ms)
{
    struct node *w[WITNESS_MAX];
    size_t k = nodes_witness_set(sd, node, w);

    for (size_t i = 0; i < k; i++) {
        w[i]->contact = (struct witness_contact){ .since_mono = mono - 60000,
            .last_mono = mono - 10,
            .bucket_mono = mono - 5000,
            .gap_max = gap_ms,
            .gap_prev = gap_ms / 2 };
        w[i]->lost = false;
    }
}

/*
 * Short leases (docs/fault-tolerance.md "Short leases for busy nodes"):
 * what each answer grants (short only once the node's pings are heard,
 * long again after a "stop"), that a LOST node's pings are not heard,
 * and the gate: past the latest grant + 250 + the witnesses' gap + 500,
 * with that gap the one within which a majority was heard. With pings
 * off, nothing changes: every grant is lease_ms.
 */
static void
test_short_leases(void)
{
    struct schedd *sd = open_schedd_pings("short", 300), *off;
    struct node *s[5], *w[WITNESS_MAX];
    int64_t lease, interval, mono, at;
    char why[300];
    int rc = 0;

    ok(sd != NULL, "a scheduler with lease pings every 300 ms");
    if (sd == NULL)
        return;
    for (int k = 0; k < 5 && rc == 0; k++) {
        char name[8];

        snprintf(name, sizeof(name), "s%d", k);
        rc = report(sd, name, NULL, 0, NULL);
        s[k] = node_table_find(&sd->nodes, name);
    }
    is_int(rc, 0, "five nodes registered");

    nodes_witness_grant(sd, s[0], &lease, &interval);
    ok(lease == 5000 && interval == 1000 && !s[0]->told_short,
        "no ping heard yet: the long lease, the heartbeat interval");
    mono = timeid_mono_ms();
    ok(nodes_pinged(sd, s[0], timeid_now_ms(), mono, false),
        "a ping from s0 is heard");
    ok(s[0]->last_seen_mono == mono && s[0]->contact.last_mono == mono,
        "as a status is: its silence and its contact");
    nodes_witness_grant(sd, s[0], &lease, &interval);
    ok(lease == 1500 && interval == 300 && s[0]->told_short,
        "then the short lease, the ping interval");
    ok(s[0]->told_until_mono >= mono + 1000 + 5000,
        "the long grant before still bounds what the gate waits past");
    ok(nodes_pinged(sd, s[0], timeid_now_ms(), timeid_mono_ms(), true),
        "a stop ping is heard");
    nodes_witness_grant(sd, s[0], &lease, &interval);
    ok(lease == 5000 && !s[0]->told_short,
        "and answered with the long lease: the next agent has it");
    ok(nodes_pinged(sd, s[0], timeid_now_ms(), timeid_mono_ms(), false),
        "its successor pings");
    nodes_witness_grant(sd, s[0], &lease, &interval);
    is_int((int)lease, 1500, "short again");

    s[1]->lost = true;
    mono = s[1]->last_seen_mono;
    ok(!nodes_pinged(sd, s[1], timeid_now_ms(), timeid_mono_ms() + 5, false),
        "a LOST node's ping is not heard (only a status brings it back)");
    ok(s[1]->last_seen_mono == mono && s[1]->ping_mono == 0, "nor counted");
    s[1]->lost = false;

    /* The gate for s2, on its witnesses' word. */
    mono = timeid_mono_ms();
    nodes_witness_set(sd, s[2], w);
    witnesses_heard(sd, s[2], mono, 1000);
    for (size_t i = 0; i < s[2]->nwit_sent; i++) /* only the set now */
        free(s[2]->wit_sent[i]);
    s[2]->nwit_sent = 0;
    s[2]->told_until_mono = mono - 1000;
    at = witness_replace_at(s[2]->told_until_mono, 1000);
    is_int((int)(at - mono), 750, "the gate: grant end + 250 + 1000 + 500");
    ok(!nodes_witness_may_replace(sd, s[2], mono, why, sizeof(why)) &&
            strstr(why, "waiting 750 ms more") != NULL,
        "not before it: %s", why);
    ok(nodes_witness_may_replace(sd, s[2], at, why, sizeof(why)),
        "at it: replaced");
    /* Two of its four witnesses with a 3 s gap: the majority (three)
     * includes one of them. */
    w[0]->contact.gap_max = 3000;
    w[1]->contact.gap_max = 3000;
    ok(!nodes_witness_may_replace(sd, s[2], at, why, sizeof(why)) &&
            strstr(why, "a gap of 3000 ms") != NULL,
        "a majority heard only within 3 s: later (%s)", why);
    ok(nodes_witness_may_replace(sd, s[2], at + 2000, why, sizeof(why)),
        "2 s later");
    w[0]->contact.since_mono = 0;
    w[1]->contact.since_mono = 0;
    ok(!nodes_witness_may_replace(sd, s[2], at + 2000, why, sizeof(why)) &&
            strstr(why, "2 of its 4 witnesses") != NULL,
        "two of four in contact: not replaced (%s)", why);
    close_schedd(sd);

    off = open_schedd_pings("short-off", 0);
    if (off != NULL) {
        struct node *n = NULL;

        if (report(off, "o1", NULL, 0, NULL) == 0)
            n = node_table_find(&off->nodes, "o1");
        ok(n != NULL, "pings off: a node");
        if (n != NULL) {
            nodes_pinged(off, n, timeid_now_ms(), timeid_mono_ms(), false);
            nodes_witness_grant(off, n, &lease, &interval);
            ok(lease == 5000 && interval == 1000,
                "a ping (from a misconfigured agent) changes nothing: long");
        }
        close_schedd(off);
    }
}

int
main(void)
{
    plan(NO_PLAN);
    /* A node report per move: only what goes wrong. */
    log_init("test_status", LOG_LEVEL_WARN, LOG_MODE_PLAIN);
    if (test_tmpdir(dir, sizeof(dir), "test_status") < 0)
        return 1;
    uv_loop_init(&loop);
    test_rack_change();
    test_gang_nodes();
    test_fenced();
    test_short_leases();
    is_int(uv_loop_close(&loop), 0, "every handle closed");
    test_rmtree(dir);
    return done_testing();
}
