/*
 * test_agent.c - unit tests for agent/: rank environment, resource
 * parsing, stderr tails, the generic helpers (backoff, mkdirp, rmtree,
 * procfs), and jobs run on a real libuv loop through the real
 * lockstep-supervisor (exit codes, output files, process-group cleanup,
 * teardown, spawn failures, leases, re-adoption by a new agent, a killed
 * supervisor, progress and commits, convention checkpoints, stack dumps).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <uv.h>

#include "agent/agentd.h"
#include "agent/backoff.h"
#include "agent/mkdirp.h"
#include "agent/proc.h"
#include "agent/proc_ckpt.h"
#include "agent/proc_env.h"
#include "agent/proc_progress.h"
#include "agent/procfs.h"
#include "agent/resources.h"
#include "agent/rmtree.h"
#include "agent/supfile.h"
#include "agent/tail.h"
#include "common/curlx.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "tests/tap.h"
#include "tests/testdir.h"
#include "tests/unit/tagent.h"

static void
write_file(const char *path, const char *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || write(fd, data, len) != (ssize_t)len)
        diag("cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

static char *
read_all(const char *path)
{
    char *buf = xcalloc(1, 65536);
    int fd = open(path, O_RDONLY);

    if (fd >= 0) {
        if (read(fd, buf, 65535) < 0)
            buf[0] = '\0';
        close(fd);
    }
    return buf;
}

/* A launch for one node; ranks get local ranks 0.. and the given GPUs. */
static void
launch_init(struct proto_launch *l, int64_t job, int attempt,
    const char *const *argv, size_t nranks)
{
    size_t i, n = 0;

    memset(l, 0, sizeof(*l));
    while (argv[n] != NULL)
        n++;
    l->job = job;
    l->attempt = attempt;
    l->name = xstrdup("t");
    l->user = xstrdup("nobody");
    l->argc = n;
    l->argv = xcalloc(n + 1, sizeof(*l->argv));
    for (i = 0; i < n; i++)
        l->argv[i] = xstrdup(argv[i]);
    l->workdir = xstrdup("/");
    l->nnodes = 1;
    l->node_rank = 0;
    l->ranks_per_node = (int)nranks;
    l->world_size = (int)nranks;
    l->master_addr = xstrdup("127.0.0.1");
    l->master_port = 29500;
    l->ranks = xcalloc(nranks, sizeof(*l->ranks));
    l->nranks = nranks;
    for (i = 0; i < nranks; i++) {
        l->ranks[i].rank = (int)i;
        l->ranks[i].local_rank = (int)i;
    }
    l->checkpoint_dir = xstrdup("");
    l->resume_from = xstrdup("");
    l->resume_step = -1;
}

/* ---- environment -------------------------------------------------------- */

/* A variable a rank's environment must have; the check is named desc,
 * or the key when desc is NULL. */
struct env_want {
    const char *key, *want, *desc;
};

static void
check_env(char **env, const struct env_want *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        is_str(proc_env_get(env, w[i].key), w[i].want, "%s",
            w[i].desc ? w[i].desc : w[i].key);
}

/* OMP_NUM_THREADS, as torchrun sets it: 1 when ranks share the node and
 * neither the job nor the agent set it. */
static void
test_env_omp(struct proto_launch *l, char **base)
{
    char *omp_base[] = { "PATH=/usr/bin", "OMP_NUM_THREADS=8", NULL };
    char **env;

    /* env[1] is FOO=bar: make it OMP_NUM_THREADS=6, then back. */
    free(l->env[1].key);
    free(l->env[1].value);
    l->env[1].key = xstrdup("OMP_NUM_THREADS");
    l->env[1].value = xstrdup("6");
    env = proc_build_env(l, &l->ranks[0], "n7", base);
    is_str(proc_env_get(env, "OMP_NUM_THREADS"), "6",
        "the job's OMP_NUM_THREADS wins");
    proc_env_free(env);
    l->env[1].value[0] = '\0';
    env = proc_build_env(l, &l->ranks[0], "n7", base);
    is_str(proc_env_get(env, "OMP_NUM_THREADS"), "",
        "... even when it is empty");
    proc_env_free(env);
    free(l->env[1].key);
    l->env[1].key = xstrdup("FOO");
    env = proc_build_env(l, &l->ranks[0], "n7", omp_base);
    is_str(proc_env_get(env, "OMP_NUM_THREADS"), "8",
        "the agent's OMP_NUM_THREADS is kept");
    proc_env_free(env);
    l->ranks_per_node = 1;
    env = proc_build_env(l, &l->ranks[0], "n7", base);
    ok(proc_env_get(env, "OMP_NUM_THREADS") == NULL,
        "one rank per node: no OMP_NUM_THREADS (torchrun's rule)");
    proc_env_free(env);
    l->ranks_per_node = 2;
}

static void
test_env(void)
{
    static const struct env_want rank3[] = {
        { "RANK", "3", "RANK is the global rank" },
        { "WORLD_SIZE", "4" },
        { "LOCAL_RANK", "1" },
        { "LOCAL_WORLD_SIZE", "2", "LOCAL_WORLD_SIZE is ranks_per_node" },
        { "NODE_RANK", "1" },
        { "GROUP_RANK", "1", "GROUP_RANK is node rank" },
        { "MASTER_ADDR", "127.0.0.1" },
        { "MASTER_PORT", "29500" },
        { "LOCKSTEP_JOB_ID", "12" },
        { "LOCKSTEP_ATTEMPT", "2" },
        { "LOCKSTEP_NODE", "n7" },
        { "LOCKSTEP_CHECKPOINT_DIR", "/ckpt/12" },
        { "LOCKSTEP_RESUME_FROM", "",
            "LOCKSTEP_RESUME_FROM empty without a checkpoint" },
        { "LOCKSTEP_RESUME_STEP", "",
            "LOCKSTEP_RESUME_STEP empty without a checkpoint" },
        { "CUDA_VISIBLE_DEVICES", "2,3",
            "CUDA_VISIBLE_DEVICES lists the rank's GPUs" },
        { "FOO", "bar", "job env is passed" },
        { "PATH", "/opt/bin:/usr/bin",
            "job env overrides the agent's environment" },
        { "HOME", "/root", "agent environment kept" },
        { "GROUP_WORLD_SIZE", "2", "GROUP_WORLD_SIZE is nnodes" },
        { "ROLE_RANK", "3", "ROLE_RANK is RANK (one role)" },
        { "ROLE_WORLD_SIZE", "4", "ROLE_WORLD_SIZE is WORLD_SIZE" },
        { "ROLE_NAME", "default", "ROLE_NAME is torchrun's default" },
        { "TORCHELASTIC_RESTART_COUNT", "1",
            "TORCHELASTIC_RESTART_COUNT is attempt - 1, not the job's 9" },
        { "TORCHELASTIC_MAX_RESTARTS", "3",
            "TORCHELASTIC_MAX_RESTARTS is the job's max_restarts" },
        { "TORCHELASTIC_RUN_ID", "12", "TORCHELASTIC_RUN_ID is the job id" },
        { "OMP_NUM_THREADS", "1",
            "OMP_NUM_THREADS=1 with two ranks on the node" },
        { "PWD", "/work", "PWD is the working directory, not the agent's" },
    };
    static const struct env_want rank2[] = {
        { "RANK", "2", "rank 2 gets RANK=2" },
        { "CUDA_VISIBLE_DEVICES", "",
            "CUDA_VISIBLE_DEVICES is empty without GPUs" },
        { "LOCKSTEP_RESUME_FROM", "/ckpt/12/step-500" },
        { "LOCKSTEP_RESUME_STEP", "500" },
    };
    struct proto_launch l;
    const char *argv[] = { "python3", "train.py", NULL };
    char *base[] = { "PATH=/usr/bin", "HOME=/root", "NOTIFY_SOCKET=/run/x",
        "LISTEN_FDS=3", "JOURNAL_STREAM=8:9", "RANK=7", NULL };
    int gpus[] = { 2, 3 };
    char **env;

    launch_init(&l, 12, 2, argv, 2);
    l.nnodes = 2;
    l.node_rank = 1;
    l.world_size = 4;
    l.ranks[0].rank = 2;
    l.ranks[1].rank = 3;
    l.ranks[1].gpus = xmalloc(sizeof(gpus));
    memcpy(l.ranks[1].gpus, gpus, sizeof(gpus));
    l.ranks[1].ngpus = 2;
    free(l.checkpoint_dir);
    l.checkpoint_dir = xstrdup("/ckpt/12");
    l.max_restarts = 3;
    free(l.workdir);
    l.workdir = xstrdup("/work");
    l.env = xcalloc(5, sizeof(*l.env));
    l.env[0].key = xstrdup("RANK");
    l.env[0].value = xstrdup("99");
    l.env[1].key = xstrdup("FOO");
    l.env[1].value = xstrdup("bar");
    l.env[2].key = xstrdup("PATH");
    l.env[2].value = xstrdup("/opt/bin:/usr/bin");
    l.env[3].key = xstrdup("LOCKSTEP_PROGRESS_FILE");
    l.env[3].value = xstrdup("/tmp/forged");
    l.env[4].key = xstrdup("TORCHELASTIC_RESTART_COUNT");
    l.env[4].value = xstrdup("9");
    l.nenv = 5;

    env = proc_build_env(&l, &l.ranks[1], "n7", base);
    check_env(env, rank3, ARRAY_SIZE(rank3));
    ok(proc_env_get(env, "LOCKSTEP_PROGRESS_FILE") == NULL,
        "the job's env cannot set LOCKSTEP_PROGRESS_FILE (the agent does)");
    ok(proc_env_get(env, "NOTIFY_SOCKET") == NULL &&
            proc_env_get(env, "LISTEN_FDS") == NULL &&
            proc_env_get(env, "JOURNAL_STREAM") == NULL,
        "systemd service variables are not passed to ranks");
    proc_env_free(env);

    free(l.resume_from);
    l.resume_from = xstrdup("/ckpt/12/step-500");
    l.resume_step = 500;
    env = proc_build_env(&l, &l.ranks[0], "n7", base);
    check_env(env, rank2, ARRAY_SIZE(rank2));
    proc_env_free(env);
    test_env_omp(&l, base);
    proto_launch_release(&l);
}

