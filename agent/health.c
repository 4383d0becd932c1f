/*
 * health.c - the health check runner: children with deadlines, on the loop
 *
 * One struct health_check per configured check, with two timers: `tick`
 * (the next run; while HUNG, the poll of the stuck process) and `deadline`
 * (SIGTERM at the timeout, SIGKILL after the grace, HUNG after that; after
 * an exit, the end of the wait for the stdout pipe). A run's handles (the
 * process and its two pipes) live in a struct health_run of their own,
 * freed once the last of them is closed, so a check can start a new run
 * while an old one is still closing, and a HUNG run keeps its process
 * handle (libuv reaps the process whenever it finally exits).
 *
 *   IDLE --tick--> RUNNING --exit--> DRAIN --pipes closed / 200 ms--> IDLE
 *                     |--timeout--> TERM --exit--> IDLE (TIMEOUT)
 *                                     |--grace--> KILL --exit--> IDLE (TIMEOUT)
 *                                                   |--1 s--> HUNG --exit-->
 * IDLE
 */
#include "agent/health.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <uv.h>

#include "agent/agentd.h"
#include "agent/health_parse.h"
#include "agent/mkdirp.h"
#include "agent/procfs.h"
#include "common/jsonx.h"
#include "common/log.h"
#include "common/sbuf.h"
#include "common/timeid.h"
#include "common/uvx.h"
#include "common/xalloc.h"

#define HEALTH_STDOUT_MAX (64 * 1024)
#define HEALTH_STDERR_MAX 2048
#define HEALTH_DRAIN_MS 200
/* When the first runs start after health_start, one check after another. */
#define HEALTH_FIRST_RUN_MS 500
#define HEALTH_FIRST_RUN_STEP_MS 200
#define HEALTH_HUNG_WAIT_MS 1000
#define HEALTH_ARGS_MAX 160

enum health_phase {
    HEALTH_IDLE,
    HEALTH_RUNNING,
    HEALTH_DRAIN,
    HEALTH_TERM,
    HEALTH_KILL,
    HEALTH_HUNG,
};

struct health_run {
    struct health_check *c; /* NULL once the check is gone */
    uv_process_t proc;
    uv_pipe_t out, err;
    int nopen;                          /* handles not yet closed */
    bool proc_live, out_live, err_live; /* open and not closing */
    int pid;
    struct sbuf obuf, ebuf;
    bool otrunc;
    int64_t start_mono;
    int64_t exit_status;
    int exit_signal;
};

struct health_check {
    struct health *h;
    char *name;   /* "disk", "site:ib-bw" */
    char **argv;  /* NULL-terminated */
    char *refuse; /* not runnable (bad header): the UNKNOWN evidence */
    int64_t interval_ms, timeout_ms;
    uv_timer_t tick, deadline;
    enum health_phase phase;
    struct health_run *run;
    uint64_t runs;
    bool done_once;
    struct proto_check_result *results;
    size_t nresults;
};

struct health {
    struct agentd *ad;
    struct health_check **checks;
    size_t nchecks;
    char *boot_id;
    health_change_fn change_fn;
    void *change_arg;
    bool closing;
    int nopen; /* timers not yet closed */
    char rbuf[HEALTH_STDOUT_MAX];
};

static void health_tick_cb(uv_timer_t *t);
static void health_deadline_cb(uv_timer_t *t);

/* ---- results ------------------------------------------------------------ */

static void
health_results_free(struct proto_check_result *res, size_t n)
{
    for (size_t i = 0; i < n; i++)
        proto_check_result_release(&res[i]);
    free(res);
}

/* One result the runner makes about a run (timeout, bad output...). */
static struct proto_check_result *
health_own_result(enum proto_check_status status, const char *code,
    const char *evidence)
{
    struct proto_check_result *r = xcalloc(1, sizeof(*r));

    r->status = status;
    r->code = xstrdup(code);
    r->scope = xstrdup("node");
    r->evidence = xstrndup(evidence, PROTO_CHECK_EVIDENCE_MAX - 1);
    r->count = 1;
    r->numbers = xcalloc(1, sizeof(*r->numbers));
    return r;
}

/* The run's results replace the check's (res is taken), and the hook
 * hears of a change. */
