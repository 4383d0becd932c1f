/*
 * evidence.h - the evidence of one failure, typed (pure)
 *
 * docs/fault-tolerance.md §Failure kinds: which rank failed, how it ended
 * (exit code and signal only when known: a lost or hung rank has
 * neither), its last step, where it ran, and what the failure did to its
 * node's record. The database keeps each field in a column of its own
 * (schema/0003), so what `lockstep show` prints is exactly what was seen;
 * the API's JSON shape comes from evidence_to_json.
 *
 * Pure: no I/O, no clock, no globals.
 */
#ifndef SCHEDULER_EVIDENCE_H
#define SCHEDULER_EVIDENCE_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "scheduler/policy.h"

/* What the failure did to its node's record. */
enum evidence_blame {
    EVIDENCE_BLAME_NONE,
    EVIDENCE_BLAME_BLAMED,    /* a blame row counts against the node */
    EVIDENCE_BLAME_WITHDRAWN, /* the job's own bug after all */
};

/* The evidence. Strings are owned (NULL: none). */
struct evidence {
    enum policy_kind kind;
    char *node;    /* where the evidence points */
    int rank;      /* -1: none */
    bool has_exit; /* exit_code and signal are known */
    int exit_code;
    int signal;
    bool fenced;               /* the rank's supervisor fenced it */
    int64_t last_step;         /* -1: none */
    int64_t last_heartbeat_ms; /* the node's last status; 0: none */
    int64_t idle_ms;           /* hang: no progress for this long */
    char *source;              /* hang: what progress was measured by */
    char *actor;               /* node_excluded: who excluded the node */
    char *stderr_tail;
    int64_t failed_ms; /* when, by the evidence; 0: unknown */
    enum evidence_blame blame;
};

/* Zeroed evidence of `kind`: no rank, no step. */
void evidence_init(struct evidence *e, enum policy_kind kind);
/* Free the strings; e is zeroed. Accepts a zeroed e. */
void evidence_release(struct evidence *e);
/* A deep copy into dst (which is overwritten, not released). */
void evidence_copy(struct evidence *dst, const struct evidence *src);

/* "blamed", "withdrawn" or "" (the database's words); _parse: 0 or
 * -EINVAL. */
const char *evidence_blame_str(enum evidence_blame b);
int evidence_blame_parse(const char *s, enum evidence_blame *out);

/* The evidence as the API shows it (docs/api.md: fields that do not apply
 * are left out; "blamed" or "blame_withdrawn" name the node). Caller
 * owns the object. */
cJSON *evidence_to_json(const struct evidence *e);

#endif
