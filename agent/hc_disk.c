/*
 * hc_disk.c - lockstep-check disk: space and inodes of the given mounts
 *
 *   lockstep-check disk --mount PATH... [--warn-pct N] [--fail-pct N]
 *                       [--min-free-mb N] [--mount-timeout-ms N]
 *                       [--state-dir DIR]
 *
 * One result per file system (scope mount:PATH; a path on the same device
 * as an earlier one is left out): FAIL disk.full when more than --fail-pct
 * (97) percent of the space or of the inodes is used or less than
 * --min-free-mb (64) MiB is free to unprivileged users; WARN disk.low past
 * --warn-pct (90); PASS disk.ok otherwise. A path that cannot be examined
 * is FAIL disk.unavailable (a configured mount that is gone is a fault).
 *
 * statfs blocks on a hung network mount, so every mount is probed in a
 * child of its own, all at once (hc_disk.h): a mount whose probe has not
 * answered within --mount-timeout-ms (10000) is HUNG disk.hung, and the
 * others report as usual. A probe that SIGKILL does not end is left
 * behind; with --state-dir it is remembered (DIR/disk-stuck), and later
 * runs report that mount HUNG at once, without another probe, until it is
 * gone.
 */
#include "agent/hc_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/hc.h"
#include "agent/hc_res.h"
#include "agent/procfs.h"
#include "common/xalloc.h"

#define HC_DISK_STUCK_FILE "disk-stuck"
/* How long a killed probe has to be gone before it counts as stuck. */
#define HC_DISK_KILL_WAIT_MS 500

/* What a probe's child writes back (one write, under PIPE_BUF). */
struct hc_disk_answer {
    int err;
    dev_t dev;
    struct statfs sfs;
};

/* A probe left stuck by some run: the process and since when. */
struct hc_disk_stuck {
    int pid;
    uint64_t start;
    int64_t since_ms;
    char *path;
};

struct hc_disk_memory {
    struct hc_disk_stuck *v;
    size_t n;
};

/* ---- results (pure) ----------------------------------------------------- */

static void
hc_disk_one(const struct hc_disk_opts *o, const char *path,
    const struct statfs *st, cJSON *out)
{
    char scope[PROTO_CHECK_SCOPE_MAX];
    double used_pct = 0, ino_pct = 0, free_mb, worst;
    const char *code = "disk.ok";
    enum proto_check_status status = PROTO_CHECK_PASS;
    cJSON *r;

    /* As df(1) counts: blocks reserved for root are neither used nor
     * available. */
    if (st->f_blocks > 0 && st->f_blocks - st->f_bfree + st->f_bavail > 0)
        used_pct = 100.0 * (double)(st->f_blocks - st->f_bfree) /
                   (double)(st->f_blocks - st->f_bfree + st->f_bavail);
    /* Some file systems (btrfs, many FUSE ones) have no inode limit. */
    if (st->f_files > 0)
        ino_pct = 100.0 * (double)(st->f_files - st->f_ffree) /
                  (double)st->f_files;
    free_mb = (double)st->f_bavail * (double)st->f_bsize / (1024.0 * 1024.0);
    worst = used_pct > ino_pct ? used_pct : ino_pct;
    if (worst > (double)o->fail_pct ||
        (st->f_blocks > 0 && free_mb < (double)o->min_free_mb)) {
        status = PROTO_CHECK_FAIL;
        code = "disk.full";
    } else if (worst > (double)o->warn_pct) {
        status = PROTO_CHECK_WARN;
        code = "disk.low";
    }
    snprintf(scope, sizeof(scope), "mount:%s", path);
    r = hc_add(out, status, code, scope,
        "%s: %.1f%% of space used (%.0f MiB free), %.1f%% of inodes used "
        "(warn > %d%%, fail > %d%% or < %d MiB)",
        path, used_pct, free_mb, ino_pct, (int)o->warn_pct, (int)o->fail_pct,
        (int)o->min_free_mb);
    hc_number(r, "used_pct", used_pct);
    hc_number(r, "free_mb", free_mb);
    hc_number(r, "inodes_used_pct", ino_pct);
    hc_number(r, "inodes_free", (double)st->f_ffree);
}