static void
health_check_results(struct health_check *c, struct proto_check_result *res,
    size_t n, int64_t duration_ms)
{
    struct health *h = c->h;
    int64_t now = timeid_now_ms();
    bool changed, first = !c->done_once;

    for (size_t i = 0; i < n; i++) {
        free(res[i].check);
        res[i].check = xstrdup(c->name);
        res[i].run = c->runs;
        res[i].duration_ms = duration_ms;
        res[i].at_ms = now;
    }
    changed = health_results_differ(c->results, c->nresults, res, n);
    if (changed) {
        for (size_t i = 0; i < n; i++)
            log_info("health check=%s run=%llu status=%s code=%s scope=%s%s%s",
                c->name, (unsigned long long)c->runs,
                proto_check_status_str(res[i].status), res[i].code,
                res[i].scope, res[i].evidence[0] != '\0' ? ": " : "",
                res[i].evidence);
    }
    health_results_free(c->results, c->nresults);
    c->results = res;
    c->nresults = n;
    c->done_once = true;
    if ((changed || first) && h->change_fn != NULL)
        h->change_fn(h->change_arg);
}

static void
health_check_own(struct health_check *c, enum proto_check_status status,
    const char *code, const char *evidence, int64_t duration_ms)
{
    health_check_results(c, health_own_result(status, code, evidence), 1,
        duration_ms);
}

/* ---- a run's handles ---------------------------------------------------- */

static void
health_run_close_cb(uv_handle_t *hd)
{
    struct health_run *run = hd->data;

    if (--run->nopen > 0)
        return;
    sbuf_release(&run->obuf);
    sbuf_release(&run->ebuf);
    free(run);
}

static void
health_run_close(struct health_run *run, uv_handle_t *hd, bool *live)
{
    if (!*live)
        return;
    *live = false;
    if (hd->type == UV_NAMED_PIPE)
        uv_read_stop((uv_stream_t *)hd);
    uv_close(hd, health_run_close_cb);
}

static void
health_run_close_pipes(struct health_run *run)
{
    health_run_close(run, (uv_handle_t *)&run->out, &run->out_live);
    health_run_close(run, (uv_handle_t *)&run->err, &run->err_live);
}

/* Done with the run: what is left of it closes on its own. */
static void
health_run_release(struct health_run *run)
{
    health_run_close_pipes(run);
    health_run_close(run, (uv_handle_t *)&run->proc, &run->proc_live);
    run->c = NULL;
}

static void
health_run_kill(struct health_run *run, int sig)
{
    if (run->pid > 0 && kill(-run->pid, sig) < 0 && errno != ESRCH)
        log_warn("health: cannot signal process group %d: %s", run->pid,
            strerror(errno));
}

/* ---- a run's end -------------------------------------------------------- */

static void
health_check_schedule(struct health_check *c, int64_t ms)
{
    if (!c->h->closing)
        uv_timer_start(&c->tick, health_tick_cb, (uint64_t)(ms > 0 ? ms : 0),
            0);
}

/* The check's run is over (its results are in): the next in interval. */
static void
health_check_idle(struct health_check *c)
{
    uv_timer_stop(&c->deadline);
    if (c->run != NULL)
        health_run_release(c->run);
    c->run = NULL;
    c->phase = HEALTH_IDLE;
    health_check_schedule(c, c->interval_ms);
}

