/*
 * test_agent_cadence.c - unit tests for the agent's side of cadence
 * delivery (docs/cadence.md): the acks and step time of a rank's progress
 * file, the rank variables LOCKSTEP_CONTROL_FILE and LOCKSTEP_GC_MANAGED,
 * and the control file a launch's gc and checkpoint directives are posted
 * to, read back as a rank reads it, through a real agent loop and the
 * real lockstep-supervisor, also across an agent restart.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "agent/agentd.h"
#include "agent/proc.h"
#include "agent/proc_env.h"
#include "agent/proc_progress.h"
#include "agent/supfile.h"
#include "common/ctlfile.h"
#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "tests/tap.h"
#include "tests/testdir.h"
#include "tests/unit/tagent.h"

static void
write_file(const char *path, const char *data)
{
    size_t len = strlen(data);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        diag("cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

/* Replace path atomically, as the SDK does. */
static void
replace_file(const char *path, const char *data)
{
    char *tmp = xasprintf("%s.tmp", path);

    write_file(tmp, data);
    if (rename(tmp, path) < 0)
        diag("cannot rename %s: %s", tmp, strerror(errno));
    free(tmp);
}

static char *
read_line(const char *path)
{
    char *buf = xcalloc(1, 4096), *nl;
    int fd = open(path, O_RDONLY);

    if (fd >= 0) {
        if (read(fd, buf, 4095) < 0)
            buf[0] = '\0';
        close(fd);
    }
    if ((nl = strchr(buf, '\n')) != NULL)
        *nl = '\0';
    return buf;
}

/* ---- the acks of a progress file ---------------------------------------- */

static size_t
parse_acks(const char *json, struct proto_ack *out, size_t max)
{
    cJSON *root = cJSON_Parse(json);
    size_t n;

    if (root == NULL)
        diag("bad test JSON: %s", json);
    n = proc_acks_parse(root, out, max);
    cJSON_Delete(root);
    return n;
}

static void
test_acks_parse(void)
{
    struct proto_ack a[PROC_ACKS_MAX];
    char big[4096];
    size_t n, len = 0;

    n = parse_acks("[[1, 120, 35], [2, -1, 0], [7, 9007199254740992, 4]]", a,
        PROC_ACKS_MAX);
    ok(n == 3 && a[0].seq == 1 && a[0].step == 120 && a[0].duration_ms == 35 &&
            a[1].seq == 2 && a[1].step == -1 && a[1].duration_ms == 0 &&
            a[2].seq == 7 && a[2].step == 9007199254740992LL,
        "valid acks: [seq, step, duration_ms], in order");

    n = parse_acks("[[0, 1, 1], [3, -2, 1], [4, 1, -1], [5, 1.5, 1], "
                   "[\"6\", 1, 1], [7, 1], [8, 1, 1, 1], {\"seq\": 9}, 10, "
                   "null, [11, true, 1], [1e300, 1, 1], [12, 1, 1e300], "
                   "[13, 2, 3]]",
        a, PROC_ACKS_MAX);
    ok(n == 1 && a[0].seq == 13 && a[0].step == 2 && a[0].duration_ms == 3,
        "malformed entries are skipped, the valid one kept");

    is_int((int)parse_acks("{\"seq\": 1}", a, PROC_ACKS_MAX), 0,
        "acks that are not a list: none");
    is_int((int)proc_acks_parse(NULL, a, PROC_ACKS_MAX), 0,
        "no acks member: none");

    len += (size_t)snprintf(big + len, sizeof(big) - len, "[");
    for (int i = 1; i <= 40; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len, "%s[%d, %d, 1]",
            i > 1 ? ", " : "", i, i * 10);
    snprintf(big + len, sizeof(big) - len, ", [\"x\"]]");
    n = parse_acks(big, a, PROC_ACKS_MAX);
    ok(n == PROC_ACKS_MAX && a[0].seq == 9 && a[0].step == 90 &&
            a[PROC_ACKS_MAX - 1].seq == 40,
        "an oversized list keeps the newest %d (seq 9..40)", PROC_ACKS_MAX);
}

