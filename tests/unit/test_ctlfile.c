/*
 * test_ctlfile.c - the control file between the agent and its ranks
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/ctlfile.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static void
test_round_trip(const char *dir)
{
    struct ctlfile_entry e[CTLFILE_SLOTS];
    struct ctlfile *cf, *again;
    const void *map;
    uint64_t gen, gen2;
    char path[4200];
    size_t n;

    snprintf(path, sizeof(path), "%s/control", dir);
    is_int(ctlfile_open(path, 3, &cf), 0, "the agent creates the file");
    is_int(ctlfile_map(path, &map), 0, "a rank maps it");
    ok(ctlfile_gen(map, 3) != 0, "a fresh file of attempt 3 is valid");
    is_int((int)ctlfile_gen(map, 2), 0, "... and not one of attempt 2");
    n = ctlfile_read(map, 3, e, CTLFILE_SLOTS, &gen);
    ok(n == 0 && gen != 0, "no directive yet");

    ctlfile_post(cf, 1, CTLFILE_KIND_GC, 120);
    ctlfile_post(cf, 2, CTLFILE_KIND_CHECKPOINT, 150);
    ok(ctlfile_gen(map, 3) != gen, "posting moves the generation");
    n = ctlfile_read(map, 3, e, CTLFILE_SLOTS, &gen);
    ok(n == 2 && e[0].seq == 1 && e[0].kind == CTLFILE_KIND_GC &&
            e[0].step == 120 && e[1].seq == 2 &&
            e[1].kind == CTLFILE_KIND_CHECKPOINT && e[1].step == 150,
        "the rank sees both, through its own mapping, without a read(2)");
    is_int((int)ctlfile_read(map, 2, e, CTLFILE_SLOTS, &gen2), 0,
        "a rank of another attempt sees nothing");

    gen = ctlfile_gen(map, 3);
    ctlfile_post(cf, 2, CTLFILE_KIND_CHECKPOINT, 150);
    ok(ctlfile_gen(map, 3) == gen, "posting the same directive again is free");

    ctlfile_post(cf, 2 + CTLFILE_SLOTS, CTLFILE_KIND_GC, 999);
    n = ctlfile_read(map, 3, e, CTLFILE_SLOTS, &gen);
    ok(n == 2 && e[1].seq == 2 + CTLFILE_SLOTS && e[1].step == 999,
        "a directive %d later takes over its slot", CTLFILE_SLOTS);

    /* A restarted agent adopts the file of its attempt as it is. */
    is_int(ctlfile_open(path, 3, &again), 0, "an agent reopens the file");
    n = ctlfile_read(map, 3, e, CTLFILE_SLOTS, &gen);
    ok(n == 2, "... and nothing the ranks saw is lost");
    ctlfile_close(again);
    is_int(ctlfile_open(path, 4, &again), 0, "a file of another attempt");
    ok(ctlfile_gen(map, 3) == 0 && ctlfile_gen(map, 4) != 0 &&
            ctlfile_read(map, 4, e, CTLFILE_SLOTS, &gen) == 0,
        "... is made anew for the new attempt");
    ctlfile_close(again);
    ctlfile_close(cf);
    ctlfile_unmap(map);
}

static int64_t
mono_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A writer in another process posting while this one reads: every entry
 * read is whole (its step matches its seq). The writer posts until this
 * process has read enough (a shared flag), so a busy machine that runs
 * the writer to its end before the reader's first read fails nothing. */
static void
test_torn(const char *dir)
{
    struct ctlfile_entry e[CTLFILE_SLOTS];
    struct ctlfile *cf;
    const void *map;
    volatile int *stop;
    char path[4200];
    int bad = 0, seen = 0, status = 0;
    uint64_t gen, top = 0;
    pid_t pid;

    snprintf(path, sizeof(path), "%s/torn", dir);
    stop = mmap(NULL, sizeof(*stop), PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (stop == MAP_FAILED || ctlfile_open(path, 1, &cf) < 0 ||
        ctlfile_map(path, &map) < 0) {
        ok(0, "cannot open %s", path);
        return;
    }
    *stop = 0;
    pid = fork();
    if (pid == 0) {
        for (uint64_t s = 1; !*stop && s < UINT32_MAX; s++)
            ctlfile_post(cf, s, CTLFILE_KIND_GC, (int64_t)s * 7);
        _exit(0);
    }
    /* Until the writer has posted 200,000 directives under the reads, or
     * 30 s on a machine that starves it. */
    for (int64_t end = mono_ms() + 30000; top < 200000 && mono_ms() < end;) {
        size_t n = ctlfile_read(map, 1, e, CTLFILE_SLOTS, &gen);

        for (size_t i = 0; i < n; i++) {
            seen++;
            if (e[i].seq > top)
                top = e[i].seq;
            if (e[i].step != (int64_t)e[i].seq * 7)
                bad++;
        }
    }
    *stop = 1;
    waitpid(pid, &status, 0);
    ok(WIFEXITED(status) && bad == 0 && seen > 0,
        "no torn entry in %d read while another process wrote", seen);
    munmap((void *)stop, sizeof(*stop));
    ctlfile_close(cf);
    ctlfile_unmap(map);
}

int
main(void)
{
    char dir[4096];
    const void *map;

    plan(NO_PLAN);
    if (test_tmpdir(dir, sizeof(dir), "test_ctlfile") < 0)
        return 1;
    test_round_trip(dir);
    test_torn(dir);
    ok(ctlfile_map("/nonexistent/control", &map) < 0 && map == NULL,
        "a missing file is an error, never a crash");
    test_rmtree(dir);
    return done_testing();
}
