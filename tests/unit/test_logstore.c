/*
 * test_logstore.c - the scheduler's store of rank output, on real files
 *
 * Writes at offsets and reads back; the cap per job: a file over it keeps
 * its newest bytes (its start punched out, its size kept), a resend from
 * 0 does not write the dropped part again, the file written is trimmed
 * first and then the job's other files (older attempts first), and a new
 * store counts what the files already hold. Skipped where the file system
 * of $TMPDIR cannot punch holes. The writer thread (logwriter.h): chunks
 * written and reported in queue order, refused over the bound unless
 * forced, and those still queued at its end reported -ECANCELED.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/falloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/err.h"
#include "common/xalloc.h"
#include "scheduler/logstore.h"
#include "scheduler/logwriter.h"
#include "tests/tap.h"
#include "tests/testdir.h"

#define KIB 1024
#define CAP (64 * KIB)

static char dir[PATH_MAX];

/* n bytes of a pattern that says where each byte was: byte i is the low
 * bits of (base + i) / 7. */
static char *
pattern(size_t base, size_t n)
{
    char *b = xmalloc(n);

    for (size_t i = 0; i < n; i++)
        b[i] = (char)('a' + (base + i) / 7 % 26);
    return b;
}

static int
put(struct logstore *ls, int64_t job, int attempt, int64_t off, size_t n,
    int64_t *size)
{
    char *b = pattern((size_t)off, n);
    int rc = logstore_write(ls, job, attempt, 0, false, off, b, n, size);

    free(b);
    return rc;
}

/* Write total bytes to (job, attempt) in chunks of chunk bytes. */
static void
put_all(struct logstore *ls, int64_t job, int attempt, size_t total,
    size_t chunk)
{
    int64_t size = 0;

    for (size_t off = 0; off < total; off += chunk)
        if (put(ls, job, attempt, (int64_t)off, chunk, &size) < 0 ||
            size != (int64_t)(off + chunk)) {
            ok(0, "write at %zu: size %lld", off, (long long)size);
            return;
        }
}

static int64_t
on_disk(int64_t job, int attempt)
{
    char p[PATH_MAX + 64];
    struct stat st;

    snprintf(p, sizeof(p), "%s/%lld/%d/rank-0.out", dir, (long long)job,
        attempt);
    return stat(p, &st) == 0 ? (int64_t)st.st_blocks * 512 : -1;
}

/* Read (job, attempt) from 0: the first byte's offset and whether what
 * came is the pattern from there to the end. */
static int64_t
read_back(struct logstore *ls, int64_t job, int attempt, int64_t want_size,
    bool *same)
{
    struct sbuf out;
    int64_t size = 0, start = -1;
    char *b;

    sbuf_init(&out);
    if (logstore_read(ls, job, attempt, 0, false, 0, 4 * 1024 * KIB, &out,
            &size, &start) < 0)
        start = -1;
    b = pattern((size_t)start, out.len);
    *same = size == want_size && start >= 0 &&
            (int64_t)out.len == size - start &&
            memcmp(out.buf, b, out.len) == 0;
    free(b);
    sbuf_release(&out);
    return start;
}

static bool
can_punch(void)
{
    char p[PATH_MAX + 16];
    int fd, rc;

    snprintf(p, sizeof(p), "%s/probe", dir);
    fd = open(p, O_RDWR | O_CREAT, 0600);
    if (fd < 0 || ftruncate(fd, 8192) < 0)
        return false;
    rc = fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, 4096);
    close(fd);
    unlink(p);
    return rc == 0;
}

static void
test_no_cap(void)
{
    struct err err;
    struct logstore *ls = logstore_create(dir, 0, &err);
    bool same;

    put_all(ls, 1, 1, 192 * KIB, 16 * KIB);
    is_int(read_back(ls, 1, 1, 192 * KIB, &same), 0,
        "no cap: everything is kept");
    ok(same, "and reads back as written");
    logstore_destroy(ls);
}

static void
test_cap_one_file(void)
{
    struct err err;
    struct logstore *ls = logstore_create(dir, CAP, &err);
    int64_t start, again, size = 0, disk;
    bool same;
    int rc;

    put_all(ls, 2, 1, 192 * KIB, 16 * KIB);
    start = read_back(ls, 2, 1, 192 * KIB, &same);
    ok(start > 0 && start % 4096 == 0,
        "the oldest bytes were dropped, in "
        "blocks: the file starts at %lld",
        (long long)start);
    ok(192 * KIB - start <= CAP, "what is kept (%lld) is within the cap",
        (long long)(192 * KIB - start));
    ok(same, "the size is kept, and the rest reads back as written");
    disk = on_disk(2, 1);
    ok(disk >= 0 && disk <= CAP + 4096, "on disk: %lld bytes", (long long)disk);
    rc = put(ls, 2, 1, 0, 16 * KIB, &size);
    ok(rc == 0 && size == 192 * KIB, "a resend from 0 is taken (size %lld)",
        (long long)size);
    again = read_back(ls, 2, 1, 192 * KIB, &same);
    is_int(again, start, "without writing the dropped part again");
    ok(on_disk(2, 1) == disk, "nor taking disk for it");
    logstore_destroy(ls);
}

