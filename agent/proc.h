/*
 * proc.h - the jobs this node runs, one `struct proc_job` per (job, attempt)
 *
 * A job is started once from its launch (docs/api.md "Launch"). The agent
 * does not spawn ranks itself: it writes the attempt's directory
 * <state_dir>/jobs/<job>.<attempt>/ (spec.json with every rank's argv,
 * environment, working directory, user and output files; an initial lease)
 * and spawns one lockstep-supervisor for it (supervisor.h), detached in its
 * own session. The supervisor starts the ranks, each in its own process
 * group with stdout/stderr appended to <log_dir>/<job>/<attempt>/
 * rank-<r>.{out,err}, and records their starts and exits in status.json,
 * which the agent reads whenever it changes (a 100 ms poll compares the
 * file's inode, size and mtime). Files, not pipes, everywhere: nothing
 * blocks or gets SIGPIPE because the agent died or restarted.
 *
 * Leases: after every successful status exchange with the scheduler the
 * agent moves every live supervisor's lease to the time the status was
 * sent plus the lease the scheduler granted (proc_status_ok). A supervisor
 * whose lease passes kills its ranks by itself and reports them fenced.
 *
 * Teardown creates the attempt's `stop` file: the supervisor sends
 * SIGTERM to every rank's process group and SIGKILL after kill_grace_ms
 * (the agent SIGKILLs the groups itself should the supervisor not have
 * done it 5 s later). A job absent from the desired state is released
 * (freed, no longer reported, its directory removed) once its supervisor
 * is done and its output is shipped.
 *
 * The agent may stop or crash while ranks run; supervisors and ranks keep
 * running. proc_create re-adopts every attempt directory it finds: a live
 * supervisor is watched again (exit codes intact), the final statuses of a
 * supervisor that finished are reported, and the ranks of a supervisor
 * that died before it finished are killed by process group and reported
 * lost. The same happens when a supervisor dies under a running agent.
 *
 * Progress (proc_progress.c), convention checkpoints (proc_ckpt.c) and
 * stack dumps (proc_dump.c) are sampled for the status report.
 *
 * Everything runs on the loop thread, except the scan of checkpoint
 * directories and the deletion of old checkpoints, which run on libuv's
 * thread pool: they touch the user's (often network) file system, which
 * may hang, and a hung loop would stop the lease renewals of every job on
 * the node (proc_ckpt.c). The structs
 * are exposed read-only for report.c, logship.c and the tests; only
 * proc*.c change them.
 */
#ifndef AGENT_PROC_H
#define AGENT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include "agent/logship.h"
#include "agent/supfile.h"
#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct proc_table;
struct proc_ckpt_op;

/* The lease a supervisor gets until the scheduler granted one. */
#define PROC_LEASE_DEFAULT_MS 5000

struct proc_rank {
    struct proc_job *job;
    int rank;
    int local_rank;
    enum proto_rank_state state;
    int pid;                    /* also the process group id; 0 unknown */
    uint64_t proc_start;        /* /proc/<pid>/stat start time (identity) */
    int64_t start_ms;
    int64_t end_ms;
    int64_t end_mono_ms;        /* monotonic time we learnt it ended */
    int exit_code;              /* -1 when signalled or unknown */
    int signal;
    bool fenced;                /* killed by its supervisor's lease */
    char *stderr_tail;          /* set once ended */
    char *out_path;
    char *err_path;
    char *progress_path;        /* LOCKSTEP_PROGRESS_FILE */
    char *commit_path;          /* LOCKSTEP_COMMIT_FILE */
    struct logship_file out;
    struct logship_file err;