/* ---- resources ----------------------------------------------------------- */

static void
test_gpus(void)
{
    struct err err = { 0 };
    char dev[PATH_MAX + 16], path[PATH_MAX + 64];
    const char *names[] = { "nvidia0", "nvidia1", "nvidia10", "nvidiactl",
        "nvidia-uvm", "nvidia", "null", NULL };
    int *ids = NULL;
    size_t n = 99, i;

    is_int(resources_gpus_parse("0-3", "/nonexistent", &ids, &n, &err), 0,
        "gpus 0-3 parses");
    ok(n == 4 && ids[0] == 0 && ids[3] == 3, "0-3 gives ids 0..3");
    free(ids);
    is_int(resources_gpus_parse("0,2,4", "/nonexistent", &ids, &n, &err), 0,
        "gpus 0,2,4 parses");
    ok(n == 3 && ids[1] == 2 && ids[2] == 4, "0,2,4 gives 0 2 4");
    free(ids);
    is_int(resources_gpus_parse("none", "/nonexistent", &ids, &n, &err), 0,
        "gpus none parses");
    ok(n == 0 && ids == NULL, "none gives no GPU");
    is_int(resources_gpus_parse("", "/nonexistent", &ids, &n, &err), 0,
        "empty gpus parses");
    is_int(n, 0, "empty gives no GPU");
    is_int(resources_gpus_parse("0-x", "/nonexistent", &ids, &n, &err), -EINVAL,
        "gpus 0-x is an error");
    ok(strstr(err.msg, "0-x") != NULL, "the error names the value: %s",
        err.msg);

    snprintf(dev, sizeof(dev), "%s/dev", tmpdir);
    mkdir(dev, 0755);
    for (i = 0; names[i] != NULL; i++) {
        snprintf(path, sizeof(path), "%s/%s", dev, names[i]);
        write_file(path, "", 0);
    }
    is_int(resources_gpus_parse("auto", dev, &ids, &n, &err), 0,
        "gpus auto parses");
    ok(n == 3 && ids[0] == 0 && ids[2] == 2,
        "auto counts nvidia<N> only (got %zu)", n);
    free(ids);
    is_int(resources_gpus_parse("auto", "/nonexistent", &ids, &n, &err), 0,
        "auto without a device directory");
    is_int(n, 0, "... gives no GPU");
}

static void
test_labels(void)
{
    struct err err = { 0 };
    struct proto_kv *kv = NULL;
    size_t n = 99;

    is_int(resources_labels_parse("rack=r12, zone=a", &kv, &n, &err), 0,
        "labels parse");
    ok(n == 2 && strcmp(kv[0].key, "rack") == 0 &&
            strcmp(kv[0].value, "r12") == 0 && strcmp(kv[1].key, "zone") == 0 &&
            strcmp(kv[1].value, "a") == 0,
        "rack=r12 and zone=a");
    proto_kv_array_free(kv, n);
    is_int(resources_labels_parse("", &kv, &n, &err), 0, "empty labels");
    is_int(n, 0, "... give none");
    is_int(resources_labels_parse("rack", &kv, &n, &err), -EINVAL,
        "a label without '=' is an error");
    ok(strstr(err.msg, "rack") != NULL, "... naming it: %s", err.msg);
    is_int(resources_labels_parse("a=1,a=2", &kv, &n, &err), -EINVAL,
        "a duplicate label is an error");
    is_int(resources_labels_parse("bad key=1", &kv, &n, &err), -EINVAL,
        "a label key with a space is an error");
    ok(resources_detect_cpus() >= 1, "at least one CPU detected");
    ok(resources_detect_memory_mb("/proc/meminfo") > 0, "memory detected");
    is_int(resources_detect_memory_mb("/nonexistent"), 0, "no meminfo gives 0");
}

/* ---- stderr tail --------------------------------------------------------- */

static void
test_tail(void)
{
    char path[PATH_MAX + 16], *t, *big;
    size_t i, len = 0;

    snprintf(path, sizeof(path), "%s/tail", tmpdir);
    write_file(path, "one\ntwo\nthree\n", 14);
    t = tail_read(path, 4096);
    is_str(t, "one\ntwo\nthree\n", "a short file is returned whole");
    free(t);

    big = xmalloc(20000);
    for (i = 0; len < 10000; i++)
        len += (size_t)sprintf(big + len, "line %zu\n", i);
    write_file(path, big, len);
    t = tail_read(path, 4096);
    ok(strlen(t) <= 4096, "the tail is at most 4 KiB (%zu)", strlen(t));
    ok(strncmp(t, "line ", 5) == 0, "the tail starts at a line start");
    ok(len >= strlen(t) && strcmp(big + len - strlen(t), t) == 0,
        "the tail is the end of the file");
    free(t);
    free(big);

    write_file(path, "ok \xff\xfe bad\0nul \xc3\xa9\n", 17);
    t = tail_read(path, 4096);
    is_str(t, "ok ?? bad?nul \xc3\xa9\n",
        "invalid UTF-8 and NUL become '?', valid UTF-8 stays");
    free(t);

    t = tail_read("/nonexistent/file", 4096);
    is_str(t, "", "a missing file gives an empty tail");
    free(t);

    is_int(supfile_exec_exit_code(-ENOENT), 127, "ENOENT reports code 127");
    is_int(supfile_exec_exit_code(-EACCES), 126, "EACCES reports code 126");
}

/* ---- generic helpers: backoff, mkdirp, rmtree, procfs -------------------- */

/* Poll cond (no loop involved) until it holds or timeout_ms passes. */
#define WAIT_FOR(cond, timeout_ms)                                             \
    do {                                                                       \
        int64_t dl_ = timeid_mono_ms() + (timeout_ms);                         \
        while (!(cond) && timeid_mono_ms() < dl_)                              \
            usleep(5000);                                                      \
    } while (0)

static void
test_backoff(void)
{
    int64_t cur = 0, wait = -1, lo = INT64_MAX, hi = 0;
    int i;

    cur = backoff_next(cur, 100, 5000, &wait);
    is_int(cur, 100, "the first backoff is the minimum");
    ok(wait >= 50 && wait <= 100, "... waiting half to all of it (%lld)",
        (long long)wait);
    cur = backoff_next(cur, 100, 5000, &wait);
    is_int(cur, 200, "then it doubles");
    for (i = 0; i < 10; i++)
        cur = backoff_next(cur, 100, 5000, &wait);
    is_int(cur, 5000, "up to the maximum");
    for (i = 0; i < 200; i++) {
        backoff_next(5000, 100, 5000, &wait);
        lo = wait < lo ? wait : lo;
        hi = wait > hi ? wait : hi;
    }
    ok(lo >= 2500 && hi <= 5000 && lo < hi,
        "waits are jittered within [max/2, max] (%lld..%lld)", (long long)lo,
        (long long)hi);
}

static void
test_mkdirp_rmtree(void)
{
    char top[PATH_MAX + 32], path[PATH_MAX + 64], keep[PATH_MAX + 32];
    struct stat st;
    volatile int cancel = 1;

    snprintf(top, sizeof(top), "%s/tree", tmpdir);
    snprintf(path, sizeof(path), "%s/a/b/c", top);
    is_int(mkdirp(path, 0755), 0, "mkdirp makes every missing parent");
    ok(stat(path, &st) == 0 && S_ISDIR(st.st_mode), "... down to a/b/c");
    is_int(mkdirp(path, 0755), 0, "mkdirp of an existing directory is fine");
    snprintf(path, sizeof(path), "%s/a/file", top);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/a/file/d", top);
    is_int(mkdirp(path, 0755), -ENOTDIR, "a file in the way is -ENOTDIR");

    /* A link in the tree to a directory outside it: removed, not
     * followed. */
    snprintf(keep, sizeof(keep), "%s/keep", tmpdir);
    mkdirp(keep, 0755);
    snprintf(path, sizeof(path), "%s/keep/precious", tmpdir);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/a/b/link", top);
    if (symlink(keep, path) < 0)
        diag("symlink: %s", strerror(errno));
    is_int(rmtree_at(AT_FDCWD, top, &cancel), -ECANCELED,
        "rmtree_at stops at once when cancelled");
    ok(access(top, F_OK) == 0, "... leaving the tree");
    cancel = 0;
    is_int(rmtree_at(AT_FDCWD, top, &cancel), 0, "rmtree_at removes a tree");
    ok(access(top, F_OK) < 0 && errno == ENOENT, "... all of it");
    snprintf(path, sizeof(path), "%s/keep/precious", tmpdir);
    ok(access(path, F_OK) == 0, "... but not what a link in it points to");
    is_int(rmtree_at(AT_FDCWD, top, NULL), 0, "a missing tree is no error");
}

