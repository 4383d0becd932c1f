/*
 * proc.h - the ranks this node runs, one `struct proc_job` per (job,
 * attempt)
 *
 * A job is started once from its launch (docs/api.md "Launch"): every rank
 * is spawned with UV_PROCESS_DETACHED, so it leads its own session and
 * process group (pgid == pid), with stdin on /dev/null and stdout/stderr
 * appended to files <log_dir>/<job>/<attempt>/rank-<r>.{out,err}. Files,
 * not pipes: a rank never gets SIGPIPE or blocks because the agent died or
 * restarted. When a rank exits, its status and the last lines of its
 * stderr file are recorded and its whole process group is SIGKILLed, so
 * background children (`sleep 1000 &`) do not outlive it.
 *
 * Teardown sends SIGTERM to every running rank's process group and SIGKILL
 * after kill_grace_ms. A job absent from the desired state is released
 * (freed, no longer reported) once all its ranks are gone and their output
 * is shipped.
 *
 * The agent may stop or crash while ranks run; they keep running. Each job
 * is recorded in <state_dir>/jobs/<job>.<attempt>.json (pids, process
 * start times, exit statuses), and proc_create re-adopts what a previous
 * agent left: ranks still alive are reported running and watched by
 * polling (they are not our children, so their exit status is unknown: they
 * end up "lost"), ranks that exited before are reported as they were.
 *
 * Everything runs on the loop thread. The structs are exposed read-only
 * for report.c and logship.c; only proc*.c change them.
 */
#ifndef AGENT_PROC_H
#define AGENT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "agent/logship.h"
#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct proc_table;

struct proc_rank {
    struct proc_job *job;
    uv_process_t process;       /* valid while has_process */
    bool has_process;           /* the handle is open (close pending) */
    bool adopted;               /* from an earlier agent: polled, no handle */
    int rank;
    int local_rank;
    enum proto_rank_state state;
    int pid;                    /* also the process group id */
    uint64_t proc_start;        /* /proc/<pid>/stat start time (identity) */
    int64_t start_ms;
    int64_t end_ms;
    int64_t end_mono_ms;        /* monotonic time it ended; 0: long ago */
    int exit_code;              /* -1 when signalled or unknown */
    int signal;
    char *stderr_tail;          /* set once exited */
    char *out_path;
    char *err_path;
    struct logship_file out;
    struct logship_file err;
};

struct proc_job {
    struct proc_table *pt;
    int64_t job;
    int attempt;
    struct proc_rank *ranks;
    size_t nranks;
    uv_timer_t kill_timer;
    bool desired;               /* listed in the latest desired state */
    bool stopping;              /* teardown began (SIGTERM sent) */
    bool killed;                /* SIGKILL sent */
    int64_t finished_ms;        /* monotonic time the last rank ended */
    int open_handles;
    bool closing;
    struct proc_job *prev, *next;
};

/* Called on the loop thread after a rank changed state or a job was
 * released, so a status report goes out at once. It may run inside
 * proc_apply: it should only schedule work (start a timer). */
typedef void (*proc_change_fn)(void *arg);

/*
 * Creates the table: makes <state_dir>/jobs and re-adopts the jobs a
 * previous agent recorded there (see above). Errors: the errno of a
 * directory that cannot be created, with err set.
 */
struct proc_table *proc_create(struct agentd *ad, struct err *err);

/*
 * Closes every handle WITHOUT signalling any rank: running ranks outlive
 * the agent (see above). Memory is freed once the close callbacks ran.
 * Accepts NULL.
 */
void proc_destroy(struct proc_table *pt);

void proc_set_change_cb(struct proc_table *pt, proc_change_fn fn, void *arg);

/*
 * Makes the held jobs follow the desired state: starts each (job,
 * attempt) of w not held and never held before (exactly once), tears down
 * held jobs absent from w, and releases those that are absent and done.
 * A launch that cannot start reports its ranks exited (code 127 or 126)
 * with the reason as stderr_tail. Returns how many jobs were started.
 */
int proc_apply(struct proc_table *pt, const struct proto_work *w);

/* Begins the teardown of one job (idempotent). */
void proc_job_teardown(struct proc_job *job);

/* Adds every held job to rep->jobs (allocated; released with
 * proto_node_report_release). */
void proc_fill_report(const struct proc_table *pt,
    struct proto_node_report *rep);

/* Held jobs, in start order reversed; iterate with job->next. */
struct proc_job *proc_jobs(const struct proc_table *pt);
size_t proc_njobs(const struct proc_table *pt);

/* ---- pure helpers (proc_env.c), exposed for the unit tests -------------- */

/*
 * The environment of one rank: `base` (NULL-terminated "K=V" strings:
 * the agent's own environment), minus the variables that describe the
 * agent's systemd service (NOTIFY_SOCKET, LISTEN_*, WATCHDOG_*,
 * JOURNAL_STREAM, INVOCATION_ID), then the job's env, then the rank
 * variables of docs/api.md, which the job's env cannot override. Returns
 * a NULL-terminated array; caller frees with proc_env_free.
 */
char **proc_build_env(const struct proto_launch *l,
    const struct proto_launch_rank *r, const char *node,
    char *const *base);
void proc_env_free(char **env);
/* Value of key in a NULL-terminated env, or NULL (borrowed). */
const char *proc_env_get(char *const *env, const char *key);
/* Set key=value in a heap env from proc_build_env (replacing). */
void proc_env_set(char ***env, const char *key, const char *value);

/*
 * The last lines of a file, at most max bytes: starts after the first
 * newline of the last max bytes when the file is longer. Bytes that are
 * not valid UTF-8, and NULs, become '?'. Returns "" for a missing or empty
 * file; caller frees.
 */
char *proc_read_tail(const char *path, size_t max);

/* Exit code reported for a launch that could not execute, by errno
 * (negative): 127 for -ENOENT, 126 otherwise (the shell's convention). */
int proc_spawn_exit_code(int rc);

/* ---- persisted state (proc_state.c) ------------------------------------- */

/* Record job in <state_dir>/jobs (atomic replace); logs a failure. */
void proc_state_save(const struct proc_job *job);
/* Forget job's record. */
void proc_state_remove(const struct proc_job *job);
/* Re-adopt the records a previous agent left (called by proc_create). */
void proc_state_adopt(struct proc_table *pt);

/* /proc/<pid>/stat start time of pid, or 0 when it is gone or a zombie. */
uint64_t proc_pid_start_time(int pid);

/* Internal to proc*.c: a new held job with nranks zeroed ranks, linked
 * into pt and with its kill timer open. */
struct proc_job *proc_job_new(struct proc_table *pt, int64_t job,
    int attempt, size_t nranks);
/* Internal to proc*.c: the state directory holding job records. */
const char *proc_state_dir(const struct proc_table *pt);
/* Internal to proc*.c: path of a rank's log file. */
char *proc_log_path(const struct proc_table *pt, int64_t job, int attempt,
    int rank, const char *stream);

#endif
