/*
 * logstore.c - rank log files under state_dir/logs
 *
 * Shipping logs to the scheduler keeps them readable after a node is gone.
 * Writes go through pwrite at the agent's offset, so a retried upload
 * rewrites the same bytes instead of duplicating them, and a gap (an
 * upload lost in between) is refused: the agent resends from our size.
 *
 * The cap per job (logstore.h): what each job stores is counted in a
 * small table, filled from the job's files (their sizes less their
 * dropped starts) the first time the job is written to after a start, and
 * forgetting the jobs written to longest ago when it is full. Dropping is
 * a hole punched from the start of a file, whole blocks only, so the
 * first data offset (lseek SEEK_DATA) is what the file dropped.
 */
#include "scheduler/logstore.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/itab.h"
#include "common/log.h"
#include "common/xalloc.h"

#define LOGSTORE_JOBS_MAX 4096 /* jobs whose stored bytes are counted */
#define LOGSTORE_BLOCK 4096    /* holes are punched in whole blocks */

struct ls_job {
    struct itab_link link; /* first: the table's link is the element */
    int64_t job;
    int64_t stored; /* bytes held (not dropped) in all its files */
};

struct logstore {
    char *dir;
    int64_t max_job; /* 0: no cap */
    struct itab jobs;
    bool no_punch; /* the file system cannot punch holes (logged) */
};

static int
mkdir_p(const char *path)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);

    if (len >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0750) < 0 && errno != EEXIST)
            return -errno;
        *p = '/';
    }
    if (mkdir(buf, 0750) < 0 && errno != EEXIST)
        return -errno;
    return 0;
}

struct logstore *
logstore_create(const char *dir, int64_t max_job_bytes, struct err *err)
{
    struct logstore *ls;
    int rc = mkdir_p(dir);

    if (rc < 0) {
        err_set(err, rc, "cannot create log directory '%s': %s", dir,
            strerror(-rc));
        return NULL;
    }
    ls = xcalloc(1, sizeof(*ls));
    ls->dir = xstrdup(dir);
    ls->max_job = max_job_bytes;
    itab_init(&ls->jobs);
    return ls;
}

static void
ls_job_free(struct itab_link *l)
{
    free(l);
}

void
logstore_destroy(struct logstore *ls)
{
    if (ls == NULL)
        return;
    itab_release(&ls->jobs, ls_job_free);
    free(ls->dir);
    free(ls);
}

static char *
logstore_dir(const struct logstore *ls, int64_t job, int attempt)
{
    return xasprintf("%s/%lld/%d", ls->dir, (long long)job, attempt);
}

static char *
logstore_path(const struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream)
{
    return xasprintf("%s/%lld/%d/rank-%d.%s", ls->dir, (long long)job, attempt,
        rank, err_stream ? "err" : "out");
}

/* The offset of fd's first kept byte: what it dropped (0 when nothing, or
 * when the file system cannot tell holes). */
static int64_t
ls_data_start(int fd, int64_t size)
{
    off_t o = lseek(fd, 0, SEEK_DATA);

    if (o >= 0)
        return (int64_t)o;
    return errno == ENXIO ? size : 0;
}

/* ---- the cap per job ---------------------------------------------------- */

static bool
ls_job_is(const struct itab_link *l, const void *key)
{
    return ((const struct ls_job *)l)->job == *(const int64_t *)key;
}

/* Bytes kept in the file at path (its size less what it dropped). */
static int64_t
ls_file_kept(const char *path)
{
    struct stat st;
    int64_t kept = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0)
        return 0;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        kept = st.st_size - ls_data_start(fd, st.st_size);
    close(fd);
    return kept;
}

static int
ls_cmp_num(const struct dirent **a, const struct dirent **b)
{
    long x = strtol((*a)->d_name, NULL, 10), y = strtol((*b)->d_name, NULL, 10);

    return (x > y) - (x < y);
}

static int
ls_is_attempt(const struct dirent *d)
{
    return d->d_name[0] >= '1' && d->d_name[0] <= '9';
}

