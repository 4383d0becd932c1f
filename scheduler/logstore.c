/*
 * logstore.c - rank log files under state_dir/logs
 *
 * Shipping logs to the scheduler keeps them readable after a node is gone.
 * Writes go through pwrite at the agent's offset, so a retried upload
 * rewrites the same bytes instead of duplicating them, and a gap (an
 * upload lost in between) is refused: the agent resends from our size.
 */
#include "scheduler/logstore.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/xalloc.h"

struct logstore {
    char *dir;
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
logstore_create(const char *dir, struct err *err)
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
    return ls;
}

void
logstore_destroy(struct logstore *ls)
{
    if (ls == NULL)
        return;
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

int
logstore_write(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, const void *data, size_t len,
    int64_t *size)
{
    char *path = logstore_path(ls, job, attempt, rank, err_stream);
    struct stat st;
    size_t done = 0;
    int fd, rc = 0;

    *size = 0;
    fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    if (fd < 0 && errno == ENOENT) {
        char *dir = logstore_dir(ls, job, attempt);

        rc = mkdir_p(dir);
        free(dir);
        if (rc == 0)
            fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0640);
    }
    if (fd < 0) {
        rc = rc < 0 ? rc : -errno;
        goto out;
    }
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    *size = st.st_size;
    if (offset > st.st_size)
        goto out;
    while (done < len) {
        ssize_t n = pwrite(fd, (const char *)data + done, len - done,
            (off_t)(offset + (int64_t)done));

        if (n < 0) {
            if (errno == EINTR)
                continue;
            rc = -errno;
            goto out;
        }
        done += (size_t)n;
    }
    if (offset + (int64_t)len > *size)
        *size = offset + (int64_t)len;
out:
    if (fd >= 0)
        close(fd);
    free(path);
    return rc;
}

int
logstore_read(struct logstore *ls, int64_t job, int attempt, int rank,
    bool err_stream, int64_t offset, size_t limit, struct sbuf *out,
    int64_t *size)
{
    char *path = logstore_path(ls, job, attempt, rank, err_stream);
    struct stat st;
    char *buf = NULL;
    size_t want, got = 0;
    int fd, rc = 0;

    *size = 0;
    fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return errno == ENOENT ? 0 : -errno;
    if (fstat(fd, &st) < 0) {
        rc = -errno;
        goto out;
    }
    *size = st.st_size;
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
    sbuf_add(out, buf, got);
out:
    free(buf);
    close(fd);
    return rc;
}
