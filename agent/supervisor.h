/*
 * supervisor.h - lockstep-supervisor: the ranks of one job attempt on a node
 *
 * The agent starts one supervisor per (job, attempt), detached in its own
 * session, with the attempt's directory (supfile.h) as its only argument.
 * The supervisor:
 *
 *   - starts every rank of spec.json as its child, each in its own process
 *     group, as the user the spec names, with stdout/stderr appended to the
 *     rank's files; a command without a '/' is looked up in the rank's
 *     own PATH (execvp with the rank's environment: the job's PATH, not
 *     the agent's); a rank that cannot be started leaves the reason in its
 *     stderr and exit code 127 (ENOENT) or 126, and, when the reason is
 *     the job's own (its working directory: "cannot change to working
 *     directory 'x': <reason>"; its command: "cannot execute 'x':
 *     <reason>", for a bare name with the PATH searched or the file
 *     found), the same sentence as the rank's launch_error in
 *     status.json: the scheduler's launch failure;
 *   - is a child subreaper, so the ranks' orphaned descendants are its
 *     children too and never escape to init;
 *   - records every start and exit in status.json (atomically, on every
 *     change), so exit codes survive the agent;
 *   - holds the lease: it reads the `lease` file at least every 100 ms and
 *     at the deadline; once CLOCK_MONOTONIC passes the deadline it SIGKILLs
 *     every rank's process group at once and records "fenced": true;
 *   - on the `stop` file (or SIGTERM/SIGINT to itself) sends SIGTERM to
 *     every rank's group, and SIGKILL after kill_grace_ms;
 *   - when a rank exits, SIGKILLs what is left of its process group
 *     (before reaping it, while its pid cannot name another group); when
 *     every rank has exited, SIGKILLs every remaining descendant (one that
 *     left its group with setsid, say) until none is left, writes
 *     status.json with "done": true and exits 0.
 *
 * It does not depend on the agent: a dead, frozen or restarting agent
 * changes nothing but the lease renewals. Single-threaded, poll(2) on a
 * signalfd; no libuv.
 */
#ifndef AGENT_SUPERVISOR_H
#define AGENT_SUPERVISOR_H

#include <stddef.h>

/* How often the lease and the stop file are read, at least. */
#define SUPERVISOR_POLL_MS 100

/*
 * Run the supervisor of the attempt directory dir (absolute) until every
 * rank ended. Returns the process exit status: 0 once done, 2 when it
 * could not start (spec.json or lease unreadable, no subreaper, no
 * signalfd; the reason is logged on stderr and no rank was started).
 */
int supervisor_run(const char *dir);

/* Where execvp would look first for the command `name` (no '/') in
 * `path`, a PATH value (NULL: unset, glibc's default "/bin:/usr/bin"; an
 * empty entry is the working directory): the first "DIR/name" that
 * exists, into out. Returns 0, -ENOENT when none does, -ENAMETOOLONG.
 * Used to explain a failed exec. */
int supervisor_path_find(const char *path, const char *name, char *out,
    size_t len);

#endif