/* ---- the timed sections of a progress file ------------------------------ */

static void
test_sections_parse(void)
{
    struct proto_section sec[PROTO_SECTIONS_MAX];
    cJSON *root;
    char big[4096];
    size_t n, len = 0;

    root = cJSON_Parse("{\"compute\": {\"p50_us\": 12000, \"p99_us\": "
                       "15000, \"n\": 200}, \"io\": {\"p50_us\": 5}}");
    n = proc_sections_parse(root, sec, PROTO_SECTIONS_MAX);
    cJSON_Delete(root);
    ok(n == 2 && strcmp(sec[0].name, "compute") == 0 &&
            sec[0].p50_us == 12000 && sec[0].p99_us == 15000 &&
            sec[0].n == 200 && strcmp(sec[1].name, "io") == 0 &&
            sec[1].p50_us == 5 && sec[1].p99_us == 5 && sec[1].n == 0,
        "valid sections, in order");
    root = cJSON_Parse("{\"a b\": {\"p50_us\": 1}, \"x\": {\"p50_us\": -1}, "
                       "\"y\": {\"p50_us\": 1.5}, \"z\": 3, \"w\": {}, "
                       "\"v\": {\"p50_us\": 1, \"n\": \"2\"}, "
                       "\"ok\": {\"p50_us\": 7}}");
    n = proc_sections_parse(root, sec, PROTO_SECTIONS_MAX);
    cJSON_Delete(root);
    ok(n == 1 && strcmp(sec[0].name, "ok") == 0 && sec[0].p50_us == 7,
        "malformed sections are skipped, the valid one kept");
    root = cJSON_Parse("[{\"p50_us\": 1}]");
    is_int((int)proc_sections_parse(root, sec, PROTO_SECTIONS_MAX), 0,
        "sections that are not an object: none");
    cJSON_Delete(root);
    is_int((int)proc_sections_parse(NULL, sec, PROTO_SECTIONS_MAX), 0,
        "no sections member: none");
    len += (size_t)snprintf(big + len, sizeof(big) - len, "{");
    for (int i = 0; i < 20; i++)
        len += (size_t)snprintf(big + len, sizeof(big) - len,
            "%s\"s%d\": {\"p50_us\": %d}", i ? ", " : "", i, i);
    snprintf(big + len, sizeof(big) - len, "}");
    root = cJSON_Parse(big);
    n = proc_sections_parse(root, sec, PROTO_SECTIONS_MAX);
    cJSON_Delete(root);
    ok(n == PROTO_SECTIONS_MAX && sec[15].p50_us == 15, "at most %d sections",
        PROTO_SECTIONS_MAX);
}

/* ---- the rank environment ----------------------------------------------- */

static void
test_env(void)
{
    struct proto_launch_rank r = { .rank = 0, .local_rank = 0 };
    struct proto_kv kv[] = {
        { .key = "LOCKSTEP_CONTROL_FILE", .value = "/tmp/evil" },
        { .key = "LOCKSTEP_GC_MANAGED", .value = "1" },
    };
    struct proto_launch l;
    char *base[] = { "PATH=/bin", "LOCKSTEP_GC_MANAGED=1", NULL };
    char **env;

    memset(&l, 0, sizeof(l));
    l.job = 1;
    l.attempt = 1;
    l.world_size = 1;
    l.ranks_per_node = 1;
    l.resume_step = -1;
    l.env = kv;
    l.nenv = 2;
    env = proc_build_env(&l, &r, "n1", base);
    ok(proc_env_get(env, "LOCKSTEP_GC_MANAGED") == NULL,
        "no GC cadence: LOCKSTEP_GC_MANAGED is absent (not inherited from "
        "the agent, not set by the job's env)");
    ok(proc_env_get(env, "LOCKSTEP_CONTROL_FILE") == NULL,
        "the job's env cannot set LOCKSTEP_CONTROL_FILE");
    is_str(proc_env_get(env, "PATH"), "/bin", "the rest of the env stays");
    proc_env_free(env);

    l.gc_managed = true;
    l.nenv = 0;
    env = proc_build_env(&l, &r, "n1", NULL);
    is_str(proc_env_get(env, "LOCKSTEP_GC_MANAGED"), "1",
        "a GC cadence: LOCKSTEP_GC_MANAGED=1");
    proc_env_free(env);
}

