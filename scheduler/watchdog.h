/*
 * watchdog.h - hangs: no progress for the job's hang_timeout_s
 *
 * docs/fault-tolerance.md §Hangs. Each agent report carries, for every
 * rank, how long it has made no progress (idle_ms, measured by the agent
 * from the SDK's step reports, or from output when the rank reports no
 * steps) and which of the two it measured. The tick adds the time since
 * that report and, once a rank of a RUNNING attempt passes the job's
 * timeout, picks the rank furthest behind (policy.c): its peers block in
 * the next collective waiting for it. An attempt in which some rank has
 * shown no progress at all yet is still starting (imports, rendezvous,
 * loading a checkpoint): every rank then gets at least
 * WATCHDOG_STARTUP_MS before it counts as hung.
 *
 * Before the teardown, the evidence: a stack-dump request goes to every
 * node of the attempt; each agent signals its ranks (SIGUSR1: Python
 * stacks into stderr), reports /proc state and kernel stacks as the ranks'
 * `dump`, and says the request was served. The attempt fails as a hang
 * (recovery.h) once every node served it, or after dump_timeout_ms.
 *
 * While it waits, the hang's evidence is in the attempt's row with
 * dump_deadline_ms set, so a scheduler restarted in the middle finishes
 * the same hang, with the same deadline.
 */
#ifndef SCHEDULER_WATCHDOG_H
#define SCHEDULER_WATCHDOG_H

#include "scheduler/schedd.h"

/* From the tick: detect hangs in running attempts (asking their agents
 * for stack dumps) and end hangs whose dump wait ran out. */
void watchdog_tick(struct schedd *sd);
/* After a report: end a's hang if every node has sent its dumps. */
int watchdog_dumps(struct schedd *sd, struct attempt *a);

#endif