static int
test_procfs_find_cb(int pid, void *arg)
{
    return pid == *(int *)arg;
}

static void
test_procfs_handler(int sig)
{
    (void)sig;
}

static void
test_procfs(void)
{
    struct procfs_stat st;
    struct sigaction sa, old;
    char exe[PATH_MAX + 1];
    const char *env[] = { "LOCKSTEP_JOB_ID=1", NULL };
    int self = (int)getpid(), fd;
    pid_t child;

    is_int(procfs_stat(self, &st), 0, "procfs_stat reads our own stat");
    ok(st.state == 'R' && st.ppid == (int)getppid() &&
            st.pgrp == (int)getpgrp() && st.start_time > 0,
        "... state R, our parent, our group, a start time");
    ok(procfs_start_time(self) == st.start_time,
        "procfs_start_time is its field 22");
    is_int(procfs_stat(0, &st), -ESRCH, "pid 0 is no process");
    ok(procfs_state(INT32_MAX) == '\0' && procfs_start_time(INT32_MAX) == 0,
        "a missing process has no state and no start time");
    is_int(procfs_each(0, test_procfs_find_cb, &self), 1,
        "procfs_each over every process finds us");
    is_int(procfs_each(self, test_procfs_find_cb, &self), 1,
        "procfs_each over our threads finds the main one");
    fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    is_int(procfs_each_fd(test_procfs_find_cb, &fd), 1,
        "procfs_each_fd finds a descriptor we opened");
    close(fd);
    ok(procfs_exe(0, exe, sizeof(exe)) > 0 && strstr(exe, "test_agent") != NULL,
        "procfs_exe(0) names our executable (%s)", exe);

    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = test_procfs_handler;
    sigaction(SIGUSR2, NULL, &old);
    ok(!procfs_catches(self, SIGUSR2), "no handler: SIGUSR2 not caught");
    sigaction(SIGUSR2, &sa, NULL);
    ok(procfs_catches(self, SIGUSR2), "a handler: SIGUSR2 caught");
    sigaction(SIGUSR2, &old, NULL);

    child = fork();
    if (child == 0) {
        setpgid(0, 0);
        execlp("sleep", "sleep", "30", (char *)NULL);
        _exit(127);
    }
    setpgid(child, child);
    /* Until the exec, the child runs test_agent. */
    WAIT_FOR(procfs_runs((int)child, "sleep", "30"), 5000);
    ok(procfs_runs((int)child, "sleep", "30"),
        "procfs_runs knows a process by executable and first argument");
    ok(!procfs_runs((int)child, "sleep", "3") &&
            !procfs_runs((int)child, "slee", "30"),
        "... both of them, whole");
    ok(procfs_group_is((int)child, procfs_start_time((int)child), env),
        "a live group leader with its start time is its group");
    ok(procfs_group_is((int)child, 0, env),
        "... as it is when no start time was recorded");
    ok(!procfs_group_is((int)child, procfs_start_time((int)child) + 1, env),
        "a leader with another start time is not (a reused pid)");
    kill((int)child, SIGKILL);
    WAIT_FOR(procfs_state((int)child) == 'Z', 5000);
    ok(procfs_state((int)child) == 'Z' && procfs_start_time((int)child) == 0 &&
            !procfs_runs((int)child, "sleep", "30"),
        "a zombie has no start time and runs nothing");
    waitpid(child, NULL, 0);
    ok(!procfs_group_is((int)child, 0, env),
        "a group with no process left is not one to kill");
}

/* ---- jobs on a loop, through real supervisors ---------------------------- */

static int changes;

static void
count_change_cb(void *arg)
{
    (void)arg;
    changes++;
}

/* Whether job id (attempt 1) is held and each of its ranks is running
 * (running) or has ended (!running). */
static bool
job_ranks_are(struct proc_table *pt, int64_t id, bool running)
{
    struct proc_job *job = find_job(pt, id, 1);

    if (job == NULL)
        return false;
    for (size_t i = 0; i < job->nranks; i++) {
        enum proto_rank_state s = job->ranks[i].state;
        bool live = s == PROTO_RANK_RUNNING || s == PROTO_RANK_PENDING;

        if (running ? s != PROTO_RANK_RUNNING : live)
            return false;
    }
    return true;
}

#define job_ended(pt, id) job_ranks_are((pt), (id), false)
#define job_running(pt, id) job_ranks_are((pt), (id), true)

/* A status report of pt's jobs in rep (released by the caller), as the
 * agent would send it; its sequence number. */
static uint64_t
report_fill(struct proc_table *pt, struct proto_node_report *rep)
{
    memset(rep, 0, sizeof(*rep));
    return proc_fill_report(pt, rep);
}

/* Play the scheduler accepting a status report: what the agent holds is
 * reported and acknowledged, so finished jobs may be released. Returns
 * true so it can sit in a RUN_UNTIL condition. */
static bool
ack_reports(struct proc_table *pt)
{
    struct proto_node_report rep;
    uint64_t seq;

    seq = report_fill(pt, &rep);
    proto_node_report_release(&rep);
    proc_status_ok(pt, seq, timeid_mono_ms(), 60000);
    return true;
}

/* Reap zombies of group pgid (we are their subreaper) and tell whether
 * the group is gone. */
static bool
group_gone(pid_t pgid)
{
    while (waitpid(-pgid, NULL, WNOHANG) > 0)
        ;
    return kill(-pgid, 0) < 0 && errno == ESRCH;
}

static bool
wait_group_gone(pid_t pgid, int64_t timeout_ms)
{
    int64_t t0 = timeid_mono_ms();

    while (!group_gone(pgid) && timeid_mono_ms() - t0 < timeout_ms)
        usleep(10000);
    return group_gone(pgid);
}