static int
ls_is_rank(const struct dirent *d)
{
    return strncmp(d->d_name, "rank-", 5) == 0;
}

typedef bool ls_file_fn(const char *path, void *arg);

/* Call fn on every file of job, older attempts first, until it returns
 * false. */
static void
ls_job_files(struct logstore *ls, int64_t job, ls_file_fn *fn, void *arg)
{
    char *jdir = xasprintf("%s/%lld", ls->dir, (long long)job);
    struct dirent **at = NULL, **fs = NULL;
    int na = scandir(jdir, &at, ls_is_attempt, ls_cmp_num), nf;
    bool more = true;

    for (int i = 0; i < na; i++) {
        char *adir = xasprintf("%s/%s", jdir, at[i]->d_name);

        nf = more ? scandir(adir, &fs, ls_is_rank, alphasort) : 0;
        for (int k = 0; k < nf; k++) {
            char *path = xasprintf("%s/%s", adir, fs[k]->d_name);

            if (more)
                more = fn(path, arg);
            free(path);
            free(fs[k]);
        }
        if (nf > 0)
            free(fs);
        free(adir);
        free(at[i]);
    }
    if (na > 0)
        free(at);
    free(jdir);
}

static bool
ls_add_kept(const char *path, void *arg)
{
    *(int64_t *)arg += ls_file_kept(path);
    return true;
}

/* job's entry, counted from its files when it has none. */
static struct ls_job *
ls_job_get(struct logstore *ls, int64_t job)
{
    size_t h = (size_t)job * 0x9e3779b97f4a7c15ULL;
    struct ls_job *e = (struct ls_job *)itab_find(&ls->jobs, h, ls_job_is,
        &job);

    if (e != NULL)
        return e;
    if (ls->jobs.count >= LOGSTORE_JOBS_MAX) {
        struct itab_link *old = ls->jobs.head;

        itab_remove(&ls->jobs, old);
        free(old);
    }
    e = xcalloc(1, sizeof(*e));
    e->job = job;
    ls_job_files(ls, job, ls_add_kept, &e->stored);
    itab_add(&ls->jobs, &e->link, h);
    return e;
}

/* Drop up to want bytes from the start of what fd keeps, in whole blocks,
 * keeping its last block when keep_tail; returns the bytes dropped. */
static int64_t
ls_punch(struct logstore *ls, int fd, int64_t want, bool keep_tail)
{
    struct stat st;
    int64_t start, end, limit;

    if (fstat(fd, &st) < 0)
        return 0;
    start = ls_data_start(fd, st.st_size);
    limit = keep_tail ? st.st_size - LOGSTORE_BLOCK : st.st_size;
    end = start + want < limit ? start + want : limit;
    end -= end % LOGSTORE_BLOCK;
    if (end <= start)
        return 0;
    if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, start,
            end - start) < 0) {
        if (errno == EOPNOTSUPP && !ls->no_punch) {
            ls->no_punch = true;
            log_warn("the file system under '%s' cannot punch holes: "
                     "log_max_bytes_per_job is not applied",
                ls->dir);
        }
        return 0;
    }
    return end - start;
}

struct ls_trim {
    struct logstore *ls;
    const char *skip; /* the file being written, already trimmed */
    int64_t need;
    int64_t dropped;
};

static bool
ls_trim_file(const char *path, void *arg)
{
    struct ls_trim *t = arg;
    int fd;
    int64_t got;

    if (strcmp(path, t->skip) == 0)
        return true;
    fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return true;
    got = ls_punch(t->ls, fd, t->need, false);
    close(fd);
    t->need -= got;
    t->dropped += got;
    return t->need > 0 && !t->ls->no_punch;
}

/* e's job is over the cap after a write to fd (path): drop its oldest
 * output down to seven eighths of the cap. */