static void
hc_disk_hung(const struct hc_disk_opts *o, const struct hc_disk_probe *p,
    const char *scope, cJSON *out)
{
    const char *wchan = p->wchan[0] != '\0' ? p->wchan : "?";
    char state = p->state != '\0' ? p->state : '?';
    cJSON *r;

    if (p->outcome == HC_DISK_KILLED) {
        r = hc_add(out, PROTO_CHECK_HUNG, "disk.hung", scope,
            "%s: statfs did not return within %" PRId64 " ms; its probe was "
            "killed",
            p->path, o->mount_timeout_ms);
    } else if (p->outcome == HC_DISK_STUCK) {
        r = hc_add(out, PROTO_CHECK_HUNG, "disk.hung", scope,
            "%s: statfs did not return within %" PRId64 " ms, and its probe "
            "(pid %d) survived SIGKILL (state %c, wchan %s): stuck in the "
            "kernel; no other probe of this mount starts while it exists",
            p->path, o->mount_timeout_ms, p->pid, state, wchan);
        hc_number(r, "pid", p->pid);
    } else {
        r = hc_add(out, PROTO_CHECK_HUNG, "disk.hung", scope,
            "%s: the probe of an earlier run (pid %d, state %c, wchan %s) "
            "has been stuck in the kernel for %" PRId64 " s; not probed "
            "again while it exists",
            p->path, p->pid, state, wchan, p->stuck_ms / 1000);
        hc_number(r, "pid", p->pid);
        hc_number(r, "stuck_s", (double)(p->stuck_ms / 1000));
    }
    hc_number(r, "timeout_ms", (double)o->mount_timeout_ms);
}

void
hc_disk_results(const struct hc_disk_opts *o, const struct hc_disk_probe *p,
    int n, cJSON *out)
{
    dev_t devs[HC_DISK_MOUNTS_MAX];
    int ndevs = 0, i, j;

    for (i = 0; i < n; i++) {
        char scope[PROTO_CHECK_SCOPE_MAX];

        snprintf(scope, sizeof(scope), "mount:%s", p[i].path);
        switch (p[i].outcome) {
        case HC_DISK_OK:
            for (j = 0; j < ndevs && devs[j] != p[i].dev; j++)
                ;
            if (j < ndevs)
                break; /* the same file system as an earlier path */
            if (ndevs < HC_DISK_MOUNTS_MAX)
                devs[ndevs++] = p[i].dev;
            hc_disk_one(o, p[i].path, &p[i].sfs, out);
            break;
        case HC_DISK_ERROR:
            hc_add(out, PROTO_CHECK_FAIL, "disk.unavailable", scope, "%s: %s",
                p[i].path, strerror(p[i].err));
            break;
        default:
            hc_disk_hung(o, &p[i], scope, out);
            break;
        }
    }
}

/* ---- the memory of stuck probes ----------------------------------------- */

static void
hc_disk_memory_release(struct hc_disk_memory *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    m->v = NULL;
    m->n = 0;
}

static void
hc_disk_memory_add(struct hc_disk_memory *m, int pid, uint64_t start,
    int64_t since_ms, const char *path)
{
    m->v = xreallocarray(m->v, m->n + 1, sizeof(*m->v));
    m->v[m->n].pid = pid;
    m->v[m->n].start = start;
    m->v[m->n].since_ms = since_ms;
    m->v[m->n].path = xstrdup(path);
    m->n++;
}

/* The probes the file names that still exist (same pid, same start). */
static void
hc_disk_memory_load(const char *dir, struct hc_disk_memory *m)
{
    char *path = xasprintf("%s/%s", dir, HC_DISK_STUCK_FILE);
    char line[4200], mount[4096];
    FILE *f = fopen(path, "re");
    unsigned long long start;
    long long since;
    int pid;

    free(path);
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (sscanf(line, "%d %llu %lld %4095[^\n]", &pid, &start, &since,
                mount) != 4)
            continue;
        if (start != 0 && procfs_start_time(pid) == start)
            hc_disk_memory_add(m, pid, start, since, mount);
    }
    fclose(f);
}

/* Rewrite the file with the probes still stuck (none: no file). */
static void
hc_disk_memory_save(const char *dir, const struct hc_disk_memory *m)
{
    char *path = xasprintf("%s/%s", dir, HC_DISK_STUCK_FILE);
    char *tmp = xasprintf("%s.tmp", path);
    FILE *f;

    if (m->n == 0) {
        if (unlink(path) < 0 && errno != ENOENT)
            fprintf(stderr, "lockstep-check disk: %s: %s\n", path,
                strerror(errno));
    } else if ((f = fopen(tmp, "we")) != NULL) {
        for (size_t i = 0; i < m->n; i++)
            fprintf(f, "%d %llu %lld %s\n", m->v[i].pid,
                (unsigned long long)m->v[i].start, (long long)m->v[i].since_ms,
                m->v[i].path);
        if (fclose(f) != 0 || rename(tmp, path) < 0) {
            fprintf(stderr, "lockstep-check disk: %s: %s\n", path,
                strerror(errno));
            unlink(tmp);
        }
    } else {
        fprintf(stderr, "lockstep-check disk: %s: %s\n", tmp, strerror(errno));
    }
    free(tmp);
    free(path);
}

