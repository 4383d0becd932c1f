/*
 * procfs.h - what /proc says about processes: the agent's one /proc reader
 *
 * Process identity (start time, state, executable and arguments, process
 * group, environment), the walks over every process, every thread of one
 * or our own descriptors, and the evidence of stack dumps (wait channel,
 * kernel stack, caught signals). Every question the agent and the
 * supervisor ask /proc about a process goes through here.
 *
 * A pid may name another process by the time it is used: callers that
 * signal compare the start time they recorded (procfs_start_time) or use
 * procfs_group_is. Blocking but cheap (small kernel files); no libuv, so
 * lockstep-supervisor links it. Nothing here logs.
 */
#ifndef AGENT_PROCFS_H
#define AGENT_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fields of /proc/<pid>/stat. */
struct procfs_stat {
    char state;          /* field 3: 'R', 'S', 'Z'...; '\0' unknown */
    int ppid;            /* field 4 */
    int pgrp;            /* field 5 */
    uint64_t start_time; /* field 22: clock ticks after boot */
};

/* Read /proc/<pid>/stat into *st. Returns 0, -ESRCH when there is no such
 * process (pid <= 0 included), -EINVAL for a line it cannot parse. */
int procfs_stat(int pid, struct procfs_stat *st);

/* The state letter of pid, '\0' when it is gone. */
char procfs_state(int pid);

/* The start time of pid (its identity with the pid), 0 when it is gone or
 * a zombie. */
uint64_t procfs_start_time(int pid);

/*
 * Read /proc/<pid>/<name> ("status", "wchan", "stack", "cmdline",
 * "environ"...) whole into a new NUL-terminated buffer (caller frees),
 * like supfile_read: -errno (-ENOENT once pid is gone, -EACCES for what
 * only root may read), -EFBIG when longer than max.
 */
int procfs_read(int pid, const char *name, size_t max, char **text,
    size_t *len);

/* Called by procfs_each: 0 to go on, anything else to stop the walk. */
typedef int (*procfs_each_fn)(int pid, void *arg);

/*
 * Call fn for every process (pid 0) or for every thread of pid (pid > 0),
 * in directory order, until it returns non-zero. Returns what stopped the
 * walk, 0 at its end, or -errno when the directory cannot be read.
 */
int procfs_each(int pid, procfs_each_fn fn, void *arg);

/* Call fn for every file descriptor this process has open, but the one
 * the walk reads /proc/self/fd with, like procfs_each. */
int procfs_each_fd(procfs_each_fn fn, void *arg);

/* The path of pid's executable (pid 0: this process), readlink(2) of
 * /proc/<pid>/exe, in buf (NUL-terminated, cut to size). Returns its
 * length or -errno. */
int procfs_exe(int pid, char *buf, size_t size);

/* Whether pid has a handler for sig (SigCgt in /proc/<pid>/status). */
bool procfs_catches(int pid, int sig);

/*
 * Whether pid is alive, not a zombie, runs an executable named exe (also
 * after an upgrade replaced the file: "<exe> (deleted)") and has arg1 as
 * its first argument.
 */
bool procfs_runs(int pid, const char *exe, const char *arg1);

/*
 * Whether the process group pgid is still the one whose leader started at
 * start_time (0: unknown): its leader is alive (or a zombie) with that
 * start time, or the leader is gone and the first member of the group
 * found has every "K=V" of env (NULL-terminated) in its environment. A
 * pgid that names a process group no longer ours (it was reused) is never
 * one to kill.
 */
bool procfs_group_is(int pgid, uint64_t start_time, const char *const *env);

#endif