static void
ls_trim(struct logstore *ls, struct ls_job *e, int fd, const char *path)
{
    struct ls_trim t = { ls, path, 0, 0 };
    int64_t got;

    t.need = e->stored - (ls->max_job - ls->max_job / 8);
    got = ls_punch(ls, fd, t.need, true);
    t.need -= got;
    if (t.need > 0 && !ls->no_punch)
        ls_job_files(ls, e->job, ls_trim_file, &t);
    e->stored -= got + t.dropped;
    log_info("job=%lld over log_max_bytes_per_job (%lld): dropped its oldest "
             "%lld bytes of output",
        (long long)e->job, (long long)ls->max_job,
        (long long)(got + t.dropped));
}

/* ---- writing and reading ------------------------------------------------ */

/* Open path for writing, creating it and its directory. */
static int
ls_open_write(struct logstore *ls, const char *path, int64_t job, int attempt)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640), rc;

    if (fd < 0 && errno == ENOENT) {
        char *dir = logstore_dir(ls, job, attempt);

        rc = mkdir_p(dir);
        free(dir);
        if (rc < 0)
            return rc;
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    }
    return fd < 0 ? -errno : fd;
}

static int
ls_pwrite_all(int fd, const char *data, size_t len, int64_t offset)
{
    size_t done = 0;

    while (done < len) {
        ssize_t n = pwrite(fd, data + done, len - done,
            (off_t)(offset + (int64_t)done));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        done += (size_t)n;
    }
    return 0;
}

int
logstore_write(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, const void *data, size_t len,
    int64_t *size)
{
    char *path = logstore_path(ls, job, attempt, rank, err_stream);
    struct ls_job *e = ls->max_job > 0 ? ls_job_get(ls, job) : NULL;
    struct stat st, after;
    int64_t start;
    int fd, rc = 0;

    *size = 0;
    if ((fd = ls_open_write(ls, path, job, attempt)) < 0) {
        rc = fd;
        goto out;
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    *size = st.st_size;
    if (offset > st.st_size)
        goto out;
    /* What was dropped stays dropped (an agent resending from 0). */
    start = ls_data_start(fd, st.st_size);
    if (offset < start) {
        size_t skip = (size_t)(start - offset) < len ? (size_t)(start - offset)
                                                     : len;

        data = (const char *)data + skip;
        len -= skip;
        offset += (int64_t)skip;
    }
    rc = ls_pwrite_all(fd, data, len, offset);
    if (rc == 0 && offset + (int64_t)len > *size)
        *size = offset + (int64_t)len;
    if (e != NULL && fstat(fd, &after) == 0 && after.st_size > st.st_size)
        e->stored += after.st_size - st.st_size;
    if (rc == 0 && e != NULL && e->stored > ls->max_job && !ls->no_punch)
        ls_trim(ls, e, fd, path);
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

int
logstore_read(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, size_t limit, struct sbuf *out,
    int64_t *size, int64_t *start)
{
    char *path = logstore_path(ls, job, attempt, rank, err_stream);
    struct stat st;
    char *buf = NULL;
    size_t want, got = 0;
    int fd, rc = 0;

    *size = 0;
    *start = offset;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    *size = st.st_size;
    if (offset < st.st_size && ls_data_start(fd, st.st_size) > offset)
        *start = offset = ls_data_start(fd, st.st_size);
    if (offset >= st.st_size)
        goto out;
    want = (size_t)(st.st_size - offset);
    if (want > limit)
        want = limit;
    buf = xmalloc(want + 1);
    while (got < want) {
        ssize_t n = pread(fd, buf + got, want - got,
            (off_t)(offset + (int64_t)got));

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            rc = -errno;
            goto out;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    /* The writer thread (logwriter.c) may have punched the start of what
     * was read into a hole meanwhile: those bytes read as zeros, not as
     * output, so they are left out and the start moves past them. */
    if (got > 0) {
        int64_t now_start = ls_data_start(fd, offset + (int64_t)got);

        if (now_start > offset) {
            size_t skip = (size_t)(now_start - offset) < got
                              ? (size_t)(now_start - offset)
                              : got;

            memmove(buf, buf + skip, got - skip);
            got -= skip;
            *start = offset + (int64_t)skip;
        }
    }
    sbuf_add(out, buf, got);
out:
    free(buf);
    close(fd);
    return rc;
}
