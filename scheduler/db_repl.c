/*
 * db_repl.c - what a replicated scheduler needs of the store: each
 * transaction's changes as a changeset, applying another replica's, and
 * the whole database as an image (the snapshot) and back
 *
 * SQLite's session extension records every row a transaction changes
 * (its primary key, the old and the new values): db_txn_begin starts a
 * session over every table when replication is on, db_txn_changes turns
 * it into a changeset just before the commit, and the leader proposes
 * those bytes as the iteration's one Raft entry (scheduler/repl.c).
 * Followers apply them with sqlite3changeset_apply, in a transaction of
 * their own. A conflict (a row missing, or not as the leader saw it
 * before its change) means the states have diverged, which must never
 * happen: the apply is aborted and reported, and the replica starts
 * over from the snapshot and the log.
 *
 * What sessions cannot see: tables without a primary key (none: checked
 * when replication is turned on) and schema changes, which every replica
 * makes itself from the migrations of its binary (all replicas run the
 * same version). sqlite_sequence, which has no key, follows by itself:
 * the rows a changeset inserts carry the leader's ids, and an insert of
 * an id above the sequence moves it.
 *
 * The image is sqlite3_serialize of the main database (every page, as a
 * database file holds them); loading one deserializes it into a memory
 * database and copies that over the main one with the backup API, so the
 * statements prepared in db_open stay valid (they re-prepare against
 * the new schema cookie by themselves).
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#define SQLITE_ENABLE_SESSION 1
#define SQLITE_ENABLE_PREUPDATE_HOOK 1

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/xalloc.h"

/* ---- turning it on ------------------------------------------------------ */

static const char sql_tables_without_pk[] =
    "SELECT m.name FROM sqlite_schema AS m WHERE m.type = 'table' "
    "AND m.name NOT LIKE 'sqlite_%' AND NOT EXISTS "
    "(SELECT 1 FROM pragma_table_info(m.name) AS t WHERE t.pk > 0)";