    /* progress (proc_progress.c); times are agent monotonic ms */
    int64_t start_mono_ms;      /* 0 until known running */
    int64_t step;               /* last step of this attempt; -1 none */
    int64_t step_mono_ms;       /* when the step last changed */
    int sdk_pid;                /* process that wrote the progress file */
    bool have_progress;         /* the progress file exists (SDK in use) */
    struct supfile_stamp progress_stamp;
    uint64_t output_bytes;      /* stdout + stderr size last seen */
    int64_t output_mono_ms;     /* when they last grew; 0 never */
    struct supfile_stamp commit_stamp;
    int64_t *ckpt_steps;        /* committed steps, ascending, newest */
    size_t nckpt_steps;

    /* stack dump (proc_dump.c) */
    char *dump;
    uint64_t dump_report;       /* report seq that first carried it; 0 */
};

struct proc_job {
    struct proc_table *pt;
    int64_t job;
    int attempt;
    struct proc_rank *ranks;
    size_t nranks;
    char *dir;                  /* <state_dir>/jobs/<job>.<attempt> */
    int64_t uid, gid;           /* the ranks' user; -1 the agent's */

    /* the supervisor */
    uv_process_t sv_process;    /* valid while has_process */
    bool has_process;           /* our child: the handle is open */
    int sv_pid;                 /* 0: none was started */
    bool sv_adopted;            /* from an earlier agent: polled */
    bool sv_gone;               /* it exited (or was found dead) */
    bool done;                  /* every rank's end is final */
    struct supfile_stamp status_stamp;

    uv_timer_t kill_timer;      /* backstop after the stop file */
    bool desired;               /* listed in the latest desired state */
    bool stopping;              /* the stop file was created */
    int64_t finished_ms;        /* monotonic time the last rank ended */
    uint64_t final_report;      /* first status report carrying the final
                                 * rank states; 0 before */
    bool final_acked;           /* the scheduler accepted that report */

    /* checkpoints by convention (proc_ckpt.c), from the launch */
    char *checkpoint_dir;       /* "" none */
    char *resume_from;
    int64_t resume_step;
    int keep_checkpoints;
    bool scan_checkpoints;
    int64_t *ckpt_complete;     /* complete steps seen, ascending */
    size_t nckpt_complete;
    int64_t *ckpt_deleting;     /* steps being deleted, ascending */
    size_t nckpt_deleting;
    struct proc_ckpt_op *ckpt_op;   /* a scan or deletion in flight */
    int64_t ckpt_prune_after;   /* monotonic; no deletion before */
    char ckpt_err[160];         /* last scan error logged; "" none */

    /* stack dumps (proc_dump.c) */
    uv_timer_t dump_timer;
    uint64_t dump_seq_want;     /* the launch's dump_seq */
    uint64_t dump_seq_served;
    uint64_t dump_seq_running;  /* the one being served */
    bool dump_running;          /* signals sent, timer pending */

    int open_handles;           /* handles and requests to wait for */
    bool closing;
    struct proc_job *prev, *next;
};

/* Called on the loop thread after a rank changed state or a job was
 * released, so a status report goes out at once. It may run inside
 * proc_apply: it should only schedule work (start a timer). */
typedef void (*proc_change_fn)(void *arg);

/*
 * Creates the table: makes <state_dir>/jobs and re-adopts the attempts a
 * previous agent left there (see above). Errors: the errno of a directory
 * that cannot be created, with err set.
 */
struct proc_table *proc_create(struct agentd *ad, struct err *err);

/*
 * Closes every handle WITHOUT signalling any supervisor or rank: they
 * outlive the agent (see above). Deletions in flight are asked to stop.
 * Memory is freed once the close callbacks ran. Accepts NULL.
 */
void proc_destroy(struct proc_table *pt);

void proc_set_change_cb(struct proc_table *pt, proc_change_fn fn, void *arg);

/*
 * Makes the held jobs follow the desired state: starts each (job,
 * attempt) of w not held and never held before (exactly once), tears down
 * held jobs absent from w, releases those that are absent and done, and
 * starts the stack dumps a launch's dump_seq asks for. A launch that cannot
 * start reports its ranks exited (code 127 or 126) with the reason as
 * stderr_tail. Returns how many jobs were started.
 */