static void
test_loop(void)
{
    struct tagent t;
    struct proc_table *pt;
    struct proc_job *job;
    struct proto_launch l1, l2, l3;
    struct proto_work w, empty = { 0 };
    struct proto_node_report rep;
    uint64_t seq;
    const char *argv1[] = { "sh", "-c", "sleep 1000 & echo hi; exit 3", NULL };
    const char *argv2[] = { "sh", "-c",
        "trap '' TERM; echo $LOCKSTEP_JOB_ID $RANK; sleep 1000 & wait", NULL };
    const char *argv3[] = { "/nonexistent/foo", NULL };
    char path[PATH_MAX + 64], *text, *dir;
    int64_t t0, lease = 0;
    pid_t pid, pid2;

    tagent_init(&t, "loop");
    pt = tagent_start(&t);
    ok(pt != NULL, "proc table created");
    if (pt == NULL)
        return;

    /* 1. a rank that exits 3, leaving a background child behind */
    launch_init(&l1, 7, 1, argv1, 1);
    work_one(&w, &l1);
    is_int(proc_apply(pt, &w), 1, "the launch starts");
    is_int(proc_apply(pt, &w), 0, "applying it again starts nothing");
    job = find_job(pt, 7, 1);
    ok(job != NULL && job->sv_pid > 0, "its supervisor runs (pid %d)",
        job != NULL ? job->sv_pid : 0);
    dir = xasprintf("%s/loop/state/jobs/7.1", tmpdir);
    snprintf(path, sizeof(path), "%s/spec.json", dir);
    ok(access(path, F_OK) == 0, "spec.json is in state_dir/jobs/7.1");
    snprintf(path, sizeof(path), "%s/lease", dir);
    ok(access(path, F_OK) == 0, "... and the lease");
    RUN_UNTIL(&t.loop, job_ended(pt, 7), 10000);
    job = find_job(pt, 7, 1);
    ok(job != NULL && job->ranks[0].state == PROTO_RANK_EXITED,
        "rank 0 exited");
    pid = job != NULL ? job->ranks[0].pid : 0;
    if (job != NULL) {
        is_int(job->ranks[0].exit_code, 3, "exit code 3 recorded");
        is_int(job->ranks[0].signal, 0, "no signal");
        ok(pid > 0, "with the rank's pid (%d)", pid);
    }
    ok(changes > 0, "the change callback ran");
    snprintf(path, sizeof(path), "%s/loop/logs/7/1/rank-0.out", tmpdir);
    text = read_all(path);
    is_str(text, "hi\n", "stdout went to logs/7/1/rank-0.out");
    free(text);
    ok(wait_group_gone(pid, 5000), "no process of the rank's group "
                                   "survives (kill(-pgid, 0) is ESRCH)");
    RUN_UNTIL(&t.loop, job->done && job->sv_gone, 5000);
    ok(job->done && job->sv_gone, "the supervisor is done and gone");

    seq = report_fill(pt, &rep);
    ok(rep.njobs == 1 && rep.jobs[0].job == 7 && rep.jobs[0].nranks == 1 &&
            rep.jobs[0].ranks[0].state == PROTO_RANK_EXITED &&
            rep.jobs[0].ranks[0].exit_code == 3 &&
            rep.jobs[0].ranks[0].step == -1 &&
            rep.jobs[0].ranks[0].progress == PROTO_PROGRESS_OUTPUT,
        "the report lists the finished job while it is desired");
    proto_node_report_release(&rep);

    /* 2. the job leaves the desired state: kept until the scheduler has
     * accepted a report carrying its final rank states, then released,
     * never restarted */
    proc_apply(pt, &empty);
    RUN_UNTIL(&t.loop, find_job(pt, 7, 1) == NULL, 300);
    ok(find_job(pt, 7, 1) != NULL, "a finished job is held until the "
                                   "scheduler accepted its final states");
    proc_status_ok(pt, seq, timeid_mono_ms(), 60000);
    RUN_UNTIL(&t.loop, find_job(pt, 7, 1) == NULL, 2000);
    ok(find_job(pt, 7, 1) == NULL, "a finished job absent from the desired "
                                   "state is released");
    ok(access(dir, F_OK) < 0, "its directory is removed");
    free(dir);
    is_int(proc_apply(pt, &w), 0, "a released job is never started again");
    ok(find_job(pt, 7, 1) == NULL, "... and not held");

    /* 3. a command that does not exist */
    launch_init(&l3, 8, 1, argv3, 1);
    launch(&t, &l3);
    RUN_UNTIL(&t.loop, job_ended(pt, 8), 5000);
    job = find_job(pt, 8, 1);
    ok(job != NULL && job->ranks[0].state == PROTO_RANK_EXITED &&
            job->ranks[0].exit_code == 127,
        "a missing command is reported as exit code 127");
    if (job != NULL)
        is_str(job->ranks[0].stderr_tail,
            "cannot execute '/nonexistent/foo': No such file or directory\n",
            "... with a clear stderr tail");
    proc_apply(pt, &empty);
    RUN_UNTIL(&t.loop, ack_reports(pt) && find_job(pt, 8, 1) == NULL, 2000);
    ok(find_job(pt, 8, 1) == NULL, "... and released");

    /* 3b. a launch that cannot start at all: no supervisor, and a record
     * a restarted agent reports the same way */
    proto_launch_release(&l3);
    launch_init(&l3, 6, 1, argv3, 1);
    free(l3.workdir);
    l3.workdir = xstrdup("/nonexistent-dir");
    job = launch(&t, &l3);
    ok(job != NULL && job->done && job->sv_pid == 0 &&
            job->ranks[0].state == PROTO_RANK_EXITED &&
            job->ranks[0].exit_code == 127,
        "a missing working directory: "
        "exit code 127 at once, no supervisor");
    if (job != NULL)
        is_str(job->ranks[0].stderr_tail,
            "cannot change to working "
            "directory '/nonexistent-dir': No such file or directory",
            "... with the reason");
    snprintf(path, sizeof(path), "%s/loop/logs/6/1/rank-0.err", tmpdir);
    text = read_all(path);
    ok(strstr(text, "/nonexistent-dir") != NULL, "... also in its stderr "
                                                 "file");
    free(text);
    tagent_stop(&t);
    pt = tagent_start(&t);
    job = pt != NULL ? find_job(pt, 6, 1) : NULL;
    ok(job != NULL && job->done && job->ranks[0].exit_code == 127,
        "a restarted agent reports it the same");
    if (pt == NULL)
        return;
    proc_apply(pt, &empty);
    RUN_UNTIL(&t.loop, find_job(pt, 6, 1) == NULL, 2000);
    ok(find_job(pt, 6, 1) == NULL, "... and releases it");

    /* 4. teardown of ranks that ignore SIGTERM: SIGKILL after the grace */
    launch_init(&l2, 9, 1, argv2, 2);
    launch(&t, &l2);
    RUN_UNTIL(&t.loop, job_running(pt, 9), 5000);
    job = find_job(pt, 9, 1);
    pid = job != NULL ? job->ranks[0].pid : 0;
    pid2 = job != NULL ? job->ranks[1].pid : 0;
    ok(pid > 0 && getpgid(pid) == pid && getpgid(pid2) == pid2,
        "each rank leads its own process group");
    ok(job != NULL && getsid(pid) == job->sv_pid &&
            getsid(job->sv_pid) == job->sv_pid,
        "in the session of its supervisor, not the agent's");

    /* Renewal: the lease moves to the send time plus the grant. */
    t0 = timeid_mono_ms();
    proc_status_ok(pt, 1, t0, 7777);
    snprintf(path, sizeof(path), "%s/loop/state/jobs/9.1", tmpdir);
    ok(supfile_lease_read(path, &lease) == 0 && lease == t0 + 7777,
        "a status accepted renews the lease to sent + lease_ms");
    is_int(proc_lease_ms(pt), 7777, "the grant is remembered");
    ok(proc_has_live_supervisors(pt), "a supervisor holds a lease");
    proc_status_ok(pt, 2, timeid_mono_ms(), 60000);

    snprintf(path, sizeof(path), "%s/loop/logs/9/1/rank-1.out", tmpdir);
    t0 = timeid_mono_ms();
    for (;;) {
        text = read_all(path);
        if (strcmp(text, "9 1\n") == 0 || timeid_mono_ms() - t0 > 5000)
            break;
        free(text);
        uv_run(&t.loop, UV_RUN_NOWAIT);
        usleep(10000);
    }
    is_str(text, "9 1\n", "rank 1 sees LOCKSTEP_JOB_ID=9 RANK=1");
    free(text);
    /* Torn down while still desired, so it stays to be looked at. */
    t0 = timeid_mono_ms();
    proc_job_teardown(find_job(pt, 9, 1));
    snprintf(path, sizeof(path), "%s/loop/state/jobs/9.1/stop", tmpdir);
    ok(access(path, F_OK) == 0, "teardown creates the stop file");
    RUN_UNTIL(&t.loop, job_ended(pt, 9), 5000);
    ok(job_ended(pt, 9), "the ranks ended");
    ok(timeid_mono_ms() - t0 >= 250, "not before the grace period (%lld ms)",
        (long long)(timeid_mono_ms() - t0));
    job = find_job(pt, 9, 1);
    ok(job != NULL && job->ranks[0].signal == SIGKILL &&
            job->ranks[1].signal == SIGKILL && job->ranks[0].exit_code == -1 &&
            !job->ranks[0].fenced,
        "both ranks were killed by SIGKILL (exit_code -1), not fenced");
    proc_apply(pt, &empty);
    RUN_UNTIL(&t.loop, find_job(pt, 9, 1) == NULL, 2000);
    ok(find_job(pt, 9, 1) == NULL, "the torn-down job is released");
    ok(wait_group_gone(pid, 5000) && wait_group_gone(pid2, 5000),
        "no process of either rank's group survives the teardown");

    tagent_release(&t);
    proto_launch_release(&l1);
    proto_launch_release(&l2);
    proto_launch_release(&l3);
}

/* Whether process pid's command name is name. */
static bool
comm_is(pid_t pid, const char *name)
{
    char path[64], comm[64] = "";
    FILE *f;

    snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
    if ((f = fopen(path, "r")) == NULL)
        return false;
    if (fgets(comm, sizeof(comm), f) == NULL)
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    return strcmp(comm, name) == 0;
}

/* An agent that goes away and a new one: re-adoption in its three forms,
 * and a supervisor killed under a running agent. */
