/*
 * test_health_policy.c - node health findings and the exclusion policy
 * (health.c), the node states they lead to (node.c) and where SUSPECT
 * nodes go in a scheduling pass (sched.c)
 */
#include <stdlib.h>
#include <string.h>

#include "common/xalloc.h"
#include "scheduler/health.h"
#include "scheduler/node.h"
#include "scheduler/sched_pass.h"
#include "tests/tap.h"

/* A report of one result of one check (run), or none (status < 0: the
 * check's run passed with code "<check>.ok"). */
struct rep {
    struct proto_health h;
    struct proto_check_result r[4];
};

static void
rep_init(struct rep *p, const char *boot, bool full)
{
    memset(p, 0, sizeof(*p));
    p->h.boot_id = (char *)boot;
    p->h.full_pass = full;
    p->h.results = p->r;
}

static void
rep_add(struct rep *p, const char *check, enum proto_check_status st,
    const char *code, const char *scope, uint64_t run)
{
    struct proto_check_result *r = &p->r[p->h.nresults++];

    r->check = (char *)check;
    r->status = st;
    r->code = (char *)code;
    r->scope = (char *)scope;
    r->evidence = (char *)"evidence";
    r->run = run;
    r->count = 1;
}

/* One run of check: a single result. */
static bool
run1(struct health *h, const struct health_config *c, const char *check,
    enum proto_check_status st, const char *code, uint64_t run, int64_t now)
{
    struct rep p;

    rep_init(&p, "boot1", true);
    rep_add(&p, check, st, code, "node", run);
    return health_apply(h, c, "agent1", &p.h, now);
}

static struct health *
fresh(const struct health_config *c)
{
    struct health *h = health_create();
    struct rep p;

    rep_init(&p, "boot1", true);
    health_apply(h, c, "agent1", &p.h, 0);
    health_written(h);
    return h;
}

static void
test_hard(const struct health_config *c)
{
    struct health *h = fresh(c);
    char buf[256];

    ok(!health_excluded(h, NULL, 0) && !health_suspect(h, NULL, 0),
        "a node with no findings is neither excluded nor suspect");
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 1, 1000);
    is_int((int)health_open_count(h), 0, "a PASS opens nothing");
    run1(h, c, "gpu", PROTO_CHECK_FAIL, "gpu.ecc_uncorrectable", 2, 2000);
    ok(health_excluded(h, buf, sizeof(buf)), "one FAIL excludes at once");
    ok(strstr(buf, "gpu.ecc_uncorrectable") != NULL, "the reason names it: %s",
        buf);
    ok(!run1(h, c, "gpu", PROTO_CHECK_FAIL, "gpu.ecc_uncorrectable", 2, 2500),
        "the same run sent again changes nothing");
    is_int(h->findings[0].consecutive, 1, "and is not counted twice");
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 3, 3000);
    ok(health_excluded(h, NULL, 0), "a pass does not clear a latched finding");
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 4, 3000 + c->holddown_ms - 1);
    ok(health_excluded(h, NULL, 0), "nor passing for less than the hold-down");
    run1(h, c, "gpu", PROTO_CHECK_FAIL, "gpu.ecc_uncorrectable", 5, 400000);
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 6, 401000);
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 7,
        401000 + c->holddown_ms - 1);
    ok(health_excluded(h, NULL, 0),
        "a failure in between starts the hold-down afresh");
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 8, 401000 + c->holddown_ms);
    ok(!health_excluded(h, NULL, 0), "passing over the hold-down clears it");
    ok(!h->findings[0].open &&
            strcmp(h->findings[0].closed_how, "holddown") == 0,
        "closed as holddown");
    health_written(h);
    is_int((int)h->nfindings, 0, "closed findings leave once written");
    run1(h, c, "mount", PROTO_CHECK_HUNG, "mount.hung", 1, 500000);
    ok(health_excluded(h, NULL, 0), "HUNG is hard too");
    health_destroy(h);
}

static void
test_soft(const struct health_config *c)
{
    struct health *h = fresh(c);
    char buf[256];

    run1(h, c, "gpu", PROTO_CHECK_WARN, "gpu.thermal", 1, 1000);
    ok(health_suspect(h, buf, sizeof(buf)) && !health_excluded(h, NULL, 0),
        "a WARN makes the node suspect: %s", buf);
    run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", 2, 2000);
    ok(!health_suspect(h, NULL, 0), "a pass clears a finding that did not "
                                    "exclude");
    for (int i = 0; i < c->soft_repeats - 1; i++)
        run1(h, c, "gpu", PROTO_CHECK_WARN, "gpu.thermal", (uint64_t)(3 + i),
            3000 + i);
    ok(!health_excluded(h, NULL, 0), "%d WARN runs: still only suspect",
        c->soft_repeats - 1);
    run1(h, c, "gpu", PROTO_CHECK_WARN, "gpu.thermal", 10, 5000);
    ok(health_excluded(h, buf, sizeof(buf)), "%d in a row exclude: %s",
        c->soft_repeats, buf);
    health_destroy(h);
}

