/*
 * witness.h - the agent's witness service: answering and asking
 *
 * Every agent answers witness queries on a UDP port (witness_port): how
 * long ago it last completed a status exchange with the scheduler. An
 * agent whose own exchanges have failed for over two status intervals
 * asks its witness set W(N) (sent by the scheduler in every status reply,
 * kept in <state_dir>/witnesses for a restarted agent) once per interval,
 * and extends its supervisors' leases to the round's start plus lease_ms
 * only when a majority of W(N) answered that they lost the scheduler no
 * later than we did (plus one interval and WITNESS_SLACK_MS) and none
 * answered that it reached it since (common/witness.h,
 * docs/fault-tolerance.md "Scheduler outages"). Queries and answers
 * carry an HMAC under a key derived from the cluster secret; a bad one
 * is dropped and logged once per peer.
 */
#ifndef AGENT_WITNESS_H
#define AGENT_WITNESS_H

#include <stdint.h>

#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct witness;

/* Bind the UDP port (ad->witness_port; 0: any free one) and load the set
 * kept in the state directory. NULL with err set when the port cannot be
 * bound. */
struct witness *witness_create(struct agentd *ad, struct err *err);
/* The bound port. */
int witness_port(const struct witness *w);
/* A status exchange sent at sent_mono_ms succeeded; interval_ms is the
 * status interval (the reply's lease_interval_ms when it has one);
 * reply's witnesses (when it has some) become W(N). */
void witness_status_ok(struct witness *w, int64_t sent_mono_ms,
    int64_t interval_ms, const struct proto_status_reply *reply);
/* A lease ping sent at sent_mono_ms was answered with lease_ms, its status
 * interval interval_ms: a success like a status exchange's. */
void witness_renewed(struct witness *w, int64_t sent_mono_ms,
    int64_t interval_ms, int64_t lease_ms);
/* Accepts NULL. */
void witness_destroy(struct witness *w);

#endif
