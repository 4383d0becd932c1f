/*
 * db_node.c - the store's nodes
 *
 * A node row keeps what the scheduler must remember of a node across a
 * restart: its resources, labels, cordon and reason, and health verdict.
 * On load the node's state is computed again from those; of the stored
 * state only "lost" is taken. last_seen_ms has its own statement, since
 * a heartbeat writes nothing else.
 *
 * A node an operator removed keeps its row, with the stored state
 * REMOVED (not a state of the model: the row is never loaded), because
 * the placements of finished attempts still name it. When a node of that
 * name registers again, its insert takes the row over as new.
 */
#include "scheduler/db.h"
#include "scheduler/db_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "common/log.h"
#include "common/sbuf.h"
#include "common/xalloc.h"

static const char sql_node_insert[] =
    "INSERT INTO nodes (name, state, reason, cordoned, addr, cpus, "
    "memory_mb, gpus, labels, agent_id, unhealthy, health_reason, "
    "cordon_by, cordon_at_ms, drain, has_health, boot_id, health_wait, "
    "registered_ms, last_seen_ms) "
    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
    "?15, ?16, ?17, ?18, ?19, ?20) "
    "ON CONFLICT (name) DO UPDATE SET state = excluded.state, "
    "reason = excluded.reason, cordoned = excluded.cordoned, "
    "addr = excluded.addr, cpus = excluded.cpus, "
    "memory_mb = excluded.memory_mb, gpus = excluded.gpus, "
    "labels = excluded.labels, agent_id = excluded.agent_id, "
    "unhealthy = excluded.unhealthy, "
    "health_reason = excluded.health_reason, "
    "cordon_by = excluded.cordon_by, cordon_at_ms = excluded.cordon_at_ms, "
    "drain = excluded.drain, has_health = excluded.has_health, "
    "boot_id = excluded.boot_id, health_wait = excluded.health_wait, "
    "registered_ms = excluded.registered_ms, "
    "last_seen_ms = excluded.last_seen_ms WHERE nodes.state = 'REMOVED'";

static const char sql_node_update[] =
    "UPDATE nodes SET state = ?2, reason = ?3, cordoned = ?4, addr = ?5, "
    "cpus = ?6, memory_mb = ?7, gpus = ?8, labels = ?9, agent_id = ?10, "
    "unhealthy = ?11, health_reason = ?12, cordon_by = ?13, "
    "cordon_at_ms = ?14, drain = ?15, has_health = ?16, boot_id = ?17, "
    "health_wait = ?18 WHERE name = ?1";

/* Bind the columns shared by insert and update (?1..?18). */
static void
node_bind(sqlite3_stmt *st, const struct node *node)
{
    char *gpus = db_json_int_array(node->gpus, node->ngpus);
    char *labels = db_json_kv(node->labels, node->nlabels);

    DB_BIND(st, 1, DB_TEXT(node->name), DB_TEXT(node_state_str(node->state)),
        DB_TEXT(node->reason), DB_INT(node->cordoned), DB_TEXT(node->addr),
        DB_INT(node->cpus), DB_INT(node->memory_mb), DB_TEXT(gpus),
        DB_TEXT(labels), DB_TEXT(node->agent_id), DB_INT(node->unhealthy),
        DB_TEXT(node->health_reason), DB_TEXT(node->cordon_by),
        DB_INT(node->cordon_at_ms), DB_INT(node->drain),
        DB_INT(node->health != NULL),
        DB_TEXT(node->health ? node->health->boot_id : ""),
        DB_INT(node->health && node->health->waiting));
    free(gpus);
    free(labels);
}

int
db_node_insert(struct db *db, const struct node *node)
{
    node_bind(db->node_insert, node);
    DB_BIND(db->node_insert, 19, DB_INT(node->registered_ms),
        DB_INT(node->last_seen_ms));
    return db_write(db, db->node_insert, "node insert");
}

int
db_node_update(struct db *db, const struct node *node)
{
    node_bind(db->node_update, node);
    return db_write(db, db->node_update, "node update");
}

static const char sql_node_touch[] =
    "UPDATE nodes SET last_seen_ms = ?2 WHERE name = ?1";

int
db_node_touch(struct db *db, const char *name, int64_t last_seen_ms)
{
    return DB_WRITE(db, db->node_touch, "node touch", DB_TEXT(name),
        DB_INT(last_seen_ms));
}