/* The kernel log's findings stay open for the boot: each run reports them
 * again, with how many occurrences are new. Only new ones repeat. */
static void
test_soft_standing(const struct health_config *c)
{
    struct health *h = fresh(c);
    struct proto_check_number fresh1 = { "new", 1 }, none = { "new", 0 };
    struct rep p;

    for (int i = 0; i < c->soft_repeats + 2; i++) {
        rep_init(&p, "boot1", true);
        rep_add(&p, "kmsg", PROTO_CHECK_WARN, "kmsg.unknown", "tmpl:ab",
            (uint64_t)(1 + i));
        p.r[0].numbers = i == 0 ? &fresh1 : &none;
        p.r[0].nnumbers = 1;
        health_apply(h, c, "agent1", &p.h, 1000 + i);
    }
    ok(health_suspect(h, NULL, 0) && !health_excluded(h, NULL, 0),
        "a standing WARN re-reported with no new occurrence stays suspect");
    for (int i = 0; i < c->soft_repeats; i++) {
        rep_init(&p, "boot1", true);
        rep_add(&p, "kmsg", PROTO_CHECK_WARN, "kmsg.unknown", "tmpl:ab",
            (uint64_t)(100 + i));
        p.r[0].numbers = &fresh1;
        p.r[0].nnumbers = 1;
        health_apply(h, c, "agent1", &p.h, 5000 + i);
    }
    ok(health_excluded(h, NULL, 0),
        "new occurrences in %d runs in a row exclude", c->soft_repeats);
    health_destroy(h);
}

/* One run of the kernel log check reporting a standing FAIL, with how
 * many occurrences are new. */
static void
kmsg_run(struct health *h, const struct health_config *c, uint64_t run,
    double fresh, int64_t now)
{
    struct proto_check_number n = { "new", fresh };
    struct rep p;

    rep_init(&p, "boot1", true);
    rep_add(&p, "kmsg", PROTO_CHECK_FAIL, "kmsg.xid.79", "pci:0000:1a:00", run);
    p.r[0].numbers = &n;
    p.r[0].nnumbers = 1;
    health_apply(h, c, "agent1", &p.h, now);
}

/* An acknowledged standing finding is not reopened by its reminders. */
static void
test_ack_standing(const struct health_config *c)
{
    struct health *h = fresh(c);
    struct rep p;

    kmsg_run(h, c, 1, 1, 1000);
    ok(health_excluded(h, NULL, 0), "an XID 79 excludes");
    is_int((int)health_ack(h, "kmsg.xid.79", NULL, 2000), 1,
        "the operator acknowledges it");
    health_written(h);
    kmsg_run(h, c, 2, 0, 3000);
    ok(!health_excluded(h, NULL, 0) && health_open_count(h) == 0,
        "the check reporting it again with nothing new reopens nothing");
    kmsg_run(h, c, 3, 1, 4000);
    ok(health_excluded(h, NULL, 0), "a new occurrence excludes again");
    health_ack(h, "kmsg.xid.79", NULL, 5000);
    health_written(h);
    rep_init(&p, "boot2", true);
    health_apply(h, c, "agent1", &p.h, 6000);
    kmsg_run(h, c, 4, 0, 7000);
    ok(health_excluded(h, NULL, 0),
        "a new boot forgets the acknowledgement (a finding of that boot "
        "counts)");
    health_destroy(h);
}

static void
test_unreliable(const struct health_config *c)
{
    struct health *h = fresh(c);
    char buf[256];

    for (int i = 0; i < c->unreliable_repeats - 1; i++)
        run1(h, c, "disk", PROTO_CHECK_TIMEOUT, "check.timeout",
            (uint64_t)(1 + i), 1000 + i);
    ok(health_suspect(h, NULL, 0) && !health_excluded(h, NULL, 0),
        "TIMEOUTs below the threshold: suspect");
    run1(h, c, "disk", PROTO_CHECK_TIMEOUT, "check.timeout", 9, 9000);
    ok(health_excluded(h, buf, sizeof(buf)) &&
            strstr(buf, "check unreliable") != NULL,
        "repeated TIMEOUT excludes as check unreliable: %s", buf);
    health_destroy(h);
}

