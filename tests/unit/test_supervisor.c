/*
 * test_supervisor.c - lockstep-supervisor in isolation: the real binary run
 * on a temporary attempt directory, watched through its status.json.
 *
 * Exit codes and signals recorded, "cannot execute" reasons, output files,
 * grandchildren (in the rank's group or escaped with setsid) never
 * surviving, the lease (renewed: ranks live; expired: every group SIGKILLed
 * within milliseconds and "fenced"), the stop file (SIGTERM, then SIGKILL
 * after kill_grace_ms for a rank that ignores SIGTERM), SIGTERM to the
 * supervisor, a bad spec, and status.json being valid JSON at every read.
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/procfs.h"
#include "agent/supervisor.h"
#include "agent/supfile.h"
#include "common/fence.h"
#include "common/timeid.h"
#include "common/xalloc.h"
#include "tests/tap.h"
#include "tests/testdir.h"

static char tmpdir[PATH_MAX];
static char supervisor[PATH_MAX + 64];
/* status.json reads that found a file but could not parse it. */
static int bad_reads;
static int good_reads;

static void
write_file(const char *path, const char *data)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

    if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
        diag("cannot write %s: %s", path, strerror(errno));
    if (fd >= 0)
        close(fd);
}

static char *
read_all(const char *path)
{
    char *text = NULL;
    size_t len;

    if (supfile_read(path, 1 << 20, &text, &len) < 0)
        return xstrdup("");
    return text;
}

/* The PATH of make_job's ranks. */
static char job_path_var[PATH_MAX + 64] = "PATH=/usr/bin:/bin";

/* A fresh attempt directory with one rank per command line (sh -c; a
 * command starting with '/' is run itself, one starting with '@' is run
 * by its bare name, looked up in PATH). */
static char *
make_job(const char *name, const char *const *cmds, int64_t grace_ms,
    int64_t lease_ms)
{
    char *dir = xasprintf("%s/%s", tmpdir, name);
    struct supfile_spec spec;
    char *env[] = { job_path_var, "LC_ALL=C", NULL };
    size_t n = 0, i;

    while (cmds[n] != NULL)
        n++;
    mkdir(dir, 0700);
    memset(&spec, 0, sizeof(spec));
    spec.job = 5;
    spec.attempt = 2;
    spec.kill_grace_ms = grace_ms;
    spec.nranks = n;
    spec.ranks = xcalloc(n, sizeof(*spec.ranks));
    for (i = 0; i < n; i++) {
        struct supfile_spec_rank *r = &spec.ranks[i];

        r->rank = (int)i;
        if (cmds[i][0] == '/' || cmds[i][0] == '@') {
            r->argv = xcalloc(2, sizeof(*r->argv));
            r->argv[0] = xstrdup(cmds[i] + (cmds[i][0] == '@'));
            r->argc = 1;
        } else {
            r->argv = xcalloc(4, sizeof(*r->argv));
            r->argv[0] = xstrdup("sh");
            r->argv[1] = xstrdup("-c");
            r->argv[2] = xstrdup(cmds[i]);
            r->argc = 3;
        }
        r->env = env;
        r->nenv = 2;
        r->cwd = tmpdir;
        r->uid = r->gid = -1;
        r->out_path = xasprintf("%s/rank-%zu.out", dir, i);
        r->err_path = xasprintf("%s/rank-%zu.err", dir, i);
    }
    if (supfile_spec_save(dir, &spec) < 0)
        diag("cannot write spec in %s", dir);
    for (i = 0; i < n; i++) {
        size_t a;

        for (a = 0; a < spec.ranks[i].argc; a++)
            free(spec.ranks[i].argv[a]);
        free(spec.ranks[i].argv);
        free(spec.ranks[i].out_path);
        free(spec.ranks[i].err_path);
    }
    free(spec.ranks);
    supfile_lease_write(dir, timeid_mono_ms() + lease_ms);
    return dir;
}

static pid_t
spawn(const char *dir)
{
    char *log = xasprintf("%s/%s", dir, SUPFILE_LOG);
    pid_t pid = fork();
    int fd;

    if (pid == 0) {
        fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        setsid();
        execl(supervisor, supervisor, dir, (char *)NULL);
        _exit(99);
    }
    free(log);
    return pid;
}

/* Read status.json into st (released first); counts good and bad reads.
 * Returns whether a status was read. */