/* ---- the control file --------------------------------------------------- */

static void
test_ctlfile_refuses(void)
{
    struct ctlfile *cf;
    char *target = xasprintf("%s/target", tmpdir);
    char *lnk = xasprintf("%s/link", tmpdir);
    char *hard = xasprintf("%s/hard", tmpdir);
    char *fifo = xasprintf("%s/fifo", tmpdir);
    struct stat st;

    write_file(target, "precious");
    if (symlink(target, lnk) < 0 || link(target, hard) < 0 ||
        mkfifo(fifo, 0600) < 0)
        diag("cannot make test files: %s", strerror(errno));
    is_int(ctlfile_open(lnk, 1, &cf), -ELOOP,
        "ctlfile_open follows no symbolic link");
    is_int(ctlfile_open(hard, 1, &cf), -EINVAL,
        "... writes no file with another name");
    is_int(ctlfile_open(fifo, 1, &cf), -EINVAL, "... opens no FIFO");
    ok(stat(target, &st) == 0 && st.st_size == 8,
        "the file behind them is untouched");
    free(target);
    free(lnk);
    free(hard);
    free(fifo);
}

static bool
job_running(struct proc_table *pt, int64_t id, int attempt)
{
    struct proc_job *job = find_job(pt, id, attempt);

    if (job == NULL)
        return false;
    for (size_t i = 0; i < job->nranks; i++) {
        if (job->ranks[i].state != PROTO_RANK_RUNNING)
            return false;
    }
    return true;
}

/* Whether the attempt is finished (or released already). */
static bool
job_done(struct proc_table *pt, int64_t id, int attempt)
{
    struct proc_job *job = find_job(pt, id, attempt);

    return job == NULL || job->done;
}

/* A 2-rank launch whose ranks copy their control file as they start
 * (<progress file>.ctl), record its path and their GC variable in
 * <progress file>.env, then sleep. */
static void
launch_init(struct proto_launch *l, int64_t job, int attempt)
{
    const char *argv[] = { "sh", "-c",
        "cp $LOCKSTEP_CONTROL_FILE $LOCKSTEP_PROGRESS_FILE.ctl && "
        "echo \"$LOCKSTEP_CONTROL_FILE ${LOCKSTEP_GC_MANAGED-unset}\" "
        ">$LOCKSTEP_PROGRESS_FILE.env.tmp && "
        "mv $LOCKSTEP_PROGRESS_FILE.env.tmp $LOCKSTEP_PROGRESS_FILE.env && "
        "exec sleep 1000",
        NULL };

    memset(l, 0, sizeof(*l));
    l->job = job;
    l->attempt = attempt;
    l->name = xstrdup("t");
    l->user = xstrdup("nobody");
    l->argc = 3;
    l->argv = xcalloc(4, sizeof(*l->argv));
    for (size_t i = 0; i < 3; i++)
        l->argv[i] = xstrdup(argv[i]);
    l->workdir = xstrdup("/");
    l->nnodes = 1;
    l->ranks_per_node = 2;
    l->world_size = 2;
    l->master_addr = xstrdup("127.0.0.1");
    l->master_port = 29500;
    l->ranks = xcalloc(2, sizeof(*l->ranks));
    l->nranks = 2;
    for (size_t i = 0; i < 2; i++) {
        l->ranks[i].rank = (int)i;
        l->ranks[i].local_rank = (int)i;
    }
    l->checkpoint_dir = xstrdup("");
    l->resume_from = xstrdup("");
    l->resume_step = -1;
    l->gc_managed = true;
}

/* Set l's directives to the n given (seq, kind, step) triples. */
static void
set_directives(struct proto_launch *l, const struct proto_directive *d,
    size_t n)
{
    free(l->directives);
    l->directives = xcalloc(n + 1, sizeof(*d));
    if (n > 0)
        memcpy(l->directives, d, n * sizeof(*d));
    l->ndirectives = n;
}

