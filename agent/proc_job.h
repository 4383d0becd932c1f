/*
 * proc_job.h - the objects of the proc table: one job attempt, its ranks
 *
 * One `struct proc_job` per (job, attempt) this node runs, with one
 * `struct proc_rank` per rank of it here (proc.h says how they are run).
 * The structs are read by report.c and the tests; only proc*.c change
 * them, through the functions of proc_int.h and of each piece:
 *
 *   proc_job.c       lifetime, handles, rank ends, the output shipped
 *   proc_progress.c  steps, output growth and committed steps of a rank
 *   proc_ckpt.c      checkpoints by directory convention
 *   proc_dump.c      stack dumps
 *   proc_directive.c directives: the control file, the acks
 *   proc_state.c     status.json, re-adoption
 *   proc_start.c     the attempt directory of a new job
 *   proc.c           the table: apply, poll, teardown, release, report
 *
 * Everything runs on the loop thread, except the checkpoint work that
 * proc_ckpt.c hands to libuv's thread pool.
 */
#ifndef AGENT_PROC_JOB_H
#define AGENT_PROC_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "agent/logship.h"
#include "agent/supfile.h"
#include "common/proto.h"

struct proc_table;
struct proc_ckpt_op;
struct proc_ckpt_mark;
struct ctlfile;

/* The acks of a rank's progress file that are kept (the SDK writes its
 * newest 32). */
#define PROC_ACKS_MAX 32

struct proc_rank {
    struct proc_job *job;
    int rank;
    int local_rank;
    enum proto_rank_state state;
    int pid;             /* also the process group id; 0 unknown */
    uint64_t proc_start; /* /proc/<pid>/stat start time (identity) */
    int64_t start_ms;
    int64_t end_ms;
    int64_t end_mono_ms; /* monotonic time we learnt it ended */
    uint64_t end_report; /* first status report carrying the end; 0 */
    bool end_acked;      /* the scheduler accepted that report */
    int exit_code;       /* -1 when signalled or unknown */
    int signal;
    bool fenced;       /* killed by its supervisor's lease */
    char *stderr_tail; /* set once ended */
    /* NULL, or why it could not be started (a launch failure). */
    char *launch_error;
    char *out_path;
    char *err_path;
    char *progress_path;          /* LOCKSTEP_PROGRESS_FILE */
    char *commit_path;            /* LOCKSTEP_COMMIT_FILE */
    struct logship_output output; /* stdout, stderr (shipped) */

    /* progress (proc_progress.c); times are agent monotonic ms */
    int64_t start_mono_ms; /* 0 until known running */
    int64_t step;          /* last step of this attempt; -1 none */
    int64_t step_mono_ms;  /* when the step last changed */
    int sdk_pid;           /* process that wrote the progress file */
    bool have_progress;    /* the progress file exists (SDK in use) */
    struct supfile_stamp progress_stamp;
    uint64_t output_bytes;  /* stdout + stderr size last seen */
    int64_t output_mono_ms; /* when they last grew; 0 never */
    struct supfile_stamp commit_stamp;
    int64_t *ckpt_steps; /* committed steps, ascending, newest */
    size_t nckpt_steps;
    /* from the progress file too (docs/cadence.md): the directives the
     * SDK carried out, newest last, and its step time; 0 unknown */
    struct proto_ack acks[PROC_ACKS_MAX];
    size_t nacks;
    int64_t step_p50_us;
    int64_t step_p99_us;
    struct proto_section sections[PROTO_SECTIONS_MAX]; /* timed sections */
    size_t nsections;

    /* stack dump (proc_dump.c) */
    char *dump;
    uint64_t dump_report; /* report seq that first carried it; 0 */
};

/*
 * The stack dumps of a job (proc_dump.c). A request is the sequence
 * number of a dump directive; the dump that serves it is one action over
 * every running rank: signal, wait on the timer, collect. Requests that
 * arrive while one runs are served by the next run.
 */
struct proc_dump {
    uv_timer_t timer;     /* the wait for the stacks to land */
    uint64_t seq_want;    /* the newest request */
    uint64_t seq_served;  /* every request up to this one is */
    uint64_t seq_running; /* the request being served */
    bool running;         /* signals sent, timer pending */
    int64_t started_mono; /* when the running dump started */
    int64_t duration_ms;  /* how long the last one took */
};

struct proc_job {
    struct proc_table *pt;
    int64_t job;
    int attempt;
    struct proc_rank *ranks;
    size_t nranks;
    char *dir;        /* <state_dir>/jobs/<job>.<attempt> */
    int64_t uid, gid; /* the ranks' user; -1 the agent's */
    /* The latest lease deadline this agent wrote (CLOCK_MONOTONIC ms; 0:
     * none yet), and when the grant behind it was made (a status's send
     * time, or a witnesses' extension's): only a newer grant may move
     * it back (proc_lease_renew). */
    int64_t lease_until;
    int64_t lease_granted;

    /* the supervisor */
    uv_process_t sv_process; /* valid while has_process */
    bool has_process;        /* our child: the handle is open */
    int sv_pid;              /* 0: none was started */
    bool sv_adopted;         /* from an earlier agent: polled */
    bool sv_gone;            /* it exited (or was found dead) */
    bool done;               /* every rank's end is final */
    struct supfile_stamp status_stamp;

    uv_timer_t kill_timer; /* backstop after the stop file */
    bool desired;          /* listed in the latest desired state */
    bool stopping;         /* the stop file was created */
    int64_t finished_ms;   /* monotonic time the last rank ended */
    uint64_t final_report; /* first status report carrying the final
                            * rank states; 0 before */
    bool final_acked;      /* the scheduler accepted that report */

    /* checkpoints by convention (proc_ckpt.c), from the launch */
    char *checkpoint_dir; /* "" none */
    char *resume_from;
    int64_t resume_step;
    int keep_checkpoints;
    bool scan_checkpoints;
    /* the baseline: the complete steps already in the directory when the
     * attempt started (with their markers' identity), never this
     * attempt's unless their marker changes; ascending by step */
    struct proc_ckpt_mark *ckpt_base;
    size_t nckpt_base;
    bool ckpt_base_taken;   /* else the next scan takes it */
    int64_t *ckpt_complete; /* complete steps seen, ascending */
    size_t nckpt_complete;
    int64_t *ckpt_deleting; /* steps being deleted, ascending */
    size_t nckpt_deleting;
    struct proc_ckpt_op *ckpt_op; /* a scan or deletion in flight */
    int64_t ckpt_prune_after;     /* monotonic; no deletion before */
    char ckpt_err[160];           /* last scan error logged; "" none */
    bool ckpt_final; /* a scan started after every rank ended is done */

    struct proc_dump dump;
    struct proto_directive *directives; /* the launch's (proc_directive.c) */
    size_t ndirectives;
    char *ctl_path;      /* <dir>/sdk/control: LOCKSTEP_CONTROL_FILE */
    struct ctlfile *ctl; /* open while the ranks may run; NULL before */
    uint64_t ctl_logged; /* newest directive seq logged as posted */

    int open_handles; /* handles and requests to wait for */
    bool closing;
    struct proc_job *prev, *next;
};

#endif