static bool
load_status(const char *dir, struct supfile_status *st)
{
    struct err err = { 0 };
    int rc;

    supfile_status_release(st);
    rc = supfile_status_load(dir, st, &err);
    if (rc == -ENOENT)
        return false;
    if (rc < 0) {
        bad_reads++;
        diag("bad status.json: %s", err.msg);
        return false;
    }
    good_reads++;
    return true;
}

typedef bool (*status_pred)(const struct supfile_status *st);

/* Poll status.json every 2 ms until pred holds; returns the ms waited, or
 * -1 on timeout. */
static int64_t
wait_status(const char *dir, status_pred pred, int64_t timeout_ms,
    struct supfile_status *st)
{
    int64_t t0 = timeid_mono_ms();

    while (timeid_mono_ms() - t0 < timeout_ms) {
        if (load_status(dir, st) && pred(st))
            return timeid_mono_ms() - t0;
        usleep(2000);
    }
    return -1;
}

static bool
all_started(const struct supfile_status *st)
{
    size_t i;

    for (i = 0; i < st->nranks; i++) {
        if (st->ranks[i].pid <= 0 && !st->ranks[i].exited)
            return false;
    }
    return st->nranks > 0;
}

static bool
is_done(const struct supfile_status *st)
{
    return st->done;
}

static bool
is_fenced(const struct supfile_status *st)
{
    return st->fenced;
}

static bool
rank1_exited(const struct supfile_status *st)
{
    return st->nranks > 1 && st->ranks[1].exited;
}

static bool
group_gone(int pgid)
{
    return pgid > 0 && kill(-pgid, 0) < 0 && errno == ESRCH;
}

static bool
pid_gone(int pid)
{
    char state = procfs_state(pid);

    return state == '\0';
}

static int
wait_exit(pid_t pid, int64_t timeout_ms)
{
    int64_t t0 = timeid_mono_ms();
    int status;

    while (timeid_mono_ms() - t0 < timeout_ms) {
        if (waitpid(pid, &status, WNOHANG) == pid)
            return WIFEXITED(status) ? WEXITSTATUS(status)
                                     : 128 + WTERMSIG(status);
        usleep(2000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, &status, 0);
    return -1;
}

/* ---- exits --------------------------------------------------------------- */

static void
test_exits(void)
{
    const char *cmds[] = {
        "sleep 1000 & echo hi; exit 3",
        "exit 0",
        "kill -TERM $$",
        "/nonexistent/train",
        "/etc/passwd",
        "setsid sleep 1000 & echo $!; exit 0",
        NULL,
    };
    struct supfile_status st = { 0 };
    char path[PATH_MAX + 64], *text, *dir;
    int escaped, pids[8] = { 0 };
    pid_t sv;
    size_t i;

    dir = make_job("exits", cmds, 1000, 60000);
    sv = spawn(dir);
    ok(wait_status(dir, all_started, 5000, &st) >= 0,
        "status.json lists every rank started");
    for (i = 0; i < st.nranks && i < 8; i++)
        pids[i] = st.ranks[i].pid;
    ok(wait_status(dir, is_done, 10000, &st) >= 0, "the supervisor is done");
    is_int(wait_exit(sv, 5000), 0, "and exits 0");
    is_int(st.nranks, 6, "six ranks recorded");
    if (st.nranks == 6) {
        ok(st.ranks[0].exited && st.ranks[0].exit_code == 3 &&
                st.ranks[0].signal == 0,
            "rank 0: exit code 3");
        ok(st.ranks[1].exited && st.ranks[1].exit_code == 0,
            "rank 1: exit code 0");
        ok(st.ranks[2].exited && st.ranks[2].exit_code == -1 &&
                st.ranks[2].signal == SIGTERM,
            "rank 2: killed by SIGTERM (exit_code -1, signal 15)");
        is_int(st.ranks[3].exit_code, 127,
            "rank 3: a missing command "
            "exits 127");
        is_int(st.ranks[4].exit_code, 126,
            "rank 4: a file that cannot "
            "be executed exits 126");
        ok(st.ranks[0].start_ms > 0 &&
                st.ranks[0].end_ms >= st.ranks[0].start_ms,
            "start and end times recorded");
        ok(!st.fenced && !st.ranks[0].fenced, "nothing fenced");
    }
    snprintf(path, sizeof(path), "%s/rank-3.err", dir);
    text = read_all(path);
    is_str(text,
        "cannot execute '/nonexistent/train': No such file or "
        "directory\n",
        "the reason is in the rank's stderr");
    free(text);
    snprintf(path, sizeof(path), "%s/rank-4.err", dir);
    text = read_all(path);
    ok(strncmp(text, "cannot execute '/etc/passwd': ", 30) == 0,
        "... also for a permission error");
    free(text);
    snprintf(path, sizeof(path), "%s/rank-0.out", dir);
    text = read_all(path);
    is_str(text, "hi\n", "stdout goes to the rank's file");
    free(text);
    snprintf(path, sizeof(path), "%s/rank-5.out", dir);
    text = read_all(path);
    escaped = atoi(text);
    free(text);
    ok(group_gone(pids[0]), "the background child in the rank's group is "
                            "gone (kill(-pgid, 0) is ESRCH)");
    ok(escaped > 0 && pid_gone(escaped),
        "a grandchild that left the group "
        "with setsid is gone too (pid %d)",
        escaped);
    for (i = 0; i < 6; i++) {
        if (!group_gone(pids[i]))
            break;
    }
    ok(i == 6, "no rank's process group survives");
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_PID);
    text = read_all(path);
    is_int(atoi(text), sv, "supervisor.pid names the supervisor");
    free(text);
    is_int(st.pid, sv, "so does status.json");
    supfile_status_release(&st);
    free(dir);
}

