/*
 * node.h - nodes: state, resources and free-resource accounting
 *
 * A node's resources are what its agent last reported. What is free is
 * what no placement holds: a placement (attempt.h) holds its CPUs, memory
 * and GPU ids from the moment it is decided until the node's agent no
 * longer lists that attempt, so the teardown of one job never overlaps the
 * ranks of the next.
 *
 * The state shown to people is derived from independent facts (node_state
 * below): LOST beats everything (no status for node_timeout_ms), then an
 * operator's cordon (DRAINING while placements are still held, CORDONED
 * after), then UNHEALTHY (blamed, an open health finding that excludes
 * it, or a new boot waiting for its first full pass of health checks),
 * then SUSPECT (an open health finding that does not exclude it), else
 * UP. Only UP and SUSPECT nodes receive new work (SUSPECT ones last), and
 * of those only the ones whose agent is known to be there
 * (node_schedulable).
 *
 * Pure: nothing here does I/O.
 */
#ifndef SCHEDULER_NODE_H
#define SCHEDULER_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/itab.h"
#include "common/proto.h"
#include "common/witness.h"
#include "scheduler/portpool.h"

struct health;
struct placement;

enum node_state {
    NODE_STATE_UP,
    NODE_STATE_CORDONED,
    NODE_STATE_DRAINING,
    NODE_STATE_UNHEALTHY,
    NODE_STATE_LOST,
    NODE_STATE_SUSPECT,
};
#define NODE_STATE_COUNT 6

struct node {
    char *name;
    enum node_state state; /* derived: node_state_compute() */
    char *reason;          /* the operator's cordon reason; never NULL */
    bool cordoned;
    char *cordon_by;      /* who cordoned it; never NULL ("" none) */
    int64_t cordon_at_ms; /* when; 0 none */
    bool drain;           /* the cordon was a drain (`lockstep drain`) */
    bool unhealthy;       /* excluded automatically (blame) */
    char *health_reason;  /* why it is unhealthy; never NULL */
    /* Its health checks' findings (health.h); NULL while its agent sent
     * no health (older agents: no findings, no first-pass wait). */
    struct health *health;
    bool lost;
    /* What made it LOST: its silence for node_timeout_ms, its
     * supervisors' notice (nodes_fenced), or its short leases running
     * out (nodes_tick). */
    enum node_lost_how {
        NODE_LOST_TIMEOUT,
        NODE_LOST_GONE,
        NODE_LOST_SHORT,
    } lost_how;
    /* An operator removes it (nodes_remove): cordoned, and forgotten once
     * nothing holds it; removing_by is who asked (NULL when not). */
    bool removing;
    char *removing_by;

    char *addr; /* never NULL */
    int cpus;
    int64_t memory_mb;
    int *gpus; /* sorted ids */
    size_t ngpus;
    struct proto_kv *labels;
    size_t nlabels;
    char *agent_id; /* never NULL ("" before the first report) */
    int64_t registered_ms;

    int64_t last_seen_ms;       /* wall clock, kept in memory */
    int64_t last_seen_saved_ms; /* what the database holds */
    int64_t last_seen_mono;     /* monotonic, for the timeout */
    /* Lease pings (nodes_witness_grant): when the last one was heard (0:
     * none since the scheduler started) and whether it said its agent
     * stops; the latest end of a lease granted to it, one status
     * interval added (monotonic). */
    int64_t ping_mono;
    bool ping_stopped;
    int64_t told_until_mono;
    int64_t told_lease_ms, told_interval_ms; /* the last grant */
    bool told_short;                         /* it was a short one */
    /* Its keys of the cluster secret of generation key_gen (schedd's
     * secret_gen; 0: none yet), kept by auth_node_keys: the node key
     * (common/cred.h), which signs its requests, and the lease key
     * derived from it (common/leaseping.h), made ready for its pings'
     * MACs. Deriving them is three HMACs, which were a tenth of a
     * status's cost. */
    unsigned char node_key[CRED_KEY_LEN];
    struct cred_mac_key *lease_mac;
    uint64_t key_gen;
    bool reconciled; /* agent report compared since load */
    bool agent_gone; /* its long poll's connection closed and
                      * nothing was heard since */

