/*
 * launch.h - placing an attempt, and what each node is to run
 *
 * Placing writes the attempt (its placements with the resources they
 * hold, its ranks, the checkpoint it resumes from) and moves the job to
 * PLACED through the event path, then links it into the model and wakes
 * the agents of its nodes. The desired state of a node is every active
 * attempt placed on it: the launches its agent applies idempotently per
 * (job, attempt) (docs/api.md "Launch").
 */
#ifndef SCHEDULER_LAUNCH_H
#define SCHEDULER_LAUNCH_H

#include "common/proto.h"
#include "scheduler/schedd.h"

/*
 * Place job's next attempt on nodes[0..nnodes) (node rank order) with the
 * given GPU ids (nnodes × gpus_per_node, node-rank major; may be NULL
 * when none) on master port `port` (taken from sd->ports by the caller).
 * The attempt resumes from the job's highest complete checkpoint.
 */
int launch_place(struct schedd *sd, struct job *job, struct node **nodes,
    const int *gpus, int port);

/* The desired state of node. The launches borrow the model's strings
 * (valid until the model changes); free with launch_work_release, not
 * proto_work_release. */
void launch_work(const struct node *node, struct proto_work *w);
void launch_work_release(struct proto_work *w);

#endif