/* A bare command name is looked up in the rank's PATH; when it cannot be
 * executed the reason names the PATH searched, or the file found. */
static void
test_exec_path(void)
{
    const char *cmds[] = { "@no-such-tool-t", "@sh", "@passwd-t", NULL };
    struct supfile_status st = { 0 };
    char path[PATH_MAX + 64], found[PATH_MAX], *text, *dir;
    char *a = xasprintf("%s/pa", tmpdir), *b = xasprintf("%s/pb", tmpdir);
    char *list = xasprintf("%s:%s", a, b), *want;
    pid_t sv;

    mkdir(a, 0755);
    mkdir(b, 0755);
    snprintf(path, sizeof(path), "%s/tool", a);
    mkdir(path, 0755); /* a directory of that name is no command */
    snprintf(path, sizeof(path), "%s/tool", b);
    write_file(path, "#!/bin/sh\n");
    is_int(supervisor_path_find(list, "tool", found, sizeof(found)), 0,
        "a command in the second PATH entry is found");
    is_str(found, path, "... there, not the directory of the first");
    is_int(supervisor_path_find(a, "tool", found, sizeof(found)), -ENOENT,
        "a directory of that name is not a command");
    is_int(supervisor_path_find(NULL, "sh", found, sizeof(found)), 0,
        "PATH unset: the default /bin:/usr/bin");
    is_str(found, "/bin/sh", "... /bin first");
    is_int(supervisor_path_find(list, "tool", found, 8), -ENAMETOOLONG,
        "a name longer than the buffer is refused");
    free(list);
    free(a);
    free(b);

    /* passwd-t: a file without execute permission, in the last entry. */
    snprintf(path, sizeof(path), "%s/pc", tmpdir);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/pc/passwd-t", tmpdir);
    write_file(path, "not a program\n");
    snprintf(job_path_var, sizeof(job_path_var), "PATH=/usr/bin:/bin:%s/pc",
        tmpdir);
    dir = make_job("execpath", cmds, 1000, 60000);
    snprintf(job_path_var, sizeof(job_path_var), "PATH=/usr/bin:/bin");
    sv = spawn(dir);
    ok(wait_status(dir, is_done, 10000, &st) >= 0, "the supervisor is done");
    is_int(wait_exit(sv, 5000), 0, "and exits 0");
    if (st.nranks == 3) {
        is_int(st.ranks[0].exit_code, 127, "a bare name not found exits 127");
        is_int(st.ranks[1].exit_code, 0, "sh, found in PATH, runs");
        is_int(st.ranks[2].exit_code, 126,
            "a file found without execute permission exits 126");
    }
    ok(st.nranks == 3, "three ranks recorded");
    snprintf(path, sizeof(path), "%s/rank-0.err", dir);
    text = read_all(path);
    want = xasprintf("cannot execute 'no-such-tool-t': No such file or "
                     "directory (not in PATH=/usr/bin:/bin:%s/pc)\n",
        tmpdir);
    is_str(text, want, "the reason names the PATH searched");
    free(want);
    free(text);
    snprintf(path, sizeof(path), "%s/rank-2.err", dir);
    text = read_all(path);
    want = xasprintf("cannot execute 'passwd-t' (found as '%s/pc/passwd-t'): "
                     "Permission denied\n",
        tmpdir);
    is_str(text, want, "... or the file it found");
    free(want);
    free(text);
    supfile_status_release(&st);
    free(dir);
}

