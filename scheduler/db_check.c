/*
 * db_check.c - refuse a lost or damaged database at start-up
 *
 * A scheduler that started on an empty database in place of a lost or
 * damaged one would forget every job it ever acknowledged and tell every
 * agent to stop what it runs. So db_open (with guard set) asks here first:
 *
 *   - A missing file is created only on a first start: the directory
 *     holds no marker (<db>-created, written once the schema is in) and
 *     none of SQLite's own companions (<db>-wal, <db>-shm). Otherwise the
 *     database was lost: -ENODATA.
 *   - A file that exists is opened without SQLITE_OPEN_CREATE. One SQLite
 *     cannot read as a database (a bad header: "file is not a database")
 *     is damaged: -EUCLEAN. So is one without any schema where the marker
 *     says there was one (truncated to nothing), which SQLite would take
 *     for a new, empty database.
 *   - PRAGMA quick_check (every page and b-tree structure, not the
 *     indexes' contents) must answer "ok", else -EUCLEAN with its first
 *     complaint. It reads the whole file, so it is bounded by check_ms: a
 *     check cut short is logged and the start goes on, since what it read
 *     was sound.
 *
 * The messages name the file and say what to do (docs/operations.md "A
 * lost or damaged database"); lockstepd turns the two codes into exit
 * statuses of their own.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/timeid.h"
#include "common/xalloc.h"

static bool
db_file_exists(const char *path)
{
    struct stat st;

    return lstat(path, &st) == 0;
}

/* The suffix of the first file that says a database was here, or NULL. */
static const char *
db_check_trace(const char *path)
{
    static const char *const sfx[] = { DB_MARKER_SUFFIX, "-wal", "-shm" };

    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
        char *p = xasprintf("%s%s", path, sfx[i]);
        bool there = db_file_exists(p);

        free(p);
        if (there)
            return sfx[i];
    }
    return NULL;
}

int
db_check_presence(const char *path, bool guard, bool *create, struct err *err)
{
    const char *trace, *base = strrchr(path, '/');

    *create = false;
    if (db_file_exists(path))
        return 0;
    base = base ? base + 1 : path;
    if (guard && (trace = db_check_trace(path)) != NULL)
        return err_set(err, -ENODATA,
            "database '%s' is missing, but '%s%s' shows there was one", path,
            base, trace);
    *create = true;
    return 0;
}

bool
db_check_damage_code(int rc)
{
    switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
        return true;
    default:
        return false;
    }
}

int
db_check_damaged(const char *path, const char *why, struct err *err)
{
    return err_set(err, -EUCLEAN, "database '%s' is damaged: %s", path, why);
}

/* Stop a quick_check past its deadline (a monotonic time in ms). */
static int
db_check_progress_cb(void *arg)
{
    return timeid_mono_ms() > *(const int64_t *)arg;
}

/* PRAGMA quick_check within check_ms. */
static int
db_quick_check(sqlite3 *sq, const char *path, int64_t check_ms, struct err *err)
{
    sqlite3_stmt *st = NULL;
    int64_t t0 = timeid_mono_ms(), deadline = t0 + check_ms;
    char *first = NULL;
    int rc;

    sqlite3_progress_handler(sq, 10000, db_check_progress_cb, &deadline);
    rc = sqlite3_prepare_v2(sq, "PRAGMA quick_check(5)", -1, &st, NULL);
    while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *t = (const char *)sqlite3_column_text(st, 0);

        if (first == NULL)
            first = xstrdup(t ? t : "");
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    sqlite3_progress_handler(sq, 0, NULL, NULL);
    if (rc == SQLITE_INTERRUPT) {
        log_warn("database '%s': quick_check stopped after %lld ms "
                 "(db_check_timeout_ms); starting on what it read, which "
                 "was sound",
            path, (long long)(timeid_mono_ms() - t0));
        rc = 0;
    } else if (rc != SQLITE_DONE) {
        rc = db_check_damage_code(rc)
                 ? db_check_damaged(path, sqlite3_errmsg(sq), err)
                 : err_set(err, -EIO, "cannot check database '%s': %s", path,
                       sqlite3_errmsg(sq));
    } else if (first == NULL || strcmp(first, "ok") != 0) {
        char why[120];

        snprintf(why, sizeof(why), "quick_check: %s", first ? first : "?");
        rc = db_check_damaged(path, why, err);
    } else {
        log_info("database '%s' checked in %lld ms", path,
            (long long)(timeid_mono_ms() - t0));
        rc = 0;
    }
    free(first);
    return rc;
}

int
db_check_content(sqlite3 *sq, const char *path, bool guard, int64_t check_ms,
    struct err *err)
{
    sqlite3_stmt *st = NULL;
    int rc, version = -1;
    char *marker;

    rc = sqlite3_prepare_v2(sq, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return db_check_damage_code(rc)
                   ? db_check_damaged(path, sqlite3_errmsg(sq), err)
                   : err_set(err, -EIO, "cannot read database '%s': %s", path,
                         sqlite3_errmsg(sq));
    marker = xasprintf("%s%s", path, DB_MARKER_SUFFIX);
    if (guard && version == 0 && db_file_exists(marker))
        rc = db_check_damaged(path,
            "it holds no schema, but its marker (" DB_MARKER_SUFFIX
            ") shows it had one",
            err);
    free(marker);
    if (rc < 0)
        return rc;
    if (check_ms > 0 && version > 0)
        return db_quick_check(sq, path, check_ms, err);
    return 0;
}

int
db_check_mark(const char *path, struct err *err)
{
    char *marker = xasprintf("%s%s", path, DB_MARKER_SUFFIX);
    char *dir = xstrdup(path), *slash, text[96];
    int fd = -1, dfd = -1, rc = 0;
    time_t now = time(NULL);
    struct tm tm;
    ssize_t n;
    size_t len;

    if (db_file_exists(marker))
        goto out;
    gmtime_r(&now, &tm);
    len = strftime(text, sizeof(text),
        "lockstep database created %Y-%m-%dT%H:%M:%SZ\n", &tm);
    fd = open(marker, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0640);
    if (fd < 0)
        rc = -errno;
    else if ((n = write(fd, text, len)) < 0 || fsync(fd) < 0)
        rc = -errno;
    else if ((size_t)n != len)
        rc = -ENOSPC;
    if (rc < 0) {
        err_set(err, rc, "cannot write marker '%s': %s", marker, strerror(-rc));
        goto out;
    }
    /* The marker's own entry must be durable too. */
    slash = strrchr(dir, '/');
    if (slash)
        *(slash == dir ? slash + 1 : slash) = '\0';
    dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0)
        fsync(dfd);
out:
    if (fd >= 0)
        close(fd);
    if (dfd >= 0)
        close(dfd);
    free(dir);
    free(marker);
    return rc;
}