/* The process exited by itself and its pipes are read: the results. */
static void
health_run_complete(struct health_check *c)
{
    struct health_run *run = c->run;
    int64_t status = run->exit_status;
    int sig = run->exit_signal;
    int64_t dur = timeid_mono_ms() - run->start_mono;
    struct proto_check_result *res = NULL;
    struct err err = { 0 };
    char ev[PROTO_CHECK_EVIDENCE_MAX];
    size_t n = 0;

    /* One line of evidence: stderr's line ends become ";". */
    for (char *p = run->ebuf.buf; *p != '\0'; p++) {
        if (*p == '\n')
            *p = p[1] != '\0' ? ';' : '\0';
    }
    if (sig != 0 || status != 0) {
        snprintf(ev, sizeof(ev), "%s %d%s%.1500s",
            sig != 0 ? "killed by signal" : "exited with status",
            sig != 0 ? sig : (int)status, run->ebuf.buf[0] != '\0' ? ": " : "",
            run->ebuf.buf);
        health_check_own(c, PROTO_CHECK_UNKNOWN, "check.failed", ev, dur);
    } else if (run->otrunc ||
               health_output_parse(run->obuf.buf, &res, &n, &err) < 0) {
        snprintf(ev, sizeof(ev), "bad output: %s%s%.1500s",
            run->otrunc ? "more than 64 KiB" : err.msg,
            run->ebuf.buf[0] != '\0' ? "; stderr: " : "", run->ebuf.buf);
        health_check_own(c, PROTO_CHECK_UNKNOWN, "check.bad_output", ev, dur);
    } else {
        health_check_results(c, res, n, dur);
    }
    health_check_idle(c);
}

static void
health_drain_check(struct health_check *c)
{
    if (c->phase == HEALTH_DRAIN && !c->run->out_live && !c->run->err_live)
        health_run_complete(c);
}

static void
health_alloc_cb(uv_handle_t *hd, size_t suggested, uv_buf_t *buf)
{
    struct health_run *run = hd->data;

    (void)suggested;
    buf->base = run->c->h->rbuf;
    buf->len = sizeof(run->c->h->rbuf);
}

/* Keeps the first max bytes of a stream; reads and drops the rest, so the
 * check never blocks on a full pipe. */
static void
health_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf,
    struct sbuf *sb, size_t max, bool *trunc, bool *live)
{
    struct health_run *run = st->data;

    if (nread > 0) {
        size_t room = sb->len < max ? max - sb->len : 0;

        if ((size_t)nread > room && trunc != NULL)
            *trunc = true;
        sbuf_add(sb, buf->base, (size_t)nread < room ? (size_t)nread : room);
        return;
    }
    if (nread == 0)
        return;
    health_run_close(run, (uv_handle_t *)st, live);
    if (run->c != NULL)
        health_drain_check(run->c);
}

static void
health_out_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct health_run *run = st->data;

    health_read(st, nread, buf, &run->obuf, HEALTH_STDOUT_MAX, &run->otrunc,
        &run->out_live);
}

static void
health_err_cb(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf)
{
    struct health_run *run = st->data;

    health_read(st, nread, buf, &run->ebuf, HEALTH_STDERR_MAX, NULL,
        &run->err_live);
}

static void
health_exit_cb(uv_process_t *p, int64_t status, int sig)
{
    struct health_run *run = p->data;
    struct health_check *c = run->c;
    char ev[256];

    run->exit_status = status;
    run->exit_signal = sig;
    /* Whatever it left behind goes: what they wrote stays readable in the
     * pipe, and the pipe ends once they are gone. */
    health_run_kill(run, SIGKILL);
    if (c == NULL) {
        health_run_close(run, (uv_handle_t *)&run->proc, &run->proc_live);
        return;
    }
    switch (c->phase) {
    case HEALTH_RUNNING:
        c->phase = HEALTH_DRAIN;
        uv_timer_start(&c->deadline, health_deadline_cb, HEALTH_DRAIN_MS, 0);
        health_drain_check(c);
        break;
    case HEALTH_TERM:
    case HEALTH_KILL:
        snprintf(ev, sizeof(ev),
            "no result within %lld ms; killed (SIGTERM, then SIGKILL after "
            "%lld ms)",
            (long long)c->timeout_ms,
            (long long)c->h->ad->health_kill_grace_ms);
        health_check_own(c, PROTO_CHECK_TIMEOUT, "check.timeout", ev,
            timeid_mono_ms() - run->start_mono);
        health_check_idle(c);
        break;
    case HEALTH_HUNG:
        log_notice("health check=%s: stuck process %d is gone at last", c->name,
            run->pid);
        health_check_idle(c);
        break;
    default:
        break;
    }
}