/* ---- the probes --------------------------------------------------------- */

/* The child: stat and statfs, the answer to the parent, and out. Its
 * stdio goes to /dev/null, so that a stuck probe holds no pipe of the
 * agent's open. */
static void __attribute__((noreturn)) hc_disk_child(const char *path, int wfd)
{
    struct hc_disk_answer a;
    struct stat st;
    int null = open("/dev/null", O_RDWR);

    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
    }
    memset(&a, 0, sizeof(a));
    if (stat(path, &st) < 0 || statfs(path, &a.sfs) < 0)
        a.err = errno;
    else
        a.dev = st.st_dev;
    if (write(wfd, &a, sizeof(a)) != (ssize_t)sizeof(a))
        _exit(1);
    _exit(0);
}

/* Start the probe of p->path; its pipe's read end in *fd. */
static int
hc_disk_spawn(struct hc_disk_probe *p, int *fd)
{
    int fds[2], pid;

    if (pipe2(fds, O_CLOEXEC) < 0)
        return -errno;
    pid = fork();
    if (pid < 0) {
        int e = errno;

        close(fds[0]);
        close(fds[1]);
        return -e;
    }
    if (pid == 0) {
        close(fds[0]);
        hc_disk_child(p->path, fds[1]);
    }
    close(fds[1]);
    p->pid = pid;
    *fd = fds[0];
    return 0;
}

/* The answer on fd (readable): p's outcome; the child is reaped. */
static void
hc_disk_collect(struct hc_disk_probe *p, int *fd)
{
    struct hc_disk_answer a;
    ssize_t n;

    do
        n = read(*fd, &a, sizeof(a));
    while (n < 0 && errno == EINTR);
    close(*fd);
    *fd = -1;
    while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    p->pid = 0;
    if (n != (ssize_t)sizeof(a)) {
        p->outcome = HC_DISK_ERROR;
        p->err = EIO; /* the probe died without an answer */
    } else if (a.err != 0) {
        p->outcome = HC_DISK_ERROR;
        p->err = a.err;
    } else {
        p->outcome = HC_DISK_OK;
        p->dev = a.dev;
        p->sfs = a.sfs;
    }
}

/* Wait until the deadline for the answers of the probes with fd >= 0. */
static void
hc_disk_wait(struct hc_disk_probe *p, int *fds, int n, int64_t deadline)
{
    struct pollfd pfd[HC_DISK_MOUNTS_MAX];
    int idx[HC_DISK_MOUNTS_MAX], npfd, i, rc;
    int64_t left;

    for (;;) {
        npfd = 0;
        for (i = 0; i < n; i++) {
            if (fds[i] < 0)
                continue;
            pfd[npfd].fd = fds[i];
            pfd[npfd].events = POLLIN;
            pfd[npfd].revents = 0;
            idx[npfd++] = i;
        }
        if (npfd == 0)
            return;
        left = deadline - hc_mono_ms();
        rc = poll(pfd, (nfds_t)npfd, left > 0 ? (int)left : 0);
        if (rc < 0 && errno != EINTR)
            return;
        for (i = 0; i < npfd && rc > 0; i++) {
            if (pfd[i].revents != 0)
                hc_disk_collect(&p[idx[i]], &fds[idx[i]]);
        }
        if (left <= 0)
            return;
    }
}

/* The probes past the deadline: SIGKILL; those still there after a while
 * are stuck (remembered in m). */
static void
hc_disk_kill(const struct hc_disk_opts *o, struct hc_disk_probe *p, int *fds,
    int n, struct hc_disk_memory *m)
{
    int64_t wait_ms = o->mount_timeout_ms / 2 < HC_DISK_KILL_WAIT_MS
                          ? o->mount_timeout_ms / 2
                          : HC_DISK_KILL_WAIT_MS;
    int64_t until = hc_mono_ms() + wait_ms;
    int i, left = 0;

    for (i = 0; i < n; i++) {
        if (fds[i] < 0)
            continue;
        close(fds[i]);
        fds[i] = -1;
        kill(p[i].pid, SIGKILL);
        p[i].outcome = HC_DISK_STUCK;
        left++;
    }
    while (left > 0) {
        for (i = 0; i < n; i++) {
            if (p[i].outcome == HC_DISK_STUCK &&
                waitpid(p[i].pid, NULL, WNOHANG) == p[i].pid) {
                p[i].outcome = HC_DISK_KILLED;
                left--;
            }
        }
        if (left == 0 || hc_mono_ms() >= until)
            break;
        usleep(10000);
    }
    for (i = 0; i < n; i++) {
        char *wchan = NULL;
        size_t len = 0;

        if (p[i].outcome != HC_DISK_STUCK)
            continue;
        p[i].state = procfs_state(p[i].pid);
        if (procfs_read(p[i].pid, "wchan", sizeof(p[i].wchan) - 1, &wchan,
                &len) == 0)
            snprintf(p[i].wchan, sizeof(p[i].wchan), "%s", wchan);
        free(wchan);
        hc_disk_memory_add(m, p[i].pid, procfs_start_time(p[i].pid),
            hc_wall_ms(), p[i].path);
    }
}

