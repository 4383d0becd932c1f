/*
 * repl_int.h - the replica's private state, shared by repl.c (libraft,
 * the state machine, roles) and repl_view.c (what the API shows, and
 * membership changes) only
 *
 * Threading: the loop thread only, like repl.h.
 */
#ifndef SCHEDULER_REPL_INT_H
#define SCHEDULER_REPL_INT_H

#include <stdbool.h>
#include <stdint.h>

#include <raft.h>
#include <raft/uv.h>
#include <uv.h>

#include "scheduler/repl.h"

/* A proposal in flight: a changeset, rank output, or a lease barrier. */
struct repl_prop {
    struct raft_apply req;
    struct raft_barrier barrier; /* a lease check (repl_wait_hook) */
    struct repl *r;
    uint64_t seq;
    uint64_t proposed_ms; /* loop time */
};

/* The replica (repl.h). */
struct repl {
    struct schedd *sd;
    uint64_t id;
    char *address;
    char *bind_address; /* NULL: address */
    char *url;
    char *dir;
    char *const *argv;
    struct repl_peer peers[REPL_MAX_PEERS];
    size_t npeers;
    int election_ms;
    unsigned snapshot_entries;
    repl_promote_fn *promote;
    void *promote_arg;

    struct raft raft;
    struct raft_io io;
    struct raft_uv_transport transport;
    struct raft_fsm fsm;
    bool transport_init, io_init, raft_init;
    uv_check_t watch;

    uint64_t incarnation;
    uint64_t proposed;  /* the last seq proposed */
    uint64_t committed; /* the last seq committed */
    uint64_t proof_ms;  /* loop time an entry committed since was
                         * proposed: a majority followed this leader
                         * after it */
    bool serving;
    bool promoting;      /* the barrier is in flight */
    uint64_t promote_ms; /* loop time it was appended */
    struct raft_barrier barrier;
    struct raft_transfer transfer; /* the lead handed over at a stop */
    bool broken;                   /* the state machine failed: re-execute */
    const char *broken_why;

    void *seed; /* the image to propose once elected; NULL: none (or done) */
    size_t seed_len;
    char *seed_path;
    bool seed_sent;   /* the seed entry is in flight */
    bool applied_any; /* an entry or a snapshot changed the database */
    struct raft_apply seed_req;
    struct raft_change widen; /* a standby made a voter (repl_promote_step) */
    uint64_t widen_id;
    bool widen_warned;
    unsigned long long elected_term; /* "elected" logged for it */

    void (*closed_cb)(void *);
    void *closed_arg;
};

#endif