/* The process survived SIGKILL: stuck in the kernel. */
static void
health_run_hung(struct health_check *c)
{
    struct health_run *run = c->run;
    char ev[512], *wchan = NULL;
    size_t len;

    procfs_read(run->pid, "wchan", 128, &wchan, &len);
    snprintf(ev, sizeof(ev),
        "pid %d survived SIGKILL (state %c, wchan %s): stuck in the kernel; "
        "not started again while it exists",
        run->pid, procfs_state(run->pid) ? procfs_state(run->pid) : '?',
        wchan != NULL && wchan[0] != '\0' ? wchan : "?");
    free(wchan);
    health_run_close_pipes(run);
    c->phase = HEALTH_HUNG;
    log_warn("health check=%s: %s", c->name, ev);
    health_check_own(c, PROTO_CHECK_HUNG, "check.hung", ev,
        timeid_mono_ms() - run->start_mono);
    health_check_schedule(c, c->interval_ms);
}

static void
health_deadline_cb(uv_timer_t *t)
{
    struct health_check *c = container_of(t, struct health_check, deadline);
    int64_t grace = c->h->ad->health_kill_grace_ms;

    switch (c->phase) {
    case HEALTH_RUNNING:
        log_warn("health check=%s pid=%d: no result within %lld ms, "
                 "terminating",
            c->name, c->run->pid, (long long)c->timeout_ms);
        health_run_kill(c->run, SIGTERM);
        c->phase = HEALTH_TERM;
        uv_timer_start(t, health_deadline_cb, (uint64_t)grace, 0);
        break;
    case HEALTH_TERM:
        health_run_kill(c->run, SIGKILL);
        c->phase = HEALTH_KILL;
        uv_timer_start(t, health_deadline_cb, HEALTH_HUNG_WAIT_MS, 0);
        break;
    case HEALTH_KILL:
        health_run_hung(c);
        break;
    case HEALTH_DRAIN:
        /* Something outside the group holds the pipe open. */
        health_run_close_pipes(c->run);
        health_run_complete(c);
        break;
    default:
        break;
    }
}

/* ---- a run's start ------------------------------------------------------ */

static void
health_run_start(struct health_check *c)
{
    struct health_run *run = xcalloc(1, sizeof(*run));
    uv_loop_t *loop = c->h->ad->loop;
    uv_process_options_t opts;
    uv_stdio_container_t stdio[3];
    char ev[512];
    int rc;

    run->c = c;
    sbuf_init(&run->obuf);
    sbuf_init(&run->ebuf);
    uv_pipe_init(loop, &run->out, 0);
    uv_pipe_init(loop, &run->err, 0);
    run->out.data = run->err.data = run->proc.data = run;
    run->out_live = run->err_live = run->proc_live = true;
    run->nopen = 3;
    memset(&opts, 0, sizeof(opts));
    memset(stdio, 0, sizeof(stdio));
    stdio[0].flags = UV_IGNORE; /* /dev/null */
    stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[1].data.stream = (uv_stream_t *)&run->out;
    stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
    stdio[2].data.stream = (uv_stream_t *)&run->err;
    opts.file = c->argv[0];
    opts.args = c->argv;
    opts.cwd = "/";
    opts.stdio = stdio;
    opts.stdio_count = 3;
    opts.exit_cb = health_exit_cb;
    /* Its own session and process group: the deadline signals the group,
     * so whatever the check starts goes with it. */
    opts.flags = UV_PROCESS_DETACHED;
    c->run = run;
    run->start_mono = timeid_mono_ms();
    rc = uv_spawn(loop, &run->proc, &opts);
    if (rc < 0) {
        snprintf(ev, sizeof(ev), "cannot execute '%s': %s", c->argv[0],
            uv_strerror(rc));
        health_check_own(c, PROTO_CHECK_UNKNOWN, "check.spawn_failed", ev, 0);
        health_check_idle(c);
        return;
    }
    run->pid = run->proc.pid;
    c->phase = HEALTH_RUNNING;
    uv_read_start((uv_stream_t *)&run->out, health_alloc_cb, health_out_cb);
    uv_read_start((uv_stream_t *)&run->err, health_alloc_cb, health_err_cb);
    uv_timer_start(&c->deadline, health_deadline_cb, (uint64_t)c->timeout_ms,
        0);
    log_debug("health check=%s run=%llu pid=%d started", c->name,
        (unsigned long long)c->runs, run->pid);
}