static void
test_cap_older_attempt(void)
{
    struct err err;
    struct logstore *ls = logstore_create(dir, CAP, &err);
    int64_t s1, s2;
    bool same1, same2;

    put_all(ls, 3, 1, 60 * KIB, 4 * KIB);
    is_int(read_back(ls, 3, 1, 60 * KIB, &same1), 0,
        "attempt 1 under the cap keeps everything");
    put_all(ls, 3, 2, 12 * KIB, 12 * KIB);
    s2 = read_back(ls, 3, 2, 12 * KIB, &same2);
    s1 = read_back(ls, 3, 1, 60 * KIB, &same1);
    is_int(s2, 8 * KIB,
        "over it: the file written drops all but its last block first");
    ok(s1 > 0, "then attempt 1's file drops its oldest (from %lld)",
        (long long)s1);
    ok(60 * KIB - s1 + 12 * KIB - s2 <= CAP - CAP / 8 + 4096,
        "down to 7/8 of the cap (%lld kept)",
        (long long)(60 * KIB - s1 + 12 * KIB - s2));
    ok(same1 && same2, "both read back as written from their starts");
    logstore_destroy(ls);
}

static void
test_cap_counts_existing(void)
{
    struct err err;
    struct logstore *ls = logstore_create(dir, CAP, &err);
    bool same;

    put_all(ls, 4, 1, 60 * KIB, 4 * KIB);
    logstore_destroy(ls);
    ls = logstore_create(dir, CAP, &err);
    put_all(ls, 4, 2, 8 * KIB, 8 * KIB);
    ok(read_back(ls, 4, 1, 60 * KIB, &same) > 0,
        "a new store counts what the job's files hold: attempt 1 trimmed");
    logstore_destroy(ls);
}

/* ---- the writer thread --------------------------------------------------- */

struct lw_seen {
    int n;         /* done callbacks so far */
    int order[16]; /* the offsets they reported, in their order */
    int rc[16];
    int64_t size[16];
};

static void
lw_done(void *arg, int rc, int64_t size, const struct logwriter_chunk *c)
{
    struct lw_seen *s = arg;

    if (s->n < 16) {
        s->order[s->n] = (int)c->offset;
        s->rc[s->n] = rc;
        s->size[s->n] = size;
    }
    s->n++;
}

static void
test_writer(void)
{
    uv_loop_t loop;
    struct err err;
    struct logstore *ls;
    struct logwriter *lw;
    struct lw_seen seen = { 0 };
    struct logwriter_chunk c = { .job = 70, .attempt = 1, .rank = 0 };
    struct sbuf out;
    int64_t size = 0, start = 0;
    bool in_order = true;
    char *path = xasprintf("%s/writer", dir);
    int queued = 0;

    uv_loop_init(&loop);
    ls = logstore_create(path, 0, &err);
    lw = logwriter_create(&loop, ls, 100, &err);
    ok(lw != NULL, "the writer starts");
    /* Eight chunks of 10 bytes back to back, each at the end of the last:
     * in order they all land; out of order the later ones are refused. */
    for (int i = 0; i < 8; i++) {
        c.offset = i * 10;
        c.data = "0123456789";
        c.len = 10;
        if (logwriter_write(lw, &c, false, lw_done, &seen) == 0)
            queued++;
    }
    is_int(queued, 8, "80 bytes queued under a bound of 100");
    c.offset = 80;
    c.len = 30;
    c.data = "abcdefghijklmnopqrstuvwxyzABCD";
    is_int(logwriter_write(lw, &c, false, lw_done, &seen), -EAGAIN,
        "a chunk that takes it over the bound is refused");
    is_int(logwriter_write(lw, &c, true, lw_done, &seen), 0,
        "unless forced (a replica's apply)");
    {
        static char big[300];
        struct logwriter_chunk b = c;

        b.offset = 110;
        b.data = big;
        b.len = sizeof(big);
        /* 110 queued (counted down on the loop only, which has not run). */
        is_int(logwriter_write(lw, &b, true, lw_done, &seen), -EAGAIN,
            "forced, still refused past %d times the bound (a replica "
            "whose disk is slower than its leader's)",
            LOGWRITER_FORCE_FACTOR);
    }
    while (seen.n < 9)
        uv_run(&loop, UV_RUN_ONCE);
    for (int i = 0; i < 9; i++)
        if (seen.order[i] != i * 10 || seen.rc[i] != 0 ||
            seen.size[i] != i * 10 + (i == 8 ? 30 : 10))
            in_order = false;
    ok(in_order, "every chunk written and reported in queue order");
    is_int((int64_t)logwriter_queued(lw), 0, "nothing waits any more");
    sbuf_init(&out);
    logstore_read(ls, 70, 1, 0, false, 0, 1000, &out, &size, &start);
    is_int(size, 110, "the file holds all of it");
    ok(out.len == 110 && memcmp(out.buf + 70, "0123456789abc", 13) == 0,
        "at its offsets");
    sbuf_release(&out);
    /* Queued at the end: written or cancelled, each reported once. */
    seen.n = 0;
    for (int i = 0; i < 4; i++) {
        c.offset = 110 + i;
        c.len = 1;
        logwriter_write(lw, &c, true, lw_done, &seen);
    }
    logwriter_destroy(lw);
    is_int(seen.n, 4, "at the end every queued chunk is reported");
    for (int i = 0; i < 4 && i < seen.n; i++)
        ok(seen.rc[i] == 0 || seen.rc[i] == -ECANCELED,
            "chunk %d: written or cancelled (%d)", i, seen.rc[i]);
    uv_run(&loop, UV_RUN_DEFAULT);
    is_int(uv_loop_close(&loop), 0, "its handle closed");
    logstore_destroy(ls);
    free(path);
}

int
main(void)
{
    plan(NO_PLAN);
    if (test_tmpdir(dir, sizeof(dir), "lockstep-test-logstore") < 0)
        return done_testing();
    test_no_cap();
    test_writer();
    if (can_punch()) {
        test_cap_one_file();
        test_cap_older_attempt();
        test_cap_counts_existing();
    } else {
        skip(1, "the file system of TMPDIR cannot punch holes");
    }
    test_rmtree(dir);
    return done_testing();
}