/* A rank that could not be started says why in status.json
 * (launch_error); one that ran says nothing there, whatever its code. */
static void
test_launch_errors(void)
{
    const char *cmds[] = {
        "/nonexistent/train",
        "/etc/passwd",
        "exit 127",
        "true",
        "true",
        NULL,
    };
    struct supfile_status st = { 0 };
    struct supfile_spec spec = { 0 };
    struct err err = { 0 };
    char *dir;
    pid_t sv;

    dir = make_job("launch", cmds, 1000, 60000);
    /* Rank 4 in a working directory that does not exist. */
    if (supfile_spec_load(dir, &spec, &err) == 0 && spec.nranks == 5) {
        free(spec.ranks[4].cwd);
        spec.ranks[4].cwd = xstrdup("/nonexistent-dir");
        if (supfile_spec_save(dir, &spec) < 0)
            diag("cannot write spec in %s", dir);
    }
    supfile_spec_release(&spec);
    sv = spawn(dir);
    ok(wait_status(dir, is_done, 10000, &st) >= 0, "launch: done");
    is_int(wait_exit(sv, 5000), 0, "launch: the supervisor exits 0");
    is_int(st.nranks, 5, "launch: five ranks recorded");
    if (st.nranks == 5) {
        is_str(st.ranks[0].launch_error,
            "cannot execute '/nonexistent/train': No such file or directory",
            "a missing command is a launch error");
        is_int(st.ranks[0].exit_code, 127, "... with exit code 127");
        is_str(st.ranks[1].launch_error,
            "cannot execute '/etc/passwd': Permission denied",
            "a file without the execute bit is a launch error");
        is_int(st.ranks[1].exit_code, 126, "... with exit code 126");
        ok(st.ranks[2].exit_code == 127 && st.ranks[2].launch_error[0] == 0,
            "a command that ran and exited 127 itself is none");
        ok(st.ranks[3].exit_code == 0 && st.ranks[3].launch_error[0] == 0,
            "a rank that succeeded has none");
        is_str(st.ranks[4].launch_error,
            "cannot change to working directory '/nonexistent-dir': No "
            "such file or directory",
            "a missing working directory is a launch error");
        is_int(st.ranks[4].exit_code, 127, "... with exit code 127");
    }
    supfile_status_release(&st);
    free(dir);
}

/* Spawn the supervisor of dir and wait until its two ranks run (the
 * check "ranks started"); their pids go to pids. */
static pid_t
spawn_two(const char *dir, struct supfile_status *st, int pids[2])
{
    pid_t sv = spawn(dir);

    ok(wait_status(dir, all_started, 5000, st) >= 0, "ranks started");
    pids[0] = st->nranks > 0 ? st->ranks[0].pid : 0;
    pids[1] = st->nranks > 1 ? st->ranks[1].pid : 0;
    return sv;
}

/* ---- lease --------------------------------------------------------------- */