static void
health_tick_cb(uv_timer_t *t)
{
    struct health_check *c = container_of(t, struct health_check, tick);
    char st;

    if (c->phase == HEALTH_HUNG) {
        /* The exit callback ends it when it goes; until then, wait. */
        st = procfs_state(c->run->pid);
        log_debug("health check=%s: pid %d still stuck (state %c)", c->name,
            c->run->pid, st ? st : '?');
        health_check_schedule(c, c->interval_ms);
        return;
    }
    if (c->phase != HEALTH_IDLE)
        return;
    c->runs++;
    if (c->refuse != NULL) {
        health_check_own(c, PROTO_CHECK_UNKNOWN, "check.bad_header", c->refuse,
            0);
        health_check_schedule(c, c->interval_ms);
        return;
    }
    health_run_start(c);
}

/* ---- the check list ----------------------------------------------------- */

struct health_argv {
    char *v[HEALTH_ARGS_MAX + 1];
    size_t n;
};

static void
health_arg(struct health_argv *av, char *s)
{
    if (av->n < HEALTH_ARGS_MAX)
        av->v[av->n++] = s;
    else
        free(s);
}

/* Each item of a comma list as "opt" then the item. */
static void
health_arg_list(struct health_argv *av, const char *opt, const char *list)
{
    char *copy = xstrdup(list), *save = NULL;

    for (char *tok = strtok_r(copy, ",", &save); tok != NULL;
         tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        if (*tok == '\0')
            continue;
        health_arg(av, xstrdup(opt));
        health_arg(av, xstrdup(tok));
    }
    free(copy);
}

/* The options of each built-in; false when it does not apply here. */
static bool
health_builtin_args(const struct agentd *ad, const char *name,
    struct health_argv *av)
{
    if (strcmp(name, "disk") == 0) {
        if (ad->health_mounts[0] != '\0') {
            health_arg_list(av, "--mount", ad->health_mounts);
        } else {
            health_arg(av, xstrdup("--mount"));
            health_arg(av, xstrdup("/"));
            health_arg(av, xstrdup("--mount"));
            health_arg(av, xstrdup(ad->state_dir));
            /* The ranks' output lands there, and waits there while the
             * scheduler is away; a path on a file system already named
             * is checked once. */
            health_arg(av, xstrdup("--mount"));
            health_arg(av, xstrdup(ad->log_dir));
        }
        /* Each mount's probe has half the check's deadline: a hung mount
         * is the disk check's finding (HUNG disk.hung on that mount), not
         * the whole check's TIMEOUT. */
        health_arg(av, xstrdup("--mount-timeout-ms"));
        health_arg(av,
            xasprintf("%lld", (long long)(ad->health_timeout_ms / 2 > 10
                                              ? ad->health_timeout_ms / 2
                                              : 10)));
        health_arg(av, xstrdup("--state-dir"));
        health_arg(av, xasprintf("%s/health", ad->state_dir));
    } else if (strcmp(name, "gpu") == 0) {
        if (ad->res.ngpus == 0)
            return false;
        health_arg(av, xstrdup("--nvidia-smi"));
        health_arg(av, xstrdup(ad->nvidia_smi));
        health_arg(av, xstrdup("--expect"));
        health_arg(av, xasprintf("%zu", ad->res.ngpus));
    } else if (strcmp(name, "kmsg") == 0) {
        if (ad->kmsg_path[0] == '\0')
            return false;
        health_arg(av, xstrdup("--path"));
        health_arg(av, xstrdup(ad->kmsg_path));
        health_arg(av, xstrdup("--state-dir"));
        health_arg(av, xasprintf("%s/health", ad->state_dir));
        /* The default allowlist is the installed one: a build run from
         * its tree has none there, and goes without. A configured one
         * must be there (the check says UNKNOWN otherwise). */
        if (ad->kmsg_allowlist[0] &&
            (!ad->kmsg_allowlist_default ||
                access(ad->kmsg_allowlist, R_OK) == 0)) {
            health_arg(av, xstrdup("--allowlist"));
            health_arg(av, xstrdup(ad->kmsg_allowlist));
        }
        if (ad->kmsg_baseline[0]) {
            health_arg(av, xstrdup("--baseline"));
            health_arg(av, xstrdup(ad->kmsg_baseline));
        }
    } else if (strcmp(name, "nic") == 0) {
        health_arg(av, xstrdup("--sysfs-root"));
        health_arg(av, xstrdup(ad->sysfs_root));
        health_arg_list(av, "--expect", ad->health_nics);
    } else if (strcmp(name, "pcie") == 0) {
        health_arg(av, xstrdup("--sysfs-root"));
        health_arg(av, xstrdup(ad->sysfs_root));
        health_arg(av, xstrdup("--expect"));
        health_arg(av, xasprintf("%zu", ad->res.ngpus));
    }
    return true;
}

