/*
 * procfs.c - /proc/<pid>/stat, status, exe, cmdline, environ, task/
 *
 * The only reads of /proc about processes in agent/ (procfs.h). Files are
 * read with supfile_read: bounded, no link followed.
 */
#include "agent/procfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/supfile.h"

int
procfs_stat(int pid, struct procfs_stat *st)
{
    char path[64], buf[1024], *p, *tok, *save = NULL;
    ssize_t n;
    int fd, field;

    memset(st, 0, sizeof(*st));
    if (pid <= 0)
        return -ESRCH;
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -ESRCH;
    do
        n = read(fd, buf, sizeof(buf) - 1);
    while (n < 0 && errno == EINTR);
    close(fd);
    if (n <= 0)
        return -ESRCH;
    buf[n] = '\0';
    /* The command name (field 2) may hold spaces and parentheses: the
     * fields we want follow the last ')'. */
    p = strrchr(buf, ')');
    if (p == NULL)
        return -EINVAL;
    for (field = 3, tok = strtok_r(p + 1, " ", &save); tok != NULL;
         field++, tok = strtok_r(NULL, " ", &save)) {
        if (field == 3)
            st->state = tok[0];
        else if (field == 4)
            st->ppid = (int)strtol(tok, NULL, 10);
        else if (field == 5)
            st->pgrp = (int)strtol(tok, NULL, 10);
        else if (field == 22) {
            st->start_time = strtoull(tok, NULL, 10);
            break;
        }
    }
    return 0;
}

char
procfs_state(int pid)
{
    struct procfs_stat st;

    procfs_stat(pid, &st);
    return st.state;
}

uint64_t
procfs_start_time(int pid)
{
    struct procfs_stat st;

    if (procfs_stat(pid, &st) < 0 || st.state == 'Z' || st.state == 'X')
        return 0;
    return st.start_time;
}

int
procfs_read(int pid, const char *name, size_t max, char **text, size_t *len)
{
    char path[64 + NAME_MAX];

    snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
    return supfile_read(path, max, text, len);
}

/* Call fn for each numeric entry of the directory path; for our own
 * descriptors (fds), not for the one the walk reads them with. */
static int
procfs_walk(const char *path, bool fds, procfs_each_fn fn, void *arg)
{
    struct dirent *de;
    int n, rc = 0;
    DIR *d;

    d = opendir(path);
    if (d == NULL)
        return -errno;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        n = atoi(de->d_name);
        if (!fds || n != dirfd(d))
            rc = fn(n, arg);
    }
    closedir(d);
    return rc;
}

int
procfs_each(int pid, procfs_each_fn fn, void *arg)
{
    char path[64];

    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/task", pid);
    else
        snprintf(path, sizeof(path), "/proc");
    return procfs_walk(path, false, fn, arg);
}

int
procfs_each_fd(procfs_each_fn fn, void *arg)
{
    return procfs_walk("/proc/self/fd", true, fn, arg);
}

int
procfs_exe(int pid, char *buf, size_t size)
{
    char path[64];
    ssize_t n;

    if (pid > 0)
        snprintf(path, sizeof(path), "/proc/%d/exe", pid);
    else
        snprintf(path, sizeof(path), "/proc/self/exe");
    n = readlink(path, buf, size - 1);
    if (n < 0)
        return -errno;
    buf[n] = '\0';
    return (int)n;
}

bool
procfs_catches(int pid, int sig)
{
    char *text = NULL, *p;
    unsigned long long mask;
    size_t len;
    bool yes = false;

    if (procfs_read(pid, "status", 1 << 16, &text, &len) < 0)
        return false;
    p = strstr(text, "\nSigCgt:");
    if (p != NULL) {
        mask = strtoull(p + 8, NULL, 16);
        yes = (mask >> (sig - 1)) & 1;
    }
    free(text);
    return yes;
}

bool
procfs_runs(int pid, const char *exe, const char *arg1)
{
    char path[PATH_MAX + 1], *base, *text = NULL;
    char state = procfs_state(pid);
    size_t len, n;
    bool ok = false;

    if (state == '\0' || state == 'Z' || state == 'X')
        return false;
    if (procfs_exe(pid, path, sizeof(path)) <= 0)
        return false;
    base = strrchr(path, '/');
    base = base != NULL ? base + 1 : path;
    /* An upgrade that replaced the binary leaves "<name> (deleted)". */
    n = strlen(exe);
    if (strncmp(base, exe, n) != 0 || (base[n] != '\0' && base[n] != ' '))
        return false;
    if (procfs_read(pid, "cmdline", 1 << 16, &text, &len) < 0)
        return false;
    /* argv[0] NUL argv[1] NUL ... */
    n = strnlen(text, len);
    if (n < len && strcmp(text + n + 1, arg1) == 0)
        ok = true;
    free(text);
    return ok;
}

/* Whether the environment of pid holds every entry of env. */
static bool
procfs_env_has(int pid, const char *const *env)
{
    char *text = NULL, *p;
    size_t len, want = 0, found = 0, k;

    while (env[want] != NULL)
        want++;
    if (procfs_read(pid, "environ", 4u << 20, &text, &len) < 0)
        return false;
    for (p = text; p < text + len; p += strlen(p) + 1) {
        for (k = 0; k < want; k++) {
            if (strcmp(p, env[k]) == 0) {
                found++;
                break;
            }
        }
    }
    free(text);
    return found >= want;
}

struct procfs_group {
    int pgid;
    const char *const *env;
    bool ours;
};

static int
procfs_group_member_cb(int pid, void *arg)
{
    struct procfs_group *g = arg;
    struct procfs_stat st;

    if (procfs_stat(pid, &st) < 0 || st.pgrp != g->pgid)
        return 0;
    g->ours = procfs_env_has(pid, g->env);
    return 1;
}

bool
procfs_group_is(int pgid, uint64_t start_time, const char *const *env)
{
    struct procfs_group g = { .pgid = pgid, .env = env, .ours = false };
    struct procfs_stat st;

    if (pgid <= 0)
        return false;
    if (procfs_stat(pgid, &st) == 0 && st.state != '\0')
        return start_time == 0 || st.start_time == start_time;
    if (kill(-pgid, 0) < 0 && errno != EPERM)
        return false; /* nothing left to kill */
    /* The leader is gone, the group is not: ours only if its members are
     * (a reused pid could lead a group that outlived its leader too). */
    procfs_each(0, procfs_group_member_cb, &g);
    return g.ours;
}
