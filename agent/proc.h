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
 * stack dumps (proc_dump.c) are sampled for the status report; a rank's
 * output files are shipped by logship.c, with which the table registers
 * them.
 *
 * Everything runs on the loop thread, except the scan of checkpoint
 * directories and the deletion of old checkpoints, which run on libuv's
 * thread pool: they touch the user's (often network) file system, which
 * may hang, and a hung loop would stop the lease renewals of every job on
 * the node (proc_ckpt.c). The structs (proc_job.h) are exposed read-only
 * for report.c and the tests; only proc*.c change them (proc_int.h).
 */
#ifndef AGENT_PROC_H
#define AGENT_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent/proc_job.h"
#include "common/err.h"
#include "common/proto.h"

struct agentd;
struct proc_table;

/* The lease a supervisor gets until the scheduler granted one. */
#define PROC_LEASE_DEFAULT_MS 5000

/* Called on the loop thread after a rank changed state or a job was
 * released, so a status report goes out at once. It may run inside
 * proc_apply: it should only schedule work (start a timer). */
typedef void (*proc_change_fn)(void *arg);

/*
 * Creates the table: makes <state_dir>/jobs and re-adopts the attempts a
 * previous agent left there (see above), registering their output with
 * ad->logship (so create the shipper first). Errors: the errno of a
 * directory that cannot be created, with err set.
 */
struct proc_table *proc_create(struct agentd *ad, struct err *err);

/*
 * Closes every handle WITHOUT signalling any supervisor or rank: they
 * outlive the agent (see above). Deletions in flight are asked to stop;
 * the ranks' output leaves the log shipper at once. Memory is freed once
 * the close callbacks ran. Accepts NULL.
 */
void proc_destroy(struct proc_table *pt);

void proc_set_change_cb(struct proc_table *pt, proc_change_fn fn, void *arg);

/*
 * Makes the held jobs follow the desired state: starts each (job,
 * attempt) of w not held and never held before (exactly once), tears down
 * held jobs absent from w, releases those that are absent and done, and
 * carries out the directives a launch lists (proc_directive.h). A launch
 * that cannot start reports its ranks exited (code 127 or 126) with the
 * reason as stderr_tail. Returns how many jobs were started.
 */
int proc_apply(struct proc_table *pt, const struct proto_work *w);

/* Begins the teardown of one job (idempotent). */
void proc_job_teardown(struct proc_job *job);

/*
 * Adds every held job to rep->jobs (allocated; released with
 * proto_node_report_release), sampling progress, commits and convention
 * checkpoints first (cheap: small files, stat before read). Returns the
 * sequence number of this report, for proc_status_ok.
 *
 * The end of a rank is reported once its output reached the scheduler
 * (logship.h), or once the scheduler had a while to take it
 * (proc_ends_held); until then the rank is reported as running, so that
 * a job seen ended has its whole output readable, also when its ranks
 * ended during a scheduler outage and the first status that gets through
 * afterwards is the one that tells of it.
 */
uint64_t proc_fill_report(struct proc_table *pt, struct proto_node_report *rep);

/*
 * Whether the next report would keep the end of some rank back: its
 * output is not all shipped yet and the scheduler has been answering for
 * less than 2 s since it ended (or since it came back, when it was away
 * then), or does not answer now. report.c delays a status for as long as
 * this says so, up to the next heartbeat (the leases must not wait);
 * a status sent meanwhile reports such a rank as running.
 */
bool proc_ends_held(const struct proc_table *pt);

/*
 * The scheduler accepted the status report `seq`, sent at sent_mono_ms
 * (monotonic), granting lease_ms: every live supervisor's lease becomes
 * sent_mono_ms + lease_ms (counted from the send, not the reply: the
 * scheduler's node timeout started no earlier), and stack dumps that
 * report carried are dropped.
 */
void proc_status_ok(struct proc_table *pt, uint64_t seq, int64_t sent_mono_ms,
    int64_t lease_ms);

/* The scheduler answered an exchange sent at sent_mono_ms (a status, a
 * lease ping) granting lease_ms: every live supervisor's lease becomes
 * sent_mono_ms + lease_ms, as proc_status_ok says, and lease_ms is the
 * lease of new attempts. */
void proc_lease_granted(struct proc_table *pt, int64_t sent_mono_ms,
    int64_t lease_ms);

/* The address (ip, cap bytes; port) of the scheduler that answered the
 * last status over TCP, where lease pings and fence notices go; false
 * when none did (a Unix socket, no status yet, no agent lock). */
bool proc_sched_addr_get(const struct proc_table *pt, char *ip, size_t cap,
    int *port);

/*
 * A status did not get through: the scheduler does not answer (for now).
 * Until the next proc_status_ok, a finished job's unshipped output is
 * never given up (the time the scheduler is away does not count towards
 * the 30 s a finished job waits for it) and ranks' ends are held back as
 * proc_fill_report says.
 */
void proc_status_failed(struct proc_table *pt);

/*
 * No status got through, but the node's witnesses say the scheduler is
 * down for them too (witness.h): every live supervisor's lease becomes
 * deadline_mono_ms (monotonic). Returns how many leases were written.
 */
size_t proc_lease_extend(struct proc_table *pt, int64_t deadline_mono_ms);

/* The last lease the scheduler granted (PROC_LEASE_DEFAULT_MS before). */
int64_t proc_lease_ms(const struct proc_table *pt);
/* Whether any held job still has a supervisor that holds a lease. */
bool proc_has_live_supervisors(const struct proc_table *pt);

/* Held jobs, in start order reversed; iterate with job->next. */
struct proc_job *proc_jobs(const struct proc_table *pt);
size_t proc_njobs(const struct proc_table *pt);

#endif
