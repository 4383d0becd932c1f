/*
 * pmixsrv.h - the agent's PMIx server: MPI programs start without mpirun
 *
 * One PMIx server per agent process (libpmix's, built when meson finds
 * pkg-config 'pmix'; docs/architecture.md). Each attempt that starts here
 * gets the PMIx namespace "<job>.<attempt>", registered with the job, node
 * and process information Open MPI needs (world size, node rank, local
 * ranks, every node's name: the launch's `nodes`, placeholders
 * "lockstep-node-K" from a scheduler that sends none), and each
 * of its local ranks is registered as a client. A rank's environment gets
 * what PMIx_server_setup_fork gives it (the server's address, the
 * namespace, the rank) and the settings that make Open MPI 4.1 take the
 * direct-launch path instead of running every rank as a singleton
 * (OMPI_MCA_schizo only: OMPI_MCA_ess and the binding settings would break
 * an mpirun a rank starts itself); programs that do not use MPI or PMIx
 * ignore them.
 *
 * What this server can do: every collective whose participants are all
 * on this node (libpmix completes those itself); a fence that spans
 * nodes, relayed through the scheduler (pmixsrv_net.h): libpmix's
 * callback gets the concatenation of every participating node's blob, or
 * an error status when the fence fails (a participant's agent died, the
 * attempt ended, PMIX_TIMEOUT or 300 s passed, the scheduler is
 * unreachable), so ranks never wait forever; a rank's abort (PMIx_Abort,
 * behind MPI_Abort) is recorded as that rank's evidence and stops the
 * attempt's ranks on this node; the gc and checkpoint directives of the
 * attempt reach its ranks as PMIx events (pmixsrv_directives); a direct
 * modex of a rank on another node (Open MPI's pmix_base_async_modex),
 * relayed through the scheduler to that node's agent, which answers once
 * the rank committed its data (pmixsrv_net.h), or an error status when
 * the owner's agent died, the attempt ended, PMIX_TIMEOUT or 300 s passed
 * or the scheduler is unreachable. What it cannot: a fence naming several
 * namespaces completes at once with PMIX_ERR_NOT_SUPPORTED and a log line.
 * MPI_Comm_spawn, ports and publish/lookup are not supported. A
 * restarted agent does not serve the namespaces of the attempts it
 * adopts: their MPI ranks lose their server.
 *
 * Threading: libpmix calls us on its own progress thread. Each upcall
 * copies its arguments into a work item, appends it to a queue under a
 * mutex (the agent's only lock) and wakes the loop with uv_async_send;
 * the loop thread does the work and makes every reply. Every function
 * below is for the loop thread.
 */
#ifndef AGENT_PMIXSRV_H
#define AGENT_PMIXSRV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct pmixsrv;

/* A rank of (job, attempt) called PMIx_Abort with status and msg (never
 * NULL; may be ""). Called before the rank is released from the call, so
 * that what the hook writes to the rank's stderr lands before its exit. */
typedef void (*pmixsrv_abort_fn)(void *arg, int64_t job, int attempt, int rank,
    int status, const char *msg);
/* The grace after an abort has passed: stop every rank of (job, attempt)
 * on this node (those that have not exited by themselves). */
typedef void (*pmixsrv_stop_fn)(void *arg, int64_t job, int attempt);

/*
 * Starts the server: its own directory <state_dir>/pmix (a stale one left
 * by a killed agent is removed first), server namespace
 * "lockstep.agent.<node>", tool and system support off. When the ranks
 * may run as another user (a root agent with run_as_submitter), sets
 * PMIX_MCA_gds=hash in the agent's environment first, so those ranks do
 * not trip over the root-owned shared-memory store. Call before any
 * other thread exists. Returns NULL with err set when the server cannot
 * start (the agent runs on without it), and NULL with err->code 0 in a
 * build without PMIx or when the agent's `pmix` key is off.
 */
struct pmixsrv *pmixsrv_create(struct agentd *ad, struct err *err);

/* Deregisters every namespace, finalizes libpmix (its thread is gone
 * when this returns), removes the directory and closes the handles
 * (the memory goes once they are closed). Accepts NULL. */
void pmixsrv_destroy(struct pmixsrv *px);

/* Who hears of aborts (proc.c). arg is borrowed. */
void pmixsrv_set_hooks(struct pmixsrv *px, pmixsrv_abort_fn abort_fn,
    pmixsrv_stop_fn stop_fn, void *arg);

/*
 * Local rank l->ranks[i] of launch l is about to be started as uid/gid:
 * registers the attempt's namespace (on the first rank of it), registers
 * the rank as a client and adds its PMIx variables to *env (a heap array
 * of proc_build_env; replaced keys freed). The Open MPI settings are
 * added only where *env does not have them, so a job's --env wins.
 * Nothing is added when px is NULL or the job's env sets LOCKSTEP_PMIX=0.
 * With PMIX_MCA_gds in the agent's own environment (set by pmixsrv_create
 * for a root agent running ranks as their users) the rank gets it too.
 * Returns 0, or a negative errno when libpmix refused (logged; *env is
 * left without PMIx variables: the caller does not start the rank).
 */
int pmixsrv_rank_env(struct pmixsrv *px, const struct proto_launch *l, size_t i,
    uid_t uid, gid_t gid, char ***env);

/*
 * The directives launch (job, attempt) lists, ds[0..n) (all of them, as
 * proc_directive_set got them): each gc or checkpoint directive not
 * notified before is pushed to the attempt's ranks as a PMIx event
 * (sdk/c/lockstep.h's LOCKSTEP_PMIX_EVENT_* and payload keys;
 * docs/cadence.md), once per seq however often the launch repeats it; a
 * directive no longer listed is forgotten (the list given is the whole
 * listing). The event is cached by libpmix, so a rank that registers its
 * handler later (within pmix_event_eviction_time, 120 s) still gets it.
 * Nothing is done when px is NULL or the namespace is not registered here
 * (LOCKSTEP_PMIX=0, an adopted attempt, before its first rank's
 * pmixsrv_rank_env): call again once it is. A failure is logged; the
 * control file still carries the directive.
 */
void pmixsrv_directives(struct pmixsrv *px, int64_t job, int attempt,
    const struct proto_directive *ds, size_t n);

/* The attempt (job, attempt) is gone from this node: deregister its
 * namespace (no-op for one never registered here). Accepts NULL px. */
void pmixsrv_job_end(struct pmixsrv *px, int64_t job, int attempt);

#endif