int proc_apply(struct proc_table *pt, const struct proto_work *w);

/* Begins the teardown of one job (idempotent). */
void proc_job_teardown(struct proc_job *job);

/*
 * Adds every held job to rep->jobs (allocated; released with
 * proto_node_report_release), sampling progress, commits and convention
 * checkpoints first (cheap: small files, stat before read). Returns the
 * sequence number of this report, for proc_status_ok.
 */
uint64_t proc_fill_report(struct proc_table *pt,
    struct proto_node_report *rep);

/*
 * The scheduler accepted the status report `seq`, sent at sent_mono_ms
 * (monotonic), granting lease_ms: every live supervisor's lease becomes
 * sent_mono_ms + lease_ms (counted from the send, not the reply: the
 * scheduler's node timeout started no earlier), and stack dumps that
 * report carried are dropped.
 */
void proc_status_ok(struct proc_table *pt, uint64_t seq,
    int64_t sent_mono_ms, int64_t lease_ms);

/* The last lease the scheduler granted (PROC_LEASE_DEFAULT_MS before). */
int64_t proc_lease_ms(const struct proc_table *pt);
/* Whether any held job still has a supervisor that holds a lease. */
bool proc_has_live_supervisors(const struct proc_table *pt);

/* Held jobs, in start order reversed; iterate with job->next. */
struct proc_job *proc_jobs(const struct proc_table *pt);
size_t proc_njobs(const struct proc_table *pt);

/* ---- the rank environment (proc_env.c), exposed for the unit tests ------- */

/*
 * The environment of one rank: `base` (NULL-terminated "K=V" strings:
 * the agent's own environment), minus the variables that describe the
 * agent's systemd service (NOTIFY_SOCKET, LISTEN_*, WATCHDOG_*,
 * JOURNAL_STREAM, INVOCATION_ID), then the job's env, then the rank
 * variables of docs/api.md, which the job's env cannot override
 * (LOCKSTEP_PROGRESS_FILE and LOCKSTEP_COMMIT_FILE are among them: the
 * caller sets those). Returns a NULL-terminated array; caller frees with
 * proc_env_free.
 */
char **proc_build_env(const struct proto_launch *l,
    const struct proto_launch_rank *r, const char *node,
    char *const *base);
void proc_env_free(char **env);
/* Value of key in a NULL-terminated env, or NULL (borrowed). */
const char *proc_env_get(char *const *env, const char *key);
/* Set key=value in a heap env from proc_build_env (replacing). */
void proc_env_set(char ***env, const char *key, const char *value);

/* ---- progress, commits (proc_progress.c) -------------------------------- */

/*
 * Sample a rank's progress file, output sizes and commit file (each only
 * when it changed) at now_mono (monotonic ms) / now_ms (wall clock).
 * A progress record of another attempt is ignored.
 */
void proc_progress_sample(struct proc_rank *r, int64_t now_mono,
    int64_t now_ms);
/* Fill rs->step, progress, idle_ms and ckpt_steps (copied) from r. */
void proc_progress_fill(const struct proc_rank *r, int64_t now_mono,
    struct proto_rank_status *rs);

/*
 * Parse a commit file's text: lines "<step> <attempt>"; lines of another
 * attempt and malformed lines are ignored. Returns the distinct steps,
 * ascending, at most the newest `max` (caller frees; NULL when none).
 */
int64_t *proc_commit_parse(const char *text, int attempt, size_t max,
    size_t *n);

/* ---- convention checkpoints (proc_ckpt.c) ------------------------------- */

/*
 * Start a scan of job->checkpoint_dir for complete checkpoints
 * (directories step-<N> holding a regular file COMPLETE; nothing else
 * counts) on the thread pool, unless a scan or deletion is in flight. When
 * it ends, job->ckpt_complete is updated and, with keep_checkpoints K > 0,
 * the deletion of the complete ones older than the K newest starts (never
 * the one resumed from, never an incomplete one). So a report carries the
 * result of the scan the previous report started.
 */