/* The ack of seq among a rank status's acks, or NULL. */
static const struct proto_ack *
ack_of(const struct proto_rank_status *rs, uint64_t seq)
{
    for (size_t i = 0; i < rs->nacks; i++) {
        if (rs->acks[i].seq == seq)
            return &rs->acks[i];
    }
    return NULL;
}

/* Posting: what a rank maps once the agent starts the job; more with the
 * next work update; nothing moves when the same list comes again. */
static void
check_posting(struct tagent *t, struct proto_launch *l, const void *map)
{
    struct proto_directive d3[] = {
        { .seq = 1, .kind = PROTO_DIRECTIVE_GC, .step = 10 },
        { .seq = 2, .kind = PROTO_DIRECTIVE_CHECKPOINT, .step = 20 },
        { .seq = 3, .kind = PROTO_DIRECTIVE_GC, .step = 30 },
        { .seq = 4, .kind = PROTO_DIRECTIVE_DUMP, .step = -1 },
    };
    struct proto_directive d33[4];
    struct ctlfile_entry e[CTLFILE_SLOTS];
    uint64_t gen, gen2;
    size_t n;

    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    ok(n == 2 && e[0].seq == 1 && e[0].kind == CTLFILE_KIND_GC &&
            e[0].step == 10 && e[1].seq == 2 &&
            e[1].kind == CTLFILE_KIND_CHECKPOINT && e[1].step == 20 && gen != 0,
        "the launch's gc and checkpoint directives are in the control "
        "file");
    set_directives(l, d3, 3);
    (void)launch(t, l);
    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    ok(n == 3 && e[2].seq == 3 && e[2].kind == CTLFILE_KIND_GC &&
            e[2].step == 30,
        "a work update posts the new one");
    (void)launch(t, l);
    ok(ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen2) == 3 && gen2 == gen,
        "the same list again changes nothing (the generation stays)");
    /* A dump directive is the agent's: never in the file. */
    set_directives(l, d3, 4);
    (void)launch(t, l);
    ok(ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen2) == 3 && gen2 == gen,
        "a dump directive is not posted to the ranks");
    /* 33 shares seq 1's slot: the newer one wins, listed in any order,
     * and re-posting the list does not flip the slot back and forth. */
    d33[0] = d3[0];
    d33[0].seq = 1 + CTLFILE_SLOTS;
    d33[0].step = 330;
    memcpy(&d33[1], d3, 3 * sizeof(*d3));
    set_directives(l, d33, 4);
    (void)launch(t, l);
    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    (void)launch(t, l);
    ok(n == 3 && e[0].seq == 1 + CTLFILE_SLOTS && e[0].step == 330 &&
            ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen2) == 3 && gen2 == gen,
        "of two listed directives in one slot, the newer stays posted");
    set_directives(l, d3, 3);
    (void)launch(t, l);
    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    ok(n == 3 && e[0].seq == 1, "(seq 1 back for what follows)");
}