static const char sql_node_witness[] =
    "UPDATE nodes SET witnesses = ?2, witness_port = ?3 WHERE name = ?1";

int
db_node_witness(struct db *db, const struct node *node)
{
    struct sbuf b;
    int rc;

    sbuf_init(&b);
    for (size_t i = 0; i < node->nwit_sent; i++)
        sbuf_addf(&b, "%s%s", i ? "," : "", node->wit_sent[i]);
    rc = DB_WRITE(db, db->node_witness, "node witness", DB_TEXT(node->name),
        DB_TEXT(b.len ? b.buf : ""), DB_INT(node->witness_port));
    sbuf_release(&b);
    return rc;
}

static const char sql_node_remove[] =
    "UPDATE nodes SET state = 'REMOVED' WHERE name = ?1";

int
db_node_remove(struct db *db, const char *name)
{
    return DB_WRITE(db, db->node_remove, "node remove", DB_TEXT(name));
}

static const char sql_nodes_all[] =
    "SELECT name, state, reason, cordoned, addr, cpus, memory_mb, gpus, "
    "labels, agent_id, registered_ms, last_seen_ms, unhealthy, "
    "health_reason, cordon_by, cordon_at_ms, drain, has_health, boot_id, "
    "health_wait, witnesses, witness_port FROM nodes "
    "WHERE state != 'REMOVED' ORDER BY name";

/* Replace *field, a string node_create set, with column i. */
static void
node_col_str(sqlite3_stmt *st, int i, char **field)
{
    free(*field);
    *field = db_col_strdup(st, i);
}

/* The witness set last sent to node, from its comma list. */
static void
node_witnesses_col(struct node *node, const char *list)
{
    const char *p = list;

    while (p && *p && node->nwit_sent < WITNESS_MAX) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);

        if (n > 0)
            node->wit_sent[node->nwit_sent++] = xstrndup(p, n);
        p = comma ? comma + 1 : NULL;
    }
}

/* A node from a row of sql_nodes_all, added to the table (arg). */
static int
node_row(sqlite3_stmt *st, void *arg)
{
    struct node *node = node_create(db_col_text(st, 0));
    enum node_state state = NODE_STATE_UP;

    node_state_parse(db_col_text(st, 1), &state);
    node->lost = state == NODE_STATE_LOST;
    node->unhealthy = sqlite3_column_int(st, 12) != 0;
    node_col_str(st, 13, &node->health_reason);
    node_col_str(st, 2, &node->reason);
    node->cordoned = sqlite3_column_int(st, 3) != 0;
    node_col_str(st, 4, &node->addr);
    node->cpus = sqlite3_column_int(st, 5);
    node->memory_mb = sqlite3_column_int64(st, 6);
    node_col_str(st, 9, &node->agent_id);
    node->registered_ms = sqlite3_column_int64(st, 10);
    node->last_seen_ms = sqlite3_column_int64(st, 11);
    node->last_seen_saved_ms = node->last_seen_ms;
    node_col_str(st, 14, &node->cordon_by);
    node->cordon_at_ms = sqlite3_column_int64(st, 15);
    node->drain = sqlite3_column_int(st, 16) != 0;
    if (sqlite3_column_int(st, 17) != 0) {
        node->health = health_create();
        node_col_str(st, 18, &node->health->boot_id);
        node->health->waiting = sqlite3_column_int(st, 19) != 0;
        free(node->health->agent_id);
        node->health->agent_id = xstrdup(node->agent_id);
    }
    if (db_unjson_int_array(db_col_text(st, 7), &node->gpus, &node->ngpus) <
            0 ||
        db_unjson_kv(db_col_text(st, 8), &node->labels, &node->nlabels) < 0) {
        log_error("database: node '%s' has malformed gpus or labels",
            node->name);
        node_destroy(node);
        return -EIO;
    }
    node_witnesses_col(node, db_col_text(st, 20));
    node->witness_port = sqlite3_column_int(st, 21);
    node->state = node_state_compute(node);
    node_table_add(arg, node);
    return 0;
}

int
db_nodes_load(struct db *db, struct node_table *t)
{
    return db_rows(db, db->nodes_all, "nodes load", node_row, t);
}

const struct db_stmt_def db_node_stmts[] = {
    DB_STMT(node_insert),
    DB_STMT(node_update),
    DB_STMT(node_touch),
    DB_STMT(node_witness),
    DB_STMT(node_remove),
    DB_STMT(nodes_all),
    DB_STMT_END,
};