/* Probe every mount: its outcome in p[i] (p[i].path set). */
static void
hc_disk_probe_all(const struct hc_disk_opts *o, struct hc_disk_probe *p,
    struct hc_disk_memory *m)
{
    int fds[HC_DISK_MOUNTS_MAX], i, rc;
    size_t k;

    for (i = 0; i < o->nmounts; i++) {
        fds[i] = -1;
        for (k = 0; k < m->n && strcmp(m->v[k].path, p[i].path) != 0; k++)
            ;
        if (k < m->n) {
            char *wchan = NULL;
            size_t len = 0;

            p[i].outcome = HC_DISK_STILL;
            p[i].pid = m->v[k].pid;
            p[i].state = procfs_state(p[i].pid);
            p[i].stuck_ms = hc_wall_ms() - m->v[k].since_ms;
            if (procfs_read(p[i].pid, "wchan", sizeof(p[i].wchan) - 1, &wchan,
                    &len) == 0)
                snprintf(p[i].wchan, sizeof(p[i].wchan), "%s", wchan);
            free(wchan);
            continue;
        }
        if ((rc = hc_disk_spawn(&p[i], &fds[i])) < 0) {
            p[i].outcome = HC_DISK_ERROR;
            p[i].err = -rc;
        }
    }
    hc_disk_wait(p, fds, o->nmounts, hc_mono_ms() + o->mount_timeout_ms);
    hc_disk_kill(o, p, fds, o->nmounts, m);
}

static int
hc_disk_opts_parse(int argc, char **argv, struct hc_disk_opts *o)
{
    const char *v;
    bool bad = false;
    int i = 0;

    o->warn_pct = 90;
    o->fail_pct = 97;
    o->min_free_mb = 64;
    o->mount_timeout_ms = 10000;
    while (i < argc && !bad) {
        if (hc_opt("disk", argc, argv, &i, "mount", &v, &bad)) {
            if (bad)
                break;
            if (o->nmounts == HC_DISK_MOUNTS_MAX) {
                fprintf(stderr, "lockstep-check disk: more than %d mounts\n",
                    HC_DISK_MOUNTS_MAX);
                return HC_USAGE;
            }
            o->mounts[o->nmounts++] = v;
        } else if (hc_opt("disk", argc, argv, &i, "state-dir", &v, &bad)) {
            o->state_dir = v;
        } else if (!hc_opt_int("disk", argc, argv, &i, "warn-pct", 0, 100,
                       &o->warn_pct, &bad) &&
                   !hc_opt_int("disk", argc, argv, &i, "fail-pct", 0, 100,
                       &o->fail_pct, &bad) &&
                   !hc_opt_int("disk", argc, argv, &i, "min-free-mb", 0,
                       INT32_MAX, &o->min_free_mb, &bad) &&
                   !hc_opt_int("disk", argc, argv, &i, "mount-timeout-ms", 10,
                       3600000, &o->mount_timeout_ms, &bad)) {
            return hc_usage_unknown("disk", argv[i]);
        }
    }
    if (bad)
        return HC_USAGE;
    if (o->nmounts == 0) {
        fprintf(stderr, "lockstep-check disk: give at least one --mount\n");
        return HC_USAGE;
    }
    return 0;
}

int
hc_disk_run(int argc, char **argv, cJSON *out)
{
    struct hc_disk_probe p[HC_DISK_MOUNTS_MAX];
    struct hc_disk_memory m = { NULL, 0 };
    struct hc_disk_opts o;
    int rc;

    memset(&o, 0, sizeof(o));
    memset(p, 0, sizeof(p));
    if ((rc = hc_disk_opts_parse(argc, argv, &o)) != 0)
        return rc;
    for (int i = 0; i < o.nmounts; i++)
        p[i].path = o.mounts[i];
    if (o.state_dir != NULL)
        hc_disk_memory_load(o.state_dir, &m);
    hc_disk_probe_all(&o, p, &m);
    if (o.state_dir != NULL)
        hc_disk_memory_save(o.state_dir, &m);
    hc_disk_memory_release(&m);
    hc_disk_results(&o, p, o.nmounts, out);
    return 0;
}
