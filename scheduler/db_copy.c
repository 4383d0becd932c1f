/*
 * db_copy.c - whole-database copies: the online backup
 *
 * A backup is read through a connection of its own, opened read-only on
 * the same file: in WAL mode its read transaction sees the last
 * committed state and nothing of the iteration's open transaction, and
 * it blocks neither the scheduler's writes nor its checkpoints for
 * longer than the copy. sqlite3_serialize reads every page of that
 * state into one buffer, which is a database file as it stands: written
 * to a file, SQLite opens it as it opens lockstep.db.
 *
 * A seed is the other way round: the state a new replica set starts from
 * (lockstepd --seed-from, docs/operations.md "Replicas"), read from a
 * backup or a stopped single scheduler's lockstep.db. The file is only
 * read: checked as db_open checks its own (damage, quick_check), copied
 * into memory, brought to this binary's schema there (a newer one is
 * refused) and handed back as an image (db_image_load's input).
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/xalloc.h"

int
db_backup(struct db *db, char **data, size_t *len, struct err *err)
{
    sqlite3 *ro = NULL;
    sqlite3_int64 n = 0;
    unsigned char *img = NULL;
    int rc;

    *data = NULL;
    *len = 0;
    rc = sqlite3_open_v2(db->path, &ro,
        SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, -EIO, "cannot open '%s' for a backup: %s", db->path,
            ro ? sqlite3_errmsg(ro) : sqlite3_errstr(rc));
        goto out;
    }
    sqlite3_busy_timeout(ro, 5000);
    img = sqlite3_serialize(ro, "main", &n, 0);
    if (img == NULL || n <= 0) {
        rc = err_set(err, -EIO, "cannot copy '%s': %s", db->path,
            sqlite3_errmsg(ro));
        goto out;
    }
    *data = xmalloc((size_t)n);
    memcpy(*data, img, (size_t)n);
    *len = (size_t)n;
    rc = 0;
out:
    sqlite3_free(img);
    sqlite3_close(ro);
    return rc;
}

/* PRAGMA user_version of sq: >= 0, or a negative errno with err set. */
static int
db_seed_version(sqlite3 *sq, const char *path, struct err *err)
{
    sqlite3_stmt *st = NULL;
    int rc, version = 0;

    rc = sqlite3_prepare_v2(sq, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_OK)
        return db_check_damage_code(rc)
                   ? db_check_damaged(path, sqlite3_errmsg(sq), err)
                   : err_set(err, -EIO, "cannot read '%s': %s", path,
                         sqlite3_errmsg(sq));
    return version;
}

/* The committed state of the database file at path (WAL included) as a
 * memory database of sq's own. */
static int
db_seed_read(const char *path, sqlite3 *mem, struct err *err)
{
    sqlite3 *src = NULL;
    sqlite3_int64 n = 0;
    unsigned char *img = NULL, *copy;
    int rc;

    rc = sqlite3_open_v2(path, &src, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
        NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, -EIO, "cannot open '%s': %s", path,
            src ? sqlite3_errmsg(src) : sqlite3_errstr(rc));
        goto out;
    }
    sqlite3_extended_result_codes(src, 1);
    sqlite3_busy_timeout(src, 5000);
    rc = db_seed_version(src, path, err);
    if (rc == 0)
        rc = err_set(err, -EINVAL,
            "'%s' is not a lockstep database (it has no schema version)", path);
    /* Every page and b-tree, however long it takes: this is the state
     * every replica will start from. */
    if (rc > 0)
        rc = db_check_content(src, path, false, INT64_C(3600000), err);
    if (rc < 0)
        goto out;
    img = sqlite3_serialize(src, "main", &n, 0);
    if (img == NULL || n < 100) {
        rc = err_set(err, -EIO, "cannot read '%s': %s", path,
            sqlite3_errmsg(src));
        goto out;
    }
    copy = sqlite3_malloc64((sqlite3_uint64)n);
    if (copy == NULL)
        fatalx("out of memory");
    memcpy(copy, img, (size_t)n);
    copy[18] = copy[19] = 1; /* a memory database has no WAL (db_repl.c) */
    rc = sqlite3_deserialize(mem, "main", copy, n, n,
        SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_RESIZEABLE);
    rc = rc == SQLITE_OK ? 0
                         : err_set(err, -EIO, "cannot copy '%s': %s", path,
                               sqlite3_errmsg(mem));
out:
    sqlite3_free(img);
    sqlite3_close(src);
    return rc;
}

int
db_seed_image(const char *path, void **data, size_t *len, struct err *err)
{
    sqlite3 *mem = NULL;
    sqlite3_int64 n = 0;
    unsigned char *img = NULL;
    int rc;

    *data = NULL;
    *len = 0;
    rc = sqlite3_open_v2(":memory:", &mem,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, -EIO, "cannot open a memory database: %s",
            sqlite3_errstr(rc));
        goto out;
    }
    if ((rc = db_seed_read(path, mem, err)) < 0 ||
        (rc = migrate_run(mem, path, err)) < 0)
        goto out;
    /* The replicas a backup of another replica set names are not these:
     * each leader of the new set records itself when it serves. */
    if (sqlite3_exec(mem, "DELETE FROM replicas", NULL, NULL, NULL) !=
        SQLITE_OK) {
        rc = err_set(err, -EIO, "cannot prepare '%s' as a seed: %s", path,
            sqlite3_errmsg(mem));
        goto out;
    }
    img = sqlite3_serialize(mem, "main", &n, 0);
    if (img == NULL || n <= 0) {
        rc = err_set(err, -EIO, "cannot copy '%s': %s", path,
            sqlite3_errmsg(mem));
        goto out;
    }
    *data = xmalloc((size_t)n);
    memcpy(*data, img, (size_t)n);
    *len = (size_t)n;
    log_info("seed '%s': %zu bytes at schema version %d", path, *len,
        migrate_latest());
    rc = 0;
out:
    sqlite3_free(img);
    sqlite3_close(mem);
    return rc;
}
