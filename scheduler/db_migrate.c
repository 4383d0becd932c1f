/*
 * db_migrate.c - bring a database's schema up to this binary's version
 *
 * The migrations are schema/NNNN-*.sql, embedded at build time as
 * schema_migrations[] (schema/embed.py). Migration N brings the database
 * to PRAGMA user_version N; each runs in its own transaction together with
 * the version bump, so a crash leaves the database at a whole version. A
 * database newer than the binary is refused rather than guessed at. An
 * upgrade is logged once (from, to), so an operator who swapped binaries
 * sees that the state moved on and that an older binary cannot read it
 * any more.
 */
#include "scheduler/db.h"

#include <errno.h>
#include <stdio.h>

#include <sqlite3.h>

#include "common/log.h"
#include "schema_migrations.h"

int
migrate_latest(void)
{
    /* The last one's number (a number handed to work not merged yet may
     * be missing: schema/embed.py). */
    return schema_nmigrations > 0
               ? schema_migrations[schema_nmigrations - 1].version
               : 0;
}

static int
migrate_user_version(sqlite3 *sq, int *out)
{
    sqlite3_stmt *st = NULL;
    int rc;

    rc = sqlite3_prepare_v2(sq, "PRAGMA user_version", -1, &st, NULL);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        *out = sqlite3_column_int(st, 0);
        rc = SQLITE_OK;
    }
    sqlite3_finalize(st);
    return rc;
}

int
migrate_run(struct sqlite3 *sq, const char *path, struct err *err)
{
    int version = 0, from;
    int latest = migrate_latest();
    int rc;

    rc = migrate_user_version(sq, &version);
    if (rc != SQLITE_OK)
        return err_set(err, -EIO, "cannot read schema version of '%s': %s",
            path, sqlite3_errmsg(sq));
    if (version > latest)
        return err_set(err, -EPROTO,
            "database '%s' has schema version %d, newer than this lockstepd "
            "understands (%d); use a newer lockstepd",
            path, version, latest);
    from = version;
    for (size_t i = 0; i < schema_nmigrations; i++) {
        const struct schema_migration *m = &schema_migrations[i];
        char bump[64];
        char *msg = NULL;

        if (m->version <= version)
            continue;
        /* PRAGMA takes no bound parameters; the number is our own. */
        snprintf(bump, sizeof(bump), "PRAGMA user_version = %d", m->version);
        rc = sqlite3_exec(sq, "BEGIN IMMEDIATE", NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(sq, m->sql, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(sq, bump, NULL, NULL, &msg);
        if (rc == SQLITE_OK)
            rc = sqlite3_exec(sq, "COMMIT", NULL, NULL, &msg);
        if (rc != SQLITE_OK) {
            rc = err_set(err, -EIO, "cannot apply migration %s to '%s': %s",
                m->name, path, msg ? msg : sqlite3_errstr(rc));
            sqlite3_free(msg);
            sqlite3_exec(sq, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
        version = m->version;
    }
    if (version != from && from > 0)
        log_notice("database '%s' upgraded from schema version %d to %d", path,
            from, version);
    return 0;
}