static void
test_lease(void)
{
    const char *cmds[] = { "sleep 1000", "sleep 1000 & wait", NULL };
    struct supfile_status st = { 0 };
    int64_t deadline, t0, gone_ms = -1, fenced_ms;
    int pids[2] = { 0, 0 };
    char *dir;
    pid_t sv;
    int k;

    dir = make_job("lease", cmds, 10000, 300);
    sv = spawn_two(dir, &st, pids);
    ok(pids[0] > 0 && getpgid(pids[0]) == pids[0] &&
            getpgid(pids[1]) == pids[1] && getsid(pids[0]) == sv,
        "each rank leads its own process group, in the supervisor's "
        "session");
    /* Renewed like the agent does after each status exchange. */
    for (k = 0; k < 12; k++) {
        supfile_lease_write(dir, timeid_mono_ms() + 300);
        usleep(100000);
    }
    load_status(dir, &st);
    ok(!st.fenced && st.nranks == 2 && !st.ranks[0].exited &&
            !st.ranks[1].exited && !group_gone(pids[0]),
        "ranks live on while the lease is renewed (1.2 s, lease 300 ms)");

    deadline = timeid_mono_ms() + 150;
    supfile_lease_write(dir, deadline);
    fenced_ms = wait_status(dir, is_fenced, 5000, &st);
    ok(fenced_ms >= 0, "the expired lease is recorded: fenced");
    while (timeid_mono_ms() - deadline < 5000) {
        if (group_gone(pids[0]) && group_gone(pids[1])) {
            gone_ms = timeid_mono_ms() - deadline;
            break;
        }
        usleep(1000);
    }
    ok(gone_ms >= 0 && gone_ms < 200,
        "every rank's group is dead %lld ms "
        "after the deadline (< 200)",
        (long long)gone_ms);
    diag("lease expiry to ranks dead: %lld ms", (long long)gone_ms);
    t0 = wait_status(dir, is_done, 5000, &st);
    ok(t0 >= 0 && st.fenced && st.nranks == 2 && st.ranks[0].fenced &&
            st.ranks[1].fenced && st.ranks[0].signal == SIGKILL &&
            st.ranks[1].signal == SIGKILL,
        "both ranks: fenced, SIGKILL, done");
    is_int(wait_exit(sv, 5000), 0, "the supervisor exits 0");
    supfile_status_release(&st);
    free(dir);
}

/* ---- the agent gone ------------------------------------------------------ */

static char orphan_key[CRED_HEX_LEN + 1];

/* make_job's job (job 5, attempt 2), told to watch the agent's lock
 * (orphan_ms) and to sign its notice as node n7. */
static char *
make_watching_job(const char *name, const char *const *cmds, int64_t orphan_ms)
{
    char *dir = make_job(name, cmds, 10000, 60000);
    struct supfile_spec spec;
    struct err err = { 0 };

    if (supfile_spec_load(dir, &spec, &err) < 0) {
        diag("cannot load the spec in %s: %s", dir, err.msg);
        return dir;
    }
    spec.orphan_ms = orphan_ms;
    snprintf(spec.node, sizeof(spec.node), "n7");
    memcpy(spec.fence_key, orphan_key, sizeof(orphan_key));
    if (supfile_spec_save(dir, &spec) < 0)
        diag("cannot write the spec in %s", dir);
    supfile_spec_release(&spec);
    return dir;
}

/* Whether status.json says the ranks were fenced within ms. */
static bool
fenced_within(const char *dir, int64_t ms)
{
    struct supfile_status st = { 0 };
    bool f = wait_status(dir, is_fenced, ms, &st) >= 0;

    supfile_status_release(&st);
    return f;
}

/* A UDP socket on loopback standing in for the scheduler, named in
 * tmpdir/scheduler.addr; recv times out after 200 ms. */
static int
fake_scheduler(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET };
    struct timeval tv = { .tv_usec = 200000 };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_DGRAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0)
        return -1;
    if (supfile_sched_addr_write(tmpdir, "127.0.0.1", ntohs(sa.sin_port)) < 0)
        diag("cannot write scheduler.addr");
    return fd;
}

/* How many good notices (job 5 attempt 2 of n7, MAC right) arrive within
 * ms; anything else received fails the test. */
static int
notices_within(int fd, int64_t ms)
{
    int64_t end = timeid_mono_ms() + ms;
    char buf[FENCE_MSG_MAX];
    int good = 0;

    while (timeid_mono_ms() < end) {
        struct fence_notice n;
        ssize_t k = recv(fd, buf, sizeof(buf), 0);

        if (k <= 0)
            continue;
        if (fence_notice_parse(buf, (size_t)k, &n) == 0 &&
            strcmp(n.node, "n7") == 0 && n.job == 5 && n.attempt == 2 &&
            fence_notice_verify(orphan_key, buf, (size_t)k) == 0)
            good++;
        else
            ok(0, "a notice that is not job 5 attempt 2 of n7: %.*s", (int)k,
                buf);
    }
    return good;
}