static void
test_adopt(void)
{
    struct tagent t;
    struct proc_table *pt;
    struct proc_job *job;
    struct proto_launch l1, l2, l3, l4;
    struct proto_work w, empty = { 0 };
    struct proto_node_report rep;
    struct proto_launch all[3];
    const char *sleeper[] = { "sleep", "1000", NULL };
    const char *exit3[] = { "sh", "-c", "exit 3", NULL };
    const char *family[] = { "sh", "-c", "sleep 1000 & exec sleep 1000", NULL };
    pid_t pid, pid2, sv1, sv3, sv4;

    if ((pt = agent_up(&t, "adopt")) == NULL)
        return;
    launch_init(&l1, 10, 1, sleeper, 1);
    launch_init(&l2, 11, 1, exit3, 1);
    launch_init(&l3, 12, 1, family, 1);
    memcpy(&all[0], &l1, sizeof(l1));
    memcpy(&all[1], &l2, sizeof(l2));
    memcpy(&all[2], &l3, sizeof(l3));
    memset(&w, 0, sizeof(w));
    w.gen = 1;
    w.jobs = all;
    w.njobs = 3;
    is_int(proc_apply(pt, &w), 3, "three jobs start");
    RUN_UNTIL(&t.loop,
        job_running(pt, 10) && job_ended(pt, 11) && job_running(pt, 12) &&
            find_job(pt, 11, 1)->done,
        5000);
    pid = find_job(pt, 10, 1)->ranks[0].pid;
    pid2 = find_job(pt, 12, 1)->ranks[0].pid;
    sv1 = find_job(pt, 10, 1)->sv_pid;
    sv3 = find_job(pt, 12, 1)->sv_pid;
    ok(pid > 0 && pid2 > 0 && find_job(pt, 11, 1)->ranks[0].exit_code == 3,
        "two ranks run, one exited 3");

    /* The agent goes; supervisors and ranks stay. Then job 12's supervisor
     * dies (OOM, kill -9) while no agent runs, and so does its rank's
     * leader, but not the rank's background child. */
    tagent_stop(&t);
    ok(kill(pid, 0) == 0 && kill(sv1, 0) == 0,
        "supervisor and rank outlive the agent");
    kill(sv3, SIGKILL);
    waitpid(sv3, NULL, 0);
    ok(kill(pid2, 0) == 0, "a rank outlives its killed supervisor");
    /* Its shell forks the background child before it execs sleep: wait
     * for the exec, so the child surely exists (a busy machine ran the
     * kill below first). */
    for (int i = 0; i < 500 && !comm_is(pid2, "sleep"); i++)
        usleep(10000);
    kill(pid2, SIGKILL);
    waitpid(pid2, NULL, 0); /* we are the subreaper it fell to */
    ok(kill(-pid2, 0) == 0, "its leader is gone, its group is not");

    pt = tagent_start(&t);
    ok(pt != NULL, "a new agent starts");
    if (pt == NULL)
        return;
    job = find_job(pt, 10, 1);
    ok(job != NULL && job->sv_adopted && job->sv_pid == sv1 &&
            job->ranks[0].state == PROTO_RANK_RUNNING &&
            job->ranks[0].pid == pid && job->desired,
        "a live supervisor is adopted with its running rank");
    job = find_job(pt, 11, 1);
    ok(job != NULL && job->done && job->ranks[0].state == PROTO_RANK_EXITED &&
            job->ranks[0].exit_code == 3,
        "a finished supervisor's exit code survives the agent");
    job = find_job(pt, 12, 1);
    ok(job != NULL && job->done && job->ranks[0].state == PROTO_RANK_LOST,
        "the rank of a supervisor that died unfinished is lost");
    ok(wait_group_gone(pid2, 5000),
        "... and its process group killed "
        "(identified by its members' LOCKSTEP_JOB_ID and attempt)");

    report_fill(pt, &rep);
    is_int(rep.njobs, 3, "the register report lists all three");
    proto_node_report_release(&rep);

    /* The scheduler keeps job 10 only. */
    launch(&t, &l1);
    RUN_UNTIL(&t.loop,
        ack_reports(pt) && find_job(pt, 11, 1) == NULL &&
            find_job(pt, 12, 1) == NULL,
        3000);
    ok(find_job(pt, 11, 1) == NULL && find_job(pt, 12, 1) == NULL,
        "the finished ones are released");

    /* 2. a supervisor killed under a running agent: its ranks are lost and
     * killed. Job 13 is our child. */
    launch_init(&l4, 13, 1,
        (const char *[]){ "sh", "-c", "sleep 1000 & sleep 1000", NULL }, 1);
    memcpy(&all[0], &l1, sizeof(l1));
    memcpy(&all[1], &l4, sizeof(l4));
    w.jobs = all;
    w.njobs = 2;
    proc_apply(pt, &w);
    RUN_UNTIL(&t.loop, job_running(pt, 13), 5000);
    job = find_job(pt, 13, 1);
    sv4 = job->sv_pid;
    pid2 = job->ranks[0].pid;
    kill(sv4, SIGKILL);
    RUN_UNTIL(&t.loop, job_ended(pt, 13), 5000);
    ok(job->ranks[0].state == PROTO_RANK_LOST && job->sv_gone,
        "kill -9 of a supervisor: the agent reports its rank lost");
    ok(wait_group_gone(pid2, 5000), "... and kills the rank's group");

    /* 3. the adopted one is torn down when the scheduler drops it */
    proc_apply(pt, &empty);
    RUN_UNTIL(&t.loop,
        (waitpid(sv1, NULL, WNOHANG), ack_reports(pt) &&
                                          find_job(pt, 10, 1) == NULL &&
                                          find_job(pt, 13, 1) == NULL),
        5000);
    ok(find_job(pt, 10, 1) == NULL,
        "the adopted job is torn down and "
        "released when the scheduler no longer wants it");
    ok(wait_group_gone(pid, 5000), "its rank is gone");
    waitpid(sv1, NULL, 0);

    tagent_release(&t);
    proto_launch_release(&l1);
    proto_launch_release(&l2);
    proto_launch_release(&l3);
    proto_launch_release(&l4);
}

/* Progress by step and by output, committed steps, idle time. */
static void
test_progress(void)
{
    struct tagent t;
    struct proc_table *pt;
    struct proc_job *job;
    struct proto_launch l;
    struct proto_node_report rep;
    struct proto_rank_status *rs;
    const char *argv[] = { "sh", "-c",
        "case $RANK in "
        "0) printf '{\"step\": 5, \"time_ms\": %s, \"attempt\": 1, "
        "\"pid\": %d}' $(date +%s%3N) $$ >$LOCKSTEP_PROGRESS_FILE.tmp && "
        "mv $LOCKSTEP_PROGRESS_FILE.tmp $LOCKSTEP_PROGRESS_FILE; "
        "printf '7 1\\n3 1\\n9 2\\n7 1\\nbad\\n' >>$LOCKSTEP_COMMIT_FILE;; "
        "1) echo working;; "
        "3) printf '{\"step\": 9, \"time_ms\": 1, \"attempt\": 4}' "
        ">$LOCKSTEP_PROGRESS_FILE;; "
        "esac; exec sleep 1000",
        NULL };
    char *path, buf[128];
    int64_t t0, *steps;
    size_t n;

    steps = proc_commit_parse("5 1\n3 1\n5 1\n8 2\nx 1\n4 1 extra\n12 1", 1, 64,
        &n);
    ok(n == 3 && steps[0] == 3 && steps[1] == 5 && steps[2] == 12,
        "commit lines: distinct steps of the attempt, ascending");
    free(steps);
    steps = proc_commit_parse("1 1\n2 1\n3 1\n", 1, 2, &n);
    ok(n == 2 && steps[0] == 2 && steps[1] == 3, "... the newest only");
    free(steps);
    /* Found by fuzzing (fuzz/corpus/progress/regress-huge-commit-step): a
     * step past 2^53 went into the report, and the scheduler refused the
     * node's whole report for it. */
    steps = proc_commit_parse("20 1\n1088888888888888888 1\n"
                              "9007199254740992 1\n9007199254740993 1\n",
        1, 64, &n);
    ok(n == 2 && steps[0] == 20 && steps[1] == 9007199254740992LL,
        "... up to 2^53, what a JSON number holds exactly");
    free(steps);

    if ((pt = agent_up(&t, "progress")) == NULL)
        return;
    launch_init(&l, 20, 1, argv, 4);
    work_one(&t.work, &l);
    t0 = timeid_mono_ms();
    proc_apply(pt, &t.work);
    job = find_job(pt, 20, 1);
    path = xasprintf("%s/progress/state/jobs/20.1/sdk/rank-0.ckpt", tmpdir);
    RUN_UNTIL(&t.loop, job_running(pt, 20) && access(path, F_OK) == 0, 5000);
    free(path);
    path = xasprintf("%s/progress/state/jobs/20.1/sdk/rank-0.progress", tmpdir);
    is_str(job->ranks[0].progress_path, path,
        "LOCKSTEP_PROGRESS_FILE is in the attempt's sdk/ directory");
    free(path);
    usleep(300000);
    uv_run(&t.loop, UV_RUN_NOWAIT);

    report_fill(pt, &rep);
    rs = rep.jobs[0].ranks;
    ok(rs[0].step == 5 && rs[0].progress == PROTO_PROGRESS_STEP,
        "rank 0 reports step 5 (progress: step)");
    ok(rs[0].idle_ms >= 250 && rs[0].idle_ms < 5000,
        "... idle since it wrote it (%lld ms)", (long long)rs[0].idle_ms);
    ok(rs[0].nckpt_steps == 2 && rs[0].ckpt_steps[0] == 3 &&
            rs[0].ckpt_steps[1] == 7,
        "... committed steps 3 and 7 (not "
        "attempt 2's 9)");
    ok(rs[1].step == -1 && rs[1].progress == PROTO_PROGRESS_OUTPUT &&
            rs[1].idle_ms >= 250,
        "rank 1 progresses by output (idle %lld)", (long long)rs[1].idle_ms);
    ok(rs[2].step == -1 && rs[2].progress == PROTO_PROGRESS_NONE &&
            rs[2].idle_ms >= 250 && rs[2].idle_ms <= timeid_mono_ms() - t0 + 20,
        "rank 2 has neither: idle since its start (%lld ms)",
        (long long)rs[2].idle_ms);
    ok(rs[3].step == -1 && rs[3].progress == PROTO_PROGRESS_NONE,
        "rank 3's record of another attempt is ignored");
    ok(job->ranks[0].have_progress &&
            job->ranks[0].sdk_pid == job->ranks[0].pid,
        "the progress file names the SDK's process");
    proto_node_report_release(&rep);

    /* The rank reaches step 6: idle starts again. */
    path = xasprintf("%s.tmp", job->ranks[0].progress_path);
    snprintf(buf, sizeof(buf),
        "{\"step\": 6, \"time_ms\": %lld, "
        "\"attempt\": 1}",
        (long long)timeid_now_ms());
    write_file(path, buf, strlen(buf));
    rename(path, job->ranks[0].progress_path);
    free(path);
    report_fill(pt, &rep);
    rs = rep.jobs[0].ranks;
    ok(rs[0].step == 6 && rs[0].idle_ms < 200,
        "a new step resets idle "
        "(%lld ms)",
        (long long)rs[0].idle_ms);
    proto_node_report_release(&rep);

    proc_job_teardown(job);
    RUN_UNTIL(&t.loop, job_ended(pt, 20) && job->done, 5000);
    ok(job_ended(pt, 20), "torn down");
    tagent_release(&t);
    proto_launch_release(&l);
}

