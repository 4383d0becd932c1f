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
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
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