static void
test_runs_and_scopes(const struct health_config *c)
{
    struct health *h = fresh(c);
    struct rep p;

    rep_init(&p, "boot1", true);
    rep_add(&p, "gpu", PROTO_CHECK_PASS, "gpu.ok", "gpu:0", 1);
    rep_add(&p, "gpu", PROTO_CHECK_WARN, "gpu.thermal", "gpu:1", 1);
    rep_add(&p, "disk", PROTO_CHECK_WARN, "disk.space", "mount:/data", 4);
    health_apply(h, c, "agent1", &p.h, 1000);
    is_int((int)health_open_count(h), 2,
        "one finding per (check, code, "
        "scope)");
    /* The agent restarts: run counters start again at 1. */
    rep_init(&p, "boot1", true);
    rep_add(&p, "gpu", PROTO_CHECK_WARN, "gpu.thermal", "gpu:1", 1);
    ok(health_apply(h, c, "agent2", &p.h, 2000),
        "a new agent process's run 1 is a new run");
    is_int(h->findings[0].consecutive, 2, "and counted");
    ok(h->findings[1].open, "a check absent from a report changes nothing");
    health_destroy(h);
}

static void
test_boot_and_ack(const struct health_config *c)
{
    struct health *h = health_create();
    struct rep p;

    rep_init(&p, "boot1", false);
    health_apply(h, c, "agent1", &p.h, 0);
    ok(h->waiting, "a first report of health without a full pass waits");
    run1(h, c, "gpu", PROTO_CHECK_FAIL, "gpu.missing", 1, 1000);
    ok(!h->waiting, "a full pass ends the wait");
    ok(health_excluded(h, NULL, 0), "excluded by gpu.missing");
    rep_init(&p, "boot2", false);
    health_apply(h, c, "agent2", &p.h, 2000);
    ok(!health_excluded(h, NULL, 0) && h->waiting,
        "a new boot clears it, and waits for a full pass");
    ok(!h->findings[0].open && strcmp(h->findings[0].closed_how, "boot") == 0,
        "closed as boot");
    health_written(h);
    rep_init(&p, "boot2", true);
    health_apply(h, c, "agent2", &p.h, 3000);
    ok(!h->waiting, "the new boot's full pass ends the wait");
    run1(h, c, "nic", PROTO_CHECK_FAIL, "nic.port_down", 1, 4000);
    is_int((int)health_ack(h, "nic.port_down", "gpu:0", 5000), 0,
        "an ack of another scope closes nothing");
    is_int((int)health_ack(h, "nic.port_down", NULL, 5000), 1,
        "an ack closes it");
    ok(!health_excluded(h, NULL, 0), "and the node is back");
    health_destroy(h);
}

