/*
 * fsync_delay.c - an LD_PRELOAD shim that slows the WAL's fdatasync
 *
 * For t4143: every fdatasync() of a file whose name ends in "-wal" (the
 * scheduler's WAL syncer, scheduler/commitsync.c) sleeps FSYNC_DELAY_MS
 * milliseconds first, and appends "start NS" before and "end NS" after
 * (CLOCK_REALTIME nanoseconds) to the file FSYNC_DELAY_LOG. Other calls
 * go straight to libc.
 *
 *   cc -shared -fPIC -o fsync_delay.so fsync_delay.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int (*real_fdatasync)(int);

static int
is_wal(int fd)
{
    char link[64], path[4096];
    ssize_t n;

    snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
    n = readlink(link, path, sizeof(path) - 1);
    if (n < 4)
        return 0;
    path[n] = '\0';
    return strcmp(path + n - 4, "-wal") == 0;
}

static void
note(const char *what)
{
    const char *log = getenv("FSYNC_DELAY_LOG");
    struct timespec ts;
    char line[64];
    int fd, len;

    if (log == NULL)
        return;
    clock_gettime(CLOCK_REALTIME, &ts);
    len = snprintf(line, sizeof(line), "%s %lld\n", what,
        (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec);
    fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd >= 0) {
        if (write(fd, line, (size_t)len) < 0)
            perror("fsync_delay");
        close(fd);
    }
}

int
fdatasync(int fd)
{
    const char *ms = getenv("FSYNC_DELAY_MS");
    int rc;

    if (real_fdatasync == NULL)
        real_fdatasync = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
    if (!is_wal(fd))
        return real_fdatasync(fd);
    note("start");
    if (ms)
        usleep((useconds_t)atoi(ms) * 1000);
    rc = real_fdatasync(fd);
    note("end");
    return rc;
}