static void
mkstep(const char *ck, const char *name, bool complete)
{
    char path[PATH_MAX + 64];

    snprintf(path, sizeof(path), "%s/%s", ck, name);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/data", ck, name);
    write_file(path, "x", 1);
    snprintf(path, sizeof(path), "%s/%s/sub", ck, name);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/%s/sub/more", ck, name);
    write_file(path, "y", 1);
    if (complete) {
        snprintf(path, sizeof(path), "%s/%s/COMPLETE", ck, name);
        write_file(path, "", 0);
    }
}

static bool
exists(const char *ck, const char *name)
{
    char path[PATH_MAX + 64];
    struct stat st;

    snprintf(path, sizeof(path), "%s/%s", ck, name);
    return lstat(path, &st) == 0;
}

/* Convention checkpoints: scan, report, prune. */
static void
test_ckpt(void)
{
    struct tagent t;
    struct proc_table *pt;
    struct proc_job *job;
    struct proto_launch l;
    struct proto_node_report rep;
    const char *argv[] = { "sleep", "1000", NULL };
    char *ck = xasprintf("%s/ck", tmpdir), path[PATH_MAX + 64];
    const char *names[] = { "step-1", "step-2", "step-3", "step-4", "step-5",
        NULL };
    size_t i;

    /* An earlier run's checkpoints, there before the attempt starts. */
    mkdir(ck, 0755);
    mkstep(ck, "step-50", true);
    mkstep(ck, "step-60", true);

    if ((pt = agent_up(&t, "ckpt")) == NULL)
        return;
    launch_init(&l, 30, 1, argv, 1);
    free(l.checkpoint_dir);
    l.checkpoint_dir = xstrdup(ck);
    free(l.resume_from);
    l.resume_from = xasprintf("%s/step-1", ck);
    l.resume_step = 1;
    l.scan_checkpoints = true;
    l.keep_checkpoints = 2;
    job = launch(&t, &l);
    /* The start queued the baseline scan before the ranks were spawned. */
    RUN_UNTIL(&t.loop, job->ckpt_base_taken && job->ckpt_op == NULL, 5000);
    ok(job->ckpt_base_taken && job->nckpt_base == 2 &&
            job->ckpt_base[0].step == 50 && job->ckpt_base[1].step == 60,
        "the baseline holds the 2 checkpoints there at the start (%zu)",
        job->nckpt_base);
    snprintf(path, sizeof(path), "%s/ckpt-base", job->dir);
    ok(access(path, F_OK) == 0, "... kept in the attempt directory");
    {
        /* What a restarted agent reads back when it re-adopts it. */
        struct proc_job *again = xcalloc(1, sizeof(*again));

        again->job = job->job;
        again->attempt = job->attempt;
        again->dir = job->dir;
        proc_ckpt_base_load(again);
        ok(again->ckpt_base_taken && again->nckpt_base == 2 &&
                memcmp(again->ckpt_base, job->ckpt_base,
                    2 * sizeof(*job->ckpt_base)) == 0,
            "a re-adopted attempt reads the same baseline back");
        free(again->ckpt_base);
        free(again);
    }

    /* What this attempt writes. */
    for (i = 0; names[i] != NULL; i++)
        mkstep(ck, names[i], true);
    mkstep(ck, "step-6", false);
    mkstep(ck, "step-07", true);
    mkstep(ck, "junk", true);
    snprintf(path, sizeof(path), "%s/step-8", ck);
    if (symlink("step-1", path) < 0)
        diag("symlink: %s", strerror(errno));
    snprintf(path, sizeof(path), "%s/step-9", ck);
    write_file(path, "", 0);

    /* The first report starts the scan; the deletion follows it. */
    report_fill(pt, &rep);
    proto_node_report_release(&rep);
    RUN_UNTIL(&t.loop,
        job->ckpt_op == NULL && job->nckpt_complete > 0 &&
            !exists(ck, "step-3"),
        5000);
    RUN_UNTIL(&t.loop, job->ckpt_op == NULL, 5000);
    ok(!exists(ck, "step-2") && !exists(ck, "step-3"),
        "complete checkpoints older than the 2 newest are deleted");
    ok(exists(ck, "step-1"), "... but not the one resumed from");
    ok(exists(ck, "step-4") && exists(ck, "step-5"), "the 2 newest stay");
    ok(exists(ck, "step-6"), "an incomplete one stays");
    ok(exists(ck, "step-50") && exists(ck, "step-60"),
        "an earlier run's complete ones stay (never this job's to delete)");
    ok(exists(ck, "step-07") && exists(ck, "junk") && exists(ck, "step-8") &&
            exists(ck, "step-9"),
        "anything else stays (step-07, junk, a "
        "symbolic link, a file)");
    snprintf(path, sizeof(path), "%s/step-1/COMPLETE", ck);
    ok(access(path, F_OK) == 0, "the symbolic link's target is untouched");

    report_fill(pt, &rep);
    ok(rep.jobs[0].ncheckpoints == 3 && rep.jobs[0].checkpoints[0] == 1 &&
            rep.jobs[0].checkpoints[1] == 4 && rep.jobs[0].checkpoints[2] == 5,
        "the report lists complete steps 1, 4, 5 (%zu)",
        rep.jobs[0].ncheckpoints);
    proto_node_report_release(&rep);

    /* A new one completes: the next scans see it, and 4 goes. */
    mkstep(ck, "step-10", true);
    for (i = 0; i < 3; i++) {
        report_fill(pt, &rep);
        proto_node_report_release(&rep);
        RUN_UNTIL(&t.loop, job->ckpt_op == NULL, 5000);
    }
    ok(!exists(ck, "step-4") && exists(ck, "step-5") && exists(ck, "step-10") &&
            exists(ck, "step-1"),
        "with step 10 complete, step 4 goes");
    report_fill(pt, &rep);
    ok(rep.jobs[0].ncheckpoints == 3 && rep.jobs[0].checkpoints[2] == 10,
        "the report never lists the earlier run's steps 50 and 60");
    proto_node_report_release(&rep);

    /* The job writes step 50 again: a new marker, so it is its own. */
    snprintf(path, sizeof(path), "%s/step-50/COMPLETE", ck);
    unlink(path);
    write_file(path, "50\n", 3);
    for (i = 0; i < 2; i++) {
        report_fill(pt, &rep);
        proto_node_report_release(&rep);
        RUN_UNTIL(&t.loop, job->ckpt_op == NULL, 5000);
    }
    report_fill(pt, &rep);
    ok(rep.jobs[0].ncheckpoints >= 1 &&
            rep.jobs[0].checkpoints[rep.jobs[0].ncheckpoints - 1] == 50,
        "a step of the baseline written again is reported (newest %lld)",
        rep.jobs[0].ncheckpoints > 0
            ? (long long)rep.jobs[0].checkpoints[rep.jobs[0].ncheckpoints - 1]
            : -1LL);
    proto_node_report_release(&rep);
    ok(exists(ck, "step-60"), "step 60, still the earlier run's, stays");

    proc_job_teardown(job);
    RUN_UNTIL(&t.loop, job_ended(pt, 30) && job->done, 5000);
    tagent_release(&t);
    proto_launch_release(&l);
    free(ck);
}

