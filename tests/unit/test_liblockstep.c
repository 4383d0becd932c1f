/*
 * test_liblockstep.c - liblockstep, the C rank SDK, against real files
 *
 * The control file is written with the agent's writer (common/ctlfile.c);
 * the progress and commit files are read back as the agent reads them.
 */
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/ctlfile.h"
#include "sdk/c/lockstep.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static char dir[4096];
static char progress_path[4200], commit_path[4200], control_path[4200];

static char *
slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    char *buf;
    size_t n;

    if (f == NULL)
        return NULL;
    buf = calloc(1, 65536);
    n = fread(buf, 1, 65535, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* The progress file, parsed (NULL when missing or malformed). */
static cJSON *
progress(void)
{
    char *text = slurp(progress_path);
    cJSON *root = text ? cJSON_Parse(text) : NULL;

    free(text);
    return root;
}

static long long
progress_int(const char *key)
{
    cJSON *root = progress();
    cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    long long x = cJSON_IsNumber(v) ? (long long)v->valuedouble : -999;

    cJSON_Delete(root);
    return x;
}

/* The acks as "seq:step,seq:step" and the duration of the last one. */
static void
progress_acks(char *buf, size_t len, long long *last_ms)
{
    cJSON *root = progress(), *acks, *a;
    size_t off = 0;

    buf[0] = '\0';
    *last_ms = -1;
    acks = cJSON_GetObjectItemCaseSensitive(root, "acks");
    cJSON_ArrayForEach(a, acks) {
        off += (size_t)snprintf(buf + off, len - off, "%s%d:%d", off ? "," : "",
            cJSON_GetArrayItem(a, 0)->valueint,
            cJSON_GetArrayItem(a, 1)->valueint);
        *last_ms = (long long)cJSON_GetArrayItem(a, 2)->valuedouble;
    }
    cJSON_Delete(root);
}

static void
set_env(const char *attempt, bool control)
{
    setenv("LOCKSTEP_PROGRESS_FILE", progress_path, 1);
    setenv("LOCKSTEP_COMMIT_FILE", commit_path, 1);
    setenv("LOCKSTEP_ATTEMPT", attempt, 1);
    if (control)
        setenv("LOCKSTEP_CONTROL_FILE", control_path, 1);
    else
        unsetenv("LOCKSTEP_CONTROL_FILE");
}

static void
clean(void)
{
    unlink(progress_path);
    unlink(commit_path);
    unlink(control_path);
}

static void
test_outside(void)
{
    DIR *d;
    struct dirent *de;
    int files = 0;

    unsetenv("LOCKSTEP_PROGRESS_FILE");
    unsetenv("LOCKSTEP_ATTEMPT");
    unsetenv("LOCKSTEP_CONTROL_FILE");
    is_int(lockstep_init(), 0, "outside lockstep, init says so");
    is_int(lockstep_step(5), 0, "... step is a no-op");
    is_int(lockstep_checkpoint_committed(5), 0, "... and so is a commit");
    lockstep_gc_done(5, 1.0);
    lockstep_finalize();
    d = opendir(dir);
    while (d != NULL && (de = readdir(d)) != NULL)
        files += de->d_name[0] != '.';
    if (d != NULL)
        closedir(d);
    is_int(files, 0, "... and no file is written");
}

static void
test_progress(void)
{
    char *text;

    clean();
    set_env("2", false);
    is_int(lockstep_init(), 1, "under lockstep, init says so");
    is_int(progress_int("step"), -1, "init announces the rank (step -1)");
    is_int(progress_int("attempt"), 2, "... of its attempt");
    is_int(progress_int("pid"), getpid(), "... and its pid");
    is_int(lockstep_step(1), 0, "no control file: nothing to do");
    is_int(progress_int("step"), 1, "the first step is written");
    ok(progress_int("step_p50_us") == -999, "no step time after one step");
    is_int(lockstep_step(2), 0, "a second step");
    is_int(progress_int("step"), 1, "... held back by the rate limit");
    lockstep_finalize();
    is_int(progress_int("step"), 2, "finalize writes the last step");
    ok(progress_int("step_p50_us") >= 0 && progress_int("step_p99_us") >= 0,
        "... with the step time percentiles");

    /* Another process of the rank (a worker) leaves the file alone. */
    is_int(lockstep_init(), 1, "a second process of the rank");
    is_int(progress_int("step"), 2, "... does not reset the progress file");
    is_int(lockstep_checkpoint_committed(20), 0, "a commit");
    is_int(lockstep_checkpoint_committed(30), 0, "another");
    text = slurp(commit_path);
    is_str(text, "20 2\n30 2\n", "the commit file has one line each");
    free(text);
    is_int(progress_int("step"), 30, "... and the progress is written");
    lockstep_finalize();
}

static void
test_gc_late_duplicate(struct ctlfile *cf)
{
    char acks[512];
    long long ms;

    ctlfile_post(cf, 1, CTLFILE_KIND_GC, 5);
    is_int(lockstep_step(4), 0, "a gc directive for step 5: not at step 4");
    is_int(lockstep_step(5), LOCKSTEP_ACT_GC, "... at step 5");
    progress_acks(acks, sizeof(acks), &ms);
    is_str(acks, "1:5", "... acked at once, at step 5");
    is_int(ms, 0, "... with a duration of 0");
    lockstep_gc_done(5, 0.0123);
    progress_acks(acks, sizeof(acks), &ms);
    ok(strcmp(acks, "1:5") == 0 && ms == 12, "gc_done reports 12 ms");

    ctlfile_post(cf, 2, CTLFILE_KIND_CHECKPOINT, 1000);
    is_int(lockstep_step(6), 0, "the file changed: the done one is not redone");
    for (uint64_t n = 7; n <= 10; n++)
        lockstep_step(n);
    ctlfile_post(cf, 3, CTLFILE_KIND_GC, 3);
    is_int(lockstep_step(11), LOCKSTEP_ACT_GC, "a directive for a past step");
    progress_acks(acks, sizeof(acks), &ms);
    is_str(acks, "1:5,3:11", "... is acked at the step it was carried out");
    is_int(lockstep_step(12), 0, "... once");
}

static void
test_checkpoint(struct ctlfile *cf)
{
    char acks[512], *text;
    long long ms;

    ctlfile_post(cf, 4, CTLFILE_KIND_CHECKPOINT, 13);
    is_int(lockstep_step(13), LOCKSTEP_ACT_CHECKPOINT, "a checkpoint");
    progress_acks(acks, sizeof(acks), &ms);
    is_str(acks, "1:5,3:11", "... not acked before it is committed");
    is_int(lockstep_step(14), 0, "... returned once");
    usleep(30000);
    is_int(lockstep_checkpoint_committed(12), 0, "a commit of another step");
    progress_acks(acks, sizeof(acks), &ms);
    is_str(acks, "1:5,3:11", "... acks nothing");
    is_int(lockstep_checkpoint_committed(13), 0, "the commit of step 13");
    progress_acks(acks, sizeof(acks), &ms);
    is_str(acks, "1:5,3:11,4:13", "... acks it");
    ok(ms >= 30 && ms < 10000, "... with the time since (%lld ms)", ms);
    is_int(progress_int("step"), 14, "... and writes the progress at once");
    text = slurp(commit_path);
    is_str(text, "12 2\n13 2\n", "the commit file has both");
    free(text);
}

static void
test_cadence(void)
{
    struct ctlfile *cf;

    clean();
    set_env("2", true);
    if (ctlfile_open(control_path, 2, &cf) < 0) {
        ok(0, "cannot make %s", control_path);
        return;
    }
    is_int(lockstep_init(), 1, "a rank with a control file");
    test_gc_late_duplicate(cf);
    test_checkpoint(cf);
    ctlfile_post(cf, 5, CTLFILE_KIND_GC, 20);
    ctlfile_post(cf, 6, CTLFILE_KIND_CHECKPOINT, 20);
    is_int(lockstep_step(25), LOCKSTEP_ACT_GC | LOCKSTEP_ACT_CHECKPOINT,
        "two due at once");
    lockstep_finalize();
    ctlfile_close(cf);
}

static void
test_other_attempt(void)
{
    struct ctlfile *cf;
    unsigned flags = 0;

    clean();
    set_env("2", true);
    if (ctlfile_open(control_path, 1, &cf) < 0) {
        ok(0, "cannot make %s", control_path);
        return;
    }
    ctlfile_post(cf, 1, CTLFILE_KIND_GC, 2);
    lockstep_init();
    for (uint64_t n = 0; n < 5; n++)
        flags |= lockstep_step(n);
    ctlfile_post(cf, 2, CTLFILE_KIND_CHECKPOINT, 6);
    for (uint64_t n = 5; n < 10; n++)
        flags |= lockstep_step(n);
    is_int(flags, 0, "a control file of another attempt is ignored");
    lockstep_finalize();
    ctlfile_close(cf);

    /* A rank that starts late finds what was posted before. */
    clean();
    if (ctlfile_open(control_path, 2, &cf) < 0)
        return;
    ctlfile_post(cf, 1, CTLFILE_KIND_GC, 2);
    lockstep_init();
    is_int(lockstep_step(1) | (lockstep_step(2) << 4), LOCKSTEP_ACT_GC << 4,
        "a rank started after the post acts at the step");
    lockstep_finalize();
    ctlfile_close(cf);
}

static void
test_missing_control_file(void)
{
    clean();
    set_env("2", true);
    is_int(lockstep_init(), 1, "a control file that cannot be mapped");
    is_int(lockstep_step(1), 0, "... turns the cadence off, nothing else");
    is_int(progress_int("step"), 1, "... progress is still written");
    lockstep_finalize();
}

/* Section name's figure key ("p50_us", "p99_us", "n"); -999 when absent. */
static long long
section_int(const char *name, const char *key)
{
    cJSON *root = progress(), *secs, *sec, *v;
    long long x = -999;

    secs = cJSON_GetObjectItemCaseSensitive(root, "sections");
    sec = cJSON_GetObjectItemCaseSensitive(secs, name);
    v = cJSON_GetObjectItemCaseSensitive(sec, key);
    if (cJSON_IsNumber(v))
        x = (long long)v->valuedouble;
    cJSON_Delete(root);
    return x;
}

static int
section_count(void)
{
    cJSON *root = progress();
    int n = cJSON_GetArraySize(
        cJSON_GetObjectItemCaseSensitive(root, "sections"));

    cJSON_Delete(root);
    return n;
}

static void
test_sections(void)
{
    char name[64];
    long long p50;

    is_int(lockstep_timed_begin("compute"), 0, "outside lockstep: begin 0");
    is_int(lockstep_timed_end("compute"), 0, "... and end 0");
    is_int(lockstep_timed_begin("a b"), -EINVAL, "an invalid name: EINVAL");
    clean();
    set_env("2", false);
    lockstep_init();
    lockstep_step(0);
    for (uint64_t n = 1; n <= 4; n++) {
        is_int(lockstep_timed_begin("compute"), 0, "begin compute");
        usleep(3000);
        lockstep_timed_end("compute");
        lockstep_timed_begin("compute"); /* a second entry: summed */
        lockstep_timed_begin("compute"); /* nested: the outermost counts */
        lockstep_timed_begin("io");      /* another name inside */
        usleep(3000);
        lockstep_timed_end("io");
        lockstep_timed_end("compute");
        is_int(lockstep_timed_end("compute"), 0, "end compute");
        usleep(200000); /* outside every section */
        lockstep_step(n);
    }
    is_int(lockstep_timed_end("compute"), -EINVAL, "an end without begin");
    is_int(lockstep_timed_end("never"), -EINVAL, "an unknown name's end");
    lockstep_finalize();
    p50 = section_int("compute", "p50_us");
    /* Lower bounds: each sleep at least as long as asked; upper: without
     * the 200 ms outside (loose: a loaded machine oversleeps). */
    ok(p50 >= 6000 && p50 < 150000, "compute's per-step sum (%lld us)", p50);
    is_int(section_int("compute", "n"), 4, "... over 4 steps");
    ok(section_int("compute", "p99_us") >= p50, "... p99 >= p50");
    ok(section_int("io", "p50_us") >= 3000 &&
            section_int("io", "p50_us") <= p50,
        "io, nested in compute, is at most compute (%lld us)",
        section_int("io", "p50_us"));

    /* A section open across a step is split at it. */
    clean();
    lockstep_init();
    lockstep_step(0);
    lockstep_timed_begin("long");
    usleep(5000);
    lockstep_step(1);
    usleep(15000);
    lockstep_step(2);
    lockstep_timed_end("long");
    lockstep_step(3);
    lockstep_finalize();
    is_int(section_int("long", "n"), 3, "an open section: one sample a step");
    ok(section_int("long", "p99_us") >= 15000, "... the longer part");

    /* 16 sections at most. */
    clean();
    lockstep_init();
    lockstep_step(0);
    for (int i = 0; i < 18; i++) {
        snprintf(name, sizeof(name), "s%d", i);
        is_int(lockstep_timed_begin(name), i < 16 ? 0 : -ENOSPC, "begin %s",
            name);
        lockstep_timed_end(name);
    }
    lockstep_step(1);
    lockstep_finalize();
    is_int(section_count(), 16, "16 sections in the progress file");
}

int
main(void)
{
    plan(NO_PLAN);
    if (test_tmpdir(dir, sizeof(dir), "test_liblockstep") < 0)
        return 1;
    snprintf(progress_path, sizeof(progress_path), "%s/rank-0.progress", dir);
    snprintf(commit_path, sizeof(commit_path), "%s/rank-0.ckpt", dir);
    snprintf(control_path, sizeof(control_path), "%s/control", dir);
    test_outside();
    test_progress();
    test_cadence();
    test_other_attempt();
    test_missing_control_file();
    test_sections();
    test_rmtree(dir);
    return done_testing();
}