void proc_ckpt_scan(struct proc_job *job);
/* The steps to report: the complete ones not being deleted, ascending,
 * the newest PROTO_STEPS_MAX at most (allocated; caller frees). */
int64_t *proc_ckpt_report(const struct proc_job *job, size_t *n);
/* Ask a deletion in flight to stop early (agent shutdown). */
void proc_ckpt_cancel(struct proc_job *job);

/* ---- stack dumps (proc_dump.c) ------------------------------------------ */

/* Begin serving dump request seq for job (no-op if served or running). */
void proc_dump_start(struct proc_job *job, uint64_t seq);
/* The dump text of one rank (pid), from /proc and its stderr file;
 * at most PROTO_DUMP_MAX bytes, valid UTF-8. Caller frees. */
char *proc_dump_collect(const struct proc_rank *r);

/* ---- persisted state (proc_state.c) ------------------------------------- */

/* Re-adopt the attempt directories a previous agent left (proc_create). */
void proc_state_adopt(struct proc_table *pt);

/*
 * Apply dir/status.json if it changed since job->status_stamp: ranks
 * start, end (exit status, fenced, stderr tail), and job->done. Returns
 * whether anything changed.
 */
bool proc_state_refresh(struct proc_job *job);

/* The supervisor of job is gone: read its last status and, unless it was
 * done, kill its live ranks' process groups and mark them lost. */
void proc_state_supervisor_gone(struct proc_job *job, const char *why);

/* Mark rank r ended with the given status (records the end, reads the
 * stderr tail, logs). */
void proc_rank_ended(struct proc_rank *r, enum proto_rank_state state,
    int exit_code, int signal, int64_t end_ms);

/* Kill what is left of a rank's process group (checked against its
 * recorded identity); ESRCH is the normal case. */
void proc_rank_kill_group(const struct proc_rank *r, int sig);

/* Internal to proc*.c: a new held job with nranks zeroed ranks, linked
 * into pt, with its timers open. dir: taken over. */
struct proc_job *proc_job_new(struct proc_table *pt, int64_t job,
    int attempt, size_t nranks, char *dir);
/* Internal to proc*.c: set a rank's file paths (copies) and open its
 * output files for shipping. */
void proc_rank_set_paths(struct proc_rank *r, const char *out_path,
    const char *err_path);
/* Internal to proc*.c: after a rank ended, note when the whole job
 * finished. */
void proc_job_rank_ended(struct proc_job *job);
/* Internal to proc*.c: the directory holding attempt directories. */
const char *proc_state_dir(const struct proc_table *pt);
/* Internal to proc*.c: the agent's loop, and the agent. */
uv_loop_t *proc_loop(const struct proc_table *pt);
struct agentd *proc_agentd(const struct proc_table *pt);

/* ---- the attempt directory (proc_start.c) ------------------------------- */

/*
 * Write job's attempt directory for launch l (see proc_start.c) and its
 * first lease, now + lease_ms. Returns 0, or -errno with the reason for a
 * person in why (then proc_job_fail).
 */
int proc_job_prepare(struct proc_job *job, const struct proto_launch *l,
    int64_t lease_ms, char *why, size_t len);
/* Every rank of job exited with the code of rc (127 for -ENOENT, else
 * 126) and why as its stderr; the final status.json is written. */
void proc_job_fail(struct proc_job *job, int rc, const char *why);
/* Take the checkpoint settings of launch l (also for adopted jobs). */
void proc_job_set_launch(struct proc_job *job, const struct proto_launch *l);
/* Internal to proc*.c: run the change callback. */
void proc_notify(struct proc_table *pt);
/* Internal to proc*.c: one fewer handle or request open on job. */
void proc_job_handle_closed(struct proc_job *job);
/* Internal to proc*.c: path of a rank's log file. */
char *proc_log_path(const struct proc_table *pt, int64_t job, int attempt,
    int rank, const char *stream);

#endif