static void
test_flapping(const struct health_config *c)
{
    struct health *h = fresh(c);
    int64_t t = 1000;
    uint64_t run = 1;
    bool flapped = false;

    for (int i = 0; i < c->flap_count; i++) {
        bool was = health_excluded(h, NULL, 0);

        run1(h, c, "gpu", PROTO_CHECK_FAIL, "gpu.xid", run++, t);
        if (!was && health_excluded(h, NULL, 0))
            flapped = health_note_exclusion(h, c, t);
        t += 10;
        run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", run++, t);
        t += c->holddown_ms;
        run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", run++, t);
        if (i < c->flap_count - 1)
            ok(!health_excluded(h, NULL, 0) && !flapped,
                "exclusion %d cleared by the hold-down", i + 1);
        health_written(h);
    }
    ok(flapped, "exclusion %d within the window opens flapping", c->flap_count);
    ok(health_excluded(h, NULL, 0), "which keeps the node out");
    for (int i = 0; i < 3; i++) {
        t += c->holddown_ms;
        run1(h, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", run++, t);
    }
    ok(health_excluded(h, NULL, 0), "passing checks do not return it");
    {
        struct rep p;

        rep_init(&p, "boot9", true);
        health_apply(h, c, "agent1", &p.h, t);
    }
    ok(health_excluded(h, NULL, 0), "nor does a new boot");
    is_int((int)health_ack(h, HEALTH_CODE_FLAPPING, NULL, t), 1,
        "an operator's ack does");
    ok(!health_excluded(h, NULL, 0), "the node is back");
    is_int((int)h->nflaps, 0, "and the exclusions counted are forgotten");
    health_destroy(h);
}

static void
test_soft_scopes(const struct health_config *c)
{
    struct health *h = fresh(c);
    char scope[32];

    health_soft(h, c, "straggler", "job:1", "rank 3 1.4x", 1000);
    health_soft(h, c, "straggler", "job:1", "rank 3 1.5x", 2000);
    ok(health_suspect(h, NULL, 0) && !health_excluded(h, NULL, 0),
        "a straggler in one job: suspect");
    for (int j = 2; j <= c->soft_scopes_exclude; j++) {
        snprintf(scope, sizeof(scope), "job:%d", j);
        health_soft(h, c, "straggler", scope, "slow", 3000);
    }
    ok(health_excluded(h, NULL, 0), "in %d different jobs: excluded",
        c->soft_scopes_exclude);
    health_destroy(h);
    h = fresh(c);
    health_soft(h, c, "straggler", "job:1", "slow", 1000);
    ok(!health_expire(h, c, 1000 + c->soft_expire_ms - 1), "not expired yet");
    ok(health_expire(h, c, 1000 + c->soft_expire_ms), "expires");
    ok(!health_suspect(h, NULL, 0), "and the node is no longer suspect");
    health_destroy(h);
}

static void
test_node_states(const struct health_config *c)
{
    struct node *n = node_create("n1");

    n->reconciled = true;
    n->health = fresh(c);
    run1(n->health, c, "gpu", PROTO_CHECK_WARN, "gpu.thermal", 1, 1000);
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "SUSPECT", "a soft finding: SUSPECT");
    ok(node_schedulable(n), "SUSPECT is schedulable");
    run1(n->health, c, "gpu", PROTO_CHECK_FAIL, "gpu.missing", 2, 2000);
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "UNHEALTHY", "a hard finding: UNHEALTHY");
    ok(!node_schedulable(n), "not schedulable");
    n->cordoned = true;
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "CORDONED", "a cordon wins");
    for (uint64_t r = 3; r < 6; r++)
        run1(n->health, c, "gpu", PROTO_CHECK_PASS, "gpu.ok", r,
            2000 + (int64_t)r * c->holddown_ms);
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "CORDONED",
        "passing checks do not clear a cordon");
    n->cordoned = false;
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "UP", "uncordoned and healthy: UP");
    n->health->waiting = true;
    n->state = node_state_compute(n);
    ok(n->state == NODE_STATE_UNHEALTHY && !node_schedulable(n),
        "waiting for a full pass: not schedulable");
    health_destroy(n->health);
    n->health = NULL;
    n->state = node_state_compute(n);
    is_str(node_state_str(n->state), "UP", "no health at all: as before");
    node_destroy(n);
}

static int
node_name_cmp(const struct sched_node *a, const struct sched_node *b)
{
    return strcmp(a->name, b->name);
}

static int
job_id_cmp(const struct sched_job *a, const struct sched_job *b)
{
    return (a->id > b->id) - (a->id < b->id);
}

static void
test_suspect_last(void)
{
    static const struct sched_policy by_name = { "by-name", job_id_cmp,
        node_name_cmp };
    struct sched_node nodes[3];
    struct sched_job job;
    const char *names[3] = { "a", "b", "c" };

    memset(nodes, 0, sizeof(nodes));
    for (int i = 0; i < 3; i++) {
        nodes[i].name = names[i];
        nodes[i].schedulable = true;
        nodes[i].cpus = nodes[i].free_cpus = 4;
        nodes[i].memory_mb = nodes[i].free_memory_mb = 1024;
    }
    nodes[0].suspect = true; /* "a" would come first by name */
    memset(&job, 0, sizeof(job));
    job.id = 1;
    job.nodes = 2;
    job.ranks_per_node = 1;
    job.cpus_per_rank = 1;
    sched_pass(&by_name, nodes, 3, &job, 1, 10);
    ok(job.placed, "placed");
    ok(job.placed && job.node_idx[0] == 1 && job.node_idx[1] == 2,
        "the SUSPECT node is left for last");
    free(job.node_idx);
    free(job.gpus);
    memset(&job, 0, sizeof(job));
    job.id = 2;
    job.nodes = 3;
    job.ranks_per_node = 1;
    job.cpus_per_rank = 1;
    sched_pass(&by_name, nodes, 3, &job, 1, 10);
    ok(job.placed && job.node_idx[2] == 0, "but used when the job needs it");
    free(job.node_idx);
    free(job.gpus);
}

int
main(void)
{
    struct health_config c;

    plan(NO_PLAN);
    health_config_default(&c);
    test_hard(&c);
    test_soft(&c);
    test_soft_standing(&c);
    test_ack_standing(&c);
    test_unreliable(&c);
    test_runs_and_scopes(&c);
    test_boot_and_ack(&c);
    test_flapping(&c);
    test_soft_scopes(&c);
    test_node_states(&c);
    test_suspect_last();
    return done_testing();
}
