/*
 * supfile.h - the files lockstep-agent and lockstep-supervisor share
 *
 * One directory per job attempt on a node, <state_dir>/jobs/<job>.<attempt>/
 * (docs/fault-tolerance.md, "Supervisor files"):
 *
 *   spec.json       agent, before it spawns the supervisor: what to run
 *   lease           agent: CLOCK_MONOTONIC deadline in ms, as text
 *   stop            agent: present = tear the ranks down
 *   supervisor.pid  supervisor: its pid
 *   supervisor.log  the supervisor's stderr
 *   status.json     supervisor: per rank pid, state, exit status; fenced;
 *                   why a rank could not be started (launch_error); done
 *   sdk/            the ranks' SDK files (rank-<r>.progress, rank-<r>.ckpt),
 *                   owned by the user the ranks run as, and the agent's
 *                   control file (control, common/ctlfile.h), which the
 *                   ranks map read-only
 *   ckpt-base       agent (node rank 0): the checkpoint directory's
 *                   baseline, written and read by proc_ckpt.c alone
 *
 * Every file but `stop` and the SDK's is replaced atomically (a temporary
 * file, then rename), so a reader sees the old or the new content, never
 * half of one. This module holds their formats and how they are read and
 * written; what /proc says about the processes is procfs.h. It uses
 * neither libuv nor the loop: the supervisor links it. Nothing here logs.
 */
#ifndef AGENT_SUPFILE_H
#define AGENT_SUPFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/cred.h"
#include "common/err.h"
#include "common/proto.h"

#define SUPFILE_SPEC "spec.json"
#define SUPFILE_STATUS "status.json"
#define SUPFILE_LEASE "lease"
#define SUPFILE_STOP "stop"
#define SUPFILE_PID "supervisor.pid"
#define SUPFILE_LOG "supervisor.log"
#define SUPFILE_SDK_DIR "sdk"
/* In SUPFILE_SDK_DIR: the agent's directives to the ranks (ctlfile.h). */
#define SUPFILE_CONTROL "control"
/* The supervisor's executable name (also how a live one is recognised in
 * /proc/<pid>/exe). */
#define SUPFILE_EXE "lockstep-supervisor"

/*
 * In the jobs directory itself, beside the attempt directories
 * (docs/fault-tolerance.md "An agent that dies"):
 *
 *   agent.lock      held by the live agent (an open file description
 *                   lock, F_OFD_SETLK, which the kernel drops when the
 *                   agent ends, however it ends)
 *   agent.stopped   agent: present when it stopped on purpose (SIGTERM:
 *                   an upgrade, a restart); removed by the next agent
 *                   once it holds the lock
 *   scheduler.addr  agent: "<ip> <port>", where its last answer over TCP
 *                   came from: where a supervisor sends its fence notice
 *                   (common/fence.h)
 *
 * A supervisor told to watch (spec.json "orphan_ms") that finds nobody
 * holding agent.lock keeps its ranks at most orphan_ms longer, unless an
 * agent takes the lock again meanwhile; then it kills them and, once
 * every rank is reaped, sends the scheduler the fence notice. An agent
 * that stopped on purpose (agent.stopped) leaves them to the lease.
 */
#define SUPFILE_AGENT_LOCK "agent.lock"
#define SUPFILE_AGENT_STOPPED "agent.stopped"
#define SUPFILE_SCHED_ADDR "scheduler.addr"

/* Bounds the readers enforce (a spec holds a full environment per rank). */
#define SUPFILE_MAX_BYTES (64u << 20)
#define SUPFILE_ENV_MAX 65536
#define SUPFILE_ENV_LEN_MAX (256u << 10)
#define SUPFILE_GROUPS_MAX 65536

/* One rank of spec.json. uid/gid -1: keep the supervisor's. */
struct supfile_spec_rank {
    int rank;
    int local_rank;
    char **argv; /* argc entries, NULL-terminated */
    size_t argc;
    char **env; /* "K=V", nenv entries, NULL-terminated */
    size_t nenv;
    char *cwd;
    int64_t uid;
    int64_t gid;
    gid_t *groups; /* supplementary groups (when gid >= 0) */
    size_t ngroups;
    char *out_path; /* stdout, opened O_APPEND */
    char *err_path; /* stderr, opened O_APPEND */
};

struct supfile_spec {
    int64_t job;
    int attempt;
    int64_t kill_grace_ms; /* stop: SIGTERM, this long, SIGKILL */
    /* > 0: watch agent.lock, and keep the ranks at most this long after
     * nobody holds it; 0: do not (an agent without the lock) */
    int64_t orphan_ms;
    /* with orphan_ms: the node, and the attempt's fence key (hex,
     * common/fence.h) that signs the notice; "" none: no notice */
    char node[PROTO_NODE_NAME_MAX + 1];
    char fence_key[CRED_HEX_LEN + 1];
    struct supfile_spec_rank *ranks;
    size_t nranks;
};