int
db_repl_enable(struct db *db, struct err *err)
{
    sqlite3_stmt *st = NULL;
    int rc;

    rc = sqlite3_prepare_v2(db->sq, sql_tables_without_pk, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, -EIO, "cannot list the tables of '%s': %s",
            db->path, sqlite3_errmsg(db->sq));
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        rc = err_set(err, -EINVAL,
            "table '%s' of '%s' has no primary key: its changes could not "
            "be replicated",
            db_col_text(st, 0), db->path);
        sqlite3_finalize(st);
        return rc;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return err_set(err, -EIO, "cannot list the tables of '%s': %s",
            db->path, sqlite3_errmsg(db->sq));
    /* The Raft log is what survives a crash: this file is rebuilt from
     * the snapshot and the log at every start, so it needs no fsync. */
    rc = sqlite3_exec(db->sq, "PRAGMA synchronous = OFF", NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        return err_set(err, -EIO, "cannot set synchronous=OFF on '%s': %s",
            db->path, sqlite3_errmsg(db->sq));
    db->repl = true;
    return 0;
}

/* ---- a transaction's changes -------------------------------------------- */

int
db_repl_begin(struct db *db)
{
    sqlite3_session *s = NULL;
    int rc;

    if (!db->repl)
        return 0;
    rc = sqlite3session_create(db->sq, "main", &s);
    if (rc == SQLITE_OK)
        rc = sqlite3session_attach(s, NULL);
    if (rc != SQLITE_OK) {
        sqlite3session_delete(s);
        return db_fail(db, "session", rc);
    }
    db->session = s;
    return 0;
}

void
db_repl_end(struct db *db)
{
    if (db->session) {
        sqlite3session_delete(db->session);
        db->session = NULL;
    }
}

int
db_txn_changes(struct db *db, void **data, size_t *len)
{
    void *cs = NULL;
    int n = 0, rc;

    *data = NULL;
    *len = 0;
    if (db->session == NULL)
        return 0;
    rc = sqlite3session_changeset(db->session, &n, &cs);
    if (rc != SQLITE_OK)
        return db_fail(db, "changeset", rc);
    if (n > 0) {
        *data = xmalloc((size_t)n);
        memcpy(*data, cs, (size_t)n);
        *len = (size_t)n;
    }
    sqlite3_free(cs);
    return 0;
}

struct db_apply_ctx {
    struct db *db;
    int conflicts;
    char what[160];
};

static int
db_apply_conflict_cb(void *arg, int kind, sqlite3_changeset_iter *it)
{
    static const char *const kinds[] = {
        [SQLITE_CHANGESET_DATA] = "row differs",
        [SQLITE_CHANGESET_NOTFOUND] = "row missing",
        [SQLITE_CHANGESET_CONFLICT] = "row exists",
        [SQLITE_CHANGESET_CONSTRAINT] = "constraint",
        [SQLITE_CHANGESET_FOREIGN_KEY] = "foreign key",
    };
    struct db_apply_ctx *ctx = arg;
    const char *table = "?";
    int ncol = 0, op = 0, indirect = 0;

    if (kind != SQLITE_CHANGESET_FOREIGN_KEY)
        sqlite3changeset_op(it, &table, &ncol, &op, &indirect);
    if (ctx->conflicts++ == 0)
        snprintf(ctx->what, sizeof(ctx->what), "%s in table '%s'",
            kind >= 1 && kind <= 5 ? kinds[kind] : "conflict", table);
    return SQLITE_CHANGESET_ABORT;
}

int
db_changes_apply(struct db *db, const void *data, size_t len, struct err *err)
{
    struct db_apply_ctx ctx = { .db = db };
    int rc;

    if (db->in_txn)
        return err_set(err, -EBUSY,
            "cannot apply changes: a transaction is open");
    rc = sqlite3changeset_apply(db->sq, (int)len, (void *)data, NULL,
        db_apply_conflict_cb, &ctx);
    if (rc == SQLITE_OK)
        return 0;
    if (ctx.conflicts > 0)
        return err_set(err, -EIO,
            "replicated changes do not apply to '%s': %s (%d conflict%s)",
            db->path, ctx.what, ctx.conflicts, ctx.conflicts == 1 ? "" : "s");
    return err_set(err, db_fail(db, "apply changes", rc),
        "cannot apply replicated changes to '%s': %s", db->path,
        sqlite3_errmsg(db->sq));
}

/* ---- the image ---------------------------------------------------------- */

int
db_image_save(struct db *db, void **data, size_t *len)
{
    sqlite3_int64 n = 0;
    unsigned char *img;

    *data = NULL;
    *len = 0;
    if (db->in_txn)
        return -EBUSY;
    img = sqlite3_serialize(db->sq, "main", &n, 0);
    if (img == NULL || n <= 0) {
        sqlite3_free(img);
        return db_fail(db, "serialize", SQLITE_ERROR);
    }
    *data = xmalloc((size_t)n);
    memcpy(*data, img, (size_t)n);
    *len = (size_t)n;
    sqlite3_free(img);
    return 0;
}

int
db_image_load(struct db *db, const void *data, size_t len, struct err *err)
{
    sqlite3 *mem = NULL;
    sqlite3_backup *b = NULL;
    unsigned char *copy;
    int rc;

    if (db->in_txn)
        return err_set(err, -EBUSY,
            "cannot load an image: a transaction "
            "is open");
    if (len < 100 || memcmp(data, "SQLite format 3", 16) != 0)
        return err_set(err, -EINVAL, "not a database image (%zu bytes)", len);
    rc = sqlite3_open_v2(":memory:", &mem,
        SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK) {
        rc = err_set(err, -EIO, "cannot open a memory database: %s",
            sqlite3_errstr(rc));
        goto out;
    }
    /* sqlite3_deserialize takes memory from sqlite3_malloc64. */
    copy = sqlite3_malloc64(len);
    if (copy == NULL)
        fatalx("out of memory");
    memcpy(copy, data, len);
    /* The image of a WAL database says so in its header (bytes 18 and
     * 19); a memory database has no WAL file to go with it. The backup
     * below keeps the main database's own journal mode. */
    copy[18] = copy[19] = 1;
    rc = sqlite3_deserialize(mem, "main", copy, (sqlite3_int64)len,
        (sqlite3_int64)len,
        SQLITE_DESERIALIZE_FREEONCLOSE | SQLITE_DESERIALIZE_READONLY);
    if (rc != SQLITE_OK) {
        rc = err_set(err, -EINVAL, "not a database image: %s",
            sqlite3_errmsg(mem));
        goto out;
    }
    b = sqlite3_backup_init(db->sq, "main", mem, "main");
    if (b == NULL) {
        rc = err_set(err, -EIO, "cannot copy an image over '%s': %s", db->path,
            sqlite3_errmsg(db->sq));
        goto out;
    }
    rc = sqlite3_backup_step(b, -1);
    sqlite3_backup_finish(b);
    if (rc != SQLITE_DONE) {
        rc = err_set(err, -EIO, "cannot copy an image over '%s': %s", db->path,
            sqlite3_errstr(rc));
        goto out;
    }
    rc = 0;
out:
    sqlite3_close(mem);
    return rc;
}

/* ---- the replicas table -------------------------------------------------- */

static const char sql_replica_set[] =
    "INSERT INTO replicas (id, address, url, led_ms) VALUES (?1, ?2, ?3, ?4) "
    "ON CONFLICT (id) DO UPDATE SET address = excluded.address, "
    "url = excluded.url, led_ms = excluded.led_ms";

int
db_replica_set(struct db *db, uint64_t id, const char *address, const char *url,
    int64_t led_ms)
{
    return DB_WRITE(db, db->replica_set, "replica set", DB_INT(id),
        DB_TEXT(address), DB_TEXT(url), DB_INT(led_ms));
}

static const char sql_replica_url[] = "SELECT url FROM replicas WHERE id = ?1";

struct db_url_buf {
    char *buf;
    size_t len;
};

static int
replica_url_row(sqlite3_stmt *st, void *arg)
{
    struct db_url_buf *u = arg;

    snprintf(u->buf, u->len, "%s", db_col_text(st, 0));
    return 0;
}

int
db_replica_url(struct db *db, uint64_t id, char *buf, size_t len)
{
    struct db_url_buf u = { buf, len };

    buf[0] = '\0';
    db_bind_vals(db->replica_url, 1, DB_VALS(DB_INT(id)));
    return db_lookup(db, db->replica_url, "replica url", replica_url_row, &u);
}

const struct db_stmt_def db_repl_stmts[] = {
    DB_STMT(replica_set),
    DB_STMT(replica_url),
    DB_STMT_END,
};