/*
 * The agent's lock (held here, as the agent holds it) and the notice: an
 * agent that dies gets its ranks killed orphan_ms later though the lease
 * runs for a minute, and the scheduler told; one that an agent takes
 * over keeps them and tells nothing; ranks that end on their own while
 * no agent holds them are told of once the grace ends; ranks that end
 * under a live agent are its to report; an agent that stopped on purpose
 * leaves them to the lease.
 */
static void
test_orphan(void)
{
    const char *cmds[] = { "sleep 1000", "sleep 1000 & wait", NULL };
    const char *quick[] = { "sleep 0.2", "exit 3", NULL };
    unsigned char nk[CRED_KEY_LEN];
    struct supfile_status st = { 0 };
    int pids[2] = { 0, 0 }, fd = -1, fd2 = -1, udp;
    int64_t t0, ms;
    char *dir;
    pid_t sv;

    cred_node_key("secret-secret-secret", 20, "n7", nk);
    fence_key(nk, 5, 2, orphan_key);
    udp = fake_scheduler();
    ok(udp >= 0, "a stand-in scheduler listens on UDP");
    is_int(supfile_agent_lock(tmpdir, &fd), 0, "the agent's lock is taken");
    is_int(supfile_agent_lock(tmpdir, &fd2), -EAGAIN,
        "a second agent cannot take it");
    is_int(supfile_agent_lock_open(tmpdir, &fd2), 0, "it can be watched");
    is_int(supfile_agent_alive(fd2), 1, "the watcher sees it held");

    /* (a) the agent dies: fenced after orphan_ms, then the notice. */
    dir = make_watching_job("orphan", cmds, 300);
    sv = spawn_two(dir, &st, pids);
    t0 = timeid_mono_ms();
    close(fd);
    fd = -1;
    is_int(supfile_agent_alive(fd2), 0,
        "the lock is free once the agent is "
        "gone");
    ok(fenced_within(dir, 5000), "the agent gone: fenced");
    while (timeid_mono_ms() - t0 < 5000 &&
           !(group_gone(pids[0]) && group_gone(pids[1])))
        usleep(1000);
    ms = timeid_mono_ms() - t0;
    ok(ms < 2000 && group_gone(pids[0]) && group_gone(pids[1]),
        "ranks dead %lld ms after the agent (orphan_ms 300, lease 60 s)",
        (long long)ms);
    ok(notices_within(udp, 3000) >= 1,
        "the scheduler is told, signed with the attempt's fence key");
    is_int(wait_exit(sv, 5000), 0, "the supervisor exits 0");
    free(dir);

    /* (b) a new agent takes the lock within the grace: ranks kept. */
    is_int(supfile_agent_lock(tmpdir, &fd), 0, "a new agent takes the lock");
    dir = make_watching_job("takeover", cmds, 800);
    sv = spawn_two(dir, &st, pids);
    close(fd);
    fd = -1;
    usleep(300000);
    is_int(supfile_agent_lock(tmpdir, &fd), 0, "another agent starts");
    ok(!fenced_within(dir, 1500) && !group_gone(pids[0]),
        "taken over within the grace: its ranks outlive orphan_ms");
    kill(sv, SIGTERM);
    is_int(wait_exit(sv, 15000), 0, "the supervisor exits 0");
    is_int(notices_within(udp, 500), 0, "and the scheduler is told nothing");
    free(dir);

    /* (c) ranks that end on their own, no agent: told once the grace
     * ends (a restarted agent would have reported their exits). */
    dir = make_watching_job("ended", quick, 700);
    t0 = timeid_mono_ms();
    sv = spawn(dir);
    close(fd);
    fd = -1;
    is_int(wait_exit(sv, 10000), 0, "the supervisor exits 0");
    ms = timeid_mono_ms() - t0;
    load_status(dir, &st);
    ok(!st.fenced && st.done, "nothing fenced: the ranks ended first");
    ok(ms >= 700, "it waited out the grace (%lld ms, orphan_ms 700)",
        (long long)ms);
    ok(notices_within(udp, 1000) >= 1, "then told the scheduler");
    free(dir);

    /* (d) ranks that end under a live agent: nothing to tell. */
    is_int(supfile_agent_lock(tmpdir, &fd), 0, "an agent holds the lock");
    dir = make_watching_job("live", quick, 300);
    sv = spawn(dir);
    is_int(wait_exit(sv, 10000), 0, "the supervisor exits 0");
    is_int(notices_within(udp, 500), 0, "its agent reports: no notice");
    free(dir);

    /* (e) an agent that stopped on purpose (an upgrade): the lease
     * decides, and a new agent clears the mark. */
    dir = make_watching_job("stopped", cmds, 300);
    sv = spawn_two(dir, &st, pids);
    is_int(supfile_agent_stopped_mark(tmpdir), 0, "the agent marks its stop");
    close(fd);
    fd = -1;
    ok(!fenced_within(dir, 1200) && !group_gone(pids[0]),
        "stopped on purpose: the ranks outlive orphan_ms (lease 60 s)");
    is_int(supfile_agent_lock(tmpdir, &fd), 0, "the next agent takes the lock");
    is_int(supfile_agent_stopped_clear(tmpdir), 0, "and clears the mark");
    ok(!supfile_agent_stopped(tmpdir), "the mark is gone");
    kill(sv, SIGTERM);
    is_int(wait_exit(sv, 15000), 0, "the supervisor exits 0");
    is_int(notices_within(udp, 300), 0, "nothing told");
    free(dir);

    /* (f) agent.lock replaced under the supervisors (deleted, and the
     * next agent created a new one): they watch the path, not the old
     * inode. */
    {
        char *path = xasprintf("%s/%s", tmpdir, SUPFILE_AGENT_LOCK);
        int fd3 = -1;

        dir = make_watching_job("replaced", cmds, 300);
        sv = spawn_two(dir, &st, pids);
        unlink(path);
        is_int(supfile_agent_lock(tmpdir, &fd3), 0,
            "an agent locks a new agent.lock");
        close(fd);
        fd = fd3;
        ok(!fenced_within(dir, 1200) && !group_gone(pids[0]),
            "the old inode unlocked, the new one held: ranks kept");
        kill(sv, SIGTERM);
        is_int(wait_exit(sv, 15000), 0, "the supervisor exits 0");
        is_int(notices_within(udp, 300), 0, "nothing told");
        free(dir);
        free(path);
    }

    close(fd);
    close(fd2);
    close(udp);
    supfile_status_release(&st);
}