static struct health_check *
health_check_add(struct health *h, char *name, struct health_argv *av)
{
    struct health_check *c = xcalloc(1, sizeof(*c));

    c->h = h;
    c->name = name;
    c->argv = xcalloc(av->n + 1, sizeof(*c->argv));
    memcpy(c->argv, av->v, av->n * sizeof(*c->argv));
    c->interval_ms = h->ad->health_interval_ms;
    c->timeout_ms = h->ad->health_timeout_ms;
    uv_timer_init(h->ad->loop, &c->tick);
    uv_timer_init(h->ad->loop, &c->deadline);
    h->nopen++;
    h->checks = xrealloc(h->checks, (h->nchecks + 1) * sizeof(*h->checks));
    h->checks[h->nchecks++] = c;
    return c;
}

static void
health_add_builtins(struct health *h)
{
    struct agentd *ad = h->ad;
    char *copy = xstrdup(ad->health_checks), *save = NULL;

    for (char *tok = strtok_r(copy, ", ", &save); tok != NULL;
         tok = strtok_r(NULL, ", ", &save)) {
        struct health_argv av = { .n = 0 };

        health_arg(&av, xstrdup(ad->health_check_exe));
        health_arg(&av, xstrdup(tok));
        if (!health_builtin_args(ad, tok, &av)) {
            for (size_t i = 0; i < av.n; i++)
                free(av.v[i]);
            log_info("health check=%s does not apply here", tok);
            continue;
        }
        health_check_add(h, xstrdup(tok), &av);
    }
    free(copy);
}

/* "site:" and the file name in the characters a check name may hold. */
static char *
health_site_name(const char *file)
{
    char *name = xasprintf("site:%.*s", PROTO_CHECK_NAME_MAX - 6, file);

    for (char *p = name + 5; *p != '\0'; p++) {
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
        else if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
                     *p == '_' || *p == '.' || *p == '-'))
            *p = '_';
    }
    return name;
}

static void
health_add_site(struct health *h, const char *dir, const char *file)
{
    struct health_argv av = { .n = 0 };
    struct health_check *c;
    struct err err = { 0 };
    char *path = xasprintf("%s/%s", dir, file), *text = NULL;
    size_t len = 0;
    struct stat st;

    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) {
        free(path);
        return;
    }
    health_arg(&av, path);
    c = health_check_add(h, health_site_name(file), &av);
    /* The header: its first 4 KiB (supfile's bounded read refuses longer
     * files, so read it by hand). */
    text = xcalloc(1, 4097);
    {
        FILE *f = fopen(path, "re");

        if (f != NULL) {
            len = fread(text, 1, 4096, f);
            fclose(f);
        }
    }
    if (health_header_parse(text, len, &c->interval_ms, &c->timeout_ms, &err) <
        0) {
        c->refuse = xasprintf("%s: %s", path, err.msg);
        log_warn("health check=%s: %s", c->name, c->refuse);
    }
    free(text);
}

static int
health_name_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
health_add_sites(struct health *h, struct err *err)
{
    const char *dir = h->ad->health_checks_dir;
    char **names = NULL;
    size_t n = 0;
    struct dirent *de;
    DIR *d;

    if (dir[0] == '\0')
        return 0;
    if ((d = opendir(dir)) == NULL)
        return err_set(err, -errno, "health_checks_dir '%s': %s", dir,
            strerror(errno));
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        names = xrealloc(names, (n + 1) * sizeof(*names));
        names[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof(*names), health_name_cmp);
    for (size_t i = 0; i < n; i++) {
        health_add_site(h, dir, names[i]);
        free(names[i]);
    }
    free(names);
    return 0;
}