/* Acks: each rank's own, for the directives still listed. */
static void
check_acks(struct tagent *t, struct proto_launch *l, struct proc_job *job)
{
    struct proto_directive d3;
    struct proto_node_report rep;
    struct proto_rank_status *rs;
    const struct proto_ack *a;
    char buf[512];

    snprintf(buf, sizeof(buf),
        "{\"step\": 22, \"time_ms\": %lld, \"attempt\": 1, "
        "\"acks\": [[1, 12, 30], [2, 21, 500], [99, 5, 1], [3, \"x\", 1]], "
        "\"step_p50_us\": 1500, \"step_p99_us\": 4200}",
        (long long)timeid_now_ms());
    replace_file(job->ranks[0].progress_path, buf);
    snprintf(buf, sizeof(buf),
        "{\"step\": 11, \"time_ms\": %lld, \"attempt\": 1, "
        "\"acks\": [[1, 10, 25]], \"step_p50_us\": -3}",
        (long long)timeid_now_ms());
    replace_file(job->ranks[1].progress_path, buf);

    memset(&rep, 0, sizeof(rep));
    proc_fill_report(t->pt, &rep);
    rs = rep.jobs[0].ranks;
    ok(rs[0].nacks == 2 && (a = ack_of(&rs[0], 1)) != NULL && a->step == 12 &&
            a->duration_ms == 30 && (a = ack_of(&rs[0], 2)) != NULL &&
            a->step == 21 && a->duration_ms == 500,
        "rank 0 acknowledges seq 1 and 2 with its steps and durations "
        "(not the unlisted 99, not a malformed one)");
    ok(rs[1].nacks == 1 && (a = ack_of(&rs[1], 1)) != NULL && a->step == 10 &&
            a->duration_ms == 25,
        "rank 1 acknowledges only what it carried out");
    ok(rs[0].step_p50_us == 1500 && rs[0].step_p99_us == 4200,
        "rank 0's step time is in its status");
    ok(rs[1].step_p50_us == 0 && rs[1].step_p99_us == 0 && rs[1].step == 11,
        "a malformed step time is unknown; the step still counts");
    proto_node_report_release(&rep);

    memset(&rep, 0, sizeof(rep));
    proc_fill_report(t->pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 2, "acks are repeated in the next report");
    proto_node_report_release(&rep);

    /* The scheduler saw them: seq 1 and 2 are no longer listed. */
    d3 = l->directives[2];
    set_directives(l, &d3, 1);
    (void)launch(t, l);
    memset(&rep, 0, sizeof(rep));
    proc_fill_report(t->pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 0 && rep.jobs[0].ranks[1].nacks == 0,
        "an ack stops once the launch no longer lists its directive");
    proto_node_report_release(&rep);
}

/* The ranks' view of their environment. */
static void
check_env(struct proc_job *job)
{
    char *want = xasprintf("%s %s", job->ctl_path, "1");
    char *path, *got;

    for (size_t i = 0; i < job->nranks; i++) {
        path = xasprintf("%s.env", job->ranks[i].progress_path);
        got = read_line(path);
        is_str(got, want,
            "rank %zu: LOCKSTEP_CONTROL_FILE=<attempt dir>/sdk/control, "
            "LOCKSTEP_GC_MANAGED=1",
            i);
        free(got);
        free(path);
    }
    free(want);
}

/* What each rank found in the file when it started. */
static void
check_at_start(struct proc_job *job)
{
    struct ctlfile_entry e[CTLFILE_SLOTS];
    const void *map;
    uint64_t gen;
    char *path;

    for (size_t i = 0; i < job->nranks; i++) {
        path = xasprintf("%s.ctl", job->ranks[i].progress_path);
        ok(ctlfile_map(path, &map) == 0 &&
                ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen) == 2 &&
                e[0].seq == 1 && e[1].seq == 2,
            "rank %zu found both directives in the file as it started", i);
        ctlfile_unmap(map);
        free(path);
    }
}