/* ---- stop ---------------------------------------------------------------- */

static void
test_stop(void)
{
    const char *cmds[] = { "trap '' TERM; sleep 1000 & wait", "sleep 1000",
        NULL };
    struct supfile_status st = { 0 };
    char path[PATH_MAX + 64], *dir;
    int64_t t0, t_term, t_kill;
    int pids[2] = { 0, 0 };
    pid_t sv;

    dir = make_job("stop", cmds, 500, 60000);
    sv = spawn_two(dir, &st, pids);
    usleep(100000); /* let sh set its trap */
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_STOP);
    t0 = timeid_mono_ms();
    write_file(path, "");
    t_term = wait_status(dir, rank1_exited, 5000, &st);
    ok(t_term >= 0 && t_term < 450 && st.ranks[1].signal == SIGTERM,
        "the stop file: SIGTERM ends rank 1 at once (%lld ms)",
        (long long)t_term);
    ok(st.stopping && !st.ranks[0].exited, "rank 0 ignores SIGTERM and "
                                           "lives on for the grace period");
    ok(wait_status(dir, is_done, 5000, &st) >= 0, "then done");
    t_kill = timeid_mono_ms() - t0;
    ok(st.ranks[0].signal == SIGKILL &&
            st.ranks[0].end_ms - st.ranks[1].end_ms >= 450,
        "rank 0 got SIGKILL after the 500 ms "
        "grace (%lld ms)",
        (long long)(st.ranks[0].end_ms - st.ranks[1].end_ms));
    ok(t_kill < 1500, "and not much later (%lld ms)", (long long)t_kill);
    ok(!st.fenced, "a stop is not a fence");
    ok(group_gone(pids[0]) && group_gone(pids[1]),
        "both groups are gone, the TERM-ignoring grandchild included");
    is_int(wait_exit(sv, 5000), 0, "the supervisor exits 0");
    supfile_status_release(&st);
    free(dir);
}