/* Longest launch error kept (status.json "launch_error"). */
#define SUPFILE_LAUNCH_ERROR_MAX 512

/* One rank of status.json. */
struct supfile_rank_status {
    int rank;
    int pid;             /* also its process group id; 0 never ran */
    uint64_t proc_start; /* start time of pid (identity) */
    bool exited;         /* else running */
    int exit_code;       /* -1 when signalled */
    int signal;
    int64_t start_ms;
    int64_t end_ms;
    bool fenced; /* killed because the lease ran out */
    /* "" or, for a rank that could not be started, why: "cannot change
     * to working directory '/x': No such file or directory", "cannot
     * execute 'x': ...". */
    char launch_error[SUPFILE_LAUNCH_ERROR_MAX];
};

struct supfile_status {
    int64_t job;
    int attempt;
    int pid;       /* the supervisor */
    bool fenced;   /* the lease ran out */
    bool stopping; /* a stop was requested */
    bool done;     /* every rank ended and was reaped */
    struct supfile_rank_status *ranks;
    size_t nranks;
};

/* The identity of a file's current version (changes on each rename). */
struct supfile_stamp {
    uint64_t ino;
    int64_t size;
    int64_t mtime_ns;
};

/*
 * Load dir/spec.json into a zeroed spec. Errors: the errno of the read,
 * or -EINVAL with err naming the field. Nothing to free on failure.
 */
int supfile_spec_load(const char *dir, struct supfile_spec *spec,
    struct err *err);
/* Write dir/spec.json (mode 0600, atomic). Returns 0 or -errno. */
int supfile_spec_save(const char *dir, const struct supfile_spec *spec);
void supfile_spec_release(struct supfile_spec *spec);

/* Load dir/status.json into a zeroed status; like supfile_spec_load. */
int supfile_status_load(const char *dir, struct supfile_status *st,
    struct err *err);
int supfile_status_save(const char *dir, const struct supfile_status *st);
void supfile_status_release(struct supfile_status *st);

/* Write or read the lease deadline (CLOCK_MONOTONIC ms). Read errors:
 * the errno of the read, -EINVAL for a file that is not one integer. */
int supfile_lease_write(const char *dir, int64_t deadline_ms);
int supfile_lease_read(const char *dir, int64_t *deadline_ms);

/*
 * The agent's lock (jobs_dir/agent.lock). supfile_agent_lock: open it
 * (created, close-on-exec) and take the write lock; *fd keeps it for the
 * agent's life. -EAGAIN when another process holds it.
 * supfile_agent_lock_open: open it to watch (read only, close-on-exec).
 * supfile_agent_alive: 1 when some process holds the lock on fd's file,
 * 0 when none does, or -errno.
 */
int supfile_agent_lock(const char *jobs_dir, int *fd);
int supfile_agent_lock_open(const char *jobs_dir, int *fd);
int supfile_agent_alive(int fd);
/* agent.stopped: mark, clear (missing is fine): 0 or -errno; test. */
int supfile_agent_stopped_mark(const char *jobs_dir);
int supfile_agent_stopped_clear(const char *jobs_dir);
bool supfile_agent_stopped(const char *jobs_dir);

/* Write or read jobs_dir/scheduler.addr: a numeric address (IPv4, or IPv6
 * without brackets) and a port. Read: -EINVAL when damaged. */
int supfile_sched_addr_write(const char *jobs_dir, const char *ip, int port);
int supfile_sched_addr_read(const char *jobs_dir, char *ip, size_t iplen,
    int *port);

/*
 * Replace dir/name with len bytes of data: write dir/name.tmp (mode,
 * O_NOFOLLOW; EINTR and short writes handled), then rename. Returns 0 or
 * -errno; the temporary file is removed on failure.
 */
int supfile_write_atomic(const char *dir, const char *name, const void *data,
    size_t len, mode_t mode);

/*
 * Read a whole regular file of at most max bytes into a new NUL-terminated
 * buffer (caller frees). A symbolic link or anything but a regular file is
 * refused (-ELOOP, -EINVAL) without blocking. Errors: -errno, -EFBIG when
 * longer than max.
 */
int supfile_read(const char *path, size_t max, char **text, size_t *len);

/* Stamp of path; -errno when it cannot be stat'ed. */
int supfile_stamp_get(const char *path, struct supfile_stamp *stamp);
bool supfile_stamp_equal(const struct supfile_stamp *a,
    const struct supfile_stamp *b);

/* The exit code reported for a rank that could not be executed, by the
 * errno of the failure (negative): 127 for -ENOENT, 126 otherwise (the
 * shell's convention). The agent and the supervisor both report it. */
int supfile_exec_exit_code(int rc);

#endif
