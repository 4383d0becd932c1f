/*
 * repl.h - a replicated scheduler: lockstepd as one of 3 or 5 replicas
 * whose state is kept by libraft (docs/architecture.md "Replication")
 *
 * The Raft log is the durable truth. Each replica's SQLite database is
 * the state machine: rebuilt at every start from the latest snapshot and
 * the log, and changed only by applying committed entries. One entry is
 * one loop iteration's transaction of the leader, as the changeset its
 * session recorded (db_txn_changes): the leader runs the iteration as a
 * single scheduler does, commits it locally, proposes the changeset, and
 * the replies of that iteration are held until the entry is committed
 * (schedd's replicate hooks and http_server_hold). Followers apply the
 * changesets; the leader's own entries are already in its database.
 *
 * Roles. A replica starts as a follower and serves no request but
 * GET /v1/health (answered with its role and the leader's address);
 * every other request gets `not_leader` with the leader's URL. When
 * libraft makes it leader it appends a barrier (every earlier entry is
 * then applied), loads the model from its database as a restarted
 * scheduler does, records its URL in the replicas table (so followers
 * can send clients to it) and starts the services (the promote
 * callback). A leader that stops being leader (it lost its quorum for an
 * election timeout, or a newer leader exists) re-executes itself at
 * once: whatever it applied locally and never got committed is gone
 * with the database that is rebuilt at start, and it comes back as a
 * follower (crash-only).
 *
 * Threading: the loop thread only; libraft runs on the scheduler's loop
 * (raft_uv_init on sd->loop).
 */
#ifndef SCHEDULER_REPL_H
#define SCHEDULER_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/err.h"

struct schedd;
struct repl;

/* One member of the initial cluster ("ID@HOST:PORT" in `replicas`). */
struct repl_peer {
    uint64_t id;
    char address[128]; /* Raft host:port */
};

#define REPL_MAX_PEERS 9

struct repl_opts {
    uint64_t id;              /* this replica, > 0 */
    const char *address;      /* its Raft host:port */
    const char *bind_address; /* NULL or "": address */
    const char *url;          /* its API URL; NULL or "": repl_set_url */
    struct repl_peer peers[REPL_MAX_PEERS]; /* the initial voters */
    size_t npeers;                          /* 0: join an existing cluster */
    int election_ms;
    unsigned snapshot_entries;
    char *const *argv; /* to re-execute (borrowed: main's) */
    /* The state a new replica set starts from (lockstepd --seed-from):
     * db_seed_image's image, taken over by repl_create; NULL: none.
     * Only a replica listed in peers may seed (it bootstraps the set). */
    void *seed;
    size_t seed_len;
    const char *seed_path; /* named in the log */
};

/* lockstepd --seed-from path (repl_seed.c): check that o is a replica
 * that bootstraps the set, and read the seed into o->seed (db_seed_image).
 * 0, or a negative errno with err saying what is wrong (-EUCLEAN: the
 * file is damaged). */
int repl_seed_load(struct repl_opts *o, const char *path, struct err *err);
/* argv without --seed-from and its argument (a copy of the pointers;
 * caller frees the array): what a seeding replica re-executes with, as
 * its seed is then in its Raft log. */
char **repl_seed_argv(char **argv);

/* Parse `replicas` ("1@10.0.0.1:7400, 2@10.0.0.2:7400, ...") into
 * o->peers. 0, or -EINVAL with err naming what is wrong. */
int repl_parse_peers(const char *list, struct repl_opts *o, struct err *err);

struct config;

/* The replica keys of cfg (docs/config.md: replica_id, replica_address,
 * replica_bind_address, replicas, replica_url, replica_election_timeout_ms,
 * replica_snapshot_entries) into o, checked against each other and
 * against the rest of the configuration: listen's host (the default
 * URL's), lease_ms and node_timeout_ms. 1 for a replica, 0 for a single
 * scheduler (none of them set), or -EINVAL with err saying what is
 * inconsistent. o's strings are borrowed from cfg. */
int repl_conf(const struct config *cfg, const char *listen_host, int lease_ms,
    int node_timeout_ms, struct repl_opts *o, struct err *err);

/* The services of a leader: started by main once this replica leads
 * and its model is loaded (0, or a negative errno with err set: the
 * replica then gives up leading). */
typedef int repl_promote_fn(struct schedd *sd, void *arg, struct err *err);

/* The replica of sd (sd->repl): register the replicate hooks on sd and
 * keep the promote callback. Starts nothing. Takes o->seed over (the
 * caller forgets it). */
struct repl *repl_create(struct schedd *sd, const struct repl_opts *o,
    repl_promote_fn *promote, void *arg);
/* Set up libraft on sd's loop with its files under state_dir/raft,
 * bootstrap a fresh cluster when this replica is one of the initial
 * peers and has no Raft state yet, and start it: the snapshot is
 * restored into the database, the log loaded, the Raft address
 * listened on, the role watched. With a seed, -EEXIST when the log
 * holds anything past the bootstrap configuration (the replica set has
 * state: a seed never overwrites it); otherwise the seed is the first
 * entry this replica proposes once elected, before it serves. On
 * failure (err set) the caller still calls repl_close(). */
int repl_start(struct repl *r, struct err *err);
/* Close Raft; cb(arg) runs once every handle is closed (never
 * synchronously). */
void repl_close(struct repl *r, void (*cb)(void *), void *arg);
/* Free; Raft must be closed (or never started). Accepts NULL. */
void repl_destroy(struct repl *r);

/* The API URL clients reach this replica at, once known (main learns the
 * bound port after listening). Copied. */
void repl_set_url(struct repl *r, const char *url);

/* Whether this replica leads and serves (caught up, model loaded). */
bool repl_serving(const struct repl *r);
/* The API URL of the current leader, when known and not this replica:
 * into buf; NULL otherwise. */
const char *repl_leader_url(struct repl *r, char *buf, size_t len);
/* GET /v1/health's replication fields: role, replica_id, term, leader,
 * leader_id, last_applied. */
void repl_health(struct repl *r, cJSON *o);
/* GET /v1/replicas (the leader's view): term, commit index, and every
 * member with its role, state and lag. Caller deletes. */
cJSON *repl_members(struct repl *r);

/* A membership change is done: rc 0, or a negative errno with msg saying
 * what failed (borrowed for the call). */
typedef void repl_change_fn(void *arg, int rc, const char *msg);

/* Add replica id at its Raft address as a voter (libraft first adds it
 * as a spare, then catches it up, then promotes it) and record its url
 * (may be NULL) in the replicas table; or remove replica id. Only the
 * serving leader. Returns 0 when the change started (done runs later,
 * never from inside this call), or a negative errno with err set:
 * -EPERM not the leader, -EEXIST/-ENOENT the id, -EBUSY another change
 * is under way, -EINVAL. */
int repl_add(struct repl *r, uint64_t id, const char *address, const char *url,
    repl_change_fn *done, void *arg, struct err *err);
int repl_remove(struct repl *r, uint64_t id, repl_change_fn *done, void *arg,
    struct err *err);

#endif