/* SIGTERM to the supervisor means stop; a bad spec starts nothing. */
static void
test_signal_and_errors(void)
{
    const char *cmds[] = { "sleep 1000", NULL };
    struct supfile_status st = { 0 };
    char path[PATH_MAX + 64], *dir, *text;
    pid_t sv;
    int pid;

    dir = make_job("sigterm", cmds, 10000, 60000);
    sv = spawn(dir);
    ok(wait_status(dir, all_started, 5000, &st) >= 0, "rank started");
    pid = st.nranks > 0 ? st.ranks[0].pid : 0;
    kill(sv, SIGTERM);
    ok(wait_status(dir, is_done, 5000, &st) >= 0 && st.stopping &&
            st.ranks[0].signal == SIGTERM,
        "SIGTERM to the supervisor stops "
        "the ranks");
    is_int(wait_exit(sv, 5000), 0, "and it exits 0");
    ok(group_gone(pid), "the rank is gone");
    free(dir);

    dir = xasprintf("%s/bad", tmpdir);
    mkdir(dir, 0700);
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_SPEC);
    write_file(path, "{\"version\":1,\"job\":1}");
    sv = spawn(dir);
    is_int(wait_exit(sv, 5000), 2, "a bad spec.json: exit 2");
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_STATUS);
    ok(access(path, F_OK) < 0, "... without a status.json");
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_LOG);
    text = read_all(path);
    ok(strstr(text, "spec.json") != NULL, "... and the reason in "
                                          "supervisor.log");
    free(text);
    free(dir);
    supfile_status_release(&st);
}

static void
test_formats(void)
{
    struct supfile_status st = { 0 }, back = { 0 };
    struct supfile_rank_status r[2];
    struct err err = { 0 };
    char *dir = xasprintf("%s/fmt", tmpdir), path[PATH_MAX + 64];
    int64_t d = 0;

    mkdir(dir, 0700);
    memset(r, 0, sizeof(r));
    r[0].rank = 0;
    r[0].pid = 42;
    r[0].exited = true;
    r[0].exit_code = 3;
    r[1].rank = 1;
    r[1].pid = 43;
    r[1].fenced = true;
    snprintf(r[0].launch_error, sizeof(r[0].launch_error),
        "cannot execute 'x': No such file or directory");
    st.job = 9;
    st.attempt = 4;
    st.pid = 41;
    st.done = true;
    st.ranks = r;
    st.nranks = 2;
    is_int(supfile_status_save(dir, &st), 0, "status.json written");
    is_int(supfile_status_load(dir, &back, &err), 0, "and read back");
    ok(back.job == 9 && back.attempt == 4 && back.pid == 41 && back.done &&
            back.nranks == 2 && back.ranks[0].exited &&
            back.ranks[0].exit_code == 3 && !back.ranks[1].exited &&
            back.ranks[1].fenced &&
            strcmp(back.ranks[0].launch_error,
                "cannot execute 'x': No such file or directory") == 0 &&
            back.ranks[1].launch_error[0] == '\0',
        "round trip keeps every field");
    supfile_status_release(&back);
    is_int(supfile_lease_write(dir, 123456), 0, "lease written");
    is_int(supfile_lease_read(dir, &d), 0, "lease read");
    is_int(d, 123456, "lease round trip");
    snprintf(path, sizeof(path), "%s/%s", dir, SUPFILE_LEASE);
    write_file(path, "12x\n");
    is_int(supfile_lease_read(dir, &d), -EINVAL,
        "a damaged lease is "
        "refused");
    unlink(path);
    if (symlink("/etc/hostname", path) == 0)
        ok(supfile_lease_read(dir, &d) < 0, "a lease that is a symbolic "
                                            "link is refused");
    free(dir);
}

int
main(void)
{
    plan(NO_PLAN);
    if (test_built_path(supervisor, sizeof(supervisor), "agent/" SUPFILE_EXE) <
        0)
        return 1;
    if (access(supervisor, X_OK) < 0) {
        diag("no %s: %s", supervisor, strerror(errno));
        return 1;
    }
    if (test_tmpdir(tmpdir, sizeof(tmpdir), "test_supervisor") < 0)
        return 1;
    test_formats();
    test_exits();
    test_exec_path();
    test_launch_errors();
    test_lease();
    test_orphan();
    test_stop();
    test_signal_and_errors();
    ok(bad_reads == 0 && good_reads > 100,
        "status.json was valid JSON at "
        "each of %d reads (%d bad)",
        good_reads, bad_reads);
    test_rmtree(tmpdir);
    return done_testing();
}