static void
test_delivery(void)
{
    struct proto_directive d2[] = {
        { .seq = 1, .kind = PROTO_DIRECTIVE_GC, .step = 10 },
        { .seq = 2, .kind = PROTO_DIRECTIVE_CHECKPOINT, .step = 20 },
    };
    struct proto_directive d5 = { .seq = 5,
        .kind = PROTO_DIRECTIVE_CHECKPOINT,
        .step = 50 };
    struct ctlfile_entry e[CTLFILE_SLOTS];
    struct tagent t;
    struct proto_launch l, l2;
    struct proc_job *job;
    struct stat st, st2;
    const void *map = NULL;
    char *path, *env0, *env1;
    uint64_t gen;
    size_t n;

    if (agent_up(&t, "delivery") == NULL)
        return;
    launch_init(&l, 30, 1);
    set_directives(&l, d2, 2);
    (void)launch(&t, &l);
    job = find_job(t.pt, 30, 1);
    env0 = xasprintf("%s.env", job->ranks[0].progress_path);
    env1 = xasprintf("%s.env", job->ranks[1].progress_path);
    RUN_UNTIL(&t.loop,
        job_running(t.pt, 30, 1) && access(env0, F_OK) == 0 &&
            access(env1, F_OK) == 0,
        5000);
    free(env1);
    ok(job_running(t.pt, 30, 1), "the job runs");
    path = xasprintf("%s/delivery/state/jobs/30.1/sdk/control", tmpdir);
    is_str(job->ctl_path, path,
        "the control file is <attempt dir>/sdk/control");
    free(path);
    ok(stat(job->ctl_path, &st) == 0 && st.st_size == CTLFILE_SIZE &&
            (st.st_mode & 0777) == 0644,
        "it is %d bytes, mode 0644", CTLFILE_SIZE);
    check_env(job);
    check_at_start(job);
    is_int(ctlfile_map(job->ctl_path, &map), 0, "a rank maps it");
    if (map == NULL)
        goto out;
    ok(ctlfile_gen(map, 1) != 0 && ctlfile_gen(map, 2) == 0,
        "it is the control file of attempt 1");
    check_posting(&t, &l, map);
    check_acks(&t, &l, job);

    /* The agent restarts; the ranks keep running with the file mapped. */
    tagent_stop(&t);
    if (tagent_start(&t) == NULL)
        goto out;
    job = find_job(t.pt, 30, 1);
    ok(job != NULL && job->ctl != NULL, "the restarted agent adopts the job "
                                        "and reopens its control file");
    ok(stat(job->ctl_path, &st2) == 0 && st2.st_ino == st.st_ino,
        "... the same file");
    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    ok(n == 3, "... with what it held (%zu directives)", n);
    set_directives(&l, &d5, 1);
    (void)launch(&t, &l);
    n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);
    ok(n == 4 && e[3].seq == 5 && e[3].kind == CTLFILE_KIND_CHECKPOINT &&
            e[3].step == 50,
        "a directive the new agent posts reaches the old mapping");

    /* A new attempt gets a file of its own. */
    launch_init(&l2, 30, 2);
    l2.gc_managed = false;
    (void)launch(&t, &l2);
    RUN_UNTIL(&t.loop, job_running(t.pt, 30, 2), 5000);
    job = find_job(t.pt, 30, 2);
    ok(job != NULL && job->ctl != NULL && strstr(job->ctl_path, "/30.2/"),
        "attempt 2 has its own control file");
    if (job != NULL) {
        const void *map2 = NULL;

        ok(ctlfile_map(job->ctl_path, &map2) == 0 &&
                ctlfile_gen(map2, 2) != 0 &&
                ctlfile_read(map2, 2, e, CTLFILE_SLOTS, &gen) == 0,
            "... of attempt 2, empty");
        ctlfile_unmap(map2);
        free(env0);
        env0 = xasprintf("%s.env", job->ranks[0].progress_path);
        RUN_UNTIL(&t.loop, access(env0, F_OK) == 0, 5000);
        path = read_line(env0);
        ok(strstr(path, " unset") != NULL,
            "no GC cadence: LOCKSTEP_GC_MANAGED unset (%s)", path);
        free(path);
    }
    /* Drop both: the ranks are torn down. */
    memset(&t.work, 0, sizeof(t.work));
    proc_apply(t.pt, &t.work);
    RUN_UNTIL(&t.loop, job_done(t.pt, 30, 1) && job_done(t.pt, 30, 2), 5000);
    ok(job_done(t.pt, 30, 1) && job_done(t.pt, 30, 2),
        "both attempts torn down");
    proto_launch_release(&l2);
out:
    ctlfile_unmap(map);
    free(env0);
    tagent_release(&t);
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
    proto_launch_release(&l);
}

int
main(void)
{
    plan(NO_PLAN);
    log_init("test_agent_cadence", LOG_LEVEL_INFO, LOG_MODE_PLAIN);
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    if (test_built_path(supervisor_path, sizeof(supervisor_path),
            "agent/" SUPFILE_EXE) < 0 ||
        test_tmpdir(tmpdir, sizeof(tmpdir), "test_agent_cadence") < 0)
        return 1;
    test_acks_parse();
    test_sections_parse();
    test_env();
    test_ctlfile_refuses();
    test_delivery();
    test_rmtree(tmpdir);
    return done_testing();
}
