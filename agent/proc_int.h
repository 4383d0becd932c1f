/*
 * proc_int.h - internal to proc*.c: the table, and the job functions
 *
 * Included by the proc*.c files only (libuv's internal.h habit); the rest
 * of the agent sees proc.h. The table's fields are here so that every
 * piece (proc_job.h lists them) reaches the agent (pt->ad), the jobs
 * directory and the change hook without calling up into proc.c. The
 * functions are those of proc_job.c, the bottom piece, that the others
 * use. This header includes no other header of agent/, so that every
 * piece, proc_job.c too, may include it.
 */
#ifndef AGENT_PROC_INT_H
#define AGENT_PROC_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "common/proto.h"

struct agentd;
struct proc_job;
struct proc_rank;

/* Released (job, attempt) pairs remembered so that a stale desired state
 * can never start one twice. */
#define PROC_TOMBSTONES 4096

struct proc_tombstone {
    int64_t job;
    int attempt;
};

struct proc_table {
    struct agentd *ad;
    struct proc_job *jobs; /* newest first */
    size_t njobs;
    uv_timer_t poll_timer;
    char *jobs_dir;               /* <state_dir>/jobs, absolute */
    void (*change_fn)(void *arg); /* proc_set_change_cb */
    void *change_arg;
    struct proc_tombstone *tomb;
    size_t ntomb;
    size_t tomb_next;
    int64_t lease_ms; /* last granted by the scheduler */
    uint64_t report_seq;
    /* monotonic: the first status accepted after the last failure (the
     * scheduler answers since); 0 while it does not, or not yet */
    int64_t reach_ms;
    /* agent.lock (ad->lock_fd, borrowed; supfile.h); -1: not held, so
     * our supervisors are not told to watch it */
    int agent_fd;
    /* what jobs_dir/scheduler.addr says; "" not written yet */
    char sched_ip[64];
    int sched_port;
};

/* ---- proc_job.c --------------------------------------------------------- */

/* A new job with nranks zeroed ranks (state pending, no paths yet), linked
 * at the head of pt's jobs, with its timers open. dir: taken over. */
struct proc_job *proc_job_new(struct proc_table *pt, int64_t job, int attempt,
    size_t nranks, char *dir);
/* Take job out of pt's jobs and its ranks' output out of the log shipper
 * (nothing of it may be in flight, unless the agent is stopping). */
void proc_job_unlink(struct proc_job *job);
/* Close job's handles (not its supervisor) and free it once every handle
 * and request is done. */
void proc_job_close(struct proc_job *job);
/* One fewer handle or request open on job (frees a closing job). */
void proc_job_handle_closed(struct proc_job *job);
/* Close the handle of the supervisor spawned for job (has_process). */
void proc_job_sv_close(struct proc_job *job);
/* Hand every rank's output to the log shipper, once its paths are set. */
void proc_job_ship(struct proc_job *job);

/* Whether job's supervisor is still to be heard from: started, not gone,
 * not done (it holds a lease). */
bool proc_job_supervised(const struct proc_job *job);
/* Whether no rank of job is pending or running. */
bool proc_job_all_ended(const struct proc_job *job);
/* After a rank ended: note when the whole job finished (and stop the
 * kill timer then). */
void proc_job_rank_ended(struct proc_job *job);

bool proc_rank_live(const struct proc_rank *r);
/* Set a rank's file paths (copies) and open its output files. */
void proc_rank_set_paths(struct proc_rank *r, const char *out_path,
    const char *err_path);
/* Mark rank r ended with the given status (records the end, reads the
 * stderr tail, logs). */
void proc_rank_ended(struct proc_rank *r, enum proto_rank_state state,
    int exit_code, int signal, int64_t end_ms);
/* Kill what is left of a rank's process group (checked against its
 * recorded identity); ESRCH is the normal case. */
void proc_rank_kill_group(const struct proc_rank *r, int sig);

/* Run the change hook (proc_set_change_cb), if any. */
void proc_notify(struct proc_table *pt);
/* Path of a rank's log file, <log_dir>/<job>/<attempt>/rank-<r>.<stream>
 * (caller frees). */
char *proc_log_path(const struct proc_table *pt, int64_t job, int attempt,
    int rank, const char *stream);

#endif