/* Stack dumps: SIGUSR1 only to a process that catches it. */
static void
test_dump(void)
{
    struct tagent t;
    struct proc_table *pt;
    struct proc_job *job;
    struct proto_launch l;
    struct proto_node_report rep;
    uint64_t seq;
    const char *argv[] = { "sh", "-c",
        "if [ $RANK = 0 ]; then exec /usr/bin/python3 -c '"
        "import faulthandler, json, os, signal, time\n"
        "faulthandler.register(signal.SIGUSR1, all_threads=True)\n"
        "p = os.environ[\"LOCKSTEP_PROGRESS_FILE\"]\n"
        "open(p + \".tmp\", \"w\").write(json.dumps({\"step\": 1, "
        "\"attempt\": 1, \"time_ms\": 0, \"pid\": os.getpid()}))\n"
        "os.rename(p + \".tmp\", p)\n"
        "def deep_in_training():\n"
        "    time.sleep(1000)\n"
        "deep_in_training()\n'; fi; exec sleep 1000",
        NULL };
    int64_t t0;

    if ((pt = agent_up(&t, "dump")) == NULL)
        return;
    launch_init(&l, 40, 1, argv, 2);
    job = launch(&t, &l);
    RUN_UNTIL(&t.loop,
        job_running(pt, 40) && access(job->ranks[0].progress_path, F_OK) == 0,
        10000);
    usleep(200000);

    l.directives = xcalloc(1, sizeof(*l.directives));
    l.directives[0].seq = 1;
    l.directives[0].kind = PROTO_DIRECTIVE_DUMP;
    l.directives[0].step = -1;
    l.ndirectives = 1;
    report_fill(pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 0, "nothing acknowledged before");
    proto_node_report_release(&rep);
    t0 = timeid_mono_ms();
    proc_apply(pt, &t.work);
    ok(job->dump.running, "dump directive 1 starts a dump");
    RUN_UNTIL(&t.loop, job->dump.seq_served == 1, 5000);
    is_int(job->dump.seq_served, 1, "served after about 1 s (%lld ms)",
        (long long)(timeid_mono_ms() - t0));
    ok(job->ranks[0].dump != NULL &&
            strstr(job->ranks[0].dump, "most recent call first") != NULL &&
            strstr(job->ranks[0].dump, "deep_in_training") != NULL,
        "rank 0 (SDK) dumped its Python stack");
    ok(job->ranks[0].dump != NULL &&
            strstr(job->ranks[0].dump, "rank 0 pid ") != NULL &&
            strstr(job->ranks[0].dump, "kernel stack") != NULL,
        "... with its /proc state");
    ok(job->ranks[1].dump != NULL &&
            strstr(job->ranks[1].dump, "rank 1 pid ") != NULL,
        "rank 1 (no SDK) gets its /proc evidence");
    ok(kill(job->ranks[1].pid, 0) == 0 &&
            job->ranks[1].state == PROTO_RANK_RUNNING &&
            job->ranks[0].state == PROTO_RANK_RUNNING,
        "no rank died of SIGUSR1");
    ok(strlen(job->ranks[0].dump) <= PROTO_DUMP_MAX, "a dump fits "
                                                     "PROTO_DUMP_MAX");

    seq = report_fill(pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 1 &&
            rep.jobs[0].ranks[0].acks[0].seq == 1 &&
            rep.jobs[0].ranks[1].nacks == 1 &&
            rep.jobs[0].ranks[1].acks[0].seq == 1 &&
            rep.jobs[0].ranks[0].acks[0].duration_ms >= 900 &&
            rep.jobs[0].ranks[0].dump != NULL &&
            rep.jobs[0].ranks[1].dump != NULL,
        "the report acknowledges directive 1 for both ranks (%lld ms) and "
        "carries the dumps",
        rep.jobs[0].ranks[0].nacks
            ? (long long)rep.jobs[0].ranks[0].acks[0].duration_ms
            : -1LL);
    proto_node_report_release(&rep);
    proc_apply(pt, &t.work);
    ok(!job->dump.running, "the same directive again asks nothing");
    proc_status_ok(pt, seq, timeid_mono_ms(), 60000);
    report_fill(pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 1 && rep.jobs[0].ranks[0].dump == NULL,
        "once accepted, the dumps are not sent again (the ack is, while "
        "the launch lists the directive)");
    proto_node_report_release(&rep);
    free(l.directives);
    l.directives = NULL;
    l.ndirectives = 0;
    proc_apply(pt, &t.work);
    report_fill(pt, &rep);
    ok(rep.jobs[0].ranks[0].nacks == 0,
        "no ack once the launch no longer lists it");
    proto_node_report_release(&rep);

    proc_job_teardown(job);
    RUN_UNTIL(&t.loop, job_ended(pt, 40) && job->done, 5000);
    tagent_release(&t);
    proto_launch_release(&l);
}

/* ---- curlx against a tiny HTTP server on the same loop ------------------- */

/* One accepted connection: reads requests and answers each with
 * {"method":..,"path":..,"len":<body bytes>} (and "sig": the X-Sig
 * header's value, when sent), except /slow (never) and, on the Unix
 * socket, /nl/... (421 not_leader naming tsrv_leader, the TCP URL). */
struct tsrv_conn {
    union {
        uv_tcp_t tcp;
        uv_pipe_t pipe;
        uv_stream_t stream;
        uv_handle_t handle;
    } h;
    struct sbuf in;
    struct tsrv_conn *next;
};

static struct tsrv_conn *tsrv_conns;
static int tsrv_requests;
static char tsrv_leader[64];

static void
tsrv_alloc_cb(uv_handle_t *h, size_t hint, uv_buf_t *buf)
{
    (void)h;
    buf->base = xmalloc(hint);
    buf->len = hint;
}

static void
tsrv_write_cb(uv_write_t *w, int status)
{
    (void)status;
    free(w->data);
    free(w);
}

static void
tsrv_conn_close_cb(uv_handle_t *h)
{
    struct tsrv_conn *c = h->data;

    sbuf_release(&c->in);
    free(c);
}

static void
tsrv_conn_close(struct tsrv_conn *c)
{
    struct tsrv_conn **pp;

    for (pp = &tsrv_conns; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == c) {
            *pp = c->next;
            break;
        }
    }
    uv_close(&c->h.handle, tsrv_conn_close_cb);
}

/* Answer every complete request in c->in. */
static void
tsrv_serve(struct tsrv_conn *c)
{
    char method[8], path[256], sig[64], *hdr_end, *cl, *sh, *resp;
    size_t hlen, blen, total;
    uv_write_t *w;
    uv_buf_t b;
    int n;

    while ((hdr_end = strstr(c->in.buf, "\r\n\r\n")) != NULL) {
        hlen = (size_t)(hdr_end - c->in.buf) + 4;
        cl = strcasestr(c->in.buf, "\r\nContent-Length:");
        blen = cl != NULL && cl < hdr_end ? strtoul(cl + 17, NULL, 10) : 0;
        total = hlen + blen;
        if (c->in.len < total)
            return;
        if (sscanf(c->in.buf, "%7s %255s", method, path) != 2)
            return;
        tsrv_requests++;
        sig[0] = '\0';
        sh = strcasestr(c->in.buf, "\r\nX-Sig: ");
        if (sh != NULL && sh < hdr_end)
            sscanf(sh + 9, "%63[^\r]", sig);
        if (strcmp(path, "/slow") != 0) {
            char body[400];
            bool nl = c->h.handle.type == UV_NAMED_PIPE &&
                      strncmp(path, "/nl/", 4) == 0;

            if (nl)
                n = snprintf(body, sizeof(body),
                    "{\"error\":{\"code\":\"not_leader\",\"message\":\"no\"},"
                    "\"leader\":\"%s\"}",
                    tsrv_leader);
            else
                n = snprintf(body, sizeof(body),
                    "{\"method\":\"%s\",\"path\":\"%s\",\"len\":%zu%s%s%s}",
                    method, path, blen, sig[0] ? ",\"sig\":\"" : "", sig,
                    sig[0] ? "\"" : "");
            resp = xasprintf("HTTP/1.1 %s\r\nContent-Length: %d\r\n"
                             "Content-Type: application/json\r\n\r\n%s",
                nl ? "421 Misdirected Request" : "200 OK", n, body);
            w = xcalloc(1, sizeof(*w));
            w->data = resp;
            b = uv_buf_init(resp, (unsigned)strlen(resp));
            if (uv_write(w, &c->h.stream, &b, 1, tsrv_write_cb) < 0) {
                free(resp);
                free(w);
            }
        }
        sbuf_consume(&c->in, total);
    }
}

static void
tsrv_read_cb(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    struct tsrv_conn *c = s->data;

    if (nread < 0) {
        tsrv_conn_close(c);
    } else if (nread > 0) {
        sbuf_add(&c->in, buf->base, (size_t)nread);
        tsrv_serve(c);
    }
    free(buf->base);
}