/* ---- lifetime ----------------------------------------------------------- */

static char *
health_boot_id(void)
{
    char buf[64] = "";
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "re");
    size_t n = 0;

    if (f != NULL) {
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
    }
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
        n--;
    buf[n] = '\0';
    return xstrdup(buf);
}

struct health *
health_create(struct agentd *ad, struct err *err)
{
    struct health *h = xcalloc(1, sizeof(*h));
    char *dir;

    h->ad = ad;
    h->boot_id = health_boot_id();
    /* The checks' own state (the kernel log's cursor). */
    dir = xasprintf("%s/health", ad->state_dir);
    int rc;

    if ((rc = mkdirp(dir, 0700)) < 0)
        log_warn("cannot create '%s': %s", dir, strerror(-rc));
    free(dir);
    health_add_builtins(h);
    if (health_add_sites(h, err) < 0) {
        health_destroy(h);
        return NULL;
    }
    log_info("health checks=%zu interval_ms=%lld timeout_ms=%lld", h->nchecks,
        (long long)ad->health_interval_ms, (long long)ad->health_timeout_ms);
    return h;
}

void
health_start(struct health *h)
{
    /* Not all at once, and not before the agent's first report and the
     * re-adoption of its ranks (a restarted agent must renew their lease
     * in time): the first runs are spread over the first seconds. */
    for (size_t i = 0; i < h->nchecks; i++)
        health_check_schedule(h->checks[i],
            HEALTH_FIRST_RUN_MS + (int64_t)i * HEALTH_FIRST_RUN_STEP_MS);
}

static void
health_check_closed(void *arg)
{
    struct health_check *c = arg;
    struct health *h = c->h;

    health_results_free(c->results, c->nresults);
    for (size_t i = 0; c->argv[i] != NULL; i++)
        free(c->argv[i]);
    free(c->argv);
    free(c->name);
    free(c->refuse);
    free(c);
    if (--h->nopen == 0) {
        free(h->checks);
        free(h->boot_id);
        free(h);
    }
}

void
health_destroy(struct health *h)
{
    if (h == NULL || h->closing)
        return;
    h->closing = true;
    h->change_fn = NULL;
    if (h->nchecks == 0) {
        free(h->checks);
        free(h->boot_id);
        free(h);
        return;
    }
    for (size_t i = 0; i < h->nchecks; i++) {
        struct health_check *c = h->checks[i];
        uv_handle_t *hs[2] = { (uv_handle_t *)&c->tick,
            (uv_handle_t *)&c->deadline };

        if (c->run != NULL) {
            health_run_kill(c->run, SIGKILL);
            health_run_release(c->run);
            c->run = NULL;
        }
        uvx_close(hs, 2, health_check_closed, c);
    }
}

void
health_set_change_cb(struct health *h, health_change_fn fn, void *arg)
{
    h->change_fn = fn;
    h->change_arg = arg;
}

size_t
health_ncheck(const struct health *h)
{
    return h != NULL ? h->nchecks : 0;
}

struct proto_health *
health_fill(const struct health *h)
{
    struct proto_health *ph;
    size_t n = 0, i, j;
    bool full = true;

    /* No checks: no health (the scheduler treats the node as before
     * health checks). With checks, health goes from the first report on,
     * results or not, so that the node waits for its first full pass. */
    if (h == NULL || h->nchecks == 0)
        return NULL;
    for (i = 0; i < h->nchecks; i++) {
        n += h->checks[i]->nresults;
        full = full && h->checks[i]->done_once;
    }
    if (n > PROTO_CHECK_RESULTS_MAX)
        n = PROTO_CHECK_RESULTS_MAX;
    ph = xcalloc(1, sizeof(*ph));
    ph->boot_id = xstrdup(h->boot_id);
    ph->full_pass = full;
    ph->results = xcalloc(n + 1, sizeof(*ph->results));
    for (i = 0; i < h->nchecks; i++) {
        const struct health_check *c = h->checks[i];

        for (j = 0; j < c->nresults && ph->nresults < n; j++)
            proto_check_result_copy(&ph->results[ph->nresults++],
                &c->results[j]);
    }
    return ph;
}