    /* Witnesses (nodes_witness.h): its agent's witness port (0: not
     * reported since the scheduler started), its contact with the
     * scheduler, the witness set last sent to it, and whether it is lost
     * with its jobs waiting for the witnesses (logged once). */
    int witness_port;
    struct witness_contact contact;
    char *wit_sent[WITNESS_MAX];
    size_t nwit_sent;
    /* W(node) now, kept by nodes_witness.c as nodes join, leave and
     * change racks (borrowed pointers; valid while wit_known), so that a
     * status reply does not rank every node of the table. */
    struct node *wit[WITNESS_MAX];
    struct witness_rank wit_rank[WITNESS_MAX]; /* how each ranks */
    size_t nwit;
    bool wit_known;
    bool lost_waiting;

    uint64_t gen;       /* desired-state generation */
    uint64_t agent_gen; /* generation its agent last reported */

    /* The master ports of the live attempts whose node rank 0 it is
     * (portpool.h); NULL until it is first a master (schedd_node_ports). */
    struct portpool *ports;

    /* Placements holding resources here (borrowed; owned by attempts). */
    struct placement **holds;
    size_t nholds;
    size_t holds_cap;
    int used_cpus;
    int64_t used_memory_mb;

    size_t idx;        /* its position in the node table (0 for
                        * the first added): arrays indexed by node
                        * (a scheduling pass, the long polls) use
                        * it */
    int64_t stale_job; /* the last stale (job, attempt) report */
    int stale_attempt; /* noted as an event (status.c) */

    struct itab_link link; /* in the node_table */
};

const char *node_state_str(enum node_state s);
int node_state_parse(const char *s, enum node_state *out);

/* A node with the given name, UP, no resources. Caller destroys. */
struct node *node_create(const char *name);
/* Accepts NULL. Its holds must be gone already. */
void node_destroy(struct node *node);

/* The derived state from lost/cordoned/unhealthy/health/nholds. */
enum node_state node_state_compute(const struct node *node);
/* Whether new work may go there: UP or SUSPECT, its agent reported since
 * the scheduler started, and its agent's connection was not seen to
 * drop. */
bool node_schedulable(const struct node *node);
/* The scheduler could not hear anyone for stall_ms up to mono (its loop
 * stalled): that time is not the node's silence. Unless it was heard
 * since the stall began, its last_seen_mono moves forward by stall_ms, as
 * if the stall had not happened (never past mono). Only ever delays a
 * LOST (docs/fault-tolerance.md "Scheduler stalls"). */
void node_stalled(struct node *node, int64_t mono, int64_t stall_ms);

/* Replace resources/labels/addr (copied). Returns true when anything
 * differs from what the node had. */
bool node_update_resources(struct node *node, const char *addr, int cpus,
    int64_t memory_mb, const int *gpus, size_t ngpus,
    const struct proto_kv *labels, size_t nlabels);
/* The value of the node's label key; NULL when it has none. */
const char *node_label(const struct node *node, const char *key);
/* Labels as text would compare; true when equal. */
bool node_labels_equal(const struct node *node, const struct proto_kv *kv,
    size_t n);

/* Free resources (never negative). */
int node_free_cpus(const struct node *node);
int64_t node_free_memory_mb(const struct node *node);
/* Writes the free GPU ids (ascending) into out (room for node->ngpus) and
 * returns how many. */
size_t node_free_gpus(const struct node *node, int *out);

/* Add/remove a placement's hold (the pointer is borrowed). */
void node_hold_add(struct node *node, struct placement *p);
void node_hold_remove(struct node *node, struct placement *p);

/* ---- table of nodes by name ------------------------------------------- */

struct node_table {
    struct itab t; /* insertion order (node->idx ascends) */
    uint64_t gen;  /* the inventory's generation: bumped when a node
                    * joins or leaves, and by node_table_touch */
};

void node_table_init(struct node_table *t);
/* Destroys every node. */
void node_table_release(struct node_table *t);
/* Takes ownership; the name must not be present. Sets node->idx to the
 * table's count before the call. */
void node_table_add(struct node_table *t, struct node *node);
/* Unlinks node (the caller destroys it) and moves each later node's idx
 * down by one, so that the indexes stay 0..count-1: whoever keeps an
 * array by idx must close its gap first. */
void node_table_remove(struct node_table *t, struct node *node);
struct node *node_table_find(const struct node_table *t, const char *name);
/* A node's resources (CPUs, GPUs, memory) changed: what was derived from
 * the inventory is stale (t->gen moves on). */
void node_table_touch(struct node_table *t);
/* The nodes in idx order: the first (NULL when empty), the one after node
 * (NULL after the last), and how many. */
struct node *node_table_first(const struct node_table *t);
struct node *node_table_next(const struct node *node);
size_t node_table_count(const struct node_table *t);

#endif