static void
tsrv_connection_cb(uv_stream_t *server, int status)
{
    struct tsrv_conn *c;

    if (status < 0)
        return;
    c = xcalloc(1, sizeof(*c));
    sbuf_init(&c->in);
    if (server->type == UV_TCP)
        uv_tcp_init(server->loop, &c->h.tcp);
    else
        uv_pipe_init(server->loop, &c->h.pipe, 0);
    c->h.handle.data = c;
    c->next = tsrv_conns;
    tsrv_conns = c;
    if (uv_accept(server, &c->h.stream) == 0)
        uv_read_start(&c->h.stream, tsrv_alloc_cb, tsrv_read_cb);
    else
        tsrv_conn_close(c);
}

struct tresult {
    int calls;
    int rc;
    long status;
    char body[512];
};

static void
tresult_cb(int rc, long status, const struct sbuf *body, void *arg)
{
    struct tresult *r = arg;

    r->calls++;
    r->rc = rc;
    r->status = status;
    snprintf(r->body, sizeof(r->body), "%s", body->buf);
}

/* A signer that numbers the lines it makes. */
static int tsign_calls;

static char *
tsign_cb(const char *method, const char *path, const char *body, size_t len,
    void *arg)
{
    (void)method;
    (void)path;
    (void)body;
    (void)len;
    (void)arg;
    return xasprintf("X-Sig: %d", ++tsign_calls);
}

/* Replicas: a request that a replica that does not lead answers goes to
 * the leader it names, signed afresh (that replica may have seen the
 * nonce of the first signing). */
static void
test_curlx_follow(uv_loop_t *loop, const char *sock, const char *url)
{
    struct tresult r = { 0 };
    struct curlx *cf;
    struct err err = { 0 };
    char *list = xasprintf("%s,%s", sock, url);

    snprintf(tsrv_leader, sizeof(tsrv_leader), "%s", url);
    cf = curlx_create(loop, list, &err);
    free(list);
    ok(cf != NULL, "curlx of two replicas created (%s)", err.msg);
    if (cf == NULL)
        return;
    curlx_follow_leader(cf, NULL, NULL);
    curlx_set_signer(cf, tsign_cb, NULL);
    tsign_calls = 0;
    curlx_request(cf, "POST", "/nl/x", xstrdup("{}"), 2, "application/json",
        5000, tresult_cb, &r);
    RUN_UNTIL(loop, r.calls, 5000);
    ok(r.calls == 1 && r.rc == 0 && r.status == 200 &&
            strstr(r.body, "\"path\":\"/nl/x\"") != NULL,
        "a not_leader answer is followed to the leader: %ld %s", r.status,
        r.body);
    is_int(tsign_calls, 2, "... the request signed again for it");
    ok(strstr(r.body, "\"sig\":\"2\"") != NULL && strstr(r.body, "\"len\":2"),
        "... the leader got the second signature and the body: %s", r.body);
    curlx_destroy(cf);
}

static void
test_curlx(void)
{
    struct err err = { 0 };
    struct tresult r1 = { 0 }, r2 = { 0 }, r3 = { 0 }, r4 = { 0 }, r5 = { 0 },
                   r6 = { 0 };
    struct sockaddr_in addr;
    struct sockaddr_storage name;
    struct curlx *cx, *cu, *cr;
    struct curlx_req *req;
    char url[64], sock[PATH_MAX + 16], *big;
    int namelen = sizeof(name), calls;
    uv_loop_t loop;
    uv_tcp_t tcp;
    uv_pipe_t pipe;
    int64_t t0;

    is_int(curlx_check_server("http://127.0.0.1:7300", &err), 0,
        "an http URL is a server");
    is_int(curlx_check_server("/run/lockstep/lockstepd.sock", &err), 0,
        "an absolute path is a server");
    is_int(curlx_check_server("http://h/prefix", &err), -EINVAL,
        "a URL with a path is refused");
    is_int(curlx_check_server("h:7300", &err), -EINVAL,
        "neither URL nor absolute path is refused");

    uv_loop_init(&loop);
    uv_tcp_init(&loop, &tcp);
    uv_ip4_addr("127.0.0.1", 0, &addr);
    uv_tcp_bind(&tcp, (const struct sockaddr *)&addr, 0);
    uv_listen((uv_stream_t *)&tcp, 16, tsrv_connection_cb);
    uv_tcp_getsockname(&tcp, (struct sockaddr *)&name, &namelen);
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/",
        ntohs(((struct sockaddr_in *)&name)->sin_port));
    snprintf(sock, sizeof(sock), "%s/s.sock", tmpdir);
    uv_pipe_init(&loop, &pipe, 0);
    uv_pipe_bind(&pipe, sock);
    uv_listen((uv_stream_t *)&pipe, 16, tsrv_connection_cb);

    err_clear(&err);
    cx = curlx_create(&loop, url, &err);
    cu = curlx_create(&loop, sock, &err);
    cr = curlx_create(&loop, "http://127.0.0.1:1", &err);
    ok(cx != NULL && cu != NULL && cr != NULL, "curlx created (%s)", err.msg);
    if (cx == NULL || cu == NULL || cr == NULL)
        return;
    curlx_set_header(cx, "Authorization: Agent n1:00");

    ok(curlx_request(cx, "GET", "/v1/ping", NULL, 0, NULL, 5000, tresult_cb,
           &r1) != NULL,
        "a GET starts");
    is_int(r1.calls, 0, "the callback is never called from the request");
    big = xmalloc(3000);
    memset(big, 'x', 3000);
    t0 = timeid_mono_ms();
    curlx_request(cx, "POST", "/v1/agent/logs?x=1", big, 3000,
        "application/octet-stream", 5000, tresult_cb, &r2);
    curlx_request(cu, "POST", "/v1/agent/status", xstrdup("{}"), 2,
        "application/json", 5000, tresult_cb, &r3);
    curlx_request(cr, "GET", "/v1/ping", NULL, 0, NULL, 5000, tresult_cb, &r4);
    RUN_UNTIL(&loop, r1.calls && r2.calls && r3.calls && r4.calls, 5000);

    ok(r1.calls == 1 && r1.rc == 0 && r1.status == 200,
        "GET over TCP: HTTP 200 (rc %d)", r1.rc);
    is_str(r1.body, "{\"method\":\"GET\",\"path\":\"/v1/ping\",\"len\":0}",
        "... with the body");
    ok(r2.rc == 0 && r2.status == 200 && strstr(r2.body, "\"len\":3000"),
        "POST of 3000 bytes arrives whole: %s", r2.body);
    ok(timeid_mono_ms() - t0 < 900, "... without waiting for 100-continue");
    ok(r3.rc == 0 && r3.status == 200 &&
            strstr(r3.body, "\"path\":\"/v1/agent/status\"") != NULL,
        "POST over the Unix socket: %s", r3.body);
    is_int(r4.rc, -ECONNREFUSED, "a closed port gives -ECONNREFUSED");
    /* Two more requests (6 so far): one not_leader, one followed. */
    test_curlx_follow(&loop, sock, url);

    /* cancel: the callback comes later with -ECANCELED */
    req = curlx_request(cx, "GET", "/slow", NULL, 0, NULL, 30000, tresult_cb,
        &r5);
    RUN_UNTIL(&loop, tsrv_requests >= 6, 2000);
    curlx_cancel(req);
    is_int(r5.calls, 0, "cancel does not call back at once");
    RUN_UNTIL(&loop, r5.calls, 2000);
    ok(r5.calls == 1 && r5.rc == -ECANCELED, "a cancelled request ends "
                                             "with -ECANCELED");

    /* destroy with a request in flight: no callback, handles closed */
    curlx_request(cu, "GET", "/slow", NULL, 0, NULL, 30000, tresult_cb, &r6);
    RUN_UNTIL(&loop, tsrv_requests >= 7, 2000);
    calls = r6.calls;
    curlx_destroy(cx);
    curlx_destroy(cu);
    curlx_destroy(cr);
    while (tsrv_conns != NULL)
        tsrv_conn_close(tsrv_conns);
    uv_close((uv_handle_t *)&tcp, NULL);
    uv_close((uv_handle_t *)&pipe, NULL);
    uv_run(&loop, UV_RUN_DEFAULT);
    ok(calls == 0 && r6.calls == 0,
        "destroy drops in-flight requests without calling back");
    is_int(uv_loop_close(&loop), 0, "uv_loop_close() == 0 after destroy");
}

int
main(void)
{
    plan(NO_PLAN);
    log_init("test_agent", LOG_LEVEL_INFO, LOG_MODE_PLAIN);
    /* Orphaned grandchildren of the ranks become our children, so the
     * test can reap them and check their process group is really empty
     * whatever PID 1 does. */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    tagent_on_change = count_change_cb;
    if (test_built_path(supervisor_path, sizeof(supervisor_path),
            "agent/" SUPFILE_EXE) < 0 ||
        test_tmpdir(tmpdir, sizeof(tmpdir), "test_agent") < 0)
        return 1;
    test_env();
    test_gpus();
    test_labels();
    test_tail();
    test_backoff();
    test_mkdirp_rmtree();
    test_procfs();
    test_loop();
    test_adopt();
    test_progress();
    test_ckpt();
    test_dump();
    test_curlx();
    test_rmtree(tmpdir);
    return done_testing();
}
